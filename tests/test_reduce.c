/* test_reduce.c: reductions and scans against long double references on
 * random data, on the backend under test (KILN_TEST_TARGET=cuda for the GPU
 * run), with every generated kernel also compiled through NVRTC for sm_90. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/text.h"
#include "reduce/reduce.h"
#include "reduce/scan.h"
#include "test_support.h"

static void nvrtc_flush(void);
/* The NVRTC batch of the test is checked here, after its other checks.
 * The cases share one context (the group fixtures of test_support.h), and
 * so the modules they compile. */
static int after_case(void **state) {
    (void)state;
    nvrtc_flush();
    return 0;
}

/* ---------------------------------------------------------------- host values */

static uint16_t to_half(double v) { return kiln_float_to_half((float)v); }
static long double from_half(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    long double v = e == 0 ? ldexpl(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpl(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static void put(kiln_dtype t, void *base, int64_t i, double v) {
    switch (t) {
    case KILN_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    case KILN_INT8: ((int8_t *)base)[i] = (int8_t)v; break;
    case KILN_INT16: ((int16_t *)base)[i] = (int16_t)v; break;
    case KILN_INT32: ((int32_t *)base)[i] = (int32_t)v; break;
    case KILN_INT64: ((int64_t *)base)[i] = (int64_t)v; break;
    case KILN_UINT8: ((uint8_t *)base)[i] = (uint8_t)v; break;
    case KILN_UINT16: ((uint16_t *)base)[i] = (uint16_t)v; break;
    case KILN_UINT32: ((uint32_t *)base)[i] = (uint32_t)v; break;
    case KILN_UINT64: ((uint64_t *)base)[i] = (uint64_t)v; break;
    case KILN_FLOAT16: ((uint16_t *)base)[i] = to_half(v); break;
    case KILN_BFLOAT16: ((uint16_t *)base)[i] = kiln_float_to_bfloat16((float)v); break;
    case KILN_FLOAT32: ((float *)base)[i] = (float)v; break;
    case KILN_FLOAT64: ((double *)base)[i] = v; break;
    case KILN_COMPLEX64:
        ((float *)base)[2 * i] = (float)v;
        ((float *)base)[2 * i + 1] = (float)(v * 0.5);
        break;
    default:
        ((double *)base)[2 * i] = v;
        ((double *)base)[2 * i + 1] = v * 0.5;
        break;
    }
}

static long double get(kiln_dtype t, const void *base, int64_t i) {
    switch (t) {
    case KILN_BOOL: return ((const uint8_t *)base)[i];
    case KILN_INT8: return ((const int8_t *)base)[i];
    case KILN_INT16: return ((const int16_t *)base)[i];
    case KILN_INT32: return ((const int32_t *)base)[i];
    case KILN_INT64: return (long double)((const int64_t *)base)[i];
    case KILN_UINT8: return ((const uint8_t *)base)[i];
    case KILN_UINT16: return ((const uint16_t *)base)[i];
    case KILN_UINT32: return ((const uint32_t *)base)[i];
    case KILN_UINT64: return (long double)((const uint64_t *)base)[i];
    case KILN_FLOAT16: return from_half(((const uint16_t *)base)[i]);
    case KILN_BFLOAT16: return kiln_bfloat16_to_float(((const uint16_t *)base)[i]);
    case KILN_FLOAT32: return ((const float *)base)[i];
    case KILN_COMPLEX64: return ((const float *)base)[2 * i];
    case KILN_COMPLEX128: return ((const double *)base)[2 * i];
    default: return ((const double *)base)[i];
    }
}

/* A random array of dtype t and shape; values small enough that int sums
 * and short products are exact. */
static kiln_array *random_array(kiln_context *ctx, test_rng *r, kiln_dtype t, int nd, const int64_t *shape,
                                int prod) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    size_t item = kiln_dtype_size(t);
    void *h = calloc((size_t)(n ? n : 1), item);
    char k = kiln_dtype_kind(t);
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (prod)
            v = k == 'f' || k == 'c' ? test_uniform(r, 0.6, 1.4)
                                     : (test_uniform(r, 0, 1) < 0.85 ? 1 : 2) *
                                           (k == 'i' && test_uniform(r, 0, 1) < 0.3 ? -1 : 1);
        else if (k == 'b')
            v = test_uniform(r, 0, 1) < 0.5;
        else if (k == 'u')
            v = floor(test_uniform(r, 0, 100));
        else if (k == 'i')
            v = floor(test_uniform(r, -100, 100));
        else
            v = test_uniform(r, -4, 4);
        put(t, h, i, v);
    }
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, nd, shape, h, (size_t)n * item, &a));
    free(h);
    return a;
}

/* The array's elements in C order as long double (real parts). */
static long double *host_values(kiln_array *a) {
    int64_t n = kiln_array_size(a);
    void *h = test_read_array(a);
    long double *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = get(kiln_array_dtype(a), h, i);
    free(h);
    return v;
}

/* ---------------------------------------------------------------- reference */

