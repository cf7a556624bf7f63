/* blas_bench.h: what kiln_blas_bench's files share (blas_bench.c: the
 * big products, the CPU rows and main; blas_bench_small.c: kiln's
 * small-matrix kernel beside cuBLAS's strided-batched call). */
#ifndef KILN_BLAS_BENCH_H
#define KILN_BLAS_BENCH_H

#include <stdint.h>

#include "blas_native.h"
#include "kiln.h"

/* cuBLAS called directly (libkiln_blas_native.so). */
typedef struct native_lib {
    int device; /* the CUDA ordinal of kiln's context */
    blas_native_gemm_fn gemm;
    blas_native_call_cost_fn call_cost;
    blas_native_error_fn error;
} native_lib;

/* A random array of dtype t, values in [-1, 1) (float16 / bfloat16 /
 * complex through float32 values). */
int blas_bench_random(kiln_context *ctx, kiln_dtype t, int ndim, const int64_t *shape, kiln_array **out);

/* kiln_matmul_ex(flags) on a, b into c, and cuBLAS on the same memory
 * (native_t, batch products of m x k by k x n), alternating over a few
 * rounds; each side's best median in *kiln_ms and *vendor_ms. */
int blas_bench_time_pair(kiln_context *ctx, const native_lib *nl, int native_t, kiln_array *a, kiln_array *b,
                         kiln_array *c, int64_t batch, int64_t m, int64_t n, int64_t k, int flags, int repeat,
                         double *kiln_ms, double *vendor_ms);

/* One row of output: kiln's time and rate beside the vendor's, and the ratio. */
void blas_bench_row(const char *what, double kiln_ms, double vendor_ms, const char *vendor, double flops,
                    const char *target);

/* kiln's small-matrix kernel beside cuBLAS's strided-batched call for
 * `batch` products of d x d x d, each d in sizes[0..nsizes), for each
 * dtype named in `dtypes` ("f32,c64"; NULL: all six); then the CUDA limits
 * table of src/blas/blas_small.c that the run measured. Nonzero on a
 * failed row. */
int blas_bench_small_sweep(kiln_context *ctx, const native_lib *nl, int64_t batch, int repeat,
                           const int64_t *sizes, int nsizes, const char *dtypes);

#endif
