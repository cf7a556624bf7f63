/* random_bench.c: kiln's generators beside cuRAND called directly.
 *
 *   kiln_random_bench [cpu|cuda|cuda-overhead|mrg-sweep] [N]
 *
 * cuda: 10^8 (or N) uniform f32, uniform f64 and normal f32 from each
 *   generator (XORWOW and MRG32k3a by kiln's own kernels: KILN_RNG_MRG_CUDA
 *   is set to own unless given), kiln's fill beside curandGenerate* on the same stream and
 *   memory, median of 15 batches (after 3 warm-ups), the two taking turns
 *   over 3 rounds and each keeping its best median, as a ratio kiln / cuRAND
 *   and as GB/s and a fraction of the device's write bandwidth
 *   ($KILN_WRITE_GBS, default 2900 for an H100 SXM: what cuRAND's Philox
 *   reaches); then seed 001's size, 10^6 f64 uniforms, end to end (fill +
 *   synchronize).
 * mrg-sweep: kiln's MRG32k3a kernel at 10^8 (or N) uniform f32 and normal
 *   f32 for each shape the settings offer (KILN_RNG_MRG_STEPS, _BLOCK,
 *   _REGS; steps 0: the host's choice) and each step (KILN_RNG_MRG_STEP:
 *   int, fp64), as ms, GB/s, fraction of the write
 *   peak and ratio to cuRAND's time from the same run: one GPU run tunes it.
 * cuda-overhead: Philox fills of 10^6 (or N) values, each synchronised,
 *   with and without the cuRAND setters kiln may call before a fill: where
 *   kiln's per-call cost over cuRAND's comes from.
 * cpu: kiln's CPU provider (all cores) beside cuRAND's host generator and a
 *   plain one-thread C loop of the same generator, in GB/s.
 * Links the static library to reach the loaded cuRAND table (curand_lib.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/context.h"
#include "kiln.h"
#include "random/curand_lib.h"
#include "random/rng_engine.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}
static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

enum { U32, U64, N32 };
static const char *dist_name[3] = {"uniform f32", "uniform f64", "normal f32"};
static const kiln_rng_type types[3] = {KILN_RNG_XORWOW, KILN_RNG_PHILOX4_32_10, KILN_RNG_MRG32K3A};

#define REPS 15
/* kiln and cuRAND take turns, ROUNDS each, and each side keeps its best
 * median: a drift of the machine during one side's batches (measured: 3 %
 * on rows where kiln makes cuRAND's own call) does not count against it. */
#define ROUNDS 3

static int kiln_fill(kiln_rng *rng, kiln_array *x, int d) {
    return d == N32 ? kiln_rng_normal(rng, x, 0, 1) : kiln_rng_uniform(rng, x);
}
static int curand_fill(const kiln_curand_api *api, void *g, void *p, size_t n, int d) {
    if (d == U32) return api->curandGenerateUniform(g, p, n);
    if (d == U64) return api->curandGenerateUniformDouble(g, p, n);
    return api->curandGenerateNormal(g, p, n, 0.f, 1.f);
}

/* Median ms of one fill: kiln (which == 0) or cuRAND direct (1), on kiln's
 * default stream; synchronised after every call (end to end) or per batch. */
static double time_gpu(kiln_context *ctx, const kiln_curand_api *api, kiln_rng_type t, int d, size_t n,
                       int which, int sync_each) {
    int64_t shape[1] = {(int64_t)n};
    kiln_array *x = NULL;
    if (kiln_array_empty(ctx, d == U64 ? KILN_FLOAT64 : KILN_FLOAT32, 1, shape, &x) != KILN_OK) return NAN;
    kiln_rng *rng = NULL;
    void *g = NULL;
    if (which == 0) {
        kiln_rng_create(ctx, t, 1234, &rng);
    } else {
        void *cuctx = NULL, *stream = NULL;
        ctx->ops->native_handles(ctx->state, NULL, &cuctx, &stream);
        api->curandCreateGenerator(&g, kiln_curand_rng_type(t));
        api->curandSetPseudoRandomGeneratorSeed(g, 1234);
        api->curandSetStream(g, stream);
    }
    double ms[REPS];
    double result = NAN;
    for (int r = -3; r < REPS; r++) {
        int batch = sync_each ? 1 : 5;
        kiln_synchronize(ctx);
        double t0 = now_ms();
        for (int b = 0; b < batch; b++) {
            int rc = which == 0 ? kiln_fill(rng, x, d) : curand_fill(api, g, kiln_array_data(x), n, d);
            if (rc) {
                fprintf(stderr, "fill failed: %d %s\n", rc, which == 0 ? kiln_last_error() : "cuRAND");
                goto done;
            }
        }
        kiln_synchronize(ctx);
        if (r >= 0) ms[r] = (now_ms() - t0) / batch;
    }
    result = median(ms, REPS);
done:
    if (g) api->curandDestroyGenerator(g);
    kiln_rng_release(rng);
    kiln_array_release(x);
    return result;
}

