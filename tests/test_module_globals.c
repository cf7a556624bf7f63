/* test_module_globals.c: kiln_module_global, arrays over a module's
 * __constant__ and __device__ variables, written and read from the host
 * in stream order, on both backends: a filter in constant memory indexed
 * per thread (the separable convolution sample's c_Kernel), a struct, a
 * counter kernels update through its address, namespaced variables,
 * extents given by a macro, and the errors: an unknown name, a copy of the
 * wrong size, a write while a kernel of the module runs (CPU). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static const char *filter_src = "#define KERNEL_RADIUS 8\n"
                                "#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)\n"
                                "__constant__ float c_Kernel[KERNEL_LENGTH];\n"
                                "__constant__ float c_scale[17];\n"
                                "__global__ void convolve(float *out, const float *in, int n) {\n"
                                "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                "    if (i >= n) return;\n"
                                "    float sum = 0;\n"
                                "    for (int k = -KERNEL_RADIUS; k <= KERNEL_RADIUS; k++) {\n"
                                "        int j = i + k;\n"
                                "        if (j >= 0 && j < n) sum += in[j] * c_Kernel[KERNEL_RADIUS - k];\n"
                                "    }\n"
                                "    out[i] = sum * c_scale[i % 17];\n"
                                "}\n";

static void constant_filter(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, filter_src, "filter.cu", NULL, &m));
    kiln_array *filter = NULL, *scale = NULL;
    TEST_OK(kiln_module_global(m, "c_Kernel", &filter));
    TEST_OK(kiln_module_global(m, "c_scale", &scale));
    /* the macro extent is read from the compiled size, the type from the declaration */
    assert_int_equal(kiln_array_dtype(filter), KILN_FLOAT32);
    assert_int_equal(kiln_array_ndim(filter), 1);
    assert_int_equal(kiln_array_shape(filter)[0], 17);
    assert_int_equal(kiln_array_shape(scale)[0], 17);
    float taps[17], scales[17];
    for (int i = 0; i < 17; i++) {
        taps[i] = (float)(i + 1) / 16.0f;
        scales[i] = (float)(i % 5) + 0.5f;
    }
    TEST_OK(kiln_array_from_host_copy(filter, taps, sizeof taps));
    TEST_OK(kiln_array_from_host_copy(scale, scales, sizeof scales));
    enum { N = 1000 };
    float in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = (float)((i * 37) % 101) / 7.0f;
    kiln_array *x = NULL, *y = NULL;
    int64_t shape[1] = {N};
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, shape, in, sizeof in, &x));
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, shape, &y));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "convolve", &k));
    TEST_OK(kiln_launch(k, KILN_DIM((N + 127) / 128), KILN_DIM(128), 0, NULL,
                        KILN_ARGS(kiln_arr(y), kiln_arr(x), kiln_i32(N))));
    TEST_OK(kiln_array_to_host(y, out, sizeof out));
    for (int i = 0; i < N; i++) {
        double sum = 0;
        for (int d = -8; d <= 8; d++)
            if (i + d >= 0 && i + d < N) sum += (double)in[i + d] * taps[8 - d];
        double ref = sum * scales[i % 17];
        assert_true(fabs(out[i] - ref) <= 1e-4 * (1 + fabs(ref)));
    }
    /* read back what was written */
    float back[17];
    TEST_OK(kiln_array_to_host(filter, back, sizeof back));
    assert_memory_equal(back, taps, sizeof taps);
    /* a copy of the wrong size is refused, naming both sizes */
    TEST_FAILS_WITH(kiln_array_from_host_copy(filter, taps, 16 * sizeof(float)), KILN_ERR_SHAPE, "68");
    /* an array copied from the variable is an ordinary array */
    kiln_array *copy = NULL;
    TEST_OK(kiln_array_copy(filter, &copy));
    float again[17];
    TEST_OK(kiln_array_to_host(copy, again, sizeof again));
    assert_memory_equal(again, taps, sizeof taps);
    /* assigning from another device array writes the variable */
    for (int i = 0; i < 17; i++) taps[i] = 0;
    taps[8] = 1; /* identity filter */
    kiln_array *ident = NULL;
    int64_t fshape[1] = {17};
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, fshape, taps, sizeof taps, &ident));
    TEST_OK(kiln_array_assign(filter, ident));
    for (int i = 0; i < 17; i++) scales[i] = 1;
    TEST_OK(kiln_array_from_host_copy(scale, scales, sizeof scales));
    TEST_OK(kiln_launch(k, KILN_DIM((N + 127) / 128), KILN_DIM(128), 0, NULL,
                        KILN_ARGS(kiln_arr(y), kiln_arr(x), kiln_i32(N))));
    TEST_OK(kiln_array_to_host(y, out, sizeof out));
    assert_memory_equal(out, in, sizeof in);
    kiln_array_release(ident);
    kiln_array_release(copy);
    kiln_kernel_release(k);
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_array_release(scale);
    kiln_array_release(filter);
    kiln_module_release(m);
}

