/* test_fft_convolve.c: kiln_fft_convolve against a direct convolution in
 * long double on the host: 1-, 2- and 3-d, every mode, real and complex
 * inputs in any mix, a subset of axes with a broadcast batch axis, a
 * caller's out array, and SciPy's errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

typedef struct host {
    int nd;
    int64_t shape[3];
    double *re, *im; /* im NULL: real */
} host;

static size_t count(const host *h) {
    size_t n = 1;
    for (int d = 0; d < h->nd; d++) n *= (size_t)h->shape[d];
    return n;
}

static kiln_array *upload(kiln_context *ctx, test_rng *r, kiln_dtype t, int nd, const int64_t *shape,
                          host *h) {
    h->nd = nd;
    memcpy(h->shape, shape, sizeof(int64_t) * (size_t)nd);
    size_t n = count(h), item = kiln_dtype_size(t);
    int cx = t == KILN_COMPLEX64 || t == KILN_COMPLEX128, dbl = t == KILN_FLOAT64 || t == KILN_COMPLEX128;
    h->re = calloc(n, sizeof(double));
    h->im = cx ? calloc(n, sizeof(double)) : NULL;
    unsigned char *buf = malloc(n * item);
    for (size_t i = 0; i < n; i++) {
        double re = test_uniform(r, -1, 1), im = cx ? test_uniform(r, -1, 1) : 0;
        if (!dbl) re = (float)re, im = (float)im;
        h->re[i] = re;
        if (cx) h->im[i] = im;
        if (dbl && cx)
            ((double *)buf)[2 * i] = re, ((double *)buf)[2 * i + 1] = im;
        else if (dbl)
            ((double *)buf)[i] = re;
        else if (cx)
            ((float *)buf)[2 * i] = (float)re, ((float *)buf)[2 * i + 1] = (float)im;
        else
            ((float *)buf)[i] = (float)re;
    }
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, nd, shape, buf, n * item, &a));
    free(buf);
    return a;
}

static void host_free(host *h) { free(h->re), free(h->im); }

/* Index of coordinate c (per dim) in h, broadcasting dims of length 1. */
static size_t at(const host *h, const int64_t *c) {
    size_t i = 0;
    for (int d = 0; d < h->nd; d++) i = i * (size_t)h->shape[d] + (size_t)(h->shape[d] == 1 ? 0 : c[d]);
    return i;
}

/* Result element at coordinate o (in the mode's output), directly. */
static void direct(const host *a, const host *b, const int *conv, const int64_t *start, const int64_t *o,
                   long double *re, long double *im, long double *mag) {
    int nd = a->nd;
    int64_t full[3], ia[3], ib[3];
    for (int d = 0; d < nd; d++) full[d] = conv[d] ? o[d] + start[d] : o[d];
    *re = *im = *mag = 0;
    /* over b's coordinates along the convolved axes */
    int64_t jb[3] = {0, 0, 0};
    for (;;) {
        int ok = 1;
        for (int d = 0; d < nd; d++) {
            if (conv[d]) {
                ib[d] = jb[d];
                ia[d] = full[d] - jb[d];
                ok &= ia[d] >= 0 && ia[d] < a->shape[d];
            } else {
                ia[d] = ib[d] = full[d];
            }
        }
        if (ok) {
            size_t x = at(a, ia), y = at(b, ib);
            long double ar = a->re[x], ai = a->im ? a->im[x] : 0, br = b->re[y], bi = b->im ? b->im[y] : 0;
            *re += ar * br - ai * bi, *im += ar * bi + ai * br;
            *mag += (fabsl(ar) + fabsl(ai)) * (fabsl(br) + fabsl(bi));
        }
        int d = nd - 1;
        for (; d >= 0; d--) {
            if (!conv[d]) continue;
            if (++jb[d] < b->shape[d]) break;
            jb[d] = 0;
        }
        if (d < 0) break;
    }
}

