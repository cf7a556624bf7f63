/* test_cpu_fission_forms.c: barrier loops written the older way take loop
 * fission on the CPU: a counter declared before its loops, break and
 * continue on a uniform condition, a bound computed by an intrinsic call.
 * Each kernel runs as compiled and with -DKILN_CPU_FIBERS (on CUDA both are
 * the GPU); the two must agree to the bit and match a host reference. The
 * forms kiln cannot prove uniform keep fibers, and the path note names the
 * line and the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_support.h"

#define B 64

static const char *src = "#define B 64\n"
                         "// the counter is declared before the loop, as C89 wanted\n"
                         "__global__ void old_counter(const float *in, float *out, int n) {\n"
                         "    __shared__ float s[B];\n"
                         "    int i, j;\n"
                         "    int t = threadIdx.x;\n"
                         "    float acc = 0;\n"
                         "    for (i = 0; i < n; i++) {\n"
                         "        s[t] = in[i * B + t];\n"
                         "        __syncthreads();\n"
                         "        for (j = 0; j < 2; j++) acc += s[(t + j) % B];\n"
                         "        __syncthreads();\n"
                         "    }\n"
                         "    for (i = 1; i < 3; i++) acc *= 2;\n"
                         "    out[blockIdx.x * B + t] = acc;\n"
                         "}\n"
                         "// break when a uniform count is reached\n"
                         "__global__ void early_break(const float *in, float *out, int n, int stop) {\n"
                         "    __shared__ float s[B];\n"
                         "    int t = threadIdx.x;\n"
                         "    float acc = 0;\n"
                         "    for (int i = 0; i < n; i++) {\n"
                         "        s[t] = in[i * B + t];\n"
                         "        __syncthreads();\n"
                         "        acc += s[B - 1 - t];\n"
                         "        __syncthreads();\n"
                         "        if (i == stop) break;\n"
                         "    }\n"
                         "    out[blockIdx.x * B + t] = acc;\n"
                         "}\n"
                         "// uniform work, then break, under one if\n"
                         "__global__ void break_block(const float *in, float *out, int n, int stop) {\n"
                         "    __shared__ float s[B];\n"
                         "    int t = threadIdx.x;\n"
                         "    float acc = 0, last = 0;\n"
                         "    for (int i = 0; i < n; i++) {\n"
                         "        s[t] = in[i * B + t];\n"
                         "        __syncthreads();\n"
                         "        acc += s[(t + 5) % B];\n"
                         "        __syncthreads();\n"
                         "        if (i >= stop) {\n"
                         "            last = s[t];\n"
                         "            break;\n"
                         "        }\n"
                         "    }\n"
                         "    out[blockIdx.x * B + t] = acc + last;\n"
                         "}\n"
                         "// continue on a uniform test, in braces\n"
                         "__global__ void skip_odd(const float *in, float *out, int n) {\n"
                         "    __shared__ float s[B];\n"
                         "    int t = threadIdx.x;\n"
                         "    float acc = 0;\n"
                         "    for (int i = 0; i < n; i++) {\n"
                         "        if (i % 2 == 1) { continue; }\n"
                         "        s[t] = in[i * B + t];\n"
                         "        __syncthreads();\n"
                         "        acc += s[(t + 3) % B];\n"
                         "        __syncthreads();\n"
                         "    }\n"
                         "    out[blockIdx.x * B + t] = acc;\n"
                         "}\n"
                         "// butterfly sum: log2(n) steps, the bound an intrinsic of a parameter\n"
                         "__global__ void log_bound(const float *in, float *out, int n) {\n"
                         "    __shared__ float s[B];\n"
                         "    int i;\n"
                         "    int t = threadIdx.x;\n"
                         "    s[t] = in[blockIdx.x * B + t];\n"
                         "    __syncthreads();\n"
                         "    for (i = 0; i < __popc(n - 1); i++) {\n"
                         "        float v = s[t ^ (1 << i)];\n"
                         "        __syncthreads();\n"
                         "        s[t] += v;\n"
                         "        __syncthreads();\n"
                         "    }\n"
                         "    out[blockIdx.x * B + t] = s[t];\n"
                         "}\n";

/* The usual spelling of such a bound, a fast-math intrinsic: its path
 * only (running it needs the CPU prelude to define __log2f). */
