/* ufunc_examples.c: the seeds' `vectorize` workloads through kiln_vectorize,
 * each verified against a host reference.
 *
 *   haversine      seed 000 t38 (four host arrays; atan2 on the host) and t39
 *                  (two host arrays, scalars broadcast, all in the ufunc);
 *                  size = mesh points (default 1000 x 1000)
 *   add            seed 001 vectorize Add, float32, on the cpu target and (on a
 *                  CUDA context) the cuda target; size = N (default 100000)
 *   black_scholes  seed 001, 4M options in float64, call and put from one
 *                  two-output ufunc; L1 norm and max abs error vs a float64
 *                  host reference; size = options
 *   vector_add     seed 003: vectorAdd on 320M float32 from host arrays, and the
 *                  fused expression (a*10+2)*((b+2)*10-5)*5 in place on a;
 *                  size = N
 *
 * Registry entries (examples.h):
 *   {"haversine", "000", ..., kiln_example_ufunc_haversine}
 *   {"add", "001", ..., kiln_example_ufunc_add}
 *   {"black_scholes", "001", ..., kiln_example_ufunc_black_scholes}
 *   {"vector_add", "003", ..., kiln_example_ufunc_vector_add} */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example_util.h"
#include "examples.h"

int kiln_example_ufunc_haversine(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_ufunc_add(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_ufunc_black_scholes(kiln_context *ctx, const kiln_example_opts *opts,
                                     kiln_example_result *res);
int kiln_example_ufunc_vector_add(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);

static double wall_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int repeats(const kiln_example_opts *o) { return o && o->repeat > 0 ? o->repeat : 20; }

/* Times `repeat` calls of one ufunc call (device work timed with events,
 * host-array calls with the wall clock, as they are synchronous). */
typedef struct timed_call {
    kiln_ufunc *f;
    const char *target;
    const kiln_value *args;
    int nargs;
    kiln_array **outs;
    int host; /* host arrays involved: wall clock */
} timed_call;

static int time_call(kiln_context *ctx, const timed_call *c, int repeat, double *median, double *min) {
    double *ms = calloc((size_t)repeat, sizeof *ms);
    kiln_event *e0 = NULL, *e1 = NULL;
    if (!ms) return KILN_ERR_OUT_OF_MEMORY;
    int s = kiln_event_create(ctx, &e0);
    if (s == KILN_OK) s = kiln_event_create(ctx, &e1);
    for (int r = -2; r < repeat && s == KILN_OK; r++) { /* two warm-ups */
        double t0 = wall_ms();
        if (!c->host) s = kiln_event_record(e0, NULL);
        if (s == KILN_OK) s = kiln_call_ex(c->f, c->target, NULL, c->args, c->nargs, c->outs);
        if (s == KILN_OK && !c->host) s = kiln_event_record(e1, NULL);
        if (s == KILN_OK && !c->host) s = kiln_event_synchronize(e1);
        float dev = 0;
        if (s == KILN_OK && !c->host) s = kiln_event_elapsed_ms(e0, e1, &dev);
        if (r >= 0) ms[r] = c->host ? wall_ms() - t0 : dev;
    }
    if (s == KILN_OK) {
        *median = kiln_example_median(ms, repeat);
        *min = ms[0];
        for (int r = 1; r < repeat; r++) *min = ms[r] < *min ? ms[r] : *min;
    }
    kiln_event_release(e0);
    kiln_event_release(e1);
    free(ms);
    return s;
}

/* ------------------------------------------------------------ haversine */

static const char hav_a_body[] =
    "return pow(sin(0.008726645 * (lat2 - lat1)), 2) +\n"
    "       cos(0.01745329 * lat1) * cos(0.01745329 * lat2) * pow(sin(0.008726645 * (lon2 - lon1)), 2);";
static const char hav_body[] = KILN_EXAMPLE_HAVERSINE_BODY;

static double hav_ref(double lat1, double lon1, double lat2, double lon2, double s) {
    double a = pow(sin(0.008726645 * (lat2 - lat1)), 2) +
               cos(0.01745329 * lat1) * cos(0.01745329 * lat2) * pow(sin(0.008726645 * (lon2 - lon1)), 2);
    return atan2(a, 1 - a) * s;
}

int kiln_example_ufunc_haversine(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    int64_t n = opts && opts->size > 0 ? opts->size : 1000000;
    int64_t nx = (int64_t)sqrt((double)n), ny = n / (nx ? nx : 1);
    n = nx * ny;
    memset(res, 0, sizeof *res);
    double *X = example_alloc(sizeof(double) * (size_t)n, "X"),
           *Y = example_alloc(sizeof(double) * (size_t)n, "Y");
    double *X2 = example_alloc(sizeof(double) * (size_t)n, "X2"),
           *Y2 = example_alloc(sizeof(double) * (size_t)n, "Y2");
    double *Z = example_alloc(sizeof(double) * (size_t)n, "Z");
    kiln_ufunc *a_fn = NULL, *hav = NULL;
    kiln_array *hX = NULL, *hY = NULL, *hX2 = NULL, *hY2 = NULL, *A = NULL, *D = NULL;
    int s = (X && Y && X2 && Y2 && Z) ? KILN_OK : KILN_ERR_OUT_OF_MEMORY;
    /* xv, yv = meshgrid(linspace(29, 31, nx), linspace(99, 101, ny)), flattened */
    for (int64_t i = 0; s == KILN_OK && i < n; i++) {
        X[i] = 29 + 2.0 * (double)(i % nx) / (double)(nx > 1 ? nx - 1 : 1);
        Y[i] = 99 + 2.0 * (double)(i / nx) / (double)(ny > 1 ? ny - 1 : 1);
        X2[i] = 30;
        Y2[i] = 101;
    }
    if (s == KILN_OK)
        s = kiln_vectorize(ctx, "a_cuda", "f8(f8,f8,f8,f8)", "lat1, lon1, lat2, lon2", hav_a_body, NULL,
                           &a_fn);
    if (s == KILN_OK)
        s = kiln_vectorize(ctx, "a_cuda2", "f8(f8,f8,f8,f8,f8)", "lat1, lon1, lat2, lon2, s", hav_body, NULL,
                           &hav);
    if (s == KILN_OK) s = kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, X, &hX);
    if (s == KILN_OK) s = kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, Y, &hY);
    if (s == KILN_OK) s = kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, X2, &hX2);
    if (s == KILN_OK) s = kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, Y2, &hY2);
    /* t38: a from four host arrays, then earthdiam * atan2(a, 1 - a) on the host */
    double t38_ms = 0, err38 = 0, err39 = 0;
    if (s == KILN_OK) {
        double t0 = wall_ms();
        s = kiln_call(a_fn, KILN_ARGS(kiln_arr(hX), kiln_arr(hY), kiln_arr(hX2), kiln_arr(hY2)), &A);
        if (s == KILN_OK) s = kiln_array_to_host(A, Z, sizeof(double) * (size_t)n);
        for (int64_t i = 0; s == KILN_OK && i < n; i++) Z[i] = 1.0 * atan2(Z[i], 1 - Z[i]);
        t38_ms = wall_ms() - t0;
        for (int64_t i = 0; s == KILN_OK && i < n; i++) {
            double r = hav_ref(X[i], Y[i], 30, 101, 1), e = fabs(Z[i] - r) / fmax(fabs(r), 1e-300);
            err38 = e > err38 ? e : err38;
        }
    }
    /* t39: scalars broadcast, atan2 and the scaling fused into the ufunc; timed */
    kiln_value args39[5] = {kiln_arr(hX), kiln_arr(hY), kiln_f64(30.0), kiln_f64(101.0), kiln_f64(1.0)};
    if (s == KILN_OK) {
        timed_call c = {hav, NULL, args39, 5, &D, 1};
        kiln_array *outs[1] = {NULL};
        s = kiln_call(hav, args39, 5, outs);
        if (s == KILN_OK) {
            D = outs[0];
            c.outs = &D; /* later runs write into the first result */
            s = time_call(ctx, &c, repeats(opts), &res->ms_median, &res->ms_min);
        }
        if (s == KILN_OK) s = kiln_array_to_host(D, Z, sizeof(double) * (size_t)n);
        for (int64_t i = 0; s == KILN_OK && i < n; i++) {
            double r = hav_ref(X[i], Y[i], 30, 101, 1), e = fabs(Z[i] - r) / fmax(fabs(r), 1e-300);
            err39 = e > err39 ? e : err39;
        }
    }
    if (s == KILN_OK) {
        res->passed = err38 < 1e-12 && err39 < 1e-12;
        res->bytes = 3.0 * 8 * (double)n;
        res->flops = 30.0 * (double)n;
        snprintf(res->check, sizeof res->check,
                 "%lld points from host arrays: t38 max rel err %.2e (%.2f ms), t39 max rel err %.2e vs "
                 "float64 host",
                 (long long)n, err38, t38_ms, err39);
        if (opts && opts->verbose) printf("haversine: %s; t39 median %.3f ms\n", res->check, res->ms_median);
    }
    kiln_array *arrs[] = {hX, hY, hX2, hY2, A, D};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
    kiln_ufunc_release(a_fn);
    kiln_ufunc_release(hav);
    free(X);
    free(Y);
    free(X2);
    free(Y2);
    free(Z);
    return s;
}