static void check_case(kiln_context *ctx, test_rng *r, kiln_dtype ta, kiln_dtype tb, int nd,
                       const int64_t *sa, const int64_t *sb, kiln_convolve_mode mode, const int *axes,
                       int naxes) {
    host ha, hb;
    kiln_array *a = upload(ctx, r, ta, nd, sa, &ha), *b = upload(ctx, r, tb, nd, sb, &hb), *c = NULL;
    TEST_OK(kiln_fft_convolve(a, b, mode, axes, naxes, &c));
    int conv[3] = {0, 0, 0};
    for (int i = 0; i < (axes ? naxes : nd); i++) conv[axes ? (axes[i] + nd) % nd : i] = 1;
    int64_t start[3] = {0, 0, 0}, len[3];
    for (int d = 0; d < nd; d++) {
        if (!conv[d]) {
            len[d] = sa[d] > sb[d] ? sa[d] : sb[d];
            continue;
        }
        int64_t full = sa[d] + sb[d] - 1;
        len[d] = mode == KILN_CONVOLVE_FULL   ? full
                 : mode == KILN_CONVOLVE_SAME ? sa[d]
                                              : (sa[d] > sb[d] ? sa[d] - sb[d] : sb[d] - sa[d]) + 1;
        start[d] = (full - len[d]) / 2;
        assert_int_equal(kiln_array_shape(c)[d], len[d]);
    }
    kiln_dtype tc = kiln_array_dtype(c);
    int cx = tc == KILN_COMPLEX64 || tc == KILN_COMPLEX128, dbl = tc == KILN_FLOAT64 || tc == KILN_COMPLEX128;
    int want_cx =
        ta == KILN_COMPLEX64 || ta == KILN_COMPLEX128 || tb == KILN_COMPLEX64 || tb == KILN_COMPLEX128;
    int want_dbl = ta == KILN_FLOAT64 || ta == KILN_COMPLEX128 || tb == KILN_FLOAT64 || tb == KILN_COMPLEX128;
    assert_int_equal(cx, want_cx);
    assert_int_equal(dbl, want_dbl);
    void *hc = test_read_array(c);
    double eps = dbl ? 1e-15 : 1e-6;
    int64_t o[3] = {0, 0, 0};
    for (size_t i = 0; i < (size_t)kiln_array_size(c); i++) {
        size_t rest = i;
        for (int d = nd - 1; d >= 0; d--) o[d] = (int64_t)(rest % (size_t)len[d]), rest /= (size_t)len[d];
        long double re, im, mag;
        direct(&ha, &hb, conv, start, o, &re, &im, &mag);
        double gr = cx ? (dbl ? ((double *)hc)[2 * i] : ((float *)hc)[2 * i])
                       : (dbl ? ((double *)hc)[i] : ((float *)hc)[i]);
        double gi = cx ? (dbl ? ((double *)hc)[2 * i + 1] : ((float *)hc)[2 * i + 1]) : 0;
        double tol = 50 * eps * (double)(mag + 1);
        if (fabsl(gr - re) > tol || fabsl(gi - im) > tol)
            fail_msg("%s * %s, %d-d, mode %d: element %zu = (%g, %g), direct (%Lg, %Lg), tol %g",
                     kiln_dtype_name(ta), kiln_dtype_name(tb), nd, (int)mode, i, gr, gi, re, im, tol);
    }
    free(hc);
    host_free(&ha), host_free(&hb);
    kiln_array_release(a), kiln_array_release(b), kiln_array_release(c);
}

static void test_modes_and_dims(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    int64_t a1[1] = {37}, b1[1] = {8}, a2[2] = {19, 23}, b2[2] = {5, 4}, a3[3] = {6, 7, 9}, b3[3] = {3, 2, 4};
    for (int mode = 0; mode <= 2; mode++) {
        check_case(ctx, &r, KILN_FLOAT64, KILN_FLOAT64, 1, a1, b1, (kiln_convolve_mode)mode, NULL, 0);
        check_case(ctx, &r, KILN_FLOAT32, KILN_FLOAT32, 2, a2, b2, (kiln_convolve_mode)mode, NULL, 0);
        check_case(ctx, &r, KILN_COMPLEX128, KILN_FLOAT64, 3, a3, b3, (kiln_convolve_mode)mode, NULL, 0);
    }
    /* b larger than a: full and same (a's size), valid (b - a + 1) */
    for (int mode = 0; mode <= 2; mode++)
        check_case(ctx, &r, KILN_COMPLEX64, KILN_COMPLEX64, 2, b2, a2, (kiln_convolve_mode)mode, NULL, 0);
    check_case(ctx, &r, KILN_FLOAT32, KILN_COMPLEX64, 1, a1, b1, KILN_CONVOLVE_SAME, NULL, 0);
    /* full lengths already fast (8 = 5 + 4 - 1 = 6 + 3 - 1): the inverse's
     * output is the result, nothing is cropped */
    int64_t w2[2] = {5, 6}, v2[2] = {4, 3};
    check_case(ctx, &r, KILN_COMPLEX64, KILN_COMPLEX64, 2, w2, v2, KILN_CONVOLVE_FULL, NULL, 0);
    check_case(ctx, &r, KILN_FLOAT64, KILN_FLOAT64, 2, w2, v2, KILN_CONVOLVE_FULL, NULL, 0);
}

