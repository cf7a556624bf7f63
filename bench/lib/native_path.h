/* native_path.h: where a bench finds its vendor-side library (built with
 * nvcc beside the bench executable, dlopened so the bench runs without it). */
#ifndef KILN_BENCH_NATIVE_PATH_H
#define KILN_BENCH_NATIVE_PATH_H

#include <stddef.h>

/* $env_var when set and not empty (env_var may be NULL), else `name` in the
 * folder of the running executable ("./name" when that cannot be read). */
void kiln_bench_native_path(const char *env_var, const char *name, char *path, size_t size);

#endif