/* Reduces the C-order values x of shape over red[] with op; out[O] values. */
static void reference(kiln_reduce_op op, int ddof, const long double *x, int nd, const int64_t *shape,
                      const int *red, long double *out, int64_t O) {
    long double *acc = calloc((size_t)(O ? O : 1), sizeof *acc),
                *acc2 = calloc((size_t)(O ? O : 1), sizeof *acc2);
    long double *best = calloc((size_t)(O ? O : 1), sizeof *best);
    int64_t *cnt = calloc((size_t)(O ? O : 1), sizeof *cnt), *bi = calloc((size_t)(O ? O : 1), sizeof *bi);
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    for (int64_t o = 0; o < O; o++) {
        acc[o] = op == KILN_REDUCE_PROD || op == KILN_REDUCE_ALL ? 1 : 0;
        bi[o] = -1;
    }
    for (int pass = 0; pass < 2; pass++)
        for (int64_t i = 0; i < n; i++) {
            int64_t rem = i, o = 0, ow = 1, ri = 0, rw = 1;
            for (int d = nd - 1; d >= 0; d--) {
                int64_t c = rem % shape[d];
                rem /= shape[d];
                if (red[d]) {
                    ri += c * rw;
                    rw *= shape[d];
                } else {
                    o += c * ow;
                    ow *= shape[d];
                }
            }
            long double v = x[i];
            if (pass == 1) {
                if (op == KILN_REDUCE_VAR || op == KILN_REDUCE_STD) {
                    long double m = acc[o] / cnt[o];
                    acc2[o] += (v - m) * (v - m);
                }
                continue;
            }
            cnt[o]++;
            switch (op) {
            case KILN_REDUCE_PROD: acc[o] *= v; break;
            case KILN_REDUCE_ANY: acc[o] = acc[o] || v != 0; break;
            case KILN_REDUCE_ALL: acc[o] = acc[o] && v != 0; break;
            case KILN_REDUCE_MIN:
            case KILN_REDUCE_MAX:
            case KILN_REDUCE_ARGMIN:
            case KILN_REDUCE_ARGMAX: {
                int lo = op == KILN_REDUCE_MIN || op == KILN_REDUCE_ARGMIN;
                int take = bi[o] < 0;
                if (!take && !isnan(best[o]))
                    take = isnan(v) || (lo ? v < best[o] : v > best[o]) || (v == best[o] && ri < bi[o]);
                if (!take && isnan(best[o]) && isnan(v) && ri < bi[o]) take = 1;
                if (take) {
                    best[o] = v;
                    bi[o] = ri;
                }
                break;
            }
            default: acc[o] += v; break;
            }
        }
    for (int64_t o = 0; o < O; o++) {
        switch (op) {
        case KILN_REDUCE_MIN:
        case KILN_REDUCE_MAX: out[o] = best[o]; break;
        case KILN_REDUCE_ARGMIN:
        case KILN_REDUCE_ARGMAX: out[o] = (long double)bi[o]; break;
        case KILN_REDUCE_MEAN: out[o] = acc[o] / cnt[o]; break;
        case KILN_REDUCE_VAR: out[o] = acc2[o] / (cnt[o] - ddof); break;
        case KILN_REDUCE_STD: out[o] = sqrtl(acc2[o] / (cnt[o] - ddof)); break;
        default: out[o] = acc[o]; break;
        }
    }
    free(acc);
    free(acc2);
    free(best);
    free(cnt);
    free(bi);
}

static double tolerance(kiln_dtype in, kiln_dtype out) {
    kiln_dtype t = kiln_dtype_kind(out) == 'f' || kiln_dtype_kind(out) == 'c' ? out : in;
    if (t == KILN_FLOAT16) return 2e-3;
    if (t == KILN_BFLOAT16) return 1.6e-2; /* 2^-8 per rounding, the output's twice */
    if (t == KILN_FLOAT32 || t == KILN_COMPLEX64) return 2e-6;
    if (kiln_dtype_kind(t) == 'f' || kiln_dtype_kind(t) == 'c') return 1e-13;
    return 0;
}

/* The generated CUDA sources of the calls go through NVRTC sm_90 (CI has
 * the toolkit; a machine without one skips the check, as test_examples
 * does) in batches: each source in a namespace of its own, its headers'
 * guards reset, so one NVRTC run checks up to NVRTC_BATCH modules (each run
 * costs a front end and a prelude). */
#define NVRTC_BATCH 16
static kiln_text nvrtc_text;
static int nvrtc_count;
static char nvrtc_names[512];

static void nvrtc_flush(void) {
    if (nvrtc_count == 0) return;
    char *log = NULL;
    /* a check that they compile, not a build to run: NVRTC's fast mode (34 s for the suite, 45 without) */
    kiln_status s = kiln_compile_only("cuda", "sm_90", nvrtc_text.data, "batch.cu", "--fast-compile", &log);
    if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING)
        fail_msg("one of %s did not compile through NVRTC: %s", nvrtc_names, kiln_last_error());
    kiln_free(log);
    kiln_text_free(&nvrtc_text);
    memset(&nvrtc_text, 0, sizeof nvrtc_text);
    nvrtc_count = 0;
    nvrtc_names[0] = '\0';
}

static void nvrtc_add(const char *name, char *src) {
    kiln_text_printf(&nvrtc_text,
                     "namespace kiln_batch%d {\n#undef KILN_UF_COMMON\n#undef KILN_RD_COMMON\n#undef "
                     "KILN_RD_GPU\n%s\n}\n",
                     nvrtc_count, src);
    size_t n = strlen(nvrtc_names);
    snprintf(nvrtc_names + n, sizeof nvrtc_names - n, "%s%s", n ? ", " : "", name);
    free(src);
    if (++nvrtc_count == NVRTC_BATCH) nvrtc_flush();
}

static void nvrtc_reduce(const rd_op *op, kiln_array *a, const int *axes, int naxes) {
    char *src = NULL;
    TEST_OK(rd_source_for(op, KILN_BACKEND_CUDA, a, axes, naxes, &src));
    nvrtc_add(op->name, src);
}

