/* test_cpu_cold.c: how the CPU backend builds a module fast (issue 15, cold
 * calls) and stays correct doing it.
 *
 * - A module is linked by the linker alone, first without the C++ runtime
 *   (cpu_link.c); a kernel that needs it (device-side new[]/delete[]) must
 *   still link, load and compute (the second, full link).
 * - The remembered link line (cpu-link-* in the cache folder) may be
 *   damaged, point at a linker that is gone, or fail: the module still
 *   builds (the driver links it) and the line is asked for again.
 * - A cache hit in a new context runs no process at all (the compiler's
 *   version line is remembered too): checked with a KILN_CXX wrapper that
 *   logs each run.
 * - KILN_CPU_LINK=driver (the driver's own link) gives a working module.
 * The kernels are CUDA C that NVRTC takes for sm_90 as well. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/test_support.h"

enum { N = 3001 };

/* y = 3x through a per-thread scratch buffer from new[]: operator new[] and
 * delete[] live in libstdc++, so the lean link cannot resolve them (the
 * volatile pointer keeps GCC from eliding the pair). */
static const char *runtime_kernel =
    "extern \"C\" __global__ void scratch(const float *x, float *y, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    float *volatile t = new float[3];\n"
    "    t[0] = x[i];\n"
    "    t[1] = 2.0f * x[i];\n"
    "    t[2] = t[0] + t[1];\n"
    "    y[i] = t[2];\n"
    "    delete[] t;\n"
    "}\n";

/* y = a*x + y; `tag` makes each use a new cache key. */
static char *axpy_source(const char *tag) {
    char *s = malloc(512);
    snprintf(s, 512,
             "extern \"C\" __global__ void axpy(float a, const float *x, float *y, int n) {\n"
             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "    if (i < n) y[i] = a * x[i] + y[i];\n"
             "}\n"
             "// %s\n",
             tag);
    return s;
}

/* Runs `name` of source (scratch or axpy) on random data in ctx and checks
 * the result against the host. */
static void run_and_check(kiln_context *ctx, const char *source, const char *name) {
    test_rng r = test_rng_for(name);
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
    test_fill_f32(&r, x, N, -4, 4);
    test_fill_f32(&r, y, N, -4, 4);
    int64_t n = N;
    kiln_array *dx = NULL, *dy = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, x, sizeof(float) * N, &dx));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, y, sizeof(float) * N, &dy));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, source, name, NULL, &k));
    int axpy = strcmp(name, "axpy") == 0;
    if (axpy)
        TEST_OK(kiln_launch(k, KILN_DIM((N + 127) / 128), KILN_DIM(128), 0, NULL,
                            KILN_ARGS(kiln_f32(1.5f), kiln_arr(dx), kiln_arr(dy), kiln_i32(N))));
    else
        TEST_OK(kiln_launch(k, KILN_DIM((N + 127) / 128), KILN_DIM(128), 0, NULL,
                            KILN_ARGS(kiln_arr(dx), kiln_arr(dy), kiln_i32(N))));
    TEST_OK(kiln_array_to_host(dy, out, sizeof(float) * N));
    for (int i = 0; i < N; i++) {
        double want = axpy ? 1.5 * (double)x[i] + (double)y[i] : 3.0 * (double)x[i];
        if (fabs((double)out[i] - want) > 1e-5 * (1 + fabs(want)))
            fail_msg("%s: y[%d] = %.9g, want %.9g", name, i, (double)out[i], want);
    }
    kiln_kernel_release(k);
    kiln_array_release(dx);
    kiln_array_release(dy);
    free(x);
    free(y);
    free(out);
}

static int is_cpu(void) { return strcmp(test_target(), "cpu") == 0; }

static int has_prefix_file(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) found = strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return found;
}

/* The path of the cache folder's cpu-link-* file into out; 0 if none. */
static int link_file(const char *dir, char *out, size_t size) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "cpu-link-", 9) == 0 && !strstr(e->d_name, ".tmp")) {
            snprintf(out, size, "%s/%s", dir, e->d_name);
            found = 1;
        }
    closedir(d);
    return found;
}

/* 1 when a cache entry (.kc) in dir holds the bytes of needle (the module
 * names libstdc++ as a library it needs, say). */
