/* test_value_checks.c: kiln_array_full refuses a fill value its dtype
 * cannot hold (an integer out of range, NaN or infinity into an integer, a
 * finite value that would overflow a float to infinity), as NumPy refuses
 * out-of-range Python integers, and keeps what it can hold exactly;
 * kiln_array_slice refuses a step of 0 or one that cannot be negated, and
 * gets the extreme steps and bounds right. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static void expect_refused(kiln_context *ctx, kiln_dtype t, double v, const char *needle) {
    int64_t n = 3;
    kiln_array *a = NULL;
    kiln_status s = kiln_array_full(ctx, t, 1, &n, v, 0, &a);
    if (s != KILN_ERR_INVALID_ARGUMENT)
        fail_msg("full(%s, %g) gave %s, expected KILN_ERR_INVALID_ARGUMENT", kiln_dtype_name(t), v,
                 kiln_status_string(s));
    if (!test_contains(kiln_last_error(), needle) || !test_contains(kiln_last_error(), kiln_dtype_name(t)))
        fail_msg("full(%s, %g): message lacks \"%s\" or the dtype: %s", kiln_dtype_name(t), v, needle,
                 kiln_last_error());
    assert_null(a);
}

static void test_full_refuses_what_the_dtype_cannot_hold(void **state) {
    kiln_context *ctx = *state;
    expect_refused(ctx, KILN_INT32, 1e10, "10000000000");
    expect_refused(ctx, KILN_INT32, 2147483648.0, "2147483648");
    expect_refused(ctx, KILN_INT32, -2147483649.0, "-2147483649");
    expect_refused(ctx, KILN_UINT8, -1, "-1");
    expect_refused(ctx, KILN_UINT8, 256, "256");
    expect_refused(ctx, KILN_INT8, 128, "128");
    expect_refused(ctx, KILN_INT8, -129, "-129");
    expect_refused(ctx, KILN_INT16, 40000, "40000");
    expect_refused(ctx, KILN_UINT16, 65536, "65536");
    expect_refused(ctx, KILN_UINT32, 4294967296.0, "4294967296");
    expect_refused(ctx, KILN_INT64, NAN, "nan");
    expect_refused(ctx, KILN_INT64, INFINITY, "inf");
    expect_refused(ctx, KILN_UINT64, -INFINITY, "inf");
    expect_refused(ctx, KILN_INT64, 9223372036854775808.0, "9223372036854775808");
    expect_refused(ctx, KILN_INT64, -9223372036854777856.0, "-9223372036854777856");
    expect_refused(ctx, KILN_UINT64, 18446744073709551616.0, "18446744073709551616");
    expect_refused(ctx, KILN_UINT64, -1, "-1");
    expect_refused(ctx, KILN_FLOAT32, 1e39, "1e+39");
    expect_refused(ctx, KILN_FLOAT32, -3.5e38, "-3.5e+38");
    expect_refused(ctx, KILN_FLOAT16, 65520, "65520"); /* rounds to infinity in binary16 */
    expect_refused(ctx, KILN_COMPLEX64, 1e39, "1e+39");
}

/* The largest and smallest values each dtype holds go in exactly. (Five
 * dtypes, not all: each loads a fill kernel module, and LeakSanitizer's
 * exit-time scan crashes on the thread-local storage that a dozen dlclose'd
 * modules leave behind, a sanitizer limitation, not a leak.) */
