/* test_cli.c: the `kiln` command as a user runs it: exit statuses and what
 * it prints for info, compile (good and bad source, both backends' log
 * formats), cache, demo (with --profile and --trace) and prof. The binaries
 * are found through KILN_BINARY_DIR (set by ctest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_support.h"

static char bin_dir[2048], work_dir[2048];

/* Runs a shell command line, stdout and stderr together; returns the exit
 * status and the output (caller frees). */
static int run(char **output, const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t got;
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 1024) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
    }
    out[len] = '\0';
    int status = pclose(p);
    *output = out;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void expect(const char *out, const char *what) {
    if (!strstr(out, what)) fail_msg("output lacks \"%s\":\n%s", what, out);
}

static void write_file(const char *name, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", work_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    const char *b = getenv("KILN_BINARY_DIR");
    snprintf(bin_dir, sizeof bin_dir, "%s", b ? b : ".");
    snprintf(work_dir, sizeof work_dir, "%s/test-cli-XXXXXX", b ? b : "/tmp");
    if (!mkdtemp(work_dir)) return -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char *out = NULL;
    run(&out, "rm -rf '%s'", work_dir);
    free(out);
    return 0;
}

static void test_info(void **state) {
    (void)state;
    char *out = NULL;
    assert_int_equal(run(&out, "'%s/kiln' info", bin_dir), 0);
    expect(out, "backends:");
    expect(out, "cpu: always available");
    expect(out, "cache:");
    free(out);
}

static void test_compile_reports_lines(void **state) {
    (void)state;
    write_file("bad.cu", "__global__ void k(float *x) {\n  x[0] = 1.0f\n}\n");
    write_file("good.cu", "extern \"C\" __global__ void k(float *x, int n) {\n"
                          "  int i = threadIdx.x;\n  if (i < n) x[i] = 1.0f;\n}\n");
    char *out = NULL;
    assert_int_equal(run(&out, "cd '%s' && '%s/kiln' compile bad.cu --target cpu", work_dir, bin_dir), 1);
    expect(out, "bad.cu:2");
    free(out);
    assert_int_equal(run(&out, "cd '%s' && '%s/kiln' compile good.cu --target cpu", work_dir, bin_dir), 0);
    expect(out, "compiled for cpu");
    free(out);
    assert_int_equal(
        run(&out, "cd '%s' && '%s/kiln' compile good.cu --target cpu --fast-compile", work_dir, bin_dir), 0);
    expect(out, "compiled for cpu");
    free(out);
    char *log = NULL;
    if (kiln_compile_only("cuda", "sm_90", "__global__ void p() {}\n", "probe.cu", NULL, &log) ==
        KILN_ERR_COMPILER_MISSING) {
        kiln_free(log);
        return; /* no NVRTC here: the CPU half was checked */
    }
    kiln_free(log);
    assert_int_equal(
        run(&out, "cd '%s' && '%s/kiln' compile bad.cu --target cuda --arch sm_90", work_dir, bin_dir), 1);
    expect(out, "bad.cu(3)");
    free(out);
    assert_int_equal(
        run(&out, "cd '%s' && '%s/kiln' compile good.cu --target cuda --arch sm_90", work_dir, bin_dir), 0);
    expect(out, "registers"); /* the resource report */
    free(out);
    assert_int_equal(run(&out,
                         "cd '%s' && '%s/kiln' compile good.cu --target cuda --arch sm_90 --fast-compile",
                         work_dir, bin_dir),
                     0);
    expect(out, "registers");
    free(out);
}

static void test_cache_commands(void **state) {
    (void)state;
    char *out = NULL;
    assert_int_equal(run(&out, "'%s/kiln' cache path", bin_dir), 0);
    free(out);
    assert_int_equal(run(&out, "'%s/kiln' cache list", bin_dir), 0);
    free(out);
    assert_int_not_equal(run(&out, "'%s/kiln' cache frobnicate", bin_dir), 0);
    free(out);
}

static void test_demo_table_profile_and_trace(void **state) {
    (void)state;
    char *out = NULL;
    assert_int_equal(run(&out, "cd '%s' && '%s/kiln' demo saxpy hermite --size 2000 --repeat 3 --target %s",
                         work_dir, bin_dir, test_target()),
                     0);
    expect(out, "workload");
    expect(out, "saxpy");
    expect(out, "hermite");
    expect(out, "| yes");
    free(out);
    assert_int_equal(
        run(&out,
            "cd '%s' && '%s/kiln' demo saxpy --size 2000 --repeat 3 --target %s --profile --trace t.json",
            work_dir, bin_dir, test_target()),
        0);
    expect(out, "Profiling result");
    expect(out, "[memcpy HtoD]");
    free(out);
    char path[4096];
    snprintf(path, sizeof path, "%s/t.json", work_dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 2);
    /* bad input: an unknown workload is a usage error, not a crash */
    assert_int_equal(run(&out, "'%s/kiln' demo no_such_workload", bin_dir), 2);
    expect(out, "no workload");
    free(out);
    assert_int_equal(run(&out, "'%s/kiln' demo saxpy --size 0", bin_dir), 2);
    free(out);
}

static void test_prof_runs_a_program(void **state) {
    (void)state;
    char *out = NULL;
    int rc = run(&out, "cd '%s' && KILN_TARGET=%s '%s/kiln' prof -- '%s/example_saxpy'", work_dir,
                 test_target(), bin_dir, bin_dir);
    if (rc != 0) fail_msg("kiln prof exited %d:\n%s", rc, out);
    expect(out, "Profiling result");
    expect(out, "saxpy");
    free(out);
    /* the program's own exit status comes through */
    assert_int_equal(run(&out, "'%s/kiln' prof -- sh -c 'exit 3'", bin_dir), 3);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_compile_reports_lines),
        cmocka_unit_test(test_cache_commands),
        cmocka_unit_test(test_demo_table_profile_and_trace),
        cmocka_unit_test(test_prof_runs_a_program),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
