/* ufunc_bench.c: kiln_vectorize against hand-written CUDA C kernels on the
 * same data (the bench targets). kiln_bench_ufunc() prints one line
 * per workload: kiln ms, native ms, ratio. Built into kiln_bench; with
 * -DKILN_UFUNC_BENCH_MAIN it is its own program. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples.h"
#include "kiln.h"
#include "native/native_api.h"

int kiln_bench_ufunc(kiln_context *ctx, int repeat);

static double bench_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* On a CPU context the baseline is a hand-written C loop (native_cpu_ufunc.c)
 * writing into its own buffers; on CUDA the hand-written kernel above. */
typedef enum cpu_loop { CPU_NONE, CPU_VECTOR_ADD, CPU_BLACK_SCHOLES, CPU_HAVERSINE } cpu_loop;

typedef struct bench_case {
    kiln_ufunc *f;
    const kiln_value *args;
    int nargs;
    kiln_array **outs;
    kiln_kernel *native;
    const kiln_value *nargs_v;
    int nnative;
    int64_t n;
    cpu_loop cpu; /* CPU_NONE: launch `native` */
    void *out[2]; /* the C loop's outputs (host memory) */
} bench_case;

static void *host_data(const kiln_value *v) { return kiln_array_data(v->as.array); }

static void run_cpu_loop(const bench_case *c) {
    const kiln_value *a = c->args;
    switch (c->cpu) {
    case CPU_VECTOR_ADD:
        kiln_native_cpu_vector_add(c->out[0], host_data(&a[0]), host_data(&a[1]), c->n);
        break;
    case CPU_BLACK_SCHOLES:
        kiln_native_cpu_black_scholes(c->out[0], c->out[1], host_data(&a[0]), host_data(&a[1]),
                                      host_data(&a[2]), a[3].as.f, a[4].as.f, c->n);
        break;
    case CPU_HAVERSINE:
        kiln_native_cpu_haversine(c->out[0], host_data(&a[0]), host_data(&a[1]), a[2].as.f, a[3].as.f,
                                  a[4].as.f, c->n);
        break;
    case CPU_NONE: break;
    }
}

/* median of `repeat` event-timed runs after 3 warm-ups; native if which.
 * kiln on CUDA: a ufunc's calls run its mixed kernel until it has served
 * 2^26 elements, then its exact kernel is built in the background (docs/ufuncs.md);
 * the warm-ups go on until that build and one round more (at
 * most 3 s: a row whose exact kernel was built before waits no longer), so
 * the figure is the steady state of a long loop. */
static int time_one(kiln_context *ctx, const bench_case *c, int which, int repeat, double *median) {
    kiln_event *e0 = NULL, *e1 = NULL;
    double *ms = calloc((size_t)repeat, sizeof *ms);
    KILN_CHECK(kiln_event_create(ctx, &e0));
    KILN_CHECK(kiln_event_create(ctx, &e1));
    /* batch > 1: back-to-back launches between the events, so that host
     * submission cost does not show as GPU idle time in short kernels. */
    int batch = c->n < 10000000 ? 20 : 1;
    int64_t made = kiln_example_modules_built(ctx);
    double start = kiln_example_now_ms();
    int handed = 0;
    for (int r = -3; r < repeat; r++) {
        KILN_CHECK(kiln_event_record(e0, NULL));
        for (int b = 0; b < batch; b++) {
            if (which && c->cpu != CPU_NONE)
                run_cpu_loop(c);
            else if (which)
                KILN_CHECK(kiln_launch(c->native, KILN_DIM((uint32_t)((c->n + 255) / 256)), KILN_DIM(256), 0,
                                       NULL, c->nargs_v, c->nnative));
            else
                KILN_CHECK(kiln_call(c->f, c->args, c->nargs, c->outs));
        }
        KILN_CHECK(kiln_event_record(e1, NULL));
        KILN_CHECK(kiln_event_synchronize(e1));
        float t = 0;
        KILN_CHECK(kiln_event_elapsed_ms(e0, e1, &t));
        if (r >= 0) ms[r] = t / batch;
        if (r == -1 && !which && !handed && kiln_context_backend(ctx) == KILN_BACKEND_CUDA &&
            kiln_example_now_ms() - start < 3000) {
            handed = kiln_example_modules_built(ctx) != made;
            r--;
        }
    }
    qsort(ms, (size_t)repeat, sizeof *ms, cmp_double);
    *median = ms[repeat / 2];
    free(ms);
    kiln_event_release(e0);
    kiln_event_release(e1);
    return 0;
}

