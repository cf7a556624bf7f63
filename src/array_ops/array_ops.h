/* array_ops.h: what arrays do with kiln's own kernels: copies between any
 * strides and memories (copy.c), arrays made on the device (create.c). It
 * sits above src/kernel/, which launches on arrays (src/array/). */
#ifndef KILN_ARRAY_OPS_ARRAY_OPS_H
#define KILN_ARRAY_OPS_ARRAY_OPS_H

#include "array/array.h"

extern const char kiln_embedded_array_kernels[];

/* One of kiln's array kernels compiled for element type dtype (as_bits: an
 * unsigned type of the same size, for copies that only move bytes). */
kiln_status kiln_array_kernel(kiln_context *ctx, kiln_dtype dtype, int as_bits, const char *kernel_name,
                              kiln_kernel **out);
/* A grid for a grid-stride loop over n elements with 256-thread blocks. */
kiln_dim3 kiln_array_grid(const kiln_context *ctx, int64_t n);

#endif
