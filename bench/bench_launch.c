/* bench_launch.c: host cost of one kernel launch: an empty kernel launched
 * back to back, timed on the host clock (events would time the device). */
#include <time.h>

#include "bench.h"

static const char empty_source[] = "extern \"C\" __global__ void empty_kernel() {}\n";

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int bench_launch_overhead(kiln_context *ctx, const bench_native *native, int launches,
                          bench_launch_cost *out) {
    out->launches = launches;
    out->have_native = 0;
    kiln_kernel *k = NULL;
    int s = kiln_kernel_from_source(ctx, empty_source, "empty_kernel", NULL, &k);
    if (s == KILN_OK) s = kiln_jit_wait(ctx); /* no compile beside the launches */
    if (s != KILN_OK) return s;
    /* The first launch loads the module and creates the streams. */
    s = kiln_launch(k, KILN_DIM(1), KILN_DIM(32), 0, NULL, NULL, 0);
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    double t0 = now_us(), t1 = t0;
    for (int i = 0; s == KILN_OK && i < launches; i++)
        s = kiln_launch(k, KILN_DIM(1), KILN_DIM(32), 0, NULL, NULL, 0);
    t1 = now_us();
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    double t2 = now_us();
    out->kiln_enqueue_us = (t1 - t0) / launches;
    out->kiln_total_us = (t2 - t0) / launches;
    kiln_kernel_release(k);
    if (s == KILN_OK && native->empty_launch) {
        kiln_device_info dev;
        int device = kiln_device_info_get(ctx, &dev) == KILN_OK ? dev.ordinal : 0;
        out->have_native =
            native->empty_launch(device, launches, &out->native_enqueue_us, &out->native_total_us) == 0;
    }
    return s;
}
