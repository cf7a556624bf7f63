/* test_cpu_prelude.c: the CPU backend's light prelude.
 *
 * A source with no #include and no std:: is compiled against glibc's C
 * <math.h> plus kiln's own C++ overloads instead of libstdc++'s <cmath>.
 * The overloads must give the types <cmath> gives (checked at compile time
 * in the kernel), the same values as the full prelude (the same kernel with
 * an #include, which selects it), and the host's libm on random inputs. The
 * kernel is CUDA C that NVRTC takes for sm_90 too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_pch.h"
#include "support/test_support.h"

enum { N = 1000, NF = 14 };

/* out[i*NF + k]: function k of x[i] (x in (0.05, 3)). */
static const char *kernel =
    "#ifdef KILN_CPU\n"
    "template <typename A, typename B> struct same { enum { v = 0 }; };\n"
    "template <typename A> struct same<A, A> { enum { v = 1 }; };\n"
    "static_assert(same<decltype(sqrt(1.0f)), float>::v, \"sqrt(float) is float\");\n"
    "static_assert(same<decltype(sqrt(1.0)), double>::v, \"sqrt(double) is double\");\n"
    "static_assert(same<decltype(sqrt(2)), double>::v, \"sqrt(int) is double\");\n"
    "static_assert(same<decltype(pow(1.0f, 2.0f)), float>::v, \"pow(float, float) is float\");\n"
    "static_assert(same<decltype(pow(1.0f, 2)), double>::v, \"pow(float, int) is double\");\n"
    "static_assert(same<decltype(atan2(1.0f, 2.0)), double>::v, \"atan2(float, double) is double\");\n"
    "static_assert(same<decltype(fabs(1.0L)), long double>::v, \"fabs(long double)\");\n"
    "static_assert(same<decltype(lround(1.5f)), long>::v, \"lround(float) is long\");\n"
    "#endif\n"
    "extern \"C\" __global__ void prelude_math(const float *x, const double *y, double *out, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    float a = x[i];\n"
    "    double b = y[i];\n"
    "    double *o = out + (size_t)i * 14;\n"
    "    o[0] = sqrt(a);\n"
    "    o[1] = exp(a);\n"
    "    o[2] = log(a);\n"
    "    o[3] = sin(a) + cos(a);\n"
    "    o[4] = pow(a, 1.5f);\n"
    "    o[5] = atan2(a, 0.5f);\n"
    "    o[6] = fabs(-a) + floor(a) + ceil(a);\n"
    "    o[7] = hypot(a, 2.0f) + fmin(a, 1.0f) + fmax(a, 1.0f);\n"
    "    o[8] = sqrt(b) + exp(b) + log(b);\n"
    "    o[9] = pow(b, 1.5) + tanh(b);\n"
    "    o[10] = erf(a) + erfc(b);\n"
    "#ifdef KILN_CPU\n" /* <cmath> takes integers (as double); CUDA's headers call it ambiguous */
    "    o[11] = sqrt((int)(b * 10));\n"
    "#else\n"
    "    o[11] = sqrt((double)(int)(b * 10));\n"
    "#endif\n"
    "    o[12] = lround(a * 7) + ilogb(a);\n"
    "    o[13] = fma(a, 2.0f, 1.0f) + cbrt(a) + expm1(a) + log1p(a);\n"
    "}\n";

/* The host's value of function k (float functions computed in float, as the
 * kernel's overloads do). */
static double host(int k, float a, double b) {
    switch (k) {
    case 0: return sqrtf(a);
    case 1: return expf(a);
    case 2: return logf(a);
    case 3: return (double)(sinf(a) + cosf(a));
    case 4: return powf(a, 1.5f);
    case 5: return atan2f(a, 0.5f);
    case 6: return (double)(fabsf(-a) + floorf(a) + ceilf(a));
    case 7: return (double)(hypotf(a, 2.0f) + fminf(a, 1.0f) + fmaxf(a, 1.0f));
    case 8: return sqrt(b) + exp(b) + log(b);
    case 9: return pow(b, 1.5) + tanh(b);
    case 10: return (double)erff(a) + erfc(b);
    case 11: return sqrt((double)(int)(b * 10));
    case 12: return (double)(lroundf(a * 7) + ilogbf(a));
    default: return (double)(fmaf(a, 2.0f, 1.0f) + cbrtf(a) + expm1f(a) + log1pf(a));
    }
}

