/* test_kernel.c: raw kernels on the backend under test: compile, look up,
 * check arguments, launch, and every user error the issue names. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static const char *module_src =
    "__global__ void saxpy(float a, const float *x, float *y, size_t n) {\n"
    "    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "// Block sum through dynamic shared memory and barriers.\n"
    "__global__ void block_sum(const double *x, double *out, int n) {\n"
    "    extern __shared__ double partial[];\n"
    "    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;\n"
    "    partial[t] = i < n ? x[i] : 0.0;\n"
    "    __syncthreads();\n"
    "    for (int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "        if (t < s) partial[t] += partial[t + s];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) out[blockIdx.x] = partial[0];\n"
    "}\n"
    "__global__ void histogram(const unsigned char *v, unsigned int *bins, int n) {\n"
    "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "        atomicAdd(&bins[v[i] % 16], 1u);\n"
    "}\n"
    "__global__ void cmul(kiln_complex64 *z, kiln_complex64 w, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) z[i] = z[i] * w + kiln_complex64(1.0f, 0.0f);\n"
    "}\n";

static void test_module_lists_kernels_and_params(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, module_src, "module.cu", NULL, &m));
    assert_int_equal(kiln_module_kernel_count(m), 4);
    assert_string_equal(kiln_module_kernel_name(m, 0), "saxpy");
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "saxpy", &k));
    assert_int_equal(kiln_kernel_param_count(k), 4);
    kiln_param_info p;
    TEST_OK(kiln_kernel_param(k, 0, &p));
    assert_int_equal(p.cls, KILN_PARAM_FLOAT);
    assert_int_equal(p.size, 4);
    TEST_OK(kiln_kernel_param(k, 1, &p));
    assert_int_equal(p.cls, KILN_PARAM_POINTER);
    assert_int_equal(p.pointee_cls, KILN_PARAM_FLOAT);
    assert_int_equal(p.pointee_size, 4);
    TEST_OK(kiln_kernel_param(k, 3, &p));
    assert_int_equal(p.cls, KILN_PARAM_UNSIGNED);
    assert_int_equal(p.size, sizeof(size_t));
    kiln_kernel *missing = NULL;
    TEST_FAILS_WITH(kiln_module_kernel(m, "saxpi", &missing), KILN_ERR_NOT_FOUND,
                    "no kernel 'saxpi' in module.cu; its kernels are: saxpy block_sum histogram cmul");
    kiln_kernel_release(k);
    kiln_module_release(m);
}

/* saxpy against the host, compiled fully and with --fast-compile (less
 * optimisation: NVRTC -Ofc=mid, the host compiler -O1), which is a module
 * of its own (another cache key) and computes the same. */
static void test_saxpy_matches_host(void **state) {
    kiln_context *ctx = *state;
    int64_t n = 100003;
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *out = malloc((size_t)n * 4);
    test_rng r = test_rng_for(__func__);
    test_fill_f32(&r, x, (size_t)n, -10, 10);
    test_fill_f32(&r, y, (size_t)n, -10, 10);
    kiln_jit_stats before, after;
    TEST_OK(kiln_jit_stats_get(ctx, &before));
    const char *options[2] = {NULL, "--fast-compile"};
    for (int o = 0; o < 2; o++) {
        kiln_array *dx = NULL, *dy = NULL;
        TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, x, (size_t)n * 4, &dx));
        TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, y, (size_t)n * 4, &dy));
        kiln_kernel *k = NULL;
        TEST_OK(kiln_kernel_from_source(ctx, module_src, "saxpy", options[o], &k));
        /* kiln_i64(n) feeds a size_t parameter: the value fits, so it converts. */
        TEST_OK(kiln_launch(k, KILN_DIM((uint32_t)((n + 255) / 256)), KILN_DIM(256), 0, NULL,
                            KILN_ARGS(kiln_f32(2.5f), kiln_arr(dx), kiln_arr(dy), kiln_i64(n))));
        TEST_OK(kiln_array_to_host(dy, out, (size_t)n * 4));
        for (int64_t i = 0; i < n; i++) {
            float expect = 2.5f * x[i] + y[i];
            if (fabsf(out[i] - expect) > 1e-5f * (1 + fabsf(expect)))
                fail_msg("options %s: y[%lld] = %g, expected %g", options[o] ? options[o] : "none",
                         (long long)i, out[i], expect);
        }
        kiln_kernel_release(k);
        kiln_array_release(dx);
        kiln_array_release(dy);
    }
    TEST_OK(kiln_jit_stats_get(ctx, &after));
    assert_int_equal(after.compiles + after.cache_hits - before.compiles - before.cache_hits, 2);
    free(x);
    free(y);
    free(out);
}