/* Whether kiln's fills equal cuRAND's: two fills of n values by a fresh kiln
 * generator and a fresh cuRAND generator (seed 1234) on kiln's default
 * stream, compared byte for byte. "same", "DIFFER" or "?" (a call failed). */
static const char *same_bits(kiln_context *ctx, const kiln_curand_api *api, kiln_rng_type t, int d,
                             size_t n) {
    size_t es = d == U64 ? 8 : 4;
    int64_t shape[1] = {(int64_t)n};
    kiln_array *x = NULL, *y = NULL;
    kiln_rng *rng = NULL;
    void *g = NULL, *cuctx = NULL, *stream = NULL;
    char *a = malloc(n * es), *b = malloc(n * es);
    const char *verdict = "?";
    if (!a || !b || kiln_array_empty(ctx, d == U64 ? KILN_FLOAT64 : KILN_FLOAT32, 1, shape, &x) != KILN_OK ||
        kiln_array_empty(ctx, d == U64 ? KILN_FLOAT64 : KILN_FLOAT32, 1, shape, &y) != KILN_OK ||
        kiln_rng_create(ctx, t, 1234, &rng) != KILN_OK)
        goto done;
    ctx->ops->native_handles(ctx->state, NULL, &cuctx, &stream);
    if (api->curandCreateGenerator(&g, kiln_curand_rng_type(t)) ||
        api->curandSetPseudoRandomGeneratorSeed(g, 1234) || api->curandSetStream(g, stream))
        goto done;
    verdict = "same";
    for (int c = 0; c < 2 && strcmp(verdict, "same") == 0; c++) {
        if (kiln_fill(rng, x, d) || curand_fill(api, g, kiln_array_data(y), n, d) || kiln_synchronize(ctx) ||
            kiln_array_to_host(x, a, n * es) || kiln_array_to_host(y, b, n * es)) {
            verdict = "?";
            break;
        }
        if (memcmp(a, b, n * es)) verdict = "DIFFER";
    }
done:
    if (g) api->curandDestroyGenerator(g);
    kiln_rng_release(rng);
    kiln_array_release(x);
    kiln_array_release(y);
    free(a);
    free(b);
    return verdict;
}

/* A CUDA context and cuRAND for the GPU benchmarks; 1 (said on stderr,
 * nothing left open) when either is missing. */
static int open_cuda_curand(kiln_context **ctx, const kiln_curand_api **api) {
    if (kiln_open(ctx, "cuda") != KILN_OK) {
        fprintf(stderr, "no CUDA context: %s\n", kiln_last_error());
        return 1;
    }
    kiln_status st;
    *api = kiln_curand_load(&st);
    if (!*api) {
        fprintf(stderr, "%s\n", kiln_last_error());
        kiln_close(*ctx);
        *ctx = NULL;
        return 1;
    }
    return 0;
}

