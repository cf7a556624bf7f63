/* test_bfloat16.c: KILN_BFLOAT16 as a dtype on the backend under test
 * (KILN_TEST_TARGET): its table entries, the host conversion (nearest even,
 * NaN kept) against a brute-force reference, ufuncs (storage, scalars,
 * promotion with float16 to float32), gufuncs, fills, reductions (float32
 * accumulation), the calls that refuse it (FFT, random numbers), and the
 * generated kernels through NVRTC for sm_90. Matmul/gemm with bfloat16 is in
 * test_blas.c. */
#define KILN_EXPERIMENTAL /* kiln_ufunc_source, kiln_gufunc_source (include/kiln.h) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "reduce/reduce.h"
#include "test_support.h"

static float bf(uint16_t b) { return kiln_bfloat16_to_float(b); }

/* The bfloat16 nearest to f by search (ties to the even pattern); NaN -> any NaN. */
static uint16_t nearest_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t lo = (uint16_t)(x >> 16), hi = (uint16_t)(lo + 1); /* same sign: |lo| <= |f| < |hi| */
    /* past the largest finite value the next step is 2^128 (infinity) */
    long double vh = (hi & 0x7fffu) == 0x7f80u ? (hi & 0x8000u ? -ldexpl(1, 128) : ldexpl(1, 128)) : bf(hi);
    long double dl = fabsl((long double)f - bf(lo)), dh = fabsl(vh - f);
    if ((x & 0xffffu) == 0) return lo;
    if (dl < dh) return lo;
    if (dh < dl) return hi;
    return (lo & 1u) ? hi : lo;
}

static void test_table(void **state) {
    (void)state;
    /* appended: the values before it do not move */
    assert_int_equal(KILN_COMPLEX128, 13);
    assert_int_equal(KILN_BFLOAT16, 14);
    assert_int_equal(KILN_DTYPE_COUNT, 15);
    assert_int_equal(kiln_dtype_size(KILN_BFLOAT16), 2);
    assert_string_equal(kiln_dtype_name(KILN_BFLOAT16), "bfloat16");
    kiln_dtype t = KILN_FLOAT32;
    TEST_OK(kiln_dtype_parse("bfloat16", &t));
    assert_int_equal(t, KILN_BFLOAT16);
    t = KILN_FLOAT32;
    TEST_OK(kiln_dtype_parse("bf16", &t));
    assert_int_equal(t, KILN_BFLOAT16);
    assert_int_equal(kiln_dtype_kind(KILN_BFLOAT16), 'f');
    /* ml_dtypes' casts: neither way with float16 */
    assert_false(kiln_dtype_can_cast(KILN_BFLOAT16, KILN_FLOAT16));
    assert_false(kiln_dtype_can_cast(KILN_FLOAT16, KILN_BFLOAT16));
    assert_true(kiln_dtype_can_cast(KILN_UINT8, KILN_BFLOAT16));
    assert_false(kiln_dtype_can_cast(KILN_INT16, KILN_BFLOAT16));
    assert_true(kiln_dtype_can_cast(KILN_BFLOAT16, KILN_COMPLEX64));
}

static void test_host_conversion(void **state) {
    (void)state;
    /* every pattern: widening is exact and narrows back to itself; NaN stays NaN with its sign */
    for (uint32_t b = 0; b < 65536; b++) {
        float f = bf((uint16_t)b);
        uint16_t back = kiln_float_to_bfloat16(f);
        if (isnan(f)) {
            if (!isnan(bf(back)) || (back & 0x8000u) != (b & 0x8000u))
                fail_msg("NaN 0x%04x -> 0x%04x", b, back);
        } else if (back != b) {
            fail_msg("0x%04x -> %g -> 0x%04x", b, (double)f, back);
        }
    }
    /* random floats of every magnitude, ties and the edges: nearest even */
    test_rng rng = test_rng_for(__func__);
    for (int i = 0; i < 200000; i++) {
        uint32_t x = (uint32_t)(test_uniform(&rng, 0, 4294967296.0));
        if (i % 4 == 1) x = (x & 0xffff0000u) | 0x8000u; /* an exact tie */
        float f;
        memcpy(&f, &x, 4);
        if (isnan(f)) continue;
        uint16_t got = kiln_float_to_bfloat16(f), want = nearest_bf16(f);
        if (got != want) fail_msg("%a: got 0x%04x, nearest even 0x%04x", (double)f, got, want);
    }
    assert_true(isinf(bf(kiln_float_to_bfloat16(3.4e38f))));
    assert_false(isinf(bf(kiln_float_to_bfloat16(3.38e38f))));
    float snan;
    uint32_t sbits = 0xff800001u; /* a signalling NaN whose payload is all in the low half */
    memcpy(&snan, &sbits, 4);
    uint16_t h = kiln_float_to_bfloat16(snan);
    assert_true(isnan(bf(h)));
    assert_true((h & 0x8000u) != 0);
}

