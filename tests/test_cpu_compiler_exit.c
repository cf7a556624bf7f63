/* test_cpu_compiler_exit.c: a host compiler that fails without a word, or is
 * killed, leaves a message that says so: the exit status, or the signal and,
 * for SIGKILL (the out-of-memory killer's), that memory may have run out.
 * Fake compilers (KILN_CXX pointing at a shell script) answer --version as
 * the real one does, so that kiln takes them for a compiler, and fail every
 * compile. CPU only: the host compiler is the CPU backend's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"

/* Writes an executable script `name` in dir whose compiles run `body`. */
static char *fake_compiler(const char *dir, const char *name, const char *body) {
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\n"
            "for a in \"$@\"; do case \"$a\" in --version) exec c++ \"$@\";; esac; done\n"
            "%s\n",
            body);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
    return path;
}

/* Compiles a kernel no cache holds with KILN_CXX=compiler; returns the
 * status and copies the message into msg. */
static kiln_status compile_with(const char *compiler, char *msg, size_t cap) {
    static int serial;
    assert_int_equal(setenv("KILN_CXX", compiler, 1), 0);
    kiln_context *ctx = NULL;
    TEST_OK(kiln_open(&ctx, "cpu"));
    char src[256];
    snprintf(src, sizeof src, "__global__ void fresh(int *x) { x[0] = %d; }\n",
             (int)getpid() * 100 + serial++);
    kiln_kernel *k = NULL;
    kiln_status s = kiln_kernel_from_source(ctx, src, "fresh", NULL, &k);
    snprintf(msg, cap, "%s", kiln_last_error());
    kiln_kernel_release(k);
    kiln_close(ctx);
    unsetenv("KILN_CXX");
    return s;
}

static void test_silent_exit(void **state) {
    (void)state;
    char *dir = test_temp_dir("cxx-exit");
    char *cxx = fake_compiler(dir, "silent-c++", "exit 3");
    char msg[4096];
    kiln_status s = compile_with(cxx, msg, sizeof msg);
    if (s != KILN_ERR_COMPILE) fail_msg("status %s: %s", kiln_status_string(s), msg);
    if (!test_contains(msg, "silent-c++ exited with status 3 without printing anything"))
        fail_msg("the message does not say what happened: %s", msg);
    free(cxx);
    free(dir);
}

static void test_killed(void **state) {
    (void)state;
    char *dir = test_temp_dir("cxx-kill");
    char *cxx = fake_compiler(dir, "killed-c++", "kill -9 $$");
    char msg[4096];
    kiln_status s = compile_with(cxx, msg, sizeof msg);
    if (s != KILN_ERR_COMPILE) fail_msg("status %s: %s", kiln_status_string(s), msg);
    if (!test_contains(msg, "killed-c++ was killed by signal 9 (SIGKILL)") ||
        !test_contains(msg, "memory may have run out"))
        fail_msg("the message does not say what happened: %s", msg);
    free(cxx);
    /* another signal is named, without the guess about memory */
    cxx = fake_compiler(dir, "segv-c++", "kill -11 $$");
    s = compile_with(cxx, msg, sizeof msg);
    if (s != KILN_ERR_COMPILE) fail_msg("status %s: %s", kiln_status_string(s), msg);
    if (!test_contains(msg, "segv-c++ was killed by signal 11 (SIGSEGV)") || test_contains(msg, "memory"))
        fail_msg("the message does not say what happened: %s", msg);
    free(cxx);
    free(dir);
}

/* A compiler that explains itself keeps its own words, without kiln's note. */
static void test_own_words_kept(void **state) {
    (void)state;
    char *dir = test_temp_dir("cxx-words");
    char *cxx =
        fake_compiler(dir, "talking-c++", "echo 'kernel.cu:1:1: error: something specific' >&2; exit 1");
    char msg[4096];
    kiln_status s = compile_with(cxx, msg, sizeof msg);
    if (s != KILN_ERR_COMPILE) fail_msg("status %s: %s", kiln_status_string(s), msg);
    if (!test_contains(msg, "something specific") || test_contains(msg, "without printing anything"))
        fail_msg("unexpected message: %s", msg);
    free(cxx);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silent_exit),
        cmocka_unit_test(test_killed),
        cmocka_unit_test(test_own_words_kept),
    };
    return cmocka_run_group_tests_name("test_cpu_compiler_exit", tests, NULL, NULL);
}