static const char *struct_src =
    "struct Params { float scale; int offset; double bias; };\n"
    "__constant__ Params c_params;\n"
    "__device__ unsigned int counter;\n"
    "__device__ float history[4][8];\n"
    "namespace cfg { __device__ double table[2][3]; __constant__ long long big = 7; }\n"
    "__device__ const float ratios[3] = {0.5f, 0.25f, 0.125f};\n"
    "namespace { __device__ int hidden = 3; }\n"
    "static __device__ short tiny[5];\n"
    "__device__ void bump(unsigned int *c) { atomicAdd(c, 1u); }\n"
    "__global__ void apply(float *out, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    bump(&counter);\n"
    "    out[i] = i * c_params.scale + c_params.offset + (float)c_params.bias + (float)cfg::table[1][2]\n"
    "           + hidden + tiny[i % 5] + (float)cfg::big;\n"
    "    if (i < 32) history[i / 8][i % 8] = out[i];\n"
    "}\n";

struct params {
    float scale;
    int offset;
    double bias;
};

static void structs_and_addresses(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, struct_src, "params.cu", NULL, &m));
    kiln_array *p = NULL, *counter = NULL, *history = NULL, *table = NULL, *big = NULL, *hidden = NULL,
               *tiny = NULL;
    TEST_OK(kiln_module_global(m, "c_params", &p));
    TEST_OK(kiln_module_global(m, "counter", &counter));
    TEST_OK(kiln_module_global(m, "history", &history));
    TEST_OK(kiln_module_global(m, "cfg::table", &table));
    TEST_OK(kiln_module_global(m, "big", &big)); /* the bare name, unique */
    TEST_OK(kiln_module_global(m, "hidden", &hidden));
    TEST_OK(kiln_module_global(m, "tiny", &tiny));
    /* a struct is its bytes */
    assert_int_equal(kiln_array_dtype(p), KILN_UINT8);
    assert_int_equal(kiln_array_shape(p)[0], sizeof(struct params));
    assert_int_equal(kiln_array_dtype(counter), KILN_UINT32);
    assert_int_equal(kiln_array_ndim(counter), 0);
    assert_int_equal(kiln_array_dtype(history), KILN_FLOAT32);
    assert_int_equal(kiln_array_ndim(history), 2);
    assert_int_equal(kiln_array_shape(history)[0], 4);
    assert_int_equal(kiln_array_shape(history)[1], 8);
    assert_int_equal(kiln_array_dtype(table), KILN_FLOAT64);
    assert_int_equal(kiln_array_shape(table)[1], 3);
    assert_int_equal(kiln_array_dtype(big), KILN_INT64);
    assert_int_equal(kiln_array_dtype(tiny), KILN_INT16);
    assert_int_equal(kiln_array_shape(tiny)[0], 5);
    /* initialisers are there before any write */
    long long big_value = 0;
    int hidden_value = 0;
    TEST_OK(kiln_array_to_host(big, &big_value, sizeof big_value));
    TEST_OK(kiln_array_to_host(hidden, &hidden_value, sizeof hidden_value));
    assert_int_equal(big_value, 7);
    assert_int_equal(hidden_value, 3);

    struct params host = {2.5f, -3, 0.25};
    TEST_OK(kiln_array_from_host_copy(p, &host, sizeof host));
    unsigned zero = 0;
    TEST_OK(kiln_array_from_host_copy(counter, &zero, sizeof zero));
    double tab[2][3] = {{0, 0, 0}, {0, 0, 10}};
    TEST_OK(kiln_array_from_host_copy(table, tab, sizeof tab));
    short tv[5] = {1, 2, 3, 4, 5};
    TEST_OK(kiln_array_from_host_copy(tiny, tv, sizeof tv));
    enum { N = 300 };
    kiln_array *y = NULL;
    int64_t shape[1] = {N};
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, shape, &y));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "apply", &k));
    for (int rep = 0; rep < 2; rep++)
        TEST_OK(kiln_launch(k, KILN_DIM(3), KILN_DIM(128), 0, NULL, KILN_ARGS(kiln_arr(y), kiln_i32(N))));
    float out[N];
    TEST_OK(kiln_array_to_host(y, out, sizeof out));
    for (int i = 0; i < N; i++)
        assert_true(fabsf(out[i] - (i * 2.5f - 3 + 0.25f + 10 + 3 + tv[i % 5] + 7)) < 1e-3f);
    unsigned count = 0;
    TEST_OK(kiln_array_to_host(counter, &count, sizeof count));
    assert_int_equal(count, 2 * N); /* atomicAdd through the variable's address */
    float hist[4][8];
    TEST_OK(kiln_array_to_host(history, hist, sizeof hist));
    assert_true(fabsf(hist[3][7] - out[31]) < 1e-6f);
    /* a view of a variable: one row of history */
    kiln_array *row = NULL;
    TEST_OK(kiln_array_slice(history, 0, 1, 2, 1, &row));
    float zeros[8] = {0};
    TEST_OK(kiln_array_from_host_copy(row, zeros, sizeof zeros));
    TEST_OK(kiln_array_to_host(history, hist, sizeof hist));
    assert_true(hist[1][3] == 0 && fabsf(hist[2][0] - out[16]) < 1e-6f);
    kiln_array_release(row);

    /* a const variable is read, never written */
    kiln_array *ratios = NULL;
    TEST_OK(kiln_module_global(m, "ratios", &ratios));
    float r[3], ones[3] = {1, 1, 1};
    TEST_OK(kiln_array_to_host(ratios, r, sizeof r));
    assert_true(r[0] == 0.5f && r[2] == 0.125f);
    TEST_FAILS_WITH(kiln_array_from_host_copy(ratios, ones, sizeof ones), KILN_ERR_INVALID_ARGUMENT,
                    "declared const");
    kiln_array_release(ratios);
    /* unknown names list what exists */
    kiln_array *none = NULL;
    TEST_FAILS_WITH(kiln_module_global(m, "c_missing", &none), KILN_ERR_NOT_FOUND, "cfg::table");
    assert_null(none);
    kiln_kernel_release(k);
    kiln_array_release(y);
    /* the arrays keep the module: release it first, then use them */
    kiln_module_release(m);
    host.scale = 1;
    TEST_OK(kiln_array_from_host_copy(p, &host, sizeof host));
    struct params back;
    TEST_OK(kiln_array_to_host(p, &back, sizeof back));
    assert_true(back.scale == 1 && back.offset == -3);
    kiln_array_release(p);
    kiln_array_release(counter);
    kiln_array_release(history);
    kiln_array_release(table);
    kiln_array_release(big);
    kiln_array_release(hidden);
    kiln_array_release(tiny);
}

