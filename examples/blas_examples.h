/* blas_examples.h: the vendor BLAS beside kiln's own kernels in the seed
 * workloads (matmul.c: seed 001's shared-memory matmul; gufunc_examples.c:
 * seed 002's batched 4x4 products). */
#ifndef KILN_BLAS_EXAMPLES_H
#define KILN_BLAS_EXAMPLES_H

#include "kiln.h"

/* c = a @ b by kiln_matmul_ex(flags) (c given), one warm-up (the library's
 * first call loads it), then `repeat` event-timed runs: *ms_median. */
int example_blas_time(kiln_context *ctx, int flags, kiln_array *a, kiln_array *b, kiln_array *c, int repeat,
                      double *ms_median);
/* The same with `warmups` untimed runs first (bench/lib/blas_bench.c times
 * with two: the second warms the provider's own caches). */
int example_blas_time_warm(kiln_context *ctx, int flags, kiln_array *a, kiln_array *b, kiln_array *c,
                           int warmups, int repeat, double *ms_median);

#endif
