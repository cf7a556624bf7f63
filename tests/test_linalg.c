/* test_linalg.c: kiln_solve, kiln_inv, kiln_det, kiln_slogdet,
 * kiln_cholesky, kiln_qr, kiln_svd and kiln_eigh against
 * NumPy's documented behaviour, on the backend under test
 * (KILN_TEST_TARGET), every dtype, on random inputs: residuals and
 * reconstructions checked in long double with tolerances of the dtype's
 * epsilon times the size (backward errors, which do not grow with the
 * condition number) or on well-conditioned constructions where a forward
 * error is compared; batches and broadcast batches. Singular and
 * non-positive-definite matrices named by their batch index, bad input
 * are in test_linalg_lstsq.c, with lstsq, views, the NVRTC build of kiln's
 * kernels and the CPU-vs-CUDA comparison. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linalg_ref.h"

/* ------------------------------------------------------------------ solve, inv, det */

static void check_solve(kiln_dtype t, const void *a, const void *b, const void *x, int64_t batch, int64_t n,
                        int64_t k, int a_broadcast, int b_vector) {
    for (int64_t q = 0; q < batch; q++) {
        int64_t oa = a_broadcast ? 0 : q * n * n, ob = b_vector ? 0 : q * n * k;
        long double err = lr_product_error(t, a, oa, 0, x, q * n * k, 0, b, ob, n, n, k);
        long double scale = lr_fro(t, a, oa, n, n) * lr_fro(t, x, q * n * k, n, k) + lr_fro(t, b, ob, n, k);
        lr_expect_small("solve residual |Ax - b| / (|A||x| + |b|)", t, err, scale, 8.0 * (double)n);
    }
}

static void test_solve(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        /* random (not constructed) matrices: the backward error does not
         * depend on their condition */
        int64_t sa[4] = {3, 2, 17, 17}, sb[4] = {3, 2, 17, 4};
        void *ha, *hb, *hx;
        kiln_array *a = lr_random(ctx, &rng, t, 4, sa, 0, &ha), *b = lr_random(ctx, &rng, t, 4, sb, 0, &hb);
        kiln_array *x = NULL;
        TEST_OK(kiln_solve(a, b, &x));
        assert_int_equal(kiln_array_ndim(x), 4);
        assert_memory_equal(kiln_array_shape(x), sb, sizeof sb);
        assert_int_equal(kiln_array_dtype(x), t);
        hx = test_read_array(x);
        check_solve(t, ha, hb, hx, 6, 17, 4, 0, 0);
        free(hx);
        kiln_array_release(x);
        /* a vector b (n,) for every matrix: x (..., n) */
        int64_t sv = 17;
        void *hv;
        kiln_array *v = lr_random(ctx, &rng, t, 1, &sv, 0, &hv);
        TEST_OK(kiln_solve(a, v, &x));
        assert_int_equal(kiln_array_ndim(x), 3);
        hx = test_read_array(x);
        check_solve(t, ha, hv, hx, 6, 17, 1, 0, 1);
        free(hx);
        kiln_array_release(x);
        /* the input was not written */
        void *again = test_read_array(a);
        assert_memory_equal(again, ha, kiln_array_nbytes(a));
        free(again);
        free(hv);
        kiln_array_release(v);
        free(ha);
        free(hb);
        kiln_array_release(a);
        kiln_array_release(b);
    }
}

/* One matrix against a batch of right-hand sides: a (n, n), b (2, 3, n, k). */
static void test_solve_broadcast(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    kiln_dtype t = KILN_FLOAT64;
    int64_t sa[2] = {9, 9}, sb[4] = {2, 3, 9, 2};
    void *ha, *hb;
    kiln_array *a = lr_random(ctx, &rng, t, 2, sa, 0, &ha), *b = lr_random(ctx, &rng, t, 4, sb, 0, &hb),
               *x = NULL;
    TEST_OK(kiln_solve(a, b, &x));
    assert_memory_equal(kiln_array_shape(x), sb, sizeof sb);
    void *hx = test_read_array(x);
    check_solve(t, ha, hb, hx, 6, 9, 2, 1, 0);
    free(hx);
    kiln_array_release(x);
    /* a (2, 1, n, n) with b (3, n, k): the batch is (2, 3) */
    int64_t sa2[4] = {2, 1, 9, 9}, sb2[3] = {3, 9, 2}, want[4] = {2, 3, 9, 2};
    void *ha2, *hb2;
    kiln_array *a2 = lr_random(ctx, &rng, t, 4, sa2, 0, &ha2), *b2 = lr_random(ctx, &rng, t, 3, sb2, 0, &hb2);
    TEST_OK(kiln_solve(a2, b2, &x));
    assert_memory_equal(kiln_array_shape(x), want, sizeof want);
    hx = test_read_array(x);
    for (int64_t p = 0; p < 2; p++)
        for (int64_t q = 0; q < 3; q++) {
            long double err =
                lr_product_error(t, ha2, p * 81, 0, hx, (p * 3 + q) * 18, 0, hb2, q * 18, 9, 9, 2);
            lr_expect_small("broadcast solve", t, err,
                            lr_fro(t, ha2, p * 81, 9, 9) * lr_fro(t, hx, (p * 3 + q) * 18, 9, 2), 72);
        }
    free(hx);
    kiln_array_release(x);
    free(ha), free(hb), free(ha2), free(hb2);
    kiln_array_release(a), kiln_array_release(b), kiln_array_release(a2), kiln_array_release(b2);
}

