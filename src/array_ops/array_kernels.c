/* array_kernels.c: kiln's array kernels (array_kernels.cuh), compiled per
 * element type through the context's table of its own kernels, and the
 * grid they are launched with. */
#include <stdio.h>

#include "array_ops/array_ops.h"
#include "core/dtype.h"
#include "kernel/builtin_kernels.h"

kiln_status kiln_array_kernel(kiln_context *ctx, kiln_dtype dtype, int as_bits, const char *kernel_name,
                              kiln_kernel **out) {
    static const char *const bits[17] = {
        [1] = "uint8_t", [2] = "uint16_t", [4] = "uint32_t", [8] = "uint64_t", [16] = "kiln_complex128"};
    const char *type =
        (as_bits || kiln_dtype_is_half(dtype)) ? bits[kiln_dtype_size(dtype)] : kiln_dtype_c_type(dtype);
    char options[64];
    snprintf(options, sizeof options, "-DKILN_T=%s", type);
    return kiln_builtin_kernel(ctx, kiln_embedded_array_kernels, "kiln/array_kernels.cu", options,
                               kernel_name, out);
}

kiln_dim3 kiln_array_grid(const kiln_context *ctx, int64_t n) {
    int64_t blocks = (n + 255) / 256;
    /* Enough blocks to fill the machine several times over; the grid-stride
     * loop covers the rest. */
    int64_t cap = (int64_t)(ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 1) *
                  (ctx->ops->kind == KILN_BACKEND_CUDA ? 32 : 4);
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return KILN_DIM((uint32_t)blocks);
}