/* n random bfloat16 values in [lo, hi] as an array and their bits */
static kiln_array *random_bf16(kiln_context *ctx, test_rng *rng, int64_t n, double lo, double hi,
                               uint16_t *bits) {
    for (int64_t i = 0; i < n; i++) bits[i] = kiln_float_to_bfloat16((float)test_uniform(rng, lo, hi));
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_BFLOAT16, 1, &n, bits, (size_t)n * 2, &a));
    return a;
}

static void test_ufunc(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    enum { N = 1000 };
    uint16_t ha[N], hb[N], hc[N];
    kiln_array *a = random_bf16(ctx, &rng, N, -4, 4, ha), *b = random_bf16(ctx, &rng, N, -4, 4, hb),
               *c = NULL;
    kiln_ufunc *f = NULL;
    TEST_OK(
        kiln_vectorize(ctx, "bf_fma", "bf16(bf16, bf16, bf16)", "x, y, s", "return x * y + s;", NULL, &f));
    TEST_OK(kiln_call(f, KILN_ARGS(kiln_arr(a), kiln_arr(b), kiln_bf16(0.5f)), &c));
    assert_int_equal(kiln_array_dtype(c), KILN_BFLOAT16);
    TEST_OK(kiln_array_to_host(c, hc, sizeof hc));
    for (int i = 0; i < N; i++) {
        /* computed in float (a product of two bfloat16 is exact there), rounded once */
        long double ref = (long double)bf(ha[i]) * bf(hb[i]) + 0.5L;
        long double got = bf(hc[i]);
        if (fabsl(got - ref) > ldexpl(fabsl(ref), -8) + 1e-30L)
            fail_msg("bf_fma[%d]: %Lg vs %Lg", i, got, ref);
    }
    kiln_array_release(c);
    c = NULL;
    /* a float32 result does not go into a bfloat16 output (not a safe cast) */
    kiln_ufunc *g = NULL;
    TEST_OK(kiln_vectorize(ctx, "bf_widen", "f4(f4)", "x", "return x;", NULL, &g));
    kiln_array *out = NULL;
    TEST_OK(kiln_call(g, KILN_ARGS(kiln_arr(a)), &out)); /* bfloat16 -> float32: safe, exact */
    assert_int_equal(kiln_array_dtype(out), KILN_FLOAT32);
    float hf[N];
    TEST_OK(kiln_array_to_host(out, hf, sizeof hf));
    for (int i = 0; i < N; i++) assert_true(hf[i] == bf(ha[i]));
    kiln_array *bfout = NULL;
    int64_t n = N;
    TEST_OK(kiln_array_empty(ctx, KILN_BFLOAT16, 1, &n, &bfout));
    kiln_status s = kiln_call(g, KILN_ARGS(kiln_arr(a)), &bfout);
    assert_int_not_equal(s, KILN_OK);
    kiln_array_release(bfout);
    kiln_array_release(out);
    kiln_ufunc_release(g);
    kiln_ufunc_release(f);
    kiln_array_release(a);
    kiln_array_release(b);
}

/* bfloat16 + float16 -> float32 (ml_dtypes, JAX); with itself, int8 or a
 * float scalar it stays bfloat16. */
