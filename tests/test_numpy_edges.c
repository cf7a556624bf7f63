/* test_numpy_edges.c: where kiln follows NumPy 2 on the edges of its rules,
 * on the backend under test (KILN_TEST_TARGET=cuda for the GPU run):
 *  - var/std divide by max(n - ddof, 0) (ddof >= n: inf, or NaN for 0/0) and
 *    take a negative ddof (n - ddof = n + |ddof|), whole arrays and rows;
 *  - a reduction or scan with an out wider than its result accumulates in
 *    the out's dtype (mean(float32, out=float64) is float64-accurate), and a
 *    ufunc's reduce and accumulate take the loop of out's dtype;
 *  - gufunc layouts: a dim optional ('?') in one place must be optional
 *    everywhere (NumPy's _parse_signature), "->()" has no inputs and runs;
 *  - a kernel source file with a NUL byte is refused, naming the offset.
 * The values expected are NumPy's (numpy 2.x prints them as in comments). */
#define KILN_EXPERIMENTAL /* kiln_gufunc_source (include/kiln.h) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gufunc/gufunc.h"
#include "reduce/reduce.h"
#include "test_support.h"

static kiln_array *f64_array(kiln_context *ctx, int ndim, const int64_t *shape, const double *v, size_t n) {
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, ndim, shape, v, n * sizeof *v, &a));
    return a;
}

static kiln_array *f32_array(kiln_context *ctx, int ndim, const int64_t *shape, const float *v, size_t n) {
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, ndim, shape, v, n * sizeof *v, &a));
    return a;
}

/* var or std of a over axes (NULL: all) with ddof, as float64 values. */
static void moments(int std, kiln_array *a, const int *axes, int naxes, int ddof, double *got, size_t n) {
    kiln_array *r = NULL;
    if (std)
        TEST_OK(kiln_std(a, axes, naxes, ddof, 0, NULL, &r));
    else
        TEST_OK(kiln_var(a, axes, naxes, ddof, 0, NULL, &r));
    if (kiln_array_dtype(r) == KILN_FLOAT64) {
        TEST_OK(kiln_array_to_host(r, got, n * sizeof *got));
    } else {
        float f[8];
        TEST_OK(kiln_array_to_host(r, f, n * sizeof *f));
        for (size_t i = 0; i < n; i++) got[i] = f[i];
    }
    kiln_array_release(r);
}

/* NaN equals NaN here; everything else exactly or within 1e-6 relative. */
static void expect(const char *what, int ddof, const double *got, const double *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int same = (isnan(got[i]) && isnan(want[i])) || got[i] == want[i] ||
                   (isfinite(want[i]) && fabs(got[i] - want[i]) <= 1e-6 * fabs(want[i]));
        if (!same) fail_msg("%s ddof=%d [%zu]: got %.17g, NumPy gives %.17g", what, ddof, i, got[i], want[i]);
    }
}

static void test_ddof_past_n(void **state) {
    kiln_context *ctx = *state;
    int64_t two = 2;
    kiln_array *x = f64_array(ctx, 1, &two, (const double[]){1, 2}, 2);
    double got[1];
    /* np.var([1, 2], ddof=3) -> inf (0.5 / max(2 - 3, 0)); ddof=2 too */
    for (int ddof = 2; ddof <= 5; ddof++) {
        moments(0, x, NULL, 0, ddof, got, 1);
        expect("var([1,2])", ddof, got, (const double[]){INFINITY}, 1);
        moments(1, x, NULL, 0, ddof, got, 1);
        expect("std([1,2])", ddof, got, (const double[]){INFINITY}, 1);
    }
    moments(0, x, NULL, 0, 1, got, 1);
    expect("var([1,2])", 1, got, (const double[]){0.5}, 1);
    /* np.var([1, 1], ddof=2) -> nan (0 / 0) */
    kiln_array *same = f64_array(ctx, 1, &two, (const double[]){1, 1}, 2);
    moments(0, same, NULL, 0, 2, got, 1);
    expect("var([1,1])", 2, got, (const double[]){NAN}, 1);
    moments(1, same, NULL, 0, 7, got, 1);
    expect("std([1,1])", 7, got, (const double[]){NAN}, 1);
    /* rows: np.var([[1,2,3],[4,4,4],[0,1,1]], axis=1, ddof=4) -> [inf, nan, inf] */
    int64_t shape[2] = {3, 3};
    kiln_array *rows = f64_array(ctx, 2, shape, (const double[]){1, 2, 3, 4, 4, 4, 0, 1, 1}, 9);
    int axis1 = 1;
    double r[3];
    moments(0, rows, &axis1, 1, 4, r, 3);
    expect("var(rows)", 4, r, (const double[]){INFINITY, NAN, INFINITY}, 3);
    moments(1, rows, &axis1, 1, 3, r, 3);
    expect("std(rows)", 3, r, (const double[]){INFINITY, NAN, INFINITY}, 3);
    /* float32 rows: the same rule */
    kiln_array *rows32 = f32_array(ctx, 2, shape, (const float[]){1, 2, 3, 4, 4, 4, 0, 1, 1}, 9);
    moments(0, rows32, &axis1, 1, 9, r, 3);
    expect("var(float32 rows)", 9, r, (const double[]){INFINITY, NAN, INFINITY}, 3);
    kiln_array_release(x);
    kiln_array_release(same);
    kiln_array_release(rows);
    kiln_array_release(rows32);
}

