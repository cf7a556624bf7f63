/* test_ufunc.c: kiln_vectorize / kiln_call on the backend under test
 * (KILN_TEST_TARGET): broadcasting against a reference, every dtype, views,
 * scalars, in place, several outputs, dispatch, targets agreeing, host
 * arrays, and every error the issue lists. */
#define KILN_EXPERIMENTAL /* kiln_ufunc_source (include/kiln.h) */
#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/copy_pool.h"
#include "core/dtype.h"
#include "test_support.h"
#include "ufunc/plan.h"
#include "ufunc/staging.h" /* uf_staged_call: the pipeline, driven directly on the CPU */

static kiln_context *ctx;

/* Elements a CUDA mixed kernel serves in these tests before calls compile
 * their exact kernels (main; the default is 2^26): a ufunc's first call or
 * two run the mixed kernel, later ones the all-array and 16-byte kernels,
 * so both kinds run on the GPU. The exact kernels are built in the call
 * that reaches the limit (KILN_TIER_UP=0, main), so that the tests can
 * count modules call by call; mixed_kernel_tiers_up_in_background checks
 * the default, a build in the background. */
#define TEST_MIXED_LIMIT "5000"

/* kiln_vectorize with KILN_UFUNC_MIXED_LIMIT set to limit (NULL: unset,
 * the library's default) while it reads it, then back to TEST_MIXED_LIMIT. */
static kiln_status vectorize_with_limit(const char *limit, const char *name, const char *sigs,
                                        const char *params, const char *body, const char *preamble,
                                        kiln_ufunc **out) {
    if (limit)
        setenv("KILN_UFUNC_MIXED_LIMIT", limit, 1);
    else
        unsetenv("KILN_UFUNC_MIXED_LIMIT");
    kiln_status s = kiln_vectorize(ctx, name, sigs, params, body, preamble, out);
    setenv("KILN_UFUNC_MIXED_LIMIT", TEST_MIXED_LIMIT, 1);
    return s;
}
static kiln_ufunc *axpb; /* f8(f8,f8,f8): a * 2 + b - c */

static int setup(void **state) {
    (void)state;
    ctx = test_open();
    kiln_status s =
        kiln_vectorize(ctx, "axpb", "f8(f8,f8,f8)", "a, b, c", "return a * 2 + b - c;", NULL, &axpb);
    if (s != KILN_OK) {
        fprintf(stderr, "setup: %s\n", kiln_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    kiln_ufunc_release(axpb);
    kiln_close(ctx);
    return 0;
}

static kiln_array *from_host_f64(int nd, const int64_t *shape, const double *data) {
    kiln_array *a = NULL;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, nd, shape, data, (size_t)n * sizeof(double), &a));
    return a;
}

/* Offset (elements) of the input element feeding output multi-index idx. */
static int64_t ref_offset(int nd, const int64_t *shape, int and, const int64_t *ashape, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < and; d++) {
        int od = d + (nd - and);
        off = off * ashape[d] + (ashape[d] == 1 ? 0 : idx[od]);
        (void)shape;
    }
    return off;
}

typedef struct bcase {
    int nd[3];
    int64_t s[3][4];
    int rnd;
    int64_t r[4];
} bcase;

static void broadcasting_against_reference(void **state) {
    (void)state;
    static const bcase cases[] = {
        {{2, 1, 0}, {{3, 4}, {4}, {0}}, 2, {3, 4}},
        {{3, 3, 2}, {{2, 1, 3}, {1, 5, 1}, {5, 3}}, 3, {2, 5, 3}},
        {{0, 0, 0}, {{0}, {0}, {0}}, 0, {0}},          /* all 0-d */
        {{2, 2, 1}, {{0, 3}, {1, 3}, {3}}, 2, {0, 3}}, /* size-0 dim */
        {{1, 2, 0}, {{1}, {1, 1}, {0}}, 2, {1, 1}},    /* size-1 only */
        {{4, 1, 2}, {{2, 1, 3, 1}, {4}, {3, 1}}, 4, {2, 1, 3, 4}},
        {{1, 1, 1}, {{7}, {7}, {1}}, 1, {7}},
    };
    test_rng rng = test_rng_for(__func__);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const bcase *k = &cases[c];
        kiln_array *in[3];
        double *h[3];
        for (int i = 0; i < 3; i++) {
            int64_t n = 1;
            for (int d = 0; d < k->nd[i]; d++) n *= k->s[i][d];
            h[i] = malloc((size_t)(n ? n : 1) * sizeof(double));
            test_fill_f64(&rng, h[i], (size_t)n, -10, 10);
            in[i] = from_host_f64(k->nd[i], k->s[i], h[i]);
        }
        kiln_array *out = NULL;
        TEST_OK(kiln_call(axpb, KILN_ARGS(kiln_arr(in[0]), kiln_arr(in[1]), kiln_arr(in[2])), &out));
        assert_int_equal(kiln_array_ndim(out), k->rnd);
        assert_memory_equal(kiln_array_shape(out), k->r, sizeof(int64_t) * (size_t)k->rnd);
        double *got = test_read_array(out);
        int64_t n = kiln_array_size(out), idx[4];
        for (int64_t e = 0; e < n; e++) {
            int64_t rest = e;
            for (int d = k->rnd - 1; d >= 0; d--) {
                idx[d] = rest % k->r[d];
                rest /= k->r[d];
            }
            double x[3];
            for (int i = 0; i < 3; i++) x[i] = h[i][ref_offset(k->rnd, k->r, k->nd[i], k->s[i], idx)];
            double want = x[0] * 2 + x[1] - x[2];
            if (fabs(got[e] - want) > 1e-12 * (1 + fabs(want)))
                fail_msg("case %zu element %lld: got %.17g want %.17g", c, (long long)e, got[e], want);
        }
        free(got);
        kiln_array_release(out);
        for (int i = 0; i < 3; i++) {
            kiln_array_release(in[i]);
            free(h[i]);
        }
    }
}

static void views_and_scalars(void **state) {
    (void)state;
    /* a: (6, 8) matrix; use its transpose (8, 6), a reversed slice, a
     * strided column view, with scalars mixed in. */
    int64_t shape[2] = {6, 8};
    double h[48];
    for (int i = 0; i < 48; i++) h[i] = i * 0.5 - 3;
    kiln_array *a = from_host_f64(2, shape, h), *t = NULL, *r = NULL, *s = NULL, *out = NULL;
    TEST_OK(kiln_array_transpose(a, NULL, &t));      /* (8, 6) */
    TEST_OK(kiln_array_slice(a, 1, -1, -9, -2, &r)); /* (6, 4): cols 7,5,3,1 */
    TEST_OK(kiln_array_slice(t, 0, 0, 8, 2, &s));    /* (4, 6): rows 0,2,4,6 of t */
    /* out[i][j] = t[2i][j]*2 + 1.5 - r[j][i] -> shapes (4,6), scalar, (4,6)^T? use transpose of r */
    kiln_array *rt = NULL;
    TEST_OK(kiln_array_transpose(r, NULL, &rt)); /* (4, 6) */
    TEST_OK(kiln_call(axpb, KILN_ARGS(kiln_arr(s), kiln_f32(1.5f), kiln_arr(rt)), &out));
    double *got = test_read_array(out);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) {
            double tv = h[j * 8 + 2 * i];       /* t[2i][j] = a[j][2i] */
            double rv = h[j * 8 + (7 - 2 * i)]; /* rt[i][j] = r[j][i] = a[j][7-2i] */
            assert_true(fabs(got[i * 6 + j] - (tv * 2 + 1.5 - rv)) < 1e-12);
        }
    free(got);
    kiln_array *arrs[] = {a, t, r, s, rt, out};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
}

