/* cpu_pch.h: the CPU prelude's text, and its precompiled header (cpu_pch.c). */
#ifndef KILN_BACKEND_CPU_PCH_H
#define KILN_BACKEND_CPU_PCH_H

#include <stddef.h>

#include "backend/backend.h"
#include "core/cache_dir.h"
#include "core/text.h"

#define KILN_CPU_PCH_HEADER "kiln_cpu_prelude_all.h"

/* The prelude variants (each its own precompiled header). */
typedef enum kiln_cpu_prelude_kind {
    KILN_CPU_PRELUDE_FULL = 0,  /* libstdc++'s <cmath>, kiln_complex.cuh */
    KILN_CPU_PRELUDE_LIGHT = 1, /* glibc's C <math.h> + kiln's overloads, kiln_complex.cuh */
    KILN_CPU_PRELUDE_REAL = 2   /* the light one without kiln_complex.cuh */
} kiln_cpu_prelude_kind;
/* Appends the prelude every module starts with (kiln_cpu_prelude.cuh,
 * kiln_complex.cuh unless KILN_CPU_PRELUDE_REAL, kiln_signature.cuh, with
 * #line directives). The light kinds use glibc's C <math.h> and kiln's own
 * overloads instead of libstdc++'s <cmath> (KILN_CPU_LIGHT_MATH). */
void kiln_cpu_prelude_text(kiln_text *t, kiln_cpu_prelude_kind kind);
/* The prelude a request takes. Light when its source includes no header
 * and names nothing in std:: (a header of the user's could include <cmath>,
 * whose declarations would clash with kiln's overloads); then real when it
 * names nothing complex either (backend/common/prelude_needs.c: the
 * instantiations kiln_complex.cuh's operators leave pending cost ~5% of a
 * module's compile). KILN_CPU_LIGHT_PRELUDE=0 turns both off (full). */
kiln_cpu_prelude_kind kiln_cpu_prelude_for(const kiln_compile_request *req);

/* Device, inode, size and mtime of the executable name (PATH searched as
 * posix_spawnp does) hashed: an upgrade of the compiler changes it. 0 when
 * not found. */
unsigned long long kiln_cpu_binary_identity(const char *name);
/* Whether a compile aid kept in the cache folder (the prelude's PCH, the
 * remembered link line) may be used: not turned off by env_name=off, no
 * clang among the compiler's words (argv[0..argc)), a usable cache folder
 * (described in *info). */
int kiln_cpu_cache_aid_allowed(const char *env_name, const char *off, char *const *argv, int argc,
                               kiln_cache_dir *info);

/* Writes text to path under a private name and renames it in place, so a
 * reader (another process) sees all of it or nothing; -1 (nothing left
 * behind) on failure. */
int kiln_cpu_publish(const char *path, const char *text);
/* A small file's text (under 64 KiB, not empty), NUL-terminated and
 * malloc'd; NULL otherwise. */
char *kiln_cpu_read_small(const char *path);

/* base_argv: the compiler command and the flags of the module compile
 * (without -D, -I, inputs and outputs). Returns 1 and the folder in dir when
 * KILN_CPU_PCH_HEADER and its .gch are there (building them now if needed);
 * 0 when the prelude should be compiled inline (no cache, a clang, a build
 * that failed once, KILN_CPU_PCH=0). kind: which prelude (each has its
 * own folder). Never sets an error. */
int kiln_cpu_pch_prepare(char *const *base_argv, int base_argc, kiln_cpu_prelude_kind kind, char *dir,
                         size_t dir_size);

/* Module compiles pass -Winvalid-pch: GCC silently reads the header's text
 * when a .gch does not fit (a -march=native that expands differently, a
 * changed compiler), which costs a small module half its compile time.
 * Called with the compiler's output after each compile that included the
 * header: when GCC said it did not use the .gch, removes it so that the
 * next compile builds it again, and after a second rejection of the same
 * folder marks it failed (the prelude is then compiled inline, as without
 * a cache). Returns 1 when the output reported a rejection. */
int kiln_cpu_pch_check(const char *dir, const char *compiler_output);

#endif
