/* test_driver.c: the driver layer on the backend under test (KILN_TEST_TARGET):
 * events and stream queries, stream waits on events, host callbacks,
 * kernel resources and occupancy, memory kinds, peers (two GPUs, else
 * skipped) and graphs (kernels, ufunc calls, copies, callbacks, update, and
 * what a capture refuses). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver_examples.h"
#include "test_support.h"

static int is_cuda(void) { return strcmp(test_target(), "cuda") == 0; }

/* spin: busy for `cycles` clocks (long enough on a GPU that a query sees
 * the work unfinished), then x[i] = x[i] * 2 + add. */
static const char *src = "__global__ void spin_then(float *x, int n, long long cycles, float add) {\n"
                         "    long long t0 = clock64();\n"
                         "    if (threadIdx.x == 0) while (clock64() - t0 < cycles) {}\n"
                         "    __syncthreads();\n"
                         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "    if (i < n) x[i] = x[i] * 2.0f + add;\n"
                         "}\n"
                         "__global__ void add_into(float *y, const float *x, int n, float add) {\n"
                         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "    if (i < n) y[i] = x[i] + add;\n"
                         "}\n"
                         "__global__ void big_shared(float *x, int n) {\n"
                         "    extern __shared__ float s[];\n"
                         "    int words = 64 * 1024 / 4;\n"
                         "    for (int k = threadIdx.x; k < words; k += blockDim.x) s[k] = (float)k;\n"
                         "    __syncthreads();\n"
                         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "    if (i < n) x[i] = s[words - 1 - threadIdx.x];\n"
                         "}\n";

/* About 50 ms on a GPU at ~2 GHz; 0 on the CPU (the call returns done). */
static long long spin_cycles(void) { return is_cuda() ? 100000000LL : 0; }

static kiln_kernel *get_kernel(kiln_context *ctx, const char *name) {
    kiln_module *m = NULL;
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "driver.cu", NULL, &m));
    TEST_OK(kiln_module_kernel(m, name, &k));
    kiln_module_release(m);
    return k;
}

static kiln_array *filled(kiln_context *ctx, int64_t n, float value) {
    float *h = malloc((size_t)n * sizeof *h);
    for (int64_t i = 0; i < n; i++) h[i] = value + (float)i;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, h, (size_t)n * 4, &a));
    free(h);
    return a;
}

static void expect_values(kiln_array *a, float base, float scale, float add) {
    int64_t n = kiln_array_size(a);
    float *h = test_read_array(a);
    for (int64_t i = 0; i < n; i++) {
        float want = (base + (float)i) * scale + add;
        if (h[i] != want) fail_msg("element %lld is %g, expected %g", (long long)i, h[i], want);
    }
    free(h);
}

/* ------------------------------------------------------------------ events */

static void test_events_and_queries(void **state) {
    kiln_context *ctx = *state;
    kiln_event *ev = NULL, *timed = NULL;
    TEST_FAILS_WITH(kiln_event_create_ex(ctx, 0x10, &ev), KILN_ERR_INVALID_ARGUMENT, "unknown flags 0x10");
    TEST_OK(kiln_event_create_ex(ctx, KILN_EVENT_DISABLE_TIMING, &ev));
    TEST_OK(kiln_event_create(ctx, &timed));
    /* Never recorded: done, as in CUDA. */
    assert_int_equal(kiln_event_query(ev), KILN_OK);
    TEST_FAILS_WITH(kiln_event_query(NULL), KILN_ERR_INVALID_ARGUMENT, "event is NULL");
    TEST_FAILS_WITH(kiln_stream_query(NULL), KILN_ERR_INVALID_ARGUMENT, "stream is NULL");

    kiln_stream *s = NULL;
    TEST_OK(kiln_stream_create(ctx, &s));
    kiln_kernel *k = get_kernel(ctx, "spin_then");
    int64_t n = 256;
    kiln_array *x = filled(ctx, n, 1);
    TEST_OK(kiln_event_record(timed, s));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(256), 0, s,
                        KILN_ARGS(kiln_arr(x), kiln_i32((int)n), kiln_i64(spin_cycles()), kiln_f32(0))));
    TEST_OK(kiln_event_record(ev, s));
    kiln_status q = kiln_event_query(ev), sq = kiln_stream_query(s);
    /* On a GPU the spin is still running; on the CPU the launch returned done. */
    assert_int_equal(q, is_cuda() ? KILN_ERR_NOT_READY : KILN_OK);
    assert_int_equal(sq, is_cuda() ? KILN_ERR_NOT_READY : KILN_OK);
    TEST_OK(kiln_event_synchronize(ev));
    assert_int_equal(kiln_event_query(ev), KILN_OK);
    assert_int_equal(kiln_stream_query(s), KILN_OK);
    float ms = -1;
    TEST_FAILS_WITH(kiln_event_elapsed_ms(timed, ev, &ms), KILN_ERR_INVALID_ARGUMENT,
                    "the end event was made with KILN_EVENT_DISABLE_TIMING");
    assert_string_equal(kiln_status_string(KILN_ERR_NOT_READY), "KILN_ERR_NOT_READY");
    expect_values(x, 1, 2, 0);
    kiln_array_release(x);
    kiln_kernel_release(k);
    kiln_event_release(ev);
    kiln_event_release(timed);
    kiln_stream_release(s);
}