static int bench_cuda(size_t n) {
    kiln_context *ctx = NULL;
    const kiln_curand_api *api = NULL;
    if (open_cuda_curand(&ctx, &api)) return 1;
    const char *w = getenv("KILN_WRITE_GBS");
    double peak = w ? atof(w) : 2900.0;
    setenv("KILN_RNG_MRG_CUDA", "own", 0); /* kiln's MRG32k3a kernel, unless told otherwise */
    printf("GPU, %zu values; ratio = kiln / cuRAND (<= 1.0: kiln as fast); write peak %.0f GB/s; "
           "kiln's MRG32k3a fills by %s\n",
           n, peak, strcmp(getenv("KILN_RNG_MRG_CUDA"), "curand") ? "its own kernel" : "cuRAND");
    printf("%-14s %-12s %10s %10s %7s %9s %7s  %s\n", "generator", "dist", "kiln ms", "cuRAND ms", "ratio",
           "kiln GB/s", "of peak", "bits (2 x 10^6, fresh generators)");
    for (int ti = 0; ti < 3; ti++)
        for (int d = 0; d < 3; d++) {
            double a = INFINITY, b = INFINITY;
            for (int round = 0; round < ROUNDS; round++) {
                a = fmin(a, time_gpu(ctx, api, types[ti], d, n, 0, 0));
                b = fmin(b, time_gpu(ctx, api, types[ti], d, n, 1, 0));
            }
            double gbs = (double)n * (d == U64 ? 8 : 4) / (a * 1e6);
            printf("%-14s %-12s %10.3f %10.3f %7.3f %9.0f %6.1f%%  %s\n", kiln_rng_type_name(types[ti]),
                   dist_name[d], a, b, a / b, gbs, 100 * gbs / peak,
                   same_bits(ctx, api, types[ti], d, 1000000));
        }
    printf("seed 001's size: 10^6 uniform f64, end to end (fill + synchronize), kiln / cuRAND ms\n");
    for (int ti = 0; ti < 3; ti++) {
        double a = INFINITY, b = INFINITY;
        for (int round = 0; round < ROUNDS; round++) {
            a = fmin(a, time_gpu(ctx, api, types[ti], U64, 1000000, 0, 1));
            b = fmin(b, time_gpu(ctx, api, types[ti], U64, 1000000, 1, 1));
        }
        printf("%-14s %10.4f %10.4f  ratio %.3f\n", kiln_rng_type_name(types[ti]), a, b, a / b);
    }
    kiln_close(ctx);
    return 0;
}

/* Up to 16 unsigned numbers from a comma-separated list in env var `name`
 * into list; the count, or `dflt` (the list untouched) when it is unset. */
static size_t list_from_env(const char *name, unsigned *list, size_t dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    size_t n = 0;
    for (char *end = NULL; *v && n < 16; v = *end ? end + 1 : end) {
        list[n++] = (unsigned)strtoul(v, &end, 10);
        if (end == v) break;
    }
    return n;
}

/* kiln's MRG32k3a kernel in every shape the settings offer, beside
 * cuRAND's time from the same run. */
static int bench_mrg_sweep(size_t n) {
    kiln_context *ctx = NULL;
    const kiln_curand_api *api = NULL;
    if (open_cuda_curand(&ctx, &api)) return 1;
    const char *w = getenv("KILN_WRITE_GBS");
    double peak = w ? atof(w) : 2900.0;
    setenv("KILN_RNG_MRG_CUDA", "own", 1);
    int sms = ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 132;
    /* the lists swept, each replaceable by a comma-separated list in
     * KILN_BENCH_MRG_STEPS, _BLOCKS, _REGS, _KINDS (0 int, 1 fp64) */
    unsigned steps[16] = {0, 32, 64, 128, 256, 512, 1024}, blocks[16] = {128, 256, 512},
             regs_list[16] = {32, 64}, kinds[16] = {0, 1};
    size_t nsteps = list_from_env("KILN_BENCH_MRG_STEPS", steps, 7),
           nblocks = list_from_env("KILN_BENCH_MRG_BLOCKS", blocks, 3),
           nregs = list_from_env("KILN_BENCH_MRG_REGS", regs_list, 2),
           nkinds = list_from_env("KILN_BENCH_MRG_KINDS", kinds, 2);
    static const int dists[2] = {U32, N32};
    printf("MRG32k3a, kiln's kernel, %zu values, %d SMs; write peak %.0f GB/s; ratio = kiln / cuRAND\n", n,
           sms, peak);
    for (int di = 0; di < 2; di++) {
        int d = dists[di];
        double b = INFINITY;
        for (int round = 0; round < ROUNDS; round++)
            b = fmin(b, time_gpu(ctx, api, KILN_RNG_MRG32K3A, d, n, 1, 0));
        printf("%s: cuRAND %.3f ms; steps 0 = the host's choice\n", dist_name[d], b);
        printf("%5s %6s %6s %5s %10s %9s %8s %7s\n", "step", "steps", "block", "regs", "kiln ms", "GB/s",
               "of peak", "ratio");
        for (size_t ki = 0; ki < nkinds; ki++)
            for (size_t si = 0; si < nsteps; si++)
                for (size_t bi = 0; bi < nblocks; bi++)
                    for (size_t ri = 0; ri < nregs; ri++) {
                        int fp = kinds[ki] != 0, regs = (int)regs_list[ri];
                        char v[32];
                        setenv("KILN_RNG_MRG_STEP", fp ? "fp64" : "int", 1);
                        snprintf(v, sizeof v, "%u", steps[si]);
                        if (steps[si])
                            setenv("KILN_RNG_MRG_STEPS", v, 1);
                        else
                            unsetenv("KILN_RNG_MRG_STEPS");
                        snprintf(v, sizeof v, "%u", blocks[bi]);
                        setenv("KILN_RNG_MRG_BLOCK", v, 1);
                        snprintf(v, sizeof v, "%d", regs);
                        setenv("KILN_RNG_MRG_REGS", v, 1);
                        double a = time_gpu(ctx, api, KILN_RNG_MRG32K3A, d, n, 0, 0);
                        double gbs = (double)n * 4 / (a * 1e6);
                        printf("%5s %6u %6u %5d %10.3f %9.0f %7.1f%% %7.3f\n", fp ? "fp64" : "int", steps[si],
                               blocks[bi], regs, a, gbs, 100 * gbs / peak, a / b);
                    }
    }
    unsetenv("KILN_RNG_MRG_STEP");
    unsetenv("KILN_RNG_MRG_STEPS");
    unsetenv("KILN_RNG_MRG_BLOCK");
    unsetenv("KILN_RNG_MRG_REGS");
    kiln_close(ctx);
    return 0;
}