static int some_entry_holds(const char *dir, const char *needle) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    char path[4400];
    while (!found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 3, ".kc") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        static char buf[1 << 20];
        size_t got = fread(buf, 1, sizeof buf, f);
        fclose(f);
        found = memmem(buf, got, needle, strlen(needle)) != NULL;
    }
    closedir(d);
    return found;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_module_needing_cxx_runtime_runs(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    run_and_check(ctx, runtime_kernel, "scratch");
    kiln_close(ctx);
    /* The module needs operator new[]: linked again with the C++ runtime. */
    const char *dir = getenv("KILN_CACHE_DIR");
    if (is_cpu() && dir && !some_entry_holds(dir, "libstdc++.so"))
        fail_msg("no cached module names libstdc++, though scratch needs it");
}

static void test_kernels_are_cuda_c(void **state) {
    (void)state;
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", runtime_kernel, "scratch.cu", NULL, &log);
    if (s == KILN_ERR_LIBRARY_MISSING || s == KILN_ERR_COMPILER_MISSING) {
        kiln_free(log);
        skip();
    }
    if (s != KILN_OK) fail_msg("NVRTC: %s\n%s", kiln_last_error(), log ? log : "");
    kiln_free(log);
    char *axpy = axpy_source("nvrtc");
    TEST_OK(kiln_compile_only("cuda", "sm_90", axpy, "axpy.cu", NULL, &log));
    kiln_free(log);
    free(axpy);
}

/* A damaged line, a linker that is gone, a linker that fails: each compile
 * still gives a working module, and afterwards the line is a good one. */
static void test_bad_link_lines_fall_back(void **state) {
    (void)state;
    if (!is_cpu()) skip();
    char *old = getenv("KILN_CACHE_DIR") ? strdup(getenv("KILN_CACHE_DIR")) : NULL;
    char *dir = test_fresh_cache("cpucold-link");
    kiln_context *ctx = test_open();
    char *src = axpy_source("first");
    run_and_check(ctx, src, "axpy");
    free(src);
    char path[4400];
    assert_true(link_file(dir, path, sizeof path));
    char *good = test_read_file(path);
    assert_non_null(good);
    assert_non_null(strstr(good, "kiln-link-input.o"));
    const char *second_line = strchr(good, '\n') + 1;
    char bad[3][8192];
    snprintf(bad[0], sizeof bad[0], "ld\nnot a link line at all\n");
    snprintf(bad[1], sizeof bad[1], "/nonexistent/kiln/ld.gold\n%s", second_line);
    snprintf(bad[2], sizeof bad[2], "/bin/false\n%s", second_line);
    for (int i = 0; i < 3; i++) {
        write_text(path, bad[i]);
        char tag[32];
        snprintf(tag, sizeof tag, "bad line %d", i);
        src = axpy_source(tag);
        run_and_check(ctx, src, "axpy"); /* compiles and runs despite the line */
        free(src);
        /* The bad line is gone (or already replaced by a good one). */
        char *now = test_read_file(path);
        if (now && strcmp(now, bad[i]) == 0) fail_msg("bad link line %d was kept:\n%s", i, now);
        free(now);
        snprintf(tag, sizeof tag, "after bad line %d", i);
        src = axpy_source(tag);
        run_and_check(ctx, src, "axpy");
        free(src);
        /* Asked again: the same linker, a line with the input's place in it
         * (the driver's temporary names differ from run to run). */
        now = test_read_file(path);
        assert_non_null(now);
        assert_non_null(strstr(now, "kiln-link-input.o"));
        assert_int_equal(strcspn(now, "\n"), strcspn(good, "\n"));
        assert_memory_equal(now, good, strcspn(good, "\n"));
        free(now);
    }
    free(good);
    kiln_close(ctx);
    if (old) setenv("KILN_CACHE_DIR", old, 1);
    free(old);
    test_remove_tree(dir);
    free(dir);
}

/* A module loaded from the cache in a new context starts no process: the
 * wrapper logs every run of the compiler (--version included). */
