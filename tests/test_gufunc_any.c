/* test_gufunc_any.c: the any-layout kernels kiln_guvectorize compiles up
 * front (src/gufunc/any_layout.c), on the backend under test: every layout's first
 * call runs them and builds no module (core sizes below and above the bake
 * limit, transposed cores, a "()" input as a value and as an array, loop
 * dims broadcast into 2 and 3 dims, in place, a second signature), while
 * calls they cannot take (4 loop dims, an input cast from another dtype)
 * build their own; the hand-over to the layout's own kernel after
 * KILN_GUFUNC_ANY_LIMIT elements; KILN_GUFUNC_ANY_LIMIT=0; agreement with
 * the layout kernels and a float64 reference on random inputs; and every
 * any-layout module compiled through NVRTC for sm_90. */
#define KILN_EXPERIMENTAL /* kiln_gufunc_any_source (include/kiln.h) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static kiln_context *ctx;

static int setup(void **state) {
    (void)state;
    ctx = test_open();
    return ctx ? 0 : -1;
}
static int teardown(void **state) {
    (void)state;
    kiln_close(ctx);
    return 0;
}

/* Sets (value NULL: unsets) an environment variable; returns what it was
 * (malloc'd or NULL), for put_env. */
static char *swap_env(const char *name, const char *value) {
    const char *was = getenv(name);
    char *saved = was ? strdup(was) : NULL;
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    return saved;
}
static void put_env(const char *name, char *saved) {
    if (saved)
        setenv(name, saved, 1);
    else
        unsetenv(name);
    free(saved);
}

/* kiln_guvectorize with KILN_GUFUNC_ANY_LIMIT set to limit (NULL: unset,
 * the library's default) while it reads it; the variable is put back. */
static kiln_status guvectorize_with_limit(const char *limit, const char *name, const char *sigs,
                                          const char *layout, const char *params, const char *body,
                                          kiln_gufunc **out) {
    char *saved = swap_env("KILN_GUFUNC_ANY_LIMIT", limit);
    kiln_status s = kiln_guvectorize(ctx, name, sigs, layout, params, body, NULL, out);
    put_env("KILN_GUFUNC_ANY_LIMIT", saved);
    return s;
}

static void expect_built(int64_t before, int64_t want, const char *after) {
    int64_t built = test_modules_built(ctx) - before;
    if (built != want)
        fail_msg("after %s on %s: %lld modules built, want %lld", after, kiln_context_backend_name(ctx),
                 (long long)built, (long long)want);
}

static kiln_array *f64_array(int nd, const int64_t *shape, const double *h) {
    size_t n = 1;
    for (int i = 0; i < nd; i++) n *= (size_t)shape[i];
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, nd, shape, h, n * sizeof(double), &a));
    return a;
}

static double *random_f64(test_rng *rng, size_t n) {
    double *h = malloc(n * sizeof *h);
    test_fill_f64(rng, h, n, -3, 3);
    return h;
}

/* Y (C order, float64 or float32) against want, relative 1e-12 (1e-5 for float32). */
static void expect_values(kiln_array *Y, const double *want, size_t n, const char *what) {
    void *y = test_read_array(Y);
    int f32 = kiln_array_dtype(Y) == KILN_FLOAT32;
    for (size_t i = 0; i < n; i++) {
        double v = f32 ? (double)((float *)y)[i] : ((double *)y)[i];
        if (fabs(v - want[i]) > (f32 ? 1e-5 : 1e-12) * (1 + fabs(want[i])))
            fail_msg("%s: element %zu is %.17g, want %.17g", what, i, v, want[i]);
    }
    free(y);
}

static const char *scale_body = "for (int i = 0; i < x.len; i++) y[i] = a * x[i] + i;";

/* Rows of n along the last dim: want = a(row) * x + i. a_of_row: the row's a. */
static void scale_reference(const double *x, size_t rows, int n, const double *a_of_row, double *want) {
    for (size_t r = 0; r < rows; r++)
        for (int i = 0; i < n; i++)
            want[r * (size_t)n + (size_t)i] = a_of_row[r] * x[r * (size_t)n + (size_t)i] + i;
}

