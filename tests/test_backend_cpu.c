/* test_backend_cpu.c: the CPU backend driven through its operations table,
 * below the core: compile, load, launch, and check against host loops.
 *
 * Compiling costs ~0.5 s a module, so the kernels share two modules: one
 * without barriers (the fast path) and one with them (fibers). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backends.h"
#include "core/error.h"

typedef struct fixture {
    const kiln_backend_ops *ops;
    kiln_backend_state *st;
    kiln_backend_module *fast;    /* kernels without barriers */
    kiln_backend_module *barrier; /* kernels with barriers */
} fixture;

static const char *fast_source =
    "__global__ void saxpy(float a, const float *__restrict__ x, float *y, size_t n) {\n"
    "    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "// 2-D grid, 2-D blocks: out[y][x] = 1000 * y + x, plus which block and thread wrote it.\n"
    "__global__ void grid2d(int *out, int *who, int width, int height) {\n"
    "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "    if (x < width && y < height) {\n"
    "        out[y * width + x] = 1000 * y + x;\n"
    "        who[y * width + x] = (blockIdx.y * gridDim.x + blockIdx.x) * 1024 + threadIdx.y * blockDim.x + "
    "threadIdx.x;\n"
    "    }\n"
    "}\n"
    "__global__ void histogram(const unsigned char *data, long long n, unsigned int *bins) {\n"
    "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x)\n"
    "        atomicAdd(&bins[data[i] % 16], 1u);\n"
    "}\n"
    "__global__ void mandel(kiln_complex64 lo, float step, int width, int height, int iters,\n"
    "                       unsigned char *image) {\n"
    "    for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < height; y += blockDim.y * gridDim.y)\n"
    "        for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < width; x += blockDim.x * gridDim.x) {\n"
    "            kiln_complex64 c = lo + kiln_complex64(x * step, y * step), z = 0;\n"
    "            int i = 0;\n"
    "            while (i < iters && norm(z) < 4.0f) { z = z * z + c; i++; }\n"
    "            image[y * width + x] = (unsigned char)i;\n"
    "        }\n"
    "}\n"
    "__global__ void signature(float a, const float *x, double *y, size_t n, kiln_complex64 *z) {\n"
    "    (void)a; (void)x; (void)y; (void)n; (void)z;\n"
    "}\n"
    "__global__ void checks(int *out) {\n"
    "    assert(threadIdx.x != 3);\n"
    "    out[threadIdx.x] = min(3, (int)threadIdx.x) + max(0u, 1u) + __float2int_rn(rsqrtf(4.0f) * 4);\n"
    "}\n";

static const char *barrier_source =
    "#define TILE 32\n"
    "__global__ void matmul(const float *A, const float *B, float *C, int n) {\n"
    "    __shared__ float As[TILE][TILE];\n"
    "    __shared__ float Bs[TILE][TILE];\n"
    "    int tx = threadIdx.x, ty = threadIdx.y;\n"
    "    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;\n"
    "    float acc = 0;\n"
    "    for (int t = 0; t < n; t += TILE) {\n"
    "        As[ty][tx] = (row < n && t + tx < n) ? A[row * n + t + tx] : 0.0f;\n"
    "        Bs[ty][tx] = (col < n && t + ty < n) ? B[(t + ty) * n + col] : 0.0f;\n"
    "        __syncthreads();\n"
    "        for (int k = 0; k < TILE; k++) acc += As[ty][k] * Bs[k][tx];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (row < n && col < n) C[row * n + col] = acc;\n"
    "}\n"
    "// Tree reduction in dynamic shared memory; one partial sum per block.\n"
    "__global__ void block_sum(const double *in, long long n, double *partial) {\n"
    "    extern __shared__ __align__(16) double\n"
    "        sdata[];\n"
    "    unsigned t = threadIdx.x;\n"
    "    long long i = blockIdx.x * (long long)blockDim.x + t;\n"
    "    sdata[t] = i < n ? in[i] : 0.0;\n"
    "    __syncthreads();\n"
    "    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "        if (t < s) sdata[t] += sdata[t + s];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) partial[blockIdx.x] = sdata[0];\n"
    "}\n"
    "// Warp shuffles and barrier predicates.\n"
    "__global__ void warp_ops(int *out) {\n"
    "    int v = threadIdx.x;\n"
    "    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);\n"
    "    int count = __syncthreads_count(threadIdx.x % 3 == 0);\n"
    "    int all = __syncthreads_and(threadIdx.x < 1000), any = __syncthreads_or(threadIdx.x == 5);\n"
    "    if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = v;\n"
    "    if (threadIdx.x == 0) { out[8] = count; out[9] = all; out[10] = any; }\n"
    "}\n";

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void) { /* xorshift64*: fresh, cheap, deterministic per run */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static kiln_status compile_module(fixture *f, const char *source, const char *name,
                                  const char *const *kernels, int kernel_count, kiln_backend_module **out,
                                  char **log) {
    kiln_compile_request req = {0};
    req.source = source;
    req.name = name;
    req.kernel_names = kernels;
    req.kernel_count = kernel_count;
    kiln_blob blob = {0};
    *log = NULL;
    kiln_status s = f->ops->compile(f->st, &req, &blob, log);
    if (s == KILN_OK) s = f->ops->module_load(f->st, &blob, out);
    free(blob.data);
    return s;
}

static int group_setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->ops = kiln_backend_cpu();
    if (f->ops->open(0, &f->st) != KILN_OK) return -1;
    static const char *const fast_kernels[] = {"saxpy",  "grid2d",    "histogram",
                                               "mandel", "signature", "checks"};
    static const char *const barrier_kernels[] = {"matmul", "block_sum", "warp_ops"};
    char *log = NULL;
    kiln_status s = compile_module(f, fast_source, "fast.cu", fast_kernels, 6, &f->fast, &log);
    if (s != KILN_OK) fprintf(stderr, "fast.cu: %s\n%s\n", kiln_last_error(), log ? log : "");
    free(log);
    if (s == KILN_OK)
        s = compile_module(f, barrier_source, "barrier.cu", barrier_kernels, 3, &f->barrier, &log);
    if (s != KILN_OK) fprintf(stderr, "barrier.cu: %s\n%s\n", kiln_last_error(), log ? log : "");
    free(log);
    *state = f;
    return s == KILN_OK ? 0 : -1;
}