/* Stream b reads what stream a writes, ordered by an event alone: on a GPU,
 * without the wait b would read x before a's slow kernel doubled it. */
static void test_stream_waits_for_event(void **state) {
    kiln_context *ctx = *state;
    kiln_stream *a = NULL, *b = NULL;
    TEST_OK(kiln_stream_create(ctx, &a));
    TEST_OK(kiln_stream_create(ctx, &b));
    kiln_event *ev = NULL;
    TEST_OK(kiln_event_create_ex(ctx, KILN_EVENT_DISABLE_TIMING, &ev));
    kiln_kernel *spin = get_kernel(ctx, "spin_then"), *add = get_kernel(ctx, "add_into");
    int64_t n = 1000;
    kiln_array *x = filled(ctx, n, 3), *y = filled(ctx, n, 0);
    TEST_OK(kiln_launch(spin, KILN_DIM(4), KILN_DIM(256), 0, a,
                        KILN_ARGS(kiln_arr(x), kiln_i32((int)n), kiln_i64(spin_cycles()), kiln_f32(1))));
    TEST_OK(kiln_event_record(ev, a));
    TEST_OK(kiln_stream_wait_event(b, ev));
    TEST_OK(kiln_launch(add, KILN_DIM(4), KILN_DIM(256), 0, b,
                        KILN_ARGS(kiln_arr(y), kiln_arr(x), kiln_i32((int)n), kiln_f32(5))));
    TEST_OK(kiln_stream_synchronize(b));
    expect_values(y, 3, 2, 1 + 5);
    TEST_FAILS_WITH(kiln_stream_wait_event(b, NULL), KILN_ERR_INVALID_ARGUMENT, "event is NULL");
    kiln_context *other = test_open();
    kiln_stream *foreign = NULL;
    TEST_OK(kiln_stream_create(other, &foreign));
    TEST_FAILS_WITH(kiln_stream_wait_event(foreign, ev), KILN_ERR_INVALID_ARGUMENT, "different contexts");
    kiln_stream_release(foreign);
    kiln_close(other);
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_kernel_release(spin);
    kiln_kernel_release(add);
    kiln_event_release(ev);
    kiln_stream_release(a);
    kiln_stream_release(b);
}

/* ------------------------------------------------------------------ callbacks */

typedef struct order_log {
    atomic_int next;
    int seen[4];
} order_log;
typedef struct order_mark {
    order_log *log;
    int id;
} order_mark;
static void mark(void *p) {
    order_mark *m = p;
    m->log->seen[atomic_fetch_add(&m->log->next, 1)] = m->id;
}

static void test_host_callbacks_run_in_order(void **state) {
    kiln_context *ctx = *state;
    kiln_stream *s = NULL;
    TEST_OK(kiln_stream_create(ctx, &s));
    kiln_kernel *spin = get_kernel(ctx, "spin_then");
    int64_t n = 64;
    kiln_array *x = filled(ctx, n, 0);
    order_log log;
    atomic_init(&log.next, 0);
    order_mark m1 = {&log, 1}, m2 = {&log, 2};
    TEST_OK(kiln_launch(spin, KILN_DIM(1), KILN_DIM(64), 0, s,
                        KILN_ARGS(kiln_arr(x), kiln_i32((int)n), kiln_i64(spin_cycles()), kiln_f32(0))));
    TEST_OK(kiln_stream_add_callback(s, mark, &m1));
    TEST_OK(kiln_stream_add_callback(s, mark, &m2));
    TEST_OK(kiln_stream_synchronize(s));
    assert_int_equal(atomic_load(&log.next), 2);
    assert_int_equal(log.seen[0], 1);
    assert_int_equal(log.seen[1], 2);
    TEST_FAILS_WITH(kiln_stream_add_callback(s, NULL, NULL), KILN_ERR_INVALID_ARGUMENT, "fn is NULL");
    TEST_FAILS_WITH(kiln_stream_add_callback(NULL, mark, &m1), KILN_ERR_INVALID_ARGUMENT, "stream is NULL");
    kiln_array_release(x);
    kiln_kernel_release(spin);
    kiln_stream_release(s);
}

/* ------------------------------------------------------------------ occupancy */