static void test_inv(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        int64_t sa[3] = {4, 23, 23};
        void *ha;
        kiln_array *a = lr_random(ctx, &rng, t, 3, sa, 0, &ha), *ai = NULL;
        TEST_OK(kiln_inv(a, &ai));
        assert_memory_equal(kiln_array_shape(ai), sa, sizeof sa);
        void *hi = test_read_array(ai);
        for (int64_t q = 0; q < 4; q++) {
            long double err = lr_product_error(t, ha, q * 529, 0, hi, q * 529, 0, NULL, 0, 23, 23, 23);
            lr_expect_small("inv |A inv(A) - I| / (|A||inv(A)|)", t, err,
                            lr_fro(t, ha, q * 529, 23, 23) * lr_fro(t, hi, q * 529, 23, 23), 8 * 23);
        }
        free(hi);
        free(ha);
        kiln_array_release(ai);
        kiln_array_release(a);
    }
}

/* det in long double by Gaussian elimination with partial pivoting. */
static hval host_det(kiln_dtype t, const void *a, int64_t off, int64_t n) {
    hval *m = malloc(sizeof *m * (size_t)(n * n)), det = {1, 0};
    for (int64_t i = 0; i < n * n; i++) m[i] = lr_get(t, a, (size_t)(off + i));
    for (int64_t c = 0; c < n; c++) {
        int64_t p = c;
        for (int64_t r = c + 1; r < n; r++)
            if (lr_abs(m[r * n + c]) > lr_abs(m[p * n + c])) p = r;
        if (p != c) {
            for (int64_t j = 0; j < n; j++) {
                hval x = m[c * n + j];
                m[c * n + j] = m[p * n + j];
                m[p * n + j] = x;
            }
            det.re = -det.re, det.im = -det.im;
        }
        hval piv = m[c * n + c];
        det = lr_mul(det, piv);
        long double d2 = piv.re * piv.re + piv.im * piv.im;
        if (d2 == 0) break;
        hval inv = {piv.re / d2, -piv.im / d2};
        for (int64_t r = c + 1; r < n; r++) {
            hval f = lr_mul(m[r * n + c], inv);
            for (int64_t j = c; j < n; j++) {
                hval x = lr_mul(f, m[c * n + j]);
                m[r * n + j].re -= x.re, m[r * n + j].im -= x.im;
            }
        }
    }
    free(m);
    return det;
}