/* ------------------------------------------------------------ add */

int kiln_example_ufunc_add(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    int64_t n = opts && opts->size > 0 ? opts->size : 100000;
    memset(res, 0, sizeof *res);
    kiln_ufunc *add = NULL;
    kiln_array *A = NULL, *B = NULL;
    float *c = example_alloc(sizeof(float) * (size_t)n, "C");
    int s = c ? KILN_OK : KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK)
        s = kiln_vectorize(ctx, "Add", "float32(float32, float32)", "a, b", "return a + b;", NULL, &add);
    if (s == KILN_OK) s = kiln_array_full(ctx, KILN_FLOAT32, 1, &n, 1.0, 0, &A); /* np.ones */
    if (s == KILN_OK) s = kiln_array_full(ctx, KILN_FLOAT32, 1, &n, 1.0, 0, &B);
    const char *targets[2] = {"cpu", "cuda"};
    int ntargets = kiln_context_backend(ctx) == KILN_BACKEND_CUDA ? 2 : 1;
    char done[64] = "";
    int ok = 1;
    for (int t = 0; t < ntargets && s == KILN_OK; t++) {
        kiln_array *C = NULL;
        kiln_value args[2] = {kiln_arr(A), kiln_arr(B)};
        s = kiln_call_ex(add, targets[t], NULL, args, 2, &C);
        if (s == KILN_OK) s = kiln_array_to_host(C, c, sizeof(float) * (size_t)n);
        for (int64_t i = 0; s == KILN_OK && i < n; i++) ok &= c[i] == 2.0f;
        if (s == KILN_OK && t == ntargets - 1) {
            timed_call tc = {add, targets[t], args, 2, &C, t == 0 && ntargets == 2};
            s = time_call(ctx, &tc, repeats(opts), &res->ms_median, &res->ms_min);
        }
        kiln_array_release(C);
        strcat(done, t ? " and " : "");
        strcat(done, targets[t]);
    }
    if (s == KILN_OK) {
        res->passed = ok;
        res->bytes = 12.0 * (double)n;
        res->flops = (double)n;
        snprintf(res->check, sizeof res->check,
                 "C = Add(A, B) on %lld float32 equals 2 everywhere on the %s target%s", (long long)n, done,
                 ntargets > 1 ? "s" : "");
        if (opts && opts->verbose) printf("add: %s\n", res->check);
    }
    kiln_array_release(A);
    kiln_array_release(B);
    kiln_ufunc_release(add);
    free(c);
    return s;
}

