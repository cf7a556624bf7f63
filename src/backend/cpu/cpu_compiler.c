/* cpu_compiler.c: finding and identifying the host C++ compiler (it runs
 * through cpu_spawn.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/cpu/cpu_cache_files.h"
#include "backend/cpu/cpu_fission.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_pch.h"
#include "core/cache_dir.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/settings.h"

extern char **environ;
extern const char kiln_embedded_kiln_complex[];
extern const char kiln_embedded_kiln_signature[];
extern const char kiln_embedded_kiln_cpu_fission[];
extern const char kiln_embedded_kiln_cpu_math[];
extern const char kiln_embedded_kiln_cpu_cg[];
extern const char kiln_embedded_kiln_cpu_fp16[];
extern const char kiln_embedded_kiln_cpu_curand[];
extern const char kiln_embedded_kiln_random[];
extern const char kiln_cpu_transformer_hash[]; /* CMakeLists.txt, cmake/hash_sources.cmake */

#ifndef KILN_HOST_CXX_DEFAULT
#define KILN_HOST_CXX_DEFAULT "c++"
#endif

/* 1 when an executable named `name` is in a folder of PATH (where the
 * compiler driver looks for ld.gold and ld.lld after its own folders). */
static int on_path(const char *name) {
    const char *p = getenv("PATH");
    char path[4096];
    for (const char *d = p ? p : "/usr/bin:/bin"; *d;) {
        size_t n = strcspn(d, ":");
        snprintf(path, sizeof path, "%.*s/%s", (int)n, d, name);
        if (n && access(path, X_OK) == 0) return 1;
        d += n + (d[n] == ':');
    }
    return 0;
}

/* GNU ld spends ~100M instructions reading libstdc++'s symbols for a
 * 2 KB module; gold ~40M, lld ~60M. KILN_CPU_LINKER=default keeps the
 * compiler's own choice. */
static const char *fast_linker(void) {
    const char *env = kiln_setting_string("KILN_CPU_LINKER");
    if (env && strcmp(env, "default") == 0) return NULL;
    if (on_path("ld.gold")) return "-fuse-ld=gold";
    if (on_path("ld.lld")) return "-fuse-ld=lld";
    return NULL;
}

kiln_status kiln_cpu_compiler_from_env(kiln_cpu_compiler *c) {
    const char *env = kiln_setting_string("KILN_CXX");
    const char *cmd = (env && *env) ? env : KILN_HOST_CXX_DEFAULT;
    if (strlen(cmd) >= sizeof c->text)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "KILN_CXX is %zu characters long; at most %zu fit",
                              strlen(cmd), sizeof c->text - 1);
    memset(c, 0, sizeof *c);
    snprintf(c->text, sizeof c->text, "%s", cmd);
    snprintf(c->words, sizeof c->words, "%s", cmd);
    /* Words split at blanks, so KILN_CXX="ccache g++" works. */
    char *save = NULL;
    for (char *w = strtok_r(c->words, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (c->argc == (int)(sizeof c->argv / sizeof c->argv[0]) - 1)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "KILN_CXX has more than %d words: %s", c->argc,
                                  cmd);
        c->argv[c->argc++] = w;
    }
    if (c->argc == 0) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "KILN_CXX is blank");
    c->linker = fast_linker();
    return KILN_OK;
}

/* The CPU's feature flags decide what -march=native generates, so they are
 * part of the identity: a cache shared by different machines stays correct. */
static unsigned long long cpu_flags_hash(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    unsigned long long h = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0) {
            h = kiln_fnv1a_str(line);
            break;
        }
    }
    fclose(f);
    return h;
}

/* The first line of `cxx --version` (at most 200 characters) into
 * version; 0 when the compiler cannot be run. */
static int run_version(const kiln_cpu_compiler *c, char *version, size_t size) {
    char *argv[34];
    int n = 0;
    for (int i = 0; i < c->argc; i++) argv[n++] = c->argv[i];
    argv[n++] = "--version";
    argv[n] = NULL;
    char *text = NULL;
    int code = 0;
    kiln_status s = kiln_cpu_spawn(argv, &text, &code);
    int ok = s == KILN_OK && code == 0;
    if (ok) {
        size_t len = strcspn(text, "\r\n");
        snprintf(version, size, "%.*s", (int)(len < 200 ? len : 200), text);
    } else
        kiln_clear_error();
    free(text);
    return ok;
}

