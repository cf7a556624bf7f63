/* reduce_bench.c: kiln's reductions and scan beside the references, one run,
 * printed as ratios (reference time / kiln time: >= 1 means kiln is as fast).
 *
 *   CUDA context: kiln vs CUB (libkiln_reduce_cub.so, built by nvcc beside
 *   this program and dlopened): full sum of 2^28 f32 (and its bandwidth as a
 *   fraction of a device copy's), row and column sums of 16384^2 f32, argmax
 *   of 2^28 f32, inclusive scan of 2^28 f32.
 *   CPU context: kiln vs an OpenMP C loop with the same accuracy (NumPy's
 *   pairwise scheme per thread, partials added in order): sum of 2^26 f32,
 *   row and column sums of 4096^2 f32.
 * Usage: reduce_bench [cpu|cuda] [repeat] [only]  (only: run the kiln rows
 * whose name contains this word, e.g. "scan"; "sweep": time the column
 * scan of 16384^2 f32 in every shape of KILN_SCAN_COLUMN_WIDTH, _BYTES and
 * _GROUPS on a grid, each as a fraction of a device copy's speed, its
 * results checked against the first shape's, bit for bit) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "kiln.h"
#include "native_path.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef kiln_status (*step_fn)(kiln_array *a, kiln_array **r);
static kiln_status k_sum(kiln_array *a, kiln_array **r) { return kiln_sum(a, NULL, 0, 0, NULL, r); }
static kiln_status k_argmax(kiln_array *a, kiln_array **r) { return kiln_argmax(a, NULL, 0, 0, NULL, r); }
static kiln_status k_scan(kiln_array *a, kiln_array **r) { return kiln_cumsum(a, 0, NULL, r); }
static kiln_status k_copy(kiln_array *a, kiln_array **r) { return kiln_array_copy(a, r); }
static kiln_status k_scan_rows(kiln_array *a, kiln_array **r) { return kiln_cumsum(a, 1, NULL, r); }
static kiln_status k_scan_cols(kiln_array *a, kiln_array **r) { return kiln_cumsum(a, 0, NULL, r); }
static kiln_status k_rows(kiln_array *a, kiln_array **r) {
    const int ax = 1;
    return kiln_sum(a, &ax, 1, 0, NULL, r);
}
static kiln_status k_cols(kiln_array *a, kiln_array **r) {
    const int ax = 0;
    return kiln_sum(a, &ax, 1, 0, NULL, r);
}

/* Median ms per call over `repeat` batches of BATCH calls between two events
 * (device time on CUDA, wall on the CPU): in a batch the host prepares the
 * next call while the device runs the last, as in an application; the CUB
 * side is timed the same way. */
#define BATCH 10
static double time_kiln(kiln_context *ctx, step_fn f, kiln_array *a, int repeat) {
    kiln_event *e0 = NULL, *e1 = NULL;
    double t[100];
    kiln_array *r = NULL;
    if (kiln_event_create(ctx, &e0) || kiln_event_create(ctx, &e1) || f(a, &r)) {
        fprintf(stderr, "kiln: %s\n", kiln_last_error());
        exit(1);
    }
    kiln_array_release(r);
    kiln_synchronize(ctx);
    for (int i = 0; i < repeat; i++) {
        kiln_event_record(e0, NULL);
        for (int b = 0; b < BATCH; b++) {
            if (f(a, &r) != KILN_OK) {
                fprintf(stderr, "kiln: %s\n", kiln_last_error());
                exit(1);
            }
            kiln_array_release(r);
        }
        kiln_event_record(e1, NULL);
        kiln_event_synchronize(e1);
        float ms = 0;
        kiln_event_elapsed_ms(e0, e1, &ms);
        t[i] = ms / BATCH;
    }
    kiln_event_release(e0);
    kiln_event_release(e1);
    qsort(t, (size_t)repeat, sizeof *t, cmp_d);
    return t[repeat / 2];
}