static void test_promotion(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    int64_t n = 64;
    uint16_t hb[64], hh[64];
    int8_t hi[64];
    kiln_array *b = random_bf16(ctx, &rng, n, -2, 2, hb), *h = NULL, *i8 = NULL;
    for (int i = 0; i < 64; i++) {
        hh[i] = kiln_float_to_half((float)test_uniform(&rng, -2, 2));
        hi[i] = (int8_t)(i - 32);
    }
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT16, 1, &n, hh, sizeof hh, &h));
    TEST_OK(kiln_array_from_host(ctx, KILN_INT8, 1, &n, hi, sizeof hi, &i8));
    kiln_ufunc *add = NULL;
    TEST_OK(kiln_vectorize(ctx, "bf_add", "f2(f2, f2); bf16(bf16, bf16); f4(f4, f4); f8(f8, f8)", "x, y",
                           "return x + y;", NULL, &add));
    struct {
        kiln_value x, y;
        kiln_dtype want;
    } cases[] = {{kiln_arr(b), kiln_arr(h), KILN_FLOAT32},  {kiln_arr(h), kiln_arr(b), KILN_FLOAT32},
                 {kiln_arr(b), kiln_arr(b), KILN_BFLOAT16}, {kiln_arr(b), kiln_arr(i8), KILN_BFLOAT16},
                 {kiln_arr(b), kiln_i32(3), KILN_BFLOAT16}, {kiln_arr(h), kiln_arr(h), KILN_FLOAT16}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        kiln_array *r = NULL;
        kiln_value args[2] = {cases[k].x, cases[k].y};
        TEST_OK(kiln_call(add, args, 2, &r));
        if (kiln_array_dtype(r) != cases[k].want)
            fail_msg("case %zu: %s, expected %s", k, kiln_dtype_name(kiln_array_dtype(r)),
                     kiln_dtype_name(cases[k].want));
        if (k == 0) { /* exact in float32: both widen exactly and their sum fits */
            float got[64];
            TEST_OK(kiln_array_to_host(r, got, sizeof got));
            for (int i = 0; i < 64; i++) assert_true(got[i] == bf(hb[i]) + kiln_half_to_float(hh[i]));
        }
        kiln_array_release(r);
    }
    kiln_ufunc_release(add);
    kiln_array_release(b);
    kiln_array_release(h);
    kiln_array_release(i8);
}

static void test_fill_and_item(void **state) {
    kiln_context *ctx = *state;
    int64_t shape[2] = {3, 5};
    kiln_array *a = NULL;
    TEST_OK(kiln_array_full(ctx, KILN_BFLOAT16, 2, shape, 1.0 / 3.0, 0, &a));
    uint16_t h[15];
    TEST_OK(kiln_array_to_host(a, h, sizeof h));
    for (int i = 0; i < 15; i++) assert_int_equal(h[i], kiln_float_to_bfloat16(1.0f / 3.0f));
    kiln_array_release(a);
    a = NULL;
    TEST_FAILS_WITH(kiln_array_full(ctx, KILN_BFLOAT16, 2, shape, 3.4e38, 0, &a), KILN_ERR_INVALID_ARGUMENT,
                    "overflows bfloat16");
    TEST_OK(kiln_array_full(ctx, KILN_BFLOAT16, 2, shape, INFINITY, 0, &a));
    kiln_array *one = NULL, *s = NULL;
    TEST_OK(kiln_array_slice(a, 0, 1, 2, 1, &s));
    TEST_OK(kiln_array_slice(s, 1, 2, 3, 1, &one));
    double v = 0;
    TEST_OK(kiln_array_item_f64(one, &v));
    assert_true(isinf(v) && v > 0);
    kiln_array *arrs[] = {a, s, one};
    for (int i = 0; i < 3; i++) kiln_array_release(arrs[i]);
}

/* sum, mean, min, max: the result dtype of float16's rules (sum keeps
 * bfloat16, mean too), accumulated in float32 or wider, rounded once. */
