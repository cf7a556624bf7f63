/* fft_bench.c: kiln_fft_bench, kiln's FFT beside the vendor library called
 * directly, in one process, printed as ratios.
 *
 *   GPU (CUDA context): cuFFT from libkiln_fft_native.so (nvcc-built,
 *     dlopened from beside this program): C2C f32 2^24, 2-d 4096^2, batched
 *     1024 x 4096, R2C 2-d 4096^2 (device time, events, median); host cost
 *     of a cached-plan call; seed 001's convolution end to end on device
 *     arrays, as the seed's four steps and as one kiln_fft_convolve
 *     (circular) under each KILN_FFT_FUSE value (off, auto, callback,
 *     columns and rows at several KILN_FFT_STRIP_WIDTH) at 525^2, 1024^2 and 4096^2
 *     complex64, each beside the same cuFFT calls made directly. Target: kiln <= 1.03 x cuFFT, <= 5 us
 *     a call; fused convolution <= 1.0 x (seed), <= 0.8 x (4096^2).
 *   CPU (CPU context): FFTW called directly with the same planner flags and
 *     thread count as kiln (the same libfftw3f instance, so the same wisdom
 *     and the same plans). Target: kiln <= 1.1 x FFTW.
 *
 * usage: kiln_fft_bench [--target auto|cpu|cuda] [--repeat N] [--full]
 *   --full on the CPU runs the GPU sizes (default: 1/16 of the points). */
#include <dlfcn.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "examples.h"
#include "fft/fft_native.h"
#include "fft_convolve.h"
#include "kiln.h"

typedef struct workload {
    const char *name;
    int r2c;
    int rank;
    long long n[3];
    long long batch;
} workload;

static const workload gpu_workloads[] = {
    {"C2C f32 2^24", 0, 1, {1LL << 24}, 1},
    {"C2C f32 4096^2", 0, 2, {4096, 4096}, 1},
    {"C2C f32 1024 x 4096 batched", 0, 1, {4096}, 1024},
    {"R2C f32 4096^2", 1, 2, {4096, 4096}, 1},
};

/* kiln arrays for a workload: batch leading, then the transform dims. */
static int make_arrays(kiln_context *ctx, const workload *w, long long shrink, kiln_array **in,
                       kiln_array **out, int *naxes, int *axes) {
    /* shrink: the factor fewer points of the CPU's default sizes (16: 2^20,
     * 1024^2, 64 x 4096). */
    int64_t shape[4], oshape[4];
    int nd = 0;
    long long side = shrink == 16 ? 4 : 1;
    if (w->batch > 1) shape[nd++] = w->batch / shrink;
    for (int i = 0; i < w->rank; i++)
        shape[nd++] = w->batch > 1 ? w->n[i] : w->rank == 1 ? w->n[i] / shrink : w->n[i] / side;
    memcpy(oshape, shape, sizeof shape);
    if (w->r2c) oshape[nd - 1] = shape[nd - 1] / 2 + 1;
    *naxes = w->rank;
    for (int i = 0; i < w->rank; i++) axes[i] = nd - w->rank + i;
    int s = kiln_array_zeros(ctx, w->r2c ? KILN_FLOAT32 : KILN_COMPLEX64, nd, shape, in);
    if (s == KILN_OK) s = kiln_array_zeros(ctx, KILN_COMPLEX64, nd, oshape, out);
    return s;
}

static int convolve_step(void *c) { return kiln_example_fftconv_run(c, NULL); }

/* The workload's arrays and its forward plan, as both the GPU and the CPU
 * tables run it; *plan_ms: the host time kiln_fft_plan_create took. */
static int make_workload(kiln_context *ctx, const workload *w, long long shrink, kiln_array **in,
                         kiln_array **out, kiln_fft_plan **p, double *plan_ms) {
    int naxes = 0, axes[4];
    int s = make_arrays(ctx, w, shrink, in, out, &naxes, axes);
    double t0 = kiln_example_now_ms();
    if (s == KILN_OK)
        s = kiln_fft_plan_create(w->r2c ? KILN_FFT_R2C : KILN_FFT_C2C, KILN_FFT_FORWARD, *in, *out, axes,
                                 naxes, KILN_FFT_NORM_BACKWARD, p);
    *plan_ms = kiln_example_now_ms() - t0;
    return s;
}

