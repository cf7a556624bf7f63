/* test_gufunc_grammar.c: the edges of NumPy's gufunc signature grammar that
 * a user meets: no inputs ("->(n)"), a fixed size of 0 (NumPy rejects it),
 * more than 4 core dims in one argument, and a non-ASCII character reported
 * as that character with the caret under it. Calls run on the backend under
 * test and their CUDA code compiles through NVRTC. */
#define KILN_EXPERIMENTAL /* kiln_gufunc_source (include/kiln.h) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gufunc/gufunc.h"
#include "test_support.h"

static void nvrtc_ok(kiln_gufunc *g, const char *dims, const kiln_value *args, int nargs,
                     kiln_array *const *outs) {
    char *src = NULL, *log = NULL;
    TEST_OK(kiln_gufunc_source(g, "cuda", dims, args, nargs, outs, &src, NULL));
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "grammar.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING && s != KILN_OK) fail_msg("NVRTC: %s\n%s", kiln_last_error(), src);
    kiln_free(src);
    kiln_free(log);
}

static void test_zero_inputs(void **state) {
    kiln_context *ctx = *state;
    gu_layout l;
    TEST_OK(gu_parse_layout("->()", &l));
    assert_int_equal(l.nin, 0);
    assert_int_equal(l.nout, 1);
    assert_string_equal(l.text, "->()");
    TEST_OK(gu_parse_layout(" -> (n), (3)", &l));
    assert_int_equal(l.nin, 0);
    assert_int_equal(l.nout, 2);
    assert_string_equal(l.text, "->(n),(3)");
    /* a generator: out[i] = i * i, n from the call */
    kiln_gufunc *g = NULL;
    TEST_OK(kiln_guvectorize(ctx, "squares", "void(f8[:])", "->(n)", "out",
                             "for (int i = 0; i < out.len; i++) out[i] = (double)i * i;", NULL, &g));
    assert_int_equal(kiln_gufunc_nin(g), 0);
    kiln_array *out = NULL;
    TEST_OK(kiln_gufunc_call(g, NULL, 0, &out, "n=7"));
    assert_int_equal(kiln_array_ndim(out), 1);
    assert_int_equal(kiln_array_shape(out)[0], 7);
    double v[7];
    TEST_OK(kiln_array_to_host(out, v, sizeof v));
    for (int i = 0; i < 7; i++) assert_true(v[i] == (double)i * i);
    /* into given outputs: their loop dims are the loop */
    int64_t shape[2] = {3, 4};
    kiln_array *given = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, shape, &given));
    kiln_value a[1] = {kiln_arr(given)};
    TEST_OK(kiln_gufunc_call(g, a, 1, NULL, NULL));
    double w[12];
    TEST_OK(kiln_array_to_host(given, w, sizeof w));
    for (int i = 0; i < 12; i++) assert_true(w[i] == (double)(i % 4) * (i % 4));
    nvrtc_ok(g, NULL, a, 1, NULL);
    /* with neither dims nor an output, n is unknown: an error naming it */
    kiln_array *none = NULL;
    TEST_FAILS_WITH(kiln_gufunc_call(g, NULL, 0, &none, NULL), KILN_ERR_SHAPE, "n");
    kiln_array_release(out);
    kiln_array_release(given);
    kiln_gufunc_release(g);
}

static void expect_bad(const char *text, int column, const char *needle) {
    gu_layout l;
    kiln_status s = gu_parse_layout(text, &l);
    if (s != KILN_ERR_SIGNATURE) fail_msg("\"%s\": accepted or wrong status %s", text, kiln_status_string(s));
    const char *msg = kiln_last_error();
    char col[32];
    snprintf(col, sizeof col, "at column %d", column);
    if (!test_contains(msg, needle) || !test_contains(msg, col))
        fail_msg("\"%s\": message lacks \"%s\" or \"%s\": %s", text, needle, col, msg);
    /* the caret line has column-1 characters before the caret */
    const char *caret = strrchr(msg, '\n') + 1;
    assert_int_equal((int)strlen(caret), 2 + column);
}

static void test_zero_fixed_size_is_rejected(void **state) {
    (void)state;
    expect_bad("(0)->()", 2, "at least 1, found 0");
    expect_bad("(n,0)->(n)", 4, "at least 1, found 0");
    expect_bad("(n)->(00)", 7, "at least 1, found 0");
    gu_layout l;
    TEST_OK(gu_parse_layout("(1)->(1)", &l));
}

