/* native_path.c: see native_path.h. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* readlink */
#endif
#include "native_path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void kiln_bench_native_path(const char *env_var, const char *name, char *path, size_t size) {
    const char *env = env_var ? getenv(env_var) : NULL;
    if (env && *env) {
        snprintf(path, size, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(path, size, "%s/%s", len > 0 ? exe : ".", name);
}
