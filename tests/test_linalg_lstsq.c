/* test_linalg_lstsq.c: kiln_lstsq against NumPy's documented results
 * (minimum-norm solution, residuals only at full column rank with more
 * rows, the rank, the singular values); every linalg call on
 * non-contiguous views giving what it gives on their contiguous copies;
 * singular and non-positive-definite matrices named by their batch index,
 * bad shapes and dtypes; the profile rows; the NVRTC build of kiln's
 * kernels for sm_90 (any machine with the toolkit); and on CUDA the same
 * problems on the CPU backend, compared. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linalg_ref.h"

extern const char kiln_embedded_linalg_kernels[];

static int on_cuda(kiln_context *ctx) { return kiln_context_backend(ctx) == KILN_BACKEND_CUDA; }

/* ------------------------------------------------------------------ lstsq */

static void lstsq_full_rank(kiln_context *ctx, test_rng *rng, kiln_dtype t, int vector) {
    int64_t m = 20, n = 6, k = vector ? 1 : 3, sa[2] = {m, n}, sb[2] = {m, k};
    void *ha, *hb;
    kiln_array *a = lr_random(ctx, rng, t, 2, sa, 0, &ha),
               *b = lr_random(ctx, rng, t, vector ? 1 : 2, sb, 0, &hb);
    kiln_array *x = NULL, *res = NULL, *s = NULL;
    int64_t rank = -1;
    TEST_OK(kiln_lstsq(a, b, -1, &x, &res, &rank, &s));
    assert_int_equal(rank, n);
    assert_int_equal(kiln_array_ndim(x), vector ? 1 : 2);
    assert_int_equal(kiln_array_shape(x)[0], n);
    assert_int_equal(kiln_array_ndim(res), 1);
    assert_int_equal(kiln_array_shape(res)[0], k);
    assert_int_equal(kiln_array_shape(s)[0], n);
    void *hx = test_read_array(x), *hr = test_read_array(res);
    /* optimality: A^H (A x - b) = 0, relative to |A| (|A||x| + |b|) */
    void *r = malloc(kiln_dtype_size(t) * (size_t)(m * k));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < k; j++) {
            hval acc = {0, 0};
            for (int64_t l = 0; l < n; l++) {
                hval p = lr_mul(lr_get(t, ha, (size_t)(i * n + l)), lr_get(t, hx, (size_t)(l * k + j)));
                acc.re += p.re, acc.im += p.im;
            }
            hval bv = lr_get(t, hb, (size_t)(i * k + j));
            lr_put(t, r, (size_t)(i * k + j), (hval){acc.re - bv.re, acc.im - bv.im});
        }
    /* A^H r vs zero: lr_product_error with C = NULL compares with I, so do it by hand */
    long double worst = 0;
    for (int64_t l = 0; l < n; l++)
        for (int64_t j = 0; j < k; j++) {
            hval acc = {0, 0};
            for (int64_t i = 0; i < m; i++) {
                hval p =
                    lr_mul(lr_conj(lr_get(t, ha, (size_t)(i * n + l))), lr_get(t, r, (size_t)(i * k + j)));
                acc.re += p.re, acc.im += p.im;
            }
            if (lr_abs(acc) > worst) worst = lr_abs(acc);
        }
    long double na = lr_fro(t, ha, 0, m, n);
    lr_expect_small("lstsq |A^H (Ax - b)|", t, worst,
                    na * (na * lr_fro(t, hx, 0, n, k) + lr_fro(t, hb, 0, m, k)), 64 * m);
    /* residuals: |b - A x|^2 per column */
    kiln_dtype rt = lr_real(t);
    for (int64_t j = 0; j < k; j++) {
        long double want = 0;
        for (int64_t i = 0; i < m; i++) {
            long double v = lr_abs(lr_get(t, r, (size_t)(i * k + j)));
            want += v * v;
        }
        lr_expect_small("lstsq residuals", t, fabsl(lr_get(rt, hr, (size_t)j).re - want), want, 64 * m);
    }
    free(r), free(hx), free(hr), free(ha), free(hb);
    kiln_array_release(a), kiln_array_release(b), kiln_array_release(x), kiln_array_release(res),
        kiln_array_release(s);
}