static void test_reductions(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    enum { N = 4096 };
    static uint16_t h[N];
    kiln_array *a = random_bf16(ctx, &rng, N, -1, 1.5, h);
    long double sum = 0, mx = -INFINITY, mn = INFINITY, abs_sum = 0;
    for (int i = 0; i < N; i++) {
        long double x = bf(h[i]);
        sum += x;
        abs_sum += fabsl(x);
        if (x > mx) mx = x;
        if (x < mn) mn = x;
    }
    kiln_array *r = NULL;
    double v = 0;
    TEST_OK(kiln_sum(a, NULL, 0, 0, NULL, &r));
    assert_int_equal(kiln_array_dtype(r), KILN_BFLOAT16);
    TEST_OK(kiln_array_item_f64(r, &v));
    /* float32 accumulation: the result is the exact sum rounded to bfloat16 (+ float32 noise) */
    if (fabsl(v - sum) > ldexpl(fabsl(sum), -8) + ldexpl(abs_sum, -20)) fail_msg("sum %g vs %Lg", v, sum);
    kiln_array_release(r);
    r = NULL;
    TEST_OK(kiln_mean(a, NULL, 0, 0, NULL, &r));
    assert_int_equal(kiln_array_dtype(r), KILN_BFLOAT16);
    TEST_OK(kiln_array_item_f64(r, &v));
    if (fabsl(v - sum / N) > ldexpl(fabsl(sum / N), -8) + ldexpl(abs_sum / N, -20))
        fail_msg("mean %g vs %Lg", v, sum / N);
    kiln_array_release(r);
    r = NULL;
    TEST_OK(kiln_max(a, NULL, 0, 0, NULL, &r));
    TEST_OK(kiln_array_item_f64(r, &v));
    assert_true(v == (double)mx);
    kiln_array_release(r);
    r = NULL;
    TEST_OK(kiln_min(a, NULL, 0, 0, NULL, &r));
    TEST_OK(kiln_array_item_f64(r, &v));
    assert_true(v == (double)mn);
    kiln_array_release(r);
    /* the generated CUDA source of a bfloat16 sum compiles for sm_90 */
    rd_op op;
    TEST_OK(rd_builtin_op(KILN_REDUCE_SUM, KILN_BFLOAT16, 0, &op));
    char *src = NULL, *log = NULL;
    TEST_OK(rd_source_for(&op, KILN_BACKEND_CUDA, a, NULL, 0, &src));
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "reduce_bf16.cu", NULL, &log);
    if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING) fail_msg("NVRTC: %s\n%s", kiln_last_error(), src);
    free(src);
    kiln_free(log);
    kiln_array_release(a);
}

static void test_gufunc_and_nvrtc(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    int64_t shape[2] = {8, 16};
    uint16_t h[128], got[128];
    for (int i = 0; i < 128; i++) h[i] = kiln_float_to_bfloat16((float)test_uniform(&rng, -3, 3));
    kiln_array *x = NULL, *y = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_BFLOAT16, 2, shape, h, sizeof h, &x));
    kiln_gufunc *g = NULL;
    TEST_OK(kiln_guvectorize(ctx, "bf_scan", "void(bf16[:], bf16[:])", "(n)->(n)", "x, y",
                             "float acc = 0;\nfor (int i = 0; i < x.len; i++) { acc += x[i]; y[i] = acc; }",
                             NULL, &g));
    const kiln_value args[1] = {kiln_arr(x)};
    kiln_array *outs[1] = {NULL};
    TEST_OK(kiln_gufunc_call(g, args, 1, outs, NULL));
    y = outs[0];
    assert_int_equal(kiln_array_dtype(y), KILN_BFLOAT16);
    TEST_OK(kiln_array_to_host(y, got, sizeof got));
    for (int r = 0; r < 8; r++) {
        float acc = 0;
        for (int i = 0; i < 16; i++) {
            acc += bf(h[r * 16 + i]);
            assert_int_equal(got[r * 16 + i], kiln_float_to_bfloat16(acc));
        }
    }
    /* a bfloat16 scalar argument ("()"), passed as float */
    kiln_gufunc *g2 = NULL;
    kiln_array *z = NULL;
    TEST_OK(kiln_guvectorize(ctx, "bf_scale", "void(bf16[:], bf16, bf16[:])", "(n),()->(n)", "x, s, y",
                             "for (int i = 0; i < x.len; i++) y[i] = x[i] * s;", NULL, &g2));
    const kiln_value sargs[2] = {kiln_arr(x), kiln_bf16(-0.75f)};
    kiln_array *souts[1] = {NULL};
    TEST_OK(kiln_gufunc_call(g2, sargs, 2, souts, NULL));
    z = souts[0];
    TEST_OK(kiln_array_to_host(z, got, sizeof got));
    for (int i = 0; i < 128; i++) assert_int_equal(got[i], kiln_float_to_bfloat16(bf(h[i]) * -0.75f));
    kiln_array_release(z);
    kiln_gufunc_release(g2);
    char *src = NULL, *log = NULL;
    const kiln_value a1[1] = {kiln_arr(x)};
    TEST_OK(kiln_gufunc_source(g, "cuda", NULL, a1, 1, NULL, &src, NULL));
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "gufunc_bf16.cu", NULL, &log);
    if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING) fail_msg("NVRTC: %s\n%s", kiln_last_error(), src);
    kiln_free(src);
    kiln_free(log);
    /* a ufunc of bfloat16 with a float16 input beside it, for sm_90 */
    kiln_ufunc *f = NULL;
    TEST_OK(kiln_vectorize(ctx, "bf_mix", "bf16(bf16, f4); f4(f2, bf16)", "a, b", "return a * b;", NULL, &f));
    kiln_array *h16 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT16, 2, shape, &h16));
    const kiln_value u1[2] = {kiln_arr(x), kiln_f32(2)}, u2[2] = {kiln_arr(h16), kiln_arr(x)};
    const kiln_value *uargs[2] = {u1, u2};
    for (int k = 0; k < 2; k++) {
        TEST_OK(kiln_ufunc_source(f, "cuda", uargs[k], 2, NULL, &src));
        s = kiln_compile_only("cuda", "sm_90", src, "ufunc_bf16.cu", NULL, &log);
        if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING) fail_msg("NVRTC: %s\n%s", kiln_last_error(), src);
        kiln_free(src);
        kiln_free(log);
    }
    kiln_ufunc_release(f);
    kiln_gufunc_release(g);
    kiln_array_release(h16);
    kiln_array_release(x);
    kiln_array_release(y);
}

