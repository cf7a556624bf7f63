/* example_run.c: what every example does around its own kernel: prepare,
 * warm up, time with events, verify, release. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples.h"

int64_t kiln_example_default_size(const kiln_example *ex, kiln_context *ctx) {
    if (ex->default_size_cpu && kiln_context_backend(ctx) == KILN_BACKEND_CPU) return ex->default_size_cpu;
    return ex->default_size;
}

int kiln_example_prepare(const kiln_example *ex, kiln_context *ctx, int64_t size, kiln_example_launch *l) {
    if (!ex || !ctx || !l || size < 0) return KILN_ERR_INVALID_ARGUMENT;
    memset(l, 0, sizeof *l);
    if (!ex->prepare) return KILN_ERR_UNSUPPORTED;
    l->example = ex;
    l->ctx = ctx;
    int s = ex->prepare(ctx, size ? size : kiln_example_default_size(ex, ctx), l);
    /* What the examples time is the kernels' -O3 code: on the CPU a new
     * module runs its -O1 build until its -O3 build lands (kiln_jit_wait). */
    if (s == KILN_OK) s = kiln_jit_wait(ctx);
    if (s != KILN_OK) kiln_example_release(l);
    return s;
}

int kiln_example_launch_once(kiln_example_launch *l) {
    return kiln_launch(l->kernel, l->grid, l->block, l->shared_bytes, NULL, l->args, l->nargs);
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double kiln_example_median(const double *v, int n) {
    if (n <= 0) return 0;
    double *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return v[0];
    memcpy(sorted, v, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_doubles);
    double m = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    free(sorted);
    return m;
}

int64_t kiln_example_modules_built(kiln_context *ctx) {
    kiln_jit_stats st;
    return kiln_jit_stats_get(ctx, &st) == KILN_OK ? st.compiles + st.cache_hits : -1;
}

double kiln_example_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

int kiln_example_time_run(kiln_example_launch *l, kiln_event *start, kiln_event *end, int batch, double *ms) {
    float t = 0;
    if (batch < 1) batch = 1;
    int s = kiln_event_record(start, NULL);
    for (int b = 0; s == KILN_OK && b < batch; b++) s = kiln_example_launch_once(l);
    if (s == KILN_OK) s = kiln_event_record(end, NULL);
    if (s == KILN_OK) s = kiln_event_synchronize(end);
    if (s == KILN_OK) s = kiln_event_elapsed_ms(start, end, &t);
    *ms = (double)t / batch;
    return s;
}

/* Events around each launch alone: on a GPU they measure device time, so
 * the host's work before the launch stays out of the figure (as in
 * BASELINES.md); what the driver does after the start event is in it. */
int kiln_example_time(kiln_example_launch *l, int warmups, int repeat, double budget_ms, double *ms_median,
                      double *ms_min, int *runs) {
    if (repeat < 1) repeat = 1;
    kiln_context *ctx = l->ctx;
    kiln_event *start = NULL, *end = NULL;
    double *times = malloc((size_t)repeat * sizeof *times);
    if (!times) return KILN_ERR_OUT_OF_MEMORY;
    int s = kiln_event_create(ctx, &start);
    if (s == KILN_OK) s = kiln_event_create(ctx, &end);
    for (int i = 0; s == KILN_OK && i < warmups; i++) {
        double ms = 0;
        s = kiln_example_time_run(l, start, end, 1, &ms);
        if (budget_ms > 0 && ms >= budget_ms) break;
    }
    int done = 0;
    double best = 0, total = 0;
    for (; s == KILN_OK && done < repeat; done++) {
        if (budget_ms > 0 && done >= 3 && total >= budget_ms) break;
        double ms = 0;
        s = kiln_example_time_run(l, start, end, 1, &ms);
        times[done] = ms;
        total += ms;
        if (done == 0 || ms < best) best = ms;
    }
    if (s == KILN_OK) {
        *ms_median = kiln_example_median(times, done);
        *ms_min = best;
        if (runs) *runs = done;
    }
    kiln_event_release(start);
    kiln_event_release(end);
    free(times);
    return s;
}

int kiln_example_time_calls(kiln_context *ctx, kiln_example_step step, void *arg, int warmups, int repeat,
                            double *ms_median, double *ms_min) {
    if (repeat < 1) repeat = 1;
    double *ms = calloc((size_t)repeat, sizeof *ms);
    if (!ms) return KILN_ERR_OUT_OF_MEMORY;
    kiln_event *e0 = NULL, *e1 = NULL;
    int s = kiln_event_create(ctx, &e0);
    if (s == KILN_OK) s = kiln_event_create(ctx, &e1);
    for (int r = -warmups; r < repeat && s == KILN_OK; r++) {
        s = kiln_event_record(e0, NULL);
        if (s == KILN_OK) s = step(arg);
        if (s == KILN_OK) s = kiln_event_record(e1, NULL);
        if (s == KILN_OK) s = kiln_event_synchronize(e1);
        float dev = 0;
        if (s == KILN_OK) s = kiln_event_elapsed_ms(e0, e1, &dev);
        if (r >= 0) ms[r] = dev;
    }
    if (s == KILN_OK) {
        *ms_median = kiln_example_median(ms, repeat);
        if (ms_min) {
            *ms_min = ms[0];
            for (int r = 1; r < repeat; r++) *ms_min = ms[r] < *ms_min ? ms[r] : *ms_min;
        }
    }
    kiln_event_release(e0);
    kiln_event_release(e1);
    free(ms);
    return s;
}

int kiln_example_verify(kiln_example_launch *l, const kiln_example_opts *opts, kiln_example_result *res) {
    res->passed = 0;
    res->check[0] = '\0';
    return l->example->verify(l, opts, res);
}

void kiln_example_release(kiln_example_launch *l) {
    if (!l) return;
    kiln_kernel_release(l->kernel);
    for (int i = 0; i < KILN_EXAMPLE_MAX_BUFFERS; i++) {
        kiln_array_release(l->arrays[i]);
        free(l->host[i]);
    }
    memset(l, 0, sizeof *l);
}

int kiln_example_run(const kiln_example *ex, kiln_context *ctx, const kiln_example_opts *opts,
                     kiln_example_result *res) {
    static const kiln_example_opts defaults = {0, 0, 0, NULL, 0};
    if (!ex || !ctx || !res) return KILN_ERR_INVALID_ARGUMENT;
    if (!opts) opts = &defaults;
    if (!ex->prepare) return ex->run ? ex->run(ctx, opts, res) : KILN_ERR_UNSUPPORTED;
    memset(res, 0, sizeof *res);
    kiln_example_launch l;
    int s = kiln_example_prepare(ex, ctx, opts->size, &l);
    if (s != KILN_OK) return s;
    res->bytes = l.bytes;
    res->flops = l.flops;
    res->size = l.size;
    int repeat = opts->repeat > 0 ? opts->repeat : 20;
    if (opts->verbose)
        printf("%s: size %lld, grid (%u,%u,%u) block (%u,%u,%u), %d timed runs\n", ex->name,
               (long long)l.size, l.grid.x, l.grid.y, l.grid.z, l.block.x, l.block.y, l.block.z, repeat);
    /* Time first, verify last: every launch writes the same output, so the
     * check covers the result the timed runs produced. */
    s = kiln_example_time(&l, 2, repeat, opts->repeat > 0 ? 0 : 5000, &res->ms_median, &res->ms_min,
                          &res->runs);
    if (s == KILN_OK) s = kiln_example_verify(&l, opts, res);
    kiln_example_release(&l);
    return s;
}

int kiln_example_main(const char *name, int argc, char **argv) {
    const kiln_example *ex = kiln_example_find(name);
    if (!ex) return 2;
    kiln_example_opts opts = {0, 0, 1, NULL, 0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--source") == 0 && ex->source) {
            fputs(ex->source, stdout);
            return 0;
        }
        opts.size = atoll(argv[i]);
        if (opts.size < 1) {
            fprintf(stderr, "usage: %s [SIZE] [--source]\n", argv[0]);
            return 2;
        }
    }
    kiln_context *ctx = NULL;
    int status = kiln_open(&ctx, "auto");
    kiln_example_result r;
    memset(&r, 0, sizeof r);
    if (status == KILN_OK) status = ex->run(ctx, &opts, &r);
    if (status != KILN_OK)
        kiln_report_failure(status, name, __FILE__, __LINE__);
    else
        printf("%s size %lld on %s: %.3f ms (%.1f GB/s, %.1f GFLOP/s), %s: %s\n", name, (long long)r.size,
               kiln_context_backend_name(ctx), r.ms_median, r.bytes / (r.ms_median * 1e6),
               r.flops / (r.ms_median * 1e6), r.passed ? "ok" : "FAIL", r.check);
    kiln_close(ctx);
    return status == KILN_OK && r.passed ? 0 : 1;
}