/* Event-timed (device) or wall-timed (CPU) median of kiln_fft_execute. */
static int time_kiln(kiln_context *ctx, kiln_fft_plan *p, kiln_array *in, kiln_array *out, int repeat,
                     double *ms) {
    double *t = calloc((size_t)repeat, sizeof *t);
    kiln_event *e0 = NULL, *e1 = NULL;
    int s = kiln_event_create(ctx, &e0);
    if (s == KILN_OK) s = kiln_event_create(ctx, &e1);
    for (int r = -3; r < repeat && s == KILN_OK; r++) {
        double w0 = kiln_example_now_ms();
        s = kiln_event_record(e0, NULL);
        if (s == KILN_OK) s = kiln_fft_execute(p, in, out, NULL);
        if (s == KILN_OK) s = kiln_event_record(e1, NULL);
        if (s == KILN_OK) s = kiln_event_synchronize(e1);
        float dev = 0;
        if (s == KILN_OK) s = kiln_event_elapsed_ms(e0, e1, &dev);
        if (r >= 0) t[r] = kiln_context_backend(ctx) == KILN_BACKEND_CUDA ? dev : kiln_example_now_ms() - w0;
    }
    if (s == KILN_OK) *ms = kiln_example_median(t, repeat);
    kiln_event_release(e0);
    kiln_event_release(e1);
    free(t);
    return s;
}

/* Host microseconds per cached-plan call, queued back to back. */
static int kiln_host_cost(kiln_context *ctx, int n, int calls, double *us, double *us_onecall) {
    int64_t shape[1] = {n};
    kiln_array *a = NULL, *b = NULL;
    kiln_fft_plan *p = NULL;
    int s = kiln_array_zeros(ctx, KILN_COMPLEX64, 1, shape, &a);
    if (s == KILN_OK) s = kiln_array_zeros(ctx, KILN_COMPLEX64, 1, shape, &b);
    if (s == KILN_OK)
        s = kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, a, b, NULL, 0, KILN_FFT_NORM_BACKWARD, &p);
    for (int i = 0; i < 100 && s == KILN_OK; i++) s = kiln_fft_execute(p, a, b, NULL);
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    double t0 = kiln_example_now_ms();
    for (int i = 0; i < calls && s == KILN_OK; i++) s = kiln_fft_execute(p, a, b, NULL);
    double t1 = kiln_example_now_ms();
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    *us = (t1 - t0) * 1e3 / calls;
    /* the one-call form: key built and looked up in the cache each call */
    t0 = kiln_example_now_ms();
    for (int i = 0; i < calls && s == KILN_OK; i++)
        s = kiln_fftn(a, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &b);
    t1 = kiln_example_now_ms();
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    *us_onecall = (t1 - t0) * 1e3 / calls;
    kiln_fft_plan_release(p);
    kiln_array_release(a);
    kiln_array_release(b);
    return s;
}

static void row(const char *name, double kiln_ms, double vendor_ms, double target) {
    double ratio = vendor_ms > 0 ? kiln_ms / vendor_ms : 0;
    if (vendor_ms > 0)
        printf("%-40s %12.4f %12.4f %8.3f %8s\n", name, kiln_ms, vendor_ms, ratio,
               ratio <= target ? "ok" : "SLOW");
    else
        printf("%-40s %12.4f %12s %8s %8s\n", name, kiln_ms, "n/a", "-", "-");
}

/* ------------------------------------------------------------------ GPU */

static int bench_fused(kiln_context *ctx, const kiln_example_fftconv *c, kfn_convolve_fn nconv, int repeat);

static void *open_native(const char *argv0) {
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        snprintf(self, sizeof self, "%s", argv0);
    else
        self[len] = '\0';
    char path[4200];
    snprintf(path, sizeof path, "%s/libkiln_fft_native.so", dirname(self));
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) fprintf(stderr, "kiln_fft_bench: no native cuFFT side (%s): %s\n", path, dlerror());
    return h;
}