/* One call of a float64 scale gufunc on X (rows of n, host copy x) with
 * the "()" input a as a value, its result checked against the reference. */
static void call_scale(kiln_gufunc *f, kiln_array *X, const double *x, int64_t rows, int n, double a,
                       const char *what) {
    size_t ne = (size_t)(rows * n);
    double *want = malloc(ne * sizeof *want), *arow = malloc((size_t)rows * sizeof *arow);
    for (int64_t r = 0; r < rows; r++) arow[r] = a;
    scale_reference(x, (size_t)rows, n, arow, want);
    kiln_array *Y = NULL;
    TEST_OK(kiln_gufunc_call(f, KILN_ARGS(kiln_arr(X), kiln_f64(a)), &Y, NULL));
    expect_values(Y, want, ne, what);
    kiln_array_release(Y);
    free(want);
    free(arow);
}

/* One contiguous call with a as a value: built nothing, values right. */
static void scale_contiguous(kiln_gufunc *f, test_rng *rng, int64_t rows, int n, int64_t before) {
    int64_t shape[2] = {rows, n};
    double *x = random_f64(rng, (size_t)(rows * n));
    kiln_array *X = f64_array(2, shape, x);
    char what[64];
    snprintf(what, sizeof what, "contiguous, n = %d", n);
    call_scale(f, X, x, rows, n, 1.5, what);
    expect_built(before, 1, what);
    kiln_array_release(X);
    free(x);
}

