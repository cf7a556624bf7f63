/* test_threads.c: threads sharing one context: compiling (the same module
 * and different ones), building ufunc and gufunc variants on first use,
 * launching, copying and profiling at once. Run under ThreadSanitizer by
 * `make test-tsan`; kernels here have no barriers (fibers switch
 * stacks behind TSan's back). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#define THREADS 4
#define ROUNDS 3

typedef struct shared {
    kiln_context *ctx;
    kiln_ufunc *scale; /* variants for f4 and f8 built by whichever thread comes first */
    kiln_gufunc *cumsum;
    int failures;
    pthread_mutex_t lock;
} shared;

typedef struct worker {
    shared *sh;
    int id;
} worker;

static void failed(shared *sh, const char *what, int id) {
    pthread_mutex_lock(&sh->lock);
    fprintf(stderr, "thread %d: %s: %s\n", id, what, kiln_last_error());
    sh->failures++;
    pthread_mutex_unlock(&sh->lock);
}

#define WORK_OK(call)                                                                                        \
    do {                                                                                                     \
        if ((call) != KILN_OK) {                                                                             \
            failed(sh, #call, w->id);                                                                        \
            return NULL;                                                                                     \
        }                                                                                                    \
    } while (0)

static void *work(void *arg) {
    worker *w = arg;
    shared *sh = w->sh;
    kiln_context *ctx = sh->ctx;
    char src[512];
    for (int round = 0; round < ROUNDS; round++) {
        /* one module every thread compiles, one of its own */
        snprintf(src, sizeof src,
                 "__global__ void add(float *x, int n, float v) {\n"
                 "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "    if (i < n) x[i] += v + %d;\n"
                 "}\n",
                 round % 2 ? w->id : 0);
        kiln_kernel *k = NULL;
        WORK_OK(kiln_kernel_from_source(ctx, src, "add", NULL, &k));
        enum { N = 5000 };
        int64_t n = N;
        float host[N];
        for (int i = 0; i < N; i++) host[i] = (float)(i % 97);
        kiln_array *a = NULL, *out = NULL;
        WORK_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, host, sizeof host, &a));
        WORK_OK(kiln_launch(k, KILN_DIM((N + 127) / 128), KILN_DIM(128), 0, NULL,
                            KILN_ARGS(kiln_arr(a), kiln_i32(N), kiln_f32(1.0f))));
        WORK_OK(kiln_call(sh->scale, KILN_ARGS(kiln_arr(a)), &out));
        WORK_OK(kiln_array_to_host(out, host, sizeof host));
        float add = 1.0f + (float)(round % 2 ? w->id : 0);
        for (int i = 0; i < N; i++)
            if (host[i] != 2 * ((float)(i % 97) + add)) {
                failed(sh, "wrong value", w->id);
                break;
            }
        kiln_array_release(out);
        out = NULL;
        /* the f8 variant, first built by whichever thread gets here first */
        double d[64];
        int64_t m = 64;
        for (int i = 0; i < 64; i++) d[i] = i;
        kiln_array *b = NULL;
        WORK_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &m, d, sizeof d, &b));
        WORK_OK(kiln_call(sh->scale, KILN_ARGS(kiln_arr(b)), &out));
        WORK_OK(kiln_array_to_host(out, d, sizeof d));
        for (int i = 0; i < 64; i++)
            if (d[i] != 2.0 * i) {
                failed(sh, "wrong f8 value", w->id);
                break;
            }
        /* a gufunc over rows */
        int64_t shape[2] = {16, 8};
        kiln_array *rows = NULL, *sums = NULL;
        WORK_OK(kiln_array_full(ctx, KILN_FLOAT32, 2, shape, 1.0, 0, &rows));
        WORK_OK(kiln_gufunc_call(sh->cumsum, KILN_ARGS(kiln_arr(rows)), &sums, NULL));
        float s[128];
        WORK_OK(kiln_array_to_host(sums, s, sizeof s));
        for (int i = 0; i < 128; i++)
            if (s[i] != (float)(i % 8 + 1)) {
                failed(sh, "wrong gufunc value", w->id);
                break;
            }
        kiln_array_release(sums);
        kiln_array_release(rows);
        kiln_array_release(out);
        kiln_array_release(b);
        kiln_array_release(a);
        kiln_kernel_release(k);
    }
    return NULL;
}

static void test_threads_share_a_context(void **state) {
    (void)state;
    shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.lock, NULL);
    sh.ctx = test_open();
    TEST_OK(kiln_profiler_start(sh.ctx));
    TEST_OK(kiln_vectorize(sh.ctx, "scale", "f4(f4); f8(f8)", "x", "return 2 * x;", NULL, &sh.scale));
    TEST_OK(kiln_guvectorize(sh.ctx, "cumsum", "void(f4[:], f4[:])", "(n)->(n)", "x, y",
                             "float s = 0; for (int i = 0; i < x.len; i++) { s += x[i]; y[i] = s; }", NULL,
                             &sh.cumsum));
    pthread_t threads[THREADS];
    worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i].sh = &sh;
        workers[i].id = i;
        assert_int_equal(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    assert_int_equal(sh.failures, 0);
    char *summary = NULL;
    TEST_OK(kiln_profiler_summary(sh.ctx, &summary));
    assert_true(test_contains(summary, "add"));
    kiln_free(summary);
    kiln_jit_stats st;
    TEST_OK(kiln_jit_stats_get(sh.ctx, &st));
    assert_true(st.compiles + st.cache_hits >= THREADS * ROUNDS);
    kiln_gufunc_release(sh.cumsum);
    kiln_ufunc_release(sh.scale);
    kiln_close(sh.ctx);
    pthread_mutex_destroy(&sh.lock);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_share_a_context)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
