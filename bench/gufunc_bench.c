/* gufunc_bench.c: seed 002's guvectorize workload through
 * kiln_guvectorize beside hand-written code on the same array: the Hermite
 * recurrence "(n)->(n)" in place on rows x 4 float32, in the user's
 * row-major layout (shape [rows, 4]), at 128M x 4 and 1.28M x 4 (the seed's
 * size). Native is native/kiln_native.cu on CUDA (the fastest of two
 * coalesced float4 kernels; the seed's one-row-per-thread scalar pattern is
 * timed for reference) and native/native_cpu.c's OpenMP loop on the CPU.
 * README.md (this folder) says what the numbers mean. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "example_util.h"

/* The host-side fill and check run on all cores only on a CUDA context
 * (`par`): on the CPU backend an OpenMP team left spinning after them
 * (libgomp spins a while after each region) takes cores from kiln's thread
 * pool in the timed runs that follow; on two cores that doubled kiln's time. */
#ifdef _OPENMP
#define GU_OMP_FOR_ _Pragma("omp parallel for schedule(static) if (par)")
#define GU_OMP_FOR_MAX_WORST_ _Pragma("omp parallel for schedule(static) if (par) reduction(max : worst)")
#else
#define GU_OMP_FOR_
#define GU_OMP_FOR_MAX_WORST_
#endif

enum { GU_COLS = 4 };
#define GU_SEED 0x5eed0002ULL      /* examples/gufunc_examples.c's inputs */
#define GU_COPY_CEILING_GBS 3000.0 /* H100 device-to-device copy, BASELINES.md (3011 GB/s) */

/* examples/gufunc_examples.c's hermite body: the seed's my_func in CUDA C. */
static const char hermite_body[] = KILN_EXAMPLE_HERMITE_BODY;

static const char *const variant_names[KILN_NATIVE_HERMITE_VARIANTS] = {"float4", "float4_x4", "rows"};

/* x of row r: the r-th draw of the example's splitmix64 stream (uniform in
 * [-2, 2)), computed from r alone so that filling and checking run in
 * parallel without storing x. */
static float gu_x(int64_t r) {
    example_rng g = {GU_SEED + (uint64_t)r * 0x9e3779b97f4a7c15ULL};
    return (float)example_rng_uniform(&g, -2, 2);
}

/* The seed's setup: ones, column 1 = X. */
static void gu_init(float *host, int64_t rows, int par) {
    GU_OMP_FOR_
    for (int64_t r = 0; r < rows; r++) {
        float *o = host + r * GU_COLS;
        o[0] = o[2] = o[3] = 1.0f;
        o[1] = gu_x(r);
    }
}

/* Worst |got - ref| / (1 + |ref|) over every element against the seed's
 * foo(X, 4) in float64 (x*x - 1 cancels near |x| = 1, hence the 1 +);
 * NaN counts as infinite. */
static double gu_max_err(const float *host, int64_t rows, int par) {
    double worst = 0;
    GU_OMP_FOR_MAX_WORST_
    for (int64_t r = 0; r < rows; r++) {
        double x = gu_x(r), ref[GU_COLS] = {1.0, x, 1.0, 1.0};
        for (int i = 2; i < GU_COLS; i++) ref[i] = x * ref[i - 1] - (i - 1) * ref[i - 2];
        double c = 1;
        for (int i = 2; i < GU_COLS; i++) {
            c *= i;
            ref[i] /= sqrt(c);
        }
        for (int i = 0; i < GU_COLS; i++) {
            double e = fabs(host[r * GU_COLS + i] - ref[i]) / (1 + fabs(ref[i]));
            if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
        }
    }
    return worst;
}

/* Puts the initial rows back (from `host`, which gu_init filled), so a
 * kernel that does nothing fails the check. */
static int gu_par(kiln_context *ctx) { return kiln_context_backend(ctx) == KILN_BACKEND_CUDA; }

static int gu_reset(kiln_context *ctx, kiln_array *X, float *host, int64_t rows) {
    gu_init(host, rows, gu_par(ctx));
    kiln_status s = kiln_array_from_host_copy(X, host, (size_t)rows * GU_COLS * sizeof(float));
    return s == KILN_OK ? (int)kiln_synchronize(ctx) : (int)s;
}