static void first_calls_of_every_layout_build_nothing(void **state) {
    (void)state;
    test_rng rng = test_rng_for(__func__);
    int64_t before = test_modules_built(ctx);
    kiln_gufunc *f = NULL;
    TEST_OK(guvectorize_with_limit(NULL, "scale", "void(f8[:], f8, f8[:]); void(f4[:], f4, f4[:])",
                                   "(n),()->(n)", "x, a, y", scale_body, &f));
    expect_built(before, 1, "kiln_guvectorize"); /* one module, both signatures */
    const int64_t R = 37;
    /* core sizes that each compiled a module of their own before */
    scale_contiguous(f, &rng, R, 5, before);
    scale_contiguous(f, &rng, R, 3, before);
    scale_contiguous(f, &rng, R, 100, before); /* above GU_BAKE_LIMIT */

    /* a transposed core: stored (n, R), seen as (R, n) */
    {
        const int n = 6;
        int64_t st[2] = {n, R};
        double *h = random_f64(&rng, (size_t)(n * R)), *x = malloc(sizeof(double) * (size_t)(n * R));
        double *want = malloc(sizeof(double) * (size_t)(n * R)), *a = malloc(sizeof(double) * (size_t)R);
        for (int64_t r = 0; r < R; r++) {
            a[r] = -0.75;
            for (int i = 0; i < n; i++) x[r * n + i] = h[i * R + r];
        }
        scale_reference(x, (size_t)R, n, a, want);
        kiln_array *H = f64_array(2, st, h), *XT = NULL, *Y = NULL;
        TEST_OK(kiln_array_transpose(H, NULL, &XT));
        TEST_OK(kiln_gufunc_call(f, KILN_ARGS(kiln_arr(XT), kiln_f64(-0.75)), &Y, NULL));
        expect_values(Y, want, (size_t)(n * R), "transposed core");
        expect_built(before, 1, "a transposed core");
        kiln_array_release(H);
        kiln_array_release(XT);
        kiln_array_release(Y);
        free(h);
        free(x);
        free(want);
        free(a);
    }
    /* the "()" input as an array, one a per row */
    {
        const int n = 4;
        int64_t shape[2] = {R, n};
        double *x = random_f64(&rng, (size_t)(R * n)), *a = random_f64(&rng, (size_t)R);
        double *want = malloc(sizeof(double) * (size_t)(R * n));
        scale_reference(x, (size_t)R, n, a, want);
        kiln_array *X = f64_array(2, shape, x), *A = f64_array(1, &R, a), *Y = NULL;
        TEST_OK(kiln_gufunc_call(f, KILN_ARGS(kiln_arr(X), kiln_arr(A)), &Y, NULL));
        expect_values(Y, want, (size_t)(R * n), "a per row");
        expect_built(before, 1, "an array for the \"()\" input");
        /* in place, outputs last: y is x */
        scale_reference(x, (size_t)R, n, a, want);
        TEST_OK(kiln_gufunc_call(f, KILN_ARGS(kiln_arr(X), kiln_arr(A), kiln_arr(X)), NULL, NULL));
        expect_values(X, want, (size_t)(R * n), "in place");
        expect_built(before, 1, "an in-place call");
        kiln_array_release(X);
        kiln_array_release(A);
        kiln_array_release(Y);
        free(x);
        free(a);
        free(want);
    }
    /* loop dims that do not merge: a broadcast along the middle one gives
     * 3 loop dims (taken), along two of four gives 4 (not taken: built) */
    for (int four = 0; four < 2; four++) {
        const int n = 3;
        /* X (2,3,4,n) with A (2,1,4), or X (2,3,4,5,n) with A (2,1,4,1):
         * row r's a is A[b][d], b its first loop index, d its third */
        int64_t xs3[4] = {2, 3, 4, n}, xs4[5] = {2, 3, 4, 5, n}, as3[3] = {2, 1, 4}, as4[4] = {2, 1, 4, 1};
        size_t rows = four ? 120 : 24, ne = rows * (size_t)n;
        double *x = random_f64(&rng, ne), *a = random_f64(&rng, 8);
        double *arow = malloc(rows * sizeof *arow), *want = malloc(ne * sizeof *want);
        for (size_t r = 0; r < rows; r++)
            arow[r] = four ? a[r / 60 * 4 + (r / 5) % 4] : a[r / 12 * 4 + r % 4];
        scale_reference(x, rows, n, arow, want);
        kiln_array *X = four ? f64_array(5, xs4, x) : f64_array(4, xs3, x);
        kiln_array *A = four ? f64_array(4, as4, a) : f64_array(3, as3, a), *Y = NULL;
        TEST_OK(kiln_gufunc_call(f, KILN_ARGS(kiln_arr(X), kiln_arr(A)), &Y, NULL));
        expect_values(Y, want, ne, four ? "4 loop dims" : "3 loop dims");
        expect_built(before, four ? 2 : 1, four ? "4 loop dims" : "3 loop dims");
        kiln_array_release(X);
        kiln_array_release(A);
        kiln_array_release(Y);
        free(x);
        free(a);
        free(arow);
        free(want);
    }
    /* the second signature, float32, its any-layout kernel in the same module */
    {
        const int n = 7;
        int64_t shape[2] = {R, n};
        size_t ne = (size_t)(R * n);
        float *x = malloc(ne * sizeof *x);
        test_fill_f32(&rng, x, ne, -3, 3);
        double *xd = malloc(ne * sizeof *xd), *want = malloc(ne * sizeof *want),
               *a = malloc(sizeof(double) * (size_t)R);
        for (size_t i = 0; i < ne; i++) xd[i] = x[i];
        for (int64_t r = 0; r < R; r++) a[r] = 0.5;
        scale_reference(xd, (size_t)R, n, a, want);
        kiln_array *X = NULL, *Y = NULL;
        TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, x, ne * sizeof *x, &X));
        TEST_OK(kiln_gufunc_call(f, KILN_ARGS(kiln_arr(X), kiln_f32(0.5f)), &Y, NULL));
        assert_int_equal(kiln_array_dtype(Y), KILN_FLOAT32);
        expect_values(Y, want, ne, "float32 signature");
        expect_built(before, 2, "the float32 signature");
        kiln_array_release(X);
        kiln_array_release(Y);
        Y = NULL;
        /* int32 input: cast to the float64 signature, not the any-layout
         * kernel's storage: its own kernel is built */
        int32_t *xi = malloc(ne * sizeof *xi);
        for (size_t i = 0; i < ne; i++) {
            xi[i] = (int32_t)(x[i] * 100);
            xd[i] = xi[i];
        }
        scale_reference(xd, (size_t)R, n, a, want);
        TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 2, shape, xi, ne * sizeof *xi, &X));
        TEST_OK(kiln_gufunc_call(f, KILN_ARGS(kiln_arr(X), kiln_f64(0.5)), &Y, NULL));
        assert_int_equal(kiln_array_dtype(Y), KILN_FLOAT64);
        expect_values(Y, want, ne, "int32 input");
        expect_built(before, 3, "an int32 input");
        kiln_array_release(X);
        kiln_array_release(Y);
        free(x);
        free(xi);
        free(xd);
        free(want);
        free(a);
    }
    kiln_gufunc_release(f);
}

