/* test_lifetime.c: objects outliving kiln_close, and NULL where a context,
 * an object or an out-pointer belongs, in every public function (issue 13,
 * item 5). Objects keep their context alive until released: each test here
 * crashed (use after free) or returned garbage before that rule. */
#define KILN_EXPERIMENTAL /* kiln_ufunc_source, kiln_gufunc_source (include/kiln.h) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

static const char *add_src = "__global__ void add_one(float *x, int n) {\n"
                             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    if (i < n) x[i] += 1.0f;\n"
                             "}\n";

/* Release after close: the array, the kernel and the ufunc still own what
 * they point to (ASan would report the use after free this used to be). */
static void test_release_after_close(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    int64_t n = 100;
    kiln_array *a = NULL, *view = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &a));
    TEST_OK(kiln_array_slice(a, 0, 10, 20, 1, &view));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, add_src, "add_one", NULL, &k));
    kiln_ufunc *f = NULL;
    TEST_OK(kiln_vectorize(ctx, "twice", "f4(f4)", "x", "return 2 * x;", NULL, &f));
    kiln_stream *stream = NULL;
    TEST_OK(kiln_stream_create(ctx, &stream));
    kiln_event *ev = NULL;
    TEST_OK(kiln_event_create(ctx, &ev));
    kiln_close(ctx);
    kiln_array_release(a);
    kiln_event_release(ev);
    kiln_stream_release(stream);
    kiln_ufunc_release(f);
    kiln_kernel_release(k);
    kiln_array_release(view); /* the last reference: the context closes here */
}

/* Launch, copy and call after close: the context is whole until the last
 * object goes, so the results are right. */
static void test_use_after_close(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    enum { N = 1000 };
    int64_t n = N;
    float host[N], back[N];
    test_rng r = test_rng_for("use_after_close");
    test_fill_f32(&r, host, N, -10, 10);
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, host, sizeof host, &a));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, add_src, "add_one", NULL, &k));
    kiln_ufunc *f = NULL;
    TEST_OK(kiln_vectorize(ctx, "twice", "f4(f4)", "x", "return 2 * x;", NULL, &f));
    kiln_close(ctx);

    TEST_OK(kiln_launch(k, KILN_DIM((N + 127) / 128), KILN_DIM(128), 0, NULL,
                        KILN_ARGS(kiln_arr(a), kiln_i32(N))));
    kiln_array *out = NULL;
    TEST_OK(kiln_call(f, KILN_ARGS(kiln_arr(a)), &out));
    TEST_OK(kiln_array_to_host(out, back, sizeof back));
    for (int i = 0; i < N; i++) assert_float_equal(back[i], 2 * (host[i] + 1.0f), 1e-5);

    /* Into a new context: the values arrive, not garbage. */
    kiln_context *ctx2 = test_open();
    kiln_array *b = NULL;
    memset(back, 0, sizeof back);
    TEST_OK(kiln_array_to_host(out, back, sizeof back));
    TEST_OK(kiln_array_from_host(ctx2, KILN_FLOAT32, 1, &n, back, sizeof back, &b));
    memset(back, 0, sizeof back);
    TEST_OK(kiln_array_to_host(b, back, sizeof back));
    for (int i = 0; i < N; i++) assert_float_equal(back[i], 2 * (host[i] + 1.0f), 1e-5);
    kiln_array *c = NULL;
    TEST_OK(kiln_array_copy(a, &c));
    assert_ptr_equal(kiln_array_context(c), kiln_array_context(a));
    kiln_array_release(c);
    kiln_array_release(b);
    kiln_close(ctx2);

    kiln_array_release(out);
    kiln_array_release(a);
    kiln_kernel_release(k);
    kiln_ufunc_release(f);
}

/* A context with nothing left closes at kiln_close, many times over: no
 * reference is leaked by the failure paths either (LeakSanitizer checks). */
static void test_close_frees(void **state) {
    (void)state;
    for (int round = 0; round < 3; round++) {
        kiln_context *ctx = test_open();
        int64_t n = -1;
        kiln_array *a = NULL;
        TEST_FAILS_WITH(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &a), KILN_ERR_SHAPE, "negative");
        kiln_kernel *k = NULL;
        TEST_FAILS_WITH(kiln_kernel_from_source(ctx, "__global__ void f(int *x) { x[0] = ; }", "f", NULL, &k),
                        KILN_ERR_COMPILE, "f");
        kiln_close(ctx);
    }
}