static int gu_check(kiln_context *ctx, kiln_array *X, float *host, int64_t rows, double *err) {
    kiln_status s = kiln_array_to_host(X, host, (size_t)rows * GU_COLS * sizeof(float));
    if (s == KILN_OK) *err = gu_max_err(host, rows, gu_par(ctx));
    return (int)s;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* kiln: warm-ups, then `repeat` runs of `batch` in-place calls between two
 * events (device time on CUDA, wall time on the CPU); per call. f is fresh:
 * its first calls run the any-layout kernel kiln_guvectorize built, until
 * it has served KILN_GUFUNC_ANY_LIMIT elements and a call builds the
 * kernel of the layout (in the background). The warm-ups go on until that
 * build and one round more (at most 30 s), so the timed runs are the
 * steady state; the first warm-up, when it built nothing, is the
 * any-layout kernel's figure (*any_ms, else -1). */
static int gu_time_kiln(kiln_context *ctx, kiln_gufunc *f, kiln_array *X, int batch, int repeat,
                        double *median, double *min, double *any_ms) {
    double *ms = calloc((size_t)repeat, sizeof *ms);
    kiln_event *e0 = NULL, *e1 = NULL;
    if (!ms) return KILN_ERR_OUT_OF_MEMORY;
    const kiln_value args[2] = {kiln_arr(X), kiln_arr(X)}; /* my_func(dev_inp, dev_inp) */
    kiln_status s = kiln_event_create(ctx, &e0);
    if (s == KILN_OK) s = kiln_event_create(ctx, &e1);
    int64_t made = kiln_example_modules_built(ctx);
    double start = kiln_example_now_ms();
    int handed = 0;
    *any_ms = -1;
    for (int r = -3; r < repeat && s == KILN_OK; r++) {
        int64_t before = kiln_example_modules_built(ctx);
        s = kiln_event_record(e0, NULL);
        for (int b = 0; b < batch && s == KILN_OK; b++) s = kiln_gufunc_call(f, args, 2, NULL, NULL);
        if (s == KILN_OK) s = kiln_event_record(e1, NULL);
        if (s == KILN_OK) s = kiln_event_synchronize(e1);
        float t = 0;
        if (s == KILN_OK) s = kiln_event_elapsed_ms(e0, e1, &t);
        if (s == KILN_OK && r == -3 && kiln_example_modules_built(ctx) == before) *any_ms = (double)t / batch;
        if (s == KILN_OK && r >= 0) ms[r] = (double)t / batch;
        /* not handed over yet (the build runs in the background: up to
         * 30 s), or just handed over: one more warm-up on the new kernel */
        if (r == -1 && !handed && kiln_example_now_ms() - start < 30000) {
            handed = kiln_example_modules_built(ctx) != made;
            r--;
        }
    }
    if (s == KILN_OK) {
        qsort(ms, (size_t)repeat, sizeof *ms, cmp_double);
        *median = ms[repeat / 2];
        *min = ms[0];
    }
    kiln_event_release(e0);
    kiln_event_release(e1);
    free(ms);
    return (int)s;
}

/* One native variant: reset, time, check. Returns a kiln status; a native
 * failure goes to row->note and *ran stays 0. */
static int gu_native_variant(kiln_context *ctx, const bench_native *nat, int variant, kiln_array *X,
                             float *host, bench_gu_row *row, int repeat, int *ran, double *median,
                             double *min, double *err) {
    kiln_device_info dev;
    int s = kiln_device_info_get(ctx, &dev);
    if (s != KILN_OK) return s;
    kiln_native_geometry g = {{1, 1, 1}, {256, 1, 1}, dev.ordinal, 3, repeat, 1};
    float *times = calloc((size_t)repeat, sizeof *times);
    double *d = calloc((size_t)repeat, sizeof *d);
    *ran = 0;
    if (!times || !d) s = KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = gu_reset(ctx, X, host, row->rows);
    if (s == KILN_OK) {
        int rc = nat->hermite(&g, variant, kiln_array_data(X), row->rows, row->batch, times);
        if (rc != 0) {
            snprintf(row->note, sizeof row->note, "native %s failed: %s", variant_names[variant],
                     nat->error_string ? nat->error_string(rc) : "error");
        } else {
            for (int i = 0; i < repeat; i++) d[i] = times[i];
            qsort(d, (size_t)repeat, sizeof *d, cmp_double);
            *median = d[repeat / 2];
            *min = d[0];
            *ran = 1;
            s = gu_check(ctx, X, host, row->rows, err);
        }
    }
    free(times);
    free(d);
    return s;
}

static void gu_label(char *buf, size_t size, int64_t rows) {
    if (rows >= 1000000 && rows % 1000000 == 0)
        snprintf(buf, size, "%lldM", (long long)(rows / 1000000));
    else if (rows >= 1000000 && rows % 10000 == 0)
        snprintf(buf, size, "%.2fM", (double)rows / 1e6);
    else
        snprintf(buf, size, "%lld", (long long)rows);
}

/* One size: kiln, then every native variant, each on the reset array. */
static int gu_run_size(kiln_context *ctx, const bench_native *nat, int cuda, int64_t rows, int repeat,
                       bench_gu_row *row) {
    memset(row, 0, sizeof *row);
    row->name = "hermite";
    row->cuda = cuda;
    row->rows = rows;
    row->cols = GU_COLS;
    row->bytes = 2.0 * (double)rows * GU_COLS * sizeof(float); /* every row read and written once */
    row->flops = 10.0 * (double)rows;                          /* as examples/gufunc_examples.c counts */
    row->batch = cuda && rows < 10000000 ? 20 : 1;
    row->target = cuda ? (rows >= 10000000 ? 1.05 : 1.2) : 1.5;
    row->ceiling_gbs = cuda ? GU_COPY_CEILING_GBS : 0;
    for (int v = 0; v < KILN_NATIVE_HERMITE_VARIANTS; v++) row->variant_ms[v] = -1;
    size_t bytes = (size_t)rows * GU_COLS * sizeof(float);
    float *host = malloc(bytes);
    if (!host) {
        snprintf(row->kiln_check, sizeof row->kiln_check, "cannot allocate %zu host bytes", bytes);
        return KILN_ERR_OUT_OF_MEMORY;
    }
    gu_init(host, rows, cuda);
    kiln_array *X = NULL;
    int64_t shape[2] = {rows, GU_COLS};
    int s = kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, host, bytes, &X);
    double err = INFINITY;
    kiln_gufunc *f = NULL; /* fresh per size: its any-layout kernel serves the first calls again */
    if (s == KILN_OK)
        s = kiln_guvectorize(ctx, "hermite", "void(f4[:], f4[:])", "(n)->(n)", "inp, out", hermite_body, NULL,
                             &f);
    if (s == KILN_OK)
        s = gu_time_kiln(ctx, f, X, row->batch, repeat, &row->kiln_ms, &row->kiln_min_ms, &row->any_ms);
    kiln_gufunc_release(f);
    if (s == KILN_OK) s = gu_check(ctx, X, host, rows, &err);
    if (s == KILN_OK) {
        row->kiln_passed = err < 1e-5;
        snprintf(row->kiln_check, sizeof row->kiln_check,
                 "max err %.2e (|d|/(1+|ref|)) vs the seed's foo(X, 4) in float64", err);
    }
    if (s == KILN_OK && !nat->hermite) snprintf(row->note, sizeof row->note, "%s", nat->note);
    int variants = cuda ? KILN_NATIVE_HERMITE_VARIANTS : 1, all_passed = 1, checked = 0;
    double best_err = INFINITY;
    char failed[96] = "";
    for (int v = 0; s == KILN_OK && nat->hermite && v < variants; v++) {
        int ran = 0;
        double med = 0, mn = 0, verr = INFINITY;
        s = gu_native_variant(ctx, nat, v, X, host, row, repeat, &ran, &med, &mn, &verr);
        if (s != KILN_OK || !ran) break;
        row->variant_ms[v] = med;
        checked++;
        if (!(verr < 1e-5)) {
            all_passed = 0;
            snprintf(failed + strlen(failed), sizeof failed - strlen(failed), "; %s FAILED (max err %.2e)",
                     variant_names[v], verr);
        }
        /* "native" is the fastest coalesced kernel; ROWS is only a reference. */
        if (v != KILN_NATIVE_HERMITE_ROWS && (!row->have_native || med < row->native_ms)) {
            row->have_native = 1;
            row->native_kernel = cuda ? variant_names[v] : "C loop, OpenMP over rows";
            row->native_ms = med;
            row->native_min_ms = mn;
            best_err = verr;
        }
    }
    if (row->have_native) {
        row->native_passed = all_passed;
        snprintf(row->native_check, sizeof row->native_check, "%s: max err %.2e%s", row->native_kernel,
                 best_err,
                 !all_passed   ? failed
                 : checked > 1 ? "; every kernel checked, all ok"
                               : "");
    }
    kiln_array_release(X);
    free(host);
    return s;
}