static void test_kernel_resources_and_occupancy(void **state) {
    kiln_context *ctx = *state;
    kiln_device_info info;
    TEST_OK(kiln_device_info_get(ctx, &info));
    kiln_kernel *k = get_kernel(ctx, "add_into"), *big = get_kernel(ctx, "big_shared");
    kiln_kernel_resources r;
    TEST_OK(kiln_kernel_info(k, &r));
    assert_true(r.max_threads_per_block >= 256 && r.max_threads_per_block <= info.max_threads_per_block);
    assert_true(r.max_dynamic_shared_bytes >= 64 * 1024);
    assert_true(r.max_dynamic_shared_bytes <= info.max_shared_bytes_per_block_optin);
    if (is_cuda()) assert_true(r.registers > 0);
    int blocks = -1;
    TEST_OK(kiln_occupancy(k, 256, 0, &blocks));
    assert_true(blocks >= 1);
    if (is_cuda()) assert_true(blocks * 256 <= 2048); /* at most 2048 threads per SM (H100) */
    TEST_FAILS_WITH(kiln_occupancy(k, 0, 0, &blocks), KILN_ERR_LAUNCH_CONFIG, "a block of 0 threads");
    int grid = 0, block = 0;
    TEST_OK(kiln_occupancy_block_size(k, 0, 0, &grid, &block));
    assert_true(block >= 32 && block <= r.max_threads_per_block && grid >= 1);
    TEST_OK(kiln_occupancy_block_size(k, 0, 64, &grid, &block));
    assert_true(block >= 1 && block <= 64);
    TEST_FAILS_WITH(kiln_occupancy_block_size(k, 0, -1, &grid, &block), KILN_ERR_INVALID_ARGUMENT,
                    "block_limit -1");

    /* 64 KiB of dynamic shared memory: past the 48 KiB default. */
    size_t shared = 64 * 1024;
    TEST_FAILS_WITH(kiln_kernel_set_shared(big, shared, 101), KILN_ERR_INVALID_ARGUMENT, "carve-out 101%");
    TEST_FAILS_WITH(kiln_kernel_set_shared(big, r.max_dynamic_shared_bytes + 4096, -1),
                    KILN_ERR_LAUNCH_CONFIG, "bytes of dynamic shared memory");
    TEST_OK(kiln_kernel_set_shared(big, shared, 100));
    TEST_OK(kiln_occupancy(big, 256, shared, &blocks));
    assert_true(blocks >= 1);
    int64_t n = 256;
    kiln_array *x = filled(ctx, n, 0);
    TEST_OK(
        kiln_launch(big, KILN_DIM(1), KILN_DIM(256), shared, NULL, KILN_ARGS(kiln_arr(x), kiln_i32((int)n))));
    float *h = test_read_array(x);
    for (int i = 0; i < 256; i++)
        if (h[i] != (float)(64 * 1024 / 4 - 1 - i)) fail_msg("x[%d] = %g", i, h[i]);
    free(h);
    kiln_array_release(x);
    kiln_kernel_release(k);
    kiln_kernel_release(big);
}

/* ------------------------------------------------------------------ memory kinds */

static void check_kind_in_place(kiln_context *ctx, kiln_array *a, kiln_memory kind) {
    assert_int_equal(kiln_array_memory(a), kind);
    float *host = kiln_array_host_data(a);
    assert_non_null(host);
    int64_t n = kiln_array_size(a);
    for (int64_t i = 0; i < n; i++) host[i] = (float)i;
    kiln_kernel *spin = get_kernel(ctx, "spin_then");
    TEST_OK(kiln_launch(spin, KILN_DIM((uint32_t)((n + 255) / 256)), KILN_DIM(256), 0, NULL,
                        KILN_ARGS(kiln_arr(a), kiln_i32((int)n), kiln_i64(0), kiln_f32(0.5f))));
    TEST_OK(kiln_synchronize(ctx));
    /* Read back in place: no copy. */
    for (int64_t i = 0; i < n; i++)
        if (host[i] != (float)i * 2 + 0.5f) fail_msg("element %lld is %g", (long long)i, host[i]);
    expect_values(a, 0, 2, 0.5f); /* and through the ordinary copy path */
    kiln_kernel_release(spin);
}

