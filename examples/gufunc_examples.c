/* gufunc_examples.c: seed 002 through kiln_guvectorize, each verified
 * against a float64 host reference.
 *  - hermite: the Hermite-like recurrence "(n)->(n)" in place on rows x 4
 *    float32 (the seed's my_func(dev_inp, dev_inp)), checked against the
 *    seed's foo(X, N); then the "()->(n)" form the seed wanted, n = 4 given
 *    by the call, from the 1-d X alone.
 *  - batched_matmul: "(m,n),(n,p)->(m,p)" over a batch of 4x4 float32
 *    matrices.
 * Registry functions (examples.h signature): kiln_example_gufunc_hermite and
 * kiln_example_gufunc_batched_matmul. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_examples.h"
#include "example_util.h"
#include "examples.h"

int kiln_example_gufunc_hermite(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_gufunc_batched_matmul(kiln_context *ctx, const kiln_example_opts *opts,
                                       kiln_example_result *res);

static int gu_repeats(const kiln_example_opts *o) { return o && o->repeat > 0 ? o->repeat : 20; }

/* One gufunc call to time: event-timed on the default stream. */
typedef struct gu_timed {
    kiln_gufunc *f;
    const kiln_value *args;
    int nargs;
    kiln_array **outs;
    const char *dims;
} gu_timed;

static int gu_step(void *arg) {
    const gu_timed *c = arg;
    return kiln_gufunc_call(c->f, c->args, c->nargs, c->outs, c->dims);
}

static int gu_time(kiln_context *ctx, const gu_timed *c, int repeat, kiln_example_result *res) {
    /* A new gufunc's first calls run the any-layout kernel kiln_guvectorize
     * built, until it has served 2^26 elements and a call builds the
     * layout's own kernel (docs/ufuncs.md), in the background: calls
     * until that build (at most 30 s), so the figures are what a long loop
     * runs. Then three warm-ups: caches, clocks, and the kernel recorded. */
    int64_t made = kiln_example_modules_built(ctx);
    double start = kiln_example_now_ms();
    int s = KILN_OK;
    while (s == KILN_OK && kiln_example_modules_built(ctx) == made && kiln_example_now_ms() - start < 30000)
        s = gu_step((void *)c);
    if (s == KILN_OK)
        s = kiln_example_time_calls(ctx, gu_step, (void *)c, 3, repeat, &res->ms_median, &res->ms_min);
    if (s == KILN_OK) res->runs = repeat;
    return s;
}

/* ------------------------------------------------------------ hermite */

/* The seed's guvectorize body, in CUDA C: rows of `out` hold 1, x, ., . */
static const char hermite_body[] = KILN_EXAMPLE_HERMITE_BODY;

/* The "()->(n)" form: the row is made from x alone. */
static const char hermite_x_body[] = "out[0] = 1;\n"
                                     "if (out.len > 1) out[1] = x;\n"
                                     "for (int i = 2; i < out.len; i++)\n"
                                     "    out[i] = x * out[i - 1] - (i - 1) * out[i - 2];\n"
                                     "float c = 1;\n"
                                     "for (int i = 2; i < out.len; i++) {\n"
                                     "    c *= i;\n"
                                     "    out[i] /= sqrtf(c);\n"
                                     "}\n";

/* The seed's foo(X, N), in float64. */
static void foo(const float *x, int64_t rows, int n, double *out) {
    for (int64_t r = 0; r < rows; r++) {
        double *o = out + r * n;
        for (int i = 0; i < n; i++) o[i] = 1.0;
        if (n > 1) o[1] = x[r];
        for (int i = 2; i < n; i++) o[i] = x[r] * o[i - 1] - (i - 1) * o[i - 2];
        double c = 1;
        for (int i = 2; i < n; i++) {
            c *= i;
            o[i] /= sqrt(c);
        }
    }
}

static double max_err(const float *got, const double *ref, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - ref[i]) / (1 + fabs(ref[i])); /* x*x - 1 cancels near |x| = 1 */
        if (!(e <= worst)) worst = e;                          /* NaN counts as worst */
    }
    return worst;
}

