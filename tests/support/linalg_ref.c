/* linalg_ref.c: the host references of linalg_ref.h. */
#include "linalg_ref.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const kiln_dtype LINALG_DTYPES[4] = {KILN_FLOAT32, KILN_FLOAT64, KILN_COMPLEX64, KILN_COMPLEX128};

int lr_complex(kiln_dtype t) { return t == KILN_COMPLEX64 || t == KILN_COMPLEX128; }
long double lr_eps(kiln_dtype t) {
    return t == KILN_FLOAT32 || t == KILN_COMPLEX64 ? FLT_EPSILON : DBL_EPSILON;
}

hval lr_get(kiln_dtype t, const void *p, size_t i) {
    switch (t) {
    case KILN_FLOAT32: return (hval){((const float *)p)[i], 0};
    case KILN_FLOAT64: return (hval){((const double *)p)[i], 0};
    case KILN_COMPLEX64: return (hval){((const float *)p)[2 * i], ((const float *)p)[2 * i + 1]};
    default: return (hval){((const double *)p)[2 * i], ((const double *)p)[2 * i + 1]};
    }
}
void lr_put(kiln_dtype t, void *p, size_t i, hval v) {
    switch (t) {
    case KILN_FLOAT32: ((float *)p)[i] = (float)v.re; break;
    case KILN_FLOAT64: ((double *)p)[i] = (double)v.re; break;
    case KILN_COMPLEX64: ((float *)p)[2 * i] = (float)v.re, ((float *)p)[2 * i + 1] = (float)v.im; break;
    default: ((double *)p)[2 * i] = (double)v.re, ((double *)p)[2 * i + 1] = (double)v.im; break;
    }
}
hval lr_mul(hval a, hval b) { return (hval){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
hval lr_conj(hval a) { return (hval){a.re, -a.im}; }
long double lr_abs(hval a) { return sqrtl(a.re * a.re + a.im * a.im); }

static int64_t count_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* Random entries in [-1, 1] (both parts for complex), plus `diag` on the
 * diagonal of each trailing square matrix (a well-conditioned
 * construction when diag is about n). Host copy in *host (caller frees). */
kiln_array *lr_random(kiln_context *ctx, test_rng *rng, kiln_dtype t, int ndim, const int64_t *shape,
                      double diag, void **host) {
    int64_t n = count_of(ndim, shape);
    size_t size = kiln_dtype_size(t);
    void *h = malloc(size * (size_t)(n ? n : 1));
    int64_t rows = ndim >= 2 ? shape[ndim - 2] : 1, cols = shape[ndim - 1];
    for (int64_t i = 0; i < n; i++) {
        hval v = {test_uniform(rng, -1, 1), lr_complex(t) ? test_uniform(rng, -1, 1) : 0};
        int64_t k = i % (rows * cols);
        if (ndim >= 2 && k / cols == k % cols) v.re += diag;
        lr_put(t, h, (size_t)i, v);
    }
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, ndim, shape, h, size * (size_t)n, &a));
    if (host)
        *host = h;
    else
        free(h);
    return a;
}

/* A Hermitian (symmetric) positive-definite stack: B B^H + n I. */
kiln_array *lr_spd(kiln_context *ctx, test_rng *rng, kiln_dtype t, int64_t batch, int64_t n, void **host) {
    int64_t shape[3] = {batch, n, n};
    void *b = NULL;
    kiln_array *ba = lr_random(ctx, rng, t, 3, shape, 0, &b);
    kiln_array_release(ba);
    size_t size = kiln_dtype_size(t);
    void *h = malloc(size * (size_t)(batch * n * n));
    for (int64_t q = 0; q < batch; q++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                hval s = {i == j ? (long double)n : 0, 0};
                for (int64_t k = 0; k < n; k++) {
                    hval x = lr_mul(lr_get(t, b, (size_t)((q * n + i) * n + k)),
                                    lr_conj(lr_get(t, b, (size_t)((q * n + j) * n + k))));
                    s.re += x.re, s.im += x.im;
                }
                if (i == j) s.im = 0;
                lr_put(t, h, (size_t)((q * n + i) * n + j), s);
            }
    free(b);
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, 3, shape, h, size * (size_t)(batch * n * n), &a));
    *host = h;
    return a;
}

/* Frobenius norm of one row-major matrix (rows x cols) at element `off`. */
long double lr_fro(kiln_dtype t, const void *p, int64_t off, int64_t rows, int64_t cols) {
    long double s = 0;
    for (int64_t i = 0; i < rows * cols; i++) {
        long double a = lr_abs(lr_get(t, p, (size_t)(off + i)));
        s += a * a;
    }
    return sqrtl(s);
}

/* |A B - C| (Frobenius) for row-major A (m x k), B (k x n), C (m x n) at
 * the given element offsets; conj_a/conj_b use A^H / B^H (then A is k x m). */
long double lr_product_error(kiln_dtype t, const void *a, int64_t oa, int conj_a, const void *b, int64_t ob,
                             int conj_b, const void *c, int64_t oc, int64_t m, int64_t k, int64_t n) {
    long double s = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            hval acc = {0, 0};
            for (int64_t l = 0; l < k; l++) {
                hval x = conj_a ? lr_conj(lr_get(t, a, (size_t)(oa + l * m + i)))
                                : lr_get(t, a, (size_t)(oa + i * k + l));
                hval y = conj_b ? lr_conj(lr_get(t, b, (size_t)(ob + j * k + l)))
                                : lr_get(t, b, (size_t)(ob + l * n + j));
                hval p = lr_mul(x, y);
                acc.re += p.re, acc.im += p.im;
            }
            hval cv = c ? lr_get(t, c, (size_t)(oc + i * n + j)) : (hval){i == j ? 1.0L : 0.0L, 0};
            long double dr = acc.re - cv.re, di = acc.im - cv.im;
            s += dr * dr + di * di;
        }
    return sqrtl(s);
}

/* |Q^H Q - I| for Q (rows x cols) at offset: orthonormal columns. */
long double lr_orthonormal_error(kiln_dtype t, const void *q, int64_t off, int64_t rows, int64_t cols) {
    return lr_product_error(t, q, off, 1, q, off, 0, NULL, 0, cols, rows, cols);
}

void lr_expect_small(const char *what, kiln_dtype t, long double err, long double scale, double factor) {
    long double bound = factor * lr_eps(t) * (scale > 0 ? scale : 1);
    if (!(err <= bound))
        fail_msg("%s %s: error %Lg above %Lg (%.0f eps x %Lg)", what, kiln_dtype_name(t), err, bound, factor,
                 scale);
}

kiln_dtype lr_real(kiln_dtype t) {
    return t == KILN_COMPLEX64 ? KILN_FLOAT32 : t == KILN_COMPLEX128 ? KILN_FLOAT64 : t;
}
