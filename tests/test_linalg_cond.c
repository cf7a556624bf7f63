/* test_linalg_cond.c: forward errors of kiln_solve, kiln_inv, kiln_cholesky
 * and kiln_lstsq against long double references, with tolerances from each
 * matrix's condition number: |x - x_ref| / |x_ref| <= c n eps cond(A), the
 * bound numpy.linalg's LAPACK routines meet (a backward-stable solve moves
 * the answer by at most cond(A) times its backward error). The matrices are
 * random and graded, D1 R D2 with row and column scales spanning 10^g, so
 * that cond(A) spans several decades per dtype and the tolerance grows
 * with it; a wrong answer is off by O(1) whatever the condition. Every
 * dtype, batched, on the backend of KILN_TEST_TARGET (test_open); and
 * `kiln demo solve` at a small size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"
#include "linalg_ref.h"

/* ------------------------------------------------------------------ long double references */

static hval h_sub(hval a, hval b) { return (hval){a.re - b.re, a.im - b.im}; }
static hval h_div(hval a, hval b) {
    long double d = b.re * b.re + b.im * b.im;
    return (hval){(a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d};
}

/* x (n x k, row-major) with a x = b, by Gaussian elimination with partial
 * pivoting in long double complex; a and b are n x n and n x k copies. */
static void ref_solve(int64_t n, int64_t k, hval *a, hval *b, hval *x) {
    for (int64_t c = 0; c < n; c++) {
        int64_t p = c;
        for (int64_t r = c + 1; r < n; r++)
            if (lr_abs(a[r * n + c]) > lr_abs(a[p * n + c])) p = r;
        for (int64_t j = 0; j < n && p != c; j++) {
            hval s = a[c * n + j];
            a[c * n + j] = a[p * n + j], a[p * n + j] = s;
        }
        for (int64_t j = 0; j < k && p != c; j++) {
            hval s = b[c * k + j];
            b[c * k + j] = b[p * k + j], b[p * k + j] = s;
        }
        for (int64_t r = c + 1; r < n; r++) {
            hval f = h_div(a[r * n + c], a[c * n + c]);
            for (int64_t j = c; j < n; j++) a[r * n + j] = h_sub(a[r * n + j], lr_mul(f, a[c * n + j]));
            for (int64_t j = 0; j < k; j++) b[r * k + j] = h_sub(b[r * k + j], lr_mul(f, b[c * k + j]));
        }
    }
    for (int64_t j = 0; j < k; j++)
        for (int64_t r = n - 1; r >= 0; r--) {
            hval s = b[r * k + j];
            for (int64_t c = r + 1; c < n; c++) s = h_sub(s, lr_mul(a[r * n + c], x[c * k + j]));
            x[r * k + j] = h_div(s, a[r * n + r]);
        }
}

static hval *load(kiln_dtype t, const void *p, int64_t off, int64_t count) {
    hval *h = malloc(sizeof *h * (size_t)count);
    for (int64_t i = 0; i < count; i++) h[i] = lr_get(t, p, (size_t)(off + i));
    return h;
}

/* The infinity norm (largest row sum) of an n x m matrix. */
static long double norm_inf(const hval *a, int64_t n, int64_t m) {
    long double best = 0;
    for (int64_t i = 0; i < n; i++) {
        long double s = 0;
        for (int64_t j = 0; j < m; j++) s += lr_abs(a[i * m + j]);
        if (s > best) best = s;
    }
    return best;
}

/* cond_inf(a) = |a| |a^-1| of an n x n matrix, with the inverse in long double. */
static long double cond_inf(const hval *a, int64_t n) {
    hval *w = malloc(sizeof *w * (size_t)(n * n)), *e = calloc((size_t)(n * n), sizeof *e),
         *inv = malloc(sizeof *inv * (size_t)(n * n));
    memcpy(w, a, sizeof *w * (size_t)(n * n));
    for (int64_t i = 0; i < n; i++) e[i * n + i].re = 1;
    ref_solve(n, n, w, e, inv);
    long double c = norm_inf(a, n, n) * norm_inf(inv, n, n);
    free(w), free(e), free(inv);
    return c;
}

/* |x - ref| / |ref| in the max norm over an n x k block. */
static long double rel_error(kiln_dtype t, const void *x, int64_t off, const hval *ref, int64_t count) {
    long double diff = 0, size = 0;
    for (int64_t i = 0; i < count; i++) {
        long double d = lr_abs(h_sub(lr_get(t, x, (size_t)(off + i)), ref[i])), s = lr_abs(ref[i]);
        if (d > diff) diff = d;
        if (s > size) size = s;
    }
    return diff / size;
}

/* batch graded matrices (rows x cols): matrix q is R scaled by
 * 10^(-g_q i / (rows - 1)) on row i and 10^(-g_q j / (cols - 1)) on column
 * j, g_q = q * decades / (batch - 1): cond grows by ~10^(2 g_q). */
static kiln_array *graded(kiln_context *ctx, test_rng *rng, kiln_dtype t, int64_t batch, int64_t rows,
                          int64_t cols, double decades, void **host) {
    int64_t shape[3] = {batch, rows, cols};
    kiln_array *r = lr_random(ctx, rng, t, 3, shape, 0, host);
    kiln_array_release(r);
    for (int64_t q = 0; q < batch; q++) {
        double g = batch > 1 ? decades * (double)q / (double)(batch - 1) : decades;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                size_t at = (size_t)((q * rows + i) * cols + j);
                long double s = powl(10.0L, -g *
                                                ((long double)i / (long double)(rows - 1) +
                                                 (long double)j / (long double)(cols - 1)) /
                                                2);
                hval v = lr_get(t, *host, at);
                lr_put(t, *host, at, (hval){v.re * s, v.im * s});
            }
    }
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, 3, shape, *host, kiln_dtype_size(t) * (size_t)(batch * rows * cols),
                                 &a));
    return a;
}

