/* linalg_demo.c: `kiln demo solve`: numpy.linalg.solve on kiln arrays: a
 * batch of 1000 64x64 systems in one call, and one large system (8192^2 on
 * a GPU; 2048^2 on the CPU, where LU at 8192 would take minutes on a few
 * cores; --size N picks it), float64, each checked by its scaled residual
 * |A x - b|_inf / (|A|_inf |x|_inf + |b|_inf) in long double on the host,
 * and timed with events (median of --repeat runs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_util.h"
#include "examples.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ms of `repeat` event-timed solves after one warm-up; the last x
 * stays in *x. */
static int time_solve(kiln_context *ctx, kiln_array *a, kiln_array *b, int repeat, kiln_array **x,
                      double *ms) {
    kiln_event *e0, *e1;
    double t[64];
    KILN_CHECK(kiln_event_create(ctx, &e0));
    KILN_CHECK(kiln_event_create(ctx, &e1));
    KILN_CHECK(kiln_solve(a, b, x));
    if (repeat > 64) repeat = 64;
    for (int i = 0; i < repeat; i++) {
        kiln_array_release(*x);
        *x = NULL;
        KILN_CHECK(kiln_event_record(e0, NULL));
        KILN_CHECK(kiln_solve(a, b, x));
        KILN_CHECK(kiln_event_record(e1, NULL));
        KILN_CHECK(kiln_event_synchronize(e1));
        float m = 0;
        KILN_CHECK(kiln_event_elapsed_ms(e0, e1, &m));
        t[i] = m;
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp_double);
    *ms = t[repeat / 2];
    kiln_event_release(e0);
    kiln_event_release(e1);
    return 0;
}

/* The worst scaled residual over `batch` systems of size n (b: n values each). */
static double worst_residual(const double *a, const double *b, const double *x, int64_t batch, int64_t n) {
    double worst = 0;
    for (int64_t q = 0; q < batch; q++) {
        const double *aq = a + q * n * n, *bq = b + q * n, *xq = x + q * n;
        long double rmax = 0, amax = 0, xmax = 0, bmax = 0;
        for (int64_t i = 0; i < n; i++) {
            long double r = -(long double)bq[i], arow = 0;
            for (int64_t j = 0; j < n; j++) {
                r += (long double)aq[i * n + j] * xq[j];
                arow += fabsl((long double)aq[i * n + j]);
            }
            if (fabsl(r) > rmax) rmax = fabsl(r);
            if (arow > amax) amax = arow;
            if (fabsl((long double)xq[i]) > xmax) xmax = fabsl((long double)xq[i]);
            if (fabsl((long double)bq[i]) > bmax) bmax = fabsl((long double)bq[i]);
        }
        double e = (double)(rmax / (amax * xmax + bmax));
        if (e > worst) worst = e;
    }
    return worst;
}

/* batch random n x n systems: entries uniform in [-1, 1] (not constructed
 * to be well conditioned: the scaled residual does not depend on it). */
static int run_case(kiln_context *ctx, int64_t batch, int64_t n, int repeat, example_rng *rng, double *ms,
                    double *residual) {
    size_t na = (size_t)(batch * n * n), nb = (size_t)(batch * n);
    double *ha = example_alloc(sizeof *ha * na, "the matrices"), *hb = example_alloc(sizeof *hb * nb, "b");
    double *hx = example_alloc(sizeof *hx * nb, "x");
    if (!ha || !hb || !hx) return KILN_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < na; i++) ha[i] = example_rng_uniform(rng, -1, 1);
    for (size_t i = 0; i < nb; i++) hb[i] = example_rng_uniform(rng, -1, 1);
    int64_t sa[3] = {batch, n, n}, sb[3] = {batch, n, 1};
    kiln_array *a = NULL, *b = NULL, *x = NULL;
    KILN_CHECK(kiln_array_from_host(ctx, KILN_FLOAT64, 3, sa, ha, sizeof *ha * na, &a));
    KILN_CHECK(kiln_array_from_host(ctx, KILN_FLOAT64, 3, sb, hb, sizeof *hb * nb, &b));
    KILN_CHECK(time_solve(ctx, a, b, repeat, &x, ms));
    KILN_CHECK(kiln_array_to_host(x, hx, sizeof *hx * nb));
    *residual = worst_residual(ha, hb, hx, batch, n);
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(x);
    free(ha);
    free(hb);
    free(hx);
    return 0;
}

int kiln_example_linalg_solve(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    /* the large system: 24 bytes per element on the host (A, and A and its
     * LU copy on the CPU backend, whose arrays are host memory) */
    int64_t n = opts->size > 0 ? opts->size : cuda ? 8192 : 2048;
    if (opts->size <= 0) {
        int64_t fit = example_fit_items(opts, n * n, 24);
        while (n > 256 && n * n > fit) n /= 2;
    }
    int repeat = opts->repeat > 0 ? opts->repeat : cuda ? 5 : 3;
    example_rng rng = {0x243f6a8885a308d3ull};
    double small_ms, small_res, big_ms, big_res;
    int s = run_case(ctx, 1000, 64, repeat, &rng, &small_ms, &small_res);
    if (s == 0) s = run_case(ctx, 1, n, repeat, &rng, &big_ms, &big_res);
    if (s != 0) return s;
    /* LU's backward error: a small multiple of n * eps (2.2e-16) */
    int ok_small = small_res < 64 * 64 * 2.2e-16, ok_big = big_res < (double)n * 64 * 2.2e-16;
    double flops = 2.0 / 3.0 * (double)n * n * n + 2.0 * n * n;
    const char *provider = "?";
    KILN_CHECK(kiln_linalg_provider(ctx, &provider));
    if (opts->verbose) {
        printf("  1000 x 64x64 systems: %9.3f ms, worst scaled residual %.1e\n", small_ms, small_res);
        printf("  one %lldx%lld system:  %9.3f ms (%.1f GFLOP/s), scaled residual %.1e\n", (long long)n,
               (long long)n, big_ms, flops / big_ms / 1e6, big_res);
        printf("  through %s\n", provider);
    }
    res->passed = ok_small && ok_big;
    res->size = n;
    res->runs = repeat;
    res->ms_median = big_ms;
    res->ms_min = big_ms;
    res->flops = flops;
    res->bytes = 8.0 * (double)n * n;
    snprintf(res->check, sizeof res->check,
             "|Ax-b|/(|A||x|+|b|): 1000x64^2 %.1e (%.2f ms), %lld^2 %.1e (%.1f GFLOP/s), f64", small_res,
             small_ms, (long long)n, big_res, flops / big_ms / 1e6);
    return 0;
}