static void in_place_and_supplied_output(void **state) {
    (void)state;
    int64_t n = 1000;
    double *h = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) h[i] = i;
    kiln_array *a = from_host_f64(1, &n, h);
    kiln_array *outs[1] = {a};
    TEST_OK(kiln_call(axpb, KILN_ARGS(kiln_arr(a), kiln_f64(1), kiln_f64(0.5)), outs)); /* a = 2a + 0.5 */
    assert_ptr_equal(outs[0], a);
    double *got = test_read_array(a);
    for (int i = 0; i < n; i++) assert_true(got[i] == i * 2.0 + 0.5);
    free(got);
    /* a float64 result into a complex128 output (safe cast) */
    kiln_array *c = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX128, 1, &n, &c));
    kiln_array *co[1] = {c};
    TEST_OK(kiln_call(axpb, KILN_ARGS(kiln_f64(1), kiln_arr(a), kiln_f64(0)), co));
    double *cz = malloc(sizeof(double) * 2 * (size_t)n);
    TEST_OK(kiln_array_to_host(c, cz, sizeof(double) * 2 * (size_t)n));
    for (int i = 0; i < n; i++) assert_true(cz[2 * i] == 2 + (i * 2.0 + 0.5) && cz[2 * i + 1] == 0);
    free(cz);
    free(h);
    kiln_array_release(a);
    kiln_array_release(c);
}

static void several_outputs(void **state) {
    (void)state;
    kiln_ufunc *sc = NULL;
    TEST_OK(kiln_vectorize(ctx, "sincos2", "(f8,f8)(f8); (f4,f4)(f4)", "x -> s, c", "s = sin(x); c = cos(x);",
                           NULL, &sc));
    assert_int_equal(kiln_ufunc_nout(sc), 2);
    int64_t n = 4097;
    test_rng rng = test_rng_for(__func__);
    float *h = malloc(sizeof(float) * (size_t)n), *s = malloc(sizeof(float) * (size_t)n),
          *c = malloc(sizeof(float) * (size_t)n);
    test_fill_f32(&rng, h, (size_t)n, -50, 50);
    kiln_array *x = NULL, *outs[2] = {NULL, NULL};
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, h, sizeof(float) * (size_t)n, &x));
    TEST_OK(kiln_call(sc, KILN_ARGS(kiln_arr(x)), outs));
    assert_int_equal(kiln_array_dtype(outs[0]), KILN_FLOAT32);
    TEST_OK(kiln_array_to_host(outs[0], s, sizeof(float) * (size_t)n));
    TEST_OK(kiln_array_to_host(outs[1], c, sizeof(float) * (size_t)n));
    for (int i = 0; i < n; i++) {
        /* vector math is allowed a few ULP */
        assert_true(fabs(s[i] - sin((double)h[i])) < 4e-6);
        assert_true(fabs(c[i] - cos((double)h[i])) < 4e-6);
    }
    kiln_array_release(outs[0]);
    kiln_array_release(outs[1]);
    kiln_array_release(x);
    kiln_ufunc_release(sc);
    free(h);
    free(s);
    free(c);
}

/* One ufunc with a signature per dtype: x + y in that dtype. */
static void every_dtype(void **state) {
    (void)state;
    kiln_ufunc *add = NULL;
    TEST_OK(kiln_vectorize(ctx, "add_all",
                           "b1(b1,b1); i1(i1,i1); i2(i2,i2); i4(i4,i4); i8(i8,i8); u1(u1,u1); u2(u2,u2); "
                           "u4(u4,u4); u8(u8,u8); f2(f2,f2); f4(f4,f4); f8(f8,f8); c8(c8,c8); c16(c16,c16); "
                           "bf16(bf16,bf16)",
                           "x, y", "return x + y;", NULL, &add));
    int64_t n = 37;
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
        kiln_dtype dt = (kiln_dtype)t;
        size_t item = kiln_dtype_size(dt);
        unsigned char *a = calloc((size_t)n, item), *b = calloc((size_t)n, item),
                      *r = calloc((size_t)n, item);
        for (int i = 0; i < n; i++) {
            int va = i % 7, vb = (i * 3) % 5;
            switch (dt) {
            case KILN_BOOL:
                a[i] = (unsigned char)(va & 1);
                b[i] = (unsigned char)(vb & 1);
                break;
            case KILN_INT8:
            case KILN_UINT8:
                a[i] = (unsigned char)va;
                b[i] = (unsigned char)vb;
                break;
            case KILN_INT16:
            case KILN_UINT16:
                ((uint16_t *)a)[i] = (uint16_t)va;
                ((uint16_t *)b)[i] = (uint16_t)vb;
                break;
            case KILN_INT32:
            case KILN_UINT32:
                ((uint32_t *)a)[i] = (uint32_t)va;
                ((uint32_t *)b)[i] = (uint32_t)vb;
                break;
            case KILN_INT64:
            case KILN_UINT64:
                ((uint64_t *)a)[i] = (uint64_t)va;
                ((uint64_t *)b)[i] = (uint64_t)vb;
                break;
            case KILN_FLOAT16: { /* small integers are exact in half: 0x3c00 = 1.0 */
                static const uint16_t halves[8] = {0x0000, 0x3c00, 0x4000, 0x4200,
                                                   0x4400, 0x4500, 0x4600, 0x4700};
                ((uint16_t *)a)[i] = halves[va];
                ((uint16_t *)b)[i] = halves[vb];
                break;
            }
            case KILN_FLOAT32:
                ((float *)a)[i] = (float)va;
                ((float *)b)[i] = (float)vb;
                break;
            case KILN_BFLOAT16: /* float32's upper half: small integers are exact */
                ((uint16_t *)a)[i] = kiln_float_to_bfloat16((float)va);
                ((uint16_t *)b)[i] = kiln_float_to_bfloat16((float)vb);
                break;
            case KILN_FLOAT64:
                ((double *)a)[i] = va;
                ((double *)b)[i] = vb;
                break;
            case KILN_COMPLEX64:
                ((float *)a)[2 * i] = (float)va;
                ((float *)a)[2 * i + 1] = 1;
                ((float *)b)[2 * i] = (float)vb;
                break;
            case KILN_COMPLEX128:
                ((double *)a)[2 * i] = va;
                ((double *)a)[2 * i + 1] = -1;
                ((double *)b)[2 * i] = vb;
                break;
            default: break;
            }
        }
        kiln_array *A = NULL, *B = NULL, *R = NULL;
        TEST_OK(kiln_array_from_host(ctx, dt, 1, &n, a, item * (size_t)n, &A));
        TEST_OK(kiln_array_from_host(ctx, dt, 1, &n, b, item * (size_t)n, &B));
        TEST_OK(kiln_call(add, KILN_ARGS(kiln_arr(A), kiln_arr(B)), &R));
        assert_int_equal(kiln_array_dtype(R), dt);
        TEST_OK(kiln_array_to_host(R, r, item * (size_t)n));
        for (int i = 0; i < n; i++) {
            int va = i % 7, vb = (i * 3) % 5;
            double want = va + vb, got;
            switch (dt) {
            case KILN_BOOL:
                want = ((va & 1) | (vb & 1));
                got = r[i];
                break;
            case KILN_INT8:
            case KILN_UINT8: got = r[i]; break;
            case KILN_INT16:
            case KILN_UINT16: got = ((uint16_t *)r)[i]; break;
            case KILN_FLOAT16: {
                static const uint16_t halves[13] = {0x0000, 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600,
                                                    0x4700, 0x4800, 0x4880, 0x4900, 0x4980, 0x4a00};
                got = ((uint16_t *)r)[i] == halves[va + vb] ? want : -1;
                break;
            }
            case KILN_INT32:
            case KILN_UINT32: got = ((uint32_t *)r)[i]; break;
            case KILN_INT64:
            case KILN_UINT64: got = (double)((uint64_t *)r)[i]; break;
            case KILN_FLOAT32: got = ((float *)r)[i]; break;
            case KILN_FLOAT64: got = ((double *)r)[i]; break;
            case KILN_BFLOAT16: got = kiln_bfloat16_to_float(((uint16_t *)r)[i]); break;
            case KILN_COMPLEX64:
                got = ((float *)r)[2 * i];
                assert_true(((float *)r)[2 * i + 1] == 1);
                break;
            case KILN_COMPLEX128:
                got = ((double *)r)[2 * i];
                assert_true(((double *)r)[2 * i + 1] == -1);
                break;
            default: got = -1;
            }
            if (got != want) fail_msg("%s element %d: got %g want %g", kiln_dtype_name(dt), i, got, want);
        }
        kiln_array_release(A);
        kiln_array_release(B);
        kiln_array_release(R);
        free(a);
        free(b);
        free(r);
    }
    kiln_ufunc_release(add);
}