static void run(kiln_context *ctx, const char *source, const float *x, const double *y, double *out) {
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, source, "prelude_math", NULL, &k));
    int64_t n = N, no = (int64_t)N * NF;
    kiln_array *dx = NULL, *dy = NULL, *dout = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, x, sizeof(float) * N, &dx));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &n, y, sizeof(double) * N, &dy));
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT64, 1, &no, &dout));
    kiln_dim3 grid = {(N + 127) / 128, 1, 1}, block = {128, 1, 1};
    TEST_OK(kiln_launch(k, grid, block, 0, NULL,
                        KILN_ARGS(kiln_arr(dx), kiln_arr(dy), kiln_arr(dout), kiln_i32(N))));
    TEST_OK(kiln_synchronize(ctx));
    TEST_OK(kiln_array_to_host(dout, out, sizeof(double) * (size_t)no));
    kiln_array_release(dx);
    kiln_array_release(dy);
    kiln_array_release(dout);
    kiln_kernel_release(k);
}

static void test_light_prelude_matches_full_and_libm(void **state) {
    (void)state;
    kiln_context *ctx = NULL;
    TEST_OK(kiln_open(&ctx, "cpu"));
    float *x = malloc(sizeof(float) * N);
    double *y = malloc(sizeof(double) * N), *light = malloc(sizeof(double) * N * NF),
           *full = malloc(sizeof(double) * N * NF);
    assert_true(x && y && light && full);
    srand(15);
    for (int i = 0; i < N; i++) {
        x[i] = 0.05f + 2.95f * (float)rand() / (float)RAND_MAX;
        y[i] = 0.05 + 2.95 * (double)rand() / (double)RAND_MAX;
    }
    run(ctx, kernel, x, y, light);
    /* An #include selects the full prelude (libstdc++'s <cmath>). */
    char *with_include = malloc(strlen(kernel) + 32);
    assert_non_null(with_include);
    sprintf(with_include, "#include <math.h>\n%s", kernel);
    run(ctx, with_include, x, y, full);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < NF; k++) {
            double l = light[i * NF + k], f = full[i * NF + k], h = host(k, x[i], y[i]);
            if (l != f)
                fail_msg("x=%.9g y=%.17g function %d: light prelude %.17g, full %.17g", x[i], y[i], k, l, f);
            /* one contraction into an FMA may move the last bits */
            if (fabs(l - h) > 1e-6 * fmax(1.0, fabs(h)))
                fail_msg("x=%.9g y=%.17g function %d: kernel %.17g, host libm %.17g", x[i], y[i], k, l, h);
        }
    free(with_include);
    free(x);
    free(y);
    free(light);
    free(full);
    kiln_close(ctx);
}

static void test_std_names_take_the_full_prelude(void **state) {
    (void)state;
    char *log = NULL;
    /* std::sqrt needs <cmath>: a source naming std:: gets the full prelude */
    TEST_OK(kiln_compile_only("cpu", NULL,
                              "__global__ void s(float *o) { o[threadIdx.x] = std::sqrt(o[threadIdx.x]); }",
                              "s.cu", NULL, &log));
    kiln_free(log);
    /* and with the light prelude switched off, the light kernel still builds */
    setenv("KILN_CPU_LIGHT_PRELUDE", "0", 1);
    kiln_status s = kiln_compile_only("cpu", NULL, kernel, "prelude_math.cu", NULL, &log);
    unsetenv("KILN_CPU_LIGHT_PRELUDE");
    if (s != KILN_OK) fail_msg("full prelude: %s\n%s", kiln_last_error(), log ? log : "");
    kiln_free(log);
}

static void test_kernel_is_cuda_c(void **state) {
    (void)state;
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", kernel, "prelude_math.cu", NULL, &log);
    if (s == KILN_ERR_COMPILER_MISSING) /* no CUDA toolkit here */
        print_message("NVRTC check skipped: %s\n", kiln_last_error());
    else if (s != KILN_OK)
        fail_msg("NVRTC for sm_90: %s: %s\n%s", kiln_status_string(s), kiln_last_error(), log ? log : "");
    kiln_free(log);
}

/* kiln_complex.cuh goes in only where the source (or a -D) names something
 * complex: the same choice as the CUDA backend's. A complex kernel then
 * still computes (complex64 products and conj against the host's C
 * complex arithmetic on random inputs), and the real-only kernel of the
 * test above is the one that left the header out. */