/* Runs op over axes of a and compares with the reference of a's values. */
static void check_reduce(kiln_context *ctx, kiln_reduce_op op, kiln_array *a, const int *axes, int naxes,
                         int keepdims, int ddof, int nvrtc) {
    (void)ctx;
    int nd = kiln_array_ndim(a), red[KILN_MAX_DIMS];
    const int64_t *shape = kiln_array_shape(a);
    TEST_OK(rd_parse_axes(nd, axes, naxes, "test", red));
    int64_t O = 1;
    for (int d = 0; d < nd; d++)
        if (!red[d]) O *= shape[d];
    long double *x = host_values(a);
    long double *ref = calloc((size_t)(O ? O : 1), sizeof *ref);
    reference(op, ddof, x, nd, shape, red, ref, O);
    kiln_reduce_opts o = {axes, naxes, keepdims, NULL, ddof, NULL};
    kiln_array *r = NULL;
    TEST_OK(kiln_reduce(op, a, &o, &r));
    assert_int_equal(kiln_array_size(r), O);
    long double *got = host_values(r);
    rd_op spec;
    TEST_OK(rd_builtin_op(op, kiln_array_dtype(a), ddof, &spec));
    assert_int_equal(kiln_array_dtype(r), spec.out_dtype);
    double tol = tolerance(kiln_array_dtype(a), spec.out_dtype);
    /* scale: sums are compared relative to the sum of magnitudes */
    long double scale = 1;
    int64_t n = kiln_array_size(a);
    for (int64_t i = 0; i < n; i++) scale += fabsl(x[i]);
    if (op != KILN_REDUCE_SUM) scale = 4;
    if (op == KILN_REDUCE_PROD) scale = 64;
    for (int64_t i = 0; i < O; i++) {
        long double e = ref[i], g = got[i];
        if (isnan(e) && isnan(g)) continue;
        long double allowed = op == KILN_REDUCE_PROD ? tol * 64 * (1 + fabsl(e))
                              : op == KILN_REDUCE_SUM
                                  ? tol * scale
                                  : tol * 4 * (1 + fabsl(e)) * (op == KILN_REDUCE_MEAN ? scale : 1);
        if (fabsl(e - g) > allowed)
            fail_msg("%s of %s (%lld elements) output %lld: got %.17Lg, expected %.17Lg", spec.name,
                     kiln_dtype_name(kiln_array_dtype(a)), (long long)n, (long long)i, g, e);
    }
    if (keepdims) assert_int_equal(kiln_array_ndim(r), nd);
    if (nvrtc) nvrtc_reduce(&spec, a, axes, naxes);
    kiln_array_release(r);
    free(x);
    free(ref);
    free(got);
}

/* ---------------------------------------------------------------- tests */

/* Every dtype with sum, max and mean (the dtype rules) over the last axis;
 * float32 with every operation over the last axis, sum and argmax over
 * every axis combination and the others over two more each, in rotation
 * (float64 and int32 go through the same layouts in test_views_and_large
 * and test_output_array). KILN_REDUCE_FULL_TEST=1 runs the whole matrix
 * (each case is a kernel compiled on a cold cache, so the default keeps CI
 * near a minute). */
static void test_every_dtype_and_op(void **state) {
    (void)state;
    test_rng r = test_rng_for(__func__);
    int64_t shape[3] = {5, 37, 23};
    const int ax_last[] = {-1}, ax_first[] = {0}, ax_mid[] = {1}, ax_two[] = {0, 2};
    int full = getenv("KILN_REDUCE_FULL_TEST") != NULL;
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
        /* a context per dtype: its modules are unloaded with it, so the
         * process never holds hundreds of JIT libraries at once (LeakSanitizer's
         * tracer crashes on a large dynamic-TLS vector) */
        kiln_context *ctx = test_open();
        int deep = full || t == KILN_FLOAT32;
        for (int op = 0; op < KILN_REDUCE_OP_COUNT; op++) {
            rd_op spec;
            if (kiln_dtype_kind((kiln_dtype)t) == 'c' &&
                rd_builtin_op((kiln_reduce_op)op, (kiln_dtype)t, 0, &spec) != KILN_OK)
                continue;
            int shallow = op == KILN_REDUCE_SUM || op == KILN_REDUCE_MAX || op == KILN_REDUCE_MEAN;
            if (!deep && !shallow) continue;
            kiln_array *a = random_array(ctx, &r, (kiln_dtype)t, 3, shape, op == KILN_REDUCE_PROD);
            int nv = t == KILN_FLOAT32;   /* NVRTC pass on a subset keeps the test short */
            if (op == KILN_REDUCE_PROD) { /* short reductions: products stay exact */
                check_reduce(ctx, (kiln_reduce_op)op, a, ax_first, 1, 0, 0, nv);
            } else {
                check_reduce(ctx, (kiln_reduce_op)op, a, ax_last, 1, 1, 1, nv);
                /* sum and argmax (plain and index accumulators) over every
                 * axis set; every other operation over two more sets, in
                 * rotation, so that each set meets several accumulator kinds
                 * (each case is a module compiled cold in CI) */
                int every = full || op == KILN_REDUCE_SUM || op == KILN_REDUCE_ARGMAX;
                int extra1 = 1 + op % 4, extra2 = 1 + (op + 2) % 4;
                for (int set = 1; deep && set <= 4; set++) {
                    if (!every && set != extra1 && set != extra2) continue;
                    if (set == 1) check_reduce(ctx, (kiln_reduce_op)op, a, NULL, 0, 0, 0, nv);
                    if (set == 2) check_reduce(ctx, (kiln_reduce_op)op, a, ax_first, 1, 0, 1, nv);
                    if (set == 3) check_reduce(ctx, (kiln_reduce_op)op, a, ax_mid, 1, 0, 0, nv);
                    if (set == 4) check_reduce(ctx, (kiln_reduce_op)op, a, ax_two, 2, 1, 0, nv);
                }
            }
            kiln_array_release(a);
        }
        kiln_close(ctx);
    }
}

