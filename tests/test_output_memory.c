/* test_output_memory.c: kiln_array_memory of a ufunc's new output is what
 * kiln.h promises, on both backends: host memory when every array input is
 * host memory, device memory when any is on the device; and the values are
 * right in either case. */
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static void check_sum(kiln_array *out, const double *x, const double *y, int64_t n) {
    double *got = malloc(sizeof(double) * (size_t)n);
    TEST_OK(kiln_array_to_host(out, got, sizeof(double) * (size_t)n));
    for (int64_t i = 0; i < n; i++) assert_true(got[i] == x[i] + 2 * y[i]);
    free(got);
}

static void test_new_output_memory_follows_the_inputs(void **state) {
    kiln_context *ctx = *state;
    kiln_ufunc *f = NULL;
    TEST_OK(kiln_vectorize(ctx, "xp2y", "f8(f8,f8)", "x, y", "return x + 2 * y;", NULL, &f));
    test_rng r = test_rng_for(__func__);
    int64_t n = 1000;
    double *x = malloc(sizeof(double) * 1000), *y = malloc(sizeof(double) * 1000);
    test_fill_f64(&r, x, 1000, -10, 10);
    test_fill_f64(&r, y, 1000, -10, 10);
    kiln_array *hx = NULL, *hy = NULL, *dx = NULL, *dy = NULL;
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, x, &hx));
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, y, &hy));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &n, x, sizeof(double) * 1000, &dx));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &n, y, sizeof(double) * 1000, &dy));
    struct {
        kiln_array *a, *b;
        kiln_memory want;
        const char *what;
    } cases[] = {
        {hx, hy, KILN_MEMORY_HOST, "host + host"},
        {dx, dy, KILN_MEMORY_DEVICE, "device + device"},
        {hx, dy, KILN_MEMORY_DEVICE, "host + device"},
        {dx, hy, KILN_MEMORY_DEVICE, "device + host"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_array *out = NULL;
        TEST_OK(kiln_call(f, KILN_ARGS(kiln_arr(cases[c].a), kiln_arr(cases[c].b)), &out));
        if (kiln_array_memory(out) != cases[c].want)
            fail_msg("%s on %s: new output is %s memory, kiln.h promises %s", cases[c].what, test_target(),
                     kiln_array_memory(out) == KILN_MEMORY_HOST ? "host" : "device",
                     cases[c].want == KILN_MEMORY_HOST ? "host" : "device");
        check_sum(out, x, y, n);
        /* host memory is readable right here, with no copy */
        if (cases[c].want == KILN_MEMORY_HOST) {
            const double *p = kiln_array_data(out);
            for (int64_t i = 0; i < n; i++) assert_true(p[i] == x[i] + 2 * y[i]);
        }
        kiln_array_release(out);
    }
    /* a scalar with a host array: still host-only array inputs */
    kiln_array *out = NULL;
    TEST_OK(kiln_call(f, KILN_ARGS(kiln_arr(hx), kiln_f64(0.5)), &out));
    assert_int_equal(kiln_array_memory(out), KILN_MEMORY_HOST);
    const double *p = kiln_array_data(out);
    for (int64_t i = 0; i < n; i++) assert_true(p[i] == x[i] + 1.0);
    kiln_array_release(out);
    kiln_array_release(hx);
    kiln_array_release(hy);
    kiln_array_release(dx);
    kiln_array_release(dy);
    kiln_ufunc_release(f);
    free(x);
    free(y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_output_memory_follows_the_inputs),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