/* ---------------------------------------------------------------- CPU baseline */

static float pairwise(const float *x, long long n) {
    if (n <= 128) {
        float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        long long i = 0;
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; j++) l[j] += x[i + j];
        for (; i < n; i++) l[0] += x[i];
        return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }
    long long h = n / 2;
    h -= h % 8;
    return pairwise(x, h) + pairwise(x + h, n - h);
}

/* Inside an OpenMP parallel region: the calling thread's part [*lo, *hi)
 * of n items and the team's size in *nt (all of them and 1 without
 * OpenMP); returns the thread's index. */
static int omp_part(long long n, long long *lo, long long *hi, int *nt) {
#ifdef _OPENMP
    int t = omp_get_thread_num();
    *nt = omp_get_num_threads();
#else
    int t = 0;
    *nt = 1;
#endif
    *lo = n * t / *nt;
    *hi = n * (t + 1) / *nt;
    return t;
}

static float omp_sum(const float *x, long long n) {
    float part[256] = {0};
    int nt = 1;
#pragma omp parallel
    {
        long long lo, hi;
        int t = omp_part(n, &lo, &hi, &nt);
        part[t] = pairwise(x + lo, hi - lo);
    }
    float s = 0;
    for (int t = 0; t < nt; t++) s += part[t];
    return s;
}

static void omp_rows(const float *x, float *out, long long side) {
#pragma omp parallel for schedule(static)
    for (long long r = 0; r < side; r++) out[r] = pairwise(x + r * side, side);
}

/* column sums with pairwise accuracy: blocks of 128 rows summed down, the
 * block results combined pairwise over a binary counter, columns in tiles */
static void omp_cols(const float *x, float *out, long long side) {
#pragma omp parallel for schedule(static)
    for (long long c0 = 0; c0 < side; c0 += 32) {
        float stack[48][32];
        int level[48], top = 0;
        for (long long rb = 0; rb < side; rb += 128) {
            float v[32] = {0};
            long long re = rb + 128 < side ? rb + 128 : side;
            for (long long r = rb; r < re; r++)
                for (int j = 0; j < 32; j++) v[j] += x[r * side + c0 + j];
            int lv = 0;
            while (top > 0 && level[top - 1] == lv) {
                for (int j = 0; j < 32; j++) v[j] = stack[top - 1][j] + v[j];
                top--;
                lv++;
            }
            memcpy(stack[top], v, sizeof v);
            level[top++] = lv;
        }
        for (int j = 0; j < 32; j++) {
            float a = 0;
            for (int i = top - 1; i >= 0; i--) a = stack[i][j] + a;
            out[c0 + j] = a;
        }
    }
}

static double time_host(int repeat, void (*f)(void *), void *arg) {
    double t[100];
    f(arg);
    for (int i = 0; i < repeat; i++) {
        double t0 = now_ms();
        for (int b = 0; b < BATCH; b++) f(arg);
        t[i] = (now_ms() - t0) / BATCH;
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp_d);
    return t[repeat / 2];
}

/* argmax as NumPy defines it (the first maximum; the first NaN wins), each
 * thread over its part, the parts' winners combined in order */
static long long omp_argmax(const float *x, long long n) {
    float best[256];
    long long at[256];
    int nt = 1;
#pragma omp parallel
    {
        long long lo, hi, bi = -1;
        int t = omp_part(n, &lo, &hi, &nt);
        float bv = 0;
        for (long long i = lo; i < hi; i++) {
            float v = x[i];
            if (bi < 0 || v > bv || (v != v && bv == bv)) {
                bv = v;
                bi = i;
            }
        }
        best[t] = bv;
        at[t] = bi;
    }
    long long bi = -1;
    float bv = 0;
    for (int t = 0; t < nt; t++)
        if (at[t] >= 0 && (bi < 0 || best[t] > bv || (best[t] != best[t] && bv == bv))) {
            bv = best[t];
            bi = at[t];
        }
    return bi;
}

