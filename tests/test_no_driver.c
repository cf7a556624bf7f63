/* test_no_driver.c: a machine with no NVIDIA driver (this is CI's machine):
 * "cuda" fails with a clear status, "auto" falls back to the CPU with a
 * one-line notice, and nothing crashes or prints loader errors. On a machine
 * with a GPU these checks do not apply and are skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static char self_path[1024];

static int have_gpu(void) {
    int n = 0;
    const char *why = NULL;
    return kiln_cuda_device_count(&n, &why) == KILN_OK && n > 0;
}

static void test_cuda_target_fails_clearly(void **state) {
    (void)state;
    if (have_gpu()) skip();
    int n = -1;
    const char *why = NULL;
    TEST_OK(kiln_cuda_device_count(&n, &why));
    assert_int_equal(n, 0);
    assert_non_null(why);
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, "cuda");
    assert_int_equal(s, KILN_ERR_NO_DEVICE);
    assert_null(ctx);
    if (!test_contains(kiln_last_error(), "libcuda")) fail_msg("message: %s", kiln_last_error());
    s = kiln_open(&ctx, "cuda:3");
    assert_int_equal(s, KILN_ERR_NO_DEVICE);
    TEST_FAILS_WITH(kiln_open(&ctx, "gpu"), KILN_ERR_INVALID_ARGUMENT, "unknown target 'gpu'");
    TEST_FAILS_WITH(kiln_open(&ctx, "cuda:x"), KILN_ERR_INVALID_ARGUMENT, "unknown target 'cuda:x'");
}

static void test_auto_falls_back_with_one_line(void **state) {
    (void)state;
    if (have_gpu()) skip();
    char *argv[] = {self_path, "child-auto", NULL};
    char *env[] = {"KILN_TARGET=", NULL};
    char *out = NULL;
    assert_int_equal(test_spawn(argv, env, &out), 0);
    if (!test_contains(out, "kiln: no usable GPU (") || !test_contains(out, "using the CPU backend") ||
        !test_contains(out, "backend=cpu"))
        fail_msg("child output:\n%s", out);
    /* exactly one notice line */
    int lines = 0;
    for (char *p = out; (p = strstr(p, "kiln: ")) != NULL; p++) lines++;
    assert_int_equal(lines, 1);
    free(out);
}

static void test_kiln_target_overrides_auto(void **state) {
    (void)state;
    char *argv[] = {self_path, "child-auto", NULL};
    char *env[] = {"KILN_TARGET=cpu", NULL};
    char *out = NULL;
    assert_int_equal(test_spawn(argv, env, &out), 0);
    if (!test_contains(out, "backend=cpu") || test_contains(out, "no usable GPU"))
        fail_msg("child output:\n%s", out);
    free(out);
}

static int child_auto(void) {
    kiln_context *ctx = NULL;
    if (kiln_open(&ctx, "auto") != KILN_OK) {
        printf("open failed: %s\n", kiln_last_error());
        return 1;
    }
    printf("backend=%s\n", kiln_context_backend_name(ctx));
    kiln_close(ctx);
    return 0;
}

int main(int argc, char **argv) {
    snprintf(self_path, sizeof self_path, "%s", argv[0]);
    if (argc > 1 && strcmp(argv[1], "child-auto") == 0) return child_auto();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_target_fails_clearly),
        cmocka_unit_test(test_auto_falls_back_with_one_line),
        cmocka_unit_test(test_kiln_target_overrides_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
