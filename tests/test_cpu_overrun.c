/* test_cpu_overrun.c: a CPU kernel that writes past its array meets a guard
 * page: the launch ends with KILN_ERR_DEVICE_FAULT naming the kernel, block,
 * thread and the array overrun; no other array and nothing in the malloc
 * heap has changed; the process goes on and opens a new context. Small
 * arrays (slab slots) and large ones (a mapping each) alike. CPU only: on a
 * GPU an overrun stays in device memory by construction. Each case runs in
 * a child process (this executable with --child NAME, spawned): before the
 * fix the write landed in the heap and the process died later, or not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

typedef struct overrun_case {
    const char *name;
    const char *source;
    int64_t n;         /* int32 elements of the array overrun */
    const char *words; /* what the message must say about the access */
} overrun_case;

static const overrun_case cases[] = {
    /* 64 KiB written past a 64-byte array, element by element */
    {"small_sweep",
     "__global__ void small_sweep(int *x, int n) {\n"
     "    if (blockIdx.x == 1 && threadIdx.x == 3)\n"
     "        for (int k = n; k < n + 16384; k++) x[k] = 0x5a5a5a5a;\n"
     "}\n",
     16,
     "out-of-bounds write of argument 0 (64 bytes: 16 elements of 4 bytes) at element index 16, 0 bytes "
     "past"},
    /* one write 64 KiB past it */
    {"small_far",
     "__global__ void small_far(int *x, int n) {\n"
     "    if (blockIdx.x == 1 && threadIdx.x == 3) x[n + 16384] = 0x5a5a5a5a;\n"
     "}\n",
     16, "out-of-bounds write of argument 0 (64 bytes: 16 elements of 4 bytes) at element index 16400"},
    /* an odd size: the guard begins at the next multiple of 64 bytes */
    {"odd_sweep",
     "__global__ void odd_sweep(int *x, int n) {\n"
     "    if (blockIdx.x == 1 && threadIdx.x == 3)\n"
     "        for (int k = n; k < n + 16384; k++) x[k] = 0x5a5a5a5a;\n"
     "}\n",
     13,
     "out-of-bounds write of argument 0 (52 bytes: 13 elements of 4 bytes) at element index 16, 12 bytes "
     "past"},
    /* 2 MiB: a mapping of its own */
    {"large_sweep",
     "__global__ void large_sweep(int *x, int n) {\n"
     "    if (blockIdx.x == 1 && threadIdx.x == 3)\n"
     "        for (int k = n; k < n + 16384; k++) x[k] = 0x5a5a5a5a;\n"
     "}\n",
     1 << 19,
     "out-of-bounds write of argument 0 (2097152 bytes: 524288 elements of 4 bytes) at element index 524288"},
    /* a read before the start of the first array of a slab */
    {"read_before",
     "__global__ void read_before(int *x, int n) {\n"
     "    if (blockIdx.x == 1 && threadIdx.x == 3) {\n"
     "        int s = 0;\n"
     "        for (int k = 0; k < 4 * 65536; k++) s += x[-k];\n"
     "        x[0] = s;\n"
     "    }\n"
     "}\n",
     16, "out-of-bounds read of argument 0"},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static const char *add_src = "__global__ void add_one(int *x, int n) {\n"
                             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    if (i < n) x[i] += 1;\n"
                             "}\n";

/* A new context still works: a kernel runs and gives the right numbers. */
static int fresh_context_works(void) {
    kiln_context *ctx = NULL;
    TEST_CHILD_CHECK(kiln_open(&ctx, "cpu") == KILN_OK, "%s", kiln_last_error());
    kiln_kernel *k = NULL;
    TEST_CHILD_CHECK(kiln_kernel_from_source(ctx, add_src, "add_one", NULL, &k) == KILN_OK, "%s",
                     kiln_last_error());
    enum { N = 100 };
    int host[N];
    for (int i = 0; i < N; i++) host[i] = i;
    int64_t n = N;
    kiln_array *a = NULL;
    TEST_CHILD_CHECK(kiln_array_from_host(ctx, KILN_INT32, 1, &n, host, sizeof host, &a) == KILN_OK, "%s",
                     kiln_last_error());
    TEST_CHILD_CHECK(
        kiln_launch(k, KILN_DIM(4), KILN_DIM(32), 0, NULL, KILN_ARGS(kiln_arr(a), kiln_i32(N))) == KILN_OK,
        "%s", kiln_last_error());
    TEST_CHILD_CHECK(kiln_array_to_host(a, host, sizeof host) == KILN_OK, "%s", kiln_last_error());
    for (int i = 0; i < N; i++) TEST_CHILD_CHECK(host[i] == i + 1, "x[%d] = %d", i, host[i]);
    kiln_array_release(a);
    kiln_kernel_release(k);
    kiln_close(ctx);
    return 0;
}

/* Neighbours: arrays made before and after the victim, of its size and of
 * others, and heap buffers around them, all filled with a known pattern. */
enum { NEIGHBOURS = 12, HEAP = 8 };

static int run_child(const overrun_case *c) {
    kiln_context *ctx = NULL;
    TEST_CHILD_CHECK(kiln_open(&ctx, "cpu") == KILN_OK, "%s", kiln_last_error());
    kiln_kernel *k = NULL;
    TEST_CHILD_CHECK(kiln_kernel_from_source(ctx, c->source, c->name, NULL, &k) == KILN_OK, "%s",
                     kiln_last_error());
    unsigned char *heap[HEAP];
    kiln_array *nb[NEIGHBOURS], *victim = NULL;
    int64_t nb_n[NEIGHBOURS];
    for (int i = 0; i < HEAP / 2; i++) {
        heap[i] = malloc(64 << i);
        memset(heap[i], 0x11 + i, (size_t)64 << i);
    }
    for (int i = 0; i < NEIGHBOURS; i++) {
        nb_n[i] = i % 3 == 0 ? c->n : i % 3 == 1 ? 16 : 70000;
        TEST_CHILD_CHECK(kiln_array_full(ctx, KILN_INT32, 1, &nb_n[i], 1000 + i, 0, &nb[i]) == KILN_OK, "%s",
                         kiln_last_error());
        if (i == NEIGHBOURS / 2) {
            int64_t n = c->n;
            TEST_CHILD_CHECK(kiln_array_zeros(ctx, KILN_INT32, 1, &n, &victim) == KILN_OK, "%s",
                             kiln_last_error());
        }
    }
    for (int i = HEAP / 2; i < HEAP; i++) {
        heap[i] = malloc(64 << i);
        memset(heap[i], 0x11 + i, (size_t)64 << i);
    }
    kiln_status s =
        kiln_launch(k, KILN_DIM(2), KILN_DIM(8), 0, NULL, KILN_ARGS(kiln_arr(victim), kiln_i32((int)c->n)));
    const char *msg = kiln_last_error();
    printf("message: %s\n", msg);
    TEST_CHILD_CHECK(s == KILN_ERR_DEVICE_FAULT, "status %s", kiln_status_string(s));
    TEST_CHILD_CHECK(test_contains(msg, c->name), "no kernel name: %s", msg);
    TEST_CHILD_CHECK(test_contains(msg, "block (1,0,0), thread (3,0,0)"), "no block and thread: %s", msg);
    TEST_CHILD_CHECK(test_contains(msg, c->words), "no '%s': %s", c->words, msg);
    /* Nothing else changed: the other arrays (read in place: the context is
     * dead) and the heap buffers. */
    for (int i = 0; i < NEIGHBOURS; i++) {
        const int *v = kiln_array_data(nb[i]);
        for (int64_t j = 0; j < nb_n[i]; j++)
            TEST_CHILD_CHECK(v[j] == 1000 + i, "array %d changed at %lld: %d", i, (long long)j, v[j]);
    }
    for (int i = 0; i < HEAP; i++)
        for (size_t j = 0; j < (size_t)64 << i; j++)
            TEST_CHILD_CHECK(heap[i][j] == 0x11 + i, "heap buffer %d changed at %zu", i, j);
    for (int i = 0; i < HEAP; i++) free(heap[i]);
    TEST_CHILD_CHECK(kiln_synchronize(ctx) == KILN_ERR_CONTEXT_DEAD, "%s", kiln_last_error());
    for (int i = 0; i < NEIGHBOURS; i++) kiln_array_release(nb[i]);
    kiln_array_release(victim);
    kiln_kernel_release(k);
    kiln_close(ctx);
    /* the heap still works, and so does a new context */
    void *more[64];
    for (int i = 0; i < 64; i++) more[i] = malloc((size_t)i * 97 + 1);
    for (int i = 0; i < 64; i++) free(more[i]);
    if (fresh_context_works() != 0) return 1;
    printf("alive\n");
    return 0;
}

static void run_case(void **state) {
    const overrun_case *c = *state;
    char *out = NULL;
    int rc = test_spawn_child(c->name, NULL, &out);
    if (rc != 0 || !test_contains(out, "alive"))
        fail_msg("%s: the child exited with %d%s:\n%s", c->name, rc, rc > 128 ? " (killed by a signal)" : "",
                 out);
    free(out);
}

/* Buffers of every size class and the large ones are distinct, writable to
 * their last byte, and keep their contents while others come and go. */
static void test_allocations_hold(void **state) {
    (void)state;
    kiln_context *ctx = NULL;
    TEST_OK(kiln_open(&ctx, "cpu"));
    enum { COUNT = 300 };
    void *p[COUNT];
    size_t bytes[COUNT];
    for (int i = 0; i < COUNT; i++) {
        bytes[i] = (size_t)1 << (i % 22); /* 1 byte .. 2 MiB */
        bytes[i] += (size_t)(i % 7) * 3;
        TEST_OK(kiln_host_alloc(ctx, bytes[i], &p[i]));
        assert_true(((uintptr_t)p[i] & 63) == 0);
        memset(p[i], i & 0xff, bytes[i]);
        if (i % 3 == 2) { /* some go early, and their slots come back */
            kiln_host_free(ctx, p[i - 1]);
            TEST_OK(kiln_host_alloc(ctx, bytes[i - 1], &p[i - 1]));
            memset(p[i - 1], (i - 1) & 0xff, bytes[i - 1]);
        }
    }
    for (int i = 0; i < COUNT; i++) {
        const unsigned char *b = p[i];
        for (size_t j = 0; j < bytes[i]; j++)
            if (b[j] != (i & 0xff)) fail_msg("buffer %d (%zu bytes) changed at %zu", i, bytes[i], j);
    }
    for (int i = 0; i < COUNT; i++) kiln_host_free(ctx, p[i]);
    kiln_close(ctx);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        for (int i = 0; i < NCASES; i++)
            if (strcmp(cases[i].name, argv[2]) == 0) return run_child(&cases[i]);
        printf("no case %s\n", argv[2]);
        return 2;
    }
    struct CMUnitTest tests[NCASES + 1];
    for (int i = 0; i < NCASES; i++) {
        struct CMUnitTest t = {cases[i].name, run_case, NULL, NULL, (void *)&cases[i]};
        tests[i] = t;
    }
    struct CMUnitTest hold = cmocka_unit_test(test_allocations_hold);
    tests[NCASES] = hold;
    return _cmocka_run_group_tests("test_cpu_overrun", tests, NCASES + 1, NULL, NULL);
}