static void test_views_and_large(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    int64_t shape[2] = {301, 517};
    kiln_array *a = random_array(ctx, &r, KILN_FLOAT64, 2, shape, 0), *t = NULL, *s = NULL;
    int perm[2] = {1, 0};
    TEST_OK(kiln_array_transpose(a, perm, &t));
    TEST_OK(kiln_array_slice(a, 1, 3, 500, 3, &s));
    const int ax0[] = {0}, ax1[] = {1};
    /* each operation over two of the four view cases, in rotation: every
     * case meets four operations, index accumulators included */
    int full = getenv("KILN_REDUCE_FULL_TEST") != NULL, k = 0;
    for (int op = 0; op < KILN_REDUCE_OP_COUNT; op++) {
        if (op == KILN_REDUCE_PROD || op == KILN_REDUCE_ANY || op == KILN_REDUCE_STD) continue;
        for (int c = 0; c < 4; c++) {
            if (!full && c != k % 4 && c != (k + 1) % 4) continue;
            if (c == 0) check_reduce(ctx, (kiln_reduce_op)op, t, ax0, 1, 0, 0, 1);
            if (c == 1) check_reduce(ctx, (kiln_reduce_op)op, t, ax1, 1, 0, 0, 0);
            if (c == 2) check_reduce(ctx, (kiln_reduce_op)op, s, NULL, 0, 0, 0, 1);
            if (c == 3) check_reduce(ctx, (kiln_reduce_op)op, s, ax0, 1, 0, 0, 0);
        }
        k++;
    }
    kiln_array_release(t);
    kiln_array_release(s);
    kiln_array_release(a);
    /* large enough to be split over blocks, with a second pass */
    int64_t big[1] = {3000017};
    kiln_array *b = random_array(ctx, &r, KILN_FLOAT32, 1, big, 0);
    const kiln_reduce_op big_ops[] = {KILN_REDUCE_SUM,  KILN_REDUCE_MIN, KILN_REDUCE_ARGMAX,
                                      KILN_REDUCE_MEAN, KILN_REDUCE_VAR, KILN_REDUCE_ALL};
    for (size_t i = 0; i < sizeof big_ops / sizeof *big_ops; i++)
        check_reduce(ctx, big_ops[i], b, NULL, 0, 0, 0, 0);
    kiln_array_release(b);
    int64_t tall[2] = {20011, 7};
    kiln_array *c = random_array(ctx, &r, KILN_FLOAT32, 2, tall, 0);
    check_reduce(ctx, KILN_REDUCE_SUM, c, ax0, 1, 0, 0, 1);
    check_reduce(ctx, KILN_REDUCE_ARGMAX, c, ax0, 1, 0, 0, 1);
    kiln_array_release(c);
}

static void test_empty_and_size_one(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    int64_t shape[3] = {4, 0, 3};
    kiln_array *a = random_array(ctx, &r, KILN_FLOAT32, 3, shape, 0), *res = NULL;
    const int ax1[] = {1}, ax2[] = {2};
    TEST_OK(kiln_sum(a, ax1, 1, 0, NULL, &res));
    float v[12];
    TEST_OK(kiln_array_to_host(res, v, sizeof v));
    for (int i = 0; i < 12; i++) assert_true(v[i] == 0.0f);
    kiln_array_release(res);
    TEST_OK(kiln_prod(a, ax1, 1, 0, NULL, &res));
    TEST_OK(kiln_array_to_host(res, v, sizeof v));
    for (int i = 0; i < 12; i++) assert_true(v[i] == 1.0f);
    kiln_array_release(res);
    TEST_OK(kiln_mean(a, ax1, 1, 0, NULL, &res));
    TEST_OK(kiln_array_to_host(res, v, sizeof v));
    assert_true(isnan(v[0]));
    kiln_array_release(res);
    /* an empty result needs no identity */
    TEST_OK(kiln_min(a, ax2, 1, 0, NULL, &res));
    assert_int_equal(kiln_array_size(res), 0);
    kiln_array_release(res);
    TEST_FAILS_WITH(kiln_min(a, ax1, 1, 0, NULL, &res), KILN_ERR_INVALID_ARGUMENT, "no identity");
    TEST_FAILS_WITH(kiln_argmax(a, NULL, 0, 0, NULL, &res), KILN_ERR_INVALID_ARGUMENT, "zero-size");
    kiln_array_release(a);
    int64_t ones[3] = {1, 6, 1};
    kiln_array *b = random_array(ctx, &r, KILN_INT32, 3, ones, 0);
    const int ax0[] = {0};
    check_reduce(ctx, KILN_REDUCE_SUM, b, ax0, 1, 1, 0, 1);
    check_reduce(ctx, KILN_REDUCE_ARGMIN, b, NULL, 0, 0, 0, 0);
    check_reduce(ctx, KILN_REDUCE_MAX, b, ax2, 1, 0, 0, 0);
    kiln_array_release(b);
}

static void test_nan(void **state) {
    kiln_context *ctx = *state;
    double h[12] = {1, 5, NAN, 2, -3, NAN, 7, 0, 9, 9, -1, 4};
    int64_t shape[2] = {3, 4};
    kiln_array *a = NULL, *r = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 2, shape, h, sizeof h, &a));
    double m = 0;
    TEST_OK(kiln_max(a, NULL, 0, 0, NULL, &r));
    TEST_OK(kiln_array_item_f64(r, &m));
    assert_true(isnan(m));
    kiln_array_release(r);
    TEST_OK(kiln_argmax(a, NULL, 0, 0, NULL, &r));
    TEST_OK(kiln_array_item_f64(r, &m));
    assert_int_equal((int)m, 2); /* the first NaN */
    kiln_array_release(r);
    const int ax1[] = {1};
    int64_t idx[3];
    TEST_OK(kiln_argmin(a, ax1, 1, 0, NULL, &r));
    TEST_OK(kiln_array_to_host(r, idx, sizeof idx));
    assert_int_equal(idx[0], 2);
    assert_int_equal(idx[1], 1);
    assert_int_equal(idx[2], 2);
    kiln_array_release(r);
    double mn[3];
    TEST_OK(kiln_min(a, ax1, 1, 0, NULL, &r));
    TEST_OK(kiln_array_to_host(r, mn, sizeof mn));
    assert_true(isnan(mn[0]) && isnan(mn[1]) && mn[2] == -1);
    kiln_array_release(r);
    /* ties: the first index */
    TEST_OK(kiln_argmax(a, ax1, 1, 0, NULL, &r));
    TEST_OK(kiln_array_to_host(r, idx, sizeof idx));
    assert_int_equal(idx[2], 0);
    kiln_array_release(r);
    kiln_array_release(a);
}

