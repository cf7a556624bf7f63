/* test_kernel_discovery.c: where kiln finds a module's kernels. Kernels in
 * files the source includes (beside it, or in a folder given with -I), on
 * the module's fission path on the CPU, with diagnostics naming the
 * included file; template instantiations under any spelling of their
 * arguments, instantiated by name when the program asks, and served from
 * the disk cache to a second process with no rejects and no compiles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_support.h"

static void write_text(const char *dir, const char *name, const char *text) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The common layout: main.cu is `#include "k.cu"`, k.cu the kernel. */
static const char *inc_kernel = "__global__ void inc(int *a) { a[threadIdx.x]++; }\n";

static void run_inc(kiln_context *ctx, kiln_module *m) {
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "inc", &k));
    int host[64];
    for (int i = 0; i < 64; i++) host[i] = 10 * i;
    int64_t n = 64;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &n, host, sizeof host, &a));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(64), 0, NULL, KILN_ARGS(kiln_arr(a))));
    TEST_OK(kiln_array_to_host(a, host, sizeof host));
    for (int i = 0; i < 64; i++)
        if (host[i] != 10 * i + 1) fail_msg("inc: a[%d] = %d, want %d", i, host[i], 10 * i + 1);
    kiln_array_release(a);
    kiln_kernel_release(k);
}

static void test_kernel_in_included_file(void **state) {
    kiln_context *ctx = *state;
    char *dir = test_temp_dir("incl");
    assert_non_null(dir);
    write_text(dir, "k.cu", inc_kernel);
    write_text(dir, "main.cu", "#include \"k.cu\"\n");
    char path[2048];
    snprintf(path, sizeof path, "%s/main.cu", dir);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_file(ctx, path, NULL, &m));
    assert_int_equal(kiln_module_kernel_count(m), 1);
    assert_string_equal(kiln_module_kernel_name(m, 0), "inc");
    run_inc(ctx, m);
    kiln_module_release(m);
    test_remove_tree(dir);
    free(dir);
}

/* A chain: main.cu includes lib/all.cuh (no kernel of its own), which
 * includes kern/inc.cuh beside itself; a helper header stays an #include. */
static void test_kernel_through_include_chain(void **state) {
    kiln_context *ctx = *state;
    char *dir = test_temp_dir("chain");
    assert_non_null(dir);
    char lib[2048], kern[2100], path[2048];
    snprintf(lib, sizeof lib, "%s/lib", dir);
    snprintf(kern, sizeof kern, "%s/lib/kern", dir);
    assert_int_equal(mkdir(lib, 0700), 0);
    assert_int_equal(mkdir(kern, 0700), 0);
    write_text(kern, "inc.cuh", inc_kernel);
    write_text(lib, "all.cuh", "#ifndef ALL_CUH\n#define ALL_CUH\n#include \"kern/inc.cuh\"\n#endif\n");
    write_text(lib, "helpers.cuh", "__device__ int twice(int v) { return 2 * v; }\n");
    write_text(dir, "main.cu",
               "#include \"lib/helpers.cuh\"\n#include \"lib/all.cuh\"\n#include \"lib/all.cuh\"\n"
               "__global__ void dbl(int *a) { a[threadIdx.x] = twice(a[threadIdx.x]); }\n");
    snprintf(path, sizeof path, "%s/main.cu", dir);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_file(ctx, path, NULL, &m));
    assert_int_equal(kiln_module_kernel_count(m), 2);
    run_inc(ctx, m);
    kiln_module_release(m);
    test_remove_tree(dir);
    free(dir);
}

/* A barrier kernel in a header of an -I folder, included twice (the second
 * time stopped by #pragma once): found once, takes loop fission on the
 * CPU, and both `kiln compile` targets list it. */
static const char *reverse_header = "#pragma once\n"
                                    "#define TILE 64\n"
                                    "__global__ void reverse(float *out, const float *in) {\n"
                                    "    __shared__ float s[TILE];\n"
                                    "    int t = threadIdx.x;\n"
                                    "    s[t] = in[blockIdx.x * TILE + t];\n"
                                    "    __syncthreads();\n"
                                    "    out[blockIdx.x * TILE + t] = s[TILE - 1 - t];\n"
                                    "}\n";