static void test_memory_kinds(void **state) {
    kiln_context *ctx = *state;
    int64_t n = 5000;
    kiln_array *mapped = NULL, *managed = NULL, *pooled = NULL, *device = NULL;
    TEST_OK(kiln_array_empty_mapped(ctx, KILN_FLOAT32, 1, &n, &mapped));
    check_kind_in_place(ctx, mapped, KILN_MEMORY_MAPPED);
    TEST_OK(kiln_array_empty_managed(ctx, KILN_FLOAT32, 1, &n, &managed));
    TEST_OK(kiln_array_advise(managed, KILN_ADVISE_PREFER_DEVICE));
    kiln_stream *s = NULL;
    TEST_OK(kiln_stream_create(ctx, &s));
    TEST_OK(kiln_array_prefetch(managed, 0, s)); /* to the host: the test writes it next */
    TEST_OK(kiln_stream_synchronize(s));
    check_kind_in_place(ctx, managed, KILN_MEMORY_MANAGED);
    TEST_OK(kiln_array_prefetch(managed, 1, s));
    TEST_OK(kiln_array_advise(managed, KILN_ADVISE_READ_MOSTLY));
    TEST_FAILS_WITH(kiln_array_advise(managed, (kiln_memory_advice)9), KILN_ERR_INVALID_ARGUMENT,
                    "unknown advice 9");

    /* A view of managed memory has its own host address. */
    kiln_array *tail = NULL;
    TEST_OK(kiln_array_slice(managed, 0, 10, n, 1, &tail));
    TEST_OK(kiln_stream_synchronize(s));
    assert_ptr_equal(kiln_array_host_data(tail), (float *)kiln_array_host_data(managed) + 10);
    assert_int_equal(kiln_array_memory(tail), KILN_MEMORY_MANAGED);
    kiln_array_release(tail);

    /* Stream-ordered: made and used on s without a device-wide wait. */
    TEST_OK(kiln_pool_set_release_threshold(ctx, (uint64_t)64 << 20));
    TEST_OK(kiln_array_empty_async(ctx, KILN_FLOAT32, 1, &n, s, &pooled));
    assert_int_equal(kiln_array_memory(pooled), KILN_MEMORY_DEVICE);
    kiln_kernel *add = get_kernel(ctx, "add_into");
    TEST_OK(kiln_launch(add, KILN_DIM((uint32_t)((n + 255) / 256)), KILN_DIM(256), 0, s,
                        KILN_ARGS(kiln_arr(pooled), kiln_arr(mapped), kiln_i32((int)n), kiln_f32(1))));
    TEST_OK(kiln_stream_synchronize(s));
    expect_values(pooled, 0, 2, 1.5f);
    TEST_OK(kiln_pool_set_release_threshold(ctx, UINT64_MAX));

    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &device));
    TEST_FAILS_WITH(kiln_array_prefetch(device, 1, NULL), KILN_ERR_INVALID_ARGUMENT, "not managed memory");
    if (is_cuda()) assert_null(kiln_array_host_data(device));
    kiln_array_release(device);
    kiln_array_release(pooled);
    kiln_array_release(mapped);
    kiln_array_release(managed);
    kiln_kernel_release(add);
    kiln_stream_release(s);
}

/* ------------------------------------------------------------------ peers */

static void test_peer_copies(void **state) {
    kiln_context *ctx = *state;
    int can = -1;
    TEST_OK(kiln_device_can_access_peer(ctx, ctx, &can));
    assert_int_equal(can, 1);
    TEST_FAILS_WITH(kiln_device_can_access_peer(ctx, NULL, &can), KILN_ERR_INVALID_ARGUMENT, "NULL argument");
    /* Between two contexts of this backend, contiguous and strided. */
    kiln_context *other = test_open();
    int64_t m = 1000;
    kiln_array *from = filled(ctx, m, 3), *to = NULL, *half = NULL, *to_half = NULL;
    TEST_OK(kiln_array_empty(other, KILN_FLOAT32, 1, &m, &to));
    TEST_OK(kiln_array_assign(to, from));
    expect_values(to, 3, 1, 0);
    int64_t h = m / 2;
    TEST_OK(kiln_array_slice(from, 0, 0, m, 2, &half));
    TEST_OK(kiln_array_empty(other, KILN_FLOAT32, 1, &h, &to_half));
    TEST_OK(kiln_array_assign(to_half, half));
    float *got = test_read_array(to_half);
    for (int64_t i = 0; i < h; i++)
        if (got[i] != 3 + (float)(2 * i)) fail_msg("to_half[%lld] = %g", (long long)i, got[i]);
    free(got);
    TEST_FAILS_WITH(kiln_array_assign(to_half, from), KILN_ERR_SHAPE, "shapes differ");
    kiln_array_release(from);
    kiln_array_release(to);
    kiln_array_release(half);
    kiln_array_release(to_half);
    kiln_close(other);
    int devices = 0;
    const char *why = NULL;
    if (!is_cuda() || kiln_cuda_device_count(&devices, &why) != KILN_OK || devices < 2) {
        printf("test_peer_copies: copies between two GPUs skipped: %d CUDA device%s (%s)\n", devices,
               devices == 1 ? "" : "s", is_cuda() ? (why ? why : "one device") : "the CPU backend");
        return;
    }
    kiln_context *g0 = NULL, *g1 = NULL;
    TEST_OK(kiln_open(&g0, "cuda:0"));
    TEST_OK(kiln_open(&g1, "cuda:1"));
    int c01 = -1, c10 = -1;
    TEST_OK(kiln_device_can_access_peer(g0, g1, &c01));
    TEST_OK(kiln_device_can_access_peer(g1, g0, &c10));
    printf("test_peer_copies: peer access 0->1 %d, 1->0 %d\n", c01, c10);
    int64_t n = (int64_t)1 << 22;
    kiln_array *a = filled(g0, n, 7), *b = NULL;
    TEST_OK(kiln_array_empty(g1, KILN_FLOAT32, 1, &n, &b));
    kiln_stream *s1 = NULL;
    TEST_OK(kiln_stream_create(g1, &s1));
    TEST_OK(kiln_synchronize(g0));
    TEST_OK(kiln_array_copy_peer(b, a, s1));
    TEST_OK(kiln_stream_synchronize(s1));
    expect_values(b, 7, 1, 0);
    /* kiln_array_assign across the devices: direct, then strided (staged). */
    kiln_array *c = NULL, *every_other = NULL, *c_half = NULL;
    TEST_OK(kiln_array_empty(g1, KILN_FLOAT32, 1, &n, &c));
    TEST_OK(kiln_array_assign(c, a));
    expect_values(c, 7, 1, 0);
    int64_t half_n = n / 2;
    TEST_OK(kiln_array_slice(a, 0, 1, n, 2, &every_other));
    TEST_OK(kiln_array_empty(g1, KILN_FLOAT32, 1, &half_n, &c_half));
    TEST_OK(kiln_array_assign(c_half, every_other));
    float *odd = test_read_array(c_half);
    for (int64_t i = 0; i < half_n; i++)
        if (odd[i] != 7 + (float)(2 * i + 1)) fail_msg("c_half[%lld] = %g", (long long)i, odd[i]);
    free(odd);
    kiln_array_release(c);
    kiln_array_release(every_other);
    kiln_array_release(c_half);
    kiln_stream_release(s1);
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_close(g0);
    kiln_close(g1);
}

