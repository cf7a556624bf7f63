/* test_kernel_forms.c: legal CUDA C that NVRTC accepts works on both
 * backends: __global__ functions inside namespaces (nested, C++17 a::b,
 * anonymous), kernels declared extern "C" (one by one or in a block), and
 * function templates the user instantiates; or, where a backend cannot, the
 * error says exactly what is not supported. */
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static void nvrtc_ok(const char *src) {
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "forms.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING && s != KILN_OK) fail_msg("NVRTC: %s", kiln_last_error());
    kiln_free(log);
}

static const char *namespaced =
    "namespace physics {\n"
    "__device__ float twice(float v) { return 2 * v; }\n"
    "__global__ void fill(float *out, float v, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = twice(v);\n"
    "}\n"
    "namespace inner { __global__ void fill3(float *out, float v, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = 3 * v;\n"
    "} }\n"
    "} // namespace physics\n"
    "namespace a::b { struct tag {}; __global__ void fill4(float *out, float v, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = 4 * v;\n"
    "} }\n"
    "namespace { __global__ void fill5(float *out, float v, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = 5 * v;\n"
    "} }\n"
    "extern \"C\" __global__ void fill6(float *out, float v, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = 6 * v;\n"
    "}\n"
    "extern \"C\" {\n"
    "__global__ void fill7(float *out, float v, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = 7 * v;\n"
    "}\n"
    "}\n"
    "struct not_a_namespace { int x; };\n"
    "__global__ void fill8(float *out, float v, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = 8 * v;\n"
    "}\n";

static void check_fill(kiln_context *ctx, kiln_module *m, const char *name, float want) {
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, name, &k));
    int64_t n = 50;
    kiln_array *out = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &out));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(64), 0, NULL,
                        KILN_ARGS(kiln_arr(out), kiln_f32(1.5f), kiln_i32(50))));
    float v[50];
    TEST_OK(kiln_array_to_host(out, v, sizeof v));
    for (int i = 0; i < 50; i++)
        if (v[i] != want) fail_msg("%s: out[%d] = %g, want %g", name, i, v[i], want);
    kiln_array_release(out);
    kiln_kernel_release(k);
}

static void test_namespaces_and_extern_c(void **state) {
    kiln_context *ctx = *state;
    nvrtc_ok(namespaced);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, namespaced, "forms.cu", NULL, &m));
    assert_int_equal(kiln_module_kernel_count(m), 7);
    check_fill(ctx, m, "fill", 3.0f);
    check_fill(ctx, m, "physics::fill", 3.0f); /* the qualified name works too */
    check_fill(ctx, m, "fill3", 4.5f);
    check_fill(ctx, m, "physics::inner::fill3", 4.5f);
    check_fill(ctx, m, "fill4", 6.0f);
    check_fill(ctx, m, "a::b::fill4", 6.0f);
    check_fill(ctx, m, "fill5", 7.5f);
    check_fill(ctx, m, "fill6", 9.0f);
    check_fill(ctx, m, "fill7", 10.5f);
    check_fill(ctx, m, "fill8", 12.0f);
    kiln_kernel *k = NULL;
    TEST_FAILS_WITH(kiln_module_kernel(m, "other::fill", &k), KILN_ERR_NOT_FOUND, "physics::fill");
    kiln_module_release(m);
}

/* The same unqualified name in two namespaces: each by its qualified name. */
static void test_same_name_in_two_namespaces(void **state) {
    kiln_context *ctx = *state;
    const char *src = "namespace one { __global__ void fill(float *out, float v, int n) {\n"
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = v; } }\n"
                      "namespace two { __global__ void fill(float *out, float v, int n) {\n"
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = -v; } }\n";
    nvrtc_ok(src);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "two.cu", NULL, &m));
    check_fill(ctx, m, "one::fill", 1.5f);
    check_fill(ctx, m, "two::fill", -1.5f);
    kiln_kernel *k = NULL;
    TEST_FAILS_WITH(kiln_module_kernel(m, "fill", &k), KILN_ERR_NOT_FOUND, "two::fill");
    kiln_module_release(m);
}

/* Templates the user instantiates explicitly are launched by their
 * instantiation's name, as written: "scale<float>". */
static void test_user_instantiated_templates(void **state) {
    kiln_context *ctx = *state;
    const char *src = "template <typename T> __global__ void scale(T *out, T v, int n) {\n"
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "    if (i < n) out[i] = v * 2;\n"
                      "}\n"
                      "template __global__ void scale<float>(float *, float, int);\n"
                      "template __global__ void scale<double>(double *, double, int);\n";
    nvrtc_ok(src);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "tmpl.cu", NULL, &m));
    assert_int_equal(kiln_module_kernel_count(m), 2);
    check_fill(ctx, m, "scale<float>", 3.0f);
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "scale<double>", &k));
    int64_t n = 10;
    kiln_array *out = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &n, &out));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(32), 0, NULL,
                        KILN_ARGS(kiln_arr(out), kiln_f64(0.25), kiln_i32(10))));
    double v[10];
    TEST_OK(kiln_array_to_host(out, v, sizeof v));
    assert_true(v[9] == 0.5);
    kiln_array_release(out);
    kiln_kernel_release(k);
    TEST_FAILS_WITH(kiln_module_kernel(m, "scale", &k), KILN_ERR_NOT_FOUND, "scale<float>");
    kiln_module_release(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_namespaces_and_extern_c),
        cmocka_unit_test(test_same_name_in_two_namespaces),
        cmocka_unit_test(test_user_instantiated_templates),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