static int bench_gpu(kiln_context *ctx, int repeat, const char *argv0) {
    void *native = open_native(argv0);
    /* dlsym returns void *; POSIX guarantees the round trip to a function
     * pointer, which ISO C does not, hence the memcpy. */
    kfn_time_fn ntime = NULL;
    kfn_host_cost_fn nhost = NULL;
    kfn_convolve_fn nconv = NULL;
    void *sym[3] = {native ? dlsym(native, "kfn_time") : NULL, native ? dlsym(native, "kfn_host_cost") : NULL,
                    native ? dlsym(native, "kfn_convolve") : NULL};
    if (sym[0]) memcpy(&ntime, &sym[0], sizeof sym[0]);
    if (sym[1]) memcpy(&nhost, &sym[1], sizeof sym[1]);
    if (sym[2]) memcpy(&nconv, &sym[2], sizeof sym[2]);
    printf("%-40s %12s %12s %8s %8s\n", "GPU workload", "kiln ms", "cuFFT ms", "ratio", "<=1.03");
    int s = KILN_OK;
    for (size_t i = 0; i < sizeof gpu_workloads / sizeof gpu_workloads[0] && s == KILN_OK; i++) {
        const workload *w = &gpu_workloads[i];
        kiln_array *in = NULL, *out = NULL;
        kiln_fft_plan *p = NULL;
        double k = 0, v = -1, plan_ms = 0;
        s = make_workload(ctx, w, 1, &in, &out, &p, &plan_ms);
        if (s == KILN_OK) s = time_kiln(ctx, p, in, out, repeat, &k);
        if (s == KILN_OK && ntime && ntime(w->r2c, w->rank, w->n, w->batch, repeat, &v) != 0) v = -1;
        if (s == KILN_OK) row(w->name, k, v, 1.03);
        kiln_fft_plan_release(p);
        kiln_array_release(in);
        kiln_array_release(out);
    }
    double us = 0, us1 = 0, nus = -1;
    if (s == KILN_OK) s = kiln_host_cost(ctx, 256, 2000, &us, &us1);
    if (s == KILN_OK && nhost && nhost(256, 2000, &nus) != 0) nus = -1;
    if (s == KILN_OK) {
        printf("\nhost cost of a cached-plan call, C2C 256 (target <= 5 us):\n");
        printf("  kiln_fft_execute %.2f us, kiln_fftn (one-call, cache lookup) %.2f us", us, us1);
        if (nus >= 0) printf(", cufftExecC2C directly %.2f us (kiln adds %.2f us)", nus, us - nus);
        printf("\n\n");
    }
    /* seed 001's convolution on device arrays */
    float *img = malloc(sizeof(float) * 512 * 512);
    kiln_example_fftconv c;
    memset(&c, 0, sizeof c);
    kiln_example_fftconv_test_image(img, 512);
    if (s == KILN_OK) s = kiln_example_fftconv_prepare(ctx, img, 512, &c);
    double kiln_ms = 0;
    if (s == KILN_OK) s = kiln_example_time_calls(ctx, convolve_step, &c, 3, repeat, &kiln_ms, NULL);
    double nconv_ms = -1;
    if (s == KILN_OK && nconv && nconv(c.p, repeat, &nconv_ms) != 0) nconv_ms = -1;
    if (s == KILN_OK) {
        printf("%-40s %12s %12s %8s %8s\n", "seed 001 convolution", "kiln ms", "cuFFT ms", "ratio", "<=1.0");
        char name[64];
        snprintf(name, sizeof name, "512^2 same via %d^2 c64, 4 steps", c.p);
        row(name, kiln_ms, nconv_ms, 1.0);
        printf("  (CuPy's hand-written cuFFT version took 0.275 ms on the H100; BASELINES.md)\n");
    }
    if (s == KILN_OK) s = bench_fused(ctx, &c, nconv, repeat);
    kiln_example_fftconv_release(&c);
    free(img);
    if (native) dlclose(native);
    return s;
}

/* ------------------------------------------------------------------ fused convolution */

typedef struct circular_step {
    kiln_array *a, *b, *out;
} circular_step;

static int circular_run(void *arg) {
    circular_step *c = arg;
    return kiln_fft_convolve(c->a, c->b, KILN_CONVOLVE_CIRCULAR, NULL, 0, &c->out);
}

/* A p x p complex64 array of values in [-1, 1) from a seeded LCG. */
/* rows x cols of random complex values in [-1, 1), complex64 or
 * complex128. */
