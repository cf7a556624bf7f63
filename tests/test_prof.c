/* test_prof.c: the profiler (KILN_PROFILE, KILN_TRACE, kiln_profiler_*).
 *
 * A known sequence of compiles, allocations, copies and launches on the CPU
 * backend must show up in the summary with the right counts, names and bytes,
 * and in the trace (read back with jansson, a real JSON parser) in order with
 * the right arguments. The GPU path (pooled events, lazy resolution) is
 * checked against a fake backend whose events read a clock the test drives.
 * Bad input: an unwritable trace path warns and changes no result. On a real
 * GPU, the CUPTI and events timers must agree with CUDA events taken by the
 * test around the same ~1 ms kernels, within 5%, with launches the profiler
 * does not see (stopped) between them on the same stream.
 *
 * KILN_PROF_BENCH=1 adds a launch-overhead measurement (profiling off, and on
 * with each timer, taking turns). */
#include <dlfcn.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/context.h"
#include "prof/prof.h"
#include "prof/prof_internal.h" /* bench_recorder: the CUPTI timer on a fake context */
#include "test_support.h"

/* ------------------------------------------------------------------ helpers */

static void clear_profiler_env(void) {
    unsetenv("KILN_PROFILE");
    unsetenv("KILN_PROFILE_OUT");
    unsetenv("KILN_TRACE");
    unsetenv("KILN_PROFILE_TIMER");
}

/* A summary time ("2.8544ms", "787.77us", "864ns", "1.2000s") in ms. */
static double parse_time_ms(const char *text) {
    char *end = NULL;
    double v = strtod(text, &end);
    if (strcmp(end, "ns") == 0) return v * 1e-6;
    if (strcmp(end, "us") == 0) return v * 1e-3;
    if (strcmp(end, "ms") == 0) return v;
    if (strcmp(end, "s") == 0) return v * 1e3;
    fail_msg("\"%s\" is not a time", text);
    return 0;
}

/* stderr captured into a file between capture_begin and capture_end. */
typedef struct captured {
    int saved_fd;
    char path[64];
} captured;

static void capture_begin(captured *c) {
    fflush(stderr);
    snprintf(c->path, sizeof c->path, "/tmp/kiln-test-prof-XXXXXX");
    int fd = mkstemp(c->path);
    assert_true(fd >= 0);
    c->saved_fd = dup(2);
    dup2(fd, 2);
    close(fd);
}

static char *capture_end(captured *c) {
    fflush(stderr);
    dup2(c->saved_fd, 2);
    close(c->saved_fd);
    char *text = test_read_file(c->path);
    unlink(c->path);
    return text;
}

/* Column `from_end` (1: Max, 4: Calls, 5: Time) of the summary row whose
 * Name is exactly `name`, into buf; 0 if there is no such row.
 * Row: [Type] Time(%) Time Calls Avg Min Max  Name */
static int row_field(const char *summary, const char *name, int from_end, char *out, size_t cap) {
    size_t name_len = strlen(name);
    for (const char *line = summary; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > name_len + 2 && memcmp(line + len - name_len, name, name_len) == 0 &&
            memcmp(line + len - name_len - 2, "  ", 2) == 0) {
            char buf[512];
            size_t n = len - name_len < sizeof buf ? len - name_len : sizeof buf - 1;
            memcpy(buf, line, n);
            buf[n] = '\0';
            char *tok[16];
            int count = 0;
            for (char *t = strtok(buf, " "); t && count < 16; t = strtok(NULL, " ")) tok[count++] = t;
            if (count >= 6) {
                snprintf(out, cap, "%s", tok[count - from_end]);
                return 1;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

/* The Calls column of the row named `name`; -1 if absent. */
static long long row_calls(const char *summary, const char *name) {
    char calls[64];
    return row_field(summary, name, 4, calls, sizeof calls) ? atoll(calls) : -1;
}

/* The "Copies by direction" line for `dir` and `memory`: calls and bytes. */
static int copy_row_time(const char *summary, const char *dir, const char *memory, long long *calls,
                         unsigned long long *bytes, char time[32]) {
    const char *table = strstr(summary, "Copies by direction");
    if (!table) return 0;
    for (const char *line = strchr(table, '\n'); line && *line; line = strchr(line + 1, '\n')) {
        char d[32], m[32], avg[32];
        if (sscanf(line + 1, "%31s %31s %lld %llu %31s %31s", d, m, calls, bytes, avg, time) == 6 &&
            strcmp(d, dir) == 0 && strcmp(m, memory) == 0)
            return 1;
    }
    return 0;
}

static int copy_row(const char *summary, const char *dir, const char *memory, long long *calls,
                    unsigned long long *bytes) {
    char time[32];
    return copy_row_time(summary, dir, memory, calls, bytes, time);
}

/* ------------------------------------------------------------------ the CPU sequence */

static const char *kernels_src_fmt =
    "// test_prof %ld %d: a unique comment so the first compile misses the cache\n"
    "__global__ void scale(float *x, float a, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] *= a;\n"
    "}\n"
    "__global__ void offset(float *y, float b, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] += b;\n"
    "}\n";

enum { NX = 1024, NY = 256 };

typedef struct sequence_result {
    float x[NX], y[NY];
} sequence_result;

/* The known sequence: 1 compile (miss) + 1 compile (hit), 2 allocations
 * (4096 + 1024 bytes), 2 HtoD copies (4096, 1024), 3 launches of scale,
 * 2 of offset, 1 DtoH copy (4096) and the y read back through DtoH too
 * (1024). Checks the numbers. */
static void run_sequence(kiln_context *ctx, sequence_result *res) {
    static int runs;
    char src[1024];
    snprintf(src, sizeof src, kernels_src_fmt, (long)time(NULL), (int)getpid() * 1000 + runs++);
    kiln_module *m1 = NULL, *m2 = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "prof_seq.cu", NULL, &m1));
    TEST_OK(kiln_module_from_source(ctx, src, "prof_seq.cu", NULL, &m2));
    kiln_kernel *scale = NULL, *offset = NULL;
    TEST_OK(kiln_module_kernel(m1, "scale", &scale));
    TEST_OK(kiln_module_kernel(m2, "offset", &offset));

    float hx[NX], hy[NY];
    for (int i = 0; i < NX; i++) hx[i] = (float)i;
    for (int i = 0; i < NY; i++) hy[i] = (float)-i;
    int64_t sx[1] = {NX}, sy[1] = {NY};
    kiln_array *x = NULL, *y = NULL;
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, sx, &x));
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, sy, &y));
    TEST_OK(kiln_array_from_host_copy(x, hx, sizeof hx));
    TEST_OK(kiln_array_from_host_copy(y, hy, sizeof hy));
    for (int r = 0; r < 3; r++)
        TEST_OK(kiln_launch(scale, KILN_DIM(NX / 256), KILN_DIM(256), 0, NULL,
                            KILN_ARGS(kiln_arr(x), kiln_f32(2.0f), kiln_i32(NX))));
    for (int r = 0; r < 2; r++)
        TEST_OK(kiln_launch(offset, KILN_DIM(1), KILN_DIM(NY), 0, NULL,
                            KILN_ARGS(kiln_arr(y), kiln_f32(10.0f), kiln_i32(NY))));
    TEST_OK(kiln_array_to_host(x, res->x, sizeof res->x));
    TEST_OK(kiln_array_to_host(y, res->y, sizeof res->y));
    for (int i = 0; i < NX; i++) assert_true(res->x[i] == 8.0f * (float)i);
    for (int i = 0; i < NY; i++) assert_true(res->y[i] == 20.0f - (float)i);
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_kernel_release(scale);
    kiln_kernel_release(offset);
    kiln_module_release(m1);
    kiln_module_release(m2);
}