/* The decades of grading per dtype: cond up to ~1e4 (single), ~1e10 (double). */
static double decades_for(kiln_dtype t) { return t == KILN_FLOAT32 || t == KILN_COMPLEX64 ? 3.0 : 8.0; }

/* Fails unless err <= factor n eps cond; a well-conditioned matrix must
 * also come out near rounding, so the check is not vacuous. */
static void expect_forward(const char *what, kiln_dtype t, int64_t q, long double err, long double cond,
                           int64_t n, double factor) {
    long double bound = factor * (long double)n * lr_eps(t) * cond;
    if (!(err <= bound))
        fail_msg("%s %s, matrix %lld: forward error %Lg above %Lg (%.0f n eps cond, cond %Lg)", what,
                 kiln_dtype_name(t), (long long)q, err, bound, factor, cond);
}

/* ------------------------------------------------------------------ the calls */

static void test_solve_forward(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    const int64_t batch = 5, n = 24, k = 3;
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        void *ha, *hb;
        kiln_array *a = graded(ctx, &rng, t, batch, n, n, decades_for(t), &ha);
        int64_t sb[3] = {batch, n, k};
        kiln_array *b = lr_random(ctx, &rng, t, 3, sb, 0, &hb), *x = NULL;
        TEST_OK(kiln_solve(a, b, &x));
        void *hx = test_read_array(x);
        long double first = 0, last = 0;
        for (int64_t q = 0; q < batch; q++) {
            hval *am = load(t, ha, q * n * n, n * n), *bm = load(t, hb, q * n * k, n * k);
            long double cond = cond_inf(am, n);
            hval *ref = malloc(sizeof *ref * (size_t)(n * k));
            ref_solve(n, k, am, bm, ref);
            expect_forward("solve", t, q, rel_error(t, hx, q * n * k, ref, n * k), cond, n, 4);
            if (q == 0) first = cond;
            last = cond;
            free(am), free(bm), free(ref);
        }
        /* the grading did what it is for: the last matrix is far worse conditioned */
        printf("%s cond %Lg .. %Lg\n", kiln_dtype_name(t), first, last);
        assert_true(last > pow(10, decades_for(t) / 3) * first);
        free(ha), free(hb), free(hx);
        kiln_array_release(a), kiln_array_release(b), kiln_array_release(x);
    }
}