static void test_lstsq(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        lstsq_full_rank(ctx, &rng, t, 0);
        lstsq_full_rank(ctx, &rng, t, 1);
        /* rank deficient: column 3 repeats column 1, so rank 3, no
         * residuals, and the minimum-norm x splits their weight evenly */
        int64_t sa[2] = {10, 4}, sb = 10;
        void *ha;
        kiln_array *a0 = lr_random(ctx, &rng, t, 2, sa, 0, &ha);
        for (int64_t i = 0; i < 10; i++)
            lr_put(t, ha, (size_t)(i * 4 + 3), lr_get(t, ha, (size_t)(i * 4 + 1)));
        kiln_array *a = NULL, *b = lr_random(ctx, &rng, t, 1, &sb, 0, NULL), *x = NULL, *res = NULL,
                   *s = NULL;
        TEST_OK(kiln_array_from_host(ctx, t, 2, sa, ha, kiln_array_nbytes(a0), &a));
        int64_t rank = -1;
        TEST_OK(kiln_lstsq(a, b, -1, &x, &res, &rank, &s));
        assert_int_equal(rank, 3);
        assert_int_equal(kiln_array_shape(res)[0], 0);
        void *hx = test_read_array(x);
        hval x1 = lr_get(t, hx, 1), x3 = lr_get(t, hx, 3);
        lr_expect_small("lstsq minimum norm", t, lr_abs((hval){x1.re - x3.re, x1.im - x3.im}), 1 + lr_abs(x1),
                        1000);
        free(hx);
        kiln_array_release(x), kiln_array_release(res), kiln_array_release(s);
        /* a large rcond keeps only the largest singular value */
        TEST_OK(kiln_lstsq(a, b, 0.999999, &x, &res, &rank, &s));
        assert_int_equal(rank, 1);
        kiln_array_release(x), kiln_array_release(res), kiln_array_release(s);
        free(ha);
        kiln_array_release(a0), kiln_array_release(a), kiln_array_release(b);
        /* underdetermined: A x = b exactly, no residuals */
        int64_t su[2] = {4, 9}, sbu = 4;
        void *hu, *hbu;
        kiln_array *au = lr_random(ctx, &rng, t, 2, su, 0, &hu),
                   *bu = lr_random(ctx, &rng, t, 1, &sbu, 0, &hbu);
        TEST_OK(kiln_lstsq(au, bu, -1, &x, &res, &rank, &s));
        assert_int_equal(rank, 4);
        assert_int_equal(kiln_array_shape(res)[0], 0);
        hx = test_read_array(x);
        long double err = lr_product_error(t, hu, 0, 0, hx, 0, 0, hbu, 0, 4, 9, 1);
        lr_expect_small("lstsq underdetermined |Ax - b|", t, err,
                        lr_fro(t, hu, 0, 4, 9) * lr_fro(t, hx, 0, 9, 1), 200);
        free(hx), free(hu), free(hbu);
        kiln_array_release(x), kiln_array_release(res), kiln_array_release(s), kiln_array_release(au),
            kiln_array_release(bu);
    }
}

/* ------------------------------------------------------------------ views */

static void expect_same(kiln_array *x, kiln_array *y, const char *what) {
    assert_int_equal(kiln_array_nbytes(x), kiln_array_nbytes(y));
    void *hx = test_read_array(x), *hy = test_read_array(y);
    /* a view is copied into the same contiguous working matrix, so the
     * library does the same arithmetic: equal bit for bit */
    if (memcmp(hx, hy, kiln_array_nbytes(x)) != 0) fail_msg("%s: view and contiguous copy differ", what);
    free(hx), free(hy);
}