/* The compiler's version line without running it when the cache folder
 * remembers it: a cache hit must not start a process (issue 15: ~1-5 ms).
 * The file is named by a hash of the command's words and the identity
 * (device, inode, size, mtime) of each word that is an executable, so an
 * upgrade of the compiler (a new binary), another one first on PATH or
 * another KILN_CXX asks again. A wrapper script whose target changes
 * behind it keeps its old answer: `kiln cache clear` forgets it. */
static int compiler_version(const kiln_cpu_compiler *c, char *version, size_t size) {
    kiln_cache_dir info;
    kiln_cache_dir_resolve(&info);
    if (!info.usable) return run_version(c, version, size);
    unsigned long long h = kiln_fnv1a_str(c->text);
    for (int i = 0; i < c->argc; i++) {
        unsigned long long id = kiln_cpu_binary_identity(c->argv[i]);
        h = h * 31 + kiln_fnv1a(KILN_FNV1A_INIT, (const char *)&id, sizeof id);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/cpu-cxx-%016llx", info.path, h);
    char *line = kiln_cpu_read_small(path);
    if (line) {
        line[strcspn(line, "\r\n")] = '\0';
        int got = line[0] != '\0';
        if (got) snprintf(version, size, "%s", line);
        free(line);
        if (got) return 1;
    }
    if (!run_version(c, version, size)) return 0;
    char text[300];
    snprintf(text, sizeof text, "%s\n", version);
    (void)kiln_cpu_publish(path, text); /* a reader sees a whole line or nothing */
    return 1;
}

kiln_status kiln_cpu_compiler_identify(const kiln_cpu_compiler *c, char *out, size_t out_size) {
    char version[256];
    if (!compiler_version(c, version, sizeof version))
        /* No compiler: the context still opens (memory, cached modules);
         * compile() reports KILN_ERR_COMPILER_MISSING when asked. */
        snprintf(version, sizeof version, "%s (not runnable)", c->text);
    struct utsname u;
    const char *machine = uname(&u) == 0 ? u.machine : "unknown";
    unsigned long long prelude =
        kiln_cpu_prelude_hash() ^ kiln_fnv1a_str(kiln_embedded_kiln_complex) * 3 ^
        kiln_fnv1a_str(kiln_embedded_kiln_signature) * 7 ^
        /* the fission transformer's output changes with its code */
        (kiln_fnv1a_str(kiln_embedded_kiln_cpu_fission) + kiln_fnv1a_str(kiln_cpu_transformer_hash)) * 11 ^
        /* the Math API's second half and kiln's toolkit headers (cpu_headers.c) */
        kiln_fnv1a_str(kiln_embedded_kiln_cpu_math) * 13 ^ kiln_fnv1a_str(kiln_embedded_kiln_cpu_cg) * 17 ^
        kiln_fnv1a_str(kiln_embedded_kiln_cpu_fp16) * 19 ^
        kiln_fnv1a_str(kiln_embedded_kiln_cpu_curand) * 23 ^ kiln_fnv1a_str(kiln_embedded_kiln_random) * 29;
    /* The command line's own flags (libraries linked included) shape the
     * module as much as the compiler does: modules cached before a change of
     * them must not be loaded after it. */
    char flags[1024];
    kiln_cpu_command_flags(flags, sizeof flags);
    size_t used = strlen(flags);
    if (c->linker) snprintf(flags + used, sizeof flags - used, " %s", c->linker);
    snprintf(out, out_size, "%s %s cpu:%016llx abi:%d prelude:%016llx flags:%016llx", version, machine,
             cpu_flags_hash(), KILN_CPU_ABI_VERSION, prelude, (unsigned long long)kiln_fnv1a_str(flags));
    return KILN_OK;
}
