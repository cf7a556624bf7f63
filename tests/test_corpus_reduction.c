/* test_corpus_reduction.c: reduce6, reduce7 and cg_reduce from NVIDIA's
 * cuda-samples (tests/corpus/cuda-samples/reduction/reduction_kernel.cu,
 * unchanged) on every backend: warp shuffles through cooperative groups'
 * tiles and through __shfl_down_sync, a __ballot_sync mask, cg::reduce.
 *
 * The file holds the sample's host code after its kernels; kiln compiles
 * device code, so the test takes the file up to that host part (the line
 * `extern "C" bool isPow2`), and adds what the host part would have given
 * it: the instantiations it launches and the closing #endif of the include
 * guard. Each kernel runs as compiled and with -DKILN_CPU_FIBERS; the two
 * must agree to the bit, and each block's sum must match a double-precision
 * host sum of the elements the sample assigns to that block. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_support.h"

enum { THREADS = 256, BLOCKS = 64, N = 1 << 16 };

static const char *const instantiations =
    "\ntemplate __global__ void reduce6<float, 256, true>(float *, float *, unsigned int);\n"
    "template __global__ void reduce7<float, 256, true>(const float *__restrict__, float *__restrict__,\n"
    "                                                   unsigned int);\n"
    "template __global__ void cg_reduce<float>(float *, float *, unsigned int);\n"
    "#endif\n";

static char *device_part(void) {
    const char *root = getenv("KILN_SOURCE_DIR");
    if (!root) fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/corpus/cuda-samples/reduction/reduction_kernel.cu", root);
    char *text = test_read_file(path);
    assert_non_null(text);
    char *host = strstr(text, "extern \"C\" bool isPow2");
    assert_non_null(host);
    size_t keep = (size_t)(host - text), extra = strlen(instantiations);
    char *src = malloc(keep + extra + 1);
    memcpy(src, text, keep);
    memcpy(src + keep, instantiations, extra + 1);
    free(text);
    return src;
}

static float *run(kiln_context *ctx, const char *src, const char *options, const char *kernel,
                  const float *in) {
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "reduction_kernel.cu", options, &m));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, kernel, &k));
    int64_t n = N, nb = BLOCKS;
    kiln_array *a = NULL, *o = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, in, N * sizeof *in, &a));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nb, &o));
    TEST_OK(kiln_launch(k, KILN_DIM(BLOCKS), KILN_DIM(THREADS), THREADS * sizeof(float), NULL,
                        KILN_ARGS(kiln_arr(a), kiln_arr(o), kiln_u32(N))));
    float *out = malloc(BLOCKS * sizeof *out);
    TEST_OK(kiln_array_to_host(o, out, BLOCKS * sizeof *out));
    kiln_array_release(a);
    kiln_array_release(o);
    kiln_kernel_release(k);
    kiln_module_release(m);
    return out;
}

/* chunk: the elements one block takes per grid stride (512 for reduce6
 * and reduce7 with nIsPow2, 256 for cg_reduce), the stride the grid's. */
static void check(kiln_context *ctx, const char *kernel, int chunk) {
    char *src = device_part();
    float *in = malloc(N * sizeof *in);
    test_rng r = test_rng_for(kernel);
    test_fill_f32(&r, in, N, -1, 1);
    float *fis = run(ctx, src, NULL, kernel, in);
    float *fib = run(ctx, src, "-DKILN_CPU_FIBERS", kernel, in);
    for (int b = 0; b < BLOCKS; b++) {
        double want = 0, scale = 0;
        for (int base = b * chunk; base < N; base += BLOCKS * chunk)
            for (int i = base; i < base + chunk; i++) want += in[i], scale += fabs(in[i]);
        if (memcmp(&fis[b], &fib[b], sizeof *fis) != 0)
            fail_msg("%s: block %d sums to %a as compiled, %a on fibers", kernel, b, fis[b], fib[b]);
        if (fabs(fis[b] - want) > 1e-5 * scale + 1e-6)
            fail_msg("%s: block %d sums to %.9g, want %.9g", kernel, b, fis[b], want);
    }
    free(fis);
    free(fib);
    free(in);
    free(src);
}

static void test_reduce6(void **state) { check(*state, "reduce6<float, 256, true>", 2 * THREADS); }
static void test_reduce7(void **state) { check(*state, "reduce7<float, 256, true>", 2 * THREADS); }
static void test_cg_reduce(void **state) { check(*state, "cg_reduce<float>", THREADS); }

/* NVRTC takes the same text. */
static void test_nvrtc(void **state) {
    (void)state;
    char *src = device_part(), *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "reduction_kernel.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING) TEST_OK(s);
    kiln_free(log);
    free(src);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce6),
        cmocka_unit_test(test_reduce7),
        cmocka_unit_test(test_cg_reduce),
        cmocka_unit_test(test_nvrtc),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
