/* test_oom.c: out of memory is an error that leaves the context usable, and
 * memory freed after it is all usable again (issue 13, item 6). The work
 * runs in a child process (this executable with --child) under an address
 * space limit, so that the limit binds nothing else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static size_t vm_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f && fscanf(f, "%lu", &pages) != 1) pages = 0;
    if (f) fclose(f);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

#define CHUNK_BYTES ((size_t)16 << 20)
#define MAX_ARRAYS 256

/* Allocates (and writes) 16 MiB arrays until memory runs out; returns how many. */
static int fill(kiln_context *ctx, kiln_array **arrays, kiln_status *last) {
    int64_t n = (int64_t)(CHUNK_BYTES / sizeof(float));
    int count = 0;
    while (count < MAX_ARRAYS) {
        *last = kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &arrays[count]);
        if (*last != KILN_OK) break;
        count++;
    }
    return count;
}

static int child(void) {
    kiln_context *ctx = NULL;
    TEST_CHILD_CHECK(kiln_open(&ctx, test_target()) == KILN_OK, "%s", kiln_last_error());
    kiln_kernel *k = NULL;
    TEST_CHILD_CHECK(kiln_kernel_from_source(ctx,
                                             "__global__ void inc(float *x, int n) {\n"
                                             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                             "    if (i < n) x[i] += 1;\n"
                                             "}\n",
                                             "inc", NULL, &k) == KILN_OK,
                     "%s", kiln_last_error());
    /* Room for about 40 arrays above what the process maps now. */
    struct rlimit lim = {vm_bytes() + 40 * CHUNK_BYTES + ((size_t)64 << 20), RLIM_INFINITY};
    lim.rlim_max = lim.rlim_cur;
    TEST_CHILD_CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");

    double t0 = now_s();
    void *pinned = NULL;
    kiln_status s = kiln_host_alloc(ctx, (size_t)8 << 30, &pinned);
    TEST_CHILD_CHECK(s == KILN_ERR_OUT_OF_MEMORY, "kiln_host_alloc(8 GiB) -> %s", kiln_status_string(s));
    TEST_CHILD_CHECK(now_s() - t0 < 10, "kiln_host_alloc took %.1f s", now_s() - t0);
    TEST_CHILD_CHECK(strstr(kiln_last_error(), "bytes") != NULL, "%s", kiln_last_error());

    static kiln_array *arrays[MAX_ARRAYS];
    kiln_status last = KILN_OK;
    int first = fill(ctx, arrays, &last);
    TEST_CHILD_CHECK(last == KILN_ERR_OUT_OF_MEMORY, "%s: %s", kiln_status_string(last), kiln_last_error());
    TEST_CHILD_CHECK(first >= 10 && first < MAX_ARRAYS, "%d arrays", first);
    for (int i = 0; i < first; i++) kiln_array_release(arrays[i]);
    for (int round = 0; round < 3; round++) {
        int again = fill(ctx, arrays, &last);
        TEST_CHILD_CHECK(again >= first, "round %d: %d arrays after freeing %d", round, again, first);
        /* the context still runs kernels, on memory it just got */
        int n = (int)(CHUNK_BYTES / sizeof(float));
        TEST_CHILD_CHECK(kiln_launch(k, KILN_DIM((unsigned)(n + 255) / 256), KILN_DIM(256), 0, NULL,
                                     KILN_ARGS(kiln_arr(arrays[0]), kiln_i32(n))) == KILN_OK,
                         "%s", kiln_last_error());
        float v[4];
        kiln_array *head = NULL;
        TEST_CHILD_CHECK(kiln_array_slice(arrays[0], 0, 0, 4, 1, &head) == KILN_OK, "%s", kiln_last_error());
        TEST_CHILD_CHECK(kiln_array_to_host(head, v, sizeof v) == KILN_OK, "%s", kiln_last_error());
        TEST_CHILD_CHECK(v[0] == 1 && v[3] == 1, "%g %g", v[0], v[3]);
        kiln_array_release(head);
        for (int i = 0; i < again; i++) kiln_array_release(arrays[i]);
        printf("round %d: %d arrays of 16 MiB (first fill %d)\n", round, again, first);
    }
    kiln_kernel_release(k);
    kiln_close(ctx);
    printf("alive\n");
    return 0;
}

static void test_out_of_memory(void **state) {
    (void)state;
    if (strcmp(test_target(), "cpu") != 0) skip(); /* an address-space limit binds host memory only */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    skip(); /* the sanitizers reserve terabytes of address space for their shadow memory */
#endif
    char *out = NULL;
    int rc = test_spawn_child(NULL, NULL, &out);
    if (rc != 0 || !test_contains(out, "alive")) fail_msg("child exited with %d:\n%s", rc, out);
    free(out);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--child") == 0) return child();
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_out_of_memory)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
