/* linalg_ref.h: host references for the linalg suites: long double
 * complex values over any of the four dtypes, random and constructed
 * (Hermitian positive-definite) stacks, products, norms and tolerances in
 * units of the dtype's epsilon. */
#ifndef KILN_TEST_LINALG_REF_H
#define KILN_TEST_LINALG_REF_H

#include "test_support.h"

typedef struct hval {
    long double re, im;
} hval;

extern const kiln_dtype LINALG_DTYPES[4]; /* float32, float64, complex64, complex128 */

int lr_complex(kiln_dtype t);
long double lr_eps(kiln_dtype t);
kiln_dtype lr_real(kiln_dtype t);
hval lr_get(kiln_dtype t, const void *p, size_t i);
void lr_put(kiln_dtype t, void *p, size_t i, hval v);
hval lr_mul(hval a, hval b);
hval lr_conj(hval a);
long double lr_abs(hval a);
/* Random entries in [-1, 1] (both parts for complex), plus `diag` on the
 * diagonal of each trailing matrix (well conditioned when diag ~ n); the
 * host copy in *host when not NULL (caller frees). */
kiln_array *lr_random(kiln_context *ctx, test_rng *rng, kiln_dtype t, int ndim, const int64_t *shape,
                      double diag, void **host);
/* batch Hermitian positive-definite n x n matrices B B^H + n I. */
kiln_array *lr_spd(kiln_context *ctx, test_rng *rng, kiln_dtype t, int64_t batch, int64_t n, void **host);
/* Frobenius norm of a row-major rows x cols matrix from element off. */
long double lr_fro(kiln_dtype t, const void *p, int64_t off, int64_t rows, int64_t cols);
/* |op(A) op(B) - C| (Frobenius), C NULL: the identity; op: ^H when conj_x
 * (A then stored k x m, B n x k), result m x n. */
long double lr_product_error(kiln_dtype t, const void *a, int64_t oa, int conj_a, const void *b, int64_t ob,
                             int conj_b, const void *c, int64_t oc, int64_t m, int64_t k, int64_t n);
/* |Q^H Q - I| for a rows x cols Q. */
long double lr_orthonormal_error(kiln_dtype t, const void *q, int64_t off, int64_t rows, int64_t cols);
/* Fails unless err <= factor * eps * scale. */
void lr_expect_small(const char *what, kiln_dtype t, long double err, long double scale, double factor);

#endif