/* The backend under test ("cpu" unless KILN_TEST_TARGET says otherwise). */
static int testing_cpu(void) { return strcmp(test_target(), "cpu") == 0; }

static void check_summary(const char *s) {
    if (getenv("KILN_TEST_VERBOSE")) fputs(s, stdout);
    assert_true(test_contains(s, testing_cpu() ? "backend cpu" : "backend cuda"));
    assert_true(test_contains(s, testing_cpu() ? "CPU activities:" : "GPU activities:"));
    /* The header names the timer; on CUDA either timer must match every
     * operation to its device time (the counts below). */
    assert_true(test_contains(s, testing_cpu() ? "Timer: host" : "Timer: "));
    assert_false(test_contains(s, "CUPTI gave no times"));
    assert_int_equal(row_calls(s, "scale"), 3);
    assert_int_equal(row_calls(s, "offset"), 2);
    assert_int_equal(row_calls(s, "[memcpy HtoD]"), 2);
    assert_int_equal(row_calls(s, "[memcpy DtoH]"), 2);
    long long calls = 0;
    unsigned long long bytes = 0;
    assert_true(copy_row(s, "HtoD", "pageable", &calls, &bytes));
    assert_int_equal(calls, 2);
    assert_int_equal(bytes, 4 * (NX + NY));
    assert_true(copy_row(s, "DtoH", "pageable", &calls, &bytes));
    assert_int_equal(calls, 2);
    assert_int_equal(bytes, 4 * (NX + NY));
    /* The table's copy rows and the direction table agree on the time. */
    static const char *const dirs[2] = {"HtoD", "DtoH"};
    for (int d = 0; d < 2; d++) {
        char row_name[32], row_time[64], table_time[32];
        snprintf(row_name, sizeof row_name, "[memcpy %s]", dirs[d]);
        assert_true(row_field(s, row_name, 5, row_time, sizeof row_time));
        assert_true(copy_row_time(s, dirs[d], "pageable", &calls, &bytes, table_time));
        assert_string_equal(row_time, table_time);
    }
    assert_int_equal(row_calls(s, "[alloc]"), 2);
    assert_true(test_contains(s, "Allocations: 2, 5120 bytes"));
    assert_true(test_contains(s, "JIT: 2 modules: 1 compiled, 1 cache hit"));
    /* nvprof's columns, in nvprof's order. */
    assert_true(test_contains(s, "Type  Time(%)      Time     Calls       Avg       Min       Max  Name"));
    /* Most time first: 2 launches over 1024 elements... not guaranteed on a
     * loaded machine, so only check that every activity row has a percent. */
}

static void test_summary_counts_names_bytes(void **state) {
    (void)state;
    clear_profiler_env();
    kiln_context *ctx = test_open();
    TEST_OK(kiln_profiler_start(ctx));
    assert_true(kiln_profiler_enabled(ctx));
    sequence_result *res = calloc(1, sizeof *res);
    run_sequence(ctx, res);
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    check_summary(text);
    kiln_free(text);

    /* stop: nothing more is recorded; start: recording resumes. */
    TEST_OK(kiln_profiler_stop(ctx));
    assert_false(kiln_profiler_enabled(ctx));
    run_sequence(ctx, res);
    TEST_OK(kiln_profiler_summary(ctx, &text));
    assert_int_equal(row_calls(text, "scale"), 3);
    kiln_free(text);
    TEST_OK(kiln_profiler_reset(ctx));
    TEST_OK(kiln_profiler_start(ctx));
    run_sequence(ctx, res);
    TEST_OK(kiln_profiler_summary(ctx, &text));
    assert_int_equal(row_calls(text, "scale"), 3);
    assert_int_equal(row_calls(text, "offset"), 2);
    assert_true(test_contains(text, "JIT: 2 modules: 1 compiled, 1 cache hit"));
    kiln_free(text);
    free(res);
    kiln_close(ctx);
}

static json_t *events_of(json_t *root) {
    assert_true(json_is_object(root));
    json_t *events = json_object_get(root, "traceEvents");
    assert_true(json_is_array(events));
    return events;
}