/* With KILN_GUFUNC_ANY_LIMIT=10000, calls of 3000 elements and
 * KILN_TIER_UP=0: calls 1-4 build nothing, call 5 builds the layout's own
 * kernel itself, call 6 reuses it. Every call's values are checked. */
static void any_layout_kernel_hands_over(void **state) {
    (void)state;
    test_rng rng = test_rng_for(__func__);
    int64_t before = test_modules_built(ctx);
    kiln_gufunc *f = NULL;
    char *saved = swap_env("KILN_TIER_UP", "0");
    TEST_OK(guvectorize_with_limit("10000", "scale", "void(f8[:], f8, f8[:])", "(n),()->(n)", "x, a, y",
                                   scale_body, &f));
    put_env("KILN_TIER_UP", saved);
    expect_built(before, 1, "kiln_guvectorize");
    const int64_t R = 600;
    const int n = 5;
    int64_t shape[2] = {R, n};
    double *x = random_f64(&rng, (size_t)(R * n));
    kiln_array *X = f64_array(2, shape, x);
    for (int call = 1; call <= 6; call++) {
        char what[32];
        snprintf(what, sizeof what, "call %d", call);
        call_scale(f, X, x, R, n, call * 0.25, what);
        expect_built(before, call >= 5 ? 2 : 1, what);
    }
    kiln_array_release(X);
    free(x);
    kiln_gufunc_release(f);
}

/* The same hand-over with the layout's kernel built in the background
 * (the default): the call past the limit starts the build and, like every
 * call until it is recorded, runs the any-layout kernel; then calls run
 * the new kernel and build nothing more. Exactly one module is built,
 * every call's values are right, and releasing a gufunc while its build
 * runs waits for it (ASan: nothing leaks). */
static void any_layout_kernel_tiers_up_in_background(void **state) {
    (void)state;
    test_rng rng = test_rng_for(__func__);
    int64_t before = test_modules_built(ctx);
    kiln_gufunc *f = NULL;
    TEST_OK(guvectorize_with_limit("10000", "scale", "void(f8[:], f8, f8[:])", "(n),()->(n)", "x, a, y",
                                   scale_body, &f));
    expect_built(before, 1, "kiln_guvectorize");
    const int64_t R = 600;
    const int n = 5;
    int64_t shape[2] = {R, n};
    double *x = random_f64(&rng, (size_t)(R * n));
    kiln_array *X = f64_array(2, shape, x);
    int call = 0, built_at = 0;
    for (; call < 100000 && (built_at == 0 || call < built_at + 3); call++) {
        char what[48];
        snprintf(what, sizeof what, "call %d", call + 1);
        call_scale(f, X, x, R, n, 0.25 * (call % 9) - 1, what);
        int64_t built = test_modules_built(ctx) - before;
        if (built > 2) fail_msg("after %s: %lld modules built, want at most 2", what, (long long)built);
        if (call < 4 && built != 1)
            fail_msg("after %s, under the limit: %lld modules built", what, (long long)built);
        if (built == 2 && !built_at) built_at = call + 1;
    }
    if (!built_at) fail_msg("the layout kernel was not built in the background after %d calls", call);
    expect_built(before, 2, "the calls after the background build");
    kiln_gufunc_release(f);
    /* released while its build runs: call 5 starts it, release waits */
    kiln_gufunc *g = NULL;
    TEST_OK(guvectorize_with_limit("10000", "scale2", "void(f8[:], f8, f8[:])", "(n),()->(n)", "x, a, y",
                                   scale_body, &g));
    for (int c = 0; c < 5; c++) {
        kiln_array *Y = NULL;
        TEST_OK(kiln_gufunc_call(g, KILN_ARGS(kiln_arr(X), kiln_f64(1)), &Y, NULL));
        kiln_array_release(Y);
    }
    kiln_gufunc_release(g);
    kiln_array_release(X);
    free(x);
}