static int group_teardown(void **state) {
    fixture *f = *state;
    if (f->fast) f->ops->module_unload(f->st, f->fast);
    if (f->barrier) f->ops->module_unload(f->st, f->barrier);
    f->ops->close(f->st);
    free(f);
    return 0;
}

static kiln_backend_function *get(fixture *f, kiln_backend_module *m, const char *name) {
    kiln_backend_function *fn = NULL;
    kiln_param_info params[16];
    int count = 0;
    assert_int_equal(f->ops->function_get(f->st, m, name, &fn, params, 16, &count), KILN_OK);
    return fn;
}

static kiln_status launch(fixture *f, kiln_backend_function *fn, uint32_t gx, uint32_t gy, uint32_t bx,
                          uint32_t by, size_t shared, void **args) {
    kiln_launch_config cfg = {{gx, gy, 1}, {bx, by, 1}, shared};
    return f->ops->launch(f->st, fn, &cfg, NULL, args);
}

static void test_saxpy(void **state) {
    fixture *f = *state;
    size_t n = 100003;
    float *x, *y, *expect = malloc(n * sizeof *expect), a = 2.5f;
    assert_int_equal(f->ops->mem_alloc(f->st, n * sizeof *x, NULL, (void **)&x), KILN_OK);
    assert_int_equal(f->ops->mem_alloc(f->st, n * sizeof *y, NULL, (void **)&y), KILN_OK);
    assert_int_equal((uintptr_t)x % 64, 0);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)uniform();
        y[i] = (float)uniform();
        expect[i] = a * x[i] + y[i];
    }
    void *args[] = {&a, &x, &y, &n};
    assert_int_equal(launch(f, get(f, f->fast, "saxpy"), (uint32_t)((n + 255) / 256), 1, 256, 1, 0, args),
                     KILN_OK);
    for (size_t i = 0; i < n; i++) assert_float_equal(y[i], expect[i], 1e-6 * (1 + fabsf(expect[i])));
    f->ops->mem_free(f->st, x, NULL);
    f->ops->mem_free(f->st, y, NULL);
    free(expect);
}

