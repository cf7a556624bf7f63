/* test_fft.c: kiln's FFT against a naive DFT in long double, at small and
 * awkward sizes (1, primes such as 1009, products of 2, 3, 5, 7), over every
 * kind, dtype, normalisation and layout (strided, transposed, reversed,
 * offset, in place, batched), plus the plan cache and each kind of bad input.
 * With KILN_TEST_TARGET=cuda the transforms also run on a CPU context and the
 * two backends' results are compared. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"
#include "fft/fft.h"
#include "fft_convolve.h"
#include "test_support.h"

#define PI_L 3.141592653589793238462643383279502884L

/* ------------------------------------------------------------------ reference */

/* In-place DFT along one axis of a C-order complex array (long double). */
static void dft_axis(long double *re, long double *im, int ndim, const int64_t *shape, int axis, int sign) {
    int64_t n = shape[axis], inner = 1, outer = 1;
    for (int d = axis + 1; d < ndim; d++) inner *= shape[d];
    for (int d = 0; d < axis; d++) outer *= shape[d];
    long double *tr = malloc(sizeof(long double) * (size_t)n), *ti = malloc(sizeof(long double) * (size_t)n);
    long double *cs = malloc(sizeof(long double) * (size_t)n), *sn = malloc(sizeof(long double) * (size_t)n);
    for (int64_t k = 0; k < n; k++) {
        cs[k] = cosl(2 * PI_L * (long double)k / (long double)n);
        sn[k] = sign * sinl(2 * PI_L * (long double)k / (long double)n);
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            long double *r = re + o * n * inner + i, *m = im + o * n * inner + i;
            for (int64_t k = 0; k < n; k++) {
                long double sr = 0, si = 0;
                for (int64_t j = 0; j < n; j++) {
                    int64_t t = (j * k) % n;
                    long double xr = r[j * inner], xi = m[j * inner];
                    sr += xr * cs[t] - xi * sn[t];
                    si += xr * sn[t] + xi * cs[t];
                }
                tr[k] = sr;
                ti[k] = si;
            }
            for (int64_t k = 0; k < n; k++) {
                r[k * inner] = tr[k];
                m[k * inner] = ti[k];
            }
        }
    free(tr);
    free(ti);
    free(cs);
    free(sn);
}

static int64_t count_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

static int norm_axis(int a, int ndim) { return a < 0 ? a + ndim : a; }

static long double norm_factor(kiln_fft_norm norm, int forward, long double n) {
    if (norm == KILN_FFT_NORM_ORTHO) return 1 / sqrtl(n);
    if ((norm == KILN_FFT_NORM_BACKWARD && !forward) || (norm == KILN_FFT_NORM_FORWARD && forward))
        return 1 / n;
    return 1;
}

/* ------------------------------------------------------------------ host data */

typedef struct host_data {
    int complex_;
    int dbl;
    int64_t count;
    long double *re, *im; /* exact values */
    void *packed;         /* the same in the array's dtype, C order */
} host_data;

static void host_free(host_data *h) {
    free(h->re);
    free(h->im);
    free(h->packed);
}

static host_data host_random(test_rng *rng, int complex_, int dbl, int64_t count) {
    host_data h = {complex_,
                   dbl,
                   count,
                   calloc((size_t)count + 1, sizeof(long double)),
                   calloc((size_t)count + 1, sizeof(long double)),
                   NULL};
    size_t item = (dbl ? 8 : 4) * (complex_ ? 2 : 1);
    h.packed = calloc((size_t)count + 1, item);
    for (int64_t i = 0; i < count; i++) {
        double r = test_uniform(rng, -1, 1), m = complex_ ? test_uniform(rng, -1, 1) : 0;
        if (!dbl) {
            r = (float)r;
            m = (float)m;
        }
        h.re[i] = r;
        h.im[i] = m;
        if (dbl) {
            ((double *)h.packed)[i * (complex_ ? 2 : 1)] = r;
            if (complex_) ((double *)h.packed)[i * 2 + 1] = m;
        } else {
            ((float *)h.packed)[i * (complex_ ? 2 : 1)] = (float)r;
            if (complex_) ((float *)h.packed)[i * 2 + 1] = (float)m;
        }
    }
    return h;
}

static kiln_dtype dtype_of(int complex_, int dbl) {
    return complex_ ? (dbl ? KILN_COMPLEX128 : KILN_COMPLEX64) : (dbl ? KILN_FLOAT64 : KILN_FLOAT32);
}

/* Largest |got - ref| over largest |ref|: rounding grows like log n. */
static double rel_error(const void *got, int complex_, int dbl, const long double *re, const long double *im,
                        int64_t count, long double scale) {
    long double worst = 0, big = 1e-30L;
    for (int64_t i = 0; i < count; i++) {
        long double gr, gi = 0;
        if (dbl) {
            gr = ((const double *)got)[i * (complex_ ? 2 : 1)];
            if (complex_) gi = ((const double *)got)[i * 2 + 1];
        } else {
            gr = ((const float *)got)[i * (complex_ ? 2 : 1)];
            if (complex_) gi = ((const float *)got)[i * 2 + 1];
        }
        long double rr = re[i] * scale, ri = complex_ ? im[i] * scale : 0;
        long double e = fabsl(gr - rr) + fabsl(gi - ri), m = fabsl(rr) + fabsl(ri);
        if (e > worst) worst = e;
        if (m > big) big = m;
    }
    return (double)(worst / big);
}

static double tolerance(int dbl) { return dbl ? 1e-12 : 3e-6; }

/* ------------------------------------------------------------------ layouts */

typedef enum layout {
    L_CONTIG = 0, /* C order */
    L_STRIDED,    /* every other element of a longer last axis */
    L_OFFSET,     /* starts one element into a bigger array (other SIMD alignment) */
    L_TRANSPOSED, /* the transpose of a C-order array of the reversed shape */
    L_REVERSED,   /* axis 0 reversed: a negative stride (copied) */
    L_COUNT
} layout;

static const char *layout_name(layout l) {
    static const char *const n[] = {"contiguous", "strided", "offset", "transposed", "reversed"};
    return n[l];
}