static void test_barriers_dynamic_shared_atomics_complex(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, module_src, "module.cu", NULL, &m));
    kiln_kernel *sum = NULL, *hist = NULL, *cmul = NULL;
    TEST_OK(kiln_module_kernel(m, "block_sum", &sum));
    TEST_OK(kiln_module_kernel(m, "histogram", &hist));
    TEST_OK(kiln_module_kernel(m, "cmul", &cmul));
    kiln_module_release(m);

    int n = 5000, threads = 256, blocks = (n + threads - 1) / threads;
    test_rng r = test_rng_for(__func__);
    double *x = malloc((size_t)n * sizeof(double)), partial[20];
    test_fill_f64(&r, x, (size_t)n, -1, 1);
    int64_t nn = n, nb = blocks;
    kiln_array *dx = NULL, *dout = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &nn, x, (size_t)n * sizeof(double), &dx));
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT64, 1, &nb, &dout));
    TEST_OK(kiln_launch(sum, KILN_DIM((uint32_t)blocks), KILN_DIM((uint32_t)threads),
                        threads * sizeof(double), NULL,
                        KILN_ARGS(kiln_arr(dx), kiln_arr(dout), kiln_i32(n))));
    TEST_OK(kiln_array_to_host(dout, partial, (size_t)blocks * sizeof(double)));
    for (int b = 0; b < blocks; b++) {
        long double ref = 0;
        for (int i = b * threads; i < (b + 1) * threads && i < n; i++) ref += x[i];
        if (fabsl(partial[b] - ref) > 1e-12L) fail_msg("block %d sum %g vs %Lg", b, partial[b], ref);
    }

    unsigned char v[4096];
    unsigned int bins[16], ref_bins[16] = {0};
    for (int i = 0; i < 4096; i++) {
        v[i] = (unsigned char)test_uniform(&r, 0, 256);
        ref_bins[v[i] % 16]++;
    }
    int64_t nv = 4096, n16 = 16;
    kiln_array *dv = NULL, *dbins = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_UINT8, 1, &nv, v, sizeof v, &dv));
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT32, 1, &n16, &dbins));
    TEST_OK(kiln_launch(hist, KILN_DIM(7), KILN_DIM(128), 0, NULL,
                        KILN_ARGS(kiln_arr(dv), kiln_arr(dbins), kiln_i32(4096))));
    TEST_OK(kiln_array_to_host(dbins, bins, sizeof bins));
    assert_memory_equal(bins, ref_bins, sizeof bins);

    float z[2 * 300];
    for (int i = 0; i < 600; i++) z[i] = (float)test_uniform(&r, -2, 2);
    int64_t nz = 300;
    kiln_array *dz = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_COMPLEX64, 1, &nz, z, sizeof z, &dz));
    TEST_OK(kiln_launch(cmul, KILN_DIM(2), KILN_DIM(256), 0, NULL,
                        KILN_ARGS(kiln_arr(dz), kiln_c64(0.5f, -2.0f), kiln_i32(300))));
    float zo[600];
    TEST_OK(kiln_array_to_host(dz, zo, sizeof zo));
    for (int i = 0; i < 300; i++) {
        double re = z[2 * i] * 0.5 - z[2 * i + 1] * -2.0 + 1.0, im = z[2 * i] * -2.0 + z[2 * i + 1] * 0.5;
        if (fabs(zo[2 * i] - re) > 1e-5 || fabs(zo[2 * i + 1] - im) > 1e-5)
            fail_msg("z[%d] = (%g,%g), expected (%g,%g)", i, zo[2 * i], zo[2 * i + 1], re, im);
    }
    kiln_array_release(dx);
    kiln_array_release(dout);
    kiln_array_release(dv);
    kiln_array_release(dbins);
    kiln_array_release(dz);
    kiln_kernel_release(sum);
    kiln_kernel_release(hist);
    kiln_kernel_release(cmul);
    free(x);
}