static const char *fast_math_bound = "__global__ void log2_bound(float *x, int n) {\n"
                                     "    __shared__ float s[64];\n"
                                     "    int i;\n"
                                     "    int t = threadIdx.x;\n"
                                     "    for (i = 0; i < __log2f(n); i++) {\n"
                                     "        s[t] = x[t] + i;\n"
                                     "        __syncthreads();\n"
                                     "        x[t] = s[(t + 1) % 64];\n"
                                     "        __syncthreads();\n"
                                     "    }\n"
                                     "}\n";

/* Forms that stay on fibers: compiled for their path notes only (the first
 * two would deadlock on a GPU). */
static const char *unproven = "__device__ int steps(int n) { return n / 2; }\n"
                              "__global__ void varying_break(float *x, int n) {\n"
                              "    __shared__ float s[64];\n"
                              "    int t = threadIdx.x;\n"
                              "    for (int i = 0; i < n; i++) {\n"
                              "        s[t] = x[t] + i;\n"
                              "        __syncthreads();\n"
                              "        if (t == i) break;\n"
                              "    }\n"
                              "}\n"
                              "__global__ void counter_read_after(float *x, int n) {\n"
                              "    __shared__ float s[64];\n"
                              "    int i;\n"
                              "    int t = threadIdx.x;\n"
                              "    for (i = 0; i < n; i++) {\n"
                              "        s[t] = x[t];\n"
                              "        __syncthreads();\n"
                              "    }\n"
                              "    x[t] = i;\n"
                              "}\n"
                              "__global__ void called_bound(float *x, int n) {\n"
                              "    __shared__ float s[64];\n"
                              "    int t = threadIdx.x;\n"
                              "    for (int i = 0; i < steps(n); i++) {\n"
                              "        s[t] = x[t];\n"
                              "        __syncthreads();\n"
                              "    }\n"
                              "}\n";

static void test_paths(void **state) {
    (void)state;
    char *log = NULL;
    TEST_OK(kiln_compile_only("cpu", NULL, src, "forms.cu", NULL, &log));
    test_expect_cpu_path(log, "old_counter", "fission", NULL);
    test_expect_cpu_path(log, "early_break", "fission", NULL);
    test_expect_cpu_path(log, "skip_odd", "fission", NULL);
    test_expect_cpu_path(log, "break_block", "fission", NULL);
    test_expect_cpu_path(log, "log_bound", "fission", NULL);
    kiln_free(log);
    log = NULL;
    TEST_OK(kiln_compile_only("cpu", NULL, fast_math_bound, "log2.cu", NULL, &log));
    test_expect_cpu_path(log, "log2_bound", "fission", NULL);
    kiln_free(log);
    log = NULL;
    TEST_OK(kiln_compile_only("cpu", NULL, unproven, "unproven.cu", NULL, &log));
    test_expect_cpu_path(log, "varying_break", "fibers",
                         "break or continue under a condition that is not uniform");
    test_expect_cpu_path(log, "varying_break", "fibers", "line 8");
    test_expect_cpu_path(log, "counter_read_after", "fibers",
                         "declared before it and also used outside its loops");
    test_expect_cpu_path(log, "counter_read_after", "fibers", "line 15");
    test_expect_cpu_path(log, "called_bound", "fibers",
                         "calls a function kiln cannot prove uniform (at 'steps', line 24)");
    kiln_free(log);
    /* NVRTC takes the same source */
    log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "forms.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING) TEST_OK(s);
    kiln_free(log);
}

/* Runs kernel `name` of the module built with `options` over `blocks`
 * blocks; returns the output (malloc'd). */
static float *run(kiln_context *ctx, const char *options, const char *name, const float *in, size_t n_in,
                  int blocks, const kiln_value *extra, int nextra) {
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "forms.cu", options, &m));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, name, &k));
    int64_t ni = (int64_t)n_in, no = (int64_t)blocks * B;
    kiln_array *a = NULL, *o = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &ni, in, n_in * sizeof *in, &a));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &no, &o));
    kiln_value args[4] = {kiln_arr(a), kiln_arr(o)};
    for (int i = 0; i < nextra; i++) args[2 + i] = extra[i];
    TEST_OK(kiln_launch(k, KILN_DIM(blocks), KILN_DIM(B), 0, NULL, args, 2 + nextra));
    float *out = malloc((size_t)no * sizeof *out);
    TEST_OK(kiln_array_to_host(o, out, (size_t)no * sizeof *out));
    kiln_array_release(a);
    kiln_array_release(o);
    kiln_kernel_release(k);
    kiln_module_release(m);
    return out;
}