static void dispatch_and_casting(void **state) {
    (void)state;
    kiln_ufunc *f = NULL;
    TEST_OK(kiln_vectorize(ctx, "mul2", "f4(f4,f4); f8(f8,f8)", "a, b", "return a * b;", NULL, &f));
    int64_t n = 5;
    kiln_array *i4 = NULL, *i2 = NULL, *f4 = NULL, *c8 = NULL, *r = NULL;
    TEST_OK(kiln_array_arange(ctx, KILN_INT32, 0, 5, 1, &i4));
    TEST_OK(kiln_array_arange(ctx, KILN_INT16, 0, 5, 1, &i2));
    TEST_OK(kiln_array_arange(ctx, KILN_FLOAT32, 0, 5, 1, &f4));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 1, &n, &c8));
    /* int32 does not fit float32 safely: float64 loop */
    TEST_OK(kiln_call(f, KILN_ARGS(kiln_arr(i4), kiln_arr(i4)), &r));
    assert_int_equal(kiln_array_dtype(r), KILN_FLOAT64);
    double d[5];
    TEST_OK(kiln_array_to_host(r, d, sizeof d));
    assert_true(d[3] == 9);
    kiln_array_release(r);
    r = NULL;
    /* int16 does: float32 loop */
    TEST_OK(kiln_call(f, KILN_ARGS(kiln_arr(i2), kiln_arr(f4)), &r));
    assert_int_equal(kiln_array_dtype(r), KILN_FLOAT32);
    kiln_array_release(r);
    r = NULL;
    /* a typed float64 scalar is float64 (NumPy 2 / NEP 50 for typed scalars) */
    TEST_OK(kiln_call(f, KILN_ARGS(kiln_arr(f4), kiln_f64(2)), &r));
    assert_int_equal(kiln_array_dtype(r), KILN_FLOAT64);
    kiln_array_release(r);
    r = NULL;
    /* an int64 scalar whose value fits takes the float32 loop (by value) */
    TEST_OK(kiln_call(f, KILN_ARGS(kiln_arr(f4), kiln_i64(3)), &r));
    assert_int_equal(kiln_array_dtype(r), KILN_FLOAT32);
    float fr[5];
    TEST_OK(kiln_array_to_host(r, fr, sizeof fr));
    assert_true(fr[4] == 12.0f);
    kiln_array_release(r);
    r = NULL;
    /* complex does not cast to any: error naming the signatures */
    TEST_FAILS_WITH(kiln_call(f, KILN_ARGS(kiln_arr(c8), kiln_arr(f4)), &r), KILN_ERR_DTYPE,
                    "f4(f4,f4), f8(f8,f8)");
    assert_null(r);
    /* output dtype that the result cannot cast to */
    kiln_array *o = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &n, &o));
    kiln_array *outs[1] = {o};
    TEST_FAILS_WITH(kiln_call(f, KILN_ARGS(kiln_arr(f4), kiln_arr(f4)), outs), KILN_ERR_DTYPE,
                    "output 0 is int32");
    kiln_array *arrs[] = {i4, i2, f4, c8, o};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
    kiln_ufunc_release(f);
}

static void errors(void **state) {
    (void)state;
    int64_t s34[2] = {3, 4}, s54[2] = {5, 4}, s3[1] = {3};
    kiln_array *a = NULL, *b = NULL, *o = NULL, *big = NULL, *v1 = NULL, *v2 = NULL, *r = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, s34, &a));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, s54, &b));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, s3, &o));
    /* shapes that do not broadcast: both shapes in the message */
    TEST_FAILS_WITH(kiln_call(axpb, KILN_ARGS(kiln_arr(a), kiln_arr(b), kiln_f64(0)), &r), KILN_ERR_SHAPE,
                    "(3, 4)");
    assert_true(test_contains(kiln_last_error(), "(5, 4)"));
    /* wrong argument count */
    TEST_FAILS_WITH(kiln_call(axpb, KILN_ARGS(kiln_arr(a), kiln_f64(0)), &r), KILN_ERR_ARG_COUNT,
                    "takes 3 inputs");
    /* output of the wrong shape */
    kiln_array *outs[1] = {o};
    TEST_FAILS_WITH(kiln_call(axpb, KILN_ARGS(kiln_arr(a), kiln_f64(1), kiln_f64(0)), outs), KILN_ERR_SHAPE,
                    "output 0 has shape (3,)");
    /* output overlapping an input other than exactly in place */
    int64_t n = 100;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &n, &big));
    TEST_OK(kiln_array_slice(big, 0, 0, 50, 1, &v1));
    TEST_OK(kiln_array_slice(big, 0, 1, 51, 1, &v2));
    outs[0] = v2;
    TEST_FAILS_WITH(kiln_call(axpb, KILN_ARGS(kiln_arr(v1), kiln_f64(1), kiln_f64(0)), outs),
                    KILN_ERR_INVALID_ARGUMENT, "overlaps input 0");
    /* a raw pointer is not a ufunc argument */
    TEST_FAILS_WITH(kiln_call(axpb, KILN_ARGS(kiln_ptr(NULL, KILN_FLOAT64), kiln_f64(1), kiln_f64(0)), &r),
                    KILN_ERR_ARG_TYPE, "raw pointer");
    assert_null(r);
    /* bad signatures and parameter lists */
    kiln_ufunc *f = NULL;
    TEST_FAILS_WITH(kiln_vectorize(ctx, "x", "f8(f8,", "a", "return a;", NULL, &f), KILN_ERR_SIGNATURE,
                    "f8(f8,");
    TEST_FAILS_WITH(kiln_vectorize(ctx, "x", "f9(f8)", "a", "return a;", NULL, &f), KILN_ERR_SIGNATURE, "f9");
    TEST_FAILS_WITH(kiln_vectorize(ctx, "x", "f8(f8,f8)", "a", "return a;", NULL, &f), KILN_ERR_ARG_COUNT,
                    "1 input name");
    TEST_FAILS_WITH(kiln_vectorize(ctx, "x", "f8(f8); f8(f8,f8)", "a", "return a;", NULL, &f),
                    KILN_ERR_SIGNATURE, "same number");
    TEST_FAILS_WITH(kiln_vectorize(ctx, "bad name", "f8(f8)", "a", "return a;", NULL, &f),
                    KILN_ERR_INVALID_ARGUMENT, "C identifier");
    assert_null(f);
    kiln_array *arrs[] = {a, b, o, big, v1, v2};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
}