static void test_non_ascii_is_reported_as_a_character(void **state) {
    (void)state;
    expect_bad("(\xc3\xa9)->()", 2, "'\xc3\xa9' (U+00E9)");                  /* é */
    expect_bad("(n,\xc3\xb1)->(n)", 4, "'\xc3\xb1' (U+00F1)");               /* ñ */
    expect_bad("(n)\xe2\x86\x92(n)", 4, "'\xe2\x86\x92' (U+2192)");          /* → for -> */
    expect_bad("(\xce\xb1)->(n)", 2, "(U+03B1)");                            /* α */
    expect_bad("(\xf0\x9f\x98\x80)->()", 2, "'\xf0\x9f\x98\x80' (U+1F600)"); /* an emoji */
    expect_bad("(\xff)->()", 2, "0xFF (not UTF-8)");
    /* after a non-ASCII character the column still counts characters */
    expect_bad("(\xc3\xa9\xc3\xa9", 2, "U+00E9");
}

static void test_many_core_dims(void **state) {
    kiln_context *ctx = *state;
    gu_layout l;
    TEST_OK(gu_parse_layout("(a,b,c,d,e,f)->(f,e,d,c,b,a)", &l));
    assert_int_equal(l.core_nd[0], 6);
    kiln_gufunc *g = NULL;
    TEST_OK(kiln_guvectorize(ctx, "sum5", "void(f8[:,:,:,:,:], f8)", "(a,b,c,d,e)->()", "x, s",
                             "double t = 0;\n"
                             "for (int i = 0; i < x.shape[0]; i++) for (int j = 0; j < x.shape[1]; j++)\n"
                             "for (int k = 0; k < x.shape[2]; k++) for (int m = 0; m < x.shape[3]; m++)\n"
                             "for (int q = 0; q < x.shape[4]; q++) t += x(i, j, k, m, q);\n"
                             "s = t;",
                             NULL, &g));
    int64_t shape[6] = {3, 2, 3, 2, 2, 2};
    size_t n = 3 * 2 * 3 * 2 * 2 * 2;
    double *data = malloc(n * sizeof(double));
    test_rng r = test_rng_for(__func__);
    test_fill_f64(&r, data, n, -1, 1);
    kiln_array *x = NULL, *s = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 6, shape, data, n * sizeof(double), &x));
    kiln_value a[1] = {kiln_arr(x)};
    TEST_OK(kiln_gufunc_call(g, a, 1, &s, NULL));
    assert_int_equal(kiln_array_ndim(s), 1);
    double got[3];
    TEST_OK(kiln_array_to_host(s, got, sizeof got));
    for (int b = 0; b < 3; b++) {
        long double want = 0;
        for (size_t i = 0; i < n / 3; i++) want += data[(size_t)b * (n / 3) + i];
        assert_true(fabsl((long double)got[b] - want) < 1e-12L);
    }
    nvrtc_ok(g, NULL, a, 1, NULL);
    kiln_array_release(x);
    kiln_array_release(s);
    kiln_gufunc_release(g);
    free(data);
}

/* NumPy's optional dims (NEP 20): matmul's "(m?,n),(n,p?)->(m?,p?)" takes
 * vectors on either side, and the outputs lose the missing dims. */