/* A new array of `shape` laid out as `l`, uninitialised (the caller releases). */
static kiln_array *make_view(kiln_context *ctx, kiln_dtype t, int ndim, const int64_t *shape, layout l) {
    int64_t big[KILN_MAX_DIMS];
    memcpy(big, shape, sizeof(int64_t) * (size_t)ndim);
    kiln_array *base = NULL, *v = NULL;
    switch (l) {
    case L_CONTIG: TEST_OK(kiln_array_zeros(ctx, t, ndim, shape, &v)); return v;
    case L_STRIDED:
        big[ndim - 1] = 2 * shape[ndim - 1];
        TEST_OK(kiln_array_zeros(ctx, t, ndim, big, &base));
        TEST_OK(kiln_array_slice(base, ndim - 1, 1, big[ndim - 1], 2, &v));
        break;
    case L_OFFSET:
        big[0] = shape[0] + 1;
        TEST_OK(kiln_array_zeros(ctx, t, ndim, big, &base));
        if (ndim == 1) {
            TEST_OK(kiln_array_slice(base, 0, 1, big[0], 1, &v));
        } else {
            /* Start one element in: offset by 1 along the last axis of a
             * wider array. */
            kiln_array_release(base);
            memcpy(big, shape, sizeof(int64_t) * (size_t)ndim);
            big[ndim - 1] = shape[ndim - 1] + 1;
            TEST_OK(kiln_array_zeros(ctx, t, ndim, big, &base));
            TEST_OK(kiln_array_slice(base, ndim - 1, 1, big[ndim - 1], 1, &v));
        }
        break;
    case L_TRANSPOSED:
        for (int d = 0; d < ndim; d++) big[d] = shape[ndim - 1 - d];
        TEST_OK(kiln_array_zeros(ctx, t, ndim, big, &base));
        TEST_OK(kiln_array_transpose(base, NULL, &v));
        break;
    default:
        TEST_OK(kiln_array_zeros(ctx, t, ndim, big, &base));
        TEST_OK(kiln_array_slice(base, 0, -1, -big[0] - 1, -1, &v));
        break;
    }
    kiln_array_release(base);
    return v;
}

static kiln_array *upload(kiln_context *ctx, const host_data *h, int ndim, const int64_t *shape, layout l) {
    kiln_dtype t = dtype_of(h->complex_, h->dbl);
    kiln_array *src = NULL, *v = make_view(ctx, t, ndim, shape, l);
    TEST_OK(
        kiln_array_from_host(ctx, t, ndim, shape, h->packed, (size_t)h->count * kiln_dtype_size(t), &src));
    TEST_OK(kiln_array_assign(v, src));
    kiln_array_release(src);
    return v;
}

static void *download(kiln_array *a) {
    size_t bytes = kiln_array_nbytes(a);
    void *p = malloc(bytes ? bytes : 1);
    TEST_OK(kiln_array_to_host(a, p, bytes));
    return p;
}

/* ------------------------------------------------------------------ one case */

typedef struct fft_case {
    kiln_fft_kind kind;
    int dir;
    kiln_fft_norm norm;
    int dbl;
    int ndim;
    int64_t shape[4]; /* logical: the real side's for R2C/C2R */
    int naxes;        /* 0: all */
    int axes[4];
    layout in_layout, out_layout;
    int inplace;
} fft_case;

static void describe(const fft_case *c, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s %s %s norm %d shape (",
                     c->kind == KILN_FFT_C2C   ? "C2C"
                     : c->kind == KILN_FFT_R2C ? "R2C"
                                               : "C2R",
                     c->dir < 0 ? "fwd" : "inv", c->dbl ? "f64" : "f32", (int)c->norm);
    for (int d = 0; d < c->ndim && n > 0 && (size_t)n < cap; d++)
        n += snprintf(buf + n, cap - (size_t)n, "%lld,", (long long)c->shape[d]);
    if (n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ") naxes %d in %s out %s%s", c->naxes, layout_name(c->in_layout),
                 layout_name(c->out_layout), c->inplace ? " in place" : "");
}

/* Runs the case on ctx; returns the result on the host (C order) and its
 * size in *count. */
static void *run_case(kiln_context *ctx, const fft_case *c, const host_data *in, int64_t *count) {
    int64_t half[KILN_MAX_DIMS];
    memcpy(half, c->shape, sizeof(int64_t) * (size_t)c->ndim);
    int last = c->naxes ? norm_axis(c->axes[c->naxes - 1], c->ndim) : c->ndim - 1;
    half[last] = c->shape[last] / 2 + 1;
    const int64_t *in_shape = c->kind == KILN_FFT_C2R ? half : c->shape;
    const int64_t *out_shape = c->kind == KILN_FFT_R2C ? half : c->shape;
    kiln_array *a = upload(ctx, in, c->ndim, in_shape, c->in_layout);
    const int *axes = c->naxes ? c->axes : NULL;
    kiln_array *out = c->inplace ? a
                                 : make_view(ctx, dtype_of(c->kind != KILN_FFT_C2R, c->dbl), c->ndim,
                                             out_shape, c->out_layout);
    char what[256];
    describe(c, what, sizeof what);
    kiln_status s;
    if (c->kind == KILN_FFT_C2C)
        s = kiln_fftn(a, axes, c->naxes, c->norm, (kiln_fft_direction)c->dir, &out);
    else if (c->kind == KILN_FFT_R2C)
        s = kiln_rfftn(a, axes, c->naxes, c->norm, &out);
    else
        s = kiln_irfftn(a, axes, c->naxes, c->shape[last], c->norm, &out);
    if (s != KILN_OK) fail_msg("%s: %s: %s", what, kiln_status_string(s), kiln_last_error());
    void *got = download(out);
    *count = count_of(c->ndim, out_shape);
    if (!c->inplace) kiln_array_release(out);
    kiln_array_release(a);
    return got;
}

/* The exact answer of a case: re/im (C order, out shape) */
static void reference(const fft_case *c, const host_data *in, long double **re, long double **im,
                      int64_t *count) {
    int64_t full = count_of(c->ndim, c->shape);
    long double *r = calloc((size_t)full, sizeof *r), *m = calloc((size_t)full, sizeof *m);
    int naxes = c->naxes ? c->naxes : c->ndim;
    int axes[KILN_MAX_DIMS] = {0};
    for (int i = 0; i < naxes; i++) axes[i] = c->naxes ? norm_axis(c->axes[i], c->ndim) : i;
    int last = axes[naxes - 1];
    int64_t half[KILN_MAX_DIMS];
    memcpy(half, c->shape, sizeof(int64_t) * (size_t)c->ndim);
    half[last] = c->shape[last] / 2 + 1;
    long double n = 1;
    for (int i = 0; i < naxes; i++) n *= (long double)c->shape[axes[i]];
    if (c->kind == KILN_FFT_C2R) {
        /* The input is rfftn(x) of a real x kept in in->re's companion: the
         * caller made it so; the answer is x times n times the norm. */
        fail_msg("reference() is not used for C2R");
    }
    memcpy(r, in->re, sizeof *r * (size_t)full);
    memcpy(m, in->im, sizeof *m * (size_t)full);
    for (int i = 0; i < naxes; i++) dft_axis(r, m, c->ndim, c->shape, axes[i], c->dir);
    long double f = norm_factor(c->norm, c->dir < 0, n);
    for (int64_t i = 0; i < full; i++) {
        r[i] *= f;
        m[i] *= f;
    }
    if (c->kind == KILN_FFT_R2C) {
        /* Keep the first n/2+1 along the last axis. */
        int64_t hc = count_of(c->ndim, half), inner = 1;
        for (int d = last + 1; d < c->ndim; d++) inner *= c->shape[d];
        long double *hr = calloc((size_t)hc, sizeof *hr), *hi = calloc((size_t)hc, sizeof *hi);
        int64_t L = c->shape[last], H = half[last], outer = full / (L * inner);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < H; k++)
                for (int64_t i = 0; i < inner; i++) {
                    hr[(o * H + k) * inner + i] = r[(o * L + k) * inner + i];
                    hi[(o * H + k) * inner + i] = m[(o * L + k) * inner + i];
                }
        free(r);
        free(m);
        r = hr;
        m = hi;
        full = hc;
    }
    *re = r;
    *im = m;
    *count = full;
}