static void test_bad_arguments_are_refused(void **state) {
    kiln_context *ctx = *state;
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, module_src, "saxpy", NULL, &k));
    int64_t n = 16;
    kiln_array *f32 = NULL, *f64 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &f32));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &n, &f64));
    kiln_dim3 g = KILN_DIM(1), b = KILN_DIM(16);
    TEST_FAILS_WITH(kiln_launch(k, g, b, 0, NULL, KILN_ARGS(kiln_f32(1), kiln_arr(f32), kiln_arr(f32))),
                    KILN_ERR_ARG_COUNT, "saxpy takes 4 arguments, got 3");
    TEST_FAILS_WITH(
        kiln_launch(k, g, b, 0, NULL, KILN_ARGS(kiln_f64(1), kiln_arr(f32), kiln_arr(f32), kiln_i32(16))),
        KILN_ERR_ARG_TYPE, "argument 0 of saxpy: the kernel takes float32, got float64");
    TEST_FAILS_WITH(
        kiln_launch(k, g, b, 0, NULL, KILN_ARGS(kiln_f32(1), kiln_arr(f64), kiln_arr(f32), kiln_i32(16))),
        KILN_ERR_ARG_TYPE,
        "argument 1 of saxpy: the kernel takes a pointer to float32, got an array of float64");
    TEST_FAILS_WITH(
        kiln_launch(k, g, b, 0, NULL, KILN_ARGS(kiln_f32(1), kiln_f32(2), kiln_arr(f32), kiln_i32(16))),
        KILN_ERR_ARG_TYPE, "argument 1 of saxpy: the kernel takes a pointer, got a float32 scalar");
    TEST_FAILS_WITH(
        kiln_launch(k, g, b, 0, NULL, KILN_ARGS(kiln_f32(1), kiln_arr(f32), kiln_arr(f32), kiln_i32(-1))),
        KILN_ERR_ARG_TYPE, "argument 3 of saxpy: the kernel takes uint64, got int32");
    TEST_FAILS_WITH(
        kiln_launch(k, g, b, 0, NULL, KILN_ARGS(kiln_f32(1), kiln_arr(f32), kiln_arr(f32), kiln_arr(f32))),
        KILN_ERR_ARG_TYPE, "takes a uint64 scalar, got an array");
    kiln_array_release(f32);
    kiln_array_release(f64);
    kiln_kernel_release(k);
}