static void test_kernel_in_include_folder(void **state) {
    kiln_context *ctx = *state;
    char *dir = test_temp_dir("incdir");
    assert_non_null(dir);
    char sub[2048], src[2048], opts[2200], path[2100];
    snprintf(sub, sizeof sub, "%s/include", dir);
    snprintf(src, sizeof src, "%s/src", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(mkdir(src, 0700), 0);
    write_text(sub, "reverse.cuh", reverse_header);
    const char *main_text = "// kernels live in the include folder\n"
                            "#include \"reverse.cuh\"\n"
                            "#include \"reverse.cuh\"\n"
                            "__global__ void twice(float *x) { x[threadIdx.x] *= 2; }\n";
    write_text(src, "main.cu", main_text);
    snprintf(opts, sizeof opts, "-I%s", sub);
    snprintf(path, sizeof path, "%s/main.cu", src);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_file(ctx, path, opts, &m));
    assert_int_equal(kiln_module_kernel_count(m), 2);
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "reverse", &k));
    float in[128], out[128];
    for (int i = 0; i < 128; i++) in[i] = (float)i;
    int64_t n = 128;
    kiln_array *a = NULL, *b = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, in, sizeof in, &a));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &b));
    TEST_OK(kiln_launch(k, KILN_DIM(2), KILN_DIM(64), 0, NULL, KILN_ARGS(kiln_arr(b), kiln_arr(a))));
    TEST_OK(kiln_array_to_host(b, out, sizeof out));
    for (int i = 0; i < 128; i++) {
        float want = (float)((i / 64) * 64 + 63 - i % 64);
        if (out[i] != want) fail_msg("reverse: out[%d] = %g, want %g", i, out[i], want);
    }
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_kernel_release(k);
    kiln_module_release(m);

    /* `kiln compile` sees the same kernels (the CLI passes the file's
     * folder as -I, as here) */
    char *log = NULL;
    char both[4400];
    snprintf(both, sizeof both, "%s -I%s", opts, src);
    TEST_OK(kiln_compile_only("cpu", NULL, main_text, path, both, &log));
    if (!test_contains(log, "CPU path of reverse: fission") || !test_contains(log, "CPU path of twice: loop"))
        fail_msg("compile log: %s", log);
    kiln_free(log);
    log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", main_text, path, both, &log);
    if (s != KILN_ERR_COMPILER_MISSING) {
        TEST_OK(s);
        if (!test_contains(log, "kiln: kernel reverse") || !test_contains(log, "kiln: kernel twice"))
            fail_msg("compile log: %s", log);
    }
    kiln_free(log);
    test_remove_tree(dir);
    free(dir);
}

/* A compile error in an included file names that file and its line. */
static void test_error_names_included_file(void **state) {
    kiln_context *ctx = *state;
    char *dir = test_temp_dir("incerr");
    assert_non_null(dir);
    write_text(dir, "bad.cuh", "__global__ void bad(int *a) {\n    a[0] = undefined_name;\n}\n");
    write_text(dir, "main.cu", "\n#include \"bad.cuh\"\n__global__ void ok(int *a) { a[0] = 1; }\n");
    char path[2048];
    snprintf(path, sizeof path, "%s/main.cu", dir);
    kiln_module *m = NULL;
    TEST_FAILS_WITH(kiln_module_from_file(ctx, path, NULL, &m), KILN_ERR_COMPILE, "bad.cuh");
    if (!test_contains(kiln_last_error(), "bad.cuh:2") && !test_contains(kiln_last_error(), "bad.cuh(2)"))
        fail_msg("no line 2 of bad.cuh in: %s", kiln_last_error());
    test_remove_tree(dir);
    free(dir);
}