/* On the CUDA run, a CPU context to compare with; NULL on the CPU run, and
 * (with a note) where FFTW is not installed beside the GPU. */
static kiln_context *cpu_peer(void) {
    static kiln_context *peer;
    static int tried;
    if (strcmp(test_target(), "cuda") != 0 || tried) return peer;
    tried = 1;
    TEST_OK(kiln_open(&peer, "cpu"));
    const int64_t n = 4;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(peer, KILN_COMPLEX64, 1, &n, &a));
    kiln_status s = kiln_fftn(a, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &a);
    kiln_array_release(a);
    if (s == KILN_ERR_LIBRARY_MISSING) {
        print_message("no CPU comparison: %s\n", kiln_last_error());
        kiln_close(peer);
        peer = NULL;
    } else {
        TEST_OK(s);
    }
    return peer;
}

static void check_case(kiln_context *ctx, const fft_case *c, test_rng *rng) {
    char what[256];
    describe(c, what, sizeof what);
    if (c->kind == KILN_FFT_C2R) {
        /* x real -> X = rfftn(x) exactly -> irfftn(X) must give x (times the
         * normalisation's n factor). */
        fft_case fwd = *c;
        fwd.kind = KILN_FFT_R2C;
        fwd.dir = -1;
        fwd.norm = KILN_FFT_NORM_BACKWARD;
        host_data x = host_random(rng, 0, c->dbl, count_of(c->ndim, c->shape));
        long double *xr, *xi;
        int64_t hc;
        reference(&fwd, &x, &xr, &xi, &hc);
        host_data X = host_random(rng, 1, c->dbl, hc);
        for (int64_t i = 0; i < hc; i++) {
            X.re[i] = xr[i];
            X.im[i] = xi[i];
            if (c->dbl) {
                ((double *)X.packed)[2 * i] = (double)xr[i];
                ((double *)X.packed)[2 * i + 1] = (double)xi[i];
            } else {
                ((float *)X.packed)[2 * i] = (float)xr[i];
                ((float *)X.packed)[2 * i + 1] = (float)xi[i];
            }
        }
        long double n = 1;
        int naxes = c->naxes ? c->naxes : c->ndim;
        for (int i = 0; i < naxes; i++)
            n *= (long double)c->shape[c->naxes ? norm_axis(c->axes[i], c->ndim) : i];
        long double f = n * norm_factor(c->norm, 0, n);
        int64_t count = 0;
        void *got = run_case(ctx, c, &X, &count);
        double e = rel_error(got, 0, c->dbl, x.re, x.im, count, f);
        if (!(e <= tolerance(c->dbl) * 4)) fail_msg("%s: relative error %.3g", what, e);
        kiln_context *peer = cpu_peer();
        if (peer) {
            void *cpu = run_case(peer, c, &X, &count);
            long double *cr = calloc((size_t)count, sizeof *cr), *ci = calloc((size_t)count, sizeof *ci);
            for (int64_t i = 0; i < count; i++) cr[i] = c->dbl ? ((double *)cpu)[i] : ((float *)cpu)[i];
            double d = rel_error(got, 0, c->dbl, cr, ci, count, 1);
            if (!(d <= 8 * tolerance(c->dbl))) fail_msg("%s: CUDA vs CPU relative difference %.3g", what, d);
            free(cr);
            free(ci);
            free(cpu);
        }
        free(got);
        free(xr);
        free(xi);
        host_free(&x);
        host_free(&X);
        return;
    }
    host_data in = host_random(rng, c->kind == KILN_FFT_C2C, c->dbl, count_of(c->ndim, c->shape));
    long double *rr, *ri;
    int64_t rc, count = 0;
    reference(c, &in, &rr, &ri, &rc);
    void *got = run_case(ctx, c, &in, &count);
    assert_int_equal(count, rc);
    double e = rel_error(got, 1, c->dbl, rr, ri, count, 1);
    if (!(e <= tolerance(c->dbl))) fail_msg("%s: relative error %.3g", what, e);
    kiln_context *peer = cpu_peer();
    if (peer) {
        /* The CPU backend's answer for the same input, against the GPU's. */
        void *cpu = run_case(peer, c, &in, &count);
        long double *cr = calloc((size_t)count, sizeof *cr), *ci = calloc((size_t)count, sizeof *ci);
        for (int64_t i = 0; i < count; i++) {
            cr[i] = c->dbl ? ((double *)cpu)[2 * i] : ((float *)cpu)[2 * i];
            ci[i] = c->dbl ? ((double *)cpu)[2 * i + 1] : ((float *)cpu)[2 * i + 1];
        }
        double d = rel_error(got, 1, c->dbl, cr, ci, count, 1);
        if (!(d <= 2 * tolerance(c->dbl))) fail_msg("%s: CUDA vs CPU relative difference %.3g", what, d);
        free(cr);
        free(ci);
        free(cpu);
    }
    free(got);
    free(rr);
    free(ri);
    host_free(&in);
}

/* ------------------------------------------------------------------ tests */

static const int64_t sizes_1d[] = {1, 2, 3, 7, 16, 210, 1009};

static void test_c2c_1d_sizes(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    for (size_t i = 0; i < sizeof sizes_1d / sizeof sizes_1d[0]; i++)
        for (int dbl = 0; dbl < 2; dbl++)
            for (int dir = -1; dir <= 1; dir += 2) {
                fft_case c = {
                    KILN_FFT_C2C, dir, (kiln_fft_norm)(i % 3), dbl, 1, {sizes_1d[i]}, 0, {0}, L_CONTIG,
                    L_CONTIG,     0};
                check_case(ctx, &c, &rng);
            }
    kiln_close(ctx);
}

static void test_real_1d_sizes(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    const int64_t sizes[] = {1, 2, 15, 16, 210, 1009};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int dbl = 0; dbl < 2; dbl++) {
            fft_case r2c = {KILN_FFT_R2C, -1, (kiln_fft_norm)(i % 3), dbl, 1, {sizes[i]}, 0, {0}, L_CONTIG,
                            L_CONTIG,     0};
            check_case(ctx, &r2c, &rng);
            if (sizes[i] == 1) continue; /* C2R of length 1 is not defined by NumPy (2*(m-1) = 0) */
            fft_case c2r = {
                KILN_FFT_C2R, 1, (kiln_fft_norm)((i + 1) % 3), dbl, 1, {sizes[i]}, 0, {0}, L_CONTIG,
                L_CONTIG,     0};
            check_case(ctx, &c2r, &rng);
        }
    kiln_close(ctx);
}

