/* blas_ref.h: random kiln arrays of any BLAS dtype, their values read
 * back in C order, and the long double reference of a batched gemm with
 * NumPy broadcasting, for test_blas.c. */
#ifndef KILN_BLAS_REF_H
#define KILN_BLAS_REF_H

#include "test_support.h"

typedef struct hval {
    long double re, im;
} hval;

hval bt_get(kiln_dtype t, const void *buf, size_t i);
void bt_set(kiln_dtype t, void *buf, size_t i, double re, double im);
/* Unit roundoff of the dtype's storage (float16 2^-11, float32 2^-24, ...). */
double bt_eps(kiln_dtype t);
/* A new device array of random values in [-1, 1] (both parts for complex). */
kiln_array *bt_random(kiln_context *ctx, test_rng *rng, kiln_dtype t, int ndim, const int64_t *shape);

/* C = alpha A B + beta C0 over a broadcast batch; A, B given as C-order
 * values of shape (batch_a..., m, k) and (batch_b..., k, n) (batch dims
 * right-aligned with C's). */
typedef struct bt_gemm_ref {
    int nb;
    int64_t batch[KILN_MAX_DIMS];
    int64_t m, n, k;
    kiln_dtype ta, tb, tc;
    const void *a, *b, *c0; /* c0 may be NULL (beta 0) */
    int nba, nbb;
    const int64_t *batch_a, *batch_b;
    hval alpha, beta;
    double input_rel; /* relative error allowed on each product (TF32: the inputs' rounding), else 0 */
} bt_gemm_ref;

/* Checks `got` (C-order values of dtype tc) entry by entry against the
 * reference: |got - ref| <= (k + 4) * eps(tc) * (|alpha| sum|a b| + |beta
 * c0|) + eps, the accumulation bound with room for the library's order;
 * fails the test with the worst entry's index otherwise. */
void bt_check_gemm(const char *what, const bt_gemm_ref *p, const void *got);

/* Reads a, b (the logical operands: already op-applied views; 1-d as
 * NumPy's matmul promotes them) and c, and checks c = alpha a b + beta c0
 * with bt_check_gemm. */
void bt_check_product(const char *what, kiln_array *a, kiln_array *b, kiln_array *c, const void *c0,
                      hval alpha, hval beta);
/* |got - ref| <= (n + 4) eps(t) size: a sum of n terms whose magnitudes add
 * up to `size`; fails the test otherwise. */
void bt_expect_close(const char *what, kiln_dtype t, int64_t n, hval got, hval ref, long double size);

#endif