/* The CUDA code of var and std with this ddof compiles through NVRTC. */
static void nvrtc_moments(kiln_array *a, const int *axes, int naxes, int ddof) {
    for (int std = 0; std < 2; std++) {
        rd_op o;
        TEST_OK(rd_builtin_op(std ? KILN_REDUCE_STD : KILN_REDUCE_VAR, kiln_array_dtype(a), ddof, &o));
        char *src = NULL, *log = NULL;
        TEST_OK(rd_source_for(&o, KILN_BACKEND_CUDA, a, axes, naxes, &src));
        kiln_status s = kiln_compile_only("cuda", "sm_90", src, "moments.cu", NULL, &log);
        if (s != KILN_ERR_COMPILER_MISSING && s != KILN_OK) fail_msg("NVRTC: %s", kiln_last_error());
        free(src);
        kiln_free(log);
    }
}

static void test_negative_ddof(void **state) {
    kiln_context *ctx = *state;
    int64_t four = 4;
    kiln_array *x = f64_array(ctx, 1, &four, (const double[]){1, 2, 3, 4}, 4);
    double got[1];
    /* np.var([1,2,3,4], ddof=-1) -> 1.0 (5 / 5); ddof=-4 -> 0.625 */
    moments(0, x, NULL, 0, -1, got, 1);
    expect("var([1,2,3,4])", -1, got, (const double[]){1.0}, 1);
    moments(0, x, NULL, 0, -4, got, 1);
    expect("var([1,2,3,4])", -4, got, (const double[]){0.625}, 1);
    moments(1, x, NULL, 0, -1, got, 1);
    expect("std([1,2,3,4])", -1, got, (const double[]){1.0}, 1);
    /* rows: np.var([[1,2,3],[4,4,8]], axis=1, ddof=-1) -> [0.5, 2.6666666666666665] */
    int64_t shape[2] = {2, 3};
    kiln_array *rows = f64_array(ctx, 2, shape, (const double[]){1, 2, 3, 4, 4, 8}, 6);
    int axis1 = 1;
    double r[2];
    moments(0, rows, &axis1, 1, -1, r, 2);
    expect("var(rows)", -1, r, (const double[]){0.5, 32.0 / 3 / 4}, 2);
    nvrtc_moments(rows, &axis1, 1, -1);
    nvrtc_moments(x, NULL, 0, 7);
    kiln_array_release(x);
    kiln_array_release(rows);
}

/* op over a float32 array into a float64 out of shape (n) or 0-d. */
static void reduce_into_f64(kiln_reduce_op op, kiln_array *a, const int *axes, int naxes, double *got,
                            int n) {
    kiln_context *ctx = kiln_array_context(a);
    int64_t shape = n;
    kiln_array *out = NULL, *r = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, naxes ? 1 : 0, &shape, &out));
    kiln_reduce_opts o = {axes, naxes, 0, out, 0, NULL};
    TEST_OK(kiln_reduce(op, a, &o, &r));
    assert_ptr_equal(r, out);
    TEST_OK(kiln_array_to_host(out, got, (size_t)n * sizeof *got));
    kiln_array_release(r);
    kiln_array_release(out);
}