static void test_multi_dim(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    const fft_case cases[] = {
        {KILN_FFT_C2C, -1, KILN_FFT_NORM_BACKWARD, 0, 2, {6, 35}, 0, {0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2C, 1, KILN_FFT_NORM_ORTHO, 1, 3, {4, 5, 6}, 0, {0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2C, -1, KILN_FFT_NORM_FORWARD, 1, 3, {5, 6, 7}, 2, {0, 2}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2C, -1, KILN_FFT_NORM_BACKWARD, 0, 3, {3, 1, 10}, 2, {-2, -1}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2C, -1, KILN_FFT_NORM_BACKWARD, 1, 4, {2, 3, 4, 5}, 0, {0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2C, 1, KILN_FFT_NORM_BACKWARD, 0, 2, {1, 1}, 0, {0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2C, -1, KILN_FFT_NORM_ORTHO, 0, 3, {8, 7, 9}, 1, {1}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_R2C, -1, KILN_FFT_NORM_BACKWARD, 0, 2, {12, 10}, 0, {0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_R2C, -1, KILN_FFT_NORM_ORTHO, 1, 3, {3, 4, 5}, 0, {0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_R2C, -1, KILN_FFT_NORM_FORWARD, 1, 3, {6, 4, 5}, 2, {2, 0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2R, 1, KILN_FFT_NORM_BACKWARD, 0, 2, {7, 9}, 0, {0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2R, 1, KILN_FFT_NORM_ORTHO, 1, 3, {4, 6, 10}, 0, {0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2R, 1, KILN_FFT_NORM_FORWARD, 1, 3, {4, 6, 10}, 2, {2, 0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2R, 1, KILN_FFT_NORM_BACKWARD, 0, 4, {2, 3, 4, 6}, 0, {0}, L_CONTIG, L_CONTIG, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(ctx, &cases[i], &rng);
    kiln_close(ctx);
}

/* More transform axes than one library plan takes: passes (cuFFT beyond 3
 * axes; forced here with the testing knob so FFTW takes the same path). */
static void test_split_passes(void **state) {
    (void)state;
    setenv("KILN_FFT_MAX_RANK", "1", 1);
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    const fft_case cases[] = {
        {KILN_FFT_C2C, -1, KILN_FFT_NORM_BACKWARD, 1, 3, {4, 5, 6}, 0, {0}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2C, 1, KILN_FFT_NORM_ORTHO, 0, 3, {4, 5, 6}, 2, {2, 0}, L_TRANSPOSED, L_STRIDED, 0},
        {KILN_FFT_C2C, -1, KILN_FFT_NORM_BACKWARD, 0, 2, {6, 10}, 0, {0}, L_OFFSET, L_OFFSET, 1},
        {KILN_FFT_R2C, -1, KILN_FFT_NORM_BACKWARD, 1, 3, {3, 4, 10}, 0, {0}, L_STRIDED, L_CONTIG, 0},
        {KILN_FFT_R2C, -1, KILN_FFT_NORM_FORWARD, 0, 3, {3, 4, 9}, 2, {0, 1}, L_CONTIG, L_TRANSPOSED, 0},
        {KILN_FFT_C2R, 1, KILN_FFT_NORM_BACKWARD, 1, 3, {3, 4, 10}, 0, {0}, L_CONTIG, L_STRIDED, 0},
        {KILN_FFT_C2R, 1, KILN_FFT_NORM_ORTHO, 0, 4, {2, 3, 4, 6}, 3, {0, 3, 1}, L_REVERSED, L_CONTIG, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(ctx, &cases[i], &rng);
    const int64_t shape[3] = {4, 5, 6};
    kiln_array *a = NULL;
    kiln_fft_plan *p = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 3, shape, &a));
    TEST_OK(kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, a, a, NULL, 0, KILN_FFT_NORM_BACKWARD, &p));
    assert_int_equal(p->nsteps, 3); /* one pass per axis */
    kiln_fft_plan_release(p);
    kiln_array_release(a);
    kiln_close(ctx);
    unsetenv("KILN_FFT_MAX_RANK");
}

/* Every layout of input and output, every kind and precision. */
static void test_layouts(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    const kiln_fft_kind kinds[] = {KILN_FFT_C2C, KILN_FFT_R2C, KILN_FFT_C2R};
    for (int k = 0; k < 3; k++)
        for (int dbl = 0; dbl < 2; dbl++)
            for (int li = 0; li < L_COUNT; li++)
                for (int lo = 0; lo < L_COUNT; lo++) {
                    if (li != L_CONTIG && lo != L_CONTIG && li != lo) continue; /* enough combinations */
                    int dir = kinds[k] == KILN_FFT_C2R ? 1 : -1;
                    fft_case c = {
                        kinds[k],   dir, KILN_FFT_NORM_BACKWARD, dbl, 3, {3, 6, 10}, 2, {0, 2}, (layout)li,
                        (layout)lo, 0};
                    check_case(ctx, &c, &rng);
                    fft_case all = c;
                    all.naxes = 0;
                    all.ndim = 2;
                    all.shape[0] = 9;
                    all.shape[1] = 8;
                    check_case(ctx, &all, &rng);
                }
    kiln_close(ctx);
}

static void test_in_place(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    for (int li = 0; li < L_COUNT; li++)
        for (int dbl = 0; dbl < 2; dbl++) {
            fft_case c = {KILN_FFT_C2C,
                          li % 2 ? 1 : -1,
                          (kiln_fft_norm)(li % 3),
                          dbl,
                          2,
                          {12, 35},
                          0,
                          {0},
                          (layout)li,
                          (layout)li,
                          1};
            check_case(ctx, &c, &rng);
        }
    kiln_close(ctx);
}

/* forward then inverse gives the input back for every normalisation. */
static void test_round_trips(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    const int64_t shape[3] = {5, 14, 9};
    for (int dbl = 0; dbl < 2; dbl++)
        for (int norm = 0; norm < 3; norm++) {
            host_data h = host_random(&rng, 1, dbl, count_of(3, shape));
            kiln_array *a = upload(ctx, &h, 3, shape, L_CONTIG), *f = NULL, *back = NULL;
            TEST_OK(kiln_fftn(a, NULL, 0, (kiln_fft_norm)norm, KILN_FFT_FORWARD, &f));
            TEST_OK(kiln_fftn(f, NULL, 0, (kiln_fft_norm)norm, KILN_FFT_INVERSE, &back));
            void *got = download(back);
            double e = rel_error(got, 1, dbl, h.re, h.im, h.count, 1);
            if (!(e <= tolerance(dbl))) fail_msg("C2C round trip dbl %d norm %d: %.3g", dbl, norm, e);
            free(got);
            kiln_array_release(f);
            kiln_array_release(back);
            /* real: irfftn(rfftn(x)) == x */
            host_data x = host_random(&rng, 0, dbl, count_of(3, shape));
            kiln_array *xr = upload(ctx, &x, 3, shape, L_CONTIG), *X = NULL, *y = NULL;
            TEST_OK(kiln_rfftn(xr, NULL, 0, (kiln_fft_norm)norm, &X));
            TEST_OK(kiln_irfftn(X, NULL, 0, shape[2], (kiln_fft_norm)norm, &y));
            got = download(y);
            e = rel_error(got, 0, dbl, x.re, x.im, x.count, 1);
            if (!(e <= 4 * tolerance(dbl))) fail_msg("real round trip dbl %d norm %d: %.3g", dbl, norm, e);
            free(got);
            kiln_array_release(xr);
            kiln_array_release(X);
            kiln_array_release(y);
            kiln_array_release(a);
            host_free(&h);
            host_free(&x);
        }
    kiln_close(ctx);
}

/* The same arguments give the same plan; an explicit plan runs on other
 * arrays of the same layout; strided views need no copies where the library
 * can express them, reversed ones do. */
static void test_plans_and_cache(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    const int64_t shape[2] = {16, 24};
    host_data h = host_random(&rng, 1, 0, count_of(2, shape));
    kiln_array *a = upload(ctx, &h, 2, shape, L_CONTIG), *b = upload(ctx, &h, 2, shape, L_CONTIG);
    kiln_array *o1 = make_view(ctx, KILN_COMPLEX64, 2, shape, L_CONTIG),
               *o2 = make_view(ctx, KILN_COMPLEX64, 2, shape, L_CONTIG);
    kiln_fft_plan *p1 = NULL, *p2 = NULL;
    TEST_OK(
        kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, a, o1, NULL, 0, KILN_FFT_NORM_BACKWARD, &p1));
    TEST_OK(
        kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, a, o1, NULL, 0, KILN_FFT_NORM_BACKWARD, &p2));
    assert_ptr_equal(p1, p2);
    assert_int_equal(kiln_fft_plan_copies(p1), 0);
    TEST_OK(kiln_fft_execute(p1, b, o2, NULL));
    TEST_OK(kiln_fft_execute(p1, a, o1, NULL));
    void *g1 = download(o1), *g2 = download(o2);
    assert_memory_equal(g1, g2, kiln_array_nbytes(o1));
    free(g1);
    free(g2);
    kiln_fft_plan_release(p2);
    /* a different normalisation is a different plan */
    TEST_OK(kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, a, o1, NULL, 0, KILN_FFT_NORM_ORTHO, &p2));
    assert_ptr_not_equal(p1, p2);
    kiln_fft_plan_release(p2);
    kiln_fft_plan_release(p1);

    kiln_array *s = make_view(ctx, KILN_COMPLEX64, 2, shape, L_STRIDED),
               *r = make_view(ctx, KILN_COMPLEX64, 2, shape, L_REVERSED);
    TEST_OK(
        kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, s, o1, NULL, 0, KILN_FFT_NORM_BACKWARD, &p1));
    assert_int_equal(kiln_fft_plan_copies(p1), 0);
    kiln_fft_plan_release(p1);
    TEST_OK(
        kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, r, o1, NULL, 0, KILN_FFT_NORM_BACKWARD, &p1));
    assert_int_equal(kiln_fft_plan_copies(p1), 1);
    kiln_fft_plan_release(p1);
    kiln_array *arrs[] = {a, b, o1, o2, s, r};
    for (size_t i = 0; i < 6; i++) kiln_array_release(arrs[i]);
    host_free(&h);
    kiln_close(ctx);
}

/* Explicit plans on a stream, with an inverse through the plan API too. */
static void test_plan_on_stream(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    const int64_t shape[2] = {32, 30};
    host_data h = host_random(&rng, 1, 1, count_of(2, shape));
    kiln_array *a = upload(ctx, &h, 2, shape, L_CONTIG),
               *o = make_view(ctx, KILN_COMPLEX128, 2, shape, L_CONTIG);
    kiln_stream *st = NULL;
    TEST_OK(kiln_stream_create(ctx, &st));
    kiln_fft_plan *fwd = NULL, *inv = NULL;
    TEST_OK(kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, a, o, NULL, 0, KILN_FFT_NORM_ORTHO, &fwd));
    TEST_OK(kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_INVERSE, o, o, NULL, 0, KILN_FFT_NORM_ORTHO, &inv));
    TEST_OK(kiln_fft_execute(fwd, a, o, st));
    TEST_OK(kiln_fft_execute(inv, o, o, st));
    TEST_OK(kiln_stream_synchronize(st));
    void *got = download(o);
    double e = rel_error(got, 1, 1, h.re, h.im, h.count, 1);
    if (!(e <= tolerance(1))) fail_msg("plan round trip on a stream: %.3g", e);
    free(got);
    kiln_fft_plan_release(fwd);
    kiln_fft_plan_release(inv);
    kiln_stream_release(st);
    kiln_array_release(a);
    kiln_array_release(o);
    host_free(&h);
    kiln_close(ctx);
}

static void test_bad_input(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    const int64_t shape[2] = {8, 6}, half[2] = {8, 4}, wrong[2] = {8, 5}, zero[2] = {0, 6};
    kiln_array *c = NULL, *r = NULL, *ch = NULL, *cw = NULL, *z = NULL, *zo = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, shape, &c));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &r));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, half, &ch));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, wrong, &cw));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, zero, &z));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, zero, &zo));
    kiln_fft_plan *p = NULL;
    /* complex input to an R2C plan */
    TEST_FAILS_WITH(
        kiln_fft_plan_create(KILN_FFT_R2C, KILN_FFT_FORWARD, c, ch, NULL, 0, KILN_FFT_NORM_BACKWARD, &p),
        KILN_ERR_DTYPE, "R2C needs float32 or float64 input, got complex64");
    kiln_array *out = NULL;
    TEST_FAILS_WITH(kiln_rfftn(c, NULL, 0, KILN_FFT_NORM_BACKWARD, &out), KILN_ERR_DTYPE, "got complex64");
    /* real input to C2C */
    TEST_FAILS_WITH(kiln_fftn(r, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &out), KILN_ERR_DTYPE,
                    "kiln_rfftn");
    /* output of the wrong shape */
    TEST_FAILS_WITH(kiln_rfftn(r, NULL, 0, KILN_FFT_NORM_BACKWARD, &cw), KILN_ERR_SHAPE, "(8, 4)");
    TEST_FAILS_WITH(kiln_fftn(c, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &cw), KILN_ERR_SHAPE,
                    "(8, 5)");
    TEST_FAILS_WITH(kiln_irfftn(ch, NULL, 0, 9, KILN_FFT_NORM_BACKWARD, &out), KILN_ERR_SHAPE,
                    "cannot give 9");
    /* zero-length transform axes */
    TEST_FAILS_WITH(kiln_fftn(z, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &zo), KILN_ERR_SHAPE,
                    "axis 0 has length 0");
    /* ... while a zero-length batch is nothing to do */
    const int ax1[1] = {1};
    TEST_OK(kiln_fftn(z, ax1, 1, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &zo));
    /* an array from another context */
    kiln_context *other = NULL;
    TEST_OK(kiln_open(&other, test_target()));
    kiln_array *oc = NULL;
    TEST_OK(kiln_array_zeros(other, KILN_COMPLEX64, 2, shape, &oc));
    TEST_FAILS_WITH(kiln_fftn(c, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &oc),
                    KILN_ERR_INVALID_ARGUMENT, "different contexts");
    TEST_OK(kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, c, c, NULL, 0, KILN_FFT_NORM_BACKWARD, &p));
    TEST_FAILS_WITH(kiln_fft_execute(p, oc, oc, NULL), KILN_ERR_INVALID_ARGUMENT, "another context");
    /* arrays not matching the plan */
    TEST_FAILS_WITH(kiln_fft_execute(p, cw, cw, NULL), KILN_ERR_SHAPE, "plan for input (8, 6)");
    kiln_array *c2 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, shape, &c2));
    TEST_FAILS_WITH(kiln_fft_execute(p, c, c2, NULL), KILN_ERR_INVALID_ARGUMENT, "in place");
    kiln_fft_plan_release(p);
    /* axes, direction, kinds */
    const int dup[2] = {0, -2}, far[1] = {2};
    TEST_FAILS_WITH(kiln_fftn(c, dup, 2, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &c2),
                    KILN_ERR_INVALID_ARGUMENT, "given twice");
    TEST_FAILS_WITH(kiln_fftn(c, far, 1, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &c2),
                    KILN_ERR_INVALID_ARGUMENT, "out of range");
    TEST_FAILS_WITH(kiln_fftn(c, NULL, 0, KILN_FFT_NORM_BACKWARD, (kiln_fft_direction)0, &c2),
                    KILN_ERR_INVALID_ARGUMENT, "direction 0");
    TEST_FAILS_WITH(
        kiln_fft_plan_create(KILN_FFT_R2C, KILN_FFT_INVERSE, r, ch, NULL, 0, KILN_FFT_NORM_BACKWARD, &p),
        KILN_ERR_INVALID_ARGUMENT, "forward only");
    TEST_FAILS_WITH(kiln_fftn(c, NULL, 0, (kiln_fft_norm)7, KILN_FFT_FORWARD, &c2), KILN_ERR_INVALID_ARGUMENT,
                    "normalisation 7");
    kiln_fft_norm nm;
    TEST_OK(kiln_fft_norm_parse("ortho", &nm));
    assert_int_equal(nm, KILN_FFT_NORM_ORTHO);
    TEST_FAILS_WITH(kiln_fft_norm_parse("sideways", &nm), KILN_ERR_INVALID_ARGUMENT, "sideways");
    /* input and output overlapping without being the same array */
    const int64_t tall[2] = {9, 6};
    kiln_array *base = NULL, *top = NULL, *bottom = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, tall, &base));
    TEST_OK(kiln_array_slice(base, 0, 0, 8, 1, &top));
    TEST_OK(kiln_array_slice(base, 0, 1, 9, 1, &bottom));
    TEST_FAILS_WITH(kiln_fftn(top, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &bottom),
                    KILN_ERR_INVALID_ARGUMENT, "overlap");
    kiln_array_release(top);
    kiln_array_release(bottom);
    kiln_array_release(base);

    kiln_array *arrs[] = {c, r, ch, cw, z, zo, oc, c2};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
    kiln_close(other);
    kiln_close(ctx);
}