static void test_det_slogdet(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti];
        /* diagonally dominant: cond(A) is small, so det's relative forward
         * error is a small multiple of n eps */
        int64_t sa[3] = {5, 12, 12}, n = 12;
        void *ha;
        kiln_array *a = lr_random(ctx, &rng, t, 3, sa, 12, &ha), *d = NULL, *sg = NULL, *la = NULL;
        TEST_OK(kiln_det(a, &d));
        TEST_OK(kiln_slogdet(a, &sg, &la));
        assert_int_equal(kiln_array_ndim(d), 1);
        assert_int_equal(kiln_array_shape(d)[0], 5);
        assert_int_equal(kiln_array_dtype(la),
                         lr_complex(t) ? (t == KILN_COMPLEX64 ? KILN_FLOAT32 : KILN_FLOAT64) : t);
        void *hd = test_read_array(d), *hs = test_read_array(sg), *hl = test_read_array(la);
        for (int64_t q = 0; q < 5; q++) {
            hval ref = host_det(t, ha, q * n * n, n), got = lr_get(t, hd, (size_t)q),
                 sign = lr_get(t, hs, (size_t)q);
            long double e = lr_abs((hval){got.re - ref.re, got.im - ref.im});
            lr_expect_small("det relative error", t, e, 10 * n * lr_abs(ref), 10);
            long double logabs = lr_get(kiln_array_dtype(la), hl, (size_t)q).re;
            lr_expect_small("slogdet log|det|", t, fabsl(logabs - logl(lr_abs(ref))), 4 * n, 10);
            hval unit = {ref.re / lr_abs(ref), ref.im / lr_abs(ref)};
            lr_expect_small("slogdet sign", t, lr_abs((hval){sign.re - unit.re, sign.im - unit.im}), 4 * n,
                            10);
        }
        free(hd), free(hs), free(hl), free(ha);
        kiln_array_release(d), kiln_array_release(sg), kiln_array_release(la), kiln_array_release(a);
    }
    /* a singular matrix: det 0, sign 0, log|det| -inf, and no error */
    double z[4] = {1, 2, 2, 4};
    int64_t s2[2] = {2, 2};
    kiln_array *a = NULL, *d = NULL, *sg = NULL, *la = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 2, s2, z, sizeof z, &a));
    TEST_OK(kiln_det(a, &d));
    assert_int_equal(kiln_array_ndim(d), 0);
    double v;
    TEST_OK(kiln_array_to_host(d, &v, sizeof v));
    assert_true(v == 0);
    TEST_OK(kiln_slogdet(a, &sg, &la));
    TEST_OK(kiln_array_to_host(sg, &v, sizeof v));
    assert_true(v == 0);
    TEST_OK(kiln_array_to_host(la, &v, sizeof v));
    assert_true(isinf(v) && v < 0);
    kiln_array_release(a), kiln_array_release(d), kiln_array_release(sg), kiln_array_release(la);
}

/* ------------------------------------------------------------------ cholesky, qr */

/* Each factor kiln can ask for (KILN_CHOLESKY_FACTOR: the lower one is
 * rewritten row-major in place by 32 x 32 tiles, so 70 takes partial and
 * mirrored tiles), each dtype. */
static void test_cholesky(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    static const char *const factors[3] = {"auto", "lower", "upper"};
    for (int c = 0; c < 3 * 2 * 4; c++) {
        setenv("KILN_CHOLESKY_FACTOR", factors[c / 8], 1);
        kiln_dtype t = LINALG_DTYPES[c % 4];
        int64_t batch = 3, n = c / 4 % 2 ? 70 : 19;
        void *ha;
        kiln_array *a = lr_spd(ctx, &rng, t, batch, n, &ha), *l = NULL;
        /* NumPy reads only the lower triangle: garbage above must not matter */
        void *poisoned = malloc(kiln_array_nbytes(a));
        memcpy(poisoned, ha, kiln_array_nbytes(a));
        for (int64_t q = 0; q < batch; q++)
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = i + 1; j < n; j++)
                    lr_put(t, poisoned, (size_t)((q * n + i) * n + j), (hval){1e3, -7});
        kiln_array *ap = NULL;
        TEST_OK(kiln_array_from_host(ctx, t, 3, kiln_array_shape(a), poisoned, kiln_array_nbytes(a), &ap));
        TEST_OK(kiln_cholesky(ap, &l));
        void *hl = test_read_array(l);
        for (int64_t q = 0; q < batch; q++) {
            for (int64_t i = 0; i < n; i++) {
                hval d = lr_get(t, hl, (size_t)((q * n + i) * n + i));
                assert_true(d.re > 0 && d.im == 0);
                for (int64_t j = i + 1; j < n; j++) {
                    hval u = lr_get(t, hl, (size_t)((q * n + i) * n + j));
                    assert_true(u.re == 0 && u.im == 0);
                }
            }
            long double err = lr_product_error(t, hl, q * n * n, 0, hl, q * n * n, 1, ha, q * n * n, n, n, n);
            lr_expect_small("cholesky |L L^H - A| / |A|", t, err, lr_fro(t, ha, q * n * n, n, n), 8.0 * n);
        }
        free(hl), free(ha), free(poisoned);
        kiln_array_release(l), kiln_array_release(a), kiln_array_release(ap);
    }
    unsetenv("KILN_CHOLESKY_FACTOR");
}

