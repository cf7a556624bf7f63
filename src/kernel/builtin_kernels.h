/* builtin_kernels.h: kernels kiln compiles for itself (fill, arange, strided copy,
 * meshgrid, ...), written in CUDA C like user kernels and compiled through the
 * same path and disk cache. Each context keeps the kernels it has built in
 * a slot, freed at its last release. */
#ifndef KILN_KERNEL_BUILTIN_KERNELS_H
#define KILN_KERNEL_BUILTIN_KERNELS_H

#include "core/context.h"

/* Returns a kernel (owned by the context; do not release) compiled from
 * `source` with `options`; the first call per (source, options) compiles or
 * loads from the disk cache, later calls are a lookup. */
kiln_status kiln_builtin_kernel(kiln_context *ctx, const char *source, const char *name, const char *options,
                                const char *kernel_name, kiln_kernel **out);

#endif