static void test_adversarial_sums(void **state) {
    kiln_context *ctx = *state;
    int64_t n = getenv("KILN_REDUCE_BIG") ? 100000000 : 20000000;
    kiln_array *a = NULL, *r = NULL, *r2 = NULL;
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT32, 1, &n, 1.0, 0.0, &a));
    double v = 0, v2 = 0;
    TEST_OK(kiln_sum(a, NULL, 0, 0, NULL, &r));
    TEST_OK(kiln_array_item_f64(r, &v));
    assert_true(v == (double)n); /* sequential float32 would stop at 2^24 */
    TEST_OK(kiln_sum(a, NULL, 0, 0, NULL, &r2));
    TEST_OK(kiln_array_item_f64(r2, &v2));
    assert_true(v == v2);
    kiln_array_release(r);
    kiln_array_release(r2);
    TEST_OK(kiln_mean(a, NULL, 0, 0, NULL, &r));
    TEST_OK(kiln_array_item_f64(r, &v));
    assert_true(v == 1.0);
    kiln_array_release(r);
    kiln_array_release(a);
    /* 1 followed by many tiny values: pairwise keeps them */
    int64_t m = 1 << 22;
    float *h = malloc(sizeof *h * (size_t)m);
    long double ref = 0;
    test_rng rng = test_rng_for(__func__);
    for (int64_t i = 0; i < m; i++) {
        h[i] = i == 0 ? 1.0f : (float)test_uniform(&rng, 0, 1e-7);
        ref += h[i];
    }
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &m, h, sizeof *h * (size_t)m, &a));
    TEST_OK(kiln_sum(a, NULL, 0, 0, NULL, &r));
    TEST_OK(kiln_array_item_f64(r, &v));
    assert_true(fabsl((long double)v - ref) < 1e-5L * ref);
    kiln_array_release(r);
    kiln_array_release(a);
    free(h);
}

static void test_output_array(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    int64_t shape[2] = {6, 9}, oshape[1] = {9}, bad[1] = {6};
    kiln_array *a = random_array(ctx, &r, KILN_INT32, 2, shape, 0), *out = NULL, *res = NULL;
    const int ax0[] = {0};
    TEST_OK(kiln_array_zeros(ctx, KILN_INT64, 1, oshape, &out));
    TEST_OK(kiln_sum(a, ax0, 1, 0, out, &res));
    assert_ptr_equal(res, out);
    kiln_array_release(res);
    long double *x = host_values(a), *got = host_values(out);
    for (int j = 0; j < 9; j++) {
        long double s = 0;
        for (int i = 0; i < 6; i++) s += x[i * 9 + j];
        assert_true(s == got[j]);
    }
    free(got);
    kiln_array *bad_out = NULL, *i32 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_INT64, 1, bad, &bad_out));
    TEST_FAILS_WITH(kiln_sum(a, ax0, 1, 0, bad_out, NULL), KILN_ERR_SHAPE, "shape (6,)");
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, oshape, &i32));
    TEST_FAILS_WITH(kiln_sum(a, ax0, 1, 0, i32, NULL), KILN_ERR_DTYPE, "int64");
    const int out_of_range[] = {2}, twice[] = {1, -1};
    TEST_FAILS_WITH(kiln_sum(a, out_of_range, 1, 0, NULL, &res), KILN_ERR_INVALID_ARGUMENT,
                    "axis 2 is out of range");
    TEST_FAILS_WITH(kiln_sum(a, twice, 2, 0, NULL, &res), KILN_ERR_INVALID_ARGUMENT, "given twice");
    kiln_array_release(bad_out);
    kiln_array_release(i32);
    kiln_array_release(out);
    kiln_array_release(a);
    free(x);
}

/* got[i] against the L2 norm of row i of x (rows x cols), to relative tol. */
static void check_row_norms(const long double *x, const long double *got, int rows, int cols,
                            long double tol) {
    for (int i = 0; i < rows; i++) {
        long double s = 0;
        for (int j = 0; j < cols; j++) s += x[i * cols + j] * x[i * cols + j];
        assert_true(fabsl(got[i] - sqrtl(s)) < tol * sqrtl(s));
    }
}

