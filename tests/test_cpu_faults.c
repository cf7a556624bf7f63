/* test_cpu_faults.c: a kernel that faults ends its launch with
 * KILN_ERR_DEVICE_FAULT, naming kernel, block, thread and fault, marks the
 * context dead, and the process lives on to open a new context (issue 13,
 * items 1-2). Each fault runs in a child process (this executable run with
 * --child NAME, spawned, never forked): before the fix each one killed the
 * process, and one that is not contained must not take the runner with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

typedef struct scenario {
    const char *name;
    const char *source;
    const char *kernel;
    unsigned grid, block;
    int null_array;    /* pass NULL as the kernel's pointer */
    int bad_value;     /* x[bad_value] = 1 before the launch (asserts) */
    int cpu_only;      /* the GPU does not fault on it (integer division) */
    const char *kind;  /* the fault's words in the CPU message */
    const char *where; /* the block and thread the message must name (CPU) */
    int expect_ok;     /* runs correctly: x[t] = 39999 - 6t (big_locals) */
    int checked;       /* run with KILN_CPU_CHECKED=1 */
    int fission;       /* a barrier kernel left on its own path: loop fission on the CPU */
} scenario;

static const scenario scenarios[] = {
    {"far_write",
     "__global__ void far_write(int *x, int n) {\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    if (i == 77) x[(size_t)1 << 42] = 1; /* 16 TiB past the array */\n"
     "}\n",
     "far_write", 4, 32, 0, 0, 0, "invalid memory access", "block (2,0,0), thread (13,0,0)", 0, 0, 0},
    {"null_write",
     "__global__ void null_write(int *x, int n) {\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    if (i == 5) x[i] = 1;\n"
     "}\n",
     "null_write", 2, 16, 1, 0, 0, "NULL pointer", "block (0,0,0), thread (5,0,0)", 0, 0, 0},
    {"recursion",
     "__device__ int deeper(volatile int *pad, int n) {\n"
     "    volatile int local[64];\n"
     "    local[n & 63] = n;\n"
     "    return deeper(local, n + 1) + local[0] + pad[0];\n"
     "}\n"
     "__global__ void recursion(int *x, int n) {\n"
     "    if (blockIdx.x == 1 && threadIdx.x == 3) x[0] = deeper(x, 1);\n"
     "}\n",
     "recursion", 2, 8, 0, 0, 0, "stack overflow", "block (1,0,0), thread (3,0,0)", 0, 0, 0},
    {"fiber_recursion",
     "__device__ int deeper(volatile int *pad, int n) {\n"
     "    volatile int local[64];\n"
     "    local[n & 63] = n;\n"
     "    return deeper(local, n + 1) + local[0] + pad[0];\n"
     "}\n"
     "__global__ void fiber_recursion(int *x, int n) {\n"
     "    __syncthreads();\n"
     "    if (threadIdx.x == 6) x[0] = deeper(x, 1);\n"
     "    __syncthreads();\n"
     "}\n",
     "fiber_recursion", 1, 8, 0, 0, 0, "fiber stack", "block (0,0,0), thread (6,0,0)", 0, 0, 0},
    {"divide_by_zero",
     "__global__ void divide_by_zero(int *x, int n) {\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    if (i < n) x[i] = 100 / (i - 9);\n"
     "}\n",
     "divide_by_zero", 2, 8, 0, 0, 1, "integer division", "block (1,0,0), thread (1,0,0)", 0, 0, 0},
    {"int_min_by_minus_one",
     "__global__ void int_min_by_minus_one(int *x, int n) {\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    volatile int d = i == 3 ? -1 : 1;\n"
     "    if (i < n) x[i] = (-2147483647 - 1) / d;\n"
     "}\n",
     "int_min_by_minus_one", 1, 8, 0, 0, 1, "integer division", "block (0,0,0), thread (3,0,0)", 0, 0, 0},
    {"glibc_assert",
     "#include <assert.h>\n"
     "__global__ void glibc_assert(int *x, int n) {\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    if (i < n) assert(x[i] == 0);\n"
     "}\n",
     "glibc_assert", 4, 16, 0, 37, 1, "assertion failed: x[i] == 0", "block (2,0,0), thread (5,0,0)", 0, 0,
     0},
    {"prelude_assert",
     "__global__ void prelude_assert(int *x, int n) {\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    __syncthreads();\n"
     "    if (i < n) assert(x[i] == 0);\n"
     "}\n",
     "prelude_assert", 2, 32, 0, 40, 1, "assertion failed: x[i] == 0", "block (1,0,0), thread (8,0,0)", 0, 0,
     0},
    /* Loop fission: the thread loops keep no thread index in
     * memory, so the faulting blocks run again through the kernel's probe
     * twin, which names the thread as the fiber path does. */
    {"fission_far_write",
     "__global__ void fission_far_write(int *x, int n) {\n"
     "    __shared__ int s[32];\n"
     "    int t = threadIdx.x;\n"
     "    s[t] = x[blockIdx.x * blockDim.x + t] + t;\n"
     "    __syncthreads();\n"
     "    int v = s[31 - t];\n"
     "    if (blockIdx.x == 2 && v == 18) x[(size_t)1 << 42] = 1; /* thread 31 - 18 */\n"
     "    __syncthreads();\n"
     "}\n",
     "fission_far_write", 4, 32, 0, 0, 0, "invalid memory access", "block (2,0,0), thread (13,0,0)", 0, 0, 1},
    /* The message quotes the assertion as written, not token by token, at
     * its line in the user's source. */
    {"fission_assert",
     "__global__ void fission_assert(int *x, int n) {\n"
     "    __shared__ int s[32];\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    s[threadIdx.x] = x[i];\n"
     "    __syncthreads();\n"
     "    for (int k = 0; k < 2; k++) {\n"
     "        assert(s[threadIdx.x]==0 && x[i] >= -k);\n"
     "        __syncthreads();\n"
     "    }\n"
     "}\n",
     "fission_assert", 2, 32, 0, 40, 1, "kernel.cu:7: assertion failed: s[threadIdx.x]==0 && x[i] >= -k",
     "block (1,0,0), thread (8,0,0)", 0, 0, 1},
    {"abort_call",
     "__global__ void abort_call(int *x, int n) {\n"
     "    if (blockIdx.x == 0 && threadIdx.x == 2) abort();\n"
     "}\n",
     "abort_call", 1, 4, 0, 0, 1, "SIGABRT", "block (0,0,0), thread (2,0,0)", 0, 0, 0},
    /* 160 KB of locals per thread in a barrier kernel: the fiber stacks are
     * sized from the compiled frame, so this runs (it overflowed the 64 KiB
     * default stack into the next fiber's before). */
    {"big_locals",
     "__global__ void big_locals(int *x, int n) {\n"
     "    volatile float local[40000];\n"
     "    for (int i = 0; i < 40000; i++) local[i] = (float)(i + threadIdx.x);\n"
     "    __syncthreads();\n"
     "    x[threadIdx.x] = (int)local[39999 - threadIdx.x * 7];\n"
     "}\n",
     "big_locals", 1, 64, 0, 0, 1, "", "", 1, 0, 0},
    /* checked mode (KILN_CPU_CHECKED=1): accesses just past an array, or
     * 64 KiB past it (which lands in other memory unnoticed otherwise) */
    {"checked_far_write",
     "__global__ void checked_far_write(int *x, int n) {\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    if (i == 37) x[n + 16384] = 1;\n"
     "}\n",
     "checked_far_write", 2, 32, 0, 0, 1,
     "out-of-bounds write of argument 0 (256 bytes: 64 elements of 4 bytes) at element index 16448",
     "block (1,0,0), thread (5,0,0)", 0, 1, 0},
    {"checked_one_past",
     "__global__ void checked_one_past(int *x, int n) {\n"
     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
     "    if (i < n) x[i] = x[i + 1] + 1;\n"
     "}\n",
     "checked_one_past", 1, 16, 0, 0, 1,
     "out-of-bounds read of argument 0 (64 bytes: 16 elements of 4 bytes) at element index 16, 0 bytes past "
     "its end",
     "block (0,0,0), thread (15,0,0)", 0, 1, 0},
};
#define NSCENARIOS (int)(sizeof scenarios / sizeof scenarios[0])

