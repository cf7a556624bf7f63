/* array_ops.h: helpers shared by the array files. */
#ifndef KILN_ARRAY_OPS_H
#define KILN_ARRAY_OPS_H

#include "array/array.h"

extern const char kiln_embedded_array_kernels[];

/* One of kiln's array kernels compiled for element type dtype (as_bits: an
 * unsigned type of the same size, for copies that only move bytes). */
kiln_status kiln_array_kernel(kiln_context *ctx, kiln_dtype dtype, int as_bits, const char *kernel_name,
                              kiln_kernel **out);
/* A grid for a grid-stride loop over n elements with 256-thread blocks. */
kiln_dim3 kiln_array_grid(const kiln_context *ctx, int64_t n);
/* A new contiguous array of ctx in plain host memory (KILN_MEMORY_HOST, on
 * any backend): what the host reads and writes directly, e.g. ufunc results
 * for host inputs on a CUDA context. The array owns the memory; it is freed
 * when the last reference (views count) goes, without the backend, so the
 * release works even after the context's device has faulted. */
kiln_status kiln_array_empty_host(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                  kiln_array **out);
/* Can the host touch this array's memory directly? */
int kiln_array_host_accessible(const kiln_array *a);
/* dst = src for host-accessible arrays of equal shape and item size. */
void kiln_host_strided_copy(const kiln_array *dst, const kiln_array *src);
/* Contiguous copy through the backend, recorded by the profiler. */
kiln_status kiln_backend_copy(kiln_context *ctx, void *dst, const void *src, size_t bytes,
                              kiln_copy_kind kind, kiln_backend_stream *stream, int async);

#endif
