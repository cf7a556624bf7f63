/* test_cache.c: the disk cache: hits across contexts and processes, corrupt
 * entries detected and rebuilt, unsafe directories refused, many processes
 * compiling the same module at once. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jit/cache.h"
#include "test_support.h"

static const char *src = "__global__ void add_one(int *x, int n) {\n"
                         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "    if (i < n) x[i] += 1;\n"
                         "}\n";

static char self_path[1024];

/* Builds the module in a fresh context and checks it runs; returns stats. */
static kiln_jit_stats build_once(void) {
    kiln_context *ctx = test_open();
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "add_one", NULL, &k));
    int64_t n = 10;
    int32_t host[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &n, host, sizeof host, &a));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(32), 0, NULL, KILN_ARGS(kiln_arr(a), kiln_i32(10))));
    TEST_OK(kiln_array_to_host(a, host, sizeof host));
    for (int i = 0; i < 10; i++) assert_int_equal(host[i], i + 1);
    kiln_jit_stats st;
    TEST_OK(kiln_jit_stats_get(ctx, &st));
    kiln_array_release(a);
    kiln_kernel_release(k);
    kiln_close(ctx);
    return st;
}

static void only_entry_path(const char *dir, char *out, size_t cap) {
    kiln_cache_info info;
    TEST_OK(kiln_cache_info_get(&info));
    assert_int_equal(info.entries, 1);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "ls %s/*.kc", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(fgets(out, (int)cap, p));
    pclose(p);
    out[strcspn(out, "\n")] = '\0';
}

static void test_second_context_hits(void **state) {
    (void)state;
    char *dir = test_fresh_cache("hit");
    kiln_jit_stats a = build_once(), b = build_once();
    assert_int_equal(a.compiles, 1);
    assert_int_equal(a.cache_hits, 0);
    assert_int_equal(b.compiles, 0);
    assert_int_equal(b.cache_hits, 1);
    free(dir);
}

static void test_corrupt_entry_is_rebuilt(void **state) {
    (void)state;
    char *dir = test_fresh_cache("corrupt");
    build_once();
    char entry[1400];
    only_entry_path(dir, entry, sizeof entry);
    /* Flip one byte in the middle of the payload. */
    FILE *f = fopen(entry, "r+b");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size / 2, SEEK_SET);
    int c = fgetc(f);
    fseek(f, size / 2, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
    kiln_jit_stats st = build_once();
    assert_int_equal(st.cache_rejects, 1);
    assert_int_equal(st.compiles, 1);
    /* ...and the rebuilt entry is good again. */
    st = build_once();
    assert_int_equal(st.cache_hits, 1);
    /* A truncated entry is caught the same way. */
    assert_int_equal(truncate(entry, 20), 0);
    st = build_once();
    assert_int_equal(st.cache_rejects, 1);
    free(dir);
}

static void test_world_writable_dir_is_refused(void **state) {
    (void)state;
    char *dir = test_fresh_cache("unsafe");
    assert_int_equal(chmod(dir, 0777), 0);
    kiln_cache_info info;
    TEST_OK(kiln_cache_info_get(&info));
    assert_int_equal(info.usable, 0);
    if (!test_contains(info.reason, "writable by others")) fail_msg("reason: %s", info.reason);
    /* Work still gets done, but nothing is loaded from or written there. */
    kiln_jit_stats st = build_once();
    assert_int_equal(st.compiles, 1);
    st = build_once();
    assert_int_equal(st.compiles, 1);
    assert_int_equal(chmod(dir, 0700), 0);
    TEST_OK(kiln_cache_info_get(&info));
    assert_int_equal(info.usable, 1);
    assert_int_equal(info.entries, 0);
    int64_t removed = -1;
    TEST_OK(kiln_cache_clear(&removed));
    assert_int_equal(removed, 0);
    free(dir);
}

static void test_new_directory_is_private(void **state) {
    (void)state;
    char *parent = test_temp_dir("private");
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/a/b/kiln", parent);
    setenv("KILN_CACHE_DIR", dir, 1);
    build_once();
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 077, 0);
    int64_t removed = 0;
    TEST_OK(kiln_cache_clear(&removed));
    assert_int_equal(removed, 1);
    free(parent);
}

/* Four processes compile the same module into one empty cache at once; all
 * must succeed and leave exactly one valid entry; a fifth process then hits. */
static void test_many_processes_at_once(void **state) {
    (void)state;
    char *dir = test_fresh_cache("many");
    char *argv[] = {self_path, "child", NULL};
    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        extern char **environ;
        assert_int_equal(posix_spawn(&pids[i], self_path, NULL, NULL, argv, environ), 0);
    }
    for (int i = 0; i < 4; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    kiln_cache_info info;
    TEST_OK(kiln_cache_info_get(&info));
    assert_int_equal(info.entries, 1);
    char *out = NULL;
    assert_int_equal(test_spawn(argv, NULL, &out), 0);
    if (!test_contains(out, "hits=1")) fail_msg("child output: %s", out);
    free(out);
    free(dir);
}

static int child_main(void) {
    kiln_jit_stats st = build_once();
    printf("compiles=%lld hits=%lld\n", (long long)st.compiles, (long long)st.cache_hits);
    return 0;
}

int main(int argc, char **argv) {
    snprintf(self_path, sizeof self_path, "%s", argv[0]);
    if (argc > 1 && strcmp(argv[1], "child") == 0) return child_main();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_context_hits),           cmocka_unit_test(test_corrupt_entry_is_rebuilt),
        cmocka_unit_test(test_world_writable_dir_is_refused), cmocka_unit_test(test_new_directory_is_private),
        cmocka_unit_test(test_many_processes_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
