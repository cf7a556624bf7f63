/* test_blas_level12.c: kiln_dot, kiln_vdot, kiln_nrm2, kiln_axpy, kiln_scal
 * and kiln_gemv against long double references on random inputs, through
 * plain, strided and reversed views, and BLAS calls on arrays over the
 * caller's host memory, on the backend under test (KILN_TEST_TARGET). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas_ref.h"

static const hval ONE = {1, 0}, ZERO = {0, 0};

/* A 1-d view of n elements: plain, every third, or reversed. */
static kiln_array *vec_view(kiln_context *ctx, test_rng *rng, kiln_dtype t, int64_t n, int kind,
                            kiln_array **base) {
    int64_t len[1] = {3 * n + 1};
    *base = bt_random(ctx, rng, t, 1, len);
    kiln_array *v = NULL;
    if (kind == 0) TEST_OK(kiln_array_slice(*base, 0, 1, 1 + n, 1, &v));
    if (kind == 1) TEST_OK(kiln_array_slice(*base, 0, 0, 3 * n, 3, &v));
    if (kind == 2) TEST_OK(kiln_array_slice(*base, 0, n - 1, -3 * n - 2, -1, &v));
    return v;
}

static void test_level1(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    kiln_dtype types[] = {KILN_FLOAT32, KILN_FLOAT64, KILN_COMPLEX64, KILN_COMPLEX128};
    for (int ti = 0; ti < 4; ti++)
        for (int kx = 0; kx < 3; kx++)
            for (int ky = 0; ky < 3; ky++) {
                kiln_dtype t = types[ti];
                int64_t n = 57;
                kiln_array *bx, *by;
                kiln_array *x = vec_view(ctx, &rng, t, n, kx, &bx), *y = vec_view(ctx, &rng, t, n, ky, &by);
                void *hx = test_read_array(x), *hy = test_read_array(y);
                hval dot = {0, 0}, vdot = {0, 0};
                long double size = 0, sq = 0;
                for (int64_t i = 0; i < n; i++) {
                    hval a = bt_get(t, hx, (size_t)i), b = bt_get(t, hy, (size_t)i);
                    dot.re += a.re * b.re - a.im * b.im;
                    dot.im += a.re * b.im + a.im * b.re;
                    vdot.re += a.re * b.re + a.im * b.im;
                    vdot.im += a.re * b.im - a.im * b.re;
                    size += sqrtl((a.re * a.re + a.im * a.im) * (b.re * b.re + b.im * b.im));
                    sq += a.re * a.re + a.im * a.im;
                }
                kiln_blas_scalar r;
                TEST_OK(kiln_dot(NULL, x, y, &r));
                bt_expect_close("dot", t, n, (hval){r.re, r.im}, dot, size);
                TEST_OK(kiln_vdot(NULL, x, y, &r));
                bt_expect_close("vdot", t, n, (hval){r.re, r.im}, vdot, size);
                double nrm = 0;
                TEST_OK(kiln_nrm2(NULL, x, &nrm));
                bt_expect_close("nrm2", t, n, (hval){nrm, 0}, (hval){sqrtl(sq), 0}, sqrtl(sq));
                /* y += alpha x, then x *= beta */
                kiln_blas_scalar alpha = {0.5, t >= KILN_COMPLEX64 ? 1.5 : 0},
                                 beta = {-2, t >= KILN_COMPLEX64 ? 0.5 : 0};
                TEST_OK(kiln_axpy(NULL, alpha, x, y));
                TEST_OK(kiln_scal(NULL, beta, x));
                void *gx = test_read_array(x), *gy = test_read_array(y);
                for (int64_t i = 0; i < n; i++) {
                    hval a = bt_get(t, hx, (size_t)i), b = bt_get(t, hy, (size_t)i);
                    hval ey = {b.re + alpha.re * a.re - alpha.im * a.im,
                               b.im + alpha.re * a.im + alpha.im * a.re};
                    hval ex = {beta.re * a.re - beta.im * a.im, beta.re * a.im + beta.im * a.re};
                    bt_expect_close("axpy", t, 1, bt_get(t, gy, (size_t)i), ey, 4);
                    bt_expect_close("scal", t, 1, bt_get(t, gx, (size_t)i), ex, 4);
                }
                /* the elements outside the views are untouched: the base's
                   first element is outside every view except the reversed one's */
                free(hx);
                free(hy);
                free(gx);
                free(gy);
                kiln_array_release(x);
                kiln_array_release(y);
                kiln_array_release(bx);
                kiln_array_release(by);
            }
}