/* ------------------------------------------------------------------ graphs */

static void count_up(void *p) { atomic_fetch_add((atomic_int *)p, 1); }

static void test_graph_of_kernels_replays(void **state) {
    kiln_context *ctx = *state;
    kiln_stream *s = NULL;
    TEST_OK(kiln_stream_create(ctx, &s));
    kiln_kernel *add = get_kernel(ctx, "add_into");
    int64_t n = 3000;
    kiln_array *x = filled(ctx, n, 0), *y = filled(ctx, n, 0);
    atomic_int calls;
    atomic_init(&calls, 0);
    TEST_FAILS_WITH(kiln_graph_begin_capture(NULL), KILN_ERR_INVALID_ARGUMENT, "stream is NULL");
    kiln_graph *g = NULL;
    TEST_FAILS_WITH(kiln_graph_end_capture(s, &g), KILN_ERR_CAPTURE, "not capturing");
    TEST_OK(kiln_graph_begin_capture(s));
    TEST_FAILS_WITH(kiln_graph_begin_capture(s), KILN_ERR_CAPTURE, "already capturing");
    /* x += 1 ten times, ping-ponging through y; then a callback. */
    for (int i = 0; i < 5; i++) {
        TEST_OK(kiln_launch(add, KILN_DIM(12), KILN_DIM(256), 0, s,
                            KILN_ARGS(kiln_arr(y), kiln_arr(x), kiln_i32((int)n), kiln_f32(1))));
        TEST_OK(kiln_launch(add, KILN_DIM(12), KILN_DIM(256), 0, s,
                            KILN_ARGS(kiln_arr(x), kiln_arr(y), kiln_i32((int)n), kiln_f32(1))));
    }
    TEST_OK(kiln_stream_add_callback(s, count_up, &calls));
    /* Nothing ran yet. */
    assert_int_equal(atomic_load(&calls), 0);
    TEST_FAILS_WITH(kiln_stream_synchronize(s), KILN_ERR_CAPTURE, "capturing a graph");
    TEST_FAILS_WITH(kiln_stream_query(s), KILN_ERR_CAPTURE, "capturing a graph");
    TEST_OK(kiln_graph_end_capture(s, &g));
    assert_int_equal(kiln_graph_node_count(g), 11);
    expect_values(x, 0, 1, 0);
    for (int r = 0; r < 3; r++) TEST_OK(kiln_graph_launch(g, s));
    TEST_OK(kiln_stream_synchronize(s));
    expect_values(x, 0, 1, 30);
    assert_int_equal(atomic_load(&calls), 3);

    /* The same work with another scalar, captured again: update in place. */
    kiln_graph *g2 = NULL;
    TEST_OK(kiln_graph_begin_capture(s));
    for (int i = 0; i < 5; i++) {
        TEST_OK(kiln_launch(add, KILN_DIM(12), KILN_DIM(256), 0, s,
                            KILN_ARGS(kiln_arr(y), kiln_arr(x), kiln_i32((int)n), kiln_f32(-1))));
        TEST_OK(kiln_launch(add, KILN_DIM(12), KILN_DIM(256), 0, s,
                            KILN_ARGS(kiln_arr(x), kiln_arr(y), kiln_i32((int)n), kiln_f32(-1))));
    }
    TEST_OK(kiln_stream_add_callback(s, count_up, &calls));
    TEST_OK(kiln_graph_end_capture(s, &g2));
    TEST_OK(kiln_graph_update(g, g2));
    TEST_OK(kiln_graph_launch(g, NULL)); /* on the default stream (s is idle) */
    TEST_OK(kiln_synchronize(ctx));
    expect_values(x, 0, 1, 20);
    assert_int_equal(atomic_load(&calls), 4);
    /* Another topology (one launch): re-instantiated. */
    kiln_graph *g3 = NULL;
    TEST_OK(kiln_graph_begin_capture(s));
    TEST_OK(kiln_launch(add, KILN_DIM(12), KILN_DIM(256), 0, s,
                        KILN_ARGS(kiln_arr(x), kiln_arr(x), kiln_i32((int)n), kiln_f32(100))));
    TEST_OK(kiln_graph_end_capture(s, &g3));
    TEST_OK(kiln_graph_update(g, g3));
    assert_int_equal(kiln_graph_node_count(g), 1);
    TEST_OK(kiln_graph_launch(g, s));
    TEST_OK(kiln_stream_synchronize(s));
    expect_values(x, 0, 1, 120);
    kiln_graph_destroy(g3);
    kiln_graph_destroy(g2);
    kiln_graph_destroy(g);
    kiln_graph_destroy(NULL);
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_kernel_release(add);
    kiln_stream_release(s);
}

