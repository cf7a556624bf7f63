/* test_cpu_limits.c: limits CUDA enforces are enforced on the CPU before
 * anything runs (issue 13, item 4): static __shared__ memory beyond 48 KiB
 * is refused when the module loads (it aborted the process in dlopen), and
 * a host compiler that never finishes is stopped after
 * KILN_COMPILE_TIMEOUT_S. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"

static void test_static_shared_limit(void **state) {
    (void)state;
    if (strcmp(test_target(), "cpu") != 0) skip(); /* NVRTC/ptxas refuse it on CUDA already */
    kiln_context *ctx = test_open();
    kiln_kernel *k = NULL;
    /* 1 GiB (8 GiB no longer links: its offsets overflow), and 48.5 KiB */
    TEST_FAILS_WITH(kiln_kernel_from_source(ctx,
                                            "__global__ void huge(float *x) {\n"
                                            "    __shared__ float s[1u << 28];\n"
                                            "    s[threadIdx.x] = 1; __syncthreads(); x[0] = s[0];\n"
                                            "}\n",
                                            "huge", NULL, &k),
                    KILN_ERR_LAUNCH_CONFIG, "48 KiB");
    TEST_FAILS_WITH(kiln_kernel_from_source(ctx,
                                            "__global__ void over(float *x) {\n"
                                            "    __shared__ float s[12288 + 128];\n"
                                            "    s[threadIdx.x] = 1; __syncthreads(); x[0] = s[0];\n"
                                            "}\n",
                                            "over", NULL, &k),
                    KILN_ERR_LAUNCH_CONFIG, "static __shared__");
    /* exactly 48 KiB is fine, and runs */
    TEST_OK(
        kiln_kernel_from_source(ctx,
                                "__global__ void fits(float *x) {\n"
                                "    __shared__ float s[12288];\n"
                                "    s[threadIdx.x] = threadIdx.x; __syncthreads(); x[threadIdx.x] = s[3];\n"
                                "}\n",
                                "fits", NULL, &k));
    int64_t n = 4;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &a));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(4), 0, NULL, KILN_ARGS(kiln_arr(a))));
    float out[4];
    TEST_OK(kiln_array_to_host(a, out, sizeof out));
    for (int i = 0; i < 4; i++) assert_float_equal(out[i], 3.0f, 0);
    kiln_array_release(a);
    kiln_kernel_release(k);
    kiln_close(ctx);
}

/* A "compiler" that never finishes (a 2^40-instantiation template does the
 * same to a real one, slower) is stopped, with the setting named. */
static void test_compile_time_limit(void **state) {
    (void)state;
    if (strcmp(test_target(), "cpu") != 0) skip();
    char *dir = test_temp_dir("limits-cxx");
    char script[1200];
    snprintf(script, sizeof script, "%s/forever-cxx", dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nsleep 1000 &\nwait\n", f); /* a child too: the whole group is killed */
    fclose(f);
    chmod(script, 0700);
    setenv("KILN_CXX", script, 1);
    setenv("KILN_COMPILE_TIMEOUT_S", "2", 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kiln_context *ctx = test_open(); /* asks the compiler its version: also bounded */
    kiln_kernel *k = NULL;
    TEST_FAILS_WITH(kiln_kernel_from_source(ctx, "__global__ void k(int *x) { x[0] = 1; }", "k", NULL, &k),
                    KILN_ERR_COMPILE, "KILN_COMPILE_TIMEOUT_S");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    assert_true(s < 30);
    kiln_close(ctx);
    unsetenv("KILN_CXX");
    unsetenv("KILN_COMPILE_TIMEOUT_S");
    unlink(script);
    rmdir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_shared_limit),
        cmocka_unit_test(test_compile_time_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