static void test_axes_and_broadcast(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    /* convolve along the last axis only; axis 0 is a batch that b broadcasts */
    int64_t sa[2] = {4, 30}, sb[2] = {1, 7};
    int last[1] = {-1};
    check_case(ctx, &r, KILN_FLOAT64, KILN_FLOAT64, 2, sa, sb, KILN_CONVOLVE_FULL, last, 1);
    int64_t ta[3] = {5, 3, 11}, tb[3] = {5, 1, 6};
    int outer[2] = {0, 2};
    check_case(ctx, &r, KILN_COMPLEX128, KILN_COMPLEX128, 3, ta, tb, KILN_CONVOLVE_SAME, outer, 2);
}

static void test_out_and_errors(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    host ha, hb, hc;
    int64_t sa[2] = {9, 9}, sb[2] = {3, 3}, sc[2] = {4, 2};
    kiln_array *a = upload(ctx, &r, KILN_FLOAT32, 2, sa, &ha), *b = upload(ctx, &r, KILN_FLOAT32, 2, sb, &hb);
    kiln_array *odd = upload(ctx, &r, KILN_FLOAT32, 2, sc, &hc), *out = NULL, *wrong = NULL, *c = NULL;
    int64_t so[2] = {9, 9};
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, so, &out));
    kiln_array *given = out;
    TEST_OK(kiln_fft_convolve(a, b, KILN_CONVOLVE_SAME, NULL, 0, &out));
    assert_ptr_equal(out, given);
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, so, &wrong));
    TEST_FAILS_WITH(kiln_fft_convolve(a, b, KILN_CONVOLVE_SAME, NULL, 0, &wrong), KILN_ERR_SHAPE,
                    "the result is float32");
    /* valid: 3 x 3 against 4 x 2 is larger along one axis, smaller along the other */
    TEST_FAILS_WITH(kiln_fft_convolve(b, odd, KILN_CONVOLVE_VALID, NULL, 0, &c), KILN_ERR_SHAPE,
                    "at least as large");
    int64_t s1[1] = {9};
    kiln_array *v = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, s1, &v));
    TEST_FAILS_WITH(kiln_fft_convolve(a, v, KILN_CONVOLVE_FULL, NULL, 0, &c), KILN_ERR_SHAPE, "same number");
    int twice[2] = {0, 0};
    TEST_FAILS_WITH(kiln_fft_convolve(a, b, KILN_CONVOLVE_FULL, twice, 2, &c), KILN_ERR_INVALID_ARGUMENT,
                    "twice");
    kiln_array *ints = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 2, sb, &ints));
    TEST_FAILS_WITH(kiln_fft_convolve(a, ints, KILN_CONVOLVE_FULL, NULL, 0, &c), KILN_ERR_DTYPE, "int32");
    TEST_FAILS_WITH(kiln_fft_convolve(a, b, (kiln_convolve_mode)7, NULL, 0, &c), KILN_ERR_INVALID_ARGUMENT,
                    "mode 7");
    assert_null(c);
    kiln_array *all[6] = {a, b, odd, out, wrong, v};
    for (int i = 0; i < 6; i++) kiln_array_release(all[i]);
    kiln_array_release(ints);
    host_free(&ha), host_free(&hb), host_free(&hc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_and_dims),
        cmocka_unit_test(test_axes_and_broadcast),
        cmocka_unit_test(test_out_and_errors),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