static void check_trace(const char *path) {
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) fail_msg("%s: not valid JSON: line %d: %s", path, err.line, err.text);
    json_t *events = events_of(root);

    /* The work on the stream track, in order, with its arguments. */
    static const char *expected[] = {"[memcpy HtoD]", "[memcpy HtoD]", "scale",
                                     "scale",         "scale",         "offset",
                                     "offset",        "[memcpy DtoH]", "[memcpy DtoH]"};
    static const long long expected_bytes[] = {4 * NX, 4 * NY, 0, 0, 0, 0, 0, 4 * NX, 4 * NY};
    size_t seen = 0, launches = 0, allocs = 0, jits = 0, stream_names = 0, host_names = 0;
    double last_ts = -1;
    json_int_t stream_tid = -1;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *cat = json_string_value(json_object_get(e, "cat"));
        assert_non_null(ph);
        assert_non_null(name);
        assert_int_equal(json_integer_value(json_object_get(e, "pid")), getpid());
        json_t *args = json_object_get(e, "args");
        if (strcmp(ph, "M") == 0) {
            if (strcmp(name, "thread_name") == 0) {
                const char *label = json_string_value(json_object_get(args, "name"));
                if (test_contains(label, "stream 0")) stream_names++;
                if (test_contains(label, "host thread")) host_names++;
            }
            continue;
        }
        assert_string_equal(ph, "X");
        assert_true(json_is_number(json_object_get(e, "ts")));
        assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
        assert_non_null(cat);
        if (strcmp(cat, "api") == 0 && strcmp(name, "kiln_launch") == 0) launches++;
        if (strcmp(cat, "alloc") == 0) {
            allocs++;
            json_int_t b = json_integer_value(json_object_get(args, "bytes"));
            assert_true(b == 4 * NX || b == 4 * NY);
        }
        if (strcmp(cat, "jit") == 0) {
            const char *cache = json_string_value(json_object_get(args, "cache"));
            assert_string_equal(cache, jits == 0 ? "miss" : "hit");
            assert_string_equal(json_string_value(json_object_get(args, "module")), "prof_seq.cu");
            jits++;
        }
        if (strcmp(cat, "kernel") != 0 && strcmp(cat, "copy") != 0) continue;
        assert_true(seen < sizeof expected / sizeof *expected);
        assert_string_equal(name, expected[seen]);
        double ts = json_number_value(json_object_get(e, "ts"));
        assert_true(ts >= last_ts);
        last_ts = ts;
        json_int_t tid = json_integer_value(json_object_get(e, "tid"));
        if (stream_tid < 0) stream_tid = tid;
        assert_int_equal(tid, stream_tid); /* one stream: one track */
        if (strcmp(cat, "copy") == 0) {
            assert_int_equal(json_integer_value(json_object_get(args, "bytes")), expected_bytes[seen]);
            assert_string_equal(json_string_value(json_object_get(args, "memory")), "pageable");
        } else {
            json_t *grid = json_object_get(args, "grid"), *block = json_object_get(args, "block");
            assert_int_equal(json_array_size(grid), 3);
            assert_int_equal(json_array_size(block), 3);
            int is_scale = strcmp(name, "scale") == 0;
            assert_int_equal(json_integer_value(json_array_get(grid, 0)), is_scale ? NX / 256 : 1);
            assert_int_equal(json_integer_value(json_array_get(block, 0)), is_scale ? 256 : NY);
            assert_int_equal(json_integer_value(json_array_get(block, 1)), 1);
            const char *shapes = json_string_value(json_object_get(args, "args"));
            assert_non_null(shapes);
            char dim[32];
            snprintf(dim, sizeof dim, "%d", is_scale ? NX : NY);
            if (!test_contains(shapes, dim))
                fail_msg("kernel args \"%s\" lack the array's shape %s", shapes, dim);
        }
        seen++;
    }
    assert_int_equal(seen, sizeof expected / sizeof *expected);
    assert_int_equal(launches, 5);
    assert_int_equal(allocs, 2);
    assert_int_equal(jits, 2);
    assert_int_equal(stream_names, 1);
    assert_true(host_names >= 1);
    json_t *other = json_object_get(root, "otherData");
    assert_string_equal(json_string_value(json_object_get(other, "backend")), testing_cpu() ? "cpu" : "cuda");
    json_decref(root);
}

/* KILN_PROFILE + KILN_PROFILE_OUT + KILN_TRACE: everything written at kiln_close. */
static void test_env_summary_and_trace_at_close(void **state) {
    (void)state;
    char *dir = test_temp_dir("prof");
    assert_non_null(dir);
    char trace[1200], out[1200];
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    snprintf(out, sizeof out, "%s/summary.txt", dir);
    clear_profiler_env();
    setenv("KILN_PROFILE", "1", 1);
    setenv("KILN_PROFILE_OUT", out, 1);
    setenv("KILN_TRACE", trace, 1);
    kiln_context *ctx = test_open();
    clear_profiler_env();
    sequence_result *res = calloc(1, sizeof *res);
    run_sequence(ctx, res);
    free(res);
    kiln_close(ctx);

    char *summary = test_read_file(out);
    assert_non_null(summary);
    check_summary(summary);
    free(summary);
    check_trace(trace);
    /* The same trace on request, through the API. */
    ctx = test_open();
    TEST_OK(kiln_profiler_start(ctx));
    res = calloc(1, sizeof *res);
    run_sequence(ctx, res);
    free(res);
    char trace2[1300];
    snprintf(trace2, sizeof trace2, "%s/api.json", dir);
    TEST_OK(kiln_profiler_write_trace(ctx, trace2));
    check_trace(trace2);
    kiln_close(ctx);
    free(dir);
}

/* Bad input: the trace cannot be written. A warning, the right results, no crash. */
static void test_unwritable_trace_warns(void **state) {
    (void)state;
    clear_profiler_env();
    setenv("KILN_TRACE", "/nonexistent/dir/t.json", 1);
    captured cap;
    capture_begin(&cap);
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, test_target());
    sequence_result *res = calloc(1, sizeof *res);
    if (s == KILN_OK) run_sequence(ctx, res);
    kiln_close(ctx);
    char *err = capture_end(&cap);
    clear_profiler_env();
    TEST_OK(s);
    if (!test_contains(err, "warning") || !test_contains(err, "/nonexistent/dir/t.json"))
        fail_msg("no warning naming the trace path; stderr was: %s", err);
    free(err);

    /* Through the API: a status naming the path. */
    ctx = test_open();
    TEST_OK(kiln_profiler_start(ctx));
    run_sequence(ctx, res);
    TEST_FAILS_WITH(kiln_profiler_write_trace(ctx, "/nonexistent/dir/t.json"), KILN_ERR_IO,
                    "/nonexistent/dir/t.json");
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text)); /* the profile itself is intact */
    assert_int_equal(row_calls(text, "scale"), 3);
    kiln_free(text);
    kiln_close(ctx);

    /* Writable when the context opened, gone by kiln_close: warned at close. */
    char *dir = test_temp_dir("prof-gone");
    char sub[1200], trace[1300];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(trace, sizeof trace, "%s/t.json", sub);
    assert_int_equal(mkdir(sub, 0700), 0);
    setenv("KILN_TRACE", trace, 1);
    ctx = test_open();
    clear_profiler_env();
    run_sequence(ctx, res);
    assert_int_equal(rmdir(sub), 0);
    capture_begin(&cap);
    kiln_close(ctx);
    err = capture_end(&cap);
    if (!test_contains(err, "warning") || !test_contains(err, trace))
        fail_msg("no warning at close naming %s; stderr was: %s", trace, err);
    free(err);
    free(dir);
    free(res);
}

static void test_off_by_default(void **state) {
    (void)state;
    clear_profiler_env();
    kiln_context *ctx = test_open();
    assert_null(kiln_prof_head_of(ctx)); /* the hooks are one look, never called */
    assert_false(kiln_profiler_enabled(ctx));
    char *text = NULL;
    TEST_FAILS_WITH(kiln_profiler_summary(ctx, &text), KILN_ERR_INVALID_ARGUMENT, "KILN_PROFILE");
    TEST_OK(kiln_profiler_stop(ctx)); /* a no-op */
    kiln_close(ctx);
    TEST_FAILS_WITH(kiln_profiler_start(NULL), KILN_ERR_INVALID_ARGUMENT, "NULL");
    setenv("KILN_PROFILE", "0", 1);
    ctx = test_open();
    clear_profiler_env();
    assert_null(kiln_prof_head_of(ctx));
    kiln_close(ctx);
}

