/* test_files.c: the files kiln writes and reads (issue 13, items 11-13): the
 * trace never follows a planted link nor replaces what is not a regular
 * file, a profile that cannot be written says so, and sources that are not
 * regular files or are too large are refused. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"

static char *read_text(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* A context that has recorded something (an allocation and a copy). */
static kiln_context *profiled_context(void) {
    kiln_context *ctx = test_open();
    TEST_OK(kiln_profiler_start(ctx));
    int64_t n = 16;
    float host[16] = {0};
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, host, sizeof host, &a));
    kiln_array_release(a);
    return ctx;
}

/* A link planted under the name the trace writer once used for its
 * temporary (<path>.tmp.<pid>) is not followed: its target is untouched. */
static void test_trace_ignores_planted_link(void **state) {
    (void)state;
    char *dir = test_temp_dir("files-link");
    char trace[1200], victim[1200], planted[1300];
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    snprintf(planted, sizeof planted, "%s.tmp.%d", trace, (int)getpid());
    write_text(victim, "precious\n");
    assert_int_equal(symlink(victim, planted), 0);
    kiln_context *ctx = profiled_context();
    TEST_OK(kiln_profiler_write_trace(ctx, trace));
    kiln_close(ctx);
    char *v = read_text(victim), *t = read_text(trace);
    assert_string_equal(v, "precious\n");
    assert_non_null(t);
    assert_true(test_contains(t, "traceEvents"));
    struct stat st;
    assert_int_equal(lstat(trace, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 077, 0); /* a new trace is private (mkstemp's 0600) */
    free(v);
    free(t);
    unlink(planted);
    unlink(victim);
    unlink(trace);
    rmdir(dir);
    free(dir);
}

static void *drain(void *arg) {
    int fd = open((const char *)arg, O_RDONLY);
    char buf[4096];
    size_t total = 0;
    ssize_t n;
    while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0) total += (size_t)n;
    if (fd >= 0) close(fd);
    return (void *)total;
}

/* A path that is not a regular file (here a FIFO; /dev/null is the same
 * case) is written in place, never replaced by a regular file. */
static void test_trace_into_fifo(void **state) {
    (void)state;
    char *dir = test_temp_dir("files-fifo");
    char fifo[1200];
    snprintf(fifo, sizeof fifo, "%s/trace.fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pthread_t reader;
    assert_int_equal(pthread_create(&reader, NULL, drain, fifo), 0);
    kiln_context *ctx = profiled_context();
    TEST_OK(kiln_profiler_write_trace(ctx, fifo));
    kiln_close(ctx);
    void *got = NULL;
    pthread_join(reader, &got);
    assert_true((size_t)got > 100); /* the trace went through the FIFO */
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    unlink(fifo);
    rmdir(dir);
    free(dir);
}

/* KILN_PROFILE_OUT on a full device: the failure is reported on stderr and
 * the profile printed there instead. */
static void test_profile_out_full_disk(void **state) {
    (void)state;
    char *dir = test_temp_dir("files-full");
    char capture[1200];
    snprintf(capture, sizeof capture, "%s/stderr.txt", dir);
    setenv("KILN_PROFILE", "1", 1);
    setenv("KILN_PROFILE_OUT", "/dev/full", 1);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(capture, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    dup2(fd, 2);
    close(fd);
    kiln_context *ctx = test_open();
    int64_t n = 8;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &n, &a));
    kiln_array_release(a);
    kiln_close(ctx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unsetenv("KILN_PROFILE");
    unsetenv("KILN_PROFILE_OUT");
    char *text = read_text(capture);
    if (!test_contains(text, "KILN_PROFILE_OUT=/dev/full") || !test_contains(text, strerror(ENOSPC)))
        fail_msg("no write error reported on stderr:\n%s", text);
    if (!test_contains(text, "==kiln==")) fail_msg("the profile was lost:\n%s", text);
    free(text);
    unlink(capture);
    rmdir(dir);
    free(dir);
}

static void cli_path(char *out, size_t cap) {
    const char *b = getenv("KILN_BINARY_DIR");
    snprintf(out, cap, "%s/kiln", b ? b : ".");
}

/* /dev/zero used to be read until memory ran out; now it is refused at
 * once (the timeout only bounds the old behaviour). */
static void test_compile_dev_zero(void **state) {
    (void)state;
    char kiln[1200];
    cli_path(kiln, sizeof kiln);
    char *argv[] = {"timeout", "60", kiln, "compile", "/dev/zero", "--target", "cpu", NULL};
    char *out = NULL;
    int rc = test_spawn(argv, NULL, &out);
    assert_int_not_equal(rc, 0);
    assert_int_not_equal(rc, 124); /* not the timeout */
    if (!test_contains(out, "not a regular file")) fail_msg("kiln compile /dev/zero said:\n%s", out);
    free(out);

    kiln_context *ctx = test_open();
    kiln_module *m = NULL;
    TEST_FAILS_WITH(kiln_module_from_file(ctx, "/dev/zero", NULL, &m), KILN_ERR_IO, "not a regular file");
    TEST_FAILS_WITH(kiln_module_from_file(ctx, "/dev", NULL, &m), KILN_ERR_IO, "not a regular file");
    kiln_close(ctx);
}

/* A source larger than KILN_MAX_SOURCE_BYTES (sparse: no disk used). */
static void test_source_too_large(void **state) {
    (void)state;
    char *dir = test_temp_dir("files-large");
    char big[1200], kiln[1200];
    snprintf(big, sizeof big, "%s/big.cu", dir);
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)KILN_MAX_SOURCE_BYTES + 1), 0);
    close(fd);
    kiln_context *ctx = test_open();
    kiln_module *m = NULL;
    TEST_FAILS_WITH(kiln_module_from_file(ctx, big, NULL, &m), KILN_ERR_IO, "limited to");
    kiln_close(ctx);
    cli_path(kiln, sizeof kiln);
    char *argv[] = {"timeout", "60", kiln, "compile", big, "--target", "cpu", NULL};
    char *out = NULL;
    int rc = test_spawn(argv, NULL, &out);
    assert_int_not_equal(rc, 0);
    if (!test_contains(out, "limited to")) fail_msg("kiln compile of a huge file said:\n%s", out);
    free(out);
    unlink(big);
    rmdir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_ignores_planted_link), cmocka_unit_test(test_trace_into_fifo),
        cmocka_unit_test(test_profile_out_full_disk),      cmocka_unit_test(test_compile_dev_zero),
        cmocka_unit_test(test_source_too_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