/* A name found nowhere, and a source whose includes hold no kernel. */
static void test_no_kernel_anywhere(void **state) {
    kiln_context *ctx = *state;
    char *dir = test_temp_dir("incnone");
    assert_non_null(dir);
    write_text(dir, "helpers.cuh", "__device__ int twice(int v) { return 2 * v; }\n");
    write_text(dir, "main.cu", "#include \"helpers.cuh\"\n");
    char path[2048];
    snprintf(path, sizeof path, "%s/main.cu", dir);
    kiln_module *m = NULL;
    TEST_FAILS_WITH(kiln_module_from_file(ctx, path, NULL, &m), KILN_ERR_NOT_FOUND,
                    "nor do the files it includes");
    test_remove_tree(dir);
    free(dir);
}

/* Kernels the source's own macros write, in and out of a namespace. */
static const char *macro_src =
    "#define KERNEL(name, op) \\\n"
    "    __global__ void name(float *x) { x[threadIdx.x] = x[threadIdx.x] op 2.0f; }\n"
    "#define GLOBAL __global__\n"
    "#define MAKE(T) __global__ void fill_##T(T *x) { x[threadIdx.x] = (T)7; }\n"
    "KERNEL(add2, +)\n"
    "KERNEL(mul2, *)\n"
    "namespace ops { KERNEL(sub2, -) }\n"
    "GLOBAL void neg(float *x) { x[threadIdx.x] = -x[threadIdx.x]; }\n"
    "MAKE(float)\n";

static void run_float_kernel(kiln_context *ctx, kiln_module *m, const char *name, float in, float want) {
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, name, &k));
    float host[32];
    for (int i = 0; i < 32; i++) host[i] = in;
    int64_t n = 32;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, host, sizeof host, &a));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(32), 0, NULL, KILN_ARGS(kiln_arr(a))));
    TEST_OK(kiln_array_to_host(a, host, sizeof host));
    for (int i = 0; i < 32; i++)
        if (host[i] != want) fail_msg("%s: x[%d] = %g, want %g", name, i, host[i], want);
    kiln_array_release(a);
    kiln_kernel_release(k);
}

static void test_kernels_from_macros(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, macro_src, "macros.cu", NULL, &m));
    assert_int_equal(kiln_module_kernel_count(m), 5);
    run_float_kernel(ctx, m, "add2", 3, 5);
    run_float_kernel(ctx, m, "mul2", 3, 6);
    run_float_kernel(ctx, m, "ops::sub2", 3, 1);
    run_float_kernel(ctx, m, "neg", 3, -3);
    run_float_kernel(ctx, m, "fill_float", 3, 7);
    kiln_module_release(m);
}

/* __global__ as a macro's argument: found (by_arg); the CUDA compile's
 * cubin entries are checked against the names kiln found, and there is no
 * note when they agree. */
static void test_kernel_from_macro_argument(void **state) {
    (void)state;
    const char *src = "#define K(x) x void by_arg(int *a) { a[0] = 3; }\n"
                      "#define WRAP(x) x\n"
                      "WRAP(K(__global__))\n"
                      "__global__ void seen(int *a) { a[0] = 2; }\n";
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "hid.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING) {
        TEST_OK(s);
        if (!test_contains(log, "kiln: kernel by_arg") || !test_contains(log, "kiln: kernel seen") ||
            test_contains(log, "found no name"))
            fail_msg("compile log: %s", log);
    }
    kiln_free(log);
}

/* A kernel written by a macro of a <header>, which kiln does not read:
 * not named, and `kiln compile --target cuda` says the cubin has it. */
static void test_unnamed_entry_is_reported(void **state) {
    (void)state;
    char *dir = test_temp_dir("unnamed");
    assert_non_null(dir);
    write_text(dir, "gen.h", "#define GEN(n) __global__ void n(int *a) { a[0] = 1; }\n");
    const char *src = "#include <gen.h>\nGEN(hidden)\n__global__ void seen(int *a) { a[0] = 2; }\n";
    char opts[2100], *log = NULL;
    snprintf(opts, sizeof opts, "-I%s", dir);
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "unnamed.cu", opts, &log);
    if (s != KILN_ERR_COMPILER_MISSING) {
        TEST_OK(s);
        if (!test_contains(log, "kernel _Z6hiddenPi that kiln found no name for") ||
            !test_contains(log, "kiln: kernel seen") || test_contains(log, "_Z4seenPi that kiln"))
            fail_msg("compile log: %s", log);
    }
    kiln_free(log);
    test_remove_tree(dir);
    free(dir);
}