/* ------------------------------------------------------------------ fake GPU */

/* A backend whose events read a clock the test advances: checks event
 * pooling, lazy resolution, device times and bandwidth without a GPU. */
typedef struct fake_event {
    double t_ms;
} fake_event;

static double fake_clock_ms;
static int fake_events_live, fake_events_peak, fake_events_created;

static kiln_status fake_event_create(kiln_backend_state *st, kiln_backend_event **out) {
    (void)st;
    fake_event *e = calloc(1, sizeof *e);
    fake_events_live++;
    fake_events_created++;
    if (fake_events_live > fake_events_peak) fake_events_peak = fake_events_live;
    *out = (kiln_backend_event *)e;
    return KILN_OK;
}
static kiln_status fake_event_record(kiln_backend_state *st, kiln_backend_event *ev, kiln_backend_stream *s) {
    (void)st;
    (void)s;
    ((fake_event *)ev)->t_ms = fake_clock_ms;
    return KILN_OK;
}
static kiln_status fake_event_synchronize(kiln_backend_state *st, kiln_backend_event *ev) {
    (void)st;
    (void)ev;
    return KILN_OK;
}
static kiln_status fake_event_elapsed(kiln_backend_state *st, kiln_backend_event *a, kiln_backend_event *b,
                                      float *ms) {
    (void)st;
    *ms = (float)(((fake_event *)b)->t_ms - ((fake_event *)a)->t_ms);
    return KILN_OK;
}
static void fake_event_destroy(kiln_backend_state *st, kiln_backend_event *ev) {
    (void)st;
    fake_events_live--;
    free(ev);
}

static const kiln_backend_ops fake_gpu_ops = {
    .version = KILN_BACKEND_OPS_VERSION,
    .name = "fakegpu",
    .kind = KILN_BACKEND_CUDA,
    .event_create = fake_event_create,
    .event_record = fake_event_record,
    .event_synchronize = fake_event_synchronize,
    .event_elapsed_ms = fake_event_elapsed,
    .event_destroy = fake_event_destroy,
};
static const kiln_backend_ops fake_cpu_ops = {.version = KILN_BACKEND_OPS_VERSION,
                                              .name = "fakecpu",
                                              .kind = KILN_BACKEND_CPU,
                                              .caps = KILN_BACKEND_CAP_HOST_MEMORY |
                                                      KILN_BACKEND_CAP_HOST_EXECUTION};

static kiln_context *fake_context(const kiln_backend_ops *ops) {
    kiln_context *ctx = calloc(1, sizeof *ctx);
    ctx->ops = ops;
    snprintf(ctx->info.name, sizeof ctx->info.name, "Fake Device \"quoted\" \\ \x01");
    atomic_init(&ctx->dead, 0);
    return ctx;
}

static void test_gpu_events_pooled_and_resolved_lazily(void **state) {
    (void)state;
    fake_clock_ms = 0;
    fake_events_live = fake_events_peak = fake_events_created = 0;
    kiln_context *ctx = fake_context(&fake_gpu_ops);
    TEST_OK(kiln_profiler_start(ctx));
    kiln_launch_config cfg = {{80, 1, 1}, {128, 1, 1}, 0};
    kiln_backend_stream *s1 = (kiln_backend_stream *)(uintptr_t)0x1000;
    enum { LAUNCHES = 20000 };
    for (int i = 0; i < LAUNCHES; i++) {
        kiln_prof_op *op = kiln_prof_kernel_begin(ctx, i % 2 ? "odd" : "even", &cfg, NULL, "f4(8,)");
        assert_non_null(op);
        fake_clock_ms += i % 2 ? 3.0 : 1.0; /* device time, whatever the host took */
        kiln_prof_end(ctx, op);
        if (i % 100 == 0) {
            op = kiln_prof_copy_begin(ctx, KILN_COPY_HOST_TO_DEVICE, 1000000, 1, s1);
            fake_clock_ms += 0.5; /* 1 MB in 0.5 ms: 2 GB/s */
            kiln_prof_end(ctx, op);
        }
    }
    /* Events are reused: the pool holds the unresolved window, not every launch. */
    assert_true(fake_events_created < 2 * 7 * 1024 + 2 * 128);
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    if (getenv("KILN_TEST_VERBOSE")) fputs(text, stdout);
    assert_true(test_contains(text, "GPU activities:"));
    assert_true(test_contains(text, "backend fakegpu"));
    assert_true(test_contains(text, "Timer: events")); /* CUPTI sees only kiln's CUDA backend */
    assert_int_equal(row_calls(text, "odd"), LAUNCHES / 2);
    assert_int_equal(row_calls(text, "even"), LAUNCHES / 2);
    assert_int_equal(row_calls(text, "[memcpy HtoD]"), LAUNCHES / 100);
    /* odd: 10000 x 3 ms = 30 s, avg 3 ms: the device times, not the host's. */
    assert_true(test_contains(text, "30.000s     10000  3.0000ms  3.0000ms  3.0000ms  odd"));
    long long calls = 0;
    unsigned long long bytes = 0;
    assert_true(copy_row(text, "HtoD", "pinned", &calls, &bytes));
    assert_int_equal(bytes, 1000000ull * (LAUNCHES / 100));
    assert_true(test_contains(text, "2.00\n")); /* GB/s */
    kiln_free(text);

    /* The trace escapes the device name and puts the copies on their own track. */
    char *dir = test_temp_dir("prof-fake");
    char path[1200];
    snprintf(path, sizeof path, "%s/fake.json", dir);
    TEST_OK(kiln_profiler_write_trace(ctx, path));
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) fail_msg("fake trace is not JSON: line %d: %s", err.line, err.text);
    json_t *events = events_of(root);
    size_t i, kernels = 0, copies = 0;
    json_int_t kernel_tid = -1, copy_tid = -1;
    json_t *e;
    double prev_ts = -1;
    json_array_foreach(events, i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat) continue;
        json_int_t tid = json_integer_value(json_object_get(e, "tid"));
        if (strcmp(cat, "kernel") == 0) {
            kernels++;
            kernel_tid = tid;
            double ts = json_number_value(json_object_get(e, "ts"));
            assert_true(ts >= prev_ts);
            prev_ts = ts;
            double dur = json_number_value(json_object_get(e, "dur"));
            assert_true(dur == 1000.0 || dur == 3000.0); /* microseconds */
        } else if (strcmp(cat, "copy") == 0) {
            copies++;
            copy_tid = tid;
            assert_true(json_number_value(json_object_get(json_object_get(e, "args"), "GB/s")) == 2.0);
        }
    }
    assert_int_equal(kernels, LAUNCHES);
    assert_int_equal(copies, LAUNCHES / 100);
    assert_true(kernel_tid != copy_tid);
    assert_string_equal(json_string_value(json_object_get(json_object_get(root, "otherData"), "device")),
                        "Fake Device \"quoted\" \\ \x01");
    json_decref(root);
    free(dir);

    kiln_prof_detach(ctx);
    assert_int_equal(fake_events_live, 0); /* every pooled event destroyed */
    free(ctx);
}