/* Not variables: functions, extern declarations, members, locals, shared
 * memory, templates; a module with none says so. */
static void only_namespace_scope_variables(void **state) {
    kiln_context *ctx = *state;
    static const char *src =
        "extern __constant__ float elsewhere[4];\n"
        "__device__ float helper(float v);\n"
        "__device__ float helper(float v) { __shared__ float s[4]; s[0] = v; return s[0]; }\n"
        "struct S { __device__ float get() const { return 1; } int member; };\n"
        "template <typename T> __device__ T twice(T v) { return v + v; }\n"
        "__global__ void k(float *out) { __shared__ float t[32]; t[threadIdx.x] = 1; out[threadIdx.x] = "
        "helper(t[threadIdx.x]); }\n";
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "none.cu", NULL, &m));
    kiln_array *a = NULL;
    TEST_FAILS_WITH(kiln_module_global(m, "helper", &a), KILN_ERR_NOT_FOUND, "defines none");
    TEST_FAILS_WITH(kiln_module_global(m, "t", &a), KILN_ERR_NOT_FOUND, "no __constant__");
    kiln_module_release(m);
}

/* The module comes from the disk cache the second time, and its
 * variables are found there too. */
static void globals_from_the_cache(void **state) {
    kiln_context *ctx = *state;
    static const char *src =
        "__constant__ int c_offset[3];\n"
        "__global__ void add(int *out) { out[threadIdx.x] = c_offset[threadIdx.x % 3]; }\n";
    for (int round = 0; round < 2; round++) {
        kiln_module *m = NULL;
        TEST_OK(kiln_module_from_source(ctx, src, "cached.cu", NULL, &m));
        kiln_array *g = NULL;
        TEST_OK(kiln_module_global(m, "c_offset", &g));
        int v[3] = {round, 10 + round, 20 + round};
        TEST_OK(kiln_array_from_host_copy(g, v, sizeof v));
        kiln_kernel *k = NULL;
        TEST_OK(kiln_module_kernel(m, "add", &k));
        kiln_array *out = NULL;
        int64_t shape[1] = {6};
        TEST_OK(kiln_array_empty(ctx, KILN_INT32, 1, shape, &out));
        TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(6), 0, NULL, KILN_ARGS(kiln_arr(out))));
        int got[6];
        TEST_OK(kiln_array_to_host(out, got, sizeof got));
        for (int i = 0; i < 6; i++) assert_int_equal(got[i], v[i % 3]);
        kiln_array_release(out);
        kiln_kernel_release(k);
        kiln_array_release(g);
        kiln_module_release(m);
    }
}