/* Kernels in #if sections that are off are not the module's: the compiler
 * says so, and kiln builds the others (and remembers it in the cache). */
static const char *sectioned_src = "#ifdef WITH_DOUBLE\n"
                                   "__global__ void twice_d(double *x) { x[threadIdx.x] *= 2; }\n"
                                   "#endif\n"
                                   "#if 0\n"
                                   "__global__ void retired(float *x) { x[0] = 0; }\n"
                                   "#endif\n"
                                   "__global__ void twice(float *x) { x[threadIdx.x] *= 2; }\n";

static void test_kernels_in_sections_that_are_off(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, sectioned_src, "sections.cu", NULL, &m));
    assert_int_equal(kiln_module_kernel_count(m), 1);
    run_float_kernel(ctx, m, "twice", 3, 6);
    kiln_kernel *k = NULL;
    TEST_FAILS_WITH(kiln_module_kernel(m, "twice_d", &k), KILN_ERR_NOT_FOUND, "twice");
    kiln_module_release(m);
    TEST_OK(kiln_module_from_source(ctx, sectioned_src, "sections.cu", "-DWITH_DOUBLE", &m));
    assert_int_equal(kiln_module_kernel_count(m), 2);
    TEST_OK(kiln_module_kernel(m, "twice_d", &k));
    kiln_kernel_release(k);
    kiln_module_release(m);
    /* an error in the user's code is still the user's to see */
    const char *bad = "#ifdef NEVER\n__global__ void gone(int *a) {}\n#endif\n"
                      "__global__ void broken(int *a) { a[0] = undefined_name; }\n";
    TEST_FAILS_WITH(kiln_module_from_source(ctx, bad, "bad.cu", NULL, &m), KILN_ERR_COMPILE,
                    "undefined_name");
    /* `kiln compile` too, on both targets */
    for (int cuda = 0; cuda < 2; cuda++) {
        char *log = NULL;
        kiln_status s =
            kiln_compile_only(cuda ? "cuda" : "cpu", NULL, sectioned_src, "sections.cu", NULL, &log);
        if (s == KILN_ERR_COMPILER_MISSING) continue;
        TEST_OK(s);
        if (!test_contains(log, cuda ? "kiln: kernel twice\n" : "CPU path of twice:") ||
            test_contains(log, "twice_d") || test_contains(log, "retired"))
            fail_msg("compile log: %s", log);
        kiln_free(log);
    }
    const char *none = "#if 0\n__global__ void gone(int *a) {}\n#endif\n";
    TEST_FAILS_WITH(kiln_module_from_source(ctx, none, "none.cu", NULL, &m), KILN_ERR_NOT_FOUND,
                    "#if sections that are off");
}

static const char *template_src =
    "template <typename T, int N = 4> __global__ void fillk(T *out, T v) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < 64) out[i] = v * (T)N;\n"
    "}\n"
    "template __global__ void fillk<unsigned int, 4>(unsigned int *, unsigned int);\n"
    "template __global__ void fillk<float>(float *, float);\n";