/* The CUDA code of op over a, widened to out's dtype, compiles through NVRTC. */
static void nvrtc_widened(kiln_reduce_op op, kiln_array *a, kiln_array *out) {
    rd_op o;
    TEST_OK(rd_builtin_op(op, kiln_array_dtype(a), 0, &o));
    rd_widen_to_out(&o, out);
    assert_int_equal(o.in_dtype[0],
                     kiln_array_dtype(out) == KILN_COMPLEX128 && kiln_array_dtype(a) != KILN_COMPLEX64
                         ? KILN_FLOAT64
                         : kiln_array_dtype(out));
    char *src = NULL, *log = NULL;
    TEST_OK(rd_source_for(&o, KILN_BACKEND_CUDA, a, NULL, 0, &src));
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "widened.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING && s != KILN_OK) fail_msg("NVRTC: %s", kiln_last_error());
    free(src);
    kiln_free(log);
}

static void test_wider_out_accumulates_in_its_dtype(void **state) {
    kiln_context *ctx = *state;
    const float tiny = 0x1p-24f, step = 0x1p-23f;
    int64_t two = 2;
    kiln_array *x = f32_array(ctx, 1, &two, (const float[]){1, tiny}, 2);
    double got[2];
    /* np.mean(np.float32([1, 2**-24]), out=np.zeros((), np.float64)) -> 0.5000000298023224 */
    reduce_into_f64(KILN_REDUCE_MEAN, x, NULL, 0, got, 1);
    if (got[0] != 0.5 + 0x1p-25) fail_msg("mean into float64: %.17g, NumPy 0.5000000298023224", got[0]);
    /* np.sum(..., out=float64) -> 1.0000000596046448 */
    reduce_into_f64(KILN_REDUCE_SUM, x, NULL, 0, got, 1);
    if (got[0] != 1 + 0x1p-24) fail_msg("sum into float64: %.17g, NumPy 1.0000000596046448", got[0]);
    /* np.prod(np.float32([1 + 2**-23] * 2), out=float64) -> (1 + 2**-23)**2, exact in float64 */
    kiln_array *p = f32_array(ctx, 1, &two, (const float[]){1 + step, 1 + step}, 2);
    reduce_into_f64(KILN_REDUCE_PROD, p, NULL, 0, got, 1);
    if (got[0] != (1 + 0x1p-23) * (1 + 0x1p-23))
        fail_msg("prod into float64: %.17g, NumPy %.17g", got[0], (1 + 0x1p-23) * (1 + 0x1p-23));
    /* rows: np.mean(float32 [[1, 2**-24], [2, 2**-23]], axis=1, out=float64 (2,)) */
    int64_t shape[2] = {2, 2};
    kiln_array *rows = f32_array(ctx, 2, shape, (const float[]){1, tiny, 2, step}, 4);
    int axis1 = 1;
    reduce_into_f64(KILN_REDUCE_MEAN, rows, &axis1, 1, got, 2);
    if (got[0] != 0.5 + 0x1p-25 || got[1] != 1 + 0x1p-24)
        fail_msg("row means into float64: %.17g %.17g", got[0], got[1]);
    /* the result without an out stays float32, as NumPy's */
    kiln_array *r = NULL;
    TEST_OK(kiln_mean(x, NULL, 0, 0, NULL, &r));
    assert_int_equal(kiln_array_dtype(r), KILN_FLOAT32);
    kiln_array_release(r);
    /* complex64 summed into complex128: np.sum(np.complex64([1, 2**-24]), out=complex128) */
    float c64[4] = {1, 0.5f, tiny, 0};
    kiln_array *c = NULL, *cout = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_COMPLEX64, 1, &two, c64, sizeof c64, &c));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX128, 0, &two, &cout));
    TEST_OK(kiln_sum(c, NULL, 0, 0, cout, NULL));
    double c128[2];
    TEST_OK(kiln_array_to_host(cout, c128, sizeof c128));
    if (c128[0] != 1 + 0x1p-24 || c128[1] != 0.5)
        fail_msg("complex sum into complex128: %.17g%+.17gj", c128[0], c128[1]);
    /* float32 summed into a complex128 out: the real part as float64 would */
    TEST_OK(kiln_sum(x, NULL, 0, 0, cout, NULL));
    TEST_OK(kiln_array_to_host(cout, c128, sizeof c128));
    if (c128[0] != 1 + 0x1p-24 || c128[1] != 0) fail_msg("float32 sum into complex128: %.17g", c128[0]);
    /* scans: np.cumprod(float32 [1 + 2**-23] * 2, out=float64) */
    kiln_array *sout = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &two, &sout));
    TEST_OK(kiln_cumprod(p, 0, sout, NULL));
    TEST_OK(kiln_array_to_host(sout, got, sizeof got));
    if (got[1] != (1 + 0x1p-23) * (1 + 0x1p-23)) fail_msg("cumprod into float64: %.17g", got[1]);
    TEST_OK(kiln_cumsum(x, 0, sout, NULL));
    TEST_OK(kiln_array_to_host(sout, got, sizeof got));
    if (got[1] != 1 + 0x1p-24) fail_msg("cumsum into float64: %.17g", got[1]);
    int64_t one = 1;
    kiln_array *o64 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 0, &one, &o64));
    nvrtc_widened(KILN_REDUCE_MEAN, x, o64);
    nvrtc_widened(KILN_REDUCE_PROD, p, o64);
    nvrtc_widened(KILN_REDUCE_SUM, c, cout);
    nvrtc_widened(KILN_REDUCE_SUM, x, cout);
    kiln_array_release(o64);
    kiln_array_release(sout);
    kiln_array_release(c);
    kiln_array_release(cout);
    kiln_array_release(rows);
    kiln_array_release(p);
    kiln_array_release(x);
}