static void compile_error_lines(void **state) {
    (void)state;
    kiln_ufunc *f = NULL;
    kiln_status s = kiln_vectorize(ctx, "broken", "f8(f8)", "x",
                                   "double y = x * 2;\n\nreturn y + no_such_thing;", NULL, &f);
    assert_int_equal(s, KILN_ERR_COMPILE);
    assert_null(f);
    const char *log = kiln_last_error();
    /* GCC says "broken:3:", NVRTC "broken(3)" */
    if (!test_contains(log, "broken:3:") && !test_contains(log, "broken(3)"))
        fail_msg("no body line 3 in: %s", log);
    assert_true(test_contains(log, "no_such_thing"));
    /* and in the preamble, counted from the preamble's first line */
    s = kiln_vectorize(ctx, "broken2", "f8(f8)", "x", "return helper(x);",
                       "__device__ double helper(double v) {\n  return v +;\n}", &f);
    assert_int_equal(s, KILN_ERR_COMPILE);
    log = kiln_last_error();
    if (!test_contains(log, "broken2.preamble:2:") && !test_contains(log, "broken2.preamble(2)"))
        fail_msg("no preamble line 2 in: %s", log);
}

/* cpu, parallel and (on a CUDA context) cuda agree on random inputs. */
static void targets_agree(void **state) {
    (void)state;
    kiln_ufunc *hav = NULL;
    TEST_OK(kiln_vectorize(ctx, "hav_t", "f8(f8,f8,f8,f8,f8)", "lat1, lon1, lat2, lon2, s",
                           "double a = pow(sin(0.008726645 * (lat2 - lat1)), 2) + cos(0.01745329 * lat1) * "
                           "cos(0.01745329 * lat2) * pow(sin(0.008726645 * (lon2 - lon1)), 2);\n"
                           "return atan2(a, 1 - a) * s;",
                           NULL, &hav));
    int64_t n = 100003;
    test_rng rng = test_rng_for(__func__);
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    test_fill_f64(&rng, x, (size_t)n, -90, 90);
    test_fill_f64(&rng, y, (size_t)n, -180, 180);
    kiln_array *X = from_host_f64(1, &n, x), *Y = from_host_f64(1, &n, y);
    long double *ref = malloc(sizeof(long double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        long double a =
            powl(sinl(0.008726645L * (30 - x[i])), 2) +
            cosl(0.01745329L * x[i]) * cosl(0.01745329L * 30) * powl(sinl(0.008726645L * (101 - y[i])), 2);
        ref[i] = atan2l(a, 1 - a) * 6371;
    }
    const char *targets[] = {"cpu", "parallel", "cuda"};
    int ntargets = kiln_context_backend(ctx) == KILN_BACKEND_CUDA ? 3 : 2;
    for (int t = 0; t < ntargets; t++) {
        kiln_array *Z = NULL;
        TEST_OK(kiln_call_ex(hav, targets[t], NULL,
                             KILN_ARGS(kiln_arr(X), kiln_arr(Y), kiln_f64(30), kiln_f64(101), kiln_f64(6371)),
                             &Z));
        double *z = test_read_array(Z);
        /* a few ULP per libm/libmvec/CUDA call, compounded: 1e-13 relative */
        double e = test_max_rel_err_f64(z, ref, (size_t)n, 1e-12, 1e-13);
        if (e > 1) fail_msg("target %s: error %.3g of tolerance", targets[t], e);
        free(z);
        kiln_array_release(Z);
    }
    free(x);
    free(y);
    free(ref);
    kiln_array_release(X);
    kiln_array_release(Y);
    kiln_ufunc_release(hav);
}

/* Grids that cover the elements get a kernel without a loop; grids capped
 * by KILN_UFUNC_GRID_WAVES (or the device's limit) a grid-stride loop. Both
 * compile through NVRTC, and on a GPU both give the same bits. */
static void grid_stride_and_covering_kernels(void **state) {
    (void)state;
    const char *body = "return a * b + sin(a);";
    kiln_ufunc *cover = NULL, *stride = NULL;
    TEST_OK(kiln_vectorize(ctx, "cover", "f8(f8,f8)", "a, b", body, NULL, &cover));
    setenv("KILN_UFUNC_GRID_WAVES", "1", 1); /* read by kiln_vectorize */
    kiln_status made = kiln_vectorize(ctx, "stride", "f8(f8,f8)", "a, b", body, NULL, &stride);
    unsetenv("KILN_UFUNC_GRID_WAVES");
    TEST_OK(made);
    int64_t n = 100003, n1 = n + 1; /* several elements per thread with one block per SM */
    test_rng rng = test_rng_for(__func__);
    double *a = malloc(sizeof(double) * (size_t)n1), *b = malloc(sizeof(double) * (size_t)n1);
    test_fill_f64(&rng, a, (size_t)n1, -10, 10);
    test_fill_f64(&rng, b, (size_t)n1, -10, 10);
    /* Views from element 1: contiguous but not 16-byte aligned, so the plain
     * contiguous layout (not the vector one) whatever the size. */
    kiln_array *A1 = from_host_f64(1, &n1, a), *B1 = from_host_f64(1, &n1, b), *A = NULL, *B = NULL;
    TEST_OK(kiln_array_slice(A1, 0, 1, n1, 1, &A));
    TEST_OK(kiln_array_slice(B1, 0, 1, n1, 1, &B));
    kiln_array_release(A1);
    kiln_array_release(B1);
    a++; /* a[i] is A's element i */
    kiln_ufunc *fs[2] = {cover, stride};
    double *z[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        char *src = NULL, *log = NULL;
        TEST_OK(kiln_ufunc_source(fs[k], "cuda", KILN_ARGS(kiln_arr(A), kiln_arr(A)), NULL, &src));
        /* 8-byte elements: the 16-byte vector layout; a scalar input: plain contiguous */
        char *src2 = NULL;
        TEST_OK(kiln_ufunc_source(fs[k], "cuda", KILN_ARGS(kiln_arr(A), kiln_f64(2)), NULL, &src2));
        assert_int_equal(strstr(src2, "kiln_e += kiln_step") != NULL, k == 1);
        char *both[2] = {src, src2};
        for (int j = 0; j < 2; j++) {
            kiln_status s = kiln_compile_only("cuda", "sm_90", both[j], "ufunc.cu", NULL, &log);
            if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING)
                fail_msg("%s: %s\n%s", k ? "stride" : "cover", kiln_last_error(), both[j]);
            kiln_free(log);
            log = NULL;
        }
        kiln_free(src);
        kiln_free(src2);
        kiln_array *Z = NULL;
        TEST_OK(kiln_call(fs[k], KILN_ARGS(kiln_arr(A), kiln_f64(2)), &Z));
        z[k] = test_read_array(Z);
        kiln_array_release(Z);
    }
    for (int64_t i = 0; i < n; i++) {
        if (memcmp(&z[0][i], &z[1][i], sizeof(double)) != 0)
            fail_msg("element %lld: covering grid %.17g, grid-stride %.17g", (long long)i, z[0][i], z[1][i]);
        double ref = a[i] * 2 + sin(a[i]);
        if (fabs(z[0][i] - ref) > 1e-12 * (1 + fabs(ref)))
            fail_msg("element %lld: %.17g vs %.17g", (long long)i, z[0][i], ref);
    }
    free(z[0]);
    free(z[1]);
    free(a - 1);
    free(b);
    kiln_array_release(A);
    kiln_array_release(B);
    kiln_ufunc_release(cover);
    kiln_ufunc_release(stride);
}