static void gu_rate(char *buf, size_t size, double bytes, double ms, double ceiling, int pct) {
    if (!(ms > 0))
        snprintf(buf, size, "-");
    else if (!pct)
        snprintf(buf, size, "%.1f", bytes / (ms * 1e6));
    else if (ceiling > 0)
        snprintf(buf, size, "%.0f%%", 100 * bytes / (ms * 1e6) / ceiling);
    else
        snprintf(buf, size, "-");
}

static void gu_print(const bench_gu_row *rows, int n, const char *backend, int skipped_big) {
    printf("%-24s | %-7s | %10s | %10s | %5s | %6s | %17s | %13s | %s\n", "workload", "backend", "kiln ms",
           "native ms", "ratio", "target", "GB/s kiln / nat", "of copy k / n", "checked");
    printf("-------------------------+---------+------------+------------+-------+--------+-------"
           "------------+---------------+------------\n");
    for (int i = 0; i < n; i++) {
        const bench_gu_row *r = &rows[i];
        char label[64], rows_s[24], nat[24] = "n/a", ratio[16] = "-", target[16], a[24], b[24], gb[56], c[16],
                                    d[16], ceil[40];
        gu_label(rows_s, sizeof rows_s, r->rows);
        snprintf(label, sizeof label, "hermite %sx%lld f32", rows_s, (long long)r->cols);
        if (r->have_native) {
            snprintf(nat, sizeof nat, "%.4f", r->native_ms);
            snprintf(ratio, sizeof ratio, "%.2f", r->native_ms > 0 ? r->kiln_ms / r->native_ms : 0);
        }
        snprintf(target, sizeof target, "<=%.2f", r->target);
        gu_rate(a, sizeof a, r->bytes, r->kiln_ms, 0, 0);
        gu_rate(b, sizeof b, r->bytes, r->have_native ? r->native_ms : 0, 0, 0);
        snprintf(gb, sizeof gb, "%s / %s", a, b);
        gu_rate(c, sizeof c, r->bytes, r->kiln_ms, r->ceiling_gbs, 1);
        gu_rate(d, sizeof d, r->bytes, r->have_native ? r->native_ms : 0, r->ceiling_gbs, 1);
        snprintf(ceil, sizeof ceil, "%s / %s", c, d);
        const char *checked = !r->kiln_passed                       ? "kiln FAIL"
                              : r->have_native && !r->native_passed ? "native FAIL"
                              : r->have_native                      ? "both ok"
                                                                    : "kiln ok";
        printf("%-24s | %-7s | %10.4f | %10s | %5s | %6s | %17s | %13s | %s\n", label, backend, r->kiln_ms,
               nat, ratio, target, gb, ceil, checked);
    }
    for (int i = 0; i < n; i++) {
        const bench_gu_row *r = &rows[i];
        char rows_s[24];
        gu_label(rows_s, sizeof rows_s, r->rows);
        printf("  hermite %sx4: kiln: %s\n", rows_s, r->kiln_check);
        if (r->have_native) {
            printf("  hermite %sx4: native: %s\n", rows_s, r->native_check);
            if (r->variant_ms[KILN_NATIVE_HERMITE_FLOAT4_X4] >= 0 ||
                r->variant_ms[KILN_NATIVE_HERMITE_ROWS] >= 0)
                printf(
                    "  hermite %sx4: native kernels, median ms: float4 (a row per thread) %.4f, float4_x4\n"
                    "    (4 rows per thread) %.4f; rows (scalar accesses, the seed's Numba pattern; not\n"
                    "    the baseline) %.4f\n",
                    rows_s, r->variant_ms[KILN_NATIVE_HERMITE_FLOAT4],
                    r->variant_ms[KILN_NATIVE_HERMITE_FLOAT4_X4], r->variant_ms[KILN_NATIVE_HERMITE_ROWS]);
        }
        if (r->note[0]) printf("  hermite %sx4: %s\n", rows_s, r->note);
        if (r->any_ms >= 0)
            printf("  hermite %sx4: first calls (the any-layout kernel kiln_guvectorize built, before the\n"
                   "    hand-over): %.4f ms per call, %.2f x native\n",
                   rows_s, r->any_ms, r->have_native && r->native_ms > 0 ? r->any_ms / r->native_ms : 0);
    }
    if (skipped_big)
        printf("  hermite 128Mx4 not run on the CPU: 2 GB in place, ~15 s for the row with its checks on\n"
               "  two cores, and the CPU target is set at 1.28M x 4; KILN_BENCH_GUFUNC_ROWS=128000000 runs "
               "it\n");
    int any_batch = 0;
    for (int i = 0; i < n; i++) any_batch |= rows[i].batch > 1;
    printf("  bytes = 2 x rows x 16 (every row read and written once)%s.\n"
           "  In place: every run redoes the seed's work (columns 0 and 1 are only read); median of\n"
           "  the timed runs after 3 warm-ups or more (until the hand-over from the any-layout kernel)%s.\n",
           n > 0 && rows[0].ceiling_gbs > 0 ? "; \"of copy\" = GB/s over 3000 (H100 device-to-device copy)"
                                            : "",
           any_batch ? "; rows < 10M: 20 calls back to back per timed run, figure per call" : "");
}