/* inclusive cumsum of float32 with float64 carries (kiln's accuracy): each
 * thread sums its part, the parts' prefixes in order, each part rescanned */
static void omp_cumsum(const float *x, float *out, long long n) {
    double part[257] = {0};
#pragma omp parallel
    {
        long long lo, hi;
        int nt, t = omp_part(n, &lo, &hi, &nt);
        double s = 0;
        for (long long i = lo; i < hi; i++) s += x[i];
        part[t + 1] = s;
#pragma omp barrier
        double acc = 0;
        for (int u = 0; u <= t; u++) acc += part[u];
        for (long long i = lo; i < hi; i++) {
            acc += x[i];
            out[i] = (float)acc;
        }
    }
}

typedef struct host_job {
    const float *x;
    float *out;
    long long n, side;
    float result;
    long long index;
} host_job;
static void job_sum(void *p) {
    host_job *j = p;
    j->result = omp_sum(j->x, j->n);
}
static void job_argmax(void *p) {
    host_job *j = p;
    j->index = omp_argmax(j->x, j->n);
}
static void job_cumsum(void *p) {
    host_job *j = p;
    omp_cumsum(j->x, j->out, j->n);
}
static void job_rows(void *p) {
    host_job *j = p;
    omp_rows(j->x, j->out, j->side);
}
static void job_cols(void *p) {
    host_job *j = p;
    omp_cols(j->x, j->out, j->side);
}

static void row(const char *what, double ref_ms, double kiln_ms, const char *ref_name, const char *extra) {
    printf("%-40s %-10s %9.3f ms   kiln %9.3f ms   ratio %.3f%s%s\n", what, ref_name, ref_ms, kiln_ms,
           ref_ms / kiln_ms, extra ? "   " : "", extra ? extra : "");
}

/* Each point of the column scan's grid of shapes (settings read at each
 * call), timed like the rest; copy_ms: a device copy of the same bytes.
 * Every shape gives the sequential scan's bits, so every result must equal
 * the first one's. */
static void sweep_column_scans(kiln_context *ctx, kiln_array *m, int repeat, double copy_ms) {
    static const int widths[] = {32, 64, 128, 256}, bytes[] = {128, 256, 512}, groups[] = {1, 2, 4, 8, 16};
    size_t total = (size_t)kiln_array_size(m) * sizeof(float);
    unsigned char *first = malloc(total), *got = malloc(total);
    if (!first || !got) {
        fprintf(stderr, "sweep: out of host memory\n");
        exit(1);
    }
    printf("column scan sweep, cumsum along axis 0 of 16384^2 f32; ratio: fraction of a device copy's "
           "speed (%.3f ms)\n",
           copy_ms);
    int points = 0, best_w = 0, best_b = 0, best_g = 0;
    double best = 1e30;
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
        for (size_t b = 0; b < sizeof bytes / sizeof *bytes; b++)
            for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
                if (widths[w] * groups[g] > 1024) continue;
                char v[16];
                snprintf(v, sizeof v, "%d", widths[w]);
                setenv("KILN_SCAN_COLUMN_WIDTH", v, 1);
                snprintf(v, sizeof v, "%d", bytes[b]);
                setenv("KILN_SCAN_COLUMN_BYTES", v, 1);
                snprintf(v, sizeof v, "%d", groups[g]);
                setenv("KILN_SCAN_COLUMN_GROUPS", v, 1);
                double ms = time_kiln(ctx, k_scan_cols, m, repeat);
                kiln_array *r = NULL;
                if (k_scan_cols(m, &r) != KILN_OK || kiln_array_to_host(r, points ? got : first, total)) {
                    fprintf(stderr, "kiln: %s\n", kiln_last_error());
                    exit(1);
                }
                kiln_array_release(r);
                int same = points == 0 || memcmp(first, got, total) == 0;
                printf("  width %4d bytes %4d groups %2d   %8.3f ms   ratio %.3f%s\n", widths[w], bytes[b],
                       groups[g], ms, copy_ms / ms, same ? "" : "   RESULTS DIFFER from the first shape");
                if (ms < best) {
                    best = ms;
                    best_w = widths[w];
                    best_b = bytes[b];
                    best_g = groups[g];
                }
                points++;
            }
    printf("best: KILN_SCAN_COLUMN_WIDTH=%d KILN_SCAN_COLUMN_BYTES=%d KILN_SCAN_COLUMN_GROUPS=%d   %.3f ms   "
           "ratio %.3f\n",
           best_w, best_b, best_g, best, copy_ms / best);
    unsetenv("KILN_SCAN_COLUMN_WIDTH");
    unsetenv("KILN_SCAN_COLUMN_BYTES");
    unsetenv("KILN_SCAN_COLUMN_GROUPS");
    free(first);
    free(got);
}