/* Host arrays in, host array out (Numba's behaviour), including in place. */
static void host_arrays(void **state) {
    (void)state;
    int64_t n = 300001;
    double *a = malloc(sizeof(double) * (size_t)n), *c = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) a[i] = (double)i;
    kiln_array *A = NULL, *C = NULL, *R = NULL;
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, a, &A));
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, c, &C));
    TEST_OK(kiln_call(axpb, KILN_ARGS(kiln_arr(A), kiln_f64(1), kiln_arr(A)), &R));
    if (kiln_context_backend(ctx) == KILN_BACKEND_CUDA)
        assert_int_equal(kiln_array_memory(R), KILN_MEMORY_HOST);
    double *r = test_read_array(R);
    for (int64_t i = 0; i < n; i++) assert_true(r[i] == i + 1.0);
    kiln_array *outs[1] = {C};
    TEST_OK(kiln_call(axpb, KILN_ARGS(kiln_arr(A), kiln_f64(0), kiln_f64(1)), outs));
    for (int64_t i = 0; i < n; i++) assert_true(c[i] == 2.0 * i - 1);
    outs[0] = A; /* in place on host memory */
    TEST_OK(kiln_call(axpb, KILN_ARGS(kiln_arr(A), kiln_f64(0), kiln_f64(0)), outs));
    for (int64_t i = 0; i < n; i++) assert_true(a[i] == 2.0 * i);
    free(r);
    free(a);
    free(c);
    kiln_array_release(A);
    kiln_array_release(C);
    kiln_array_release(R);
}

static void generated_sources_compile(int exact) {
    const char *limit = exact ? "0" : NULL;
    kiln_ufunc *f = NULL, *g = NULL;
    TEST_OK(vectorize_with_limit(limit, "gen", "f8(f8,f8); f4(f4,f4); c8(c8,c8); f2(f2,f2); i4(i4,i4)",
                                 "a, b", "return a * b + a;",
                                 "__device__ inline float twice(float v) { return 2 * v; }", &f));
    TEST_OK(vectorize_with_limit(limit, "gen2", "(f8,f8)(f8,f8)", "a, b -> s, d", "s = a + b; d = a - b;",
                                 NULL, &g));
    int64_t s2[2] = {128, 33}, s1[1] = {33};
    kiln_array *m = NULL, *v = NULL, *t = NULL, *h = NULL, *mf = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, s2, &m));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, s1, &v));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT16, 2, s2, &h));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT16, 2, s2, &mf));
    TEST_OK(kiln_array_transpose(m, NULL, &t));
    struct {
        kiln_ufunc *u;
        kiln_value a, b;
    } calls[] = {
        {f, kiln_arr(m), kiln_arr(m)},     /* vector layout */
        {f, kiln_arr(m), kiln_arr(v)},     /* broadcast: strided 2-d */
        {f, kiln_arr(t), kiln_f64(2)},     /* transposed + scalar */
        {f, kiln_arr(h), kiln_arr(h)},     /* float16 storage */
        {f, kiln_arr(mf), kiln_arr(mf)},   /* int16 -> float32 loop (cast on load) */
        {f, kiln_c64(1, 2), kiln_arr(mf)}, /* complex scalar, int16 -> complex64 */
        {g, kiln_arr(m), kiln_arr(v)},     /* two outputs, strided */
        {g, kiln_arr(m), kiln_arr(m)},     /* two outputs, vector */
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        const char *targets[2] = {"cuda", "cpu"};
        for (int k = 0; k < 2; k++) {
            char *src = NULL, *log = NULL;
            TEST_OK(kiln_ufunc_source(calls[i].u, targets[k], KILN_ARGS(calls[i].a, calls[i].b), NULL, &src));
            kiln_status s =
                kiln_compile_only(targets[k], k == 0 ? "sm_90" : NULL, src, "ufunc.cu", NULL, &log);
            if (s == KILN_ERR_COMPILER_MISSING) {
                kiln_free(src);
                kiln_free(log);
                continue;
            }
            if (s != KILN_OK)
                fail_msg("call %zu target %s (%s): %s\n%s", i, targets[k], exact ? "exact" : "first call",
                         kiln_last_error(), src);
            kiln_free(src);
            kiln_free(log);
        }
    }
    kiln_array *arrs[] = {m, v, t, h, mf};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
    kiln_ufunc_release(f);
    kiln_ufunc_release(g);
}

/* Every kind of kernel kiln generates compiles with NVRTC for sm_90 (CI has
 * the toolkit; skipped where NVRTC is missing): each call's kernel as a
 * first call runs it (mixed where contiguous) and with
 * KILN_UFUNC_MIXED_LIMIT=0, as calls run after the hand-over (exact). */
static void generated_cuda_sources_compile(void **state) {
    (void)state;
    for (int exact = 0; exact < 2; exact++) generated_sources_compile(exact);
}

/* kiln_copy_share cuts [0, total) into ordered, disjoint, aligned shares of
 * nearly equal size, whatever the total and the number of parts. */
static void copy_shares_cover_odd_sizes(void **state) {
    (void)state;
    const size_t totals[] = {0,
                             1,
                             7,
                             4095,
                             4096,
                             4097,
                             65537,
                             ((size_t)1 << 20) + 13,
                             ((size_t)3 << 20) + 4095,
                             (size_t)5000000001u,
                             SIZE_MAX / 2 + 12345};
    for (size_t t = 0; t < sizeof totals / sizeof totals[0]; t++)
        for (int parts = 1; parts <= 17; parts++) {
            size_t total = totals[t], prev = 0;
            for (int part = 0; part < parts; part++) {
                size_t lo, hi;
                kiln_copy_share(total, parts, part, &lo, &hi);
                if (lo != prev || hi < lo)
                    fail_msg("total %zu parts %d share %d: [%zu, %zu) after %zu", total, parts, part, lo, hi,
                             prev);
                if (part < parts - 1 && hi % KILN_COPY_SPLIT_ALIGN != 0)
                    fail_msg("total %zu parts %d share %d ends at %zu, not aligned", total, parts, part, hi);
                if (hi - lo > total / (size_t)parts + KILN_COPY_SPLIT_ALIGN + 1)
                    fail_msg("total %zu parts %d share %d is %zu bytes: unbalanced", total, parts, part,
                             hi - lo);
                prev = hi;
            }
            if (prev != total) fail_msg("total %zu parts %d: shares end at %zu", total, parts, prev);
        }
}

/* Pieces at odd addresses with odd sizes, and a gap with a guard pattern
 * between them in the destination. */
#define COPY_NPIECES 9
static const size_t copy_sizes[COPY_NPIECES] = {0, 1, 3, 4095, 4097, 262143, 1048583, ((size_t)3 << 20) + 7,
                                                65};
#define COPY_GAP 64

typedef struct copy_case {
    unsigned char *src, *dst;
    size_t bytes;
    kiln_copy_piece pieces[COPY_NPIECES];
} copy_case;