/* Several threads planning and transforming on one context at once: the
 * cache's lock and FFTW's planner lock keep them apart. */
typedef struct thread_job {
    kiln_context *ctx;
    int64_t n;
    double err;
    kiln_status status;
} thread_job;

static void *thread_main(void *arg) {
    thread_job *j = arg;
    j->err = 0;
    j->status = KILN_OK;
    for (int round = 0; round < 6 && j->status == KILN_OK; round++) {
        int64_t n = j->n + round % 3; /* new plans and cache hits mixed */
        double *buf = calloc((size_t)(2 * n), sizeof *buf), *back = calloc((size_t)(2 * n), sizeof *back);
        for (int64_t i = 0; i < n; i++) buf[2 * i] = (double)((i * 7 + round) % 11) - 5;
        kiln_array *a = NULL, *f = NULL, *g = NULL;
        kiln_status s =
            kiln_array_from_host(j->ctx, KILN_COMPLEX128, 1, &n, buf, sizeof(double) * 2 * (size_t)n, &a);
        if (s == KILN_OK) s = kiln_fftn(a, NULL, 0, KILN_FFT_NORM_ORTHO, KILN_FFT_FORWARD, &f);
        if (s == KILN_OK) s = kiln_fftn(f, NULL, 0, KILN_FFT_NORM_ORTHO, KILN_FFT_INVERSE, &g);
        if (s == KILN_OK) s = kiln_array_to_host(g, back, sizeof(double) * 2 * (size_t)n);
        for (int64_t i = 0; s == KILN_OK && i < 2 * n; i++)
            j->err = fabs(back[i] - buf[i]) > j->err ? fabs(back[i] - buf[i]) : j->err;
        kiln_array_release(a);
        kiln_array_release(f);
        kiln_array_release(g);
        free(buf);
        free(back);
        j->status = s;
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    enum { THREADS = 4 };
    pthread_t t[THREADS];
    thread_job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (thread_job){ctx, 30 + 17 * i, 0, KILN_OK};
        assert_int_equal(pthread_create(&t[i], NULL, thread_main, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        if (jobs[i].status != KILN_OK) fail_msg("thread %d: %s", i, kiln_status_string(jobs[i].status));
        if (!(jobs[i].err < 1e-12)) fail_msg("thread %d: round trip error %.3g", i, jobs[i].err);
    }
    kiln_close(ctx);
}

/* A measured plan leaves FFTW's wisdom in kiln's cache folder. */
static void test_fftw_wisdom_file(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    if (kiln_context_backend(ctx) != KILN_BACKEND_CPU) {
        kiln_close(ctx);
        skip();
    }
    kiln_cache_info info;
    TEST_OK(kiln_cache_info_get(&info));
    if (!info.usable) fail_msg("cache unusable: %s", info.reason);
    char path[1200];
    snprintf(path, sizeof path, "%s/fftw-wisdom-single", info.path);
    setenv("KILN_FFTW_PLANNER", "measure", 1);
    const int64_t n = 48;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 1, &n, &a));
    TEST_OK(kiln_fftn(a, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &a));
    setenv("KILN_FFTW_PLANNER", "estimate", 1);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("no wisdom file at %s", path);
    char head[64] = "";
    if (!fgets(head, sizeof head, f)) head[0] = '\0';
    fclose(f);
    if (!test_contains(head, "fftwf_wisdom")) fail_msg("%s does not hold FFTW wisdom: %s", path, head);
    kiln_array_release(a);
    kiln_close(ctx);
}

