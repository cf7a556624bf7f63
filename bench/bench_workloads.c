/* bench_workloads.c: one seed workload, kiln's kernel and the hand-written
 * one on the same inputs, each timed the same way and each verified by the
 * example's own host reference. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void *data_of(const kiln_example_launch *l, int arg) {
    return kiln_array_data(l->args[arg].as.array);
}

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
static int run_native(const bench_native *nat, const kiln_example_launch *l,
                      const kiln_native_geometry *g, float *times) {
    const kiln_value *a = l->args;
    const char *name = l->example->name;
    if (strcmp(name, "saxpy") == 0 && nat->saxpy)
        return nat->saxpy(g, (float)a[0].as.f, data_of(l, 1), data_of(l, 2), data_of(l, 3),
                          (size_t)a[4].as.u, times);
    if (strcmp(name, "mandelbrot") == 0 && nat->mandelbrot)
        return nat->mandelbrot(g, (float)a[0].as.f, (float)a[1].as.f, (float)a[2].as.f,
                               (float)a[3].as.f, data_of(l, 4), (int)a[5].as.i, (int)a[6].as.i,
                               (int)a[7].as.i, times);
    if (strcmp(name, "matmul") == 0 && nat->matmul)
        return nat->matmul(g, data_of(l, 0), data_of(l, 1), data_of(l, 2), (int)a[3].as.i, times);
    if (strcmp(name, "haversine_mesh") == 0 && nat->haversine_mesh)
        return nat->haversine_mesh(g, a[0].as.f, a[1].as.f, a[2].as.f, a[3].as.f, a[4].as.f,
                                   a[5].as.f, a[6].as.f, a[7].as.i, a[8].as.i, data_of(l, 9),
                                   times);
    return -1;
}

static int time_native(const bench_native *nat, kiln_example_launch *l, const bench_options *o,
                       bench_row *row) {
    kiln_device_info dev;
    int s = kiln_device_info_get(l->ctx, &dev);
    if (s != KILN_OK) return s;
    kiln_native_geometry g = {{dim_or_1(l->grid.x), dim_or_1(l->grid.y), dim_or_1(l->grid.z)},
                              {dim_or_1(l->block.x), dim_or_1(l->block.y), dim_or_1(l->block.z)},
                              dev.ordinal, 3, o->repeat};
    float *times = calloc((size_t)o->repeat, sizeof *times);
    double *as_double = calloc((size_t)o->repeat, sizeof *as_double);
    if (!times || !as_double) {
        free(times);
        free(as_double);
        return KILN_ERR_OUT_OF_MEMORY;
    }
    if ((s = clear_output(l)) == KILN_OK) {
        int rc = run_native(nat, l, &g, times);
        if (rc == -1) {
            snprintf(row->native_note, sizeof row->native_note, "%s", nat->note);
        } else if (rc != 0) {
            snprintf(row->native_note, sizeof row->native_note, "native failed: %s",
                     nat->error_string ? nat->error_string(rc) : "error");
        } else {
            double best = times[0];
            for (int i = 0; i < o->repeat; i++) {
                as_double[i] = times[i];
                if (times[i] < best) best = times[i];
            }
            row->have_native = 1;
            row->native_ms = kiln_example_median(as_double, o->repeat);
            row->native_min_ms = best;
            kiln_example_result r;
            s = kiln_example_verify(l, NULL, &r);
            row->native_passed = r.passed;
            snprintf(row->native_check, sizeof row->native_check, "%s", r.check);
        }
    }
    free(times);
    free(as_double);
    return s;
}

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
    /* Two rounds, kiln then native each time, and each side keeps its better
     * median: clocks and caches settle during the first round, and neither
     * side always runs first. Both outputs are verified (time_native zeroes
     * the output before its run, so it cannot pass on kiln's result). */
    double kiln_ms[2] = {0, 0}, kiln_min[2] = {0, 0}, native_ms = 0, native_min = 0;
    int have_native = 0, native_passed = 1;
    kiln_example_result r;
    for (int round = 0; round < 2 && s == KILN_OK; round++) {
        s = kiln_example_time(&l, 3, o->repeat, 0, &kiln_ms[round], &kiln_min[round], NULL);
        if (s == KILN_OK) s = kiln_example_verify(&l, NULL, &r);
        if (s != KILN_OK) break;
        row->kiln_passed = round == 0 ? r.passed : row->kiln_passed && r.passed;
        snprintf(row->kiln_check, sizeof row->kiln_check, "%s", r.check);
        s = time_native(native, &l, o, row);
        if (s != KILN_OK || !row->have_native) continue;
        native_passed &= row->native_passed;
        if (!have_native || row->native_ms < native_ms) native_ms = row->native_ms;
        if (!have_native || row->native_min_ms < native_min) native_min = row->native_min_ms;
        have_native = 1;
    }
    if (s == KILN_OK) {
        row->kiln_ms = kiln_ms[1] < kiln_ms[0] ? kiln_ms[1] : kiln_ms[0];
        row->kiln_min_ms = kiln_min[1] < kiln_min[0] ? kiln_min[1] : kiln_min[0];
        if (have_native) {
            row->native_passed = native_passed;
            row->native_ms = native_ms;
            row->native_min_ms = native_min;
        }
    }
    kiln_example_release(&l);
    return s;
}