static void copy_case_init(copy_case *c, test_rng *rng) {
    size_t total = 0;
    for (int i = 0; i < COPY_NPIECES; i++) total += copy_sizes[i] + COPY_GAP;
    c->bytes = total + 8;
    c->src = malloc(c->bytes);
    c->dst = malloc(c->bytes);
    for (size_t i = 0; i < c->bytes; i++) c->src[i] = (unsigned char)test_uniform(rng, 0, 256);
    size_t off = 0;
    for (int i = 0; i < COPY_NPIECES; i++) {
        c->pieces[i] = (kiln_copy_piece){c->dst + off + 3, c->src + off + 1, copy_sizes[i]};
        off += copy_sizes[i] + COPY_GAP;
    }
}

static int copy_case_check(const copy_case *c) {
    size_t off = 0;
    for (int i = 0; i < COPY_NPIECES; i++) {
        if (memcmp(c->dst + off + 3, c->src + off + 1, copy_sizes[i]) != 0) return 0;
        for (size_t g = 0; g < 3; g++)
            if (c->dst[off + g] != 0xA5) return 0;
        for (size_t g = 3 + copy_sizes[i]; g < copy_sizes[i] + COPY_GAP; g++)
            if (c->dst[off + g] != 0xA5) return 0;
        off += copy_sizes[i] + COPY_GAP;
    }
    return 1;
}

typedef struct copy_racer {
    kiln_copy_pool *pool;
    copy_case c;
    int ok;
} copy_racer;

static void *copy_race(void *arg) {
    copy_racer *r = arg;
    r->ok = 1;
    for (int round = 0; round < 20 && r->ok; round++) {
        memset(r->c.dst, 0xA5, r->c.bytes);
        kiln_copy_pool_run(r->pool, r->c.pieces, COPY_NPIECES);
        r->ok = copy_case_check(&r->c);
    }
    return NULL;
}

/* kiln_copy_pool_run copies exactly the pieces' bytes, with any number of
 * threads (none: NULL), and stays correct with two callers at once (one of
 * them then copies alone). */
static void copy_pool_copies_odd_pieces(void **state) {
    (void)state;
    test_rng rng = test_rng_for(__func__);
    copy_case c;
    copy_case_init(&c, &rng);
    for (int threads = 0; threads <= 5; threads++) {
        kiln_copy_pool *pool = NULL;
        if (threads > 0) TEST_OK(kiln_copy_pool_create(threads, &pool));
        assert_int_equal(kiln_copy_pool_threads(pool), threads > 0 ? threads : 1);
        for (int from = 0; from < COPY_NPIECES; from++) { /* fewer, smaller pieces too */
            memset(c.dst, 0xA5, c.bytes);
            kiln_copy_pool_run(pool, c.pieces + from, COPY_NPIECES - from);
            size_t off = 0;
            for (int i = 0; i < COPY_NPIECES; i++) {
                int copied = i >= from;
                for (size_t b = 0; b < copy_sizes[i] + COPY_GAP; b++) {
                    int inside = b >= 3 && b < 3 + copy_sizes[i];
                    unsigned char want = copied && inside ? c.src[off + b - 2] : 0xA5;
                    if (c.dst[off + b] != want)
                        fail_msg("%d threads, pieces from %d: piece %d byte %zu is %d, want %d", threads,
                                 from, i, b, c.dst[off + b], want);
                }
                off += copy_sizes[i] + COPY_GAP;
            }
        }
        kiln_copy_pool_destroy(pool);
    }
    free(c.src);
    free(c.dst);

    copy_racer r[2];
    kiln_copy_pool *pool = NULL;
    TEST_OK(kiln_copy_pool_create(3, &pool));
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        r[i].pool = pool;
        copy_case_init(&r[i].c, &rng);
        assert_int_equal(pthread_create(&t[i], NULL, copy_race, &r[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        assert_true(r[i].ok);
        free(r[i].c.src);
        free(r[i].c.dst);
    }
    kiln_copy_pool_destroy(pool);
}

/* Runs the host-operand pipeline: kiln_call on a CUDA context; on the CPU,
 * uf_staged_call drives the same slots, streams, events, staging buffers and
 * copy threads with the CPU backend standing in for the device. */
static kiln_status staged_call(kiln_ufunc *f, const kiln_value *args, int nargs, kiln_array **outs,
                               int64_t n) {
    if (kiln_context_backend(ctx) == KILN_BACKEND_CUDA) return kiln_call(f, args, nargs, outs);
    int sig = 0;
    kiln_status s = uf_dispatch(f, args, &sig);
    return s == KILN_OK ? uf_staged_call(f, sig, args, outs, 1, &n, NULL) : s;
}

/* The pipeline in many chunks (a short last one), outputs of two widths,
 * fresh host results and given host outputs, small chunks copied alone and
 * large ones split over the copy threads: results exact. */
static void staged_pipeline_chunks(void **state) {
    (void)state;
    kiln_ufunc *f = NULL;
    TEST_OK(
        kiln_vectorize(ctx, "stg", "(f8,f4)(f8,f4)", "a, b -> s, t", "s = a * 2 + b; t = b - 1;", NULL, &f));
    const size_t chunk_bytes[] = {65536, (size_t)1 << 20};
    const int64_t sizes[] = {100003, 1000003};
    test_rng rng = test_rng_for(__func__);
    for (int c = 0; c < 2; c++) {
        f->stage_chunk_bytes = chunk_bytes[c];
        int64_t n = sizes[c];
        double *a = malloc(sizeof(double) * (size_t)n), *s2 = malloc(sizeof(double) * (size_t)n);
        float *b = malloc(sizeof(float) * (size_t)n), *t2 = malloc(sizeof(float) * (size_t)n);
        test_fill_f64(&rng, a, (size_t)n, -1e3, 1e3);
        test_fill_f32(&rng, b, (size_t)n, -1e3, 1e3);
        kiln_array *A = NULL, *B = NULL, *S2 = NULL, *T2 = NULL;
        TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, a, &A));
        TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT32, 1, &n, NULL, b, &B));
        TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, s2, &S2));
        TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT32, 1, &n, NULL, t2, &T2));
        kiln_array *fresh[2] = {NULL, NULL}, *given[2] = {S2, T2};
        TEST_OK(staged_call(f, KILN_ARGS(kiln_arr(A), kiln_arr(B)), fresh, n));
        TEST_OK(staged_call(f, KILN_ARGS(kiln_arr(A), kiln_arr(B)), given, n));
        assert_int_equal(kiln_array_memory(fresh[0]), KILN_MEMORY_HOST);
        assert_int_equal(kiln_array_memory(fresh[1]), KILN_MEMORY_HOST);
        const double *s = kiln_array_data(fresh[0]);
        const float *t = kiln_array_data(fresh[1]);
        for (int64_t i = 0; i < n; i++) {
            double ws = a[i] * 2 + (double)b[i];
            float wt = b[i] - 1;
            if (s[i] != ws || t[i] != wt || s2[i] != ws || t2[i] != wt)
                fail_msg(
                    "chunk %zu bytes, element %lld of %lld: got %.17g %.9g / %.17g %.9g, want %.17g %.9g",
                    chunk_bytes[c], (long long)i, (long long)n, s[i], t[i], s2[i], t2[i], ws, wt);
        }
        kiln_array *arrs[] = {A, B, S2, T2, fresh[0], fresh[1]};
        for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
        free(a);
        free(b);
        free(s2);
        free(t2);
    }
    kiln_ufunc_release(f);
}