/* ------------------------------------------------------------------ cuFFT layout mapping */
/* The cuFFT provider's parameters (cufft_layout.c) checked without a GPU:
 * for random views, every element cuFFT would read and write under the
 * mapping, and which transform it belongs to, must be exactly what the
 * layout says. */
typedef struct addr_rec {
    int64_t v[5]; /* (transform base, x0, x1, x2, address) or (in base, out base, 0, 0, 0) */
} addr_rec;

static int rec_cmp(const void *a, const void *b) {
    const addr_rec *x = a, *y = b;
    for (int i = 0; i < 5; i++)
        if (x->v[i] != y->v[i]) return x->v[i] < y->v[i] ? -1 : 1;
    return 0;
}

typedef struct rec_list {
    addr_rec *r;
    size_t n, cap;
} rec_list;

static void rec_add(rec_list *l, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->r = realloc(l->r, l->cap * sizeof *l->r);
    }
    addr_rec x = {{a, b, c, d, e}};
    l->r[l->n++] = x;
}

/* Side lengths of the transform dims (the complex side of R2C/C2R is halved). */
static void side_lengths(const kiln_fft_layout *l, int out_side, int64_t *len) {
    for (int i = 0; i < l->rank; i++) len[i] = l->n[i];
    int halved = (l->kind == KILN_FFT_R2C && out_side) || (l->kind == KILN_FFT_C2R && !out_side);
    if (halved) len[l->rank - 1] = l->n[l->rank - 1] / 2 + 1;
}