/* Largest |kiln - C loop| / max(|C loop|, tiny) over an output. */
static double max_rel_diff(kiln_array *kiln_out, const void *loop_out, kiln_dtype t, int64_t n) {
    double worst = 0;
    const void *k = kiln_array_data(kiln_out);
    for (int64_t i = 0; i < n; i++) {
        double x = t == KILN_FLOAT32 ? ((const float *)k)[i] : ((const double *)k)[i];
        double y = t == KILN_FLOAT32 ? ((const float *)loop_out)[i] : ((const double *)loop_out)[i];
        double e = fabs(x - y) / fmax(fabs(y), 1e-300);
        worst = e > worst || e != e ? e : worst;
    }
    return worst;
}

static int compare(kiln_context *ctx, const char *label, const bench_case *c, int repeat) {
    double k = 0, nat = 0;
    if (time_one(ctx, c, 1, repeat, &nat) || time_one(ctx, c, 0, repeat, &k) ||
        time_one(ctx, c, 1, repeat, &nat))
        return 1;
    if (c->cpu == CPU_NONE) {
        printf("%-34s kiln %9.4f ms   native %9.4f ms   ratio %.3f\n", label, k, nat, k / nat);
        return 0;
    }
    kiln_dtype t = kiln_array_dtype(c->outs[0]);
    double d = max_rel_diff(c->outs[0], c->out[0], t, c->n);
    if (c->out[1]) {
        double d2 = max_rel_diff(c->outs[1], c->out[1], t, c->n);
        d = d2 > d || d2 != d2 ? d2 : d;
    }
    printf("%-34s kiln %9.4f ms   C loop %9.4f ms   ratio %.3f   max rel diff %.1e\n", label, k, nat, k / nat,
           d);
    return 0;
}

/* The C loop's output buffers, on a CPU context only. */
static int cpu_baseline(kiln_context *ctx, bench_case *c, cpu_loop which, size_t item, int nout) {
    if (kiln_context_backend(ctx) != KILN_BACKEND_CPU) return 0;
    c->cpu = which;
    for (int j = 0; j < nout; j++)
        if (!(c->out[j] = calloc((size_t)c->n, item))) return 1;
    return 0;
}

/* One kernel per paragraph of the source. */
// clang-format off
static const char native_src[] =
    "__global__ void vadd(float *c, const float *a, const float *b, long long n) {\n"
    "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) c[i] = a[i] + b[i];\n"
    "}\n"
    KILN_EXAMPLE_CND_SOURCE
    "__global__ void bs(double *call, double *put, const double *S, const double *X, const double *T,\n"
    "                   double R, double V, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    double sqrtT = sqrt(T[i]);\n"
    "    double d1 = (log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (V * sqrtT);\n"
    "    double d2 = d1 - V * sqrtT;\n"
    "    double c1 = cnd(d1), c2 = cnd(d2);\n"
    "    double e = exp((-1. * R) * T[i]);\n"
    "    call[i] = S[i] * c1 - X[i] * e * c2;\n"
    "    put[i] = X[i] * e * (1.0 - c2) - S[i] * (1.0 - c1);\n"
    "}\n"
    "__global__ void hav(double *out, const double *lat1, const double *lon1, double lat2, double lon2, "
    "double s, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    double a = pow(sin(0.008726645 * (lat2 - lat1[i])), 2) + cos(0.01745329 * lat1[i]) * cos(0.01745329 "
    "* lat2) *\n"
    "               pow(sin(0.008726645 * (lon2 - lon1[i])), 2);\n"
    "    out[i] = atan2(a, 1 - a) * s;\n"
    "}\n";