/* KILN_GUFUNC_ANY_LIMIT=0: kiln_guvectorize builds nothing, and a body that
 * does not compile is reported at the first call instead. */
static void limit_zero_builds_at_first_call(void **state) {
    (void)state;
    int64_t before = test_modules_built(ctx);
    kiln_gufunc *f = NULL, *bad = NULL;
    TEST_OK(guvectorize_with_limit("0", "scale", "void(f8[:], f8, f8[:])", "(n),()->(n)", "x, a, y",
                                   scale_body, &f));
    expect_built(before, 0, "kiln_guvectorize with the limit 0");
    int64_t shape[2] = {3, 4};
    double x[12];
    for (int i = 0; i < 12; i++) x[i] = i;
    kiln_array *X = f64_array(2, shape, x), *Y = NULL;
    TEST_OK(kiln_gufunc_call(f, KILN_ARGS(kiln_arr(X), kiln_f64(2)), &Y, NULL));
    expect_built(before, 1, "the first call");
    TEST_OK(guvectorize_with_limit("0", "bad", "void(f8[:], f8, f8[:])", "(n),()->(n)", "x, a, y",
                                   "y[0] = not_declared;", &bad));
    kiln_array_release(Y);
    Y = NULL;
    TEST_FAILS_WITH(kiln_gufunc_call(bad, KILN_ARGS(kiln_arr(X), kiln_f64(2)), &Y, NULL), KILN_ERR_COMPILE,
                    "not_declared");
    /* and with any-layout kernels, at kiln_guvectorize */
    kiln_gufunc_release(bad);
    bad = NULL;
    TEST_FAILS_WITH(guvectorize_with_limit(NULL, "bad", "void(f8[:], f8, f8[:])", "(n),()->(n)", "x, a, y",
                                           "y[0] = not_declared;", &bad),
                    KILN_ERR_COMPILE, "not_declared");
    assert_null(bad);
    kiln_array_release(X);
    kiln_gufunc_release(f);
}

static const char *matmul_body = "for (int i = 0; i < C.shape[0]; i++)\n"
                                 "    for (int j = 0; j < C.shape[1]; j++) {\n"
                                 "        double s = 0;\n"
                                 "        for (int k = 0; k < A.shape[1]; k++) s += A(i, k) * B(k, j);\n"
                                 "        C(i, j) = s;\n"
                                 "    }\n";

/* Batched matmul with B broadcast, on random inputs: the any-layout kernel
 * and the layout kernels (a gufunc made with the limit 0) both agree with a
 * float64 reference, for core sizes below and above the bake limit. */
static void any_and_layout_kernels_agree(void **state) {
    (void)state;
    test_rng rng = test_rng_for(__func__);
    kiln_gufunc *mm[2] = {NULL, NULL};
    TEST_OK(guvectorize_with_limit(NULL, "mm", "void(f8[:,:], f8[:,:], f8[:,:])", "(m,n),(n,p)->(m,p)",
                                   "A, B, C", matmul_body, &mm[0]));
    TEST_OK(guvectorize_with_limit("0", "mm", "void(f8[:,:], f8[:,:], f8[:,:])", "(m,n),(n,p)->(m,p)",
                                   "A, B, C", matmul_body, &mm[1]));
    static const int dims[][3] = {{2, 3, 2}, {4, 4, 4}, {3, 70, 5}};
    for (size_t d = 0; d < sizeof dims / sizeof *dims; d++) {
        int m = dims[d][0], n = dims[d][1], p = dims[d][2];
        const int64_t batch = 33;
        size_t na = (size_t)(batch * m * n), nb = (size_t)(n * p), nc = (size_t)(batch * m * p);
        double *a = random_f64(&rng, na), *b = random_f64(&rng, nb), *want = malloc(nc * sizeof *want);
        for (int64_t t = 0; t < batch; t++)
            for (int i = 0; i < m; i++)
                for (int j = 0; j < p; j++) {
                    long double s = 0;
                    for (int k = 0; k < n; k++) s += (long double)a[(t * m + i) * n + k] * b[k * p + j];
                    want[(t * m + i) * p + j] = (double)s;
                }
        int64_t sa[3] = {batch, m, n}, sb[2] = {n, p};
        kiln_array *A = f64_array(3, sa, a), *B = f64_array(2, sb, b);
        for (int g = 0; g < 2; g++) {
            kiln_array *C = NULL;
            TEST_OK(kiln_gufunc_call(mm[g], KILN_ARGS(kiln_arr(A), kiln_arr(B)), &C, NULL));
            char what[96];
            snprintf(what, sizeof what, "%s kernel, %dx%dx%d", g ? "layout" : "any-layout", m, n, p);
            expect_values(C, want, nc, what);
            kiln_array_release(C);
        }
        kiln_array_release(A);
        kiln_array_release(B);
        free(a);
        free(b);
        free(want);
    }
    kiln_gufunc_release(mm[0]);
    kiln_gufunc_release(mm[1]);
}