/* Where kiln's per-call cost on top of cuRAND comes from: Philox, n values
 * per call, synchronised after each call, with the cuRAND setters kiln may
 * call before a fill (none, the offset, seed and offset, everything). */
static int bench_cuda_overhead(size_t n) {
    kiln_context *ctx = NULL;
    const kiln_curand_api *api = NULL;
    if (open_cuda_curand(&ctx, &api)) return 1;
    void *cuctx = NULL, *stream = NULL;
    ctx->ops->native_handles(ctx->state, NULL, &cuctx, &stream);
    int64_t shape[1] = {(int64_t)n};
    kiln_array *xf = NULL, *xd = NULL;
    if (kiln_array_empty(ctx, KILN_FLOAT32, 1, shape, &xf) != KILN_OK ||
        kiln_array_empty(ctx, KILN_FLOAT64, 1, shape, &xd) != KILN_OK)
        return 1;
    static const char *what[6] = {"generate only",   "+ offset (same)",    "+ offset (new)",
                                  "+ seed + offset", "+ all four setters", "kiln fill"};
    printf("Philox, %zu values per call, synchronised, median of %d, ms per call\n", n, 3 * REPS);
    printf("%-22s %12s %12s %12s\n", "cuRAND calls", "uniform f32", "uniform f64", "normal f32");
    for (int v = 0; v < 6; v++) {
        printf("%-22s", what[v]);
        for (int d = 0; d < 3; d++) {
            kiln_array *x = d == U64 ? xd : xf;
            void *g = NULL;
            kiln_rng *rng = NULL;
            if (v == 5) {
                kiln_rng_create(ctx, KILN_RNG_PHILOX4_32_10, 1234, &rng);
            } else {
                api->curandCreateGenerator(&g, KILN_CURAND_RNG_PHILOX4_32_10);
                api->curandSetPseudoRandomGeneratorSeed(g, 1234);
                api->curandSetStream(g, stream);
            }
            double ms[3 * REPS];
            for (int r = -3; r < 3 * REPS; r++) {
                unsigned long long off = (unsigned long long)(r + 4) * n;
                kiln_synchronize(ctx);
                double t0 = now_ms();
                int rc = 0;
                if (v == 5) {
                    rc = kiln_fill(rng, x, d);
                } else {
                    if (v == 1) rc = api->curandSetGeneratorOffset(g, 0);
                    if (v == 2) rc = api->curandSetGeneratorOffset(g, off);
                    if (v == 3) {
                        rc = api->curandSetPseudoRandomGeneratorSeed(g, 1234);
                        if (!rc) rc = api->curandSetGeneratorOffset(g, off);
                    }
                    if (v == 4) {
                        rc = api->curandSetGeneratorOrdering(g, KILN_CURAND_ORDERING_DEFAULT);
                        if (!rc) rc = api->curandSetPseudoRandomGeneratorSeed(g, 1234);
                        if (!rc) rc = api->curandSetGeneratorOffset(g, off);
                        if (!rc) rc = api->curandSetStream(g, stream);
                    }
                    if (!rc) rc = curand_fill(api, g, kiln_array_data(x), n, d);
                }
                kiln_synchronize(ctx);
                if (r >= 0) ms[r] = now_ms() - t0;
                if (rc) fprintf(stderr, "call failed: %d\n", rc);
            }
            printf(" %12.4f", median(ms, 3 * REPS));
            if (g) api->curandDestroyGenerator(g);
            kiln_rng_release(rng);
        }
        printf("\n");
    }
    kiln_array_release(xf);
    kiln_array_release(xd);
    kiln_close(ctx);
    return 0;
}