static void test_grid_2d(void **state) {
    fixture *f = *state;
    int width = 100, height = 37;
    int *out = calloc((size_t)(width * height), sizeof *out),
        *who = calloc((size_t)(width * height), sizeof *who);
    void *args[] = {&out, &who, &width, &height};
    /* 16x8 blocks: 7 x 5 of them, the last row and column partly outside. */
    assert_int_equal(launch(f, get(f, f->fast, "grid2d"), 7, 5, 16, 8, 0, args), KILN_OK);
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            assert_int_equal(out[y * width + x], 1000 * y + x);
            int block = (y / 8) * 7 + x / 16, thread = (y % 8) * 16 + x % 16;
            assert_int_equal(who[y * width + x], block * 1024 + thread);
        }
    free(out);
    free(who);
}

static void test_histogram_atomics(void **state) {
    fixture *f = *state;
    long long n = 1 << 20;
    unsigned char *data = malloc((size_t)n);
    unsigned bins[16] = {0}, expect[16] = {0};
    for (long long i = 0; i < n; i++) {
        data[i] = (unsigned char)(uniform() * 256);
        expect[data[i] % 16]++;
    }
    unsigned *bins_ptr = bins;
    void *args[] = {&data, &n, &bins_ptr};
    /* Many blocks on several workers hit the same 16 counters. */
    assert_int_equal(launch(f, get(f, f->fast, "histogram"), 64, 1, 128, 1, 0, args), KILN_OK);
    for (int b = 0; b < 16; b++) assert_int_equal(bins[b], expect[b]);
    free(data);
}

static void test_complex_mandelbrot(void **state) {
    fixture *f = *state;
    int width = 300, height = 200, iters = 50;
    float lo[2] = {-2.0f, -1.0f}, step = 3.0f / (float)width;
    unsigned char *image = calloc((size_t)(width * height), 1);
    void *args[] = {lo, &step, &width, &height, &iters, &image};
    assert_int_equal(launch(f, get(f, f->fast, "mandel"), 4, 4, 32, 8, 0, args), KILN_OK);
    int mismatches = 0;
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            float cr = lo[0] + (float)x * step, ci = lo[1] + (float)y * step, zr = 0, zi = 0;
            int i = 0;
            while (i < iters && zr * zr + zi * zi < 4.0f) {
                float t = zr * zr - zi * zi + cr;
                zi = zr * zi + zi * zr + ci;
                zr = t;
                i++;
            }
            /* FMA contraction may flip a pixel on the set's boundary. */
            if (image[y * width + x] != i) mismatches++;
        }
    assert_true(mismatches < width * height / 1000);
    free(image);
}

static void test_param_info(void **state) {
    fixture *f = *state;
    kiln_backend_function *fn = NULL;
    kiln_param_info p[8];
    int count = 0;
    assert_int_equal(f->ops->function_get(f->st, f->fast, "signature", &fn, p, 8, &count), KILN_OK);
    assert_int_equal(count, 5);
    assert_int_equal(p[0].cls, KILN_PARAM_FLOAT);
    assert_int_equal(p[0].size, 4);
    assert_int_equal(p[1].cls, KILN_PARAM_POINTER);
    assert_int_equal(p[1].size, sizeof(void *));
    assert_int_equal(p[1].pointee_cls, KILN_PARAM_FLOAT);
    assert_int_equal(p[1].pointee_size, 4);
    assert_int_equal(p[2].pointee_cls, KILN_PARAM_FLOAT);
    assert_int_equal(p[2].pointee_size, 8);
    assert_int_equal(p[3].cls, KILN_PARAM_UNSIGNED);
    assert_int_equal(p[3].size, 8);
    assert_int_equal(p[4].cls, KILN_PARAM_POINTER);
    assert_int_equal(p[4].pointee_cls, KILN_PARAM_COMPLEX);
    assert_int_equal(p[4].pointee_size, 8);
    /* Unknown names say which symbols were looked for. */
    assert_int_equal(f->ops->function_get(f->st, f->fast, "nope", &fn, p, 8, &count), KILN_ERR_NOT_FOUND);
    assert_non_null(strstr(kiln_last_error(), "nope"));
}