static const char *add_src = "__global__ void add_one(int *x, int n) {\n"
                             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    if (i < n) x[i] += 1;\n"
                             "}\n";

/* A new context still works: a kernel runs and gives the right numbers. */
static int fresh_context_works(void) {
    kiln_context *ctx = NULL;
    TEST_CHILD_CHECK(kiln_open(&ctx, test_target()) == KILN_OK, "%s", kiln_last_error());
    kiln_kernel *k = NULL;
    TEST_CHILD_CHECK(kiln_kernel_from_source(ctx, add_src, "add_one", NULL, &k) == KILN_OK, "%s",
                     kiln_last_error());
    enum { N = 300 };
    int host[N];
    for (int i = 0; i < N; i++) host[i] = 3 * i;
    int64_t n = N;
    kiln_array *a = NULL;
    TEST_CHILD_CHECK(kiln_array_from_host(ctx, KILN_INT32, 1, &n, host, sizeof host, &a) == KILN_OK, "%s",
                     kiln_last_error());
    TEST_CHILD_CHECK(
        kiln_launch(k, KILN_DIM(3), KILN_DIM(128), 0, NULL, KILN_ARGS(kiln_arr(a), kiln_i32(N))) == KILN_OK,
        "%s", kiln_last_error());
    TEST_CHILD_CHECK(kiln_array_to_host(a, host, sizeof host) == KILN_OK, "%s", kiln_last_error());
    for (int i = 0; i < N; i++) TEST_CHILD_CHECK(host[i] == 3 * i + 1, "host[%d] = %d", i, host[i]);
    kiln_array_release(a);
    kiln_kernel_release(k);
    kiln_close(ctx);
    return 0;
}