static void test_launch_limits_are_named(void **state) {
    kiln_context *ctx = *state;
    kiln_device_info info;
    TEST_OK(kiln_device_info_get(ctx, &info));
    assert_true(info.max_threads_per_block >= 256);
    kiln_module *m = NULL;
    kiln_kernel *sum = NULL;
    TEST_OK(kiln_module_from_source(ctx, module_src, "module.cu", NULL, &m));
    TEST_OK(kiln_module_kernel(m, "block_sum", &sum));
    kiln_module_release(m);
    int64_t n = 4;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &n, &a));
    TEST_FAILS_WITH(kiln_launch(sum, KILN_DIM(1), KILN_DIM(64, 32), 0, NULL,
                                KILN_ARGS(kiln_arr(a), kiln_arr(a), kiln_i32(4))),
                    KILN_ERR_LAUNCH_CONFIG, "has 2048 threads; the device allows at most");
    TEST_FAILS_WITH(kiln_launch(sum, KILN_DIM(1), KILN_DIM(1, 1, 128), 0, NULL,
                                KILN_ARGS(kiln_arr(a), kiln_arr(a), kiln_i32(4))),
                    KILN_ERR_LAUNCH_CONFIG, "block.z = 128 exceeds the device limit of 64");
    TEST_FAILS_WITH(kiln_launch(sum, KILN_DIM(1, 70000), KILN_DIM(32), 0, NULL,
                                KILN_ARGS(kiln_arr(a), kiln_arr(a), kiln_i32(4))),
                    KILN_ERR_LAUNCH_CONFIG, "grid.y = 70000 exceeds the device limit of 65535");
    TEST_FAILS_WITH(kiln_launch(sum, KILN_DIM(1), KILN_DIM(32), info.max_shared_bytes_per_block_optin + 1,
                                NULL, KILN_ARGS(kiln_arr(a), kiln_arr(a), kiln_i32(4))),
                    KILN_ERR_LAUNCH_CONFIG, "bytes of shared memory");
    kiln_array_release(a);
    kiln_kernel_release(sum);
}

static void test_compile_error_has_user_line_numbers(void **state) {
    kiln_context *ctx = *state;
    const char *bad = "__global__ void broken(float *x) {\n"
                      "    int i = threadIdx.x;\n"
                      "    x[i] = undefined_variable * 2;\n"
                      "}\n";
    kiln_module *m = NULL;
    kiln_status s = kiln_module_from_source(ctx, bad, "broken.cu", NULL, &m);
    assert_int_equal(s, KILN_ERR_COMPILE);
    const char *log = kiln_last_error();
    if (!test_contains(log, "broken.cu") || !test_contains(log, "undefined_variable") ||
        !(test_contains(log, "broken.cu:3") || test_contains(log, "broken.cu(3)")))
        fail_msg("log lacks file, line 3 or the name:\n%s", log);
    TEST_FAILS_WITH(kiln_module_from_source(ctx, "int x;", "nok.cu", NULL, &m), KILN_ERR_NOT_FOUND,
                    "nok.cu defines no __global__ function");
    TEST_FAILS_WITH(kiln_module_from_source(ctx, module_src, "m.cu", "-O2", &m), KILN_ERR_INVALID_ARGUMENT,
                    "unknown compile option '-O2'");
    TEST_FAILS_WITH(kiln_module_from_file(ctx, "/nonexistent/k.cu", NULL, &m), KILN_ERR_NOT_FOUND,
                    "/nonexistent/k.cu");
}

static void test_defines_and_include_dirs(void **state) {
    kiln_context *ctx = *state;
    char *dir = test_temp_dir("inc");
    assert_non_null(dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/scale.h", dir);
    FILE *f = fopen(path, "w");
    fputs("#define SCALE 3\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/k.cu", dir);
    f = fopen(path, "w");
    fputs("#include \"scale.h\"\n__global__ void k(int *o) { o[threadIdx.x] = SCALE * OFFSET + threadIdx.x; "
          "}\n",
          f);
    fclose(f);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_file(ctx, path, "-DOFFSET=10", &m));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "k", &k));
    int64_t n = 8;
    kiln_array *o = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &n, &o));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(8), 0, NULL, KILN_ARGS(kiln_arr(o))));
    int32_t out[8];
    TEST_OK(kiln_array_to_host(o, out, sizeof out));
    for (int i = 0; i < 8; i++) assert_int_equal(out[i], 30 + i);
    kiln_array_release(o);
    kiln_kernel_release(k);
    kiln_module_release(m);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_module_lists_kernels_and_params),
        cmocka_unit_test(test_saxpy_matches_host),
        cmocka_unit_test(test_barriers_dynamic_shared_atomics_complex),
        cmocka_unit_test(test_bad_arguments_are_refused),
        cmocka_unit_test(test_launch_limits_are_named),
        cmocka_unit_test(test_compile_error_has_user_line_numbers),
        cmocka_unit_test(test_defines_and_include_dirs),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