/* ---------------------------------------------------------------- NULL table */

typedef struct fixture {
    kiln_context *ctx;
    kiln_array *a;
    kiln_module *m;
    kiln_kernel *k;
    kiln_ufunc *u;
    kiln_gufunc *g;
    kiln_event *ev;
    char path[1024];
} fixture;

/* Every public function that returns a status, with NULL in turn for its
 * context or object and for each pointer it must write or read, and the
 * status it must return (with a message). */
#define NULL_CASES(X)                                                                                        \
    /* a NULL signature or array argument gets the status of its kind */                                     \
    X(KILN_ERR_ARG_TYPE,                                                                                     \
      kiln_launch(f->k, KILN_DIM(1), KILN_DIM(1), 0, NULL, KILN_ARGS(kiln_arr(NULL), kiln_i32(1))))          \
    X(KILN_ERR_SIGNATURE, kiln_vectorize(f->ctx, "v", NULL, "x", "return x;", NULL, &uf))                    \
    X(KILN_ERR_SIGNATURE,                                                                                    \
      kiln_guvectorize(f->ctx, "g", NULL, "(n)->(n)", "x, y", "y[0] = x[0];", NULL, &gf))                    \
    X(KILN_ERR_SIGNATURE,                                                                                    \
      kiln_guvectorize(f->ctx, "g", "void(f4[:], f4[:])", NULL, "x, y", "y[0] = x[0];", NULL, &gf))          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_call(f->u, KILN_ARGS(kiln_arr(NULL)), outs))                           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_gufunc_call(f->g, KILN_ARGS(kiln_arr(NULL)), outs, NULL))              \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_open(NULL, "cpu"))                                                     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_synchronize(NULL))                                                     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_device_info_get(NULL, &info))                                          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_device_info_get(f->ctx, NULL))                                         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_cuda_device_count(NULL, NULL))                                         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_stream_create(NULL, &stream))                                          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_stream_create(f->ctx, NULL))                                           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_stream_synchronize(NULL))                                              \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_event_create(NULL, &ev))                                               \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_event_create(f->ctx, NULL))                                            \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_event_record(NULL, NULL))                                              \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_event_synchronize(NULL))                                               \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_event_elapsed_ms(NULL, f->ev, &ms))                                    \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_event_elapsed_ms(f->ev, NULL, &ms))                                    \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_event_elapsed_ms(f->ev, f->ev, NULL))                                  \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_host_alloc(NULL, 16, &ptr))                                            \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_host_alloc(f->ctx, 16, NULL))                                          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_dtype_parse(NULL, &dtype))                                             \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_dtype_parse("f4", NULL))                                               \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_empty(NULL, KILN_FLOAT32, 1, &n, &arr))                          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_empty(f->ctx, KILN_FLOAT32, 1, &n, NULL))                        \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_empty(f->ctx, KILN_FLOAT32, 1, NULL, &arr))                      \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_zeros(NULL, KILN_FLOAT32, 1, &n, &arr))                          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_zeros(f->ctx, KILN_FLOAT32, 1, &n, NULL))                        \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_full(NULL, KILN_FLOAT32, 1, &n, 1, 0, &arr))                     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_full(f->ctx, KILN_FLOAT32, 1, &n, 1, 0, NULL))                   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_from_host(NULL, KILN_FLOAT32, 1, &n, buf, sizeof buf, &arr))     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_from_host(f->ctx, KILN_FLOAT32, 1, &n, NULL, sizeof buf, &arr))  \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_from_host(f->ctx, KILN_FLOAT32, 1, &n, buf, sizeof buf, NULL))   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_wrap_host(NULL, KILN_FLOAT32, 1, &n, NULL, buf, &arr))           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_wrap_host(f->ctx, KILN_FLOAT32, 1, &n, NULL, NULL, &arr))        \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_wrap_host(f->ctx, KILN_FLOAT32, 1, &n, NULL, buf, NULL))         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_arange(NULL, KILN_FLOAT32, 0, 4, 1, &arr))                       \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_arange(f->ctx, KILN_FLOAT32, 0, 4, 1, NULL))                     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_linspace(NULL, KILN_FLOAT32, 0, 1, 4, 1, &arr))                  \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_linspace(f->ctx, KILN_FLOAT32, 0, 1, 4, 1, NULL))                \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_meshgrid(NULL, f->a, "xy", &arr, &arr2))                         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_meshgrid(f->a, NULL, "xy", &arr, &arr2))                         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_meshgrid(f->a, f->a, "xy", NULL, &arr2))                         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_meshgrid(f->a, f->a, "xy", &arr, NULL))                          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_slice(NULL, 0, 0, 1, 1, &arr))                                   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_slice(f->a, 0, 0, 1, 1, NULL))                                   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_reshape(NULL, 1, &n, &arr))                                      \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_reshape(f->a, 1, NULL, &arr))                                    \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_reshape(f->a, 1, &n, NULL))                                      \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_transpose(NULL, NULL, &arr))                                     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_transpose(f->a, NULL, NULL))                                     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_copy(NULL, &arr))                                                \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_copy(f->a, NULL))                                                \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_to_host(NULL, buf, sizeof buf))                                  \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_to_host(f->a, NULL, sizeof buf))                                 \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_from_host_copy(NULL, buf, sizeof buf))                           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_from_host_copy(f->a, NULL, sizeof buf))                          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_to_host_async(NULL, buf, sizeof buf, NULL))                      \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_to_host_async(f->a, NULL, sizeof buf, NULL))                     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_from_host_async(NULL, buf, sizeof buf, NULL))                    \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_from_host_async(f->a, NULL, sizeof buf, NULL))                   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_assign(NULL, f->a))                                              \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_array_assign(f->a, NULL))                                              \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_module_from_source(NULL, add_src, NULL, NULL, &mod))                   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_module_from_source(f->ctx, NULL, NULL, NULL, &mod))                    \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_module_from_source(f->ctx, add_src, NULL, NULL, NULL))                 \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_module_from_file(NULL, f->path, NULL, &mod))                           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_module_from_file(f->ctx, NULL, NULL, &mod))                            \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_module_from_file(f->ctx, f->path, NULL, NULL))                         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_module_kernel(NULL, "add_one", &kern))                                 \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_module_kernel(f->m, NULL, &kern))                                      \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_module_kernel(f->m, "add_one", NULL))                                  \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_kernel_from_source(NULL, add_src, "add_one", NULL, &kern))             \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_kernel_from_source(f->ctx, NULL, "add_one", NULL, &kern))              \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_kernel_from_source(f->ctx, add_src, NULL, NULL, &kern))                \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_kernel_from_source(f->ctx, add_src, "add_one", NULL, NULL))            \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_kernel_param(NULL, 0, &pinfo))                                         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_kernel_param(f->k, 0, NULL))                                           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_kernel_attributes_get(NULL, &attrs))                                   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_kernel_attributes_get(f->k, NULL))                                     \
    X(KILN_ERR_INVALID_ARGUMENT,                                                                             \
      kiln_launch(NULL, KILN_DIM(1), KILN_DIM(1), 0, NULL, KILN_ARGS(kiln_arr(f->a), kiln_i32(1))))          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_launch(f->k, KILN_DIM(1), KILN_DIM(1), 0, NULL, NULL, 2))              \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_compile_only(NULL, NULL, add_src, NULL, NULL, &log))                   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_compile_only("cpu", NULL, NULL, NULL, NULL, &log))                     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_cache_info_get(NULL))                                                  \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_jit_stats_get(NULL, &jit))                                             \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_jit_stats_get(f->ctx, NULL))                                           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_profiler_start(NULL))                                                  \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_profiler_stop(NULL))                                                   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_profiler_reset(NULL))                                                  \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_profiler_summary(NULL, &text))                                         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_profiler_summary(f->ctx, NULL))                                        \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_profiler_print(NULL, stderr))                                          \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_profiler_write_trace(NULL, "trace.json"))                              \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_profiler_write_trace(f->ctx, NULL))                                    \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_vectorize(NULL, "v", "f4(f4)", "x", "return x;", NULL, &uf))           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_vectorize(f->ctx, NULL, "f4(f4)", "x", "return x;", NULL, &uf))        \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_vectorize(f->ctx, "v", "f4(f4)", "x", NULL, NULL, &uf))                \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_vectorize(f->ctx, "v", "f4(f4)", "x", "return x;", NULL, NULL))        \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_ufunc_set_target(NULL, "cpu"))                                         \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_call(NULL, KILN_ARGS(kiln_arr(f->a)), outs))                           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_call(f->u, NULL, 1, outs))                                             \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_call(f->u, KILN_ARGS(kiln_arr(f->a)), NULL))                           \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_call_ex(NULL, NULL, NULL, KILN_ARGS(kiln_arr(f->a)), outs))            \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_ufunc_source(NULL, "cpu", KILN_ARGS(kiln_arr(f->a)), NULL, &text))     \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_ufunc_source(f->u, "cpu", KILN_ARGS(kiln_arr(f->a)), NULL, NULL))      \
    X(KILN_ERR_INVALID_ARGUMENT,                                                                             \
      kiln_guvectorize(NULL, "g", "void(f4[:], f4[:])", "(n)->(n)", "x, y", "y[0] = x[0];", NULL, &gf))      \
    X(KILN_ERR_INVALID_ARGUMENT,                                                                             \
      kiln_guvectorize(f->ctx, NULL, "void(f4[:], f4[:])", "(n)->(n)", "x, y", "y[0] = x[0];", NULL, &gf))   \
    X(KILN_ERR_INVALID_ARGUMENT,                                                                             \
      kiln_guvectorize(f->ctx, "g", "void(f4[:], f4[:])", "(n)->(n)", "x, y", NULL, NULL, &gf))              \
    X(KILN_ERR_INVALID_ARGUMENT,                                                                             \
      kiln_guvectorize(f->ctx, "g", "void(f4[:], f4[:])", "(n)->(n)", "x, y", "y[0] = x[0];", NULL, NULL))   \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_gufunc_call(NULL, KILN_ARGS(kiln_arr(f->a)), outs, NULL))              \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_gufunc_call(f->g, NULL, 1, outs, NULL))                                \
    X(KILN_ERR_INVALID_ARGUMENT, kiln_gufunc_call_ex(NULL, NULL, NULL, KILN_ARGS(kiln_arr(f->a)), outs))     \
    X(KILN_ERR_INVALID_ARGUMENT,                                                                             \
      kiln_gufunc_source(NULL, "cpu", NULL, KILN_ARGS(kiln_arr(f->a)), NULL, &text, NULL))                   \
    X(KILN_ERR_INVALID_ARGUMENT,                                                                             \
      kiln_gufunc_source(f->g, "cpu", NULL, KILN_ARGS(kiln_arr(f->a)), NULL, NULL, NULL))

