/* cpu_pch.h: the CPU prelude's text, and its precompiled header (cpu_pch.c). */
#ifndef KILN_BACKEND_CPU_PCH_H
#define KILN_BACKEND_CPU_PCH_H

#include <stddef.h>

#include "core/backend.h"
#include "core/cache_dir.h"
#include "core/text.h"

#define KILN_CPU_PCH_HEADER "kiln_cpu_prelude_all.h"

/* The prelude variants (each its own precompiled header). */
typedef enum kiln_cpu_prelude_kind {
    KILN_CPU_PRELUDE_FULL = 0,  /* libstdc++'s <cmath>, kiln_complex.cuh */
    KILN_CPU_PRELUDE_LIGHT = 1, /* glibc's C <math.h> + kiln's overloads, kiln_complex.cuh */
    KILN_CPU_PRELUDE_REAL = 2   /* the light one without kiln_complex.cuh */
} kiln_cpu_prelude_kind;
/* Appends the prelude every module starts with (kiln_cpu_prelude*.cuh,
 * kiln_cpu_math.cuh, kiln_complex.cuh unless KILN_CPU_PRELUDE_REAL,
 * kiln_signature.cuh, with #line directives). The light kinds use glibc's C <math.h> and kiln's own
 * overloads instead of libstdc++'s <cmath> (KILN_CPU_LIGHT_MATH). */
void kiln_cpu_prelude_text(kiln_text *t, kiln_cpu_prelude_kind kind);
/* A hash of the kiln_cpu_prelude*.cuh files, for the compiler identity. */
unsigned long long kiln_cpu_prelude_hash(void);
/* The prelude a request takes. Light when its source includes no header
 * and names nothing in std:: (a header of the user's could include <cmath>,
 * whose declarations would clash with kiln's overloads); then real when it
 * names nothing complex either (backend/common/prelude_needs.c: the
 * instantiations kiln_complex.cuh's operators leave pending cost ~5% of a
 * module's compile). KILN_CPU_LIGHT_PRELUDE=0 turns both off (full). */
kiln_cpu_prelude_kind kiln_cpu_prelude_for(const kiln_compile_request *req);

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