/* KILN_BENCH_GUFUNC_ROWS="1280000,128000000" replaces the sizes. */
static int gu_sizes(int cuda, int64_t *sizes, int max, int *skipped_big) {
    const char *env = getenv("KILN_BENCH_GUFUNC_ROWS");
    int n = 0;
    *skipped_big = 0;
    if (env && *env) {
        const char *p = env;
        while (*p && n < max) {
            char *end = NULL;
            long long v = strtoll(p, &end, 10);
            if (end == p || v < 1 || v > (1LL << 34)) {
                fprintf(stderr,
                        "kiln_bench: KILN_BENCH_GUFUNC_ROWS wants row counts like "
                        "\"1280000,128000000\", got \"%s\"\n",
                        env);
                return -1;
            }
            sizes[n++] = v;
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',') {
                fprintf(stderr, "kiln_bench: KILN_BENCH_GUFUNC_ROWS: unexpected \"%s\"\n", end);
                return -1;
            }
        }
        return n;
    }
    if (cuda)
        sizes[n++] = 128000000;
    else
        *skipped_big = 1;
    sizes[n++] = 1280000; /* the seed's rows */
    return n;
}

int kiln_bench_gufunc(kiln_context *ctx, const bench_native *native, const bench_options *o,
                      bench_gu_row *rows, int max, int *n) {
    *n = 0;
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA, skipped_big = 0, failures = 0;
    int64_t sizes[8];
    int count = gu_sizes(cuda, sizes, max < 8 ? max : 8, &skipped_big);
    if (count < 0) return 1;
    for (int i = 0; i < count; i++) {
        int rs = gu_run_size(ctx, native, cuda, sizes[i], o->repeat, &rows[*n]);
        if (rs != KILN_OK) {
            fprintf(stderr, "kiln_bench: hermite %lld x 4: %s: %s\n", (long long)sizes[i],
                    kiln_status_string((kiln_status)rs),
                    rs == KILN_ERR_OUT_OF_MEMORY && rows[*n].kiln_check[0] ? rows[*n].kiln_check
                                                                           : kiln_last_error());
            failures++;
            if (rs == KILN_ERR_DEVICE_FAULT || rs == KILN_ERR_CONTEXT_DEAD) break;
            continue;
        }
        const bench_gu_row *r = &rows[*n];
        failures += !r->kiln_passed || (r->have_native && !r->native_passed);
        (*n)++;
    }
    gu_print(rows, *n, kiln_context_backend_name(ctx), skipped_big);
    return failures;
}