/* One-thread C loops of each generator, uniform floats. */
static void plain_xorwow(float *out, size_t n) {
    kiln_xorwow s;
    kiln_xorwow_seed(&s, 1234);
    for (size_t i = 0; i < n; i++) out[i] = kiln_bits_uniform(kiln_xorwow_next(&s));
}
static void plain_philox(float *out, size_t n) {
    uint32_t w[4];
    for (size_t i = 0; i < n; i += 4) {
        uint32_t ctr[4] = {(uint32_t)(i / 4), (uint32_t)((i / 4) >> 32), 0, 0};
        kiln_philox4x32_10(ctr, 1234, 0, w);
        for (size_t q = 0; q < 4 && i + q < n; q++) out[i + q] = kiln_bits_uniform(w[q]);
    }
}
static void plain_mrg(float *out, size_t n) {
    kiln_mrg32k3a s;
    kiln_mrg32k3a_seed(&s, 1234);
    for (size_t i = 0; i < n; i++) out[i] = kiln_mrg32k3a_uniform(kiln_mrg32k3a_next(&s));
}

static int bench_cpu(size_t n) {
    kiln_context *ctx = NULL;
    if (kiln_open(&ctx, "cpu") != KILN_OK) return 1;
    kiln_status st;
    const kiln_curand_api *api = kiln_curand_load(&st);
    if (!api) fprintf(stderr, "cuRAND host column skipped: %s\n", kiln_last_error());
    kiln_device_info info;
    kiln_device_info_get(ctx, &info);
    printf("CPU (%s, %d cores), %zu uniform f32, GB/s (median of 5)\n", info.name, info.multiprocessors, n);
    printf("%-14s %10s %12s %12s\n", "generator", "kiln", "cuRAND host", "plain C loop");
    int64_t shape[1] = {(int64_t)n};
    kiln_array *x = NULL;
    float *buf = malloc(n * sizeof(float));
    if (kiln_array_empty(ctx, KILN_FLOAT32, 1, shape, &x) != KILN_OK || !buf) return 1;
    for (int ti = 0; ti < 3; ti++) {
        double k[5], c[5], p[5];
        kiln_rng *rng = NULL;
        kiln_rng_create(ctx, types[ti], 1234, &rng);
        void *g = NULL;
        if (api) {
            api->curandCreateGeneratorHost(&g, kiln_curand_rng_type(types[ti]));
            api->curandSetPseudoRandomGeneratorSeed(g, 1234);
        }
        for (int r = -1; r < 5; r++) {
            double t0 = now_ms();
            kiln_rng_uniform(rng, x);
            double t1 = now_ms();
            if (api) api->curandGenerateUniform(g, buf, n);
            double t2 = now_ms();
            if (ti == 0) plain_xorwow(buf, n);
            if (ti == 1) plain_philox(buf, n);
            if (ti == 2) plain_mrg(buf, n);
            double t3 = now_ms();
            if (r >= 0) {
                k[r] = t1 - t0;
                c[r] = t2 - t1;
                p[r] = t3 - t2;
            }
        }
        double bytes = (double)n * 4;
        printf("%-14s %10.2f %12.2f %12.2f\n", kiln_rng_type_name(types[ti]), bytes / (median(k, 5) * 1e6),
               api ? bytes / (median(c, 5) * 1e6) : NAN, bytes / (median(p, 5) * 1e6));
        if (g) api->curandDestroyGenerator(g);
        kiln_rng_release(rng);
    }
    free(buf);
    kiln_array_release(x);
    kiln_close(ctx);
    return 0;
}

int main(int argc, char **argv) {
    const char *target = argc > 1 ? argv[1] : "cpu";
    size_t n = argc > 2 ? (size_t)atoll(argv[2]) : 0;
    if (!strcmp(target, "cuda")) return bench_cuda(n ? n : 100000000);
    if (!strcmp(target, "cuda-overhead")) return bench_cuda_overhead(n ? n : 1000000);
    if (!strcmp(target, "mrg-sweep")) return bench_mrg_sweep(n ? n : 100000000);
    return bench_cpu(n ? n : 10000000);
}