static void test_views(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        /* a transposed, then every other matrix of a batch, then a slice */
        int64_t sbase[3] = {4, 12, 12};
        kiln_array *base = lr_random(ctx, &rng, t, 3, sbase, 12, NULL), *tr = NULL, *ev = NULL, *view = NULL;
        int axes[3] = {0, 2, 1};
        TEST_OK(kiln_array_transpose(base, axes, &tr));
        TEST_OK(kiln_array_slice(tr, 0, 0, 4, 2, &ev));
        TEST_OK(kiln_array_slice(ev, 1, 1, 11, 1, &view)); /* (2, 10, 12): not square */
        kiln_array *sq = NULL, *copy = NULL, *sq_copy = NULL;
        TEST_OK(kiln_array_slice(view, 2, 2, 12, 1, &sq)); /* (2, 10, 10) */
        TEST_OK(kiln_array_copy(view, &copy));
        TEST_OK(kiln_array_copy(sq, &sq_copy));
        assert_false(kiln_array_is_contiguous(sq));
        /* the right-hand side: a reversed view */
        int64_t sb[3] = {2, 10, 3};
        kiln_array *bbase = lr_random(ctx, &rng, t, 3, sb, 0, NULL), *brev = NULL, *bcopy = NULL;
        TEST_OK(kiln_array_slice(bbase, 1, -1, -11, -1, &brev));
        TEST_OK(kiln_array_copy(brev, &bcopy));
        kiln_array *p = NULL, *q = NULL, *p2 = NULL, *q2 = NULL, *p3 = NULL, *q3 = NULL;
        TEST_OK(kiln_solve(sq, brev, &p));
        TEST_OK(kiln_solve(sq_copy, bcopy, &q));
        expect_same(p, q, "solve");
        kiln_array_release(p), kiln_array_release(q);
        TEST_OK(kiln_qr(view, KILN_QR_REDUCED, &p, &p2));
        TEST_OK(kiln_qr(copy, KILN_QR_REDUCED, &q, &q2));
        expect_same(p, q, "qr q");
        expect_same(p2, q2, "qr r");
        kiln_array_release(p), kiln_array_release(q), kiln_array_release(p2), kiln_array_release(q2);
        TEST_OK(kiln_svd(view, 0, 1, &p, &p2, &p3));
        TEST_OK(kiln_svd(copy, 0, 1, &q, &q2, &q3));
        expect_same(p2, q2, "svd s");
        expect_same(p3, q3, "svd vh");
        kiln_array_release(p), kiln_array_release(q), kiln_array_release(p2), kiln_array_release(q2);
        kiln_array_release(p3), kiln_array_release(q3);
        TEST_OK(kiln_eigh(sq, 'L', &p, &p2));
        TEST_OK(kiln_eigh(sq_copy, 'L', &q, &q2));
        expect_same(p, q, "eigh w");
        kiln_array_release(p), kiln_array_release(q), kiln_array_release(p2), kiln_array_release(q2);
        TEST_OK(kiln_det(sq, &p));
        TEST_OK(kiln_det(sq_copy, &q));
        expect_same(p, q, "det");
        kiln_array_release(p), kiln_array_release(q);
        kiln_array *arrs[] = {base, tr, ev, view, sq, copy, sq_copy, bbase, brev, bcopy};
        for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
    }
}

/* ------------------------------------------------------------------ errors */

static void test_singular_and_not_definite(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        int64_t sa[4] = {2, 3, 5, 5}, sb[4] = {2, 3, 5, 1};
        void *ha;
        kiln_array *a0 = lr_random(ctx, &rng, t, 4, sa, 5, &ha), *a = NULL, *x = NULL;
        /* matrix (1, 2): a zero row */
        for (int64_t j = 0; j < 5; j++) lr_put(t, ha, (size_t)((1 * 3 + 2) * 25 + 3 * 5 + j), (hval){0, 0});
        TEST_OK(kiln_array_from_host(ctx, t, 4, sa, ha, kiln_array_nbytes(a0), &a));
        kiln_array *b = lr_random(ctx, &rng, t, 4, sb, 0, NULL);
        TEST_FAILS_WITH(kiln_solve(a, b, &x), KILN_ERR_LINALG, "matrix (1, 2) of the batch is singular");
        assert_null(x);
        TEST_FAILS_WITH(kiln_inv(a, &x), KILN_ERR_LINALG, "(1, 2)");
        /* Cholesky: matrix 2 of 4 has a negative diagonal entry */
        void *hs;
        kiln_array *s0 = lr_spd(ctx, &rng, t, 4, 6, &hs), *s1 = NULL, *l = NULL;
        lr_put(t, hs, (size_t)(2 * 36 + 4 * 6 + 4), (hval){-1, 0});
        TEST_OK(kiln_array_from_host(ctx, t, 3, kiln_array_shape(s0), hs, kiln_array_nbytes(s0), &s1));
        TEST_FAILS_WITH(kiln_cholesky(s1, &l), KILN_ERR_LINALG,
                        "matrix (2,) of the batch is not positive definite");
        assert_null(l);
        free(ha), free(hs);
        kiln_array_release(a0), kiln_array_release(a), kiln_array_release(b), kiln_array_release(s0),
            kiln_array_release(s1);
    }
}