/* Every any-layout module of these gufuncs, CUDA form, compiled through
 * NVRTC for sm_90 (skipped where NVRTC is missing), whatever the backend
 * under test: the 16-bit floats, "()" inputs only, no inputs, several
 * outputs, fixed dims. */
static void any_sources_compile_through_nvrtc(void **state) {
    (void)state;
    static const struct {
        const char *name, *sigs, *layout, *params, *body;
    } g[] = {
        {"scale",
         "void(f8[:], f8, f8[:]); void(f4[:], f4, f4[:]); void(f2[:], f2, f2[:]); void(bf16[:], bf16, "
         "bf16[:])",
         "(n),()->(n)", "x, a, y", "for (int i = 0; i < x.len; i++) y[i] = a * x[i] + i;"},
        {"powers", "void(f8, f8[:])", "()->(n)", "x, out",
         "double v = 1; for (int i = 0; i < out.len; i++) { out[i] = v; v *= x; }"},
        {"iota", "void(i4[:])", "->(n)", "out", "for (int i = 0; i < out.len; i++) out[i] = i;"},
        {"summax", "void(f8[:], f8, f8)", "(n)->(),()", "x -> total, top",
         "double s = 0, m = x[0]; for (int i = 0; i < x.len; i++) { s += x[i]; m = fmax(m, x[i]); } total = "
         "s; top = m;"},
        {"cross", "void(f8[:], f8[:], f8[:])", "(3),(3)->(3)", "a, b, c",
         "c[0] = a[1] * b[2] - a[2] * b[1]; c[1] = a[2] * b[0] - a[0] * b[2]; c[2] = a[0] * b[1] - a[1] * "
         "b[0];"},
    };
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        kiln_gufunc *f = NULL;
        TEST_OK(guvectorize_with_limit(NULL, g[i].name, g[i].sigs, g[i].layout, g[i].params, g[i].body, &f));
        char *src = NULL, *log = NULL;
        TEST_FAILS_WITH(kiln_gufunc_any_source(f, "tpu", &src), KILN_ERR_INVALID_ARGUMENT,
                        "target must be \"cuda\", \"cpu\" or NULL, got \"tpu\"");
        TEST_OK(kiln_gufunc_any_source(f, "cuda", &src));
        if (!strstr(src, "_any0")) fail_msg("%s: no any-layout kernel in its module:\n%s", g[i].name, src);
        kiln_status s = kiln_compile_only("cuda", "sm_90", src, "gufunc-any.cu", NULL, &log);
        if (s == KILN_ERR_COMPILER_MISSING) {
            kiln_free(src);
            kiln_free(log);
            kiln_gufunc_release(f);
            skip();
        }
        if (s != KILN_OK)
            fail_msg("%s: did not compile through NVRTC: %s\n%s", g[i].name, kiln_last_error(), src);
        kiln_free(src);
        kiln_free(log);
        kiln_gufunc_release(f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_calls_of_every_layout_build_nothing),
        cmocka_unit_test(any_layout_kernel_hands_over),
        cmocka_unit_test(any_layout_kernel_tiers_up_in_background),
        cmocka_unit_test(limit_zero_builds_at_first_call),
        cmocka_unit_test(any_and_layout_kernels_agree),
        cmocka_unit_test(any_sources_compile_through_nvrtc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