int kiln_example_gufunc_hermite(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    memset(res, 0, sizeof *res);
    const int n = 4;
    int64_t rows = opts && opts->size > 0 ? opts->size : 1280000;
    size_t ne = (size_t)rows * (size_t)n;
    res->size = rows;
    res->bytes = 2.0 * (double)ne * sizeof(float); /* read and write every row once */
    res->flops = (double)rows * 10;
    float *x = example_alloc((size_t)rows * sizeof(float), "hermite x");
    float *host = example_alloc(ne * sizeof(float), "hermite rows");
    double *ref = example_alloc(ne * sizeof(double), "hermite reference");
    kiln_gufunc *herm = NULL, *herm_x = NULL;
    kiln_array *X = NULL, *X1 = NULL, *Y = NULL;
    int s = (!x || !host || !ref) ? KILN_ERR_OUT_OF_MEMORY : KILN_OK;
    if (s == KILN_OK) {
        example_rng rng = {0x5eed0002};
        example_fill_f32(&rng, x, (size_t)rows, -2, 2);
        for (int64_t r = 0; r < rows; r++) { /* the seed's setup: ones, column 1 = X */
            for (int i = 0; i < n; i++) host[r * n + i] = 1.0f;
            host[r * n + 1] = x[r];
        }
        foo(x, rows, n, ref);
        s = kiln_guvectorize(ctx, "hermite", "void(f4[:], f4[:]); void(f8[:], f8[:])", "(n)->(n)", "inp, out",
                             hermite_body, NULL, &herm);
    }
    if (s == KILN_OK)
        s = kiln_guvectorize(ctx, "hermite_x", "void(f4, f4[:]); void(f8, f8[:])", "()->(n)", "x, out",
                             hermite_x_body, NULL, &herm_x);
    int64_t shape[2] = {rows, n};
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, host, ne * sizeof(float), &X);
    if (s == KILN_OK)
        s = kiln_array_from_host(ctx, KILN_FLOAT32, 1, &rows, x, (size_t)rows * sizeof(float), &X1);
    /* In place, as the seed calls it: my_func(dev_inp, dev_inp). Running it
     * again gives the same rows (only columns 0 and 1 are read), so every
     * timed run does the seed's work. */
    const kiln_value in_place[2] = {kiln_arr(X), kiln_arr(X)};
    gu_timed t = {herm, in_place, 2, NULL, NULL};
    if (s == KILN_OK) s = gu_time(ctx, &t, gu_repeats(opts), res);
    double err_inplace = 1e30, err_x = 1e30;
    if (s == KILN_OK) s = kiln_array_to_host(X, host, ne * sizeof(float));
    if (s == KILN_OK) err_inplace = max_err(host, ref, ne);
    /* "()->(n)": n = 4 from the call; a new (rows, 4) array. */
    if (s == KILN_OK) s = kiln_gufunc_call(herm_x, KILN_ARGS(kiln_arr(X1)), &Y, "n=4");
    if (s == KILN_OK) s = kiln_array_to_host(Y, host, ne * sizeof(float));
    if (s == KILN_OK) err_x = max_err(host, ref, ne);
    if (s == KILN_OK) {
        res->passed = err_inplace < 1e-5 && err_x < 1e-5;
        snprintf(res->check, sizeof res->check,
                 "(n)->(n) in place: max err %.2e; ()->(n) with n=4: %.2e (|d|/(1+|ref|)) vs the seed's foo "
                 "in float64",
                 err_inplace, err_x);
        if (opts && opts->verbose)
            printf("hermite %lld x %d f32: %.4f ms median (%.1f GB/s); %s\n", (long long)rows, n,
                   res->ms_median, res->bytes / (res->ms_median * 1e6), res->check);
    }
    kiln_array_release(X);
    kiln_array_release(X1);
    kiln_array_release(Y);
    kiln_gufunc_release(herm);
    kiln_gufunc_release(herm_x);
    free(x);
    free(host);
    free(ref);
    return s;
}

/* ------------------------------------------------------------ batched matmul */

static const char matmul_body[] = "for (int i = 0; i < C.shape[0]; i++)\n"
                                  "    for (int j = 0; j < C.shape[1]; j++) {\n"
                                  "        float acc = 0;\n"
                                  "        for (int k = 0; k < A.shape[1]; k++) acc += A(i, k) * B(k, j);\n"
                                  "        C(i, j) = acc;\n"
                                  "    }\n";