static void test_gemv(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    kiln_dtype types[] = {KILN_FLOAT32, KILN_FLOAT64, KILN_COMPLEX64, KILN_COMPLEX128};
    for (int ti = 0; ti < 4; ti++)
        for (int v = 0; v < 6; v++) { /* op N / T, a plain / transposed view; 4, 5: op C */
            kiln_dtype t = types[ti];
            kiln_blas_op op = v >= 4 ? KILN_BLAS_C : v & 1 ? KILN_BLAS_T : KILN_BLAS_N;
            int conj = op == KILN_BLAS_C && (t == KILN_COMPLEX64 || t == KILN_COMPLEX128);
            int64_t rows = 23, cols = 31; /* of op(a) */
            int64_t as[2] = {op ? cols : rows, op ? rows : cols};
            int64_t ast[2] = {as[1], as[0]};
            kiln_array *a = NULL, *base = NULL;
            if ((v & 2) || v == 5) {
                base = bt_random(ctx, &rng, t, 2, ast);
                TEST_OK(kiln_array_transpose(base, NULL, &a));
            } else {
                a = bt_random(ctx, &rng, t, 2, as);
            }
            kiln_array *bx, *by;
            kiln_array *x = vec_view(ctx, &rng, t, cols, v == 3 ? 2 : 1, &bx),
                       *y = vec_view(ctx, &rng, t, rows, v % 3, &by);
            if (v == 3) { /* reversed y: re-made to exercise the written-back copy */
                kiln_array_release(y);
                kiln_array_release(by);
                y = vec_view(ctx, &rng, t, rows, 2, &by);
            }
            void *ha = test_read_array(a), *hx = test_read_array(x), *hy = test_read_array(y);
            kiln_blas_scalar alpha = {1.5, t >= KILN_COMPLEX64 ? -0.5 : 0},
                             beta = {0.5, t >= KILN_COMPLEX64 ? 0.75 : 0};
            if (v == 4 && t == KILN_COMPLEX128) beta.re = beta.im = 0; /* y not read: not conjugated first */
            TEST_OK(kiln_profiler_start(ctx));
            TEST_OK(kiln_profiler_reset(ctx));
            TEST_OK(kiln_gemv(NULL, op, alpha, a, x, beta, y));
            char *text = NULL;
            TEST_OK(kiln_profiler_summary(ctx, &text));
            TEST_OK(kiln_profiler_stop(ctx));
            /* a^H never copies the matrix: a transposed view goes to gemv as op C; a
             * row-major a as conj(y) = conj(alpha) a^T conj(x) + conj(beta) conj(y), with x
             * conjugated into a copy and y in place */
            if (!test_contains(text, "blas gemv") || test_contains(text, "blas gemm") ||
                (v == 4 && test_contains(text, "layout copy")))
                fail_msg("gemv op %d, view %d:\n%s", op, v, text);
            if (conj && test_contains(text, "blas conjugate") != (v == 4))
                fail_msg("gemv op C, view %d: expected %s conjugated vectors:\n%s", v, v == 4 ? "" : "no",
                         text);
            kiln_free(text);
            void *gy = test_read_array(y);
            for (int64_t i = 0; i < rows; i++) {
                hval sum = {0, 0};
                long double size = 0;
                for (int64_t j = 0; j < cols; j++) {
                    hval e = bt_get(t, ha, (size_t)(op ? j * rows + i : i * cols + j)),
                         xv = bt_get(t, hx, (size_t)j);
                    if (conj) e.im = -e.im;
                    sum.re += e.re * xv.re - e.im * xv.im;
                    sum.im += e.re * xv.im + e.im * xv.re;
                    size += sqrtl((e.re * e.re + e.im * e.im) * (xv.re * xv.re + xv.im * xv.im));
                }
                hval y0 = bt_get(t, hy, (size_t)i);
                hval ref = {alpha.re * sum.re - alpha.im * sum.im + beta.re * y0.re - beta.im * y0.im,
                            alpha.re * sum.im + alpha.im * sum.re + beta.re * y0.im + beta.im * y0.re};
                bt_expect_close("gemv", t, cols, bt_get(t, gy, (size_t)i), ref, 2 * size + 2);
            }
            free(ha);
            free(hx);
            free(hy);
            free(gy);
            kiln_array *arrs[] = {a, base, x, y, bx, by};
            for (size_t i = 0; i < 6; i++) kiln_array_release(arrs[i]);
        }
}

/* Arrays over the caller's host memory: on CUDA staged through the device
 * once (and the output assigned back), on the CPU used in place. */
static void test_host_arrays(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    enum { M = 9, K = 11, N = 7 };
    double ha[M * K], hb[K * N], hc[M * N], hx[K], hy[M];
    test_fill_f64(&rng, ha, M * K, -1, 1);
    test_fill_f64(&rng, hb, K * N, -1, 1);
    test_fill_f64(&rng, hx, K, -1, 1);
    test_fill_f64(&rng, hy, M, -1, 1);
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N}, sx[1] = {K}, sy[1] = {M};
    kiln_array *a = NULL, *b = NULL, *c = NULL, *x = NULL, *y = NULL;
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 2, sa, NULL, ha, &a));
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 2, sb, NULL, hb, &b));
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 2, sc, NULL, hc, &c));
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, sx, NULL, hx, &x));
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, sy, NULL, hy, &y));
    TEST_OK(kiln_matmul(a, b, &c));
    TEST_OK(kiln_synchronize(ctx));
    bt_check_product("host arrays", a, b, c, NULL, ONE, ZERO);
    double y0[M];
    memcpy(y0, hy, sizeof y0);
    TEST_OK(kiln_gemv(NULL, KILN_BLAS_N, KILN_BLAS_SCALAR(1, 0), a, x, KILN_BLAS_SCALAR(1, 0), y));
    TEST_OK(kiln_synchronize(ctx));
    for (int i = 0; i < M; i++) {
        long double ref = y0[i], size = fabs(y0[i]);
        for (int j = 0; j < K; j++) {
            ref += (long double)ha[i * K + j] * hx[j];
            size += fabsl((long double)ha[i * K + j] * hx[j]);
        }
        bt_expect_close("gemv on host arrays", KILN_FLOAT64, K, (hval){hy[i], 0}, (hval){ref, 0}, size);
    }
    kiln_array *arrs[] = {a, b, c, x, y};
    for (size_t i = 0; i < 5; i++) kiln_array_release(arrs[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level1),
        cmocka_unit_test(test_gemv),
        cmocka_unit_test(test_host_arrays),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