/* ------------------------------------------------------------ black_scholes */

static const char bs_preamble[] = "#define RISKFREE 0.02\n"
                                  "#define VOLATILITY 0.30\n" KILN_EXAMPLE_CND_SOURCE;
static const char bs_body[] = "double sqrtT = sqrt(T);\n"
                              "double d1 = (log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT);\n"
                              "double d2 = d1 - V * sqrtT;\n"
                              "double cndd1 = cnd(d1), cndd2 = cnd(d2);\n"
                              "double expRT = exp((-1. * R) * T);\n"
                              "call = S * cndd1 - X * expRT * cndd2;\n"
                              "put = X * expRT * (1.0 - cndd2) - S * (1.0 - cndd1);";

static double cnd_ref(double d) {
    const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937, A4 = -1.821255978, A5 = 1.330274429;
    const double RSQRT2PI = 0.39894228040143267793994605993438;
    double K = 1.0 / (1.0 + 0.2316419 * fabs(d));
    double r = RSQRT2PI * exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
    return d > 0 ? 1.0 - r : r;
}

int kiln_example_ufunc_black_scholes(kiln_context *ctx, const kiln_example_opts *opts,
                                     kiln_example_result *res) {
    int64_t n = opts && opts->size > 0 ? opts->size : 4000000;
    const double R = 0.02, V = 0.30;
    memset(res, 0, sizeof *res);
    size_t bytes = sizeof(double) * (size_t)n;
    double *S = example_alloc(bytes, "S"), *X = example_alloc(bytes, "X"), *T = example_alloc(bytes, "T");
    double *call = example_alloc(bytes, "call"), *put = example_alloc(bytes, "put");
    int s = (S && X && T && call && put) ? KILN_OK : KILN_ERR_OUT_OF_MEMORY;
    example_rng rng = {1};
    for (int64_t i = 0; s == KILN_OK && i < n; i++) { /* randfloat(rand, low, high) */
        S[i] = example_rng_uniform(&rng, 5.0, 30.0);
        X[i] = example_rng_uniform(&rng, 1.0, 100.0);
        T[i] = example_rng_uniform(&rng, 0.25, 10.0);
    }
    kiln_ufunc *bs = NULL;
    kiln_array *dS = NULL, *dX = NULL, *dT = NULL, *outs[2] = {NULL, NULL};
    if (s == KILN_OK)
        s = kiln_vectorize(ctx, "black_scholes", "(f8,f8)(f8,f8,f8,f8,f8)", "S, X, T, R, V -> call, put",
                           bs_body, bs_preamble, &bs);
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT64, 1, &n, S, bytes, &dS);
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT64, 1, &n, X, bytes, &dX);
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT64, 1, &n, T, bytes, &dT);
    kiln_value args[5] = {kiln_arr(dS), kiln_arr(dX), kiln_arr(dT), kiln_f64(R), kiln_f64(V)};
    if (s == KILN_OK) s = kiln_call(bs, args, 5, outs);
    if (s == KILN_OK) {
        timed_call tc = {bs, NULL, args, 5, outs, 0};
        s = time_call(ctx, &tc, repeats(opts), &res->ms_median, &res->ms_min);
    }
    if (s == KILN_OK) s = kiln_array_to_host(outs[0], call, bytes);
    if (s == KILN_OK) s = kiln_array_to_host(outs[1], put, bytes);
    if (s == KILN_OK) {
        /* the seed's check: L1 norm and max absolute error of the call prices */
        double sum_delta = 0, sum_ref = 0, max_delta = 0, max_put = 0;
        for (int64_t i = 0; i < n; i++) {
            double sqrtT = sqrt(T[i]), d1 = (log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (V * sqrtT);
            double d2 = d1 - V * sqrtT, c1 = cnd_ref(d1), c2 = cnd_ref(d2), e = exp(-R * T[i]);
            double cr = S[i] * c1 - X[i] * e * c2, pr = X[i] * e * (1.0 - c2) - S[i] * (1.0 - c1);
            double dc = fabs(call[i] - cr);
            sum_delta += dc;
            sum_ref += fabs(cr);
            max_delta = dc > max_delta ? dc : max_delta;
            max_put = fabs(put[i] - pr) > max_put ? fabs(put[i] - pr) : max_put;
        }
        double l1 = sum_ref > 0 ? sum_delta / sum_ref : 0;
        res->passed = l1 < 1e-12 && max_delta < 1e-9 && max_put < 1e-9;
        res->bytes = 5.0 * 8 * (double)n;
        res->flops = 60.0 * (double)n;
        snprintf(res->check, sizeof res->check,
                 "%lld options: L1 norm %E, max absolute error %E (put %E) vs float64 host", (long long)n, l1,
                 max_delta, max_put);
        if (opts && opts->verbose) printf("L1 norm: %E\nMax absolute error: %E\n", l1, max_delta);
    }
    kiln_array *arrs[] = {dS, dX, dT, outs[0], outs[1]};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
    kiln_ufunc_release(bs);
    free(S);
    free(X);
    free(T);
    free(call);
    free(put);
    return s;
}