static void matmul_case(kiln_context *ctx, kiln_gufunc *g, int and, const int64_t *ash, int bnd,
                        const int64_t *bsh, int want_nd, const int64_t *want_shape) {
    test_rng r = test_rng_for("matmul_case");
    size_t an = 1, bn = 1;
    for (int i = 0; i < and; i++) an *= (size_t)ash[i];
    for (int i = 0; i < bnd; i++) bn *= (size_t)bsh[i];
    double *av = malloc(an * sizeof(double)), *bv = malloc(bn * sizeof(double));
    test_fill_f64(&r, av, an, -1, 1);
    test_fill_f64(&r, bv, bn, -1, 1);
    kiln_array *a = NULL, *b = NULL, *c = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, and, ash, av, an * sizeof(double), &a));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, bnd, bsh, bv, bn * sizeof(double), &b));
    kiln_value args[2] = {kiln_arr(a), kiln_arr(b)};
    TEST_OK(kiln_gufunc_call(g, args, 2, &c, NULL));
    assert_int_equal(kiln_array_ndim(c), want_nd);
    size_t cn = 1;
    for (int i = 0; i < want_nd; i++) {
        assert_int_equal(kiln_array_shape(c)[i], want_shape[i]);
        cn *= (size_t)want_shape[i];
    }
    double *cv = malloc(cn * sizeof(double) + 8);
    TEST_OK(kiln_array_to_host(c, cv, cn * sizeof(double)));
    /* reference: treat a missing m or p as 1; batch only over a's loop dims */
    int a_vec = and == 1, b_vec = bnd == 1;
    int64_t n = b_vec ? bsh[0] : bsh[bnd - 2], p = b_vec ? 1 : bsh[bnd - 1];
    int64_t m = a_vec ? 1 : ash[and-2];
    size_t batch = an / (size_t)(m * n);
    for (size_t t = 0; t < batch; t++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < p; j++) {
                long double acc = 0;
                for (int64_t k = 0; k < n; k++) acc += (long double)av[t * m * n + i * n + k] * bv[k * p + j];
                double got = cv[t * m * p + i * p + j];
                if (fabsl(got - acc) > 1e-12L)
                    fail_msg("matmul (%zu,%lld,%lld): %g vs %Lg", t, (long long)i, (long long)j, got, acc);
            }
    nvrtc_ok(g, NULL, args, 2, NULL);
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(c);
    free(av);
    free(bv);
    free(cv);
}

static void test_optional_dims(void **state) {
    kiln_context *ctx = *state;
    gu_layout l;
    TEST_OK(gu_parse_layout("(m?,n),(n,p?)->(m?,p?)", &l));
    assert_string_equal(l.text, "(m?,n),(n,p?)->(m?,p?)");
    TEST_OK(gu_parse_layout("(n?)->(n?)", &l));
    TEST_OK(gu_parse_layout("(3?)->()", &l));
    expect_bad("(?)->()", 2, "must follow a dim");
    expect_bad("(n?"
               "?)->()",
               4, "expected ',' or ')'");
    expect_bad("(n|1)->()", 3, "'|1' is not supported");
    kiln_gufunc *g = NULL;
    TEST_OK(kiln_guvectorize(
        ctx, "matmul", "void(f8[:,:], f8[:,:], f8[:,:])", "(m?,n),(n,p?)->(m?,p?)", "a, b, c",
        "for (int i = 0; i < c.shape[0]; i++) for (int j = 0; j < c.shape[1]; j++) {\n"
        "    double s = 0; for (int k = 0; k < a.shape[1]; k++) s += a(i, k) * b(k, j);\n"
        "    c(i, j) = s; }",
        NULL, &g));
    int64_t m34[2] = {3, 4}, m45[2] = {4, 5}, v4[1] = {4}, b534[3] = {5, 3, 4};
    int64_t w35[2] = {3, 5}, w5[1] = {5}, w3[1] = {3}, w53[2] = {5, 3};
    matmul_case(ctx, g, 2, m34, 2, m45, 2, w35); /* matrix @ matrix */
    matmul_case(ctx, g, 1, v4, 2, m45, 1, w5);   /* vector @ matrix: m missing */
    matmul_case(ctx, g, 2, m34, 1, v4, 1, w3);   /* matrix @ vector: p missing */
    matmul_case(ctx, g, 1, v4, 1, v4, 0, NULL);  /* vector @ vector: both, a 0-d result */
    matmul_case(ctx, g, 3, b534, 1, v4, 2, w53); /* a stack of matrices @ a vector */
    /* a non-optional dim cannot go missing */
    kiln_gufunc *h = NULL;
    TEST_OK(
        kiln_guvectorize(ctx, "rowsum2", "void(f8[:,:], f8)", "(m,n)->()", "a, s", "s = a(0, 0);", NULL, &h));
    kiln_array *v = NULL, *out = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, v4, &v));
    kiln_value args[1] = {kiln_arr(v)};
    TEST_FAILS_WITH(kiln_gufunc_call(h, args, 1, &out, NULL), KILN_ERR_SHAPE, "need at least 2 dims");
    kiln_array_release(v);
    kiln_gufunc_release(h);
    kiln_gufunc_release(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_inputs),
        cmocka_unit_test(test_zero_fixed_size_is_rejected),
        cmocka_unit_test(test_non_ascii_is_reported_as_a_character),
        cmocka_unit_test(test_many_core_dims),
        cmocka_unit_test(test_optional_dims),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