/* kiln_launch has the profiler describe its arguments only for kinds of
 * arguments it has not seen lately (by key): launches of one kernel with
 * arrays of other shapes, and back, still show each launch's own shapes. */
static void test_launch_args_described_per_shape(void **state) {
    (void)state;
    clear_profiler_env();
    kiln_context *ctx = test_open();
    TEST_OK(kiln_profiler_start(ctx));
    char src[1024];
    snprintf(src, sizeof src, kernels_src_fmt, 7L, 7);
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "scale", NULL, &k));
    static const int64_t shapes[][2] = {{8, 0}, {16, 0}, {8, 0}, {2, 4}, {16, 0}};
    static const char *const want[] = {"f4(8,), f4, i4", "f4(16,), f4, i4", "f4(8,), f4, i4",
                                       "f4(2, 4), f4, i4", "f4(16,), f4, i4"};
    enum { LAUNCHES = sizeof shapes / sizeof *shapes };
    for (int i = 0; i < LAUNCHES; i++) {
        kiln_array *x = NULL;
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, shapes[i][1] ? 2 : 1, shapes[i], &x));
        TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(8), 0, NULL,
                            KILN_ARGS(kiln_arr(x), kiln_f32(2.0f), kiln_i32(8))));
        kiln_array_release(x);
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/kiln-test-prof-args-%d.json", (int)getpid());
    TEST_OK(kiln_profiler_write_trace(ctx, path));
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) fail_msg("%s: not valid JSON: line %d: %s", path, err.line, err.text);
    size_t i, seen = 0;
    json_t *e;
    json_array_foreach(events_of(root), i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat || strcmp(cat, "kernel") != 0) continue;
        assert_true(seen < LAUNCHES);
        const char *args = json_string_value(json_object_get(json_object_get(e, "args"), "args"));
        assert_non_null(args);
        assert_string_equal(args, want[seen]);
        seen++;
    }
    assert_int_equal(seen, LAUNCHES);
    json_decref(root);
    unlink(path);
    kiln_kernel_release(k);
    kiln_close(ctx);
}

typedef struct thread_arg {
    kiln_context *ctx;
    int launches;
} thread_arg;

static void describe_thread_args(const void *data, char *buf, size_t cap) {
    snprintf(buf, cap, "i4(%d,)", *(const int *)data);
}

/* Odd launches as kiln_launch makes them (arguments described by key, a
 * few kinds shared by the threads), even ones with no arguments. */
static void *launch_from_thread(void *p) {
    thread_arg *a = p;
    kiln_launch_config cfg = {{1, 1, 1}, {1, 1, 1}, 0};
    for (int i = 0; i < a->launches; i++) {
        int kind = i % 5;
        const kiln_prof_args args = {(uint64_t)kind + 1, describe_thread_args, &kind};
        kiln_prof_op *op = i % 2 ? kiln_prof_launch_begin(a->ctx, "threaded", &cfg, NULL, &args)
                                 : kiln_prof_kernel_begin(a->ctx, "threaded", &cfg, NULL, NULL);
        kiln_prof_end(a->ctx, op);
        if (i % 10 == 0) kiln_prof_alloc(a->ctx, 64, 0.001);
    }
    return NULL;
}

static void test_launches_from_many_threads(void **state) {
    (void)state;
    kiln_context *ctx = fake_context(&fake_cpu_ops);
    TEST_OK(kiln_profiler_start(ctx));
    enum { THREADS = 4, EACH = 25000 };
    pthread_t t[THREADS];
    thread_arg arg = {ctx, EACH};
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, launch_from_thread, &arg), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    assert_int_equal(row_calls(text, "threaded"), THREADS * EACH);
    assert_int_equal(row_calls(text, "[alloc]"), THREADS * EACH / 10);
    kiln_free(text);
    kiln_prof_detach(ctx);
    free(ctx);
}

/* KILN_PROFILE_TIMER: a bad value warns; cupti where it cannot be used warns
 * and falls back to events; events is taken as asked. Fake GPU: no device. */