static void test_user_reductions(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    kiln_reduction_spec l2 = {.in_params = "f4 x",
                              .out_type = "f4",
                              .acc_type = "double",
                              .map_expr = "(double)x * x",
                              .reduce_expr = "a + b",
                              .post_expr = "sqrt(a)",
                              .identity = "0"};
    kiln_reduction_kernel *norm = NULL, *lse = NULL, *dot = NULL;
    TEST_OK(kiln_reduction_kernel_create(ctx, "l2norm", &l2, &norm));
    int64_t shape[2] = {33, 1000};
    kiln_array *a = random_array(ctx, &r, KILN_FLOAT32, 2, shape, 0), *res = NULL;
    long double *x = host_values(a);
    const int ax1[] = {1};
    kiln_reduce_opts o = {ax1, 1, 0, NULL, 0, NULL};
    TEST_OK(kiln_reduction_kernel_call(norm, KILN_ARGS(kiln_arr(a)), &o, &res));
    long double *got = host_values(res);
    check_row_norms(x, got, 33, 1000, 1e-5L);
    free(got);
    kiln_array_release(res);
    /* logsumexp: a one-pass accumulator (running max, scaled sum) from the preamble */
    kiln_reduction_spec lsespec = {
        .in_params = "f8 x",
        .out_type = "f8",
        .acc_type = "lse_acc",
        .preamble =
            "struct lse_acc { double m, s; };\n"
            "KILN_RD_FN lse_acc lse_make(double m, double s) { lse_acc r; r.m = m; r.s = s; return r; }\n"
            "KILN_RD_FN lse_acc lse_merge(lse_acc a, lse_acc b) {\n"
            "    if (a.s == 0) return b;\n    if (b.s == 0) return a;\n"
            "    double m = a.m > b.m ? a.m : b.m;\n"
            "    return lse_make(m, a.s * exp(a.m - m) + b.s * exp(b.m - m));\n}\n",
        .map_expr = "lse_make(x, 1.0)",
        .reduce_expr = "lse_merge(a, b)",
        .post_expr = "a.m + log(a.s)",
        .identity = "lse_make(0.0, 0.0)"};
    TEST_OK(kiln_reduction_kernel_create(ctx, "logsumexp", &lsespec, &lse));
    kiln_array *d = random_array(ctx, &r, KILN_FLOAT64, 2, shape, 0);
    long double *xd = host_values(d);
    const int ax0[] = {0};
    kiln_reduce_opts o0 = {ax0, 1, 0, NULL, 0, NULL};
    TEST_OK(kiln_reduction_kernel_call(lse, KILN_ARGS(kiln_arr(d)), &o0, &res));
    got = host_values(res);
    for (int j = 0; j < 1000; j++) {
        long double s = 0;
        for (int i = 0; i < 33; i++) s += expl(xd[i * 1000 + j]);
        assert_true(fabsl(got[j] - logl(s)) < 1e-12L * fabsl(logl(s)) + 1e-12L);
    }
    free(got);
    kiln_array_release(res);
    /* the same operators through NVRTC for sm_90 */
    nvrtc_reduce(rd_kernel_op(norm), a, ax1, 1);
    nvrtc_reduce(rd_kernel_op(lse), d, ax0, 1);
    /* two inputs broadcast, and a scalar */
    kiln_reduction_spec dspec = {.in_params = "f8 x, f8 y, f8 w",
                                 .out_type = "f8",
                                 .map_expr = "x * y * w",
                                 .reduce_expr = "a + b",
                                 .identity = "0"};
    TEST_OK(kiln_reduction_kernel_create(ctx, "wdot", &dspec, &dot));
    int64_t row[1] = {1000};
    kiln_array *y = random_array(ctx, &r, KILN_FLOAT64, 1, row, 0);
    long double *yv = host_values(y);
    TEST_OK(kiln_reduction_kernel_call(dot, KILN_ARGS(kiln_arr(d), kiln_arr(y), kiln_f64(2.0)), &o, &res));
    got = host_values(res);
    for (int i = 0; i < 33; i++) {
        long double s = 0;
        for (int j = 0; j < 1000; j++) s += xd[i * 1000 + j] * yv[j] * 2;
        assert_true(fabsl(got[i] - s) < 1e-12L * 1000 * 16);
    }
    free(got);
    kiln_array_release(res);
    /* NVRTC: the same text for sm_90 */
    free(yv);
    free(xd);
    free(x);
    kiln_array_release(y);
    kiln_array_release(d);
    kiln_array_release(a);
    kiln_reduction_kernel_release(norm);
    kiln_reduction_kernel_release(lse);
    kiln_reduction_kernel_release(dot);
}

static void test_user_compile_error_lines(void **state) {
    kiln_context *ctx = *state;
    kiln_reduction_spec bad = {.in_params = "f4 x",
                               .out_type = "f4",
                               .map_expr = "x",
                               .reduce_expr = "a +\n b +\n undefined_thing",
                               .identity = "0"};
    kiln_reduction_kernel *k = NULL;
    /* the host compiler writes file:line, NVRTC file(line) */
    int nvrtc = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    TEST_FAILS_WITH(kiln_reduction_kernel_create(ctx, "badred", &bad, &k), KILN_ERR_COMPILE,
                    nvrtc ? "badred.reduce(3)" : "badred.reduce:3");
    kiln_reduction_spec bad_type = {
        .in_params = "f4", .out_type = "f4", .map_expr = "x", .reduce_expr = "a+b", .identity = "0"};
    TEST_FAILS_WITH(kiln_reduction_kernel_create(ctx, "badty", &bad_type, &k), KILN_ERR_SIGNATURE,
                    "in_params");
    kiln_scan_kernel *s = NULL;
    TEST_FAILS_WITH(kiln_scan_kernel_create(ctx, "badscan", "f8", "a\n + nope(b)", "0", NULL, &s),
                    KILN_ERR_COMPILE, nvrtc ? "badscan.op(2)" : "badscan.op:2");
}

/* Scans: reference in long double, every op, axes, exclusive, user op. */
static void check_scan(kiln_context *ctx, kiln_scan_op op, kiln_array *a, int axis, int excl) {
    (void)ctx;
    int nd = kiln_array_ndim(a);
    const int64_t *shape = kiln_array_shape(a);
    long double *x = host_values(a);
    int64_t n = kiln_array_size(a);
    kiln_array *r = NULL;
    TEST_OK(kiln_scan(op, a, axis, excl, NULL, NULL, &r));
    long double *got = host_values(r);
    int flat = axis == KILN_AXIS_FLAT;
    if (!flat && axis < 0) axis += nd;
    int64_t L = flat ? n : shape[axis], inner = 1;
    for (int d = flat ? nd : axis + 1; d < nd; d++) inner *= shape[d];
    double tol = tolerance(kiln_array_dtype(a), kiln_array_dtype(r));
    for (int64_t base = 0; base < n; base++) {
        if (L == 0 || (base / inner) % L != 0) continue; /* row starts */
        long double acc = op == KILN_SCAN_PROD  ? 1
                          : op == KILN_SCAN_MIN ? INFINITY
                          : op == KILN_SCAN_MAX ? -INFINITY
                                                : 0;
        for (int64_t l = 0; l < L; l++) {
            int64_t i = base + l * inner;
            long double prev = acc, v = x[i];
            if (op == KILN_SCAN_SUM) acc += v;
            if (op == KILN_SCAN_PROD) acc *= v;
            if (op == KILN_SCAN_MIN) acc = v < acc ? v : acc;
            if (op == KILN_SCAN_MAX) acc = v > acc ? v : acc;
            long double e = excl ? prev : acc;
            if (isinf(e) && excl) continue;
            if (fabsl(got[i] - e) > tol * (16 + fabsl(e) * 4 + l))
                fail_msg("scan %d of %s axis %d: element %lld got %.17Lg expected %.17Lg", (int)op,
                         kiln_dtype_name(kiln_array_dtype(a)), axis, (long long)i, got[i], e);
        }
    }
    free(x);
    free(got);
    kiln_array_release(r);
}