// clang-format on

static const char bs_pre[] = KILN_EXAMPLE_CND_SOURCE;

int kiln_bench_ufunc(kiln_context *ctx, int repeat) {
    kiln_module *m = NULL;
    kiln_kernel *kvadd = NULL, *kbs = NULL, *khav = NULL;
    KILN_CHECK(kiln_module_from_source(ctx, native_src, "native.cu", NULL, &m));
    KILN_CHECK(kiln_module_kernel(m, "vadd", &kvadd));
    KILN_CHECK(kiln_module_kernel(m, "bs", &kbs));
    KILN_CHECK(kiln_module_kernel(m, "hav", &khav));
    KILN_CHECK(kiln_jit_wait(ctx)); /* the hand-written kernels' -O3 build (CPU) */
    kiln_ufunc *vadd = NULL, *bs = NULL, *hav = NULL;
    KILN_CHECK(kiln_vectorize(ctx, "vectorAdd", "f4(f4,f4)", "a, b", "return a + b;", NULL, &vadd));
    KILN_CHECK(kiln_vectorize(ctx, "black_scholes", "(f8,f8)(f8,f8,f8,f8,f8)", "S, X, T, R, V -> call, put",
                              "double sqrtT = sqrt(T);\n"
                              "double d1 = (log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT);\n"
                              "double d2 = d1 - V * sqrtT;\n"
                              "double cndd1 = cnd(d1), cndd2 = cnd(d2);\n"
                              "double expRT = exp((-1. * R) * T);\n"
                              "call = S * cndd1 - X * expRT * cndd2;\n"
                              "put = X * expRT * (1.0 - cndd2) - S * (1.0 - cndd1);",
                              bs_pre, &bs));
    KILN_CHECK(kiln_vectorize(ctx, "hav", "f8(f8,f8,f8,f8,f8)", "lat1, lon1, lat2, lon2, s",
                              KILN_EXAMPLE_HAVERSINE_BODY, NULL, &hav));
    /* vectorAdd 320M f32, device resident */
    {
        int64_t n = getenv("KILN_BENCH_VADD_N") ? atoll(getenv("KILN_BENCH_VADD_N")) : 320000000;
        kiln_array *A = NULL, *B = NULL, *C = NULL;
        KILN_CHECK(kiln_array_full(ctx, KILN_FLOAT32, 1, &n, 1, 0, &A));
        KILN_CHECK(kiln_array_full(ctx, KILN_FLOAT32, 1, &n, 2, 0, &B));
        KILN_CHECK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &C));
        kiln_value args[2] = {kiln_arr(A), kiln_arr(B)};
        kiln_value nargs[4] = {kiln_arr(C), kiln_arr(A), kiln_arr(B), kiln_i64(n)};
        kiln_array *outs[1] = {C};
        bench_case c = {vadd, args, 2, outs, kvadd, nargs, 4, n, CPU_NONE, {NULL, NULL}};
        if (cpu_baseline(ctx, &c, CPU_VECTOR_ADD, sizeof(float), 1)) return 1;
        char label[64];
        snprintf(label, sizeof label, "vectorAdd %lldM f32 (device)", (long long)(n / 1000000));
        int failed = compare(ctx, label, &c, repeat);
        free(c.out[0]);
        if (failed) return 1;
        /* host cost of one call on a small array (output given / allocated) */
        int64_t small = 1000;
        kiln_array *a = NULL, *b = NULL, *o = NULL;
        KILN_CHECK(kiln_array_full(ctx, KILN_FLOAT32, 1, &small, 1, 0, &a));
        KILN_CHECK(kiln_array_full(ctx, KILN_FLOAT32, 1, &small, 1, 0, &b));
        KILN_CHECK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &small, &o));
        kiln_array *so[1] = {o};
        for (int mode = 0; mode < 3; mode++) {
            int calls = 20000;
            KILN_CHECK(kiln_synchronize(ctx));
            double t0 = bench_now_ms();
            for (int i = 0; i < calls; i++) {
                if (mode == 0)
                    KILN_CHECK(kiln_call(vadd, KILN_ARGS(kiln_arr(a), kiln_arr(b)), so));
                else if (mode == 1) {
                    kiln_array *r = NULL;
                    KILN_CHECK(kiln_call(vadd, KILN_ARGS(kiln_arr(a), kiln_arr(b)), &r));
                    kiln_array_release(r);
                } else
                    KILN_CHECK(
                        kiln_launch(kvadd, KILN_DIM(4), KILN_DIM(256), 0, NULL,
                                    KILN_ARGS(kiln_arr(o), kiln_arr(a), kiln_arr(b), kiln_i64(small))));
            }
            double per = (bench_now_ms() - t0) * 1e3 / calls;
            KILN_CHECK(kiln_synchronize(ctx));
            printf("host cost per call, 1000 f32, %-22s %.2f us\n",
                   mode == 0   ? "ufunc, output given:"
                   : mode == 1 ? "ufunc, output allocated:"
                               : "raw kiln_launch:",
                   per);
        }
        kiln_array_release(a);
        kiln_array_release(b);
        kiln_array_release(o);
        kiln_array_release(C);
        C = NULL;
        /* from host arrays end to end: pinned and pageable */
        for (int pinned = 1; pinned >= 0; pinned--) {
            size_t bytes = (size_t)n * 4;
            float *ha = NULL, *hb = NULL, *hc = NULL;
            if (pinned) {
                KILN_CHECK(kiln_host_alloc(ctx, bytes, (void **)&ha));
                KILN_CHECK(kiln_host_alloc(ctx, bytes, (void **)&hb));
                KILN_CHECK(kiln_host_alloc(ctx, bytes, (void **)&hc));
            } else {
                ha = malloc(bytes);
                hb = malloc(bytes);
                hc = malloc(bytes);
            }
            for (int64_t i = 0; i < n; i++) {
                ha[i] = 1;
                hb[i] = (float)(i & 1023);
                hc[i] = 0;
            }
            kiln_array *HA = NULL, *HB = NULL, *HC = NULL;
            KILN_CHECK(kiln_array_wrap_host(ctx, KILN_FLOAT32, 1, &n, NULL, ha, &HA));
            KILN_CHECK(kiln_array_wrap_host(ctx, KILN_FLOAT32, 1, &n, NULL, hb, &HB));
            KILN_CHECK(kiln_array_wrap_host(ctx, KILN_FLOAT32, 1, &n, NULL, hc, &HC));
            kiln_array *ho[1] = {HC};
            double best = 1e30, ms[5];
            for (int r = 0; r < 5; r++) {
                double t0 = bench_now_ms();
                KILN_CHECK(kiln_call(vadd, KILN_ARGS(kiln_arr(HA), kiln_arr(HB)), ho));
                ms[r] = bench_now_ms() - t0;
                best = ms[r] < best ? ms[r] : best;
            }
            qsort(ms, 5, sizeof *ms, cmp_double);
            int ok = 1;
            for (int64_t i = 0; i < n; i++) ok &= hc[i] == 1 + (float)(i & 1023);
            printf("vectorAdd %lldM f32 from %s host arrays, end to end: median %.1f ms, best %.1f ms (%s)\n",
                   (long long)(n / 1000000), pinned ? "pinned" : "pageable", ms[2], best,
                   ok ? "correct" : "WRONG");
            kiln_array_release(HA);
            kiln_array_release(HB);
            kiln_array_release(HC);
            if (pinned) {
                kiln_host_free(ctx, ha);
                kiln_host_free(ctx, hb);
                kiln_host_free(ctx, hc);
            } else {
                free(ha);
                free(hb);
                free(hc);
            }
        }
        kiln_array_release(A);
        kiln_array_release(B);
    }
    /* Black-Scholes 4M f64 */
    {
        int64_t n = 4000000;
        kiln_array *S = NULL, *X = NULL, *T = NULL, *Cl = NULL, *P = NULL;
        KILN_CHECK(kiln_array_linspace(ctx, KILN_FLOAT64, 5, 30, n, 1, &S));
        KILN_CHECK(kiln_array_linspace(ctx, KILN_FLOAT64, 100, 1, n, 1, &X));
        KILN_CHECK(kiln_array_linspace(ctx, KILN_FLOAT64, 0.25, 10, n, 1, &T));
        KILN_CHECK(kiln_array_empty(ctx, KILN_FLOAT64, 1, &n, &Cl));
        KILN_CHECK(kiln_array_empty(ctx, KILN_FLOAT64, 1, &n, &P));
        kiln_value args[5] = {kiln_arr(S), kiln_arr(X), kiln_arr(T), kiln_f64(0.02), kiln_f64(0.30)};
        kiln_value nargs[8] = {kiln_arr(Cl), kiln_arr(P),    kiln_arr(S),    kiln_arr(X),
                               kiln_arr(T),  kiln_f64(0.02), kiln_f64(0.30), kiln_i32((int32_t)n)};
        kiln_array *outs[2] = {Cl, P};
        bench_case c = {bs, args, 5, outs, kbs, nargs, 8, n, CPU_NONE, {NULL, NULL}};
        if (cpu_baseline(ctx, &c, CPU_BLACK_SCHOLES, sizeof(double), 2)) return 1;
        int failed = compare(ctx, "Black-Scholes 4M f64", &c, repeat);
        free(c.out[0]);
        free(c.out[1]);
        if (failed) return 1;
        kiln_array *arrs[] = {S, X, T, Cl, P};
        for (size_t i = 0; i < 5; i++) kiln_array_release(arrs[i]);
    }
    /* haversine 1e6 f64 from device arrays, scalars broadcast */
    {
        int64_t n = 1000000;
        kiln_array *X = NULL, *Y = NULL, *Z = NULL;
        KILN_CHECK(kiln_array_linspace(ctx, KILN_FLOAT64, 29, 31, n, 1, &X));
        KILN_CHECK(kiln_array_linspace(ctx, KILN_FLOAT64, 99, 101, n, 1, &Y));
        KILN_CHECK(kiln_array_empty(ctx, KILN_FLOAT64, 1, &n, &Z));
        kiln_value args[5] = {kiln_arr(X), kiln_arr(Y), kiln_f64(30), kiln_f64(101), kiln_f64(1)};
        kiln_value nargs[7] = {kiln_arr(Z),   kiln_arr(X), kiln_arr(Y),         kiln_f64(30),
                               kiln_f64(101), kiln_f64(1), kiln_i32((int32_t)n)};
        kiln_array *outs[1] = {Z};
        bench_case c = {hav, args, 5, outs, khav, nargs, 7, n, CPU_NONE, {NULL, NULL}};
        if (cpu_baseline(ctx, &c, CPU_HAVERSINE, sizeof(double), 1)) return 1;
        int failed = compare(ctx, "haversine 1e6 f64 (device arrays)", &c, repeat);
        free(c.out[0]);
        if (failed) return 1;
        kiln_array_release(X);
        kiln_array_release(Y);
        kiln_array_release(Z);
    }
    kiln_ufunc_release(vadd);
    kiln_ufunc_release(bs);
    kiln_ufunc_release(hav);
    kiln_kernel_release(kvadd);
    kiln_kernel_release(kbs);
    kiln_kernel_release(khav);
    kiln_module_release(m);
    return 0;
}

#ifdef KILN_UFUNC_BENCH_MAIN
int main(int argc, char **argv) {
    kiln_context *ctx = NULL;
    KILN_CHECK(kiln_open(&ctx, argc > 1 ? argv[1] : "auto"));
    int r = kiln_bench_ufunc(ctx, 20);
    kiln_close(ctx);
    return r;
}
#endif