/* np.add.reduce(float32 [1, 2**-24], out=float64) takes add's float64 loop:
 * 1.0000000596046448; accumulate the same. A ufunc without a float64
 * signature keeps its float32 one and stores its result. */
static void test_ufunc_reduce_into_wider_out(void **state) {
    kiln_context *ctx = *state;
    kiln_ufunc *add = NULL, *add32 = NULL;
    TEST_OK(kiln_vectorize(ctx, "add", "f4(f4,f4); f8(f8,f8)", "a, b", "return a + b;", NULL, &add));
    TEST_OK(kiln_vectorize(ctx, "add32", "f4(f4,f4)", "a, b", "return a + b;", NULL, &add32));
    int64_t two = 2;
    kiln_array *x = f32_array(ctx, 1, &two, (const float[]){1, 0x1p-24f}, 2), *out = NULL, *acc = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 0, &two, &out));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &two, &acc));
    kiln_reduce_opts o = {NULL, 0, 0, out, 0, NULL};
    double got[2];
    TEST_OK(kiln_ufunc_reduce(add, x, "0", &o, NULL));
    TEST_OK(kiln_array_to_host(out, got, sizeof got[0]));
    if (got[0] != 1 + 0x1p-24) fail_msg("add.reduce into float64: %.17g, NumPy 1.0000000596046448", got[0]);
    TEST_OK(kiln_ufunc_accumulate(add, x, 0, acc, NULL));
    TEST_OK(kiln_array_to_host(acc, got, sizeof got));
    if (got[1] != 1 + 0x1p-24) fail_msg("add.accumulate into float64: %.17g", got[1]);
    TEST_OK(kiln_ufunc_reduce(add32, x, "0", &o, NULL));
    TEST_OK(kiln_array_to_host(out, got, sizeof got[0]));
    if (got[0] != 1) fail_msg("float32-only add.reduce into float64: %.17g, expected 1", got[0]);
    kiln_array_release(x);
    kiln_array_release(out);
    kiln_array_release(acc);
    kiln_ufunc_release(add);
    kiln_ufunc_release(add32);
}

/* ---------------------------------------------------------------- gufunc layouts */

static void test_optional_dims_agree(void **state) {
    (void)state;
    static const struct {
        const char *text;
        const char *needle; /* NULL: accepted */
    } table[] = {
        {"(i?),(i)->()", "'?' must be used"},
        {"(i),(i?)->()", "'?' cannot be used"},
        {"(m?,n),(n,p?)->(m?,p)", "'?' must be used"},
        {"(3?),(3)->()", "'?' must be used"},
        {"(n)->(n?)", "'?' cannot be used"},
        {"(m?,n),(n,p?)->(m?,p?)", NULL}, /* NumPy's matmul */
        {"(i?),(i?)->()", NULL},
        {"(i?)->(i?),(j)", NULL},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        gu_layout l;
        kiln_status s = gu_parse_layout(table[i].text, &l);
        if (!table[i].needle) {
            if (s != KILN_OK) fail_msg("\"%s\" refused: %s", table[i].text, kiln_last_error());
            continue;
        }
        if (s != KILN_ERR_SIGNATURE) fail_msg("\"%s\" accepted; NumPy refuses it", table[i].text);
        if (!test_contains(kiln_last_error(), table[i].needle))
            fail_msg("\"%s\": message lacks \"%s\": %s", table[i].text, table[i].needle, kiln_last_error());
    }
}

