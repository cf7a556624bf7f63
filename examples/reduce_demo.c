/* reduce_demo.c: `kiln demo reduce`: a full sum, an argmax and an inclusive
 * scan of a large float32 array, and row and column sums of a matrix, each
 * checked against a long double host reference and event-timed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_util.h"
#include "examples.h"

typedef kiln_status (*reduce_step)(kiln_array *in, kiln_array **out);

static kiln_status step_sum(kiln_array *a, kiln_array **r) { return kiln_sum(a, NULL, 0, 0, NULL, r); }
static kiln_status step_argmax(kiln_array *a, kiln_array **r) { return kiln_argmax(a, NULL, 0, 0, NULL, r); }
static kiln_status step_scan(kiln_array *a, kiln_array **r) { return kiln_cumsum(a, 0, NULL, r); }
static kiln_status step_rows(kiln_array *a, kiln_array **r) {
    const int ax = 1;
    return kiln_sum(a, &ax, 1, 0, NULL, r);
}
static kiln_status step_cols(kiln_array *a, kiln_array **r) {
    const int ax = 0;
    return kiln_sum(a, &ax, 1, 0, NULL, r);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ms of `repeat` event-timed runs (after one warm-up); the last
 * result stays in *out. */
static int time_step(kiln_context *ctx, reduce_step f, kiln_array *in, int repeat, kiln_array **out,
                     double *ms) {
    kiln_event *e0 = NULL, *e1 = NULL;
    double t[64];
    KILN_CHECK(kiln_event_create(ctx, &e0));
    KILN_CHECK(kiln_event_create(ctx, &e1));
    kiln_array *r = NULL;
    KILN_CHECK(f(in, &r)); /* compile + warm up */
    kiln_array_release(r);
    if (repeat > 64) repeat = 64;
    for (int i = 0; i < repeat; i++) {
        KILN_CHECK(kiln_event_record(e0, NULL));
        KILN_CHECK(f(in, &r));
        KILN_CHECK(kiln_event_record(e1, NULL));
        KILN_CHECK(kiln_event_synchronize(e1));
        float m = 0;
        KILN_CHECK(kiln_event_elapsed_ms(e0, e1, &m));
        t[i] = m;
        if (i + 1 < repeat) kiln_array_release(r);
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp_double);
    *ms = t[repeat / 2];
    *out = r;
    kiln_event_release(e0);
    kiln_event_release(e1);
    return 0;
}