static void check_fillk(kiln_context *ctx, kiln_module *m, const char *name, kiln_dtype dtype, double v,
                        double want) {
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, name, &k));
    int64_t n = 64;
    kiln_array *out = NULL;
    TEST_OK(kiln_array_zeros(ctx, dtype, 1, &n, &out));
    kiln_value arg = dtype == KILN_FLOAT32   ? kiln_f32((float)v)
                     : dtype == KILN_FLOAT64 ? kiln_f64(v)
                     : dtype == KILN_UINT32  ? kiln_u32((uint32_t)v)
                                             : kiln_i32((int32_t)v);
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(64), 0, NULL, KILN_ARGS(kiln_arr(out), arg)));
    union {
        float f32[64];
        double f64[64];
        uint32_t u32[64];
        int32_t i32[64];
    } host;
    size_t bytes = dtype == KILN_FLOAT64 ? sizeof host.f64 : sizeof host.f32;
    TEST_OK(kiln_array_to_host(out, &host, bytes));
    for (int i = 0; i < 64; i++) {
        double got = dtype == KILN_FLOAT32   ? host.f32[i]
                     : dtype == KILN_FLOAT64 ? host.f64[i]
                     : dtype == KILN_UINT32  ? (double)host.u32[i]
                                             : (double)host.i32[i];
        if (got != want) fail_msg("%s: out[%d] = %g, want %g", name, i, got, want);
    }
    kiln_array_release(out);
    kiln_kernel_release(k);
}

static void test_template_spellings(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, template_src, "tmpl.cu", NULL, &m));
    assert_int_equal(kiln_module_kernel_count(m), 2);
    static const char *const uint_names[] = {"fillk<unsigned int, 4>", "fillk<unsigned int,4>",
                                             "fillk<unsigned>",        "fillk< unsigned int >",
                                             "fillk<unsigned, 4u>",    "fillk<int unsigned>"};
    for (size_t i = 0; i < sizeof uint_names / sizeof *uint_names; i++)
        check_fillk(ctx, m, uint_names[i], KILN_UINT32, 3, 12);
    check_fillk(ctx, m, "fillk<float, 4>", KILN_FLOAT32, 0.5, 2);
    check_fillk(ctx, m, "fillk<float>", KILN_FLOAT32, 0.5, 2);
    kiln_kernel *k = NULL;
    TEST_FAILS_WITH(kiln_module_kernel(m, "fillk<int>", &k), KILN_ERR_NOT_FOUND, "fillk<float>");
    TEST_FAILS_WITH(kiln_module_kernel(m, "fillk<float, 5>", &k), KILN_ERR_NOT_FOUND, "fillk<float>");
    kiln_module_release(m);
}

static const char *const requested_names[] = {"fillk<double, 8>", "fillk<int>", "fillk<unsigned, 4>"};

static void test_template_instantiated_by_name(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source_names(ctx, template_src, "tmpl.cu", NULL, requested_names, 3, &m));
    /* fillk<unsigned,4> is the source's own: not listed twice */
    assert_int_equal(kiln_module_kernel_count(m), 4);
    check_fillk(ctx, m, "fillk<double,8>", KILN_FLOAT64, 0.25, 2);
    check_fillk(ctx, m, "fillk<int, 4>", KILN_INT32, 5, 20);
    check_fillk(ctx, m, "fillk<unsigned int>", KILN_UINT32, 1, 4);
    kiln_module_release(m);
    /* a name no template of the source has */
    static const char *const bad[] = {"scale<float>"};
    TEST_FAILS_WITH(kiln_module_from_source_names(ctx, template_src, "tmpl.cu", NULL, bad, 1, &m),
                    KILN_ERR_NOT_FOUND, "fillk");
    /* the shorthand requests a template name itself */
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, template_src, "fillk<short>", NULL, &k));
    kiln_param_info p;
    TEST_OK(kiln_kernel_param(k, 1, &p));
    assert_int_equal(p.cls, KILN_PARAM_SIGNED);
    assert_int_equal(p.size, 2);
    kiln_kernel_release(k);
}

/* Builds the modules of this file that a second process must find in the
 * disk cache; prints the context's counts. */