static void test_builtins_and_assert(void **state) {
    fixture *f = *state;
    int out[8] = {0}, *ptr = out;
    void *args[] = {&ptr};
    /* Thread 3 fails its assert: reported as a device fault naming the
     * thread, not an abort; as on CUDA, the launch ends there (the threads
     * before it in the block's loop have run). */
    assert_int_equal(launch(f, get(f, f->fast, "checks"), 1, 1, 8, 1, 0, args), KILN_ERR_DEVICE_FAULT);
    assert_non_null(strstr(kiln_last_error(), "threadIdx.x != 3"));
    assert_non_null(strstr(kiln_last_error(), "thread (3,0,0)"));
    for (int i = 0; i < 3; i++) assert_int_equal(out[i], i + 1 + 2);
}

static void test_tiled_matmul(void **state) {
    fixture *f = *state;
    int n = 75; /* not a multiple of the 32x32 tile */
    float *A = malloc(sizeof(float) * (size_t)(n * n)), *B = malloc(sizeof(float) * (size_t)(n * n));
    float *C = calloc((size_t)(n * n), sizeof(float));
    for (int i = 0; i < n * n; i++) {
        A[i] = (float)(uniform() * 2 - 1);
        B[i] = (float)(uniform() * 2 - 1);
    }
    void *args[] = {&A, &B, &C, &n};
    uint32_t g = (uint32_t)(n + 31) / 32;
    assert_int_equal(launch(f, get(f, f->barrier, "matmul"), g, g, 32, 32, 0, args), KILN_OK);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            double ref = 0;
            for (int k = 0; k < n; k++) ref += (double)A[r * n + k] * B[k * n + c];
            assert_float_equal(C[r * n + c], ref, 1e-4 * n);
        }
    free(A);
    free(B);
    free(C);
}

static void test_dynamic_shared_reduction(void **state) {
    fixture *f = *state;
    long long n = 100000;
    unsigned threads = 256, blocks = (unsigned)((n + threads - 1) / threads);
    double *in = malloc(sizeof(double) * (size_t)n), *partial = calloc(blocks, sizeof(double)), expect = 0;
    for (long long i = 0; i < n; i++) {
        in[i] = uniform();
        expect += in[i];
    }
    void *args[] = {&in, &n, &partial};
    assert_int_equal(
        launch(f, get(f, f->barrier, "block_sum"), blocks, 1, threads, 1, threads * sizeof(double), args),
        KILN_OK);
    double sum = 0;
    for (unsigned b = 0; b < blocks; b++) sum += partial[b];
    assert_float_equal(sum, expect, 1e-9 * n);
    free(in);
    free(partial);
}

static void test_warp_ops(void **state) {
    fixture *f = *state;
    int out[11] = {0}, *ptr = out;
    void *args[] = {&ptr};
    assert_int_equal(launch(f, get(f, f->barrier, "warp_ops"), 3, 1, 256, 1, 0, args), KILN_OK);
    for (int w = 0; w < 8; w++) { /* lane 0 of warp w sums its 32 thread ids */
        int base = 32 * w;
        assert_int_equal(out[w], 32 * base + 31 * 32 / 2);
    }
    assert_int_equal(out[8], (255 / 3) + 1);
    assert_int_equal(out[9], 1);
    assert_int_equal(out[10], 1);
}

static void test_compile_error_line(void **state) {
    fixture *f = *state;
    const char *bad = "__global__ void broken(float *x) {\n"
                      "    x[0] = 1.0f;\n"
                      "    x[1] = undeclared_name;\n"
                      "}\n";
    const char *const names[] = {"broken"};
    kiln_backend_module *m = NULL;
    char *log = NULL;
    assert_int_equal(compile_module(f, bad, "broken.cu", names, 1, &m, &log), KILN_ERR_COMPILE);
    assert_non_null(log);
    assert_non_null(strstr(log, "broken.cu:3:"));
    assert_non_null(strstr(log, "undeclared_name"));
    free(log);
}

