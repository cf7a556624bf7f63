/* test_examples.c: the seed workloads (examples/) at small sizes on the
 * backend under test, every example kernel through NVRTC for sm_90 (no GPU
 * needed), and the `kiln` CLI's contract on exit codes and diagnostics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"
#include "test_support.h"

/* ---------------------------------------------------------------- workloads */
/* Sizes chosen to hit the edges: saxpy's tail block, matmul's ragged tile
 * (77 is not a multiple of 32), an odd Mandelbrot width, a mesh smaller than
 * one block. */
static void run_example(const char *name, int64_t size) {
    kiln_context *ctx = test_open();
    const kiln_example *ex = kiln_example_find(name);
    assert_non_null(ex);
    char *dir = test_temp_dir("examples");
    assert_non_null(dir);
    kiln_example_opts opts = {size, 3, 0, dir, 0};
    kiln_example_result r;
    TEST_OK((kiln_status)ex->run(ctx, &opts, &r));
    print_message("%s (size %lld) on %s: %s\n", name, (long long)size, test_target(), r.check);
    if (!r.passed) fail_msg("%s failed its check: %s", name, r.check);
    assert_int_equal(r.size, size);
    assert_true(r.runs >= 1 && r.ms_median >= 0);
    kiln_close(ctx);
    free(dir);
}

static void test_saxpy(void **state) {
    (void)state;
    run_example("saxpy", 100003);
}
static void test_mandelbrot(void **state) {
    (void)state;
    run_example("mandelbrot", 151);
}
static void test_matmul_ragged(void **state) {
    (void)state;
    run_example("matmul", 77);
}
static void test_haversine_mesh(void **state) {
    (void)state;
    run_example("haversine_mesh", 29);
}

static void test_registry(void **state) {
    (void)state;
    int n = 0, raw = 0;
    const kiln_example *all = kiln_examples(&n);
    for (int i = 0; i < n; i++) {
        assert_ptr_equal(kiln_example_find(all[i].name), &all[i]);
        assert_non_null(all[i].run);
        if (!all[i].prepare) continue; /* vectorize: test_ufunc_examples.c */
        raw++;
        assert_non_null(kiln_example_source(all[i].name));
        assert_non_null(strstr(all[i].source, all[i].kernel_name));
        assert_non_null(all[i].verify);
    }
    assert_int_equal(raw, 4);
    assert_null(kiln_example_find("nosuch"));
    assert_null(kiln_example_source(NULL));
}

/* A bad size is refused with a status, never a crash or abort. */
static void test_bad_size_is_refused(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    kiln_example_opts opts = {1, 1, 0, NULL, 0};
    kiln_example_result r;
    assert_int_equal(kiln_example_find("mandelbrot")->run(ctx, &opts, &r), KILN_ERR_INVALID_ARGUMENT);
    kiln_close(ctx);
}

/* ---------------------------------------------------------------- NVRTC */
/* Is a CUDA toolkit installed ($CUDA_HOME or /usr/local/cuda)? Without one
 * (a fresh machine running make test) the NVRTC checks are skipped, saying
 * so; with one (CI), a missing NVRTC is a failure with its reason, not a
 * skip: otherwise a broken loader would pass unnoticed. */
static int cuda_toolkit_present(void) {
    const char *home = getenv("CUDA_HOME");
    char path[1024];
    snprintf(path, sizeof path, "%s/include/cuda.h", home && *home ? home : "/usr/local/cuda");
    FILE *f = fopen(path, "r");
    if (f) fclose(f);
    if (!f) fprintf(stderr, "no CUDA toolkit (%s): NVRTC checks skipped\n", path);
    return f != NULL;
}

static void test_every_example_compiles_with_nvrtc_sm90(void **state) {
    (void)state;
    if (!cuda_toolkit_present()) return;
    int n = 0;
    const kiln_example *all = kiln_examples(&n);
    for (int i = 0; i < n; i++) {
        if (!all[i].source) continue; /* vectorize: kiln generates the source */
        char *log = NULL;
        char name[64];
        snprintf(name, sizeof name, "%s.cu", all[i].name);
        kiln_status s = kiln_compile_only("cuda", "sm_90", all[i].source, name, NULL, &log);
        if (s == KILN_ERR_COMPILER_MISSING)
            fail_msg("NVRTC not found, cannot check %s for sm_90: %s", all[i].name, kiln_last_error());
        if (s != KILN_OK)
            fail_msg("%s does not compile for sm_90: %s: %s\nlog:\n%s", all[i].name, kiln_status_string(s),
                     kiln_last_error(), log ? log : "");
        kiln_free(log);
    }
}

/* ---------------------------------------------------------------- CLI */
static const char *cli_path(void) {
    static char path[1024];
    const char *dir = getenv("KILN_BINARY_DIR");
    if (!dir) fail_msg("KILN_BINARY_DIR is not set (run through ctest)");
    snprintf(path, sizeof path, "%s/kiln", dir);
    return path;
}

