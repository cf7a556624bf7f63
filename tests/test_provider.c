/* test_provider.c: the common provider shape (core/provider.h): selection by
 * backend and load status, per-context states made once and released at
 * close in reverse order, and the errors a front passes on. */
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/provider.h"
#include "test_support.h"

static int loads_ok;
static int released[4], release_order[4], nreleased;

static kiln_status load_missing(void) {
    return kiln_set_error(KILN_ERR_LIBRARY_MISSING, "libfake.so.1 not found: install libfake1");
}
static kiln_status load_ok(void) {
    loads_ok++;
    return KILN_OK;
}
static kiln_status init_state(kiln_context *ctx, void **state) {
    (void)ctx;
    static int tags[4] = {0, 1, 2, 3};
    static int next;
    *state = &tags[next++ % 4];
    return KILN_OK;
}
static void release_state(kiln_context *ctx, void *state) {
    (void)ctx;
    int tag = *(int *)state;
    released[tag]++;
    release_order[nreleased++ % 4] = tag;
}

#define BOTH (KILN_PROVIDER_ON(KILN_BACKEND_CPU) | KILN_PROVIDER_ON(KILN_BACKEND_CUDA))
static const kiln_provider missing_cpu = {.abi = KILN_PROVIDER_ABI,
                                          .library = "fake",
                                          .name = "FakeMissing",
                                          .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU),
                                          .load = load_missing};
static const kiln_provider plain_any = {.abi = KILN_PROVIDER_ABI,
                                        .library = "fake",
                                        .name = "FakeAny",
                                        .backends = BOTH,
                                        .load = load_ok,
                                        .context_init = init_state,
                                        .context_release = release_state};
static const kiln_provider second_any = {.abi = KILN_PROVIDER_ABI,
                                         .library = "fake",
                                         .name = "FakeSecond",
                                         .backends = BOTH,
                                         .context_init = init_state,
                                         .context_release = release_state};
static const kiln_provider cuda_only = {.abi = KILN_PROVIDER_ABI,
                                        .library = "fake",
                                        .name = "FakeCuda",
                                        .backends = KILN_PROVIDER_ON(KILN_BACKEND_CUDA)};
static const kiln_provider cpu_only = {.abi = KILN_PROVIDER_ABI,
                                       .library = "fake",
                                       .name = "FakeCpu",
                                       .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU)};
static const kiln_provider wrong_abi = {
    .abi = KILN_PROVIDER_ABI + 1, .library = "fake", .name = "FakeOld", .backends = ~0u};

static void test_select_skips_missing_and_other_backends(void **state) {
    kiln_context *ctx = *state;
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    const kiln_provider *list[] = {NULL, cuda ? &cpu_only : &cuda_only, &missing_cpu, &plain_any};
    const kiln_provider *got = NULL;
    TEST_OK(kiln_provider_select(ctx, list, 4, &got));
    assert_ptr_equal(got, &plain_any);
    assert_true(loads_ok >= 1);
    assert_string_equal(kiln_provider_describe(got), "FakeAny");
}

static void test_select_reports_the_missing_library(void **state) {
    kiln_context *ctx = *state;
    if (kiln_context_backend(ctx) != KILN_BACKEND_CPU) skip();
    const kiln_provider *list[] = {&cuda_only, &missing_cpu};
    const kiln_provider *got = &plain_any;
    TEST_FAILS_WITH(kiln_provider_select(ctx, list, 2, &got), KILN_ERR_LIBRARY_MISSING, "install libfake1");
    assert_null(got);
}

static void test_select_names_the_backend_without_provider(void **state) {
    kiln_context *ctx = *state;
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    const kiln_provider *list[] = {cuda ? &cpu_only : &cuda_only};
    const kiln_provider *got;
    TEST_FAILS_WITH(kiln_provider_select(ctx, list, 1, &got), KILN_ERR_UNSUPPORTED,
                    cuda ? "fake has no provider on the CUDA backend"
                         : "fake has no provider on the CPU backend");
    const kiln_provider *old[] = {&wrong_abi};
    TEST_FAILS_WITH(kiln_provider_select(ctx, old, 1, &got), KILN_ERR_INTERNAL, "has ABI");
}

static void test_states_made_once_released_in_reverse(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    memset(released, 0, sizeof released);
    nreleased = 0;
    void *a, *a2, *b, *none;
    TEST_OK(kiln_provider_state(ctx, &plain_any, &a));
    TEST_OK(kiln_provider_state(ctx, &second_any, &b));
    TEST_OK(kiln_provider_state(ctx, &plain_any, &a2));
    TEST_OK(kiln_provider_state(ctx, &cpu_only, &none));
    assert_ptr_equal(a, a2);
    assert_ptr_not_equal(a, b);
    assert_null(none);
    int ta = *(int *)a, tb = *(int *)b;
    kiln_context_retain(ctx); /* read after kiln_close below */
    kiln_close(ctx);
    assert_int_equal(nreleased, 2);
    assert_int_equal(release_order[0], tb);
    assert_int_equal(release_order[1], ta);
    void *after;
    TEST_FAILS_WITH(kiln_provider_state(ctx, &plain_any, &after), KILN_ERR_CONTEXT_DEAD, "closed");
    kiln_context_release(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_select_skips_missing_and_other_backends, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test_setup_teardown(test_select_reports_the_missing_library, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test_setup_teardown(test_select_names_the_backend_without_provider, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test(test_states_made_once_released_in_reverse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
