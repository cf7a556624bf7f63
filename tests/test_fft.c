/* test_fft.c: kiln's FFT against a naive DFT in long double, at small and
 * awkward sizes (1, primes such as 1009, products of 2, 3, 5, 7), over every
 * kind, dtype, normalisation and layout (strided, transposed, reversed,
 * offset, in place, batched, split into passes), round trips and explicit
 * plans. With KILN_TEST_TARGET=cuda the transforms also run on a CPU context
 * and the two backends' results are compared. Bad input, threads, the
 * profiler and the demo: test_fft_api.c; the cuFFT layout mapping:
 * test_fft_mapping.c. */
#define KILN_EXPERIMENTAL /* kiln_fft_plan_copies (include/kiln.h) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fft/fft.h"
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
    void *got = test_read_array(out);
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
        /* The halved axis in the middle, odd lengths around it: on cuFFT the
         * real side has batch strides of odd numbers of reals on both sides
         * of it, which host-looped launches cannot start on (scratch). */
        {KILN_FFT_R2C, -1, KILN_FFT_NORM_BACKWARD, 0, 3, {3, 5, 3}, 1, {1}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_C2R, 1, KILN_FFT_NORM_ORTHO, 1, 3, {3, 5, 3}, 1, {1}, L_CONTIG, L_CONTIG, 0},
        {KILN_FFT_R2C, -1, KILN_FFT_NORM_ORTHO, 1, 3, {5, 4, 3}, 2, {2, 0}, L_OFFSET, L_CONTIG, 0},
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
            void *got = test_read_array(back);
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
            got = test_read_array(y);
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
    void *g1 = test_read_array(o1), *g2 = test_read_array(o2);
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
    void *got = test_read_array(o);
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

int main(void) {
    /* Measured planning is the default; the tests plan hundreds of small
     * layouts once each, where FFTW's estimate is just as right. */
    setenv("KILN_FFTW_PLANNER", "estimate", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c2c_1d_sizes),   cmocka_unit_test(test_real_1d_sizes),
        cmocka_unit_test(test_multi_dim),      cmocka_unit_test(test_split_passes),
        cmocka_unit_test(test_layouts),        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_round_trips),    cmocka_unit_test(test_plans_and_cache),
        cmocka_unit_test(test_plan_on_stream),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kiln_close(cpu_peer());
    return rc;
}