static void test_inv_forward(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    const int64_t batch = 4, n = 19;
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        void *ha;
        kiln_array *a = graded(ctx, &rng, t, batch, n, n, decades_for(t), &ha), *ai = NULL;
        TEST_OK(kiln_inv(a, &ai));
        void *hi = test_read_array(ai);
        for (int64_t q = 0; q < batch; q++) {
            hval *am = load(t, ha, q * n * n, n * n), *e = calloc((size_t)(n * n), sizeof *e),
                 *ref = malloc(sizeof *ref * (size_t)(n * n));
            for (int64_t i = 0; i < n; i++) e[i * n + i].re = 1;
            long double cond = cond_inf(am, n);
            ref_solve(n, n, am, e, ref);
            expect_forward("inv", t, q, rel_error(t, hi, q * n * n, ref, n * n), cond, n, 4);
            free(am), free(e), free(ref);
        }
        free(ha), free(hi);
        kiln_array_release(a), kiln_array_release(ai);
    }
}

/* Cholesky of graded Hermitian positive-definite D (B B^H + n I) D: the
 * factor's forward error is bounded by cond(A) times the backward error. */
static void test_cholesky_forward(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    const int64_t batch = 4, n = 16;
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        void *hs;
        kiln_array *spd = lr_spd(ctx, &rng, t, batch, n, &hs);
        kiln_array_release(spd);
        for (int64_t q = 0; q < batch; q++) {
            double g = decades_for(t) * (double)q / (double)(batch - 1);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) {
                    size_t at = (size_t)((q * n + i) * n + j);
                    long double s = powl(10.0L, -g * (long double)(i + j) / (long double)(2 * (n - 1)));
                    hval v = lr_get(t, hs, at);
                    lr_put(t, hs, at, (hval){v.re * s, v.im * s});
                }
        }
        int64_t shape[3] = {batch, n, n};
        kiln_array *a = NULL, *l = NULL;
        TEST_OK(kiln_array_from_host(ctx, t, 3, shape, hs, kiln_dtype_size(t) * (size_t)(batch * n * n), &a));
        TEST_OK(kiln_cholesky(a, &l));
        void *hl = test_read_array(l);
        for (int64_t q = 0; q < batch; q++) {
            hval *am = load(t, hs, q * n * n, n * n), *ref = calloc((size_t)(n * n), sizeof *ref);
            long double cond = cond_inf(am, n);
            /* L in long double, column by column */
            for (int64_t j = 0; j < n; j++) {
                long double d = am[j * n + j].re;
                for (int64_t p = 0; p < j; p++) d -= lr_abs(ref[j * n + p]) * lr_abs(ref[j * n + p]);
                ref[j * n + j] = (hval){sqrtl(d), 0};
                for (int64_t i = j + 1; i < n; i++) {
                    hval s = am[i * n + j];
                    for (int64_t p = 0; p < j; p++)
                        s = h_sub(s, lr_mul(ref[i * n + p], lr_conj(ref[j * n + p])));
                    ref[i * n + j] = h_div(s, ref[j * n + j]);
                }
            }
            expect_forward("cholesky", t, q, rel_error(t, hl, q * n * n, ref, n * n), cond, n, 4);
            free(am), free(ref);
        }
        free(hs), free(hl);
        kiln_array_release(a), kiln_array_release(l);
    }
}

/* lstsq of a consistent tall system b = A x_true: the minimum-norm answer
 * of a full-rank A is x_true, within n eps cond(A) (the residual term,
 * cond(A)^2 |r| / (|A| |x|), is rounding's own). cond(A)^2 = cond(A^H A),
 * taken in the infinity norm. */