static void test_bad_input(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    int64_t s34[2] = {3, 4}, s33[2] = {3, 3}, s4 = 4, s233[3] = {2, 3, 3}, s431[3] = {4, 3, 1},
            s2333[4] = {2, 3, 3, 3};
    kiln_array *a34 = lr_random(ctx, &rng, KILN_FLOAT64, 2, s34, 0, NULL);
    kiln_array *a33 = lr_random(ctx, &rng, KILN_FLOAT64, 2, s33, 3, NULL);
    kiln_array *f33 = lr_random(ctx, &rng, KILN_FLOAT32, 2, s33, 3, NULL);
    kiln_array *v4 = lr_random(ctx, &rng, KILN_FLOAT64, 1, &s4, 0, NULL);
    kiln_array *b233 = lr_random(ctx, &rng, KILN_FLOAT64, 3, s233, 3, NULL);
    kiln_array *b431 = lr_random(ctx, &rng, KILN_FLOAT64, 3, s431, 0, NULL);
    kiln_array *a4d = lr_random(ctx, &rng, KILN_FLOAT64, 4, s2333, 3, NULL);
    kiln_array *i33 = NULL, *x = NULL, *y = NULL, *z = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 2, s33, &i33));
    int64_t rank;
    TEST_FAILS_WITH(kiln_solve(a34, v4, &x), KILN_ERR_SHAPE, "expected square matrices");
    TEST_FAILS_WITH(kiln_solve(a33, v4, &x), KILN_ERR_SHAPE, "needs b of shape (3,) or (..., 3, k)");
    TEST_FAILS_WITH(kiln_solve(b233, b431, &x), KILN_ERR_SHAPE, "do not broadcast");
    TEST_FAILS_WITH(kiln_solve(a33, NULL, &x), KILN_ERR_INVALID_ARGUMENT, "b is NULL");
    TEST_FAILS_WITH(kiln_solve(f33, a33, &x), KILN_ERR_DTYPE,
                    "expected b of a's dtype float32, found float64");
    TEST_FAILS_WITH(kiln_inv(v4, &x), KILN_ERR_SHAPE, "ndim >= 2");
    TEST_FAILS_WITH(kiln_inv(i33, &x), KILN_ERR_DTYPE, "found int32");
    TEST_FAILS_WITH(kiln_inv(NULL, &x), KILN_ERR_INVALID_ARGUMENT, "NULL");
    TEST_FAILS_WITH(kiln_cholesky(a34, &x), KILN_ERR_SHAPE, "square");
    TEST_FAILS_WITH(kiln_eigh(a33, 'X', &x, &y), KILN_ERR_INVALID_ARGUMENT, "UPLO 'L' or 'U'");
    TEST_FAILS_WITH(kiln_qr(a34, (kiln_qr_mode)9, &x, &y), KILN_ERR_INVALID_ARGUMENT, "mode");
    TEST_FAILS_WITH(kiln_qr(a34, KILN_QR_REDUCED, NULL, &y), KILN_ERR_INVALID_ARGUMENT, "q is NULL");
    TEST_FAILS_WITH(kiln_svd(a34, 0, 1, NULL, &y, &z), KILN_ERR_INVALID_ARGUMENT, "compute_uv");
    TEST_FAILS_WITH(kiln_lstsq(a4d, v4, -1, &x, &y, &rank, &z), KILN_ERR_SHAPE, "2-d a");
    TEST_FAILS_WITH(kiln_lstsq(a33, v4, -1, &x, &y, &rank, &z), KILN_ERR_SHAPE, "needs b of shape (3,)");
    TEST_FAILS_WITH(kiln_det(a34, &x), KILN_ERR_SHAPE, "square");
    assert_null(x);
    kiln_array *arrs[] = {a34, a33, f33, v4, b233, b431, a4d, i33};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
}

/* ------------------------------------------------------------------ provider, profile, NVRTC */

