/* test_fill_extremes.c: kiln_array_full keeps the extreme values of the
 * dtypes test_value_checks leaves out (int8, uint64, bool): in a process of
 * their own, since every dtype loads its own fill kernel module and
 * LeakSanitizer's exit scan trips over the TLS of a dozen dlclose'd ones. */
#include <math.h>
#include <string.h>

#include "test_support.h"

static void test_extremes_go_in_exactly(void **state) {
    kiln_context *ctx = *state;
    int64_t n = 4;
    kiln_array *a = NULL;
    int8_t i8[4];
    TEST_OK(kiln_array_full(ctx, KILN_INT8, 1, &n, -128, 0, &a));
    TEST_OK(kiln_array_to_host(a, i8, sizeof i8));
    assert_int_equal(i8[3], -128);
    kiln_array_release(a);
    TEST_OK(kiln_array_full(ctx, KILN_INT8, 1, &n, 127.9, 0, &a)); /* truncated toward zero */
    TEST_OK(kiln_array_to_host(a, i8, sizeof i8));
    assert_int_equal(i8[0], 127);
    kiln_array_release(a);
    uint64_t u64[4];
    TEST_OK(kiln_array_full(ctx, KILN_UINT64, 1, &n, 18446744073709549568.0, 0, &a)); /* 2^64 - 2048 */
    TEST_OK(kiln_array_to_host(a, u64, sizeof u64));
    assert_true(u64[2] == UINT64_C(18446744073709549568));
    kiln_array_release(a);
    /* bool: anything non-zero, NaN included, is true (NumPy's bool(nan)) */
    unsigned char b[4];
    TEST_OK(kiln_array_full(ctx, KILN_BOOL, 1, &n, NAN, 0, &a));
    TEST_OK(kiln_array_to_host(a, b, sizeof b));
    assert_int_equal(b[1], 1);
    kiln_array_release(a);
    TEST_OK(kiln_array_full(ctx, KILN_BOOL, 1, &n, -0.0, 0, &a));
    TEST_OK(kiln_array_to_host(a, b, sizeof b));
    assert_int_equal(b[1], 0);
    kiln_array_release(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extremes_go_in_exactly),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