/* The scan's generated CUDA source (single pass forced) through NVRTC sm_90. */
static void nvrtc_scan(const sc_op *op, kiln_array *a, int axis) {
    char *src = NULL;
    TEST_OK(sc_source_for(op, KILN_BACKEND_CUDA, a, axis, &src));
    nvrtc_add(op->name, src);
}

static void test_scans(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    int64_t shape[3] = {7, 300, 11};
    kiln_dtype types[] = {KILN_FLOAT32, KILN_INT32, KILN_UINT8, KILN_FLOAT16};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
        for (int op = 0; op <= KILN_SCAN_MAX; op++) {
            kiln_array *a = random_array(ctx, &r, types[t], 3, shape, op == KILN_SCAN_PROD);
            if (op != KILN_SCAN_PROD) {
                check_scan(ctx, (kiln_scan_op)op, a, 1, 0);
                check_scan(ctx, (kiln_scan_op)op, a, 0, 1);
                check_scan(ctx, (kiln_scan_op)op, a, -1, 0);
                check_scan(ctx, (kiln_scan_op)op, a, KILN_AXIS_FLAT, 0);
            } else {
                check_scan(ctx, (kiln_scan_op)op, a, 0, 0);
            }
            kiln_array_release(a);
        }
    /* complex128 cumsum (real parts checked): a 16-byte scan value, published
     * as value, fence, flag by CUDA's single pass */
    {
        int64_t cshape[3] = {7, 300, 11};
        kiln_array *c = random_array(ctx, &r, KILN_COMPLEX128, 3, cshape, 0);
        check_scan(ctx, KILN_SCAN_SUM, c, KILN_AXIS_FLAT, 0);
        check_scan(ctx, KILN_SCAN_SUM, c, KILN_AXIS_FLAT, 1);
        kiln_array_release(c);
    }
    /* a long row: CUDA's single pass with two groups of tiles (float64:
     * 4096 per tile, 256 tiles per group), the CPU's three passes */
    int64_t big = 1100000;
    kiln_array *b = random_array(ctx, &r, KILN_FLOAT64, 1, &big, 0);
    check_scan(ctx, KILN_SCAN_SUM, b, 0, 0);
    check_scan(ctx, KILN_SCAN_SUM, b, 0, 1);
    check_scan(ctx, KILN_SCAN_MAX, b, 0, 0);
    /* long float32 rows (float64 carries): on CUDA several groups of tiles
     * per row, a partial last tile, and the same bits on a second run */
    int64_t rows[2] = {2, 2200007}; /* float32: 8192 per tile, 269 tiles per row */
    kiln_array *f = random_array(ctx, &r, KILN_FLOAT32, 2, rows, 0), *f1 = NULL, *f2 = NULL;
    check_scan(ctx, KILN_SCAN_SUM, f, 1, 0);
    check_scan(ctx, KILN_SCAN_SUM, f, -1, 1);
    TEST_OK(kiln_cumsum(f, 1, NULL, &f1));
    TEST_OK(kiln_cumsum(f, 1, NULL, &f2));
    void *h1 = test_read_array(f1), *h2 = test_read_array(f2);
    assert_memory_equal(h1, h2, sizeof(float) * 2 * 2200007);
    free(h1);
    free(h2);
    kiln_array_release(f1);
    kiln_array_release(f2);
    kiln_array_release(f);
    /* NVRTC: the single-pass CUDA kernels, for value types of every size
     * (1-byte values, float64 carries of float32 data, the has-a-value
     * wrapper of complex128: 24 bytes) */
    const sc_op ops[] = {
        {.name = "cumsum",
         .in_dtype = KILN_FLOAT64,
         .out_dtype = KILN_FLOAT64,
         .combine = "a + b",
         .identity = "kiln_sc_v()"},
        {.name = "cumsum",
         .in_dtype = KILN_FLOAT32,
         .out_dtype = KILN_FLOAT32,
         .combine = "a + b",
         .identity = "kiln_sc_v()",
         .acc_f64 = 1},
        {.name = "cummax",
         .in_dtype = KILN_UINT8,
         .out_dtype = KILN_UINT8,
         .combine = "kiln_rd_max(a, b)",
         .identity = "(uint8_t)0"},
        {.name = "cumsum",
         .in_dtype = KILN_INT32,
         .out_dtype = KILN_INT64,
         .combine = "a + b",
         .identity = "kiln_sc_v()"},
        {.name = "cumsum",
         .in_dtype = KILN_FLOAT16,
         .out_dtype = KILN_FLOAT16,
         .combine = "a + b",
         .identity = "kiln_sc_v()",
         .acc_f64 = 1},
        {.name = "accum", .in_dtype = KILN_COMPLEX128, .out_dtype = KILN_COMPLEX128, .combine = "a * b"},
        {.name = "cumsum",
         .in_dtype = KILN_COMPLEX128,
         .out_dtype = KILN_COMPLEX128,
         .combine = "a + b",
         .identity = "kiln_sc_v()"},
        {.name = "accum", .in_dtype = KILN_FLOAT64, .out_dtype = KILN_FLOAT64, .combine = "a * b"},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        kiln_array *x = NULL;
        int64_t shape2[2] = {3, 5000};
        TEST_OK(kiln_array_zeros(ctx, ops[i].in_dtype, 2, shape2, &x));
        nvrtc_scan(&ops[i], x, 1);
        kiln_array_release(x);
    }
    kiln_array_release(b);
    /* a user operator: running maximum of |x| */
    kiln_scan_kernel *k = NULL;
    TEST_OK(kiln_scan_kernel_create(ctx, "absmax", "f8", "fabs(a) > fabs(b) ? fabs(a) : fabs(b)", NULL, NULL,
                                    &k));
    int64_t n = 100000;
    kiln_array *c = random_array(ctx, &r, KILN_FLOAT64, 1, &n, 0), *res = NULL;
    TEST_OK(kiln_scan_kernel_call(k, c, 0, 0, NULL, &res));
    long double *x = host_values(c), *got = host_values(res), m = x[0];
    for (int64_t i = 0; i < n; i++) {
        if (i > 0) m = fabsl(m) > fabsl(x[i]) ? fabsl(m) : fabsl(x[i]); /* NumPy: out[0] = x[0] */
        assert_true(got[i] == m);
    }
    TEST_FAILS_WITH(kiln_scan_kernel_call(k, c, 0, 1, NULL, &res), KILN_ERR_INVALID_ARGUMENT, "identity");
    nvrtc_scan(sc_kernel_op(k), c, 0);
    free(x);
    free(got);
    kiln_array_release(res);
    kiln_array_release(c);
    kiln_scan_kernel_release(k);
}