static int run_cli(char **output, const char *a1, const char *a2, const char *a3, const char *a4,
                   const char *a5, const char *a6) {
    char *argv[] = {(char *)cli_path(), (char *)a1, (char *)a2, (char *)a3,
                    (char *)a4,         (char *)a5, (char *)a6, NULL};
    char *env[] = {"KILN_QUIET=1", NULL};
    int rc = test_spawn(argv, env, output);
    if (rc < 0) fail_msg("cannot run %s", argv[0]);
    return rc;
}

static char *write_source(const char *dir, const char *file, const char *text) {
    char *path = malloc(2048);
    snprintf(path, 2048, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void check_compile_error(const char *target) {
    char *dir = test_temp_dir("cli");
    assert_non_null(dir);
    /* The error is on line 3. */
    char *path = write_source(dir, "broken.cu",
                              "__global__ void k(float *x) {\n"
                              "    int i = threadIdx.x;\n"
                              "    x[i] = 2 * x[i] +;\n"
                              "}\n");
    char *out = NULL;
    int rc = run_cli(&out, "compile", path, "--target", target, NULL, NULL);
    if (rc != 1) fail_msg("kiln compile --target %s exited %d, expected 1:\n%s", target, rc, out);
    /* gcc says "broken.cu:3:", NVRTC says "broken.cu(3):". */
    if (!test_contains(out, "broken.cu:3:") && !test_contains(out, "broken.cu(3)"))
        fail_msg("kiln compile --target %s did not name line 3:\n%s", target, out);
    free(out);
    free(path);
    free(dir);
}

static void test_cli_compile_error_names_line_cpu(void **state) {
    (void)state;
    check_compile_error("cpu");
}
static void test_cli_compile_error_names_line_cuda(void **state) {
    (void)state;
    if (cuda_toolkit_present()) check_compile_error("cuda");
}

static void test_cli_compile_ok(void **state) {
    (void)state;
    char *dir = test_temp_dir("cli");
    char *path = write_source(dir, "fine.cu", kiln_example_source("matmul"));
    char *out = NULL;
    int rc = run_cli(&out, "compile", path, "--target", "cpu", NULL, NULL);
    if (rc != 0) fail_msg("kiln compile exited %d:\n%s", rc, out);
    free(out);
    free(path);
    free(dir);
}

static void test_cli_usage_errors(void **state) {
    (void)state;
    char *out = NULL;
    assert_int_equal(run_cli(&out, "frobnicate", NULL, NULL, NULL, NULL, NULL), 2);
    assert_true(test_contains(out, "usage"));
    free(out);
    assert_int_equal(run_cli(&out, NULL, NULL, NULL, NULL, NULL, NULL), 2);
    free(out);
    assert_int_equal(run_cli(&out, "demo", "--size", "many", NULL, NULL, NULL), 2);
    assert_true(test_contains(out, "--size"));
    free(out);
    assert_int_equal(run_cli(&out, "demo", "nosuch", NULL, NULL, NULL, NULL), 2);
    free(out);
    assert_int_equal(run_cli(&out, "demo", "--bogus", NULL, NULL, NULL, NULL), 2);
    free(out);
    assert_int_equal(run_cli(&out, "cache", "shred", NULL, NULL, NULL, NULL), 2);
    free(out);
    assert_int_equal(run_cli(&out, "compile", "--target", NULL, NULL, NULL, NULL), 2);
    free(out);
    assert_int_equal(run_cli(&out, "compile", "/nonexistent/k.cu", "--target", "cpu", NULL, NULL), 1);
    assert_true(test_contains(out, "/nonexistent/k.cu"));
    free(out);
    assert_int_equal(run_cli(&out, "--version", NULL, NULL, NULL, NULL, NULL), 0);
    assert_true(test_contains(out, kiln_version_string()));
    free(out);
}

static void test_cli_demo_and_info(void **state) {
    (void)state;
    char *out = NULL;
    int rc = run_cli(&out, "demo", "saxpy", "--size", "4099", "--target", test_target());
    if (rc != 0) fail_msg("kiln demo exited %d:\n%s", rc, out);
    assert_true(test_contains(out, "saxpy"));
    assert_true(test_contains(out, "yes"));
    free(out);
    rc = run_cli(&out, "info", NULL, NULL, NULL, NULL, NULL);
    if (rc != 0) fail_msg("kiln info exited %d:\n%s", rc, out);
    assert_true(test_contains(out, "cache"));
    assert_true(test_contains(out, "cpu"));
    free(out);
    rc = run_cli(&out, "cache", "path", NULL, NULL, NULL, NULL);
    assert_int_equal(rc, 0);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_saxpy),
        cmocka_unit_test(test_mandelbrot),
        cmocka_unit_test(test_matmul_ragged),
        cmocka_unit_test(test_haversine_mesh),
        cmocka_unit_test(test_bad_size_is_refused),
        cmocka_unit_test(test_every_example_compiles_with_nvrtc_sm90),
        cmocka_unit_test(test_cli_compile_error_names_line_cpu),
        cmocka_unit_test(test_cli_compile_error_names_line_cuda),
        cmocka_unit_test(test_cli_compile_ok),
        cmocka_unit_test(test_cli_usage_errors),
        cmocka_unit_test(test_cli_demo_and_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