#define COUNT_CASE(want, e) +1
enum { NULL_CASE_COUNT = 0 NULL_CASES(COUNT_CASE) };

/* Runs case i; *name gets its text. */
static kiln_status run_null_case(fixture *f, int i, const char **name, kiln_status *expected) {
    kiln_device_info info;
    kiln_stream *stream = NULL;
    kiln_event *ev = NULL;
    float ms = 0, buf[4] = {0};
    void *ptr = NULL;
    kiln_dtype dtype;
    int64_t n = 4;
    kiln_array *arr = NULL, *arr2 = NULL, *outs[1] = {NULL};
    kiln_module *mod = NULL;
    kiln_kernel *kern = NULL;
    kiln_param_info pinfo;
    kiln_kernel_attributes attrs;
    char *log = NULL, *text = NULL;
    kiln_jit_stats jit;
    kiln_ufunc *uf = NULL;
    kiln_gufunc *gf = NULL;
    int k = 0;
    kiln_status s = KILN_ERR_INTERNAL;
#define RUN_CASE(want, e)                                                                                    \
    if (k++ == i) {                                                                                          \
        *name = #e;                                                                                          \
        *expected = (want);                                                                                  \
        if (getenv("KILN_TEST_TRACE")) fprintf(stderr, "case %d: %s\n", i, #e);                              \
        s = (e);                                                                                             \
    }
    NULL_CASES(RUN_CASE)
#undef RUN_CASE
    /* Whatever a wrongly succeeding call made must not leak. */
    kiln_stream_release(stream);
    kiln_event_release(ev);
    kiln_host_free(f->ctx, ptr);
    kiln_array_release(arr);
    kiln_array_release(arr2);
    kiln_array_release(outs[0]);
    kiln_module_release(mod);
    kiln_kernel_release(kern);
    kiln_free(log);
    kiln_free(text);
    kiln_ufunc_release(uf);
    kiln_gufunc_release(gf);
    return s;
}

static void test_null_arguments(void **state) {
    (void)state;
    fixture f;
    memset(&f, 0, sizeof f);
    f.ctx = test_open();
    int64_t n = 4;
    TEST_OK(kiln_array_zeros(f.ctx, KILN_FLOAT32, 1, &n, &f.a));
    TEST_OK(kiln_module_from_source(f.ctx, add_src, NULL, NULL, &f.m));
    TEST_OK(kiln_module_kernel(f.m, "add_one", &f.k));
    TEST_OK(kiln_vectorize(f.ctx, "v", "f4(f4)", "x", "return x;", NULL, &f.u));
    TEST_OK(
        kiln_guvectorize(f.ctx, "g", "void(f4[:], f4[:])", "(n)->(n)", "x, y", "y[0] = x[0];", NULL, &f.g));
    TEST_OK(kiln_event_create(f.ctx, &f.ev));
    char *dir = test_temp_dir("null-args");
    snprintf(f.path, sizeof f.path, "%s/add.cu", dir);
    FILE *fp = fopen(f.path, "w");
    fputs(add_src, fp);
    fclose(fp);

    int failures = 0;
    for (int i = 0; i < NULL_CASE_COUNT; i++) {
        const char *name = "?";
        kiln_status expected = KILN_ERR_INVALID_ARGUMENT;
        kiln_status s = run_null_case(&f, i, &name, &expected);
        if (s != expected) {
            print_error("case %d: %s -> %s (expected %s): %s\n", i, name, kiln_status_string(s),
                        kiln_status_string(expected), kiln_last_error());
            failures++;
        } else if (!kiln_last_error()[0]) {
            print_error("case %d: %s: no message\n", i, name);
            failures++;
        }
    }
    assert_int_equal(failures, 0);

    /* Functions that return no status: a value that cannot be mistaken for
     * an answer, and no crash. */
    assert_int_equal((int)kiln_context_backend(NULL), -1);
    assert_null(kiln_context_backend_name(NULL));
    assert_null(kiln_array_context(NULL));
    assert_int_equal(kiln_array_dtype(NULL), KILN_DTYPE_COUNT);
    assert_int_equal(kiln_array_ndim(NULL), -1);
    assert_null(kiln_array_shape(NULL));
    assert_null(kiln_array_strides(NULL));
    assert_int_equal(kiln_array_size(NULL), 0);
    assert_int_equal(kiln_array_nbytes(NULL), 0);
    assert_int_equal(kiln_array_is_contiguous(NULL), 0);
    assert_null(kiln_array_data(NULL));
    assert_null(kiln_array_retain(NULL));
    assert_int_equal(kiln_module_kernel_count(NULL), 0);
    assert_null(kiln_module_kernel_name(NULL, 0));
    assert_int_equal(kiln_kernel_param_count(NULL), -1);
    assert_null(kiln_kernel_name(NULL));
    assert_int_equal(kiln_profiler_enabled(NULL), 0);
    assert_int_equal(kiln_ufunc_nin(NULL), -1);
    assert_int_equal(kiln_ufunc_nout(NULL), -1);
    assert_int_equal(kiln_gufunc_nin(NULL), -1);
    assert_int_equal(kiln_gufunc_nout(NULL), -1);
    kiln_close(NULL);
    kiln_array_release(NULL);
    kiln_module_release(NULL);
    kiln_kernel_release(NULL);
    kiln_ufunc_release(NULL);
    kiln_gufunc_release(NULL);
    kiln_stream_release(NULL);
    kiln_event_release(NULL);
    kiln_host_free(NULL, NULL);
    kiln_host_free(f.ctx, NULL);
    kiln_free(NULL);

    unlink(f.path);
    rmdir(dir);
    free(dir);
    kiln_event_release(f.ev);
    kiln_gufunc_release(f.g);
    kiln_ufunc_release(f.u);
    kiln_kernel_release(f.k);
    kiln_module_release(f.m);
    kiln_array_release(f.a);
    kiln_close(f.ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_release_after_close),
        cmocka_unit_test(test_use_after_close),
        cmocka_unit_test(test_close_frees),
        cmocka_unit_test(test_null_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