static int random_complex(kiln_context *ctx, kiln_dtype t, int64_t rows, int64_t cols, unsigned seed,
                          kiln_array **out) {
    size_t n = (size_t)rows * (size_t)cols * 2, item = t == KILN_COMPLEX128 ? sizeof(double) : sizeof(float);
    char *h = malloc(n * item);
    if (!h) return KILN_ERR_OUT_OF_MEMORY;
    unsigned x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        double v = (double)(x >> 8) / 8388608.0 - 1.0;
        if (item == sizeof(double))
            ((double *)h)[i] = v;
        else
            ((float *)h)[i] = (float)v;
    }
    const int64_t shape[2] = {rows, cols};
    int s = kiln_array_from_host(ctx, t, 2, shape, h, n * item, out);
    free(h);
    return s;
}

static int random_c64(kiln_context *ctx, int p, unsigned seed, kiln_array **out) {
    return random_complex(ctx, KILN_COMPLEX64, p, p, seed, out);
}

/* The largest |fused - unfused| over the largest |unfused|. */
static int compare_results(kiln_array *x, kiln_array *y, double *rel) {
    size_t n = (size_t)kiln_array_size(x) * 2;
    float *hx = malloc(n * sizeof *hx), *hy = malloc(n * sizeof *hy);
    int s = hx && hy ? KILN_OK : KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = kiln_array_to_host(x, hx, n * sizeof *hx);
    if (s == KILN_OK) s = kiln_array_to_host(y, hy, n * sizeof *hy);
    double diff = 0, big = 0;
    for (size_t i = 0; s == KILN_OK && i < n; i++) {
        diff = fmax(diff, fabs((double)hx[i] - hy[i]));
        big = fmax(big, fabs((double)hy[i]));
    }
    *rel = big > 0 ? diff / big : diff;
    free(hx);
    free(hy);
    return s;
}