static void test_no_inputs_scalar_output(void **state) {
    kiln_context *ctx = *state;
    gu_layout l;
    TEST_OK(gu_parse_layout("->()", &l));
    assert_int_equal(l.nin, 0);
    assert_int_equal(l.nout, 1);
    kiln_gufunc *g = NULL;
    TEST_OK(kiln_guvectorize(ctx, "seven", "void(f8)", "->()", "out", "out = 7.0;", NULL, &g));
    assert_int_equal(kiln_gufunc_nin(g), 0);
    /* no arguments: one 0-d output */
    kiln_array *out = NULL;
    TEST_OK(kiln_gufunc_call(g, NULL, 0, &out, NULL));
    assert_int_equal(kiln_array_ndim(out), 0);
    double v = 0;
    TEST_OK(kiln_array_item_f64(out, &v));
    assert_true(v == 7.0);
    /* a given output: its dims are the loop */
    int64_t five = 5;
    kiln_array *given = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &five, &given));
    kiln_value a[1] = {kiln_arr(given)};
    TEST_OK(kiln_gufunc_call(g, a, 1, NULL, NULL));
    double w[5];
    TEST_OK(kiln_array_to_host(given, w, sizeof w));
    for (int i = 0; i < 5; i++) assert_true(w[i] == 7.0);
    /* the CUDA code of both calls compiles */
    char *src = NULL, *log = NULL;
    TEST_OK(kiln_gufunc_source(g, "cuda", NULL, NULL, 0, NULL, &src, NULL));
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "seven.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING && s != KILN_OK) fail_msg("NVRTC: %s\n%s", kiln_last_error(), src);
    kiln_free(src);
    kiln_free(log);
    kiln_array_release(out);
    kiln_array_release(given);
    kiln_gufunc_release(g);
}

/* ---------------------------------------------------------------- source files */

static void test_nul_byte_in_source_file(void **state) {
    kiln_context *ctx = *state;
    char *dir = test_temp_dir("nul");
    char path[4096];
    snprintf(path, sizeof path, "%s/two.cu", dir);
    static const char first[] = "__global__ void first(int *x) { x[0] = 1; }\n";
    static const char second[] = "__global__ void second(int *x) { x[0] = 2; }\n";
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(first, 1, sizeof first - 1, f);
    fputc('\0', f);
    fwrite(second, 1, sizeof second - 1, f);
    fclose(f);
    kiln_module *m = NULL;
    char offset[64];
    snprintf(offset, sizeof offset, "NUL byte at offset %zu", sizeof first - 1);
    TEST_FAILS_WITH(kiln_module_from_file(ctx, path, NULL, &m), KILN_ERR_INVALID_ARGUMENT, offset);
    assert_null(m);
    /* the same text without the NUL loads both kernels */
    f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(first, 1, sizeof first - 1, f);
    fwrite(second, 1, sizeof second - 1, f);
    fclose(f);
    TEST_OK(kiln_module_from_file(ctx, path, NULL, &m));
    assert_int_equal(kiln_module_kernel_count(m), 2);
    kiln_module_release(m);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ddof_past_n, test_setup_context, test_teardown_context),
        cmocka_unit_test_setup_teardown(test_negative_ddof, test_setup_context, test_teardown_context),
        cmocka_unit_test_setup_teardown(test_wider_out_accumulates_in_its_dtype, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test_setup_teardown(test_ufunc_reduce_into_wider_out, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test(test_optional_dims_agree),
        cmocka_unit_test_setup_teardown(test_no_inputs_scalar_output, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test_setup_teardown(test_nul_byte_in_source_file, test_setup_context,
                                        test_teardown_context),
    };
    return cmocka_run_group_tests_name("test_numpy_edges", tests, NULL, NULL);
}