static void test_graph_of_ufunc_and_copies(void **state) {
    kiln_context *ctx = *state;
    kiln_stream *s = NULL;
    TEST_OK(kiln_stream_create(ctx, &s));
    kiln_ufunc *axpb = NULL;
    TEST_OK(kiln_vectorize(ctx, "axpb", "f4(f4,f4)", "x, a", "return 2 * x + a;", NULL, &axpb));
    /* A source no cache has seen: building it compiles. */
    char fresh[256];
    snprintf(fresh, sizeof fresh, "__global__ void fresh(float *x) { x[0] = %d.0f; } // %lld\n",
             (int)getpid(), (long long)time(NULL));
    int64_t n = 4096;
    kiln_array *x = filled(ctx, n, 1), *out = NULL;
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &out));
    /* The first call builds the kernel; the capture then replays it. */
    TEST_OK(kiln_call_ex(axpb, NULL, s, KILN_ARGS(kiln_arr(x), kiln_f32(0)), &out));
    float *pinned = NULL;
    TEST_OK(kiln_host_alloc(ctx, (size_t)n * 4, (void **)&pinned));
    for (int64_t i = 0; i < n; i++) pinned[i] = (float)(i % 7);
    TEST_OK(kiln_stream_synchronize(s));

    kiln_graph *g = NULL;
    TEST_OK(kiln_graph_begin_capture(s));
    TEST_OK(kiln_array_from_host_async(x, pinned, (size_t)n * 4, s));
    TEST_OK(kiln_call_ex(axpb, NULL, s, KILN_ARGS(kiln_arr(x), kiln_f32(3)), &out));
    TEST_OK(kiln_array_to_host_async(out, pinned, (size_t)n * 4, s));
    /* What a capture refuses, each with KILN_ERR_CAPTURE, the capture intact. */
    kiln_kernel *k = NULL;
    TEST_FAILS_WITH(kiln_kernel_from_source(ctx, fresh, "fresh", NULL, &k), KILN_ERR_CAPTURE,
                    "(a first call)");
    kiln_array *m = NULL;
    TEST_FAILS_WITH(kiln_array_empty_mapped(ctx, KILN_FLOAT32, 1, &n, &m), KILN_ERR_CAPTURE,
                    "kiln_array_empty_mapped while a stream of the context captures a graph");
    TEST_FAILS_WITH(kiln_array_empty_async(ctx, KILN_FLOAT32, 1, &n, s, &m), KILN_ERR_CAPTURE,
                    "on the capturing stream");
    /* Host-code libraries on the CPU run at once: refused (on CUDA the
     * vendor's kernels go on the stream and into the graph). */
    if (!is_cuda()) {
        kiln_rng *rng = NULL;
        TEST_OK(kiln_rng_create(ctx, KILN_RNG_PHILOX4_32_10, 7, &rng));
        TEST_OK(kiln_rng_set_stream(rng, s));
        TEST_FAILS_WITH(kiln_rng_uniform(rng, x), KILN_ERR_CAPTURE, "cannot be captured");
        kiln_rng_release(rng);
    }
    float *plain = malloc((size_t)n * 4);
    TEST_FAILS_WITH(kiln_array_to_host(out, plain, (size_t)n * 4), KILN_ERR_CAPTURE,
                    "used by a graph being captured; a host read");
    if (is_cuda())
        TEST_FAILS_WITH(kiln_array_to_host_async(out, plain, (size_t)n * 4, s), KILN_ERR_CAPTURE,
                        "the host buffer is pageable");
    free(plain);
    TEST_OK(kiln_graph_end_capture(s, &g));
    assert_true(kiln_graph_node_count(g) >= 3);
    /* Each launch: x <- pinned, out = 2x + 3, pinned <- out. */
    for (int r = 0; r < 2; r++) TEST_OK(kiln_graph_launch(g, s));
    TEST_OK(kiln_stream_synchronize(s));
    for (int64_t i = 0; i < n; i++) {
        float want = 2 * (2 * (float)(i % 7) + 3) + 3;
        if (pinned[i] != want) fail_msg("pinned[%lld] = %g, expected %g", (long long)i, pinned[i], want);
    }
    /* Outside a capture the fresh kernel compiles as usual. */
    TEST_OK(kiln_kernel_from_source(ctx, fresh, "fresh", NULL, &k));
    kiln_kernel_release(k);
    kiln_graph_destroy(g);
    kiln_host_free(ctx, pinned);
    kiln_array_release(x);
    kiln_array_release(out);
    kiln_ufunc_release(axpb);
    kiln_stream_release(s);
}