static int build_cached_modules(const char *dir, int check) {
    kiln_context *ctx = test_open();
    if (!ctx) return 1;
    kiln_module *m = NULL;
    char path[2048], opts[2200];
    TEST_CHILD_CHECK(kiln_module_from_source(ctx, template_src, "tmpl.cu", NULL, &m) == KILN_OK, "%s",
                     kiln_last_error());
    kiln_kernel *k = NULL;
    TEST_CHILD_CHECK(kiln_module_kernel(m, "fillk<unsigned>", &k) == KILN_OK, "%s", kiln_last_error());
    kiln_kernel_release(k);
    kiln_module_release(m);
    TEST_CHILD_CHECK(
        kiln_module_from_source_names(ctx, template_src, "tmpl.cu", NULL, requested_names, 3, &m) == KILN_OK,
        "%s", kiln_last_error());
    kiln_module_release(m);
    snprintf(path, sizeof path, "%s/src/main.cu", dir);
    snprintf(opts, sizeof opts, "-I%s/include", dir);
    TEST_CHILD_CHECK(kiln_module_from_file(ctx, path, opts, &m) == KILN_OK, "%s", kiln_last_error());
    kiln_module_release(m);
    snprintf(path, sizeof path, "%s/main.cu", dir);
    TEST_CHILD_CHECK(kiln_module_from_file(ctx, path, NULL, &m) == KILN_OK, "%s", kiln_last_error());
    kiln_module_release(m);
    TEST_CHILD_CHECK(kiln_module_from_source(ctx, sectioned_src, "sections.cu", NULL, &m) == KILN_OK, "%s",
                     kiln_last_error());
    TEST_CHILD_CHECK(kiln_module_kernel_count(m) == 1, "%d kernels", kiln_module_kernel_count(m));
    kiln_module_release(m);
    kiln_jit_wait(ctx);
    kiln_jit_stats st;
    TEST_CHILD_CHECK(kiln_jit_stats_get(ctx, &st) == KILN_OK, "%s", kiln_last_error());
    printf("compiles=%lld hits=%lld rejects=%lld\n", (long long)st.compiles, (long long)st.cache_hits,
           (long long)st.cache_rejects);
    (void)check;
    kiln_close(ctx);
    return 0;
}

static void test_second_process_hits_cache(void **state) {
    (void)state;
    char *dir = test_temp_dir("disccache");
    assert_non_null(dir);
    char sub[2048];
    snprintf(sub, sizeof sub, "%s/include", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_text(sub, "reverse.cuh", reverse_header);
    snprintf(sub, sizeof sub, "%s/src", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_text(sub, "main.cu", "#include \"reverse.cuh\"\n");
    write_text(dir, "k.cu", inc_kernel);
    write_text(dir, "main.cu", "#include \"k.cu\"\n");
    char cache[2100], env_cache[2200], env_dir[2200];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(env_cache, sizeof env_cache, "KILN_CACHE_DIR=%s", cache);
    snprintf(env_dir, sizeof env_dir, "KILN_DISCOVERY_DIR=%s", dir);
    char *env[] = {env_cache, env_dir, NULL};
    char *out = NULL;
    assert_int_equal(test_spawn_child("cached", env, &out), 0);
    if (!test_contains(out, "compiles=5 hits=0 rejects=0")) fail_msg("first process: %s", out);
    free(out);
    out = NULL;
    assert_int_equal(test_spawn_child("cached", env, &out), 0);
    if (!test_contains(out, "compiles=0 hits=5 rejects=0")) fail_msg("second process: %s", out);
    free(out);
    test_remove_tree(dir);
    free(dir);
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "cached") == 0) {
        const char *dir = getenv("KILN_DISCOVERY_DIR");
        return dir ? build_cached_modules(dir, 1) : 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_in_included_file),
        cmocka_unit_test(test_kernel_through_include_chain),
        cmocka_unit_test(test_kernel_in_include_folder),
        cmocka_unit_test(test_error_names_included_file),
        cmocka_unit_test(test_no_kernel_anywhere),
        cmocka_unit_test(test_kernels_from_macros),
        cmocka_unit_test(test_kernel_from_macro_argument),
        cmocka_unit_test(test_unnamed_entry_is_reported),
        cmocka_unit_test(test_kernels_in_sections_that_are_off),
        cmocka_unit_test(test_template_spellings),
        cmocka_unit_test(test_template_instantiated_by_name),
        cmocka_unit_test(test_second_process_hits_cache),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