static void test_provider_and_profile(void **state) {
    kiln_context *ctx = *state;
    const char *name = NULL;
    TEST_OK(kiln_linalg_provider(ctx, &name));
    assert_true(test_contains(name, on_cuda(ctx) ? "cuSOLVER" : "LAPACKE"));
    test_rng rng = test_rng_for(__func__);
    int64_t s[2] = {8, 8};
    kiln_array *a = lr_random(ctx, &rng, KILN_FLOAT64, 2, s, 8, NULL), *x = NULL;
    TEST_OK(kiln_profiler_start(ctx));
    TEST_OK(kiln_inv(a, &x));
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    TEST_OK(kiln_profiler_stop(ctx));
    char want[64];
    snprintf(want, sizeof want, "linalg inv getrf float64 [%s]", on_cuda(ctx) ? "cuSOLVER" : "LAPACKE");
    if (!test_contains(text, want)) fail_msg("the profile lacks \"%s\":\n%s", want, text);
    assert_true(test_contains(text, "linalg inv getrs float64"));
    kiln_free(text);
    kiln_array_release(x), kiln_array_release(a);
}

static void test_kernels_nvrtc(void **state) {
    (void)state;
    for (int v = 0; v < 8; v++) {
        char options[96];
        snprintf(options, sizeof options, "-DLINALG_R=%s -DLINALG_C=%d -DLINALG_P64=%d",
                 v & 1 ? "double" : "float", v & 2 ? 2 : 1, (v & 4) != 0);
        char *log = NULL;
        kiln_status s = kiln_compile_only("cuda", "sm_90", kiln_embedded_linalg_kernels, "linalg_kernels.cu",
                                          options, &log);
        kiln_free(log);
        if (s == KILN_ERR_COMPILER_MISSING) return; /* no CUDA toolkit here */
        if (s != KILN_OK)
            fail_msg("linalg kernels (%s) did not compile through NVRTC: %s", options, kiln_last_error());
    }
}

/* On CUDA: the same problems on the CPU backend agree within rounding. */
static void test_cpu_vs_cuda(void **state) {
    kiln_context *ctx = *state;
    if (!on_cuda(ctx)) return;
    kiln_context *cpu = NULL;
    TEST_OK(kiln_open(&cpu, "cpu"));
    test_rng rng = test_rng_for(__func__);
    int64_t sa[3] = {3, 32, 32}, sb[3] = {3, 32, 2};
    void *ha, *hb;
    kiln_array *a = lr_random(ctx, &rng, KILN_FLOAT64, 3, sa, 32, &ha),
               *b = lr_random(ctx, &rng, KILN_FLOAT64, 3, sb, 0, &hb);
    kiln_array *ac = NULL, *bc = NULL, *x = NULL, *xc = NULL, *s = NULL, *sc = NULL;
    TEST_OK(kiln_array_from_host(cpu, KILN_FLOAT64, 3, sa, ha, kiln_array_nbytes(a), &ac));
    TEST_OK(kiln_array_from_host(cpu, KILN_FLOAT64, 3, sb, hb, kiln_array_nbytes(b), &bc));
    TEST_OK(kiln_solve(a, b, &x));
    TEST_OK(kiln_solve(ac, bc, &xc));
    TEST_OK(kiln_svd(a, 0, 0, NULL, &s, NULL));
    TEST_OK(kiln_svd(ac, 0, 0, NULL, &sc, NULL));
    double *g = test_read_array(x), *h = test_read_array(xc), *gs = test_read_array(s),
           *hs = test_read_array(sc);
    for (int64_t i = 0; i < 3 * 32 * 2; i++)
        lr_expect_small("solve cpu vs cuda", KILN_FLOAT64, fabs(g[i] - h[i]), 1 + fabs(h[i]), 1e3);
    for (int64_t i = 0; i < 3 * 32; i++)
        lr_expect_small("svd cpu vs cuda", KILN_FLOAT64, fabs(gs[i] - hs[i]), hs[0], 1e3);
    free(g), free(h), free(gs), free(hs), free(ha), free(hb);
    kiln_array *arrs[] = {a, b, ac, bc, x, xc, s, sc};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
    kiln_close(cpu);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lstsq),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_singular_and_not_definite),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_provider_and_profile),
        cmocka_unit_test(test_kernels_nvrtc),
        cmocka_unit_test(test_cpu_vs_cuda),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