static void test_timer_choice(void **state) {
    (void)state;
    static const struct {
        const char *value;
        const char *warning; /* NULL: none */
        const char *header;
    } cases[] = {
        {"events", NULL,
         "Timer: events (device time between events recorded around each operation; "
         "KILN_PROFILE_TIMER=events)"},
        {"cupti", "KILN_PROFILE_TIMER=cupti: CUPTI times only kiln's CUDA backend; timing with events",
         "Timer: events"},
        {"bogus", "KILN_PROFILE_TIMER=bogus is neither events nor cupti", "Timer: events"},
        {"auto", NULL, "Timer: events"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        clear_profiler_env();
        setenv("KILN_PROFILE_TIMER", cases[i].value, 1);
        kiln_context *ctx = fake_context(&fake_gpu_ops);
        captured cap;
        capture_begin(&cap);
        TEST_OK(kiln_profiler_start(ctx));
        char *err = capture_end(&cap);
        clear_profiler_env();
        if (cases[i].warning ? !test_contains(err, cases[i].warning) : test_contains(err, "warning"))
            fail_msg("KILN_PROFILE_TIMER=%s: stderr was \"%s\"", cases[i].value, err);
        free(err);
        kiln_launch_config cfg = {{1, 1, 1}, {1, 1, 1}, 0};
        kiln_prof_end(ctx, kiln_prof_kernel_begin(ctx, "k", &cfg, NULL, NULL));
        char *text = NULL;
        TEST_OK(kiln_profiler_summary(ctx, &text));
        if (!test_contains(text, cases[i].header))
            fail_msg("KILN_PROFILE_TIMER=%s: no \"%s\" in\n%s", cases[i].value, cases[i].header, text);
        assert_int_equal(row_calls(text, "k"), 1);
        kiln_free(text);
        kiln_prof_detach(ctx);
        free(ctx);
    }
    /* The CPU backend times on the host whatever is asked. */
    setenv("KILN_PROFILE_TIMER", "cupti", 1);
    kiln_context *ctx = fake_context(&fake_cpu_ops);
    captured cap;
    capture_begin(&cap);
    TEST_OK(kiln_profiler_start(ctx));
    char *err = capture_end(&cap);
    clear_profiler_env();
    assert_true(test_contains(err, "the CPU backend times on the host"));
    free(err);
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    assert_true(test_contains(text, "Timer: host (wall time of each call; the CPU backend runs the work"));
    kiln_free(text);
    kiln_prof_detach(ctx);
    free(ctx);
}

/* ------------------------------------------------------------------ real GPU */

static const char *spin_src =
    "// test_prof spin: dependent FMAs, about the same time in every thread\n"
    "__global__ void spin(float *x, int iters) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float v = x[i];\n"
    "    for (int k = 0; k < iters; k++) v = v * 0.9999f + 0.0001f;\n"
    "    x[i] = v;\n"
    "}\n"
    "__global__ void bump(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f; }\n";

enum { SPIN_BLOCKS = 528, SPIN_THREADS = 256, SPIN_LAUNCHES = 30 };

typedef struct spin_run {
    double events_ms; /* the test's own CUDA events around each launch, summed */
    double prof_ms;   /* the profiler's total for "spin" */
    long long calls;
    char timer[64]; /* the summary's "Timer: ..." word */
} spin_run;

/* `launches` launches of spin, each between two of the test's events; the
 * sum of their times in ms. With `bump`, each comes after two short launches
 * the profiler does not see (it is stopped for them), on the same stream: a
 * bump and a one-block spin, which CUPTI's records show but which must not
 * be taken for the profiled spin's. */
static double spin_launches(kiln_context *ctx, kiln_kernel *k, kiln_kernel *bump, kiln_array *x,
                            kiln_event **ev, int launches, int iters) {
    for (int i = 0; i < launches; i++) {
        if (bump) {
            TEST_OK(kiln_profiler_stop(ctx));
            TEST_OK(kiln_launch(bump, KILN_DIM(SPIN_BLOCKS), KILN_DIM(SPIN_THREADS), 0, NULL,
                                KILN_ARGS(kiln_arr(x))));
            TEST_OK(
                kiln_launch(k, KILN_DIM(1), KILN_DIM(32), 0, NULL, KILN_ARGS(kiln_arr(x), kiln_i32(100))));
            TEST_OK(kiln_profiler_start(ctx));
        }
        TEST_OK(kiln_event_record(ev[2 * i], NULL));
        TEST_OK(kiln_launch(k, KILN_DIM(SPIN_BLOCKS), KILN_DIM(SPIN_THREADS), 0, NULL,
                            KILN_ARGS(kiln_arr(x), kiln_i32(iters))));
        TEST_OK(kiln_event_record(ev[2 * i + 1], NULL));
    }
    TEST_OK(kiln_synchronize(ctx));
    double total = 0;
    for (int i = 0; i < launches; i++) {
        float ms = 0;
        TEST_OK(kiln_event_elapsed_ms(ev[2 * i], ev[2 * i + 1], &ms));
        total += ms;
    }
    return total;
}

/* SPIN_LAUNCHES launches of a ~1 ms kernel under the profiler with the given
 * timer, each between two CUDA events of the test's own. *iters: 0 to
 * calibrate to ~1 ms first. */
static void run_spin(const char *timer, int *iters, spin_run *out) {
    clear_profiler_env();
    setenv("KILN_PROFILE_TIMER", timer, 1);
    kiln_context *ctx = test_open();
    TEST_OK(kiln_profiler_start(ctx));
    clear_profiler_env();
    kiln_kernel *k = NULL, *bump = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, spin_src, "spin", NULL, &k));
    TEST_OK(kiln_kernel_from_source(ctx, spin_src, "bump", NULL, &bump));
    int64_t shape[1] = {SPIN_BLOCKS * SPIN_THREADS};
    kiln_array *x = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, shape, &x));
    kiln_event *ev[2 * SPIN_LAUNCHES];
    for (int i = 0; i < 2 * SPIN_LAUNCHES; i++) TEST_OK(kiln_event_create(ctx, &ev[i]));
    if (*iters == 0) /* calibrate: 2^16 iterations take t ms */
        *iters = (int)((1 << 16) / fmax(spin_launches(ctx, k, NULL, x, ev, 1, 1 << 16), 1e-3));
    TEST_OK(kiln_profiler_reset(ctx));
    out->events_ms = spin_launches(ctx, k, bump, x, ev, SPIN_LAUNCHES, *iters);
    char *text = NULL, field[64];
    TEST_OK(kiln_profiler_summary(ctx, &text));
    if (getenv("KILN_TEST_VERBOSE")) fputs(text, stdout);
    out->calls = row_calls(text, "spin");
    out->prof_ms = row_field(text, "spin", 5, field, sizeof field) ? parse_time_ms(field) : -1;
    const char *t = strstr(text, "Timer: ");
    assert_non_null(t);
    snprintf(out->timer, sizeof out->timer, "%.*s", (int)strcspn(t + 7, " \n"), t + 7);
    kiln_free(text);
    for (int i = 0; i < 2 * SPIN_LAUNCHES; i++) kiln_event_release(ev[i]);
    kiln_array_release(x);
    kiln_kernel_release(k);
    kiln_kernel_release(bump);
    kiln_close(ctx);
}

/* "profiled kernel times agree with CUDA-event timing of the same kernels
 * within 5%", for both timers. CUPTI missing is reported, not failed: the
 * events timer is the designed fallback. */
static void test_gpu_timers_agree_with_events(void **state) {
    (void)state;
    if (testing_cpu()) skip();
    int iters = 0;
    static const char *const timers[] = {"cupti", "events"};
    for (int t = 0; t < 2; t++) {
        spin_run run = {0};
        captured cap;
        capture_begin(&cap);
        run_spin(timers[t], &iters, &run);
        char *err = capture_end(&cap);
        if (strcmp(run.timer, timers[t]) != 0) {
            printf("KILN_PROFILE_TIMER=%s gave the %s timer: %s", timers[t], run.timer, err);
            assert_string_equal(timers[t], "cupti"); /* only CUPTI may be missing */
        }
        free(err);
        assert_int_equal(run.calls, SPIN_LAUNCHES);
        double diff = (run.prof_ms - run.events_ms) / run.events_ms;
        printf("timer %-6s: %d x spin(%d iters): profiler %.4f ms, CUDA events %.4f ms, %+.2f%%\n", run.timer,
               SPIN_LAUNCHES, iters, run.prof_ms, run.events_ms, 100.0 * diff);
        assert_true(run.events_ms > 0.3 * SPIN_LAUNCHES); /* really ~1 ms kernels */
        assert_true(diff < 0.05 && diff > -0.05);
    }
}