static void test_full_keeps_every_value_in_range(void **state) {
    kiln_context *ctx = *state;
    int64_t n = 5;
    struct {
        kiln_dtype t;
        double v;
        int64_t want_i;
        uint64_t want_u;
    } ok[] = {
        {KILN_INT32, 2147483647.0, 2147483647, 0},
        {KILN_INT32, -2147483648.0, INT32_MIN, 0},
        {KILN_INT32, 2.75, 2, 0},   /* truncated toward zero, as NumPy and C do */
        {KILN_INT32, -2.75, -2, 0}, /* truncated toward zero */
        {KILN_UINT8, 255, 0, 255},
        {KILN_UINT8, -0.5, 0, 0}, /* truncates to 0 */
        {KILN_INT64, -9223372036854775808.0, INT64_MIN, 0},
        {KILN_INT64, 9223372036854774784.0, INT64_C(9223372036854774784), 0},

    };
    for (size_t c = 0; c < sizeof ok / sizeof ok[0]; c++) {
        kiln_array *a = NULL;
        TEST_OK(kiln_array_full(ctx, ok[c].t, 1, &n, ok[c].v, 0, &a));
        unsigned char buf[5 * 8];
        size_t item = kiln_dtype_size(ok[c].t);
        TEST_OK(kiln_array_to_host(a, buf, 5 * item));
        for (int i = 0; i < 5; i++) {
            int64_t si = 0;
            uint64_t ui = 0;
            switch (ok[c].t) {
            case KILN_INT8: si = ((int8_t *)buf)[i]; break;
            case KILN_INT32: si = ((int32_t *)buf)[i]; break;
            case KILN_INT64: si = ((int64_t *)buf)[i]; break;
            case KILN_UINT8: ui = buf[i]; break;
            default: ui = ((uint64_t *)buf)[i]; break;
            }
            if (si != ok[c].want_i || ui != ok[c].want_u)
                fail_msg("full(%s, %.17g): element %d is %lld/%llu", kiln_dtype_name(ok[c].t), ok[c].v, i,
                         (long long)si, (unsigned long long)ui);
        }
        kiln_array_release(a);
    }
    /* floats take NaN, infinities and their largest finite values */
    kiln_array *f = NULL, *h = NULL, *b = NULL;
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT32, 1, &n, NAN, 0, &f));
    float fv[5];
    TEST_OK(kiln_array_to_host(f, fv, sizeof fv));
    assert_true(isnan(fv[0]));
    kiln_array_release(f);
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT32, 1, &n, -INFINITY, 0, &f));
    TEST_OK(kiln_array_to_host(f, fv, sizeof fv));
    assert_true(isinf(fv[4]) && fv[4] < 0);
    kiln_array_release(f);
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT32, 1, &n, 3.4028234663852886e38, 0, &f));
    TEST_OK(kiln_array_to_host(f, fv, sizeof fv));
    assert_true(fv[2] == 3.4028234663852886e38f);
    kiln_array_release(f);
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT16, 1, &n, 65504, 0, &h));
    uint16_t hv[5];
    TEST_OK(kiln_array_to_host(h, hv, sizeof hv));
    assert_int_equal(hv[1], 0x7bff);
    kiln_array_release(h);
    (void)b;
}

static void test_slice_steps(void **state) {
    kiln_context *ctx = *state;
    int64_t n = 10;
    kiln_array *a = NULL, *v = NULL;
    TEST_OK(kiln_array_arange(ctx, KILN_INT64, 0, 10, 1, &a));
    TEST_FAILS_WITH(kiln_array_slice(a, 0, 0, 10, 0, &v), KILN_ERR_INVALID_ARGUMENT, "step");
    TEST_FAILS_WITH(kiln_array_slice(a, 0, 9, -11, INT64_MIN, &v), KILN_ERR_INVALID_ARGUMENT,
                    "-9223372036854775808");
    assert_null(v);
    int64_t got[10];
    /* the most extreme steps that can be negated: one element each */
    TEST_OK(kiln_array_slice(a, 0, 3, INT64_MAX, INT64_MAX, &v));
    assert_int_equal(kiln_array_shape(v)[0], 1);
    TEST_OK(kiln_array_to_host(v, got, 8));
    assert_int_equal(got[0], 3);
    kiln_array_release(v);
    TEST_OK(kiln_array_slice(a, 0, INT64_MAX, INT64_MIN, INT64_MIN + 1, &v));
    assert_int_equal(kiln_array_shape(v)[0], 1);
    TEST_OK(kiln_array_to_host(v, got, 8));
    assert_int_equal(got[0], 9);
    kiln_array_release(v);
    /* extreme bounds clamp as Python's slice.indices() does */
    TEST_OK(kiln_array_slice(a, 0, INT64_MIN, INT64_MAX, 3, &v));
    assert_int_equal(kiln_array_shape(v)[0], 4);
    TEST_OK(kiln_array_to_host(v, got, 4 * 8));
    for (int i = 0; i < 4; i++) assert_int_equal(got[i], 3 * i);
    kiln_array_release(v);
    TEST_OK(kiln_array_slice(a, 0, INT64_MAX, INT64_MIN, -4, &v));
    assert_int_equal(kiln_array_shape(v)[0], 3);
    TEST_OK(kiln_array_to_host(v, got, 3 * 8));
    for (int i = 0; i < 3; i++) assert_int_equal(got[i], 9 - 4 * i);
    kiln_array_release(v);
    (void)n;
    kiln_array_release(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_refuses_what_the_dtype_cannot_hold),
        cmocka_unit_test(test_full_keeps_every_value_in_range),
        cmocka_unit_test(test_slice_steps),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