/* kiln_vectorize builds one module per signature set holding, per
 * signature, the mixed kernel; calls with scalars at any positions (typed
 * or weak, of any dtype that casts) on contiguous arrays then build nothing
 * more (with the default KILN_UFUNC_MIXED_LIMIT), and agree with a long
 * double reference. The CUDA form of each call's kernel compiles through
 * NVRTC. */
static void scalars_share_one_module(void **state) {
    (void)state;
    int64_t before = test_modules_built(ctx);
    kiln_ufunc *f = NULL, *c = NULL;
    TEST_OK(vectorize_with_limit(NULL, "fma3", "f4(f4,f4,f4); f8(f8,f8,f8)", "a, x, y",
                                 "return a * x + y / (1 + x * x);", NULL, &f));
    TEST_OK(vectorize_with_limit(NULL, "cfma", "c16(c16,c16,c16)", "a, x, y", "return a * x + conj(y);", NULL,
                                 &c));
    assert_int_equal(test_modules_built(ctx) - before, 2);
    int64_t n = 3001; /* not a multiple of the CPU kernel's blocks; below the 16-byte layout's 4096 (main) */
    test_rng rng = test_rng_for(__func__);
    double *h[3];
    kiln_array *A[3];
    for (int i = 0; i < 3; i++) {
        h[i] = malloc(sizeof(double) * (size_t)n);
        test_fill_f64(&rng, h[i], (size_t)n, -4, 4);
        A[i] = from_host_f64(1, &n, h[i]);
    }
    const double sv = test_uniform(&rng, -3, 3);
    long double *ref = malloc(sizeof(long double) * (size_t)n);
    for (int mask = 1; mask < 7; mask++) {     /* which inputs are scalars (not all: 0-d) */
        for (int kind = 0; kind < 3; kind++) { /* f64, weak int, f32 scalars */
            kiln_value args[3];
            long double v[3] = {0, 0, 0};
            for (int i = 0; i < 3; i++) {
                if (!(mask >> i & 1)) {
                    args[i] = kiln_arr(A[i]);
                    continue;
                }
                args[i] = kind == 0 ? kiln_f64(sv) : kind == 1 ? kiln_i64(3 - i) : kiln_f32((float)sv);
                v[i] = kind == 0 ? sv : kind == 1 ? 3 - i : (float)sv;
            }
            kiln_array *Z = NULL;
            TEST_OK(kiln_call(f, args, 3, &Z));
            double *z = test_read_array(Z);
            for (int64_t e = 0; e < n; e++) {
                long double a = mask & 1 ? v[0] : h[0][e], x = mask & 2 ? v[1] : h[1][e],
                            y = mask & 4 ? v[2] : h[2][e];
                ref[e] = a * x + y / (1 + x * x);
            }
            double err = test_max_rel_err_f64(z, ref, (size_t)n, 1e-12, 1e-12);
            if (err > 1) fail_msg("mask %d kind %d: error %g of the tolerance", mask, kind, err);
            free(z);
            kiln_array_release(Z);
            if (kind == 0) {
                char *src = NULL, *log = NULL;
                TEST_OK(kiln_ufunc_source(f, "cuda", args, 3, NULL, &src));
                if (!strstr(src, "kiln_i0 ? "))
                    fail_msg("mask %d: the call's CUDA kernel is not the mixed one:\n%s", mask, src);
                kiln_status s = kiln_compile_only("cuda", "sm_90", src, "ufunc.cu", NULL, &log);
                if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING)
                    fail_msg("%s\n%s", kiln_last_error(), src);
                kiln_free(src);
                kiln_free(log);
            }
        }
    }
    /* complex: a scalar with complex128 arrays, and the NVRTC compile of
     * its mixed kernel (the light CUDA prelude must see the complex types) */
    double *hc = malloc(sizeof(double) * 2 * (size_t)n);
    for (int64_t e = 0; e < n; e++) {
        hc[2 * e] = h[1][e];
        hc[2 * e + 1] = h[2][e];
    }
    kiln_array *C = NULL, *Z = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_COMPLEX128, 1, &n, hc, sizeof(double) * 2 * (size_t)n, &C));
    TEST_OK(kiln_call(c, KILN_ARGS(kiln_c128(0.5, -2), kiln_arr(C), kiln_arr(C)), &Z));
    double *z = test_read_array(Z);
    for (int64_t e = 0; e < n; e++) { /* (0.5 - 2i)(p + qi) + (p - qi) */
        double p = hc[2 * e], q = hc[2 * e + 1], re = 0.5 * p + 2 * q + p, im = 0.5 * q - 2 * p - q;
        if (fabs(z[2 * e] - re) > 1e-12 * (1 + fabs(re)) || fabs(z[2 * e + 1] - im) > 1e-12 * (1 + fabs(im)))
            fail_msg("complex element %lld: %g%+gi, want %g%+gi", (long long)e, z[2 * e], z[2 * e + 1], re,
                     im);
    }
    free(z);
    char *src = NULL, *log = NULL;
    TEST_OK(
        kiln_ufunc_source(c, "cuda", KILN_ARGS(kiln_c128(0.5, -2), kiln_arr(C), kiln_arr(C)), NULL, &src));
    if (!strstr(src, "kiln_i0 ? ")) fail_msg("the complex call's CUDA kernel is not the mixed one:\n%s", src);
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "ufunc.cu", NULL, &log);
    if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING) fail_msg("%s\n%s", kiln_last_error(), src);
    kiln_free(src);
    kiln_free(log);
    kiln_array_release(Z);
    kiln_array_release(C);
    free(hc);
    assert_int_equal(test_modules_built(ctx) - before, 2);
    for (int i = 0; i < 3; i++) {
        kiln_array_release(A[i]);
        free(h[i]);
    }
    free(ref);
    kiln_ufunc_release(f);
    kiln_ufunc_release(c);
}

/* One call of a hand-over test: f on args gives want (n values), and the
 * calls so far have built want_built modules since `before`. */
static void call_and_count(kiln_ufunc *f, const kiln_value *args, int nargs, const double *want, int64_t n,
                           int call, int64_t before, int64_t want_built) {
    kiln_array *Z = NULL;
    TEST_OK(kiln_call(f, args, nargs, &Z));
    double *z = test_read_array(Z);
    for (int64_t e = 0; e < n; e++)
        if (fabs(z[e] - want[e]) > 1e-15 * (1 + fabs(want[e])))
            fail_msg("call %d, element %lld: %.17g, want %.17g", call, (long long)e, z[e], want[e]);
    free(z);
    kiln_array_release(Z);
    int64_t built = test_modules_built(ctx) - before;
    if (built != want_built)
        fail_msg("after call %d on %s: %lld modules built, want %lld", call, kiln_context_backend_name(ctx),
                 (long long)built, (long long)want_built);
}

/* On CUDA a signature's mixed kernel serves calls until it has run
 * KILN_UFUNC_MIXED_LIMIT elements (10000 here, 3001 per call): calls 1-4
 * compile nothing, call 5 compiles its exact kernel, call 6 reuses it; the
 * CPU's mixed kernel serves every call. Every call's values are checked. */