/* ------------------------------------------------------------------ overhead */

typedef struct bench_ctx {
    kiln_context *ctx;
    kiln_kernel *k;
    kiln_array *x;
} bench_ctx;

static double launch_batch_us(bench_ctx *b, int n) {
    double t0 = kiln_now_ms();
    for (int i = 0; i < n; i++)
        TEST_OK(kiln_launch(b->k, KILN_DIM(1), KILN_DIM(1), 0, NULL,
                            KILN_ARGS(kiln_arr(b->x), kiln_f32(1.0f), kiln_i32(1))));
    TEST_OK(kiln_synchronize(b->ctx));
    return (kiln_now_ms() - t0) * 1e3 / n;
}

static void bench_open(bench_ctx *b, const char *profile, const char *timer, int start, const char *src) {
    clear_profiler_env();
    if (profile) setenv("KILN_PROFILE", "1", 1);
    if (profile) setenv("KILN_PROFILE_OUT", "/dev/null", 1);
    if (timer) setenv("KILN_PROFILE_TIMER", timer, 1);
    /* The CPU backend warns that it times on the host whatever is asked. */
    captured cap;
    capture_begin(&cap);
    b->ctx = test_open();
    if (start) TEST_OK(kiln_profiler_start(b->ctx));
    free(capture_end(&cap));
    clear_profiler_env();
    TEST_OK(kiln_kernel_from_source(b->ctx, src, "scale", NULL, &b->k));
    int64_t shape[1] = {1};
    TEST_OK(kiln_array_empty(b->ctx, KILN_FLOAT32, 1, shape, &b->x));
}

static void bench_close(bench_ctx *b) {
    kiln_array_release(b->x);
    kiln_kernel_release(b->k);
    kiln_close(b->ctx);
    memset(b, 0, sizeof *b);
}

/* libcupti's activity switch, driven by the test itself on a context with
 * profiling off: what CUPTI alone costs a launch, the floor of CUPTI mode.
 * Only once kiln has loaded libcupti (its buffer callbacks stay registered). */
typedef int (*cupti_int_fn)(int);
typedef void (*cupti_callback_fn)(void *, int, uint32_t, const void *);
typedef int (*cupti_subscribe_fn)(void **, cupti_callback_fn, void *);
typedef int (*cupti_unsubscribe_fn)(void *);
typedef struct raw_cupti {
    cupti_int_fn enable, disable;
    cupti_subscribe_fn subscribe;
    cupti_unsubscribe_fn unsubscribe;
} raw_cupti;

static void raw_cupti_no_callback(void *userdata, int domain, uint32_t cbid, const void *cbdata) {
    (void)userdata, (void)domain, (void)cbid, (void)cbdata;
}

static int raw_cupti_load(raw_cupti *c) {
    void *lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcupti.so.12", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return 0;
    void *f[4] = {dlsym(lib, "cuptiActivityEnable"), dlsym(lib, "cuptiActivityDisable"),
                  dlsym(lib, "cuptiSubscribe"), dlsym(lib, "cuptiUnsubscribe")};
    if (!f[0] || !f[1] || !f[2] || !f[3]) return 0;
    memcpy(&c->enable, &f[0], sizeof f[0]);
    memcpy(&c->disable, &f[1], sizeof f[1]);
    memcpy(&c->subscribe, &f[2], sizeof f[2]);
    memcpy(&c->unsubscribe, &f[3], sizeof f[3]);
    return 1;
}

static void describe_bench_args(const void *data, char *buf, size_t cap) {
    (void)data;
    snprintf(buf, cap, "f4(1,), f4, i4");
}

/* The fake CUDA backend's extra for device timers: no driver call fails, no
 * stream is destroyed; called on the launch path as the real one is. */
static unsigned bench_no_calls(void) { return 0; }
static const kiln_backend_prof bench_backend_prof = {bench_no_calls, bench_no_calls, NULL, NULL};
static const void *bench_get_proc(const char *name) {
    return strcmp(name, KILN_BACKEND_PROC_PROF) == 0 ? &bench_backend_prof : NULL;
}
/* Host execution: the profiler chooses the host timer and never loads
 * CUPTI for it; bench_recorder then switches it to the CUPTI timer. */
static const kiln_backend_ops bench_cupti_ops = {.version = KILN_BACKEND_OPS_VERSION,
                                                 .name = "fakecupti",
                                                 .kind = KILN_BACKEND_CPU,
                                                 .caps = KILN_BACKEND_CAP_HOST_MEMORY |
                                                         KILN_BACKEND_CAP_HOST_EXECUTION,
                                                 .get_proc_address = bench_get_proc};

/* One batch of 10000 begin/end pairs, in us per pair; `lazy`: the
 * arguments by key (as kiln_launch gives them), else as text. */
static double bench_recorder_batch(kiln_context *ctx, int lazy) {
    kiln_launch_config cfg = {{1, 1, 1}, {1, 1, 1}, 0};
    const kiln_prof_args args = {0x5eed, describe_bench_args, NULL};
    double t0 = kiln_now_ms();
    for (int i = 0; i < 10000; i++)
        kiln_prof_end(ctx, lazy ? kiln_prof_launch_begin(ctx, "scale", &cfg, NULL, &args)
                                : kiln_prof_kernel_begin(ctx, "scale", &cfg, NULL, "f4(1,), f4, i4"));
    return (kiln_now_ms() - t0) * 1e3 / 10000;
}

/* The recorder's own host cost per kernel begin/end pair (no backend work),
 * records kept for a trace: with the arguments' description given as text
 * (interned every time) and as kiln_launch gives it (a key, described once);
 * then summary only (KILN_PROFILE=1: records not kept) under the CUPTI
 * timer's launch path (coarse start clock, no end clock, the stream's CUPTI
 * id, the backend's failed-call count). The fake context has no CUPTI ring
 * to match against: it is marked dead, so the resolver gives each record
 * host times at once (CUPTI's matching, done every 1024 launches on a GPU,
 * is not measured). */