/* Fission and fibers give the same bits, and the host reference's values. */
static void check(kiln_context *ctx, const char *name, const float *in, size_t n_in, int blocks,
                  const kiln_value *extra, int nextra, const float *want) {
    float *fis = run(ctx, NULL, name, in, n_in, blocks, extra, nextra);
    float *fib = run(ctx, "-DKILN_CPU_FIBERS", name, in, n_in, blocks, extra, nextra);
    for (int i = 0; i < blocks * B; i++) {
        if (memcmp(&fis[i], &fib[i], sizeof(float)) != 0)
            fail_msg("%s: out[%d] is %a as compiled, %a on fibers", name, i, fis[i], fib[i]);
        if (fis[i] != want[i]) fail_msg("%s: out[%d] = %g, want %g", name, i, fis[i], want[i]);
    }
    free(fis);
    free(fib);
}

/* Small integers in floats: every sum below is exact, so the host
 * reference is too. */
static float *inputs(size_t n) {
    float *x = malloc(n * sizeof *x);
    test_rng r = test_rng_for("fission_forms");
    for (size_t i = 0; i < n; i++) x[i] = (float)(int)test_uniform(&r, -50, 50);
    return x;
}

static void test_old_counter(void **state) {
    const int n = 5;
    float *in = inputs((size_t)n * B), want[2 * B];
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < B; t++) {
            float acc = 0;
            for (int i = 0; i < n; i++)
                for (int j = 0; j < 2; j++) acc += in[i * B + (t + j) % B];
            want[b * B + t] = acc * 4;
        }
    kiln_value extra[] = {kiln_i32(n)};
    check(*state, "old_counter", in, (size_t)n * B, 2, extra, 1, want);
    free(in);
}

static void test_early_break(void **state) {
    const int n = 8, stop = 3;
    float *in = inputs((size_t)n * B), want[B];
    for (int t = 0; t < B; t++) {
        float acc = 0;
        for (int i = 0; i <= stop; i++) acc += in[i * B + B - 1 - t];
        want[t] = acc;
    }
    kiln_value extra[] = {kiln_i32(n), kiln_i32(stop)};
    check(*state, "early_break", in, (size_t)n * B, 1, extra, 2, want);
    free(in);
}

static void test_break_block(void **state) {
    const int n = 9, stop = 4;
    float *in = inputs((size_t)n * B), want[2 * B];
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < B; t++) {
            float acc = 0;
            for (int i = 0; i <= stop; i++) acc += in[i * B + (t + 5) % B];
            want[b * B + t] = acc + in[stop * B + t];
        }
    kiln_value extra[] = {kiln_i32(n), kiln_i32(stop)};
    check(*state, "break_block", in, (size_t)n * B, 2, extra, 2, want);
    free(in);
}

static void test_skip_odd(void **state) {
    const int n = 7;
    float *in = inputs((size_t)n * B), want[B];
    for (int t = 0; t < B; t++) {
        float acc = 0;
        for (int i = 0; i < n; i += 2) acc += in[i * B + (t + 3) % B];
        want[t] = acc;
    }
    kiln_value extra[] = {kiln_i32(n)};
    check(*state, "skip_odd", in, (size_t)n * B, 1, extra, 1, want);
    free(in);
}

static void test_log_bound(void **state) {
    float *in = inputs(3 * B), want[3 * B];
    for (int b = 0; b < 3; b++) {
        float s[B];
        memcpy(s, in + b * B, sizeof s);
        for (int i = 0; i < 6; i++) {
            float v[B];
            for (int t = 0; t < B; t++) v[t] = s[t ^ (1 << i)];
            for (int t = 0; t < B; t++) s[t] += v[t];
        }
        memcpy(want + b * B, s, sizeof s);
    }
    kiln_value extra[] = {kiln_i32(B)};
    check(*state, "log_bound", in, 3 * B, 3, extra, 1, want);
    free(in);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),       cmocka_unit_test(test_old_counter),
        cmocka_unit_test(test_early_break), cmocka_unit_test(test_break_block),
        cmocka_unit_test(test_skip_odd),    cmocka_unit_test(test_log_bound),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