int kiln_example_reduce(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    /* h and the array a: 8 bytes of host memory per item (the CPU backend's
     * arrays are host memory too), plus some for the scans' outputs. */
    int64_t n =
        opts->size > 0 ? opts->size : example_fit_items(opts, cuda ? (int64_t)1 << 28 : (int64_t)1 << 24, 16);
    int64_t side = cuda ? 16384 : 2048;
    int repeat = opts->repeat > 0 ? opts->repeat : (cuda ? 20 : 5);
    float *h = malloc(sizeof *h * (size_t)(n > side * side ? n : side * side));
    if (!h) return KILN_ERR_OUT_OF_MEMORY;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < (n > side * side ? n : side * side); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        h[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 0.5);
    }
    kiln_array *a = NULL, *m = NULL, *r = NULL;
    KILN_CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, h, sizeof *h * (size_t)n, &a));
    int64_t mshape[2] = {side, side};
    KILN_CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, mshape, h, sizeof *h * (size_t)(side * side), &m));
    int ok = 1;
    double ms[5];
    char line[5][128];
    /* full sum */
    long double ref = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        ref += h[i];
        scale += fabsl((long double)h[i]);
    }
    KILN_CHECK(time_step(ctx, step_sum, a, repeat, &r, &ms[0]));
    double v = 0;
    KILN_CHECK(kiln_array_item_f64(r, &v));
    kiln_array_release(r);
    double err = (double)(fabsl((long double)v - ref) / scale);
    ok &= err < 1e-6;
    snprintf(line[0], sizeof line[0], "sum of %lld f32: rel err %.1e", (long long)n, err);
    /* argmax: the first maximum */
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (h[i] > h[best]) best = i;
    KILN_CHECK(time_step(ctx, step_argmax, a, repeat, &r, &ms[1]));
    KILN_CHECK(kiln_array_item_f64(r, &v));
    kiln_array_release(r);
    ok &= (int64_t)v == best;
    snprintf(line[1], sizeof line[1], "argmax: %lld (expected %lld)", (long long)v, (long long)best);
    /* inclusive scan */
    KILN_CHECK(time_step(ctx, step_scan, a, repeat, &r, &ms[2]));
    float *got = malloc(sizeof *got * (size_t)n);
    if (!got) return KILN_ERR_OUT_OF_MEMORY;
    KILN_CHECK(kiln_array_to_host(r, got, sizeof *got * (size_t)n));
    kiln_array_release(r);
    long double run = 0, worst = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
        run += h[i];
        mag += fabsl((long double)h[i]);
        long double e = fabsl((long double)got[i] - run) / (mag + 1);
        if (e > worst) worst = e;
    }
    ok &= worst < 1e-5;
    snprintf(line[2], sizeof line[2], "cumsum: max err %.1e of the running |x| sum", (double)worst);
    /* row and column sums */
    KILN_CHECK(time_step(ctx, step_rows, m, repeat, &r, &ms[3]));
    KILN_CHECK(kiln_array_to_host(r, got, sizeof *got * (size_t)side));
    kiln_array_release(r);
    double rerr = 0;
    for (int64_t i = 0; i < side; i++) {
        long double t = 0, sc = 0;
        for (int64_t j = 0; j < side; j++) {
            t += h[i * side + j];
            sc += fabsl((long double)h[i * side + j]);
        }
        double e = (double)(fabsl(got[i] - t) / (sc + 1));
        if (e > rerr) rerr = e;
    }
    ok &= rerr < 1e-6;
    snprintf(line[3], sizeof line[3], "row sums %lldx%lld: max rel err %.1e", (long long)side,
             (long long)side, rerr);
    KILN_CHECK(time_step(ctx, step_cols, m, repeat, &r, &ms[4]));
    KILN_CHECK(kiln_array_to_host(r, got, sizeof *got * (size_t)side));
    kiln_array_release(r);
    long double *col = calloc((size_t)side, sizeof *col), *csc = calloc((size_t)side, sizeof *csc);
    for (int64_t i = 0; i < side; i++)
        for (int64_t j = 0; j < side; j++) {
            col[j] += h[i * side + j];
            csc[j] += fabsl((long double)h[i * side + j]);
        }
    double cerr = 0;
    for (int64_t j = 0; j < side; j++) {
        double e = (double)(fabsl(got[j] - col[j]) / (csc[j] + 1));
        if (e > cerr) cerr = e;
    }
    ok &= cerr < 1e-6;
    snprintf(line[4], sizeof line[4], "column sums: max rel err %.1e", cerr);
    const char *what[5] = {"sum", "argmax", "cumsum", "row sums", "col sums"};
    double bytes[5] = {4.0 * n, 4.0 * n, 8.0 * n, 4.0 * side * side, 4.0 * side * side};
    if (opts->verbose)
        for (int i = 0; i < 5; i++)
            printf("  %-9s %9.3f ms %8.1f GB/s  %s\n", what[i], ms[i], bytes[i] / ms[i] / 1e6, line[i]);
    res->passed = ok;
    res->size = n;
    res->runs = repeat;
    res->ms_median = ms[0];
    res->ms_min = ms[0];
    res->bytes = bytes[0];
    snprintf(res->check, sizeof res->check,
             "sum rel err %.1e, argmax %s, scan err %.1e, rows %.1e, cols %.1e vs long double", err,
             (int64_t)v == best ? "exact" : "WRONG", (double)worst, rerr, cerr);
    free(col);
    free(csc);
    free(got);
    free(h);
    kiln_array_release(a);
    kiln_array_release(m);
    return 0;
}