/* Every element of one transform, x in the layout's dim order. */
static void add_elements(rec_list *E, int64_t base, int rank, const int64_t *len, const int64_t *stride,
                         const int *order) {
    int64_t count = 1;
    for (int k = 0; k < rank; k++) count *= len[k];
    for (int64_t e = 0; e < count; e++) {
        int64_t x[3] = {0, 0, 0}, rem = e, addr = base;
        for (int k = rank - 1; k >= 0; k--) {
            int64_t i = rem % len[k];
            rem /= len[k];
            x[order[k]] = i;
            addr += i * stride[k];
        }
        rec_add(E, base, x[0], x[1], x[2], addr);
    }
}

static void layout_truth(const kiln_fft_layout *l, rec_list *T, rec_list *Ein, rec_list *Eout) {
    int64_t ilen[3], olen[3], batches = 1;
    int order[3] = {0, 1, 2};
    side_lengths(l, 0, ilen);
    side_lengths(l, 1, olen);
    for (int i = 0; i < l->howmany_rank; i++) batches *= l->hn[i];
    for (int64_t b = 0; b < batches; b++) {
        int64_t rem = b, bi = 0, bo = 0;
        for (int i = l->howmany_rank - 1; i >= 0; i--) {
            bi += (rem % l->hn[i]) * l->his[i];
            bo += (rem % l->hn[i]) * l->hos[i];
            rem /= l->hn[i];
        }
        rec_add(T, bi, bo, 0, 0, 0);
        add_elements(Ein, bi, l->rank, ilen, l->is, order);
        add_elements(Eout, bo, l->rank, olen, l->os, order);
    }
}

static void cufft_view(const kiln_fft_layout *l, const kiln_cufft_map *m, rec_list *T, rec_list *Ein,
                       rec_list *Eout) {
    int64_t ilen0[3], olen0[3], ilen[3], olen[3], ist[3], ost[3];
    side_lengths(l, 0, ilen0);
    side_lengths(l, 1, olen0);
    for (int k = 0; k < m->rank; k++) {
        ilen[k] = ilen0[m->perm[k]];
        olen[k] = olen0[m->perm[k]];
    }
    int r = m->rank;
    ist[r - 1] = m->basic ? 1 : m->istride;
    ost[r - 1] = m->basic ? 1 : m->ostride;
    for (int k = r - 2; k >= 0; k--) {
        ist[k] = ist[k + 1] * (m->basic ? ilen[k + 1] : m->inembed[k + 1]);
        ost[k] = ost[k + 1] * (m->basic ? olen[k + 1] : m->onembed[k + 1]);
    }
    int64_t idist = m->idist, odist = m->odist;
    if (m->basic) {
        idist = ist[0] * ilen[0];
        odist = ost[0] * olen[0];
    }
    for (int64_t it = 0; it < m->loop_count; it++) {
        int64_t ioff = 0, ooff = 0;
        kiln_fft_cufft_loop_offsets(m, it, &ioff, &ooff);
        for (int64_t b = 0; b < m->batch; b++) {
            int64_t bi = ioff + b * idist, bo = ooff + b * odist;
            rec_add(T, bi, bo, 0, 0, 0);
            add_elements(Ein, bi, r, ilen, ist, m->perm);
            add_elements(Eout, bo, r, olen, ost, m->perm);
        }
    }
}

static int same_lists(rec_list *a, rec_list *b) {
    if (a->n != b->n) return 0;
    qsort(a->r, a->n, sizeof *a->r, rec_cmp);
    qsort(b->r, b->n, sizeof *b->r, rec_cmp);
    return a->n == 0 || memcmp(a->r, b->r, a->n * sizeof *a->r) == 0;
}

/* A random view of `shape`: a bigger array, sliced with steps and offsets,
 * its axes permuted. */