/* A write on another thread while a kernel of the module runs (CPU: launches
 * run on the calling thread, so only another thread can get in between). */
typedef struct spin_job {
    kiln_kernel *k;
    kiln_array *flag, *started;
    kiln_status status;
} spin_job;

static void *run_spin(void *arg) {
    spin_job *j = arg;
    j->status = kiln_launch(j->k, KILN_DIM(1), KILN_DIM(1), 0, NULL,
                            KILN_ARGS(kiln_arr(j->flag), kiln_arr(j->started)));
    return NULL;
}

static void write_while_running(void **state) {
    kiln_context *ctx = *state;
    if (strcmp(test_target(), "cpu") != 0) skip(); /* on CUDA copies and launches are stream-ordered */
    static const char *src = "__constant__ float c_gain;\n"
                             "__global__ void spin(volatile int *flag, volatile int *started) {\n"
                             "    *started = 1;\n"
                             "    while (!*flag) {}\n"
                             "}\n";
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "spin.cu", NULL, &m));
    kiln_array *gain = NULL;
    TEST_OK(kiln_module_global(m, "c_gain", &gain));
    spin_job job = {0};
    TEST_OK(kiln_module_kernel(m, "spin", &job.k));
    int64_t one[1] = {1};
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, one, &job.flag));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, one, &job.started));
    volatile int *flag = kiln_array_data(job.flag), *started = kiln_array_data(job.started);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_spin, &job), 0);
    while (!*started) {
    }
    float g = 2;
    TEST_FAILS_WITH(kiln_array_from_host_copy(gain, &g, sizeof g), KILN_ERR_INVALID_ARGUMENT,
                    "while one of its kernels is running");
    *flag = 1;
    pthread_join(t, NULL);
    TEST_OK(job.status);
    TEST_OK(kiln_array_from_host_copy(gain, &g, sizeof g)); /* and once it has returned */
    kiln_array_release(job.flag);
    kiln_array_release(job.started);
    kiln_kernel_release(job.k);
    kiln_array_release(gain);
    kiln_module_release(m);
}

/* NVRTC finds the variables' symbols through name expressions; checked
 * without a GPU (skipped where NVRTC is absent). */
static void nvrtc_names_the_globals(void **state) {
    (void)state;
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", struct_src, "params.cu", NULL, &log);
    kiln_free(log);
    if (s == KILN_ERR_COMPILER_MISSING) skip();
    TEST_OK(s);
    s = kiln_compile_only("cuda", "sm_90", filter_src, "filter.cu", NULL, &log);
    kiln_free(log);
    TEST_OK(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(constant_filter),
        cmocka_unit_test(structs_and_addresses),
        cmocka_unit_test(only_namespace_scope_variables),
        cmocka_unit_test(globals_from_the_cache),
        cmocka_unit_test(write_while_running),
        cmocka_unit_test(nvrtc_names_the_globals),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