static void mixed_kernel_hands_over_on_cuda(void **state) {
    (void)state;
    kiln_ufunc *f = NULL;
    TEST_OK(vectorize_with_limit("10000", "axpb", "f8(f8,f8)", "a, x", "return a * x + 0.5;", NULL, &f));
    int64_t n = 3001; /* below the 16-byte layout's 4096 (main): the mixed kernel's layout */
    test_rng rng = test_rng_for(__func__);
    double *h = malloc(sizeof(double) * (size_t)n);
    test_fill_f64(&rng, h, (size_t)n, -4, 4);
    kiln_array *X = from_host_f64(1, &n, h);
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    int64_t before = test_modules_built(ctx);
    double *want = malloc(sizeof(double) * (size_t)n);
    for (int call = 1; call <= 6; call++) {
        const double a = test_uniform(&rng, -3, 3);
        for (int64_t e = 0; e < n; e++) want[e] = a * h[e] + 0.5;
        call_and_count(f, KILN_ARGS(kiln_f64(a), kiln_arr(X)), want, n, call, before, cuda && call >= 5);
    }
    free(want);
    kiln_array_release(X);
    free(h);
    kiln_ufunc_release(f);
}

/* On CUDA with the default KILN_TIER_UP: the call past the limit (10000
 * elements, 3001 per call) starts its exact kernel's build on a thread and
 * runs the mixed kernel, as does every call until that kernel is recorded;
 * exactly one module is built and every call's values are right. Releasing
 * the ufunc while a build runs waits for it. On the CPU the mixed kernel
 * serves every call and nothing is built. */
static void mixed_kernel_tiers_up_in_background(void **state) {
    (void)state;
    /* a body of its own: the context's module cache would hand the test
     * before's exact kernel to an identical one, and nothing would build */
    unsetenv("KILN_TIER_UP");
    kiln_ufunc *f = NULL, *g = NULL;
    kiln_status made =
        vectorize_with_limit("10000", "axpt", "f8(f8,f8)", "a, x", "return a * x + 0.25;", NULL, &f);
    if (made == KILN_OK)
        made = vectorize_with_limit("10000", "axpc", "f8(f8,f8)", "a, x", "return a * x - 0.5;", NULL, &g);
    setenv("KILN_TIER_UP", "0", 1);
    TEST_OK(made);
    int64_t n = 3001;
    test_rng rng = test_rng_for(__func__);
    double *h = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)n);
    test_fill_f64(&rng, h, (size_t)n, -4, 4);
    kiln_array *X = from_host_f64(1, &n, h);
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    int64_t before = test_modules_built(ctx);
    int call = 0, built_at = 0;
    for (; call < 100000 && (built_at == 0 || call < built_at + 3) && (cuda || call < 8); call++) {
        double a = 0.25 * (call % 7) - 0.5;
        for (int64_t e = 0; e < n; e++) want[e] = a * h[e] + 0.25;
        kiln_array *Z = NULL;
        TEST_OK(kiln_call(f, KILN_ARGS(kiln_f64(a), kiln_arr(X)), &Z));
        double *z = test_read_array(Z);
        for (int64_t e = 0; e < n; e++)
            if (fabs(z[e] - want[e]) > 1e-15 * (1 + fabs(want[e])))
                fail_msg("call %d, element %lld: %.17g, want %.17g", call + 1, (long long)e, z[e], want[e]);
        free(z);
        kiln_array_release(Z);
        int64_t built = test_modules_built(ctx) - before;
        if (built > (cuda ? 1 : 0) || (call < 4 && built != 0))
            fail_msg("after call %d on %s: %lld modules built", call + 1, kiln_context_backend_name(ctx),
                     (long long)built);
        if (built == 1 && !built_at) built_at = call + 1;
    }
    if (cuda && !built_at) fail_msg("the exact kernel was not built in the background after %d calls", call);
    kiln_ufunc_release(f);
    /* released while its build runs (call 5 starts it on CUDA) */
    for (int c = 0; c < 5; c++) {
        kiln_array *Z = NULL;
        TEST_OK(kiln_call(g, KILN_ARGS(kiln_f64(2), kiln_arr(X)), &Z));
        kiln_array_release(Z);
    }
    kiln_ufunc_release(g);
    kiln_array_release(X);
    free(h);
    free(want);
}

/* All-array calls on CUDA take the mixed kernel too (a 16-byte layout's
 * call here: 8192 elements) until it has served KILN_UFUNC_MIXED_LIMIT
 * elements (10000): calls 1-2 compile nothing and run it (its source is the
 * mixed one), call 3 compiles the exact 16-byte kernel, call 4 reuses it;
 * on the CPU nothing compiles. Every call's values are checked. */
static void all_array_calls_hand_over_on_cuda(void **state) {
    (void)state;
    kiln_ufunc *f = NULL;
    TEST_OK(vectorize_with_limit("10000", "mulq", "f8(f8,f8)", "x, y", "return x * y - 0.25;", NULL, &f));
    int64_t n = 8192;
    test_rng rng = test_rng_for(__func__);
    double *hx = malloc(sizeof(double) * (size_t)n), *hy = malloc(sizeof(double) * (size_t)n);
    test_fill_f64(&rng, hx, (size_t)n, -4, 4);
    test_fill_f64(&rng, hy, (size_t)n, -4, 4);
    kiln_array *X = from_host_f64(1, &n, hx), *Y = from_host_f64(1, &n, hy);
    char *src = NULL;
    TEST_OK(kiln_ufunc_source(f, "cuda", KILN_ARGS(kiln_arr(X), kiln_arr(Y)), NULL, &src));
    if (!strstr(src, "kiln_i0 ? "))
        fail_msg("a first all-array call's CUDA kernel is not the mixed one:\n%s", src);
    kiln_free(src);
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    int64_t before = test_modules_built(ctx);
    double *want = malloc(sizeof(double) * (size_t)n);
    for (int64_t e = 0; e < n; e++) want[e] = hx[e] * hy[e] - 0.25;
    for (int call = 1; call <= 4; call++)
        call_and_count(f, KILN_ARGS(kiln_arr(X), kiln_arr(Y)), want, n, call, before, cuda && call >= 3);
    free(want);
    kiln_array_release(X);
    kiln_array_release(Y);
    free(hx);
    free(hy);
    kiln_ufunc_release(f);
}

int main(void) {
    /* Arrays of 4096+ elements take the 16-byte vector kernels on CUDA (the
     * default threshold is 8M), so both GPU layouts run here. */
    setenv("KILN_UFUNC_VECTOR_MIN", "4096", 0);
    setenv("KILN_UFUNC_MIXED_LIMIT", TEST_MIXED_LIMIT, 0);
    setenv("KILN_TIER_UP", "0", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(broadcasting_against_reference),
        cmocka_unit_test(views_and_scalars),
        cmocka_unit_test(in_place_and_supplied_output),
        cmocka_unit_test(several_outputs),
        cmocka_unit_test(every_dtype),
        cmocka_unit_test(dispatch_and_casting),
        cmocka_unit_test(errors),
        cmocka_unit_test(compile_error_lines),
        cmocka_unit_test(targets_agree),
        cmocka_unit_test(grid_stride_and_covering_kernels),
        cmocka_unit_test(host_arrays),
        cmocka_unit_test(generated_cuda_sources_compile),
        cmocka_unit_test(scalars_share_one_module),
        cmocka_unit_test(mixed_kernel_hands_over_on_cuda),
        cmocka_unit_test(mixed_kernel_tiers_up_in_background),
        cmocka_unit_test(all_array_calls_hand_over_on_cuda),
        cmocka_unit_test(copy_shares_cover_odd_sizes),
        cmocka_unit_test(copy_pool_copies_odd_pieces),
        cmocka_unit_test(staged_pipeline_chunks),
    };
    return cmocka_run_group_tests_name("ufunc", tests, setup, teardown);
}