/* ------------------------------------------------------------ vector_add */

int kiln_example_ufunc_vector_add(kiln_context *ctx, const kiln_example_opts *opts,
                                  kiln_example_result *res) {
    /* A, B, C and a0 below: 16 bytes of host memory per item (the seed's
     * 320M take 5.1 GB). */
    int64_t n = opts && opts->size > 0 ? opts->size : example_fit_items(opts, 320000000, 16);
    memset(res, 0, sizeof *res);
    res->size = n;
    size_t bytes = sizeof(float) * (size_t)n;
    float *A = NULL, *B = NULL, *C = NULL;
    /* Page-locked host arrays: the copies run at full bus speed (plain
     * malloc'd arrays work too, through kiln's pinned staging buffers). */
    int s = kiln_host_alloc(ctx, bytes, (void **)&A);
    if (s == KILN_OK) s = kiln_host_alloc(ctx, bytes, (void **)&B);
    if (s == KILN_OK) s = kiln_host_alloc(ctx, bytes, (void **)&C);
    kiln_ufunc *vadd = NULL, *fused = NULL;
    kiln_array *hA = NULL, *hB = NULL, *hC = NULL;
    for (int64_t i = 0; s == KILN_OK && i < n; i++) {
        A[i] = 1.0f; /* np.ones */
        B[i] = 1.0f;
        C[i] = 0.0f;
    }
    if (s == KILN_OK)
        s = kiln_vectorize(ctx, "vectorAdd", "float32(float32, float32)", "a, b", "return a + b;", NULL,
                           &vadd);
    if (s == KILN_OK)
        s = kiln_vectorize(ctx, "fused", "f4(f4,f4)", "a, b", "return (a * 10 + 2) * ((b + 2) * 10 - 5) * 5;",
                           NULL, &fused);
    if (s == KILN_OK) s = kiln_array_wrap_host(ctx, KILN_FLOAT32, 1, &n, NULL, A, &hA);
    if (s == KILN_OK) s = kiln_array_wrap_host(ctx, KILN_FLOAT32, 1, &n, NULL, B, &hB);
    if (s == KILN_OK) s = kiln_array_wrap_host(ctx, KILN_FLOAT32, 1, &n, NULL, C, &hC);
    kiln_value args[2] = {kiln_arr(hA), kiln_arr(hB)};
    kiln_array *outs[1] = {hC};
    if (s == KILN_OK) {
        /* C = vectorAdd(A, B), end to end from host memory */
        timed_call tc = {vadd, NULL, args, 2, outs, 1};
        s = time_call(ctx, &tc, repeats(opts) < 5 ? repeats(opts) : 5, &res->ms_median, &res->ms_min);
    }
    int ok_add = 1;
    for (int64_t i = 0; s == KILN_OK && i < n; i++) ok_add &= C[i] == 2.0f;
    /* the fused expression, in place on a (PyCUDA's InOut) with random inputs */
    example_rng rng = {3};
    float *a0 = NULL;
    if (s == KILN_OK) {
        example_fill_f32(&rng, A, (size_t)n, -1, 1);
        example_fill_f32(&rng, B, (size_t)n, -1, 1);
        a0 = example_alloc(bytes, "a copy");
        if (!a0)
            s = KILN_ERR_OUT_OF_MEMORY;
        else
            memcpy(a0, A, bytes);
    }
    kiln_array *inplace[1] = {hA};
    double fused_ms = 0, max_rel = 0;
    if (s == KILN_OK) {
        double t0 = wall_ms();
        s = kiln_call(fused, KILN_ARGS(kiln_arr(hA), kiln_arr(hB)), inplace);
        fused_ms = wall_ms() - t0;
    }
    for (int64_t i = 0; s == KILN_OK && i < n; i++) {
        double r = ((double)a0[i] * 10 + 2) * (((double)B[i] + 2) * 10 - 5) * 5;
        double e = fabs((double)A[i] - r) / (fabs(r) + 1e-3);
        max_rel = e > max_rel ? e : max_rel;
    }
    if (s == KILN_OK) {
        res->passed = ok_add && max_rel < 1e-5;
        res->bytes = 12.0 * (double)n;
        res->flops = (double)n;
        snprintf(res->check, sizeof res->check,
                 "%lld float32 from host arrays: c == 2 everywhere; fused (a*10+2)*((b+2)*10-5)*5 in place "
                 "(%.1f ms) max rel err %.2e vs float64 host",
                 (long long)n, fused_ms, max_rel);
        if (opts && opts->verbose)
            printf("c[:5] = %g %g ...\nvectorAdd took %f seconds\n%s\n", C[0], n > 1 ? C[1] : C[0],
                   res->ms_median / 1e3, res->check);
    }
    kiln_array_release(hA);
    kiln_array_release(hB);
    kiln_array_release(hC);
    kiln_ufunc_release(vadd);
    kiln_ufunc_release(fused);
    if (A) kiln_host_free(ctx, A);
    if (B) kiln_host_free(ctx, B);
    if (C) kiln_host_free(ctx, C);
    free(a0);
    return s;
}