static void test_ufunc_reduce_accumulate(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    kiln_ufunc *hyp = NULL;
    TEST_OK(kiln_vectorize(ctx, "hypot2", "f8(f8,f8); f4(f4,f4)", "a, b", "return sqrt(a * a + b * b);", NULL,
                           &hyp));
    int64_t shape[2] = {40, 513};
    kiln_array *a = random_array(ctx, &r, KILN_FLOAT64, 2, shape, 0), *res = NULL;
    long double *x = host_values(a);
    const int ax1[] = {1};
    kiln_reduce_opts o = {ax1, 1, 0, NULL, 0, NULL};
    TEST_OK(kiln_ufunc_reduce(hyp, a, NULL, &o, &res));
    long double *got = host_values(res);
    check_row_norms(x, got, 40, 513, 1e-12L);
    free(got);
    kiln_array_release(res);
    TEST_OK(kiln_ufunc_reduce(hyp, a, "0.0", NULL, &res));
    kiln_array_release(res);
    for (int with_identity = 0; with_identity < 2; with_identity++) {
        rd_ufunc_op u;
        TEST_OK(rd_ufunc_reduce_op(hyp, KILN_FLOAT64, with_identity ? "0.0" : NULL, &u));
        nvrtc_reduce(&u.op, a, ax1, 1);
        free(u.preamble);
    }
    TEST_OK(kiln_ufunc_accumulate(hyp, a, 1, NULL, &res));
    got = host_values(res);
    long double s = 0;
    for (int j = 0; j < 513; j++) {
        s += x[j] * x[j];
        long double e = j == 0 ? x[0] : sqrtl(s); /* NumPy: out[0] = x[0] */
        assert_true(fabsl(got[j] - e) < 1e-12L * sqrtl(s));
    }
    free(got);
    kiln_array_release(res);
    int64_t zero[1] = {0};
    kiln_array *e = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, zero, &e));
    TEST_FAILS_WITH(kiln_ufunc_reduce(hyp, e, NULL, NULL, &res), KILN_ERR_INVALID_ARGUMENT, "no identity");
    kiln_array_release(e);
    free(x);
    kiln_array_release(a);
    kiln_ufunc_release(hyp);
}

/* The same call twice gives the same bits; on CUDA also the CPU agrees. */
static void test_deterministic(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    int64_t n = 5000011;
    kiln_array *a = random_array(ctx, &r, KILN_FLOAT32, 1, &n, 0), *r1 = NULL, *r2 = NULL;
    float v1, v2;
    TEST_OK(kiln_sum(a, NULL, 0, 0, NULL, &r1));
    TEST_OK(kiln_sum(a, NULL, 0, 0, NULL, &r2));
    TEST_OK(kiln_array_to_host(r1, &v1, sizeof v1));
    TEST_OK(kiln_array_to_host(r2, &v2, sizeof v2));
    assert_memory_equal(&v1, &v2, sizeof v1);
    kiln_array_release(r1);
    kiln_array_release(r2);
    if (kiln_context_backend(ctx) == KILN_BACKEND_CUDA) {
        kiln_context *cpu = NULL;
        TEST_OK(kiln_open(&cpu, "cpu"));
        long double *x = host_values(a);
        float *h = malloc(sizeof *h * (size_t)n);
        for (int64_t i = 0; i < n; i++) h[i] = (float)x[i];
        kiln_array *c = NULL, *rc = NULL;
        TEST_OK(kiln_array_from_host(cpu, KILN_FLOAT32, 1, &n, h, sizeof *h * (size_t)n, &c));
        TEST_OK(kiln_sum(c, NULL, 0, 0, NULL, &rc));
        float vc;
        TEST_OK(kiln_array_to_host(rc, &vc, sizeof vc));
        assert_true(fabsf(vc - v1) <= 1e-5f * (fabsf(v1) + 1000));
        kiln_array_release(c);
        kiln_array_release(rc);
        kiln_close(cpu);
        free(h);
        free(x);
    }
    kiln_array_release(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_every_dtype_and_op, after_case),
        cmocka_unit_test_teardown(test_views_and_large, after_case),
        cmocka_unit_test_teardown(test_empty_and_size_one, after_case),
        cmocka_unit_test_teardown(test_nan, after_case),
        cmocka_unit_test_teardown(test_adversarial_sums, after_case),
        cmocka_unit_test_teardown(test_output_array, after_case),
        cmocka_unit_test_teardown(test_user_reductions, after_case),
        cmocka_unit_test_teardown(test_user_compile_error_lines, after_case),
        cmocka_unit_test_teardown(test_scans, after_case),
        cmocka_unit_test_teardown(test_ufunc_reduce_accumulate, after_case),
        cmocka_unit_test_teardown(test_deterministic, after_case),
    };
    if (getenv("KILN_TEST_FILTER")) cmocka_set_test_filter(getenv("KILN_TEST_FILTER")); /* e.g. "*scan*" */
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