static void test_complex_header_only_when_named(void **state) {
    (void)state;
    static const struct {
        const char *source, *define;
        kiln_cpu_prelude_kind want;
    } cases[] = {
        {"__global__ void k(float *o) { o[0] = sqrt(o[1]); } // kiln_complex64 in a comment", NULL,
         KILN_CPU_PRELUDE_REAL},
        {"__global__ void k(kiln_complex64 *o) { o[0] = o[1] * o[2]; }", NULL, KILN_CPU_PRELUDE_LIGHT},
        {"__global__ void k(T *o) { o[0] = o[1]; }", "T=kiln_complex128", KILN_CPU_PRELUDE_LIGHT},
        {"#include <stdint.h>\n__global__ void k(float *o) { o[0] = 1; }", NULL, KILN_CPU_PRELUDE_FULL},
        {"__global__ void k(float *o) { o[0] = std::sqrt(o[1]); }", NULL, KILN_CPU_PRELUDE_FULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_compile_request req;
        memset(&req, 0, sizeof req);
        req.source = cases[c].source;
        const char *const defines[] = {cases[c].define};
        if (cases[c].define) {
            req.defines = defines;
            req.define_count = 1;
        }
        if (kiln_cpu_prelude_for(&req) != cases[c].want)
            fail_msg("case %zu: prelude %d, want %d", c, (int)kiln_cpu_prelude_for(&req), (int)cases[c].want);
    }
    if (kiln_cpu_prelude_for(&(kiln_compile_request){.source = kernel}) != KILN_CPU_PRELUDE_REAL)
        fail_msg("the real-only math kernel should take the prelude without kiln_complex.cuh");
    /* and the header is really left out: KILN_CX64 is what it defines */
    static const char *const absent =
        "#ifdef KILN_CX64\n#error the header is in\n#endif\n"
        "__global__ void r(float *o) { o[threadIdx.x] = sqrt(o[threadIdx.x]); }\n";
    char *log = NULL;
    kiln_status s = kiln_compile_only("cpu", NULL, absent, "absent.cu", NULL, &log);
    if (s != KILN_OK) fail_msg("a source naming nothing complex got kiln_complex.cuh: %s", log ? log : "");
    kiln_free(log);
    setenv("KILN_CPU_LIGHT_PRELUDE", "0", 1); /* the full prelude has it */
    s = kiln_compile_only("cpu", NULL, absent, "absent.cu", NULL, &log);
    unsetenv("KILN_CPU_LIGHT_PRELUDE");
    kiln_free(log);
    if (s != KILN_ERR_COMPILE)
        fail_msg("the full prelude should hold kiln_complex.cuh: %s", kiln_status_string(s));

    kiln_context *ctx = NULL;
    TEST_OK(kiln_open(&ctx, "cpu"));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx,
                                    "__global__ void cmul(const kiln_complex64 *a, const kiln_complex64 *b,\n"
                                    "                     kiln_complex64 *out, int n) {\n"
                                    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                    "    if (i < n) out[i] = a[i] * b[i] + conj(a[i]);\n"
                                    "}\n",
                                    "cmul", NULL, &k));
    enum { M = 777 };
    test_rng rng = test_rng_for(__func__);
    float *h = malloc(sizeof(float) * 4 * M), *got = malloc(sizeof(float) * 2 * M);
    assert_true(h && got);
    for (int i = 0; i < 4 * M; i++) h[i] = (float)test_uniform(&rng, -2, 2);
    int64_t n = M;
    kiln_array *a = NULL, *b = NULL, *o = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_COMPLEX64, 1, &n, h, sizeof(float) * 2 * M, &a));
    TEST_OK(kiln_array_from_host(ctx, KILN_COMPLEX64, 1, &n, h + 2 * M, sizeof(float) * 2 * M, &b));
    TEST_OK(kiln_array_empty(ctx, KILN_COMPLEX64, 1, &n, &o));
    TEST_OK(kiln_launch(k, KILN_DIM((M + 63) / 64), KILN_DIM(64), 0, NULL,
                        KILN_ARGS(kiln_arr(a), kiln_arr(b), kiln_arr(o), kiln_i32(M))));
    TEST_OK(kiln_array_to_host(o, got, sizeof(float) * 2 * M));
    for (int i = 0; i < M; i++) {
        double ar = h[2 * i], ai = h[2 * i + 1], br = h[2 * M + 2 * i], bi = h[2 * M + 2 * i + 1];
        double re = ar * br - ai * bi + ar, im = ar * bi + ai * br - ai;
        if (fabs(got[2 * i] - re) > 1e-5 * (1 + fabs(re)) ||
            fabs(got[2 * i + 1] - im) > 1e-5 * (1 + fabs(im)))
            fail_msg("element %d: %g%+gi, want %g%+gi", i, (double)got[2 * i], (double)got[2 * i + 1], re,
                     im);
    }
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(o);
    kiln_kernel_release(k);
    kiln_close(ctx);
    free(h);
    free(got);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_light_prelude_matches_full_and_libm),
        cmocka_unit_test(test_std_names_take_the_full_prelude),
        cmocka_unit_test(test_kernel_is_cuda_c),
        cmocka_unit_test(test_complex_header_only_when_named),
    };
    return cmocka_run_group_tests_name("cpu prelude", tests, NULL, NULL);
}