static void test_missing_compiler(void **state) {
    (void)state;
    const char *old = getenv("KILN_CXX");
    char *saved = old ? strdup(old) : NULL;
    setenv("KILN_CXX", "/nonexistent/c++", 1);
    const kiln_backend_ops *ops = kiln_backend_cpu();
    kiln_backend_state *st = NULL;
    assert_int_equal(ops->open(0, &st), KILN_OK); /* memory still works without a compiler */
    char id[512];
    assert_int_equal(ops->compiler_id(st, NULL, id, sizeof id), KILN_OK);
    const char *const names[] = {"k"};
    kiln_compile_request req = {0};
    req.source = "__global__ void k() {}\n";
    req.name = "k.cu";
    req.kernel_names = names;
    req.kernel_count = 1;
    kiln_blob blob = {0};
    char *log = NULL;
    assert_int_equal(ops->compile(st, &req, &blob, &log), KILN_ERR_COMPILER_MISSING);
    assert_non_null(strstr(kiln_last_error(), "/nonexistent/c++"));
    assert_non_null(strstr(kiln_last_error(), "KILN_CXX"));
    free(log);
    ops->close(st);
    if (saved)
        setenv("KILN_CXX", saved, 1);
    else
        unsetenv("KILN_CXX");
    free(saved);
}

static void test_memory_events_info(void **state) {
    fixture *f = *state;
    kiln_device_info info;
    assert_int_equal(f->ops->device_info(f->st, &info), KILN_OK);
    assert_true(info.multiprocessors >= 1);
    assert_int_equal(info.warp_size, 32);
    assert_int_equal(info.max_threads_per_block, 1024);
    assert_true(info.total_memory_bytes > 0);
    char *a, *b;
    assert_int_equal(f->ops->mem_alloc(f->st, 3 << 20, NULL, (void **)&a), KILN_OK);
    assert_int_equal((uintptr_t)a % 4096, 0);
    assert_int_equal(f->ops->host_alloc(f->st, 3 << 20, (void **)&b), KILN_OK);
    assert_int_equal(f->ops->memset(f->st, a, 7, 3 << 20, NULL), KILN_OK);
    assert_int_equal(f->ops->copy(f->st, b, a, 3 << 20, KILN_COPY_DEVICE_TO_HOST, NULL, 0), KILN_OK);
    assert_int_equal(b[(3 << 20) - 1], 7);
    kiln_backend_stream *s;
    kiln_backend_event *e0, *e1;
    assert_int_equal(f->ops->stream_create(f->st, &s), KILN_OK);
    assert_int_equal(f->ops->event_create(f->st, &e0), KILN_OK);
    assert_int_equal(f->ops->event_create(f->st, &e1), KILN_OK);
    float ms = -1;
    assert_int_equal(f->ops->event_elapsed_ms(f->st, e0, e1, &ms), KILN_ERR_INVALID_ARGUMENT);
    assert_int_equal(f->ops->event_record(f->st, e0, s), KILN_OK);
    assert_int_equal(f->ops->event_record(f->st, e1, s), KILN_OK);
    assert_int_equal(f->ops->event_elapsed_ms(f->st, e0, e1, &ms), KILN_OK);
    assert_true(ms >= 0);
    f->ops->event_destroy(f->st, e0);
    f->ops->event_destroy(f->st, e1);
    f->ops->stream_destroy(f->st, s);
    f->ops->mem_free(f->st, a, NULL);
    f->ops->host_free(f->st, b);
    char id[512];
    assert_int_equal(f->ops->compiler_id(f->st, NULL, id, sizeof id), KILN_OK);
    assert_non_null(strstr(id, "cpu:"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_saxpy),
        cmocka_unit_test(test_grid_2d),
        cmocka_unit_test(test_histogram_atomics),
        cmocka_unit_test(test_complex_mandelbrot),
        cmocka_unit_test(test_param_info),
        cmocka_unit_test(test_builtins_and_assert),
        cmocka_unit_test(test_tiled_matmul),
        cmocka_unit_test(test_dynamic_shared_reduction),
        cmocka_unit_test(test_warp_ops),
        cmocka_unit_test(test_compile_error_line),
        cmocka_unit_test(test_missing_compiler),
        cmocka_unit_test(test_memory_events_info),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
