/* test_ufunc_examples.c: the seed ufunc workloads (examples/ufunc_examples.c)
 * run small on the backend under test and pass their host-reference checks. */
#include <stdio.h>

#include "examples.h"
#include "test_support.h"

int kiln_example_ufunc_haversine(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_ufunc_add(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_ufunc_black_scholes(kiln_context *ctx, const kiln_example_opts *opts,
                                     kiln_example_result *res);
int kiln_example_ufunc_vector_add(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);

static void run(kiln_example_fn fn, const char *name, int64_t size) {
    kiln_context *ctx = test_open();
    kiln_example_opts opts = {size, 3, 0, NULL, 0};
    kiln_example_result res;
    TEST_OK((kiln_status)fn(ctx, &opts, &res));
    printf("%s: %s (median %.3f ms)\n", name, res.check, res.ms_median);
    if (!res.passed) fail_msg("%s failed its check: %s", name, res.check);
    kiln_close(ctx);
}

static void haversine(void **state) {
    (void)state;
    run(kiln_example_ufunc_haversine, "haversine", 10000);
}
static void add(void **state) {
    (void)state;
    run(kiln_example_ufunc_add, "add", 100000);
}
static void black_scholes(void **state) {
    (void)state;
    run(kiln_example_ufunc_black_scholes, "black_scholes", 40000);
}
static void vector_add(void **state) {
    (void)state;
    run(kiln_example_ufunc_vector_add, "vector_add", 1000003);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(haversine),
        cmocka_unit_test(add),
        cmocka_unit_test(black_scholes),
        cmocka_unit_test(vector_add),
    };
    return cmocka_run_group_tests_name("ufunc_examples", tests, NULL, NULL);
}