static void qr_case(kiln_context *ctx, test_rng *rng, kiln_dtype t, int64_t batch, int64_t m, int64_t n) {
    int64_t sa[3] = {batch, m, n}, k = m < n ? m : n;
    void *ha;
    kiln_array *a = lr_random(ctx, rng, t, 3, sa, 0, &ha);
    for (int mode = 0; mode < 3; mode++) {
        kiln_array *q = NULL, *r = NULL;
        TEST_OK(kiln_qr(a, (kiln_qr_mode)mode, mode == KILN_QR_R ? NULL : &q, &r));
        int64_t qc = mode == KILN_QR_COMPLETE ? m : k, rr = mode == KILN_QR_COMPLETE ? m : k;
        assert_int_equal(kiln_array_shape(r)[1], rr);
        assert_int_equal(kiln_array_shape(r)[2], n);
        void *hr = test_read_array(r), *hq = q ? test_read_array(q) : NULL;
        for (int64_t b = 0; b < batch; b++) {
            for (int64_t i = 0; i < rr; i++)
                for (int64_t j = 0; j < i && j < n; j++) {
                    hval z = lr_get(t, hr, (size_t)(b * rr * n + i * n + j));
                    assert_true(z.re == 0 && z.im == 0);
                }
            if (!q) continue;
            assert_int_equal(kiln_array_shape(q)[1], m);
            assert_int_equal(kiln_array_shape(q)[2], qc);
            long double err =
                lr_product_error(t, hq, b * m * qc, 0, hr, b * rr * n, 0, ha, b * m * n, m, qc, n);
            lr_expect_small("qr |QR - A| / |A|", t, err, lr_fro(t, ha, b * m * n, m, n),
                            8.0 * (m > n ? m : n));
            lr_expect_small("qr |Q^H Q - I|", t, lr_orthonormal_error(t, hq, b * m * qc, m, qc), 1, 8.0 * m);
        }
        free(hr);
        free(hq);
        kiln_array_release(q);
        kiln_array_release(r);
    }
    free(ha);
    kiln_array_release(a);
}

static void test_qr(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        qr_case(ctx, &rng, LINALG_DTYPES[ti], 2, 13, 7);
        qr_case(ctx, &rng, LINALG_DTYPES[ti], 2, 7, 13);
        qr_case(ctx, &rng, LINALG_DTYPES[ti], 1, 10, 10);
    }
}

/* ------------------------------------------------------------------ svd, eigh */

static void svd_case(kiln_context *ctx, test_rng *rng, kiln_dtype t, int64_t batch, int64_t m, int64_t n) {
    int64_t sa[3] = {batch, m, n}, k = m < n ? m : n;
    void *ha;
    kiln_array *a = lr_random(ctx, rng, t, 3, sa, 0, &ha);
    kiln_dtype rt = lr_real(t);
    kiln_array *s_only = NULL;
    TEST_OK(kiln_svd(a, 0, 0, NULL, &s_only, NULL));
    void *hs0 = test_read_array(s_only);
    for (int full = 0; full < 2; full++) {
        kiln_array *u = NULL, *s = NULL, *vh = NULL;
        TEST_OK(kiln_svd(a, full, 1, &u, &s, &vh));
        int64_t uc = full ? m : k, vr = full ? n : k;
        assert_int_equal(kiln_array_dtype(s), rt);
        assert_int_equal(kiln_array_shape(u)[1], m);
        assert_int_equal(kiln_array_shape(u)[2], uc);
        assert_int_equal(kiln_array_shape(vh)[1], vr);
        assert_int_equal(kiln_array_shape(vh)[2], n);
        void *hu = test_read_array(u), *hs = test_read_array(s), *hv = test_read_array(vh);
        for (int64_t b = 0; b < batch; b++) {
            /* U[:, :k] diag(s) Vh[:k, :] = A; s descending, non-negative */
            void *us = malloc(kiln_dtype_size(t) * (size_t)(m * k));
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < k; j++) {
                    hval x = lr_get(t, hu, (size_t)(b * m * uc + i * uc + j));
                    long double sv = lr_get(rt, hs, (size_t)(b * k + j)).re;
                    lr_put(t, us, (size_t)(i * k + j), (hval){x.re * sv, x.im * sv});
                }
            long double err = lr_product_error(t, us, 0, 0, hv, b * vr * n, 0, ha, b * m * n, m, k, n);
            free(us);
            long double scale = lr_fro(t, ha, b * m * n, m, n);
            lr_expect_small("svd |U S Vh - A| / |A|", t, err, scale, 16.0 * (m > n ? m : n));
            lr_expect_small("svd |U^H U - I|", t, lr_orthonormal_error(t, hu, b * m * uc, m, uc), 1,
                            16.0 * m);
            /* Vh's rows orthonormal: (Vh^H)^H Vh^H = Vh Vh^H = I */
            lr_expect_small("svd |Vh Vh^H - I|", t,
                            lr_product_error(t, hv, b * vr * n, 0, hv, b * vr * n, 1, NULL, 0, vr, n, vr), 1,
                            16.0 * n);
            for (int64_t j = 0; j < k; j++) {
                long double sj = lr_get(rt, hs, (size_t)(b * k + j)).re;
                assert_true(sj >= 0);
                if (j) assert_true(sj <= lr_get(rt, hs, (size_t)(b * k + j - 1)).re);
                lr_expect_small("svd s without u, v", t, fabsl(sj - lr_get(rt, hs0, (size_t)(b * k + j)).re),
                                scale, 16.0 * n);
            }
        }
        free(hu), free(hs), free(hv);
        kiln_array_release(u), kiln_array_release(s), kiln_array_release(vh);
    }
    free(hs0);
    free(ha);
    kiln_array_release(s_only);
    kiln_array_release(a);
}