/* An array released mid-capture that the graph uses lives as long as the
 * graph (a scratch array made for one step), and a stream released
 * mid-capture drops its capture. */
static void test_release_during_capture(void **state) {
    kiln_context *ctx = *state;
    kiln_stream *s = NULL;
    TEST_OK(kiln_stream_create(ctx, &s));
    kiln_kernel *add = get_kernel(ctx, "add_into");
    int64_t n = 512;
    kiln_array *x = filled(ctx, n, 0), *scratch = filled(ctx, n, 0);
    TEST_OK(kiln_graph_begin_capture(s));
    TEST_OK(kiln_launch(add, KILN_DIM(2), KILN_DIM(256), 0, s,
                        KILN_ARGS(kiln_arr(scratch), kiln_arr(x), kiln_i32((int)n), kiln_f32(1))));
    TEST_OK(kiln_launch(add, KILN_DIM(2), KILN_DIM(256), 0, s,
                        KILN_ARGS(kiln_arr(x), kiln_arr(scratch), kiln_i32((int)n), kiln_f32(1))));
    kiln_array_release(scratch); /* the graph keeps its memory */
    kiln_graph *g = NULL;
    TEST_OK(kiln_graph_end_capture(s, &g));
    /* New arrays must not get the scratch's memory while the graph lives. */
    kiln_array *other = filled(ctx, n, 1000);
    for (int r = 0; r < 3; r++) TEST_OK(kiln_graph_launch(g, s));
    TEST_OK(kiln_stream_synchronize(s));
    expect_values(x, 0, 1, 6);
    expect_values(other, 1000, 1, 0);
    kiln_array_release(other);
    kiln_graph_destroy(g);
    /* x holds s (its last stream), so s lives on; a stream nothing holds
     * drops its capture with its last reference. */
    kiln_stream *lone = NULL;
    TEST_OK(kiln_stream_create(ctx, &lone));
    atomic_int calls;
    atomic_init(&calls, 0);
    TEST_OK(kiln_graph_begin_capture(lone));
    TEST_OK(kiln_stream_add_callback(lone, count_up, &calls));
    kiln_stream_release(lone); /* mid-capture */
    TEST_OK(kiln_synchronize(ctx));
    assert_int_equal(atomic_load(&calls), 0);
    kiln_stream_release(s);
    kiln_array_release(x);
    kiln_kernel_release(add);
}

