/* bench_workloads.c: one seed workload, kiln's kernel and the hand-written
 * one on the same inputs, each timed the same way and each verified by the
 * example's own host reference. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void *data_of(const kiln_example_launch *l, int arg) { return kiln_array_data(l->args[arg].as.array); }

/* The output is the last array an example keeps (see examples/saxpy.c and the others). */
static kiln_array *output_of(const kiln_example_launch *l) {
    kiln_array *out = NULL;
    for (int i = 0; i < KILN_EXAMPLE_MAX_BUFFERS; i++)
        if (l->arrays[i]) out = l->arrays[i];
    return out;
}

/* Zeroes the output so the native result is checked on its own merit. */
static int clear_output(kiln_example_launch *l) {
    kiln_array *out = output_of(l);
    size_t bytes = kiln_array_nbytes(out);
    void *zeros = calloc(1, bytes ? bytes : 1);
    if (!zeros) return KILN_ERR_OUT_OF_MEMORY;
    int s = kiln_array_from_host_copy(out, zeros, bytes);
    free(zeros);
    if (s == KILN_OK) s = kiln_synchronize(l->ctx);
    return s;
}

static unsigned dim_or_1(uint32_t d) { return d ? d : 1; }

/* Calls the native version of l's workload with l's own arguments;
 * returns the native code (0 = ok), or -1 when there is none. */
static int run_native(const bench_native *nat, const kiln_example_launch *l, const kiln_native_geometry *g,
                      float *times) {
    const kiln_value *a = l->args;
    const char *name = l->example->name;
    if (strcmp(name, "saxpy") == 0 && nat->saxpy)
        return nat->saxpy(g, (float)a[0].as.f, data_of(l, 1), data_of(l, 2), data_of(l, 3), (size_t)a[4].as.u,
                          times);
    if (strcmp(name, "mandelbrot") == 0 && nat->mandelbrot)
        return nat->mandelbrot(g, (float)a[0].as.f, (float)a[1].as.f, (float)a[2].as.f, (float)a[3].as.f,
                               data_of(l, 4), (int)a[5].as.i, (int)a[6].as.i, (int)a[7].as.i, times);
    if (strcmp(name, "matmul") == 0 && nat->matmul)
        return nat->matmul(g, data_of(l, 0), data_of(l, 1), data_of(l, 2), (int)a[3].as.i, times);
    if (strcmp(name, "haversine_mesh") == 0 && nat->haversine_mesh)
        return nat->haversine_mesh(g, a[0].as.f, a[1].as.f, a[2].as.f, a[3].as.f, a[4].as.f, a[5].as.f,
                                   a[6].as.f, a[7].as.i, a[8].as.i, data_of(l, 9), times);
    return -1;
}