static void test_svd(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        svd_case(ctx, &rng, LINALG_DTYPES[ti], 2, 11, 6);
        svd_case(ctx, &rng, LINALG_DTYPES[ti], 2, 6, 11);
        svd_case(ctx, &rng, LINALG_DTYPES[ti], 1, 9, 9);
    }
}

static void test_eigh(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    for (int ti = 0; ti < 4; ti++) {
        kiln_dtype t = LINALG_DTYPES[ti], rt = lr_real(t);
        int64_t batch = 3, n = 14;
        void *ha;
        /* Hermitian, not definite: B B^H + n I shifted is still Hermitian */
        kiln_array *a = lr_spd(ctx, &rng, t, batch, n, &ha);
        for (int side = 0; side < 2; side++) {
            char uplo = side ? 'U' : 'L';
            /* the triangle not named is garbage */
            void *poisoned = malloc(kiln_array_nbytes(a));
            memcpy(poisoned, ha, kiln_array_nbytes(a));
            for (int64_t q = 0; q < batch; q++)
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = 0; j < n; j++)
                        if (side ? j < i : j > i)
                            lr_put(t, poisoned, (size_t)((q * n + i) * n + j), (hval){-55, 3});
            kiln_array *ap = NULL, *w = NULL, *v = NULL, *w_only = NULL;
            TEST_OK(
                kiln_array_from_host(ctx, t, 3, kiln_array_shape(a), poisoned, kiln_array_nbytes(a), &ap));
            TEST_OK(kiln_eigh(ap, uplo, &w, &v));
            TEST_OK(kiln_eigh(ap, uplo, &w_only, NULL));
            assert_int_equal(kiln_array_dtype(w), rt);
            void *hw = test_read_array(w), *hv = test_read_array(v), *hw0 = test_read_array(w_only);
            for (int64_t q = 0; q < batch; q++) {
                long double scale = lr_fro(t, ha, q * n * n, n, n);
                /* A V - V diag(w) */
                void *vw = malloc(kiln_dtype_size(t) * (size_t)(n * n));
                for (int64_t i = 0; i < n * n; i++) {
                    hval x = lr_get(t, hv, (size_t)(q * n * n + i));
                    long double e = lr_get(rt, hw, (size_t)(q * n + i % n)).re;
                    lr_put(t, vw, (size_t)i, (hval){x.re * e, x.im * e});
                }
                long double err = lr_product_error(t, ha, q * n * n, 0, hv, q * n * n, 0, vw, 0, n, n, n);
                free(vw);
                lr_expect_small("eigh |A V - V diag(w)| / |A|", t, err, scale, 16.0 * n);
                lr_expect_small("eigh |V^H V - I|", t, lr_orthonormal_error(t, hv, q * n * n, n, n), 1,
                                16.0 * n);
                for (int64_t i = 0; i < n; i++) {
                    long double wi = lr_get(rt, hw, (size_t)(q * n + i)).re;
                    if (i) assert_true(wi >= lr_get(rt, hw, (size_t)(q * n + i - 1)).re);
                    lr_expect_small("eigh values without vectors", t,
                                    fabsl(wi - lr_get(rt, hw0, (size_t)(q * n + i)).re), scale, 16.0 * n);
                }
            }
            free(hw), free(hv), free(hw0), free(poisoned);
            kiln_array_release(ap), kiln_array_release(w), kiln_array_release(v), kiln_array_release(w_only);
        }
        free(ha);
        kiln_array_release(a);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_solve),    cmocka_unit_test(test_solve_broadcast),
        cmocka_unit_test(test_inv),      cmocka_unit_test(test_det_slogdet),
        cmocka_unit_test(test_cholesky), cmocka_unit_test(test_qr),
        cmocka_unit_test(test_svd),      cmocka_unit_test(test_eigh),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