/* A gufunc call whose kernel is built is captured like a ufunc call. */
static void test_graph_of_gufunc(void **state) {
    kiln_context *ctx = *state;
    kiln_stream *s = NULL;
    TEST_OK(kiln_stream_create(ctx, &s));
    kiln_gufunc *cum = NULL;
    TEST_OK(kiln_guvectorize(ctx, "cum_rows", "void(f4[:], f4[:])", "(n)->(n)", "x, out",
                             "float acc = 0; for (int i = 0; i < x.len; i++) { acc += x[i]; out[i] = acc; }",
                             NULL, &cum));
    int64_t shape[2] = {64, 8};
    float h[64 * 8];
    for (int i = 0; i < 64 * 8; i++) h[i] = (float)(i % 8);
    kiln_array *x = NULL, *out = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, h, sizeof h, &x));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &out));
    kiln_array *outs[1] = {out};
    TEST_OK(kiln_gufunc_call_ex(cum, s, NULL, KILN_ARGS(kiln_arr(x)), outs)); /* builds what it needs */
    TEST_OK(kiln_stream_synchronize(s));
    TEST_OK(kiln_jit_wait(ctx));
    TEST_OK(kiln_gufunc_call_ex(cum, s, NULL, KILN_ARGS(kiln_arr(x)), outs));
    TEST_OK(kiln_stream_synchronize(s));
    kiln_graph *g = NULL;
    TEST_OK(kiln_graph_begin_capture(s));
    /* x = cumulative sums of x, in place through out: out <- cum(x); x <- out */
    TEST_OK(kiln_gufunc_call_ex(cum, s, NULL, KILN_ARGS(kiln_arr(x)), outs));
    kiln_status st = kiln_gufunc_call_ex(cum, s, NULL, KILN_ARGS(kiln_arr(out)), (kiln_array *[]){x});
    kiln_graph *dummy = NULL;
    if (st != KILN_OK) {
        (void)kiln_graph_end_capture(s, &dummy);
        fail_msg("second gufunc call in the capture: %s: %s", kiln_status_string(st), kiln_last_error());
    }
    TEST_OK(kiln_graph_end_capture(s, &g));
    TEST_OK(kiln_graph_launch(g, s));
    TEST_OK(kiln_stream_synchronize(s));
    /* Row r of x: 0..7, then prefix sums twice. */
    float *got = test_read_array(x);
    for (int r = 0; r < 64; r++) {
        float once = 0, twice = 0;
        for (int i = 0; i < 8; i++) {
            once += (float)i;
            twice += once;
            if (got[r * 8 + i] != twice) fail_msg("x[%d][%d] = %g, expected %g", r, i, got[r * 8 + i], twice);
        }
    }
    free(got);
    kiln_graph_destroy(g);
    kiln_array_release(x);
    kiln_array_release(out);
    kiln_gufunc_release(cum);
    kiln_stream_release(s);
}

/* The profiler shows a graph launch as one row; the capture records nothing. */
static void test_profiler_shows_graph_launches(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    TEST_OK(kiln_profiler_start(ctx));
    kiln_stream *s = NULL;
    TEST_OK(kiln_stream_create(ctx, &s));
    kiln_kernel *add = get_kernel(ctx, "add_into");
    int64_t n = 256;
    kiln_array *x = filled(ctx, n, 0);
    kiln_graph *g = NULL;
    TEST_OK(kiln_graph_begin_capture(s));
    for (int i = 0; i < 2; i++)
        TEST_OK(kiln_launch(add, KILN_DIM(1), KILN_DIM(256), 0, s,
                            KILN_ARGS(kiln_arr(x), kiln_arr(x), kiln_i32((int)n), kiln_f32(1))));
    TEST_OK(kiln_graph_end_capture(s, &g));
    for (int i = 0; i < 3; i++) TEST_OK(kiln_graph_launch(g, s));
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    if (!test_contains(text, "graph (2 nodes)")) fail_msg("no graph row in:\n%s", text);
    if (test_contains(text, "add_into")) fail_msg("captured launches were recorded as run:\n%s", text);
    kiln_free(text);
    expect_values(x, 0, 1, 6);
    kiln_graph_destroy(g);
    kiln_array_release(x);
    kiln_kernel_release(add);
    kiln_stream_release(s);
    kiln_close(ctx);
}

/* Seed 001's streams workload ordered by events alone, and the graphs
 * demo's loop: the graph's final state equals the direct one bitwise. */
static void test_seed_streams_and_graph_steps(void **state) {
    kiln_context *ctx = *state;
    double err = -1;
    TEST_OK(kiln_example_streams_events(ctx, 300001, 8, &err));
    assert_true(err == 0);
    kiln_graph_demo_result r;
    TEST_OK(kiln_example_graph_steps(ctx, 5000, 3, 20, NULL, &r));
    assert_true(r.equal);
    assert_true(r.nodes >= 21); /* 20 kernels + the ufunc call's kernel(s) */
    assert_true(r.graph_us_node > 0 && r.direct_us_node > 0);
    printf("graph steps (%s): host per node direct %.2f us, graph %.2f us\n", test_target(), r.direct_us_node,
           r.graph_us_node);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_and_queries),
        cmocka_unit_test(test_stream_waits_for_event),
        cmocka_unit_test(test_host_callbacks_run_in_order),
        cmocka_unit_test(test_kernel_resources_and_occupancy),
        cmocka_unit_test(test_memory_kinds),
        cmocka_unit_test(test_peer_copies),
        cmocka_unit_test(test_graph_of_kernels_replays),
        cmocka_unit_test(test_graph_of_ufunc_and_copies),
        cmocka_unit_test(test_release_during_capture),
        cmocka_unit_test(test_graph_of_gufunc),
        cmocka_unit_test(test_profiler_shows_graph_launches),
        cmocka_unit_test(test_seed_streams_and_graph_steps),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