static kiln_array *random_view(kiln_context *ctx, test_rng *rng, kiln_dtype t, int ndim,
                               const int64_t *shape) {
    int perm[4] = {0, 1, 2, 3};
    for (int i = ndim - 1; i > 0; i--) {
        int j = (int)test_uniform(rng, 0, i + 1);
        j = j > i ? i : j;
        int x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    int64_t big[4], step[4], off[4];
    for (int d = 0; d < ndim; d++) {
        step[d] = 1 + (int64_t)test_uniform(rng, 0, 2.99);
        off[d] = (int64_t)test_uniform(rng, 0, 1.99);
        big[perm[d]] = off[d] + step[d] * shape[d];
    }
    kiln_array *base = NULL, *v = NULL;
    TEST_OK(kiln_array_zeros(ctx, t, ndim, big, &base));
    TEST_OK(kiln_array_transpose(base, perm, &v)); /* v's dim d is base's perm[d] */
    kiln_array_release(base);
    for (int d = 0; d < ndim; d++) {
        kiln_array *w = NULL;
        TEST_OK(kiln_array_slice(v, d, off[d], off[d] + step[d] * shape[d], step[d], &w));
        kiln_array_release(v);
        v = w;
    }
    return v;
}

static void test_cufft_layout_mapping(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    int mapped = 0, refused = 0;
    for (int trial = 0; trial < 600; trial++) {
        int ndim = 1 + (int)test_uniform(&rng, 0, 3.99);
        ndim = ndim > 4 ? 4 : ndim;
        int64_t shape[4], oshape[4];
        for (int d = 0; d < ndim; d++) shape[d] = 1 + (int64_t)test_uniform(&rng, 0, 4.99);
        kiln_fft_kind kind = (kiln_fft_kind)(trial % 3);
        int naxes = 1 + (int)test_uniform(&rng, 0, (ndim < 3 ? ndim : 3) - 0.01);
        int axes[4] = {0, 1, 2, 3};
        for (int i = ndim - 1; i > 0; i--) {
            int j = (int)test_uniform(&rng, 0, i + 0.99);
            int x = axes[i];
            axes[i] = axes[j];
            axes[j] = x;
        }
        int last = axes[naxes - 1];
        memcpy(oshape, shape, sizeof shape);
        int64_t half[4];
        memcpy(half, shape, sizeof shape);
        half[last] = shape[last] / 2 + 1;
        const int64_t *ins = kind == KILN_FFT_C2R ? half : shape,
                      *outs = kind == KILN_FFT_R2C ? half : oshape;
        kiln_dtype tin = kind == KILN_FFT_R2C ? KILN_FLOAT32 : KILN_COMPLEX64;
        kiln_dtype tout = kind == KILN_FFT_C2R ? KILN_FLOAT32 : KILN_COMPLEX64;
        kiln_array *in = random_view(ctx, &rng, tin, ndim, ins),
                   *out = random_view(ctx, &rng, tout, ndim, outs);
        kiln_fft_key key;
        TEST_OK(kiln_fft_key_from("mapping test", kind,
                                  kind == KILN_FFT_C2R ? KILN_FFT_INVERSE : KILN_FFT_FORWARD, in, out, axes,
                                  naxes, KILN_FFT_NORM_BACKWARD, &key));
        kiln_fft_layout l;
        assert_true(kiln_fft_build_layout(&key, key.in_strides, key.out_strides, &l));
        kiln_cufft_map m;
        if (l.rank == 0 || !kiln_fft_cufft_map(&l, &m)) {
            refused++;
        } else {
            mapped++;
            rec_list T1 = {0}, I1 = {0}, O1 = {0}, T2 = {0}, I2 = {0}, O2 = {0};
            layout_truth(&l, &T1, &I1, &O1);
            cufft_view(&l, &m, &T2, &I2, &O2);
            if (!same_lists(&T1, &T2) || !same_lists(&I1, &I2) || !same_lists(&O1, &O2))
                fail_msg(
                    "trial %d: kind %d rank %d howmany %d: cuFFT mapping (basic %d, batch %lld, loops %d) "
                    "differs from the layout",
                    trial, (int)kind, l.rank, l.howmany_rank, m.basic, m.batch, m.loops);
            free(T1.r), free(I1.r), free(O1.r), free(T2.r), free(I2.r), free(O2.r);
        }
        kiln_array_release(in);
        kiln_array_release(out);
    }
    print_message("cuFFT mapping: %d layouts mapped directly, %d copied\n", mapped, refused);
    assert_true(mapped > 150 && refused > 20); /* both paths were exercised */
    kiln_close(ctx);
}

/* Host memory wrapped by the caller: transformed in place by FFTW on the
 * CPU; refused on CUDA (cuFFT works on device arrays) with a message. */
static void test_host_arrays(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    double buf[2 * 12] = {0};
    for (int i = 0; i < 12; i++) buf[2 * i] = i + 1; /* 1..12 real */
    const int64_t shape[1] = {12};
    kiln_array *h = NULL, *out = NULL;
    TEST_OK(kiln_array_wrap_host(ctx, KILN_COMPLEX128, 1, shape, NULL, buf, &h));
    out = h;
    kiln_status s = kiln_fftn(h, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &out);
    if (kiln_context_backend(ctx) == KILN_BACKEND_CUDA) {
        assert_int_equal(s, KILN_ERR_INVALID_ARGUMENT);
        assert_true(test_contains(kiln_last_error(), "host-memory array"));
    } else {
        TEST_OK(s);
        /* X[0] = sum 1..12 = 78; X[6] = sum (-1)^j (j+1) = -6 */
        assert_true(fabs(buf[0] - 78) < 1e-12 && fabs(buf[1]) < 1e-12);
        assert_true(fabs(buf[12] + 6) < 1e-12 && fabs(buf[13]) < 1e-12);
    }
    kiln_array_release(h);
    kiln_close(ctx);
}

/* The normalisation kernel compiles for sm_90 through NVRTC (CPU runs too). */
static void test_scale_kernel_compiles_for_cuda(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    kiln_ufunc *f = NULL;
    TEST_OK(kiln_fft_scale_ufunc(ctx, &f));
    const kiln_dtype types[4] = {KILN_COMPLEX64, KILN_COMPLEX128, KILN_FLOAT32, KILN_FLOAT64};
    const int64_t shape[2] = {4, 6};
    for (int i = 0; i < 4; i++) {
        kiln_array *a = NULL, *v = NULL;
        TEST_OK(kiln_array_zeros(ctx, types[i], 2, shape, &a));
        TEST_OK(kiln_array_slice(a, 1, 0, 6, 2, &v));
        kiln_value s =
            types[i] == KILN_COMPLEX64 || types[i] == KILN_FLOAT32 ? kiln_f32(0.5f) : kiln_f64(0.5);
        kiln_array *views[2] = {a, v};
        for (int j = 0; j < 2; j++) {
            kiln_array *outs[1] = {views[j]};
            char *src = NULL, *log = NULL;
            TEST_OK(kiln_ufunc_source(f, "cuda", KILN_ARGS(kiln_arr(views[j]), s), outs, &src));
            kiln_status st = kiln_compile_only("cuda", "sm_90", src, "fft_scale.cu", NULL, &log);
            if (st != KILN_OK && st != KILN_ERR_COMPILER_MISSING) fail_msg("%s\n%s", kiln_last_error(), src);
            kiln_free(src);
            kiln_free(log);
        }
        kiln_array_release(v);
        kiln_array_release(a);
    }
    kiln_close(ctx);
}

/* The profiler records each transform by name. */
static void test_profiled(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    TEST_OK(kiln_profiler_start(ctx));
    const int64_t shape[1] = {64};
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 1, shape, &a));
    TEST_OK(kiln_fftn(a, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &a));
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    if (!test_contains(text, "fft c2c fwd f32 (64,)")) fail_msg("summary lacks the transform:\n%s", text);
    kiln_free(text);
    kiln_array_release(a);
    kiln_close(ctx);
}

/* kiln demo fft_convolve at a small size: checks itself against the direct
 * convolution and writes its PNG; its multiply compiles for sm_90. */
static void test_convolve_demo(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    char *dir = test_temp_dir("fft_convolve");
    kiln_example_opts opts = {61, 3, 0, dir};
    kiln_example_result r;
    TEST_OK(kiln_example_find("fft_convolve")->run(ctx, &opts, &r));
    print_message("fft_convolve on %s: %s\n", test_target(), r.check);
    if (!r.passed) fail_msg("fft_convolve failed its check: %s", r.check);
    if (!test_contains(r.check, "wrote") && !test_contains(r.check, "without libpng"))
        fail_msg("no picture: %s", r.check);
    float img[64];
    for (int i = 0; i < 64; i++) img[i] = (float)(i % 7);
    kiln_fft_convolve c;
    TEST_OK(kiln_fft_convolve_prepare(ctx, img, 8, &c));
    assert_int_equal(c.p, 12); /* 8 + 4 is 2^2 * 3 already */
    char *src = NULL, *log = NULL;
    kiln_array *outs[1] = {c.image};
    TEST_OK(kiln_ufunc_source(c.vmult, "cuda", KILN_ARGS(kiln_arr(c.image), kiln_arr(c.filter), kiln_f32(1)),
                              outs, &src));
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "vmult.cu", NULL, &log);
    if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING) fail_msg("%s\n%s", kiln_last_error(), src);
    kiln_free(src);
    kiln_free(log);
    kiln_fft_convolve_release(&c);
    free(dir);
    kiln_close(ctx);
}

int main(void) {
    /* Measured planning is the default; the tests plan hundreds of small
     * layouts once each, where FFTW's estimate is just as right. */
    setenv("KILN_FFTW_PLANNER", "estimate", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c2c_1d_sizes),
        cmocka_unit_test(test_real_1d_sizes),
        cmocka_unit_test(test_multi_dim),
        cmocka_unit_test(test_split_passes),
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_plans_and_cache),
        cmocka_unit_test(test_plan_on_stream),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_scale_kernel_compiles_for_cuda),
        cmocka_unit_test(test_profiled),
        cmocka_unit_test(test_cufft_layout_mapping),
        cmocka_unit_test(test_fftw_wisdom_file),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_host_arrays),
        cmocka_unit_test(test_convolve_demo),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kiln_close(cpu_peer());
    return rc;
}