static int run_child(const scenario *sc) {
    int cpu = strcmp(test_target(), "cpu") == 0;
    if (!cpu && sc->cpu_only) {
        printf("skipped on %s\n", test_target());
        return 0;
    }
    kiln_context *ctx = NULL;
    TEST_CHILD_CHECK(kiln_open(&ctx, test_target()) == KILN_OK, "%s", kiln_last_error());
    kiln_kernel *k = NULL;
    /* Barrier kernels here test the fiber path (its guard pages and stack
     * sizing): loop fission would run them on the worker's own stack. */
    const char *options = strstr(sc->source, "__syncthreads") && !sc->fission ? "-DKILN_CPU_FIBERS" : NULL;
    if (cpu && sc->fission) { /* the scenario is about the fission path: it must take it */
        char *log = NULL, path[160];
        TEST_CHILD_CHECK(kiln_compile_only("cpu", NULL, sc->source, "fault.cu", NULL, &log) == KILN_OK, "%s",
                         kiln_last_error());
        snprintf(path, sizeof path, "CPU path of %s: fission", sc->kernel);
        TEST_CHILD_CHECK(test_contains(log, path), "not on the fission path: %s", log);
        kiln_free(log);
    }
    TEST_CHILD_CHECK(kiln_kernel_from_source(ctx, sc->source, sc->kernel, options, &k) == KILN_OK, "%s",
                     kiln_last_error());
    int n = (int)(sc->grid * sc->block);
    int64_t shape = n;
    int *host = calloc((size_t)n, sizeof *host);
    if (sc->bad_value) host[sc->bad_value] = 1;
    kiln_array *a = NULL;
    TEST_CHILD_CHECK(kiln_array_from_host(ctx, KILN_INT32, 1, &shape, host, (size_t)n * sizeof *host, &a) ==
                         KILN_OK,
                     "%s", kiln_last_error());
    kiln_value arg = sc->null_array ? kiln_ptr(NULL, KILN_INT32) : kiln_arr(a);
    kiln_status s =
        kiln_launch(k, KILN_DIM(sc->grid), KILN_DIM(sc->block), 0, NULL, KILN_ARGS(arg, kiln_i32(n)));
    if (sc->expect_ok) {
        TEST_CHILD_CHECK(s == KILN_OK, "%s", kiln_last_error());
        TEST_CHILD_CHECK(kiln_array_to_host(a, host, (size_t)n * sizeof *host) == KILN_OK, "%s",
                         kiln_last_error());
        for (int t = 0; t < n; t++) TEST_CHILD_CHECK(host[t] == 39999 - 6 * t, "x[%d] = %d", t, host[t]);
        kiln_array_release(a);
        kiln_kernel_release(k);
        kiln_close(ctx);
        free(host);
        printf("alive\n");
        return 0;
    }
    if (s == KILN_OK) s = kiln_synchronize(ctx); /* asynchronous on the GPU */
    const char *msg = kiln_last_error();
    printf("message: %s\n", msg);
    TEST_CHILD_CHECK(s == KILN_ERR_DEVICE_FAULT, "status %s", kiln_status_string(s));
    /* on a GPU the fault surfaces as the CUDA error (at the launch or the
     * next synchronising call) */
    TEST_CHILD_CHECK(cpu || test_contains(msg, "CUDA_ERROR"), "%s", msg);
    if (cpu) {
        TEST_CHILD_CHECK(test_contains(msg, sc->kernel), "no kernel name: %s", msg);
        TEST_CHILD_CHECK(test_contains(msg, sc->kind), "no '%s': %s", sc->kind, msg);
        TEST_CHILD_CHECK(test_contains(msg, sc->where), "no '%s': %s", sc->where, msg);
        TEST_CHILD_CHECK(test_contains(msg, "dead"), "%s", msg);
    }
    /* The context is dead; later calls say so, and releasing still works. */
    TEST_CHILD_CHECK(kiln_synchronize(ctx) == KILN_ERR_CONTEXT_DEAD, "%s", kiln_last_error());
    s = kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL, KILN_ARGS(kiln_arr(a), kiln_i32(n)));
    TEST_CHILD_CHECK(s == KILN_ERR_CONTEXT_DEAD, "%s", kiln_status_string(s));
    kiln_array_release(a);
    kiln_kernel_release(k);
    kiln_close(ctx);
    free(host);
    /* On CUDA an illegal address is a sticky error of the whole process
     * ("to continue using CUDA, the process must be terminated and
     * relaunched", the CUDA runtime's documentation of the error): only the
     * CPU backend can offer a fresh context in the same process. */
    if (cpu && fresh_context_works() != 0) return 1;
    printf("alive\n");
    return 0;
}

static void run_scenario(void **state) {
    const scenario *sc = *state;
    char *checked[] = {"KILN_CPU_CHECKED=1", NULL};
    char *out = NULL;
    int rc = test_spawn_child(sc->name, sc->checked ? checked : NULL, &out);
    if (rc != 0 || (!test_contains(out, "alive") && !test_contains(out, "skipped")))
        fail_msg("%s: the child exited with %d%s:\n%s", sc->name, rc, rc > 128 ? " (killed by a signal)" : "",
                 out);
    free(out);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        for (int i = 0; i < NSCENARIOS; i++)
            if (strcmp(scenarios[i].name, argv[2]) == 0) return run_child(&scenarios[i]);
        printf("no scenario %s\n", argv[2]);
        return 2;
    }
    struct CMUnitTest tests[NSCENARIOS];
    for (int i = 0; i < NSCENARIOS; i++) {
        struct CMUnitTest t = {scenarios[i].name, run_scenario, NULL, NULL, (void *)&scenarios[i]};
        tests[i] = t;
    }
    return _cmocka_run_group_tests("test_cpu_faults", tests, NSCENARIOS, NULL, NULL);
}