int kiln_example_gufunc_batched_matmul(kiln_context *ctx, const kiln_example_opts *opts,
                                       kiln_example_result *res) {
    memset(res, 0, sizeof *res);
    const int m = 4, n = 4, p = 4;
    int64_t batch = opts && opts->size > 0                           ? opts->size
                    : kiln_context_backend(ctx) == KILN_BACKEND_CUDA ? 1 << 20
                                                                     : 1 << 17;
    size_t na = (size_t)batch * m * n, nb = (size_t)batch * n * p, nc = (size_t)batch * m * p;
    res->size = batch;
    res->bytes = (double)(na + nb + nc) * sizeof(float);
    res->flops = 2.0 * (double)batch * m * n * p;
    float *a = example_alloc(na * sizeof(float), "matmul A"),
          *b = example_alloc(nb * sizeof(float), "matmul B");
    float *c = example_alloc(nc * sizeof(float), "matmul C");
    kiln_gufunc *mm = NULL;
    kiln_array *A = NULL, *B = NULL, *C = NULL;
    int s = (!a || !b || !c) ? KILN_ERR_OUT_OF_MEMORY : KILN_OK;
    if (s == KILN_OK) {
        example_rng rng = {0x5eed0202};
        example_fill_f32(&rng, a, na, -1, 1);
        example_fill_f32(&rng, b, nb, -1, 1);
        s = kiln_guvectorize(ctx, "batched_matmul",
                             "void(f4[:,:], f4[:,:], f4[:,:]); void(f8[:,:], f8[:,:], f8[:,:])",
                             "(m,n),(n,p)->(m,p)", "A, B, C", matmul_body, NULL, &mm);
    }
    int64_t sa[3] = {batch, m, n}, sb[3] = {batch, n, p}, sc[3] = {batch, m, p};
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT32, 3, sa, a, na * sizeof(float), &A);
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT32, 3, sb, b, nb * sizeof(float), &B);
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_FLOAT32, 3, sc, &C);
    const kiln_value args[3] = {kiln_arr(A), kiln_arr(B), kiln_arr(C)};
    gu_timed t = {mm, args, 3, NULL, NULL};
    if (s == KILN_OK) s = gu_time(ctx, &t, gu_repeats(opts), res);
    if (s == KILN_OK) s = kiln_array_to_host(C, c, nc * sizeof(float));
    /* The same products through the library's strided-batched gemm
     * (kiln_matmul with the library forced; its default picks the gufunc
     * kernel for this shape class), checked and timed beside it. */
    float *c2 = s == KILN_OK ? example_alloc(nc * sizeof(float), "matmul C (library)") : NULL;
    kiln_array *C2 = NULL;
    double lib_ms = 0;
    const char *provider = NULL;
    int have_lib = 0;
    if (s == KILN_OK && c2) {
        int ls = kiln_blas_provider(ctx, &provider);
        if (ls == KILN_OK) ls = kiln_array_empty(ctx, KILN_FLOAT32, 3, sc, &C2);
        if (ls == KILN_OK)
            ls = example_blas_time(ctx, KILN_BLAS_FORCE_LIBRARY, A, B, C2, gu_repeats(opts), &lib_ms);
        if (ls == KILN_OK) ls = kiln_array_to_host(C2, c2, nc * sizeof(float));
        have_lib = ls == KILN_OK;
        if (ls != KILN_OK && ls != KILN_ERR_LIBRARY_MISSING) s = ls;
    }
    if (s == KILN_OK) {
        double worst = 0, worst_lib = 0;
        for (int64_t q = 0; q < batch; q++)
            for (int i = 0; i < m; i++)
                for (int j = 0; j < p; j++) {
                    double acc = 0;
                    for (int k = 0; k < n; k++)
                        acc += (double)a[(q * m + i) * n + k] * b[(q * n + k) * p + j];
                    double e = fabs(c[(q * m + i) * p + j] - acc);
                    if (!(e <= worst)) worst = e;
                    double el = have_lib ? fabs(c2[(q * m + i) * p + j] - acc) : 0;
                    if (!(el <= worst_lib)) worst_lib = el;
                }
        res->passed = worst < 1e-5 && worst_lib < 1e-5;
        if (have_lib)
            snprintf(res->check, sizeof res->check,
                     "max abs err %.2e (gufunc), %.2e (batched gemm) vs float64 host, %lld 4x4 products; "
                     "gemm %.4f ms: the gufunc is %.1fx faster",
                     worst, worst_lib, (long long)batch, lib_ms,
                     res->ms_median > 0 ? lib_ms / res->ms_median : 0);
        else
            snprintf(res->check, sizeof res->check,
                     "max abs err %.2e vs float64 host over %lld 4x4 products; library n/a", worst,
                     (long long)batch);
        if (opts && opts->verbose) {
            printf("batched_matmul %lld x (4x4 @ 4x4) f32: gufunc %.4f ms median (%.1f GB/s); %s\n",
                   (long long)batch, res->ms_median, res->bytes / (res->ms_median * 1e6), res->check);
            if (have_lib)
                printf("  %.*s batched gemm on the same products: %.4f ms. kiln_matmul picks the gufunc "
                       "for batches of matrices up to 4x4 on CUDA, 8x8 on the CPU (a thread per product "
                       "beats the library's tiles there), the library beyond.\n",
                       (int)strcspn(provider, " ("), provider, lib_ms);
        }
    }
    kiln_array_release(C2);
    free(c2);
    kiln_array_release(A);
    kiln_array_release(B);
    kiln_array_release(C);
    kiln_gufunc_release(mm);
    free(a);
    free(b);
    free(c);
    return s;
}