/* Sets (value not NULL) or unsets an environment variable. */
static void set_env(const char *name, const char *value) {
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

/* kiln_fft_convolve (circular) on p x p complex64 a and b under each
 * KILN_FFT_FUSE value (off: the product in a pass of its own; auto: the
 * callback up to 32 MiB of spectra, else unfused; callback: cuFFT's LTO
 * load callback; columns, rows: kiln's strip kernel along that axis, with
 * KILN_FFT_STRIP_WIDTH (w), KILN_FFT_STRIP_SPEC (spec) and
 * KILN_FFT_STRIP_LAYOUT as the row says: "columns" alone is the default,
 * through transposed row transforms), beside kfn_convolve's direct cuFFT
 * calls; the settings are
 * restored after. A value that cannot fuse here prints why. */
static int bench_circular(kiln_context *ctx, const char *label, kiln_array *a, kiln_array *b, int p,
                          kfn_convolve_fn nconv, int repeat, double target) {
    enum { VARIANTS = 9, SETTINGS = 4 };
    static const char *const names[SETTINGS] = {"KILN_FFT_FUSE", "KILN_FFT_STRIP_WIDTH",
                                                "KILN_FFT_STRIP_SPEC", "KILN_FFT_STRIP_LAYOUT"};
    static const char *const variants[VARIANTS][SETTINGS] = {
        {"off", NULL, NULL, NULL},          {"auto", NULL, NULL, NULL},
        {"callback", NULL, NULL, NULL},     {"columns", NULL, NULL, NULL},
        {"columns", "2", NULL, "natural"},  {"columns", "4", NULL, "natural"},
        {"columns", "2", "fft", "natural"}, {"rows", "1", NULL, NULL},
        {"rows", "1", "fft", NULL}};
    char *saved[SETTINGS];
    for (int i = 0; i < SETTINGS; i++) saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
    double vendor_ms = -1;
    if (nconv && nconv(p, repeat, &vendor_ms) != 0) vendor_ms = -1;
    kiln_array *plain = NULL;
    int s = KILN_OK;
    for (int m = 0; m < VARIANTS && s == KILN_OK; m++) {
        const char *const *v = variants[m];
        for (int i = 0; i < SETTINGS; i++) set_env(names[i], v[i]);
        char name[96];
        snprintf(name, sizeof name, "%s %s%s%s%s%s%s", label, v[0], v[1] ? " w" : "", v[1] ? v[1] : "",
                 v[2] ? " spec " : "", v[2] ? v[2] : "", v[3] ? " natural" : "");
        circular_step step = {a, b, NULL};
        if (kiln_fft_convolve(a, b, KILN_CONVOLVE_CIRCULAR, NULL, 0, &step.out) != KILN_OK) {
            printf("%-40s not fused here: %s\n", name, kiln_last_error());
            continue;
        }
        double ms = 0, rel = 0;
        s = kiln_example_time_calls(ctx, circular_run, &step, 3, repeat, &ms, NULL);
        if (s == KILN_OK && plain) s = compare_results(step.out, plain, &rel);
        if (s == KILN_OK) {
            row(name, ms, vendor_ms, m == 0 ? 1.03 : target);
            if (plain) printf("    |fused - off| <= %.2g of max|result|\n", rel);
        }
        if (m == 0)
            plain = step.out;
        else
            kiln_array_release(step.out);
    }
    kiln_array_release(plain);
    for (int i = 0; i < SETTINGS; i++) {
        set_env(names[i], saved[i]);
        free(saved[i]);
    }
    return s;
}

/* auto and the strip kernel's ways beside off (the product in a pass of
 * its own) where no direct cuFFT comparison is at hand: complex128, and
 * shapes that are not square (the column strip takes a power of two of
 * rows, the row strip of columns), so that auto's choice above 32 MiB of
 * spectra is measured for each kind it takes. */
static int bench_auto_shapes(kiln_context *ctx, int repeat) {
    static const struct {
        kiln_dtype t;
        int64_t rows, cols;
    } cases[5] = {{KILN_COMPLEX128, 2048, 2048},
                  {KILN_COMPLEX128, 4096, 4096},
                  {KILN_COMPLEX64, 8192, 2048},
                  {KILN_COMPLEX64, 4096, 1024},
                  {KILN_COMPLEX64, 2048, 8192}};
    enum { MODES = 5 };
    static const char *const modes[MODES][2] = {
        {"off", NULL}, {"auto", NULL}, {"columns", NULL}, {"rows", NULL}, {"rows", "fft"}};
    printf("\n%-28s %10s %24s %14s %14s\n", "kiln_fft_convolve circular", "off ms", "auto (ratio to off)",
           "columns", "rows / spec fft");
    char *saved[2] = {getenv("KILN_FFT_FUSE") ? strdup(getenv("KILN_FFT_FUSE")) : NULL,
                      getenv("KILN_FFT_STRIP_SPEC") ? strdup(getenv("KILN_FFT_STRIP_SPEC")) : NULL};
    int s = KILN_OK;
    for (int i = 0; i < 5 && s == KILN_OK; i++) {
        kiln_array *a = NULL, *b = NULL;
        s = random_complex(ctx, cases[i].t, cases[i].rows, cases[i].cols, 1, &a);
        if (s == KILN_OK) s = random_complex(ctx, cases[i].t, cases[i].rows, cases[i].cols, 2, &b);
        double ms[MODES] = {0};
        for (int m = 0; m < MODES && s == KILN_OK; m++) {
            set_env("KILN_FFT_FUSE", modes[m][0]);
            set_env("KILN_FFT_STRIP_SPEC", modes[m][1]);
            circular_step step = {a, b, NULL};
            if (kiln_fft_convolve(a, b, KILN_CONVOLVE_CIRCULAR, NULL, 0, &step.out) != KILN_OK) {
                ms[m] = -1; /* that way does not take this shape */
                continue;
            }
            s = kiln_example_time_calls(ctx, circular_run, &step, 3, repeat, &ms[m], NULL);
            kiln_array_release(step.out);
        }
        char label[80];
        snprintf(label, sizeof label, "%s %lld x %lld", cases[i].t == KILN_COMPLEX128 ? "c128" : "c64",
                 (long long)cases[i].rows, (long long)cases[i].cols);
        if (s == KILN_OK)
            printf("%-28s %10.4f %10.4f (%5.3f) %20.3f %8.3f / %5.3f\n", label, ms[0], ms[1], ms[1] / ms[0],
                   ms[2] / ms[0], ms[3] / ms[0], ms[4] / ms[0]);
        kiln_array_release(a);
        kiln_array_release(b);
    }
    set_env("KILN_FFT_FUSE", saved[0]);
    set_env("KILN_FFT_STRIP_SPEC", saved[1]);
    free(saved[0]);
    free(saved[1]);
    return s;
}

static int bench_fused(kiln_context *ctx, const kiln_example_fftconv *c, kfn_convolve_fn nconv, int repeat) {
    printf("\n%-40s %12s %12s %8s %8s\n", "kiln_fft_convolve circular", "kiln ms", "cuFFT ms", "ratio",
           "target");
    char label[64];
    snprintf(label, sizeof label, "seed 001 %d^2 c64", c->p);
    int s = bench_circular(ctx, label, c->image0, c->filter0, c->p, nconv, repeat, 1.0);
    /* 1024^2: where the spectra leave L2 (8 MiB an array), between the
     * seed's size and the one the target names */
    static const int sizes[3] = {1024, 2048, 4096};
    for (int i = 0; i < 3 && s == KILN_OK; i++) {
        kiln_array *a = NULL, *b = NULL;
        snprintf(label, sizeof label, "%d^2 c64", sizes[i]);
        s = random_c64(ctx, sizes[i], 1, &a);
        if (s == KILN_OK) s = random_c64(ctx, sizes[i], 2, &b);
        if (s == KILN_OK)
            s = bench_circular(ctx, label, a, b, sizes[i], nconv, repeat, sizes[i] == 4096 ? 0.8 : 1.0);
        kiln_array_release(a);
        kiln_array_release(b);
    }
    printf("  (cuFFT ms: two forward C2C, a multiply kernel, the inverse C2C, called directly)\n");
    if (s == KILN_OK) s = bench_auto_shapes(ctx, repeat);
    return s;
}

/* ------------------------------------------------------------------ CPU */

/* ------------------------------------------------------------------ FFTW, directly */
/* FFTW (single precision) opened here with dlopen, so the benchmark builds
 * and runs where FFTW is absent (the GPU machine): the CPU rows then say so.
 * The same libfftw3f.so.3 kiln loads: one library instance, one wisdom. */
typedef float fftwf_complex[2];
typedef void *fftwf_plan;
#define FFTW_FORWARD (-1)
#define FFTW_MEASURE (0U)
#define FFTW_PATIENT (1U << 5)
#define FFTW_ESTIMATE (1U << 6)

static struct fftw_direct {
    int (*init_threads)(void);
    void (*plan_with_nthreads)(int);
    fftwf_plan (*plan_many_dft)(int, const int *, int, fftwf_complex *, const int *, int, int,
                                fftwf_complex *, const int *, int, int, int, unsigned);
    fftwf_plan (*plan_many_dft_r2c)(int, const int *, int, float *, const int *, int, int, fftwf_complex *,
                                    const int *, int, int, unsigned);
    void (*execute_dft)(fftwf_plan, fftwf_complex *, fftwf_complex *);
    void (*execute_dft_r2c)(fftwf_plan, float *, fftwf_complex *);
    void (*destroy_plan)(fftwf_plan);
    fftwf_plan (*plan_dft_1d)(int, fftwf_complex *, fftwf_complex *, int, unsigned);
    void *(*malloc_)(size_t);
    void (*free_)(void *);
} fw;

/* dlsym returns void *; POSIX guarantees the round trip to a function
 * pointer, which ISO C does not, hence the memcpy. */
static int fftw_sym(void *h, void *h2, const char *name, void *slot, size_t size) {
    void *p = h ? dlsym(h, name) : NULL;
    if (!p && h2) p = dlsym(h2, name);
    if (!p) return 0;
    memcpy(slot, &p, size);
    return 1;
}

static int load_fftw(void) {
    void *h = dlopen("libfftw3f.so.3", RTLD_NOW | RTLD_LOCAL);
    void *t = dlopen("libfftw3f_threads.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("CPU rows: FFTW (libfftw3f.so.3) not found: %s\n", dlerror());
        return 0;
    }
#define FW_(field, name) fftw_sym(h, t, name, &fw.field, sizeof fw.field)
    int ok = FW_(init_threads, "fftwf_init_threads") && FW_(plan_with_nthreads, "fftwf_plan_with_nthreads") &&
             FW_(plan_many_dft, "fftwf_plan_many_dft") && FW_(plan_many_dft_r2c, "fftwf_plan_many_dft_r2c") &&
             FW_(execute_dft, "fftwf_execute_dft") && FW_(execute_dft_r2c, "fftwf_execute_dft_r2c") &&
             FW_(destroy_plan, "fftwf_destroy_plan") && FW_(plan_dft_1d, "fftwf_plan_dft_1d") &&
             FW_(malloc_, "fftwf_malloc") && FW_(free_, "fftwf_free");
#undef FW_
    if (!ok) printf("CPU rows: libfftw3f lacks a function the benchmark calls (threads library missing?)\n");
    return ok;
}

static unsigned planner(void) {
    const char *e = getenv("KILN_FFTW_PLANNER");
    if (e && strcmp(e, "estimate") == 0) return FFTW_ESTIMATE;
    if (e && strcmp(e, "patient") == 0) return FFTW_PATIENT;
    return FFTW_MEASURE;
}

/* kiln and FFTW alternately, run by run, so that the other load of a
 * shared machine falls on both alike; wall-clock medians. */
static int time_interleaved(kiln_fft_plan *p, kiln_array *in, kiln_array *out, fftwf_plan fp, int r2c,
                            int repeat, double *kiln_ms, double *fftw_ms) {
    double *tk = calloc((size_t)repeat, sizeof *tk), *tf = calloc((size_t)repeat, sizeof *tf);
    void *a = kiln_array_data(in), *b = kiln_array_data(out);
    int s = KILN_OK;
    for (int r = -3; r < repeat && s == KILN_OK; r++) {
        double w0 = kiln_example_now_ms();
        s = kiln_fft_execute(p, in, out, NULL);
        double w1 = kiln_example_now_ms();
        if (r2c)
            fw.execute_dft_r2c(fp, a, b);
        else
            fw.execute_dft(fp, a, b);
        double w2 = kiln_example_now_ms();
        if (r >= 0) {
            tk[r] = w1 - w0;
            tf[r] = w2 - w1;
        }
    }
    if (s == KILN_OK) {
        *kiln_ms = kiln_example_median(tk, repeat);
        *fftw_ms = kiln_example_median(tf, repeat);
    }
    free(tk);
    free(tf);
    return s;
}

static int bench_cpu(kiln_context *ctx, int repeat, int full) {
    long long shrink = full ? 1 : 16;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    const char *e = getenv("KILN_FFTW_THREADS");
    if (e && *e) threads = strtol(e, NULL, 10);
    if (!load_fftw()) return KILN_ERR_LIBRARY_MISSING;
    fw.init_threads();
    printf("CPU: FFTW direct with the same planner (%s) and %ld threads; sizes %s\n",
           planner() == FFTW_MEASURE ? "FFTW_MEASURE" : "as KILN_FFTW_PLANNER", threads,
           full ? "as on the GPU" : "1/16 of the GPU's points (--full for those)");
    printf("%-40s %12s %12s %8s %8s\n", "CPU workload", "kiln ms", "FFTW ms", "ratio", "<=1.1");
    int s = KILN_OK;
    for (size_t i = 0; i < sizeof gpu_workloads / sizeof gpu_workloads[0] && s == KILN_OK; i++) {
        const workload *w = &gpu_workloads[i];
        kiln_array *in = NULL, *out = NULL;
        kiln_fft_plan *p = NULL;
        double k = 0, plan_ms = 0;
        s = make_workload(ctx, w, shrink, &in, &out, &p, &plan_ms);
        if (s != KILN_OK) break;
        /* FFTW directly on the same arrays, with the advanced interface. */
        int nd = kiln_array_ndim(in);
        const int64_t *shape = kiln_array_shape(in);
        int n[3];
        for (int d = 0; d < w->rank; d++) n[d] = (int)shape[nd - w->rank + d];
        int howmany = nd > w->rank ? (int)shape[0] : 1;
        int idist = 1, odist = 1;
        for (int d = 0; d < w->rank; d++) {
            idist *= n[d];
            odist *= d == w->rank - 1 && w->r2c ? n[d] / 2 + 1 : n[d];
        }
        fw.plan_with_nthreads((int)threads);
        void *a = kiln_array_data(in), *b = kiln_array_data(out);
        fftwf_plan fp = w->r2c ? fw.plan_many_dft_r2c(w->rank, n, howmany, a, NULL, 1, idist, b, NULL, 1,
                                                      odist, planner())
                               : fw.plan_many_dft(w->rank, n, howmany, a, NULL, 1, idist, b, NULL, 1, odist,
                                                  FFTW_FORWARD, planner());
        double v = -1;
        if (s == KILN_OK && fp) s = time_interleaved(p, in, out, fp, w->r2c, repeat, &k, &v);
        if (s != KILN_OK) break;
        char name[96];
        snprintf(name, sizeof name, "%s%s", w->name, full ? "" : " /16");
        row(name, k, v, 1.1);
        printf("    (kiln planning %.0f ms, first time in this process)\n", plan_ms);
        if (fp) fw.destroy_plan(fp);
        kiln_fft_plan_release(p);
        kiln_array_release(in);
        kiln_array_release(out);
    }
    double us = 0, us1 = 0;
    if (s == KILN_OK) s = kiln_host_cost(ctx, 16, 20000, &us, &us1);
    if (s == KILN_OK) {
        /* FFTW's own per-call time at that size, to read kiln's overhead off */
        fftwf_complex *a = fw.malloc_(16 * sizeof *a), *b = fw.malloc_(16 * sizeof *b);
        memset(a, 0, 16 * sizeof *a);
        fw.plan_with_nthreads(1);
        fftwf_plan fp = fw.plan_dft_1d(16, a, b, FFTW_FORWARD, FFTW_ESTIMATE);
        double t0 = kiln_example_now_ms();
        for (int i = 0; i < 20000; i++) fw.execute_dft(fp, a, b);
        double direct = (kiln_example_now_ms() - t0) * 1e3 / 20000;
        fw.destroy_plan(fp);
        fw.free_(a);
        fw.free_(b);
        printf("\ncached-plan call, C2C 16 points: kiln_fft_execute %.2f us, kiln_fftn %.2f us, "
               "fftwf_execute_dft %.2f us\n",
               us, us1, direct);
    }
    if (s == KILN_OK) {
        float *img = malloc(sizeof(float) * 512 * 512);
        kiln_example_fftconv c;
        kiln_example_fftconv_test_image(img, 512);
        s = kiln_example_fftconv_prepare(ctx, img, 512, &c);
        double *t = calloc((size_t)repeat, sizeof *t);
        for (int r = -3; r < repeat && s == KILN_OK; r++) {
            double w0 = kiln_example_now_ms();
            s = kiln_example_fftconv_run(&c, NULL);
            if (r >= 0) t[r] = kiln_example_now_ms() - w0;
        }
        if (s == KILN_OK)
            printf("seed 001 convolution (512^2 via %d^2 c64): kiln %.3f ms\n", c.p,
                   kiln_example_median(t, repeat));
        if (s == KILN_OK) kiln_example_fftconv_release(&c);
        free(t);
        free(img);
    }
    return s;
}

int main(int argc, char **argv) {
    const char *target = NULL;
    int repeat = 20, full = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--target") == 0 && i + 1 < argc)
            target = argv[++i];
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--full") == 0)
            full = 1;
        else {
            fprintf(stderr, "usage: kiln_fft_bench [--target auto|cpu|cuda] [--repeat N] [--full]\n");
            return 2;
        }
    }
    if (repeat < 3) repeat = 3;
    kiln_context *ctx = NULL;
    KILN_CHECK(kiln_open(&ctx, target));
    kiln_device_info info;
    KILN_CHECK(kiln_device_info_get(ctx, &info));
    printf("kiln_fft_bench: %s (%s), median of %d runs after 3 warm-ups\n\n", info.name,
           kiln_context_backend_name(ctx), repeat);
    int s = kiln_context_backend(ctx) == KILN_BACKEND_CUDA ? bench_gpu(ctx, repeat, argv[0])
                                                           : bench_cpu(ctx, repeat, full);
    if (s != KILN_OK) fprintf(stderr, "kiln_fft_bench: %s: %s\n", kiln_status_string(s), kiln_last_error());
    kiln_close(ctx);
    return s == KILN_OK ? 0 : 1;
}