static void test_cache_hit_runs_no_process(void **state) {
    (void)state;
    if (!is_cpu()) skip();
    char *old = getenv("KILN_CACHE_DIR") ? strdup(getenv("KILN_CACHE_DIR")) : NULL;
    char *dir = test_fresh_cache("cpucold-hit");
    char wrapper[4400], runs[4400], script[9000];
    snprintf(wrapper, sizeof wrapper, "%s/logging-cxx", dir);
    snprintf(runs, sizeof runs, "%s/runs.log", dir);
    snprintf(script, sizeof script, "#!/bin/sh\necho \"$*\" >> '%s'\nexec c++ \"$@\"\n", runs);
    write_text(wrapper, script);
    assert_int_equal(chmod(wrapper, 0700), 0);
    setenv("KILN_CXX", wrapper, 1);
    char *src = axpy_source("hit");
    kiln_context *ctx = test_open();
    run_and_check(ctx, src, "axpy");
    kiln_close(ctx);
    char *before = test_read_file(runs);
    assert_non_null(before); /* the first compile ran it */
    /* Linked without the C++ runtime it does not need (the lean link). */
    if (some_entry_holds(dir, "libstdc++.so")) fail_msg("the axpy module needs libstdc++");
    ctx = test_open();
    run_and_check(ctx, src, "axpy");
    kiln_jit_stats st;
    TEST_OK(kiln_jit_stats_get(ctx, &st));
    assert_int_equal(st.compiles, 0);
    assert_int_equal(st.cache_hits, 1);
    kiln_close(ctx);
    char *after = test_read_file(runs);
    assert_non_null(after);
    if (strcmp(before, after) != 0) fail_msg("the cache hit ran the compiler:\n%s", after + strlen(before));
    free(before);
    free(after);
    free(src);
    /* kiln_cache_clear forgets the remembered version and link lines too. */
    char path[4400];
    assert_true(link_file(dir, path, sizeof path));
    TEST_OK(kiln_cache_clear(NULL));
    assert_false(link_file(dir, path, sizeof path));
    assert_false(has_prefix_file(dir, "cpu-cxx-"));
    unsetenv("KILN_CXX");
    if (old) setenv("KILN_CACHE_DIR", old, 1);
    free(old);
    test_remove_tree(dir);
    free(dir);
}

/* A driver whose -### shows no collect2 line (a clang behind `c++`, here a
 * wrapper that answers -### with nothing): modules link through the driver,
 * and the driver is not asked again at every compile. */
static void test_driver_without_link_line(void **state) {
    (void)state;
    if (!is_cpu()) skip();
    char *old = getenv("KILN_CACHE_DIR") ? strdup(getenv("KILN_CACHE_DIR")) : NULL;
    char *dir = test_fresh_cache("cpucold-nolink");
    char wrapper[4400], runs[4400], script[9000];
    snprintf(wrapper, sizeof wrapper, "%s/quiet-cxx", dir);
    snprintf(runs, sizeof runs, "%s/asked.log", dir);
    snprintf(script, sizeof script,
             "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = '-###' ] && { echo asked >> '%s'; exit 0; }; done\n"
             "exec c++ \"$@\"\n",
             runs);
    write_text(wrapper, script);
    assert_int_equal(chmod(wrapper, 0700), 0);
    setenv("KILN_CXX", wrapper, 1);
    kiln_context *ctx = test_open();
    for (int i = 0; i < 2; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "no link line %d", i);
        char *src = axpy_source(tag);
        run_and_check(ctx, src, "axpy");
        free(src);
    }
    kiln_close(ctx);
    char *asked = test_read_file(runs);
    assert_non_null(asked);
    assert_string_equal(asked, "asked\n"); /* once for both compiles */
    free(asked);
    unsetenv("KILN_CXX");
    if (old) setenv("KILN_CACHE_DIR", old, 1);
    free(old);
    test_remove_tree(dir);
    free(dir);
}

static void test_driver_link_still_works(void **state) {
    (void)state;
    if (!is_cpu()) skip();
    setenv("KILN_CPU_LINK", "driver", 1);
    kiln_context *ctx = test_open();
    char *src = axpy_source("driver link");
    run_and_check(ctx, src, "axpy");
    char runtime[2048]; /* a new cache key: compiled, not loaded */
    snprintf(runtime, sizeof runtime, "%s// driver link\n", runtime_kernel);
    run_and_check(ctx, runtime, "scratch");
    free(src);
    kiln_close(ctx);
    unsetenv("KILN_CPU_LINK");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_module_needing_cxx_runtime_runs),
        cmocka_unit_test(test_kernels_are_cuda_c),
        cmocka_unit_test(test_bad_link_lines_fall_back),
        cmocka_unit_test(test_cache_hit_runs_no_process),
        cmocka_unit_test(test_driver_without_link_line),
        cmocka_unit_test(test_driver_link_still_works),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