int main(int argc, char **argv) {
    const char *target = argc > 1 ? argv[1] : "auto";
    int repeat = argc > 2 ? atoi(argv[2]) : 20;
    if (repeat < 3) repeat = 3;
    if (repeat > 100) repeat = 100;
    kiln_context *ctx = NULL;
    if (kiln_open(&ctx, target) != KILN_OK) {
        fprintf(stderr, "kiln_open(%s): %s\n", target, kiln_last_error());
        return 1;
    }
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    kiln_device_info info;
    kiln_device_info_get(ctx, &info);
    printf("reduce_bench on %s (%s), median of %d batches of %d calls\n", info.name,
           kiln_context_backend_name(ctx), repeat, BATCH);
    long long n = cuda ? 1LL << 28 : 1LL << 26, side = cuda ? 16384 : 4096;
    long long big = n > side * side ? n : side * side;
    float *h = malloc(sizeof *h * (size_t)big);
    for (long long i = 0; i < big; i++) {
        unsigned long long s = (unsigned long long)i * 6364136223846793005ull + 1442695040888963407ull;
        h[i] = (float)((s >> 40) & 0xffffff) / 16777216.0f - 0.5f;
    }
    kiln_array *a = NULL, *m = NULL;
    int64_t mshape[2] = {side, side};
    if (kiln_array_from_host(ctx, KILN_FLOAT32, 1, (int64_t[]){n}, h, sizeof *h * (size_t)n, &a) ||
        kiln_array_from_host(ctx, KILN_FLOAT32, 2, mshape, h, sizeof *h * (size_t)(side * side), &m)) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return 1;
    }
    if (cuda) {
        char lib[PATH_MAX + 64];
        kiln_bench_native_path(NULL, "libkiln_reduce_cub.so", lib, sizeof lib);
        void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        int (*cub)(long long, int, int, double *) = NULL;
        if (dl)
            *(void **)&cub =
                dlsym(dl, "kiln_reduce_cub_bench"); /* POSIX's way past ISO C's object/function split */
        double ref[6] = {0};
        if (!cub || cub(n, (int)side, repeat, ref) != 0) {
            fprintf(stderr, "CUB reference unavailable (%s): printing kiln alone\n",
                    dl ? "call failed" : dlerror());
            for (int i = 0; i < 6; i++) ref[i] = NAN;
        }
        const char *only = argc > 3 ? argv[3] : "";
#define KB_RUN(word, f, x) (strstr(word, only) ? time_kiln(ctx, f, x, repeat) : NAN)
        double ks = KB_RUN("sum", k_sum, a), kr = KB_RUN("rows", k_rows, m);
        double kc = KB_RUN("cols", k_cols, m), ka = KB_RUN("argmax", k_argmax, a);
        double kscan = KB_RUN("scan", k_scan, a), kcopy = KB_RUN("copy", k_copy, a);
#undef KB_RUN
        char extra[160];
        double gbs = 4.0 * n / ks / 1e6, copy_gbs = 8.0 * n / (isnan(ref[5]) ? kcopy : ref[5]) / 1e6;
        snprintf(extra, sizeof extra, "kiln %.0f GB/s = %.2f of device copy (%.0f GB/s read+write)", gbs,
                 gbs / copy_gbs, copy_gbs);
        row("full sum 2^28 f32", ref[0], ks, "CUB", extra);
        row("row sums 16384^2 f32", ref[1], kr, "CUB seg", NULL);
        row("column sums 16384^2 f32", ref[2], kc, "hand CUDA", NULL);
        row("argmax 2^28 f32", ref[3], ka, "CUB", NULL);
        row("inclusive scan 2^28 f32", ref[4], kscan, "CUB", NULL);
        row("device copy 2^28 f32", ref[5], kcopy, "cudaMemcpy", NULL);
        /* scans along an axis of a 16384^2 matrix (as many bytes as 2^28):
         * against the device copy, as CUB has no axis scan */
        if (side * side == n) {
            double ksr = strstr("scan rows", only) ? time_kiln(ctx, k_scan_rows, m, repeat) : NAN;
            double ksc = strstr("scan cols", only) ? time_kiln(ctx, k_scan_cols, m, repeat) : NAN;
            /* ratio: the fraction of a device copy's speed (same bytes) */
            char xr[96], xc[96];
            snprintf(xr, sizeof xr, "kiln %.0f GB/s read+write", 8.0 * n / ksr / 1e6);
            snprintf(xc, sizeof xc, "kiln %.0f GB/s read+write", 8.0 * n / ksc / 1e6);
            row("cumsum along rows 16384^2 f32", ref[5], ksr, "memcpy", xr);
            row("cumsum along columns 16384^2 f32", ref[5], ksc, "memcpy", xc);
            if (strcmp(only, "sweep") == 0)
                sweep_column_scans(ctx, m, repeat,
                                   isnan(ref[5]) ? time_kiln(ctx, k_copy, m, repeat) : ref[5]);
        }
    } else {
        host_job j = {h, malloc(sizeof(float) * (size_t)(n > side ? n : side)), n, side, 0, 0};
        double os = time_host(repeat, job_sum, &j), ks = time_kiln(ctx, k_sum, a, repeat);
        kiln_array *r = NULL;
        double kv = 0;
        kiln_sum(a, NULL, 0, 0, NULL, &r);
        kiln_array_item_f64(r, &kv);
        kiln_array_release(r);
        char extra[128];
        snprintf(extra, sizeof extra, "sums: omp %.6g kiln %.6g", (double)j.result, kv);
        row("sum 2^26 f32 (pairwise)", os, ks, "OpenMP C", extra);
        double orows = time_host(repeat, job_rows, &j), krows = time_kiln(ctx, k_rows, m, repeat);
        row("row sums 4096^2 f32 (pairwise)", orows, krows, "OpenMP C", NULL);
        double ocols = time_host(repeat, job_cols, &j), kcols = time_kiln(ctx, k_cols, m, repeat);
        row("column sums 4096^2 f32 (pairwise)", ocols, kcols, "OpenMP C", NULL);
        double oarg = time_host(repeat, job_argmax, &j), karg = time_kiln(ctx, k_argmax, a, repeat);
        long long ki = -1;
        kiln_argmax(a, NULL, 0, 0, NULL, &r);
        kiln_array_to_host(r, &ki, sizeof ki);
        kiln_array_release(r);
        snprintf(extra, sizeof extra, "index: omp %lld kiln %lld", j.index, ki);
        row("argmax 2^26 f32", oarg, karg, "OpenMP C", extra);
        double ocum = time_host(repeat, job_cumsum, &j), kcum = time_kiln(ctx, k_scan, a, repeat);
        row("inclusive cumsum 2^26 f32 (f64 carries)", ocum, kcum, "OpenMP C", NULL);
        free(j.out);
    }
    kiln_array_release(a);
    kiln_array_release(m);
    free(h);
    kiln_close(ctx);
    return 0;
}
