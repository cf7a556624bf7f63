/* streams_events.c: seed 001's streams workload with events in place of host
 * synchronisation. The seed queues to_device, the kernel and copy_to_host on
 * one stream and waits; here the work is split into chunks over three
 * streams (upload, compute, download) so that copies of one chunk overlap
 * the kernel of another on a GPU, and the streams hand each chunk on with an
 * event: the host waits once, at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "driver_examples.h"

static const char *scale_src = "__global__ void a_cuda_kernel(float *a, long n) {\n"
                               "    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n"
                               "    if (i < n) a[i] = a[i] * 2.0f + 1.0f;\n"
                               "}\n";

#define MAX_CHUNKS 64
#define TRY(call)                                                                                            \
    do {                                                                                                     \
        if ((s = (call)) != KILN_OK) goto done;                                                              \
    } while (0)

int kiln_example_streams_events(kiln_context *ctx, int64_t n, int chunks, double *max_err) {
    if (!ctx || n < 1 || chunks < 1 || chunks > MAX_CHUNKS || !max_err) return KILN_ERR_INVALID_ARGUMENT;
    kiln_status s = KILN_OK;
    kiln_kernel *k = NULL;
    kiln_stream *up = NULL, *compute = NULL, *down = NULL;
    kiln_event *uploaded[MAX_CHUNKS] = {0}, *computed[MAX_CHUNKS] = {0};
    kiln_array *dev = NULL;
    float *host = NULL; /* pinned: the copies are truly asynchronous */
    TRY(kiln_kernel_from_source(ctx, scale_src, "a_cuda_kernel", NULL, &k));
    TRY(kiln_host_alloc(ctx, (size_t)n * sizeof *host, (void **)&host));
    for (int64_t i = 0; i < n; i++) host[i] = (float)(i % 1000) * 0.5f;
    TRY(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &dev));
    TRY(kiln_stream_create(ctx, &up));
    TRY(kiln_stream_create(ctx, &compute));
    TRY(kiln_stream_create(ctx, &down));
    int64_t per = (n + chunks - 1) / chunks;
    for (int c = 0; c < chunks; c++) {
        int64_t lo = c * per, hi = lo + per < n ? lo + per : n;
        if (lo >= hi) break;
        kiln_array *piece = NULL;
        TRY(kiln_event_create_ex(ctx, KILN_EVENT_DISABLE_TIMING, &uploaded[c]));
        TRY(kiln_event_create_ex(ctx, KILN_EVENT_DISABLE_TIMING, &computed[c]));
        TRY(kiln_array_slice(dev, 0, lo, hi, 1, &piece));
        size_t bytes = (size_t)(hi - lo) * sizeof *host;
        s = kiln_array_from_host_async(piece, host + lo, bytes, up);
        if (s == KILN_OK) s = kiln_event_record(uploaded[c], up);
        if (s == KILN_OK) s = kiln_stream_wait_event(compute, uploaded[c]);
        if (s == KILN_OK)
            s = kiln_launch(k, KILN_DIM((uint32_t)((hi - lo + 255) / 256)), KILN_DIM(256), 0, compute,
                            KILN_ARGS(kiln_arr(piece), kiln_i64(hi - lo)));
        if (s == KILN_OK) s = kiln_event_record(computed[c], compute);
        if (s == KILN_OK) s = kiln_stream_wait_event(down, computed[c]);
        if (s == KILN_OK) s = kiln_array_to_host_async(piece, host + lo, bytes, down);
        kiln_array_release(piece);
        if (s != KILN_OK) goto done;
    }
    /* The one host wait: the last stream of the pipeline. */
    TRY(kiln_stream_synchronize(down));
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double want = (double)(i % 1000) * 0.5 * 2.0 + 1.0;
        double err = fabs((double)host[i] - want);
        if (err > worst) worst = err;
    }
    *max_err = worst;
done:
    for (int c = 0; c < MAX_CHUNKS; c++) {
        kiln_event_release(uploaded[c]);
        kiln_event_release(computed[c]);
    }
    kiln_stream_release(up);
    kiln_stream_release(compute);
    kiln_stream_release(down);
    kiln_array_release(dev);
    if (host) kiln_host_free(ctx, host);
    kiln_kernel_release(k);
    return s;
}

/* The registry's runner (`kiln demo streams`): size = n (default 16M,
 * 1M on the CPU), in 8 chunks. */
int kiln_example_streams(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    int64_t n = opts && opts->size > 0                          ? opts->size
                : kiln_context_backend(ctx) == KILN_BACKEND_CPU ? (int64_t)1 << 20
                                                                : (int64_t)1 << 24;
    double err = -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int s = kiln_example_streams_events(ctx, n, 8, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (s != KILN_OK) return s;
    res->size = n;
    res->runs = 1;
    res->ms_median = res->ms_min =
        (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    res->bytes = (double)n * 8;
    res->passed = err == 0;
    snprintf(res->check, sizeof res->check,
             "8 chunks over 3 streams ordered by events, one host wait; max abs err %g (whole run, compile "
             "included)",
             err);
    return KILN_OK;
}