static void bench_recorder(void) {
    kiln_context *ctx = fake_context(&fake_cpu_ops);
    TEST_OK(kiln_profiler_start(ctx));
    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r < 40; r++) /* the two kinds take turns; 400000 records, all kept */
        best[r % 2] = fmin(best[r % 2], bench_recorder_batch(ctx, r % 2));
    printf("  %-26s %8.3f us/launch\n", "recorder, args as text", best[0]);
    printf("  %-26s %8.3f us/launch\n", "recorder, args by key", best[1]);
    kiln_prof_detach(ctx);
    free(ctx);

    ctx = fake_context(&bench_cupti_ops);
    TEST_OK(kiln_profiler_start(ctx));
    kiln_prof *p = kiln_prof_of(ctx);
    kiln_prof_set_retain(p, 0);
    p->timer = PROF_TIMER_CUPTI;
    p->cupti_context_id = PROF_NO_ID;
    atomic_store(&ctx->dead, 1);
    for (int r = 0; r < 20; r++) best[2] = fmin(best[2], bench_recorder_batch(ctx, 1));
    printf("  %-26s %8.3f us/launch\n", "recorder, cupti summary", best[2]);
    p->timer = PROF_TIMER_HOST; /* it holds no CUPTI session to release */
    kiln_prof_detach(ctx);
    free(ctx);
}

/* Not a test: launch overhead with profiling off, and on with each timer,
 * summary only (KILN_PROFILE=1) and with records kept for a trace
 * (kiln_profiler_start), and CUPTI's activity alone. The modes take turns,
 * a few batches each per round in an order that rotates every round, so that
 * machine noise and warm-up hit all alike; the best batch of each counts.
 * CUPTI is process-wide, so while a CUPTI mode is measured no other is on:
 * its contexts are opened and closed within their turn. */
enum {
    MODE_OFF,
    MODE_EVENTS_ENV,
    MODE_EVENTS_START,
    MODE_CUPTI_ENV,
    MODE_CUPTI_START,
    MODE_RAW_CUPTI,
    MODE_RAW_SUBSCRIBED, /* raw CUPTI with a subscriber that enables no callback, as kiln's */
    MODES
};
enum { BENCH_ROUNDS = 5, BENCH_BATCHES = 12, BENCH_BATCH = 2000 };

static void test_launch_overhead_bench(void **state) {
    (void)state;
    if (!getenv("KILN_PROF_BENCH")) skip();
    static const char *const label[MODES] = {
        "profiling off",        "events KILN_PROFILE=1",   "events profiler_start", "cupti KILN_PROFILE=1",
        "cupti profiler_start", "raw CUPTI activity only", "raw CUPTI + subscriber"};
    char src[1024];
    snprintf(src, sizeof src, kernels_src_fmt, 0L, 0);
    bench_ctx b[MODES];
    memset(b, 0, sizeof b);
    bench_open(&b[MODE_OFF], NULL, NULL, 0, src); /* also measures the raw CUPTI mode */
    bench_open(&b[MODE_EVENTS_ENV], "1", "events", 0, src);
    bench_open(&b[MODE_EVENTS_START], NULL, "events", 1, src);
    double best[MODES];
    int measured[MODES] = {0};
    for (int m = 0; m < MODES; m++) best[m] = 1e30;
    for (int m = MODE_OFF; m <= MODE_EVENTS_START; m++)
        (void)launch_batch_us(&b[m], BENCH_BATCH); /* warm up */
    long long cupti_calls = -1, cupti_lost = -1;
    for (int round = 0; round < BENCH_ROUNDS; round++)
        for (int turn = 0; turn < MODES; turn++) {
            int m = (turn + round) % MODES;
            bench_ctx *run = &b[m];
            raw_cupti raw = {NULL, NULL, NULL, NULL};
            void *subscriber = NULL;
            if (m == MODE_RAW_CUPTI || m == MODE_RAW_SUBSCRIBED) {
                /* GPU only, once kiln has loaded libcupti */
                if (testing_cpu() || !raw_cupti_load(&raw) || raw.enable(10) != 0 || raw.enable(1) != 0)
                    continue;
                if (m == MODE_RAW_SUBSCRIBED && raw.subscribe(&subscriber, raw_cupti_no_callback, NULL) != 0)
                    subscriber = NULL;
                run = &b[MODE_OFF];
            } else if (m == MODE_CUPTI_ENV || m == MODE_CUPTI_START) {
                bench_open(run, m == MODE_CUPTI_ENV ? "1" : NULL, "cupti", m == MODE_CUPTI_START, src);
            }
            (void)launch_batch_us(run, BENCH_BATCH); /* warm up */
            for (int i = 0; i < BENCH_BATCHES; i++) {
                double us = launch_batch_us(run, BENCH_BATCH);
                if (us < best[m]) best[m] = us;
            }
            measured[m] = 1;
            if (m == MODE_RAW_CUPTI || m == MODE_RAW_SUBSCRIBED) {
                if (subscriber) (void)raw.unsubscribe(subscriber);
                (void)raw.disable(10);
                (void)raw.disable(1);
            } else if (m == MODE_CUPTI_ENV || m == MODE_CUPTI_START) {
                if (m == MODE_CUPTI_START && round == BENCH_ROUNDS - 1) {
                    /* Every launch must have found its CUPTI record. */
                    char *text = NULL;
                    TEST_OK(kiln_profiler_summary(run->ctx, &text));
                    cupti_calls = row_calls(text, "scale");
                    const char *lost = strstr(text, "CUPTI gave no times for ");
                    cupti_lost = lost ? atoll(lost + strlen("CUPTI gave no times for ")) : 0;
                    kiln_free(text);
                }
                bench_close(run);
            }
        }
    printf("launch overhead, %s backend, 1-thread kernel, 3 args; best of %d batches of %d per mode, "
           "in %d rounds taking turns:\n",
           test_target(), BENCH_ROUNDS * BENCH_BATCHES, BENCH_BATCH, BENCH_ROUNDS);
    for (int m = 0; m < MODES; m++)
        if (measured[m])
            printf("  %-26s %8.3f us/launch (%+.1f%%)\n", label[m], best[m],
                   100.0 * (best[m] - best[MODE_OFF]) / best[MODE_OFF]);
    if (cupti_calls >= 0)
        printf("  cupti profiler_start: %lld launches profiled, %lld without CUPTI times\n", cupti_calls,
               cupti_lost);
    bench_recorder();
    for (int m = MODE_OFF; m <= MODE_EVENTS_START; m++) bench_close(&b[m]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_by_default),
        cmocka_unit_test(test_summary_counts_names_bytes),
        cmocka_unit_test(test_env_summary_and_trace_at_close),
        cmocka_unit_test(test_unwritable_trace_warns),
        cmocka_unit_test(test_gpu_events_pooled_and_resolved_lazily),
        cmocka_unit_test(test_launches_from_many_threads),
        cmocka_unit_test(test_launch_args_described_per_shape),
        cmocka_unit_test(test_timer_choice),
        cmocka_unit_test(test_gpu_timers_agree_with_events),
        cmocka_unit_test(test_launch_overhead_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
