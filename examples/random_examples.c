/* random_examples.c: seed 001's cuRAND example (pyculib's
 * curand.PRNG(rndtype=XORWOW) drawing a million uniform floats), through
 * kiln's generators: checked by mean, variance, the Kolmogorov-Smirnov
 * statistic, and, where libcurand is installed, value for value against
 * cuRAND's own host generator. */
#define KILN_EXPERIMENTAL /* kiln_rng_curand_host_uniform (include/kiln.h) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples.h"

int kiln_example_random_xorwow(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_random_pi(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* sup |F_n(x) - x| over the sorted sample. */
static double ks_statistic(float *u, size_t n) {
    qsort(u, n, sizeof *u, cmp_float);
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        double lo = (double)u[i] - (double)i / (double)n, hi = (double)(i + 1) / (double)n - (double)u[i];
        d = fmax(d, fmax(lo, hi));
    }
    return d;
}

#define SEED 1234ull

/* Times `repeat` fills of x (events on CUDA, the wall clock on the CPU). */
static int time_fills(kiln_context *ctx, kiln_rng *rng, kiln_array *x, int repeat, kiln_example_result *res) {
    double *ms = calloc((size_t)repeat, sizeof *ms);
    kiln_event *e0 = NULL, *e1 = NULL;
    int s = ms ? KILN_OK : KILN_ERR_OUT_OF_MEMORY;
    int gpu = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    if (s == KILN_OK) s = kiln_event_create(ctx, &e0);
    if (s == KILN_OK) s = kiln_event_create(ctx, &e1);
    for (int r = -2; r < repeat && s == KILN_OK; r++) {
        double t0 = now_ms();
        s = kiln_event_record(e0, NULL);
        if (s == KILN_OK) s = kiln_rng_uniform(rng, x);
        if (s == KILN_OK) s = kiln_event_record(e1, NULL);
        if (s == KILN_OK) s = kiln_event_synchronize(e1);
        float dev = 0;
        if (s == KILN_OK && gpu) s = kiln_event_elapsed_ms(e0, e1, &dev);
        if (r >= 0) ms[r] = gpu ? dev : now_ms() - t0;
    }
    if (s == KILN_OK) {
        res->runs = repeat;
        res->ms_median = kiln_example_median(ms, repeat);
        res->ms_min = ms[0];
        for (int r = 1; r < repeat; r++) res->ms_min = fmin(res->ms_min, ms[r]);
    }
    kiln_event_release(e0);
    kiln_event_release(e1);
    free(ms);
    return s;
}

int kiln_example_random_xorwow(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    int64_t n = opts && opts->size > 0 ? opts->size : 1000000;
    memset(res, 0, sizeof *res);
    res->size = n;
    res->bytes = (double)n * sizeof(float);
    kiln_rng *rng = NULL;
    kiln_array *x = NULL;
    float *u = malloc(sizeof(float) * (size_t)n), *ref = malloc(sizeof(float) * 16);
    int s = u && ref ? KILN_OK : KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = kiln_rng_create(ctx, KILN_RNG_XORWOW, SEED, &rng);
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &x);
    if (s == KILN_OK) s = kiln_rng_uniform(rng, x); /* the sample checked: offset 0 */
    if (s == KILN_OK) s = kiln_array_to_host(x, u, sizeof(float) * (size_t)n);
    if (s == KILN_OK) s = time_fills(ctx, rng, x, opts && opts->repeat > 0 ? opts->repeat : 20, res);
    int matched = -1; /* -1: libcurand absent */
    if (s == KILN_OK) {
        size_t m = n < 16 ? (size_t)n : 16;
        kiln_status c = kiln_rng_curand_host_uniform(KILN_RNG_XORWOW, SEED, 0, ref, m);
        if (c == KILN_OK)
            matched = memcmp(ref, u, m * sizeof(float)) == 0;
        else if (c != KILN_ERR_LIBRARY_MISSING)
            s = c;
        if (opts && opts->verbose && matched >= 0)
            printf("first values: kiln %.9g %.9g %.9g, cuRAND host %.9g %.9g %.9g\n", u[0], u[1], u[2],
                   ref[0], ref[1], ref[2]);
    }
    if (s == KILN_OK) {
        long double s1 = 0, s2 = 0;
        for (int64_t i = 0; i < n; i++) {
            s1 += u[i];
            s2 += (long double)u[i] * u[i];
        }
        double mean = (double)(s1 / n), var = (double)(s2 / n) - mean * mean;
        double ks = ks_statistic(u, (size_t)n);
        double se_mean = sqrt(1.0 / 12.0 / (double)n), se_var = sqrt((1.0 / 80 - 1.0 / 144) / (double)n);
        /* KS: sqrt(n) D above 1.95 has probability 0.001 for a uniform sample */
        int ok = fabs(mean - 0.5) < 5 * se_mean && fabs(var - 1.0 / 12) < 5 * se_var &&
                 ks * sqrt((double)n) < 1.95 && matched != 0;
        res->passed = ok;
        snprintf(res->check, sizeof res->check, "mean %.5f var %.5f KS sqrt(n)D %.3f; %s", mean, var,
                 ks * sqrt((double)n),
                 matched < 0   ? "libcurand absent: not compared"
                 : matched > 0 ? "first 16 = cuRAND host"
                               : "first 16 DIFFER from cuRAND host");
    }
    kiln_array_release(x);
    kiln_rng_release(rng);
    free(u);
    free(ref);
    return s;
}

/* Monte Carlo pi with the in-kernel API: a vectorize body draws the point
 * (x, y) of sample i from the stateless Philox call, so the estimate is the
 * same on every backend; compared with pi within five standard errors. */
int kiln_example_random_pi(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    int64_t n = opts && opts->size > 0 ? opts->size : 4000000;
    memset(res, 0, sizeof *res);
    res->size = n;
    kiln_ufunc *inside = NULL;
    kiln_array *idx = NULL, *hit = NULL;
    int s = kiln_vectorize(ctx, "mc_pi_inside", "u1(i8, u8)", "i, seed",
                           "float x = kiln_philox_uniform(seed, 2 * (unsigned long long)i);\n"
                           "float y = kiln_philox_uniform(seed, 2 * (unsigned long long)i + 1);\n"
                           "return x * x + y * y <= 1.0f ? 1 : 0;",
                           kiln_rng_device_source(), &inside);
    if (s == KILN_OK) s = kiln_array_arange(ctx, KILN_INT64, 0, (double)n, 1, &idx);
    double t0 = now_ms();
    if (s == KILN_OK) s = kiln_call(inside, KILN_ARGS(kiln_arr(idx), kiln_u64(SEED)), &hit);
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    res->runs = 1;
    res->ms_median = res->ms_min = now_ms() - t0;
    uint8_t *h = s == KILN_OK ? malloc((size_t)n) : NULL;
    if (s == KILN_OK && !h) s = KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = kiln_array_to_host(hit, h, (size_t)n);
    if (s == KILN_OK) {
        int64_t count = 0;
        for (int64_t i = 0; i < n; i++) count += h[i];
        double p = (double)count / (double)n, est = 4 * p;
        double se = 4 * sqrt(M_PI / 4 * (1 - M_PI / 4) / (double)n);
        res->passed = fabs(est - M_PI) < 5 * se;
        snprintf(res->check, sizeof res->check, "pi ~ %.6f (error %.2e, 5 standard errors %.2e)", est,
                 fabs(est - M_PI), 5 * se);
    }
    free(h);
    kiln_array_release(hit);
    kiln_array_release(idx);
    kiln_ufunc_release(inside);
    return s;
}
