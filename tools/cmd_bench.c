/* cmd_bench.c: `kiln bench`: runs kiln_bench, the benchmark program built
 * beside the CLI. It is a separate program because it links OpenMP and
 * loads the nvcc-built native kernels, which the CLI should not carry. */
#define KILN_EXPERIMENTAL /* kiln_setting_value (include/kiln.h) */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "kiln.h"

/* $KILN_BENCH, else kiln_bench next to this executable (install) or in its
 * bench/ folder (build tree), else kiln_bench on PATH. */
static void find_bench(char *path, size_t size) {
    const char *env = kiln_setting_value("KILN_BENCH");
    if (env && *env) {
        snprintf(path, size, "%s", env);
        return;
    }
    char dir[PATH_MAX];
    if (cli_self_dir(dir, sizeof dir) == 0) {
        static const char *const places[] = {"%s/kiln_bench", "%s/bench/kiln_bench"};
        for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
            snprintf(path, size, places[i], dir);
            if (access(path, X_OK) == 0) return;
        }
    }
    snprintf(path, size, "kiln_bench");
}

int kiln_cmd_bench(int argc, char **argv) {
    char path[PATH_MAX + 32];
    find_bench(path, sizeof path);
    char **child = calloc((size_t)argc + 1, sizeof *child);
    if (!child) return 1;
    child[0] = path;
    for (int i = 1; i < argc; i++) child[i] = argv[i];
    char *env[] = {"KILN_BENCH_AS=kiln bench", NULL}; /* its usage names this command */
    int rc = cli_spawn(child, env, NULL);
    free(child);
    if (rc == 127)
        fprintf(stderr, "kiln bench: kiln_bench not found (looked at $KILN_BENCH, beside kiln, in "
                        "bench/ and on PATH); build it with KILN_BUILD_BENCH=ON\n");
    return rc;
}