/* The libraries behind FFT and random numbers have no bfloat16: clear errors. */
static void test_refusals(void **state) {
    kiln_context *ctx = *state;
    int64_t n = 16;
    kiln_array *a = NULL, *out = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_BFLOAT16, 1, &n, &a));
    int axes[1] = {0};
    TEST_FAILS_WITH(kiln_rfftn(a, axes, 1, KILN_FFT_NORM_BACKWARD, &out), KILN_ERR_DTYPE, "bfloat16");
    kiln_rng *rng = NULL;
    TEST_OK(kiln_rng_create(ctx, KILN_RNG_PHILOX4_32_10, 7, &rng));
    TEST_FAILS_WITH(kiln_rng_uniform(rng, a), KILN_ERR_DTYPE, "not bfloat16");
    TEST_FAILS_WITH(kiln_rng_normal(rng, a, 0, 1), KILN_ERR_DTYPE, "float32 or float64");
    kiln_rng_release(rng);
    /* levels 1-2 of the BLAS: float32/float64/complex only (matmul and gemm take bfloat16) */
    kiln_blas_scalar d;
    TEST_FAILS_WITH(kiln_dot(NULL, a, a, &d), KILN_ERR_DTYPE, "bfloat16 is not a BLAS dtype");
    kiln_array_release(a);
}

/* matmul of bfloat16: cuBLAS on CUDA; on the CPU through float32 copies,
 * which the profile shows. */
static void test_matmul_route(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    int64_t s[2] = {12, 12};
    uint16_t h[144];
    for (int i = 0; i < 144; i++) h[i] = kiln_float_to_bfloat16((float)test_uniform(&rng, -1, 1));
    kiln_array *a = NULL, *c = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_BFLOAT16, 2, s, h, sizeof h, &a));
    TEST_OK(kiln_profiler_start(ctx));
    TEST_OK(kiln_profiler_reset(ctx));
    TEST_OK(kiln_matmul(a, a, &c));
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    TEST_OK(kiln_profiler_stop(ctx));
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    if (cuda ? !test_contains(text, "blas gemm bfloat16 [cuBLAS gemm]")
             : !test_contains(text, "blas via float32, copies in bfloat16 [kiln]") ||
                   !test_contains(text, "blas gemm float32 [OpenBLAS gemm]"))
        fail_msg("bfloat16 matmul route:\n%s", text);
    kiln_free(text);
    kiln_array_release(a);
    kiln_array_release(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_host_conversion),
        cmocka_unit_test(test_ufunc),
        cmocka_unit_test(test_promotion),
        cmocka_unit_test(test_fill_and_item),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_gufunc_and_nvrtc),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_matmul_route),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