static double min_of(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

/* One native launch between two events (the library's own timing with no
 * warm-up); rc as run_native. */
static int native_once(const bench_native *nat, const kiln_example_launch *l, kiln_native_geometry g,
                       int warmups, double *ms) {
    float t = 0;
    g.warmups = warmups;
    g.repeat = 1;
    int rc = run_native(nat, l, &g, &t);
    *ms = t;
    return rc;
}

/* Kernels shorter than this run in batches of BATCH per timed run, on both
 * sides: a lone launch between two events also times the host's submission
 * of the launch after the start event (~0.5 µs of a 20 µs kernel). */
#define BATCH_BELOW_MS 0.25
#define BATCH 20

/* On a GPU, kiln and the hand-written kernel take turns, launch by launch
 * (or batch by batch), each between two events: both see the same clocks and the same state of the
 * device, so neither gains from going second (a 20 µs kernel's median moved
 * a few percent from one process to the next when each side ran its runs
 * in one block). Then each side runs once more on a zeroed output and is
 * verified on its own result. */
int bench_workload(kiln_context *ctx, const bench_native *native, const kiln_example *ex,
                   const bench_options *o, bench_row *row) {
    memset(row, 0, sizeof *row);
    row->name = ex->name;
    kiln_example_launch l;
    int s = kiln_example_prepare(ex, ctx, o->size, &l);
    if (s != KILN_OK) return s;
    row->size = l.size;
    row->bytes = l.bytes;
    row->flops = l.flops;
    kiln_device_info dev;
    s = kiln_device_info_get(ctx, &dev);
    kiln_native_geometry g = {{dim_or_1(l.grid.x), dim_or_1(l.grid.y), dim_or_1(l.grid.z)},
                              {dim_or_1(l.block.x), dim_or_1(l.block.y), dim_or_1(l.block.z)},
                              dev.ordinal,
                              3,
                              1,
                              1};
    int n = o->repeat;
    double *kt = calloc((size_t)n, sizeof *kt), *nt = calloc((size_t)n, sizeof *nt), dummy = 0;
    if (!kt || !nt) s = KILN_ERR_OUT_OF_MEMORY;
    int rc = 0; /* the native side: 0 ok, -1 none, else its error */
    kiln_event *e0 = NULL, *e1 = NULL;
    if (s == KILN_OK) s = kiln_event_create(ctx, &e0);
    if (s == KILN_OK) s = kiln_event_create(ctx, &e1);
    if (s == KILN_OK) s = kiln_example_time(&l, 3, 1, 0, &dummy, &dummy, NULL);
    int batch = dummy < BATCH_BELOW_MS ? BATCH : 1;
    g.batch = batch;
    row->batch = batch;
    if (s == KILN_OK) rc = native_once(native, &l, g, 3, &dummy);
    /* On the CPU the two sides do not alternate: the OpenMP team of the C
     * loop spins for a while after each region, on the cores kiln's pool
     * would need right then. */
    int alternate = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    for (int i = 0; s == KILN_OK && i < n; i++) {
        s = kiln_example_time_run(&l, e0, e1, batch, &kt[i]);
        if (s == KILN_OK && rc == 0 && alternate) rc = native_once(native, &l, g, 0, &nt[i]);
    }
    for (int i = 0; s == KILN_OK && !alternate && rc == 0 && i < n; i++)
        rc = native_once(native, &l, g, 0, &nt[i]);
    kiln_event_release(e0);
    kiln_event_release(e1);
    g.batch = 1;
    kiln_example_result r;
    if (s == KILN_OK) s = clear_output(&l);
    if (s == KILN_OK) s = kiln_example_launch_once(&l);
    if (s == KILN_OK) s = kiln_example_verify(&l, NULL, &r);
    if (s == KILN_OK) {
        row->kiln_ms = kiln_example_median(kt, n);
        row->kiln_min_ms = min_of(kt, n);
        row->kiln_passed = r.passed;
        snprintf(row->kiln_check, sizeof row->kiln_check, "%s", r.check);
        if (rc == -1) {
            snprintf(row->native_note, sizeof row->native_note, "%s", native->note);
        } else if (rc != 0) {
            snprintf(row->native_note, sizeof row->native_note, "native failed: %s",
                     native->error_string ? native->error_string(rc) : "error");
        } else {
            s = clear_output(&l);
            if (s == KILN_OK && (rc = native_once(native, &l, g, 0, &dummy)) != 0)
                snprintf(row->native_note, sizeof row->native_note, "native failed: %s",
                         native->error_string ? native->error_string(rc) : "error");
            if (s == KILN_OK && rc == 0) s = kiln_example_verify(&l, NULL, &r);
            if (s == KILN_OK && rc == 0) {
                row->have_native = 1;
                row->native_ms = kiln_example_median(nt, n);
                row->native_min_ms = min_of(nt, n);
                row->native_passed = r.passed;
                snprintf(row->native_check, sizeof row->native_check, "%s", r.check);
            }
        }
    }
    free(kt);
    free(nt);
    kiln_example_release(&l);
    return s;
}