static void test_lstsq_forward(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    const int64_t m = 30, n = 8;
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        for (int grade = 0; grade < 3; grade++) {
            void *ha, *hxt;
            kiln_array *a3 = graded(ctx, &rng, t, 1, m, n, decades_for(t) * grade / 2.0, &ha);
            kiln_array_release(a3);
            int64_t sa[2] = {m, n}, sx = n;
            kiln_array *xt = lr_random(ctx, &rng, t, 1, &sx, 0, &hxt);
            kiln_array_release(xt);
            void *hb = malloc(kiln_dtype_size(t) * (size_t)m);
            for (int64_t i = 0; i < m; i++) {
                hval s = {0, 0};
                for (int64_t j = 0; j < n; j++) {
                    hval p = lr_mul(lr_get(t, ha, (size_t)(i * n + j)), lr_get(t, hxt, (size_t)j));
                    s.re += p.re, s.im += p.im;
                }
                lr_put(t, hb, (size_t)i, s);
            }
            kiln_array *a = NULL, *b = NULL, *x = NULL, *res = NULL, *s = NULL;
            TEST_OK(kiln_array_from_host(ctx, t, 2, sa, ha, kiln_dtype_size(t) * (size_t)(m * n), &a));
            TEST_OK(kiln_array_from_host(ctx, t, 1, &m, hb, kiln_dtype_size(t) * (size_t)m, &b));
            int64_t rank = -1;
            TEST_OK(kiln_lstsq(a, b, -1, &x, &res, &rank, &s));
            assert_int_equal(rank, n);
            hval *am = load(t, ha, 0, m * n), *ata = calloc((size_t)(n * n), sizeof *ata),
                 *ref = load(t, hxt, 0, n);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++)
                    for (int64_t p = 0; p < m; p++) {
                        hval v = lr_mul(lr_conj(am[p * n + i]), am[p * n + j]);
                        ata[i * n + j].re += v.re, ata[i * n + j].im += v.im;
                    }
            long double cond = sqrtl(cond_inf(ata, n));
            void *hx = test_read_array(x);
            /* b was rounded to the dtype: x_true solves it to within cond * eps too */
            expect_forward("lstsq", t, grade, rel_error(t, hx, 0, ref, n), cond, m, 4);
            free(hx), free(am), free(ata), free(ref), free(ha), free(hxt), free(hb);
            kiln_array *arrays[] = {a, b, x, res, s};
            for (int i = 0; i < 5; i++) kiln_array_release(arrays[i]);
        }
    }
}

/* NaN in, no error: the matrices beside it are solved as usual; on the
 * CPU, as NumPy runs LAPACK on it, solve gives NaN where the NaN reaches
 * (LAPACKE must not refuse the input as an illegal argument). */
static void test_nan_input(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        int64_t sa[3] = {2, 6, 6}, sb[3] = {2, 6, 1};
        void *ha, *hb;
        kiln_array *a0 = lr_random(ctx, &rng, t, 3, sa, 6, &ha), *b = lr_random(ctx, &rng, t, 3, sb, 0, &hb);
        kiln_array_release(a0);
        lr_put(t, ha, 36 + 2 * 6 + 3, (hval){NAN, 0}); /* matrix 1 */
        kiln_array *a = NULL, *x = NULL;
        TEST_OK(kiln_array_from_host(ctx, t, 3, sa, ha, kiln_dtype_size(t) * 72, &a));
        TEST_OK(kiln_solve(a, b, &x));
        void *hx = test_read_array(x);
        int nan_in_1 = 0;
        for (int64_t i = 0; i < 6; i++) {
            hval v0 = lr_get(t, hx, (size_t)i), v1 = lr_get(t, hx, (size_t)(6 + i));
            assert_true(isfinite((double)v0.re) && isfinite((double)v0.im));
            nan_in_1 |= isnan((double)v1.re);
        }
        /* LAPACK (the CPU) carries the NaN into that matrix's solution;
         * cuSOLVER's getrf gives it no defined value (docs/linalg.md) */
        if (kiln_context_backend(ctx) == KILN_BACKEND_CPU) assert_true(nan_in_1);
        hval *am = load(t, ha, 0, 36), *bm = load(t, hb, 0, 6), *ref = malloc(sizeof *ref * 6);
        long double cond = cond_inf(am, 6);
        ref_solve(6, 1, am, bm, ref);
        expect_forward("solve beside a NaN matrix", t, 0, rel_error(t, hx, 0, ref, 6), cond, 6, 4);
        free(am), free(bm), free(ref), free(hx), free(ha), free(hb);
        kiln_array_release(a), kiln_array_release(b), kiln_array_release(x);
    }
}

/* `kiln demo solve` at a small size: the 1000 64x64 systems and one 96^2,
 * each within its scaled-residual check. */
static void test_demo_solve(void **state) {
    kiln_context *ctx = *state;
    const kiln_example *ex = kiln_example_find("solve");
    assert_non_null(ex);
    kiln_example_opts opts = {96, 2, 0, NULL, 0};
    kiln_example_result r;
    memset(&r, 0, sizeof r);
    TEST_OK((kiln_status)ex->run(ctx, &opts, &r));
    if (!r.passed) fail_msg("kiln demo solve failed its check: %s", r.check);
    assert_int_equal(r.size, 96);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_solve_forward),    cmocka_unit_test(test_inv_forward),
        cmocka_unit_test(test_cholesky_forward), cmocka_unit_test(test_lstsq_forward),
        cmocka_unit_test(test_nan_input),        cmocka_unit_test(test_demo_solve),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
