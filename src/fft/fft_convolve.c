/* fft_convolve.c: kiln_fft_convolve, SciPy's signal.fftconvolve on kiln
 * arrays: both operands zero-padded to a size the libraries transform fast
 * (a product of 2, 3, 5 and 7 at least a + b - 1 along each convolved
 * axis), transformed (real-to-complex for real inputs), multiplied with the
 * inverse's 1/n folded into the product, transformed back unscaled, and the
 * mode's part of the full result copied out. The batch axes broadcast
 * through the product. The circular mode transforms the operands as they
 * are and writes the result where it lands: no padding, no copy out.
 * Where the provider can, the product is fused into the inverse
 * (fft_fuse.c). */
#include <stdio.h>
#include <string.h>

#include "array/array.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/settings.h"
#include "fft/fft.h"

#define TRY(x)                                                                                               \
    do {                                                                                                     \
        kiln_status try_ = (x);                                                                              \
        if (try_ != KILN_OK) return try_;                                                                    \
    } while (0)

static const char *const fn = "kiln_fft_convolve";

static int64_t fast_length(int64_t n) {
    for (int64_t m = n;; m++) {
        int64_t r = m;
        static const int f[4] = {2, 3, 5, 7};
        for (int i = 0; i < 4; i++)
            while (r % f[i] == 0) r /= f[i];
        if (r == 1) return m;
    }
}

static int is_double(kiln_dtype t) { return t == KILN_FLOAT64 || t == KILN_COMPLEX128; }

/* The dtype the work and the result have: complex if either is, double if
 * either is. */
static kiln_status work_dtype(kiln_dtype a, kiln_dtype b, kiln_dtype *out) {
    static const kiln_dtype ok[4] = {KILN_FLOAT32, KILN_FLOAT64, KILN_COMPLEX64, KILN_COMPLEX128};
    kiln_dtype both[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        int found = 0;
        for (int j = 0; j < 4; j++) found |= both[i] == ok[j];
        if (!found)
            return kiln_set_error(KILN_ERR_DTYPE,
                                  "%s: %s is %s; convolution takes float32, float64, complex64 or complex128 "
                                  "(convert integers first)",
                                  fn, i ? "b" : "a", kiln_dtype_name(both[i]));
    }
    int cx = kiln_fft_is_complex(a) || kiln_fft_is_complex(b), dbl = is_double(a) || is_double(b);
    *out = cx ? (dbl ? KILN_COMPLEX128 : KILN_COMPLEX64) : (dbl ? KILN_FLOAT64 : KILN_FLOAT32);
    return KILN_OK;
}

typedef struct conv_shape {
    int ndim, naxes;
    int axes[KILN_MAX_DIMS];    /* sorted */
    int on_axis[KILN_MAX_DIMS]; /* 1 for a convolved axis */
    int64_t full[KILN_MAX_DIMS], fast[KILN_MAX_DIMS];
    int64_t start[KILN_MAX_DIMS], len[KILN_MAX_DIMS]; /* the mode's part of the full result */
} conv_shape;

static kiln_status plan_shape(const kiln_array *a, const kiln_array *b, kiln_convolve_mode mode,
                              const int *axes, int naxes, conv_shape *c) {
    memset(c, 0, sizeof *c);
    int nd = c->ndim = a->ndim;
    if (b->ndim != nd)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: a has %d dims and b %d; they must have the same number",
                              fn, nd, b->ndim);
    if (nd == 0) return kiln_set_error(KILN_ERR_SHAPE, "%s: 0-d arrays have no axis to convolve along", fn);
    if ((unsigned)mode > KILN_CONVOLVE_CIRCULAR)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: mode %d; expected KILN_CONVOLVE_FULL, KILN_CONVOLVE_SAME, "
                              "KILN_CONVOLVE_VALID or KILN_CONVOLVE_CIRCULAR",
                              fn, (int)mode);
    if (!axes) naxes = nd;
    if (naxes < 1 || naxes > nd)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: %d axes for %d-d arrays", fn, naxes, nd);
    for (int i = 0; i < naxes; i++) {
        int ax = axes ? axes[i] : i;
        if (ax < 0) ax += nd;
        if (ax < 0 || ax >= nd)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: axis %d is out of range for %d-d arrays",
                                  fn, axes[i], nd);
        if (c->on_axis[ax])
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: axis %d is given twice", fn, ax);
        c->on_axis[ax] = 1;
    }
    for (int d = 0; d < nd; d++)
        if (c->on_axis[d]) c->axes[c->naxes++] = d;
    int a_larger = 1, b_larger = 1;
    for (int d = 0; d < nd; d++) {
        int64_t na = a->shape[d], nb = b->shape[d];
        if (!c->on_axis[d]) {
            if (na != nb && na != 1 && nb != 1)
                return kiln_set_error(KILN_ERR_SHAPE,
                                      "%s: axis %d is not convolved, so its lengths must match or be 1 "
                                      "(broadcast): %lld vs %lld",
                                      fn, d, (long long)na, (long long)nb);
            c->full[d] = c->len[d] = na > nb ? na : nb;
            continue;
        }
        if (na == 0 || nb == 0)
            return kiln_set_error(KILN_ERR_SHAPE, "%s: %s is empty along axis %d", fn, na == 0 ? "a" : "b",
                                  d);
        if (mode == KILN_CONVOLVE_CIRCULAR) {
            if (na != nb)
                return kiln_set_error(KILN_ERR_SHAPE,
                                      "%s: mode circular needs a and b of one length along every convolved "
                                      "axis: axis %d is %lld vs %lld",
                                      fn, d, (long long)na, (long long)nb);
            c->full[d] = c->fast[d] = c->len[d] = na; /* start 0 */
            continue;
        }
        a_larger &= na >= nb;
        b_larger &= nb >= na;
        c->full[d] = na + nb - 1;
        c->fast[d] = fast_length(c->full[d]);
        int64_t keep = mode == KILN_CONVOLVE_FULL ? c->full[d] : mode == KILN_CONVOLVE_SAME ? na : 0;
        if (mode == KILN_CONVOLVE_VALID) keep = (na > nb ? na - nb : nb - na) + 1;
        c->len[d] = keep;
        c->start[d] = (c->full[d] - keep) / 2; /* SciPy's _centered */
    }
    if (mode == KILN_CONVOLVE_VALID && !a_larger && !b_larger)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "%s: mode valid needs one operand at least as large as the other along every "
                              "convolved axis (as SciPy)",
                              fn);
    return KILN_OK;
}

/* x zero-padded to the fast lengths along the convolved axes, in dtype t:
 * x itself (another reference) where it already is. */
static kiln_status padded(kiln_context *ctx, kiln_array *x, kiln_dtype t, const conv_shape *c,
                          kiln_array **out) {
    int64_t shape[KILN_MAX_DIMS];
    /* a host array on CUDA goes through the copy, which stages it */
    int same = x->dtype == t &&
               (x->memory == KILN_MEMORY_DEVICE || kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY));
    for (int d = 0; d < c->ndim; d++) {
        shape[d] = c->on_axis[d] ? c->fast[d] : x->shape[d];
        same &= shape[d] == x->shape[d];
    }
    if (same) {
        *out = kiln_array_retain(x);
        return KILN_OK;
    }
    TRY(kiln_array_zeros(ctx, t, c->ndim, shape, out));
    kiln_array *view = kiln_array_retain(*out), *next = NULL;
    kiln_status s = KILN_OK;
    for (int d = 0; d < c->ndim && s == KILN_OK; d++) {
        if (!c->on_axis[d]) continue;
        s = kiln_array_slice(view, d, 0, x->shape[d], 1, &next);
        kiln_array_release(view);
        view = next;
    }
    /* x * 1 into the view: the scaling kernel converts the dtype on the way */
    kiln_ufunc *scale = NULL;
    if (s == KILN_OK) s = kiln_fft_scale_ufunc(ctx, &scale);
    if (s == KILN_OK) {
        const kiln_value args[2] = {kiln_arr(x), is_double(t) ? kiln_f64(1.0) : kiln_f32(1.0f)};
        s = kiln_call(scale, args, 2, &view);
    }
    kiln_array_release(view);
    if (s != KILN_OK) {
        kiln_array_release(*out);
        *out = NULL;
    }
    return s;
}

static kiln_status transform_forward(kiln_array *x, const conv_shape *c, kiln_array **spectrum) {
    *spectrum = NULL;
    if (kiln_fft_is_complex(x->dtype))
        return kiln_fftn(x, c->axes, c->naxes, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, spectrum);
    return kiln_rfftn(x, c->axes, c->naxes, KILN_FFT_NORM_BACKWARD, spectrum);
}

/* The full (fast-length) result from the two padded operands, multiplied
 * in a pass of its own; into *result when given. */
static kiln_status convolve_unfused(kiln_context *ctx, kiln_array *pa, kiln_array *pb, kiln_dtype t,
                                    const conv_shape *c, kiln_array **result) {
    kiln_array *fa = NULL, *fb = NULL, *prod = NULL;
    kiln_ufunc *mul = NULL;
    kiln_status s = transform_forward(pa, c, &fa);
    if (s == KILN_OK) s = transform_forward(pb, c, &fb);
    if (s == KILN_OK) s = kiln_fft_multiply_ufunc(ctx, &mul);
    double n = 1;
    for (int i = 0; i < c->naxes; i++) n *= (double)c->fast[c->axes[i]];
    if (s == KILN_OK) {
        const kiln_value args[3] = {kiln_arr(fa), kiln_arr(fb),
                                    is_double(t) ? kiln_f64(1.0 / n) : kiln_f32((float)(1.0 / n))};
        s = kiln_call(mul, args, 3, &prod);
    }
    /* the inverse in place on the product unless the caller gave the array */
    kiln_array *dst = *result ? *result : kiln_fft_is_complex(t) ? prod : NULL;
    if (s == KILN_OK && kiln_fft_is_complex(t))
        s = kiln_fftn(prod, c->axes, c->naxes, KILN_FFT_NORM_FORWARD, KILN_FFT_INVERSE, &dst);
    else if (s == KILN_OK)
        s = kiln_irfftn(prod, c->axes, c->naxes, c->fast[c->axes[c->naxes - 1]], KILN_FFT_NORM_FORWARD, &dst);
    if (s == KILN_OK && !*result) *result = dst == prod ? kiln_array_retain(prod) : dst;
    kiln_array_release(fa);
    kiln_array_release(fb);
    kiln_array_release(prod);
    return s;
}

/* The fused ways KILN_FFT_FUSE allows, in order: the strip kernel (on a
 * device, along rows unless asked for columns: on the CPU FFTW's own
 * passes are faster than kiln's kernel), then the callback.
 * KILN_ERR_UNSUPPORTED when none applies. */
static kiln_status convolve_fused(kiln_context *ctx, kiln_array *pa, kiln_array *pb, const conv_shape *c,
                                  kiln_fft_fuse_mode fuse, kiln_array **result) {
    int device = !kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_EXECUTION);
    int strip = fuse == KILN_FFT_FUSE_COLUMNS || fuse == KILN_FFT_FUSE_ROWS;
    int axis = fuse == KILN_FFT_FUSE_COLUMNS ? 0 : 1;
    int fits = kiln_fft_strip_fit(pa, pb, c->axes, c->naxes, axis);
    kiln_status s = KILN_ERR_UNSUPPORTED;
    if (fits && (strip || (device && fuse != KILN_FFT_FUSE_CALLBACK)))
        s = kiln_fft_convolve_strip(pa, pb, axis, 0, result);
    else if (strip)
        return kiln_set_error(s,
                              "the strip kernel takes 2-D complex operands of one shape whose length along "
                              "axis %d is a power of two up to 8192",
                              axis);
    if (s != KILN_ERR_UNSUPPORTED || strip) return s;
    kiln_clear_error();
    return kiln_fft_convolve_fused(pa, pb, c->axes, c->naxes, result);
}

/* "auto" fuses on a device through the provider's load callback where
 * both spectra together take at most this many bytes (auto_strip_axis
 * says what it does above). Measured on an H200 against the separate
 * cuFFT calls: the callback 0.98-1.03 of their time at 525^2 complex64
 * (the unfused path 1.02-1.06) and 1.07-1.12 at 1024^2 (unfused 1.15, the
 * strip kernel 1.35-1.7), but 1.39-1.42 at 4096^2 (PERF_NOTES, "FFT
 * convolution"). */
#define AUTO_CALLBACK_BYTES ((size_t)32 << 20)

static int auto_fuses(const kiln_array *pa) {
    size_t item = pa->dtype == KILN_FLOAT64 || pa->dtype == KILN_COMPLEX128 ? 16 : 8; /* a spectrum's */
    return 2 * (size_t)kiln_shape_size(pa->ndim, pa->shape) * item <= AUTO_CALLBACK_BYTES;
}

/* Where "auto" takes the strip kernel above the callback's limit: along
 * columns (through the transposed middle) with at least as many rows as
 * columns, along rows with more columns; -1: not at all. Measured on an
 * H200 against the unfused path: columns 0.78-0.87 for square and tall
 * shapes (complex64 4096^2, 8192 x 2048, 4096 x 1024, complex128 2048^2
 * and 4096^2; 0.75-0.79 of the direct cuFFT calls at 4096^2 complex64)
 * but 1.34 at 2048 x 8192, where rows with b's strip take 0.90-0.91 (and
 * 1.28-1.49 at 8192 x 2048). */
static int auto_strip_axis(const kiln_array *pa, const kiln_array *pb, const conv_shape *c) {
    if (pa->ndim != 2) return -1;
    int axis = pa->shape[0] >= pa->shape[1] ? 0 : 1;
    return kiln_fft_strip_fit(pa, pb, c->axes, c->naxes, axis) ? axis : -1;
}

/* Fused where KILN_FFT_FUSE asks and the provider allows, else unfused;
 * "auto" on a device as auto_fuses and auto_strip_axis say. */
static kiln_status convolve_padded(kiln_context *ctx, kiln_array *pa, kiln_array *pb, kiln_dtype t,
                                   const conv_shape *c, kiln_array **result) {
    kiln_fft_fuse_mode fuse = kiln_fft_fuse_setting();
    /* on the CPU "auto" does not fuse: FFTW's own passes are faster than
     * the strip kernel, and it has no callbacks */
    if (fuse == KILN_FFT_FUSE_AUTO && !kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_EXECUTION)) {
        int axis;
        if (auto_fuses(pa)) {
            kiln_status s = kiln_fft_convolve_fused(pa, pb, c->axes, c->naxes, result);
            if (s != KILN_ERR_UNSUPPORTED) return s;
            kiln_clear_error(); /* nothing ran: unfused */
        } else if ((axis = auto_strip_axis(pa, pb, c)) >= 0) {
            /* larger: the strip kernel along the longer axis, b's strip
             * transformed in it */
            kiln_status s = kiln_fft_convolve_strip(pa, pb, axis, 1, result);
            if (s != KILN_ERR_UNSUPPORTED) return s;
            kiln_clear_error(); /* the device lacks its shared memory: unfused */
        }
    } else if (fuse != KILN_FFT_FUSE_OFF && fuse != KILN_FFT_FUSE_AUTO) {
        kiln_status s = convolve_fused(ctx, pa, pb, c, fuse, result);
        if (s != KILN_ERR_UNSUPPORTED) return s;
        return kiln_prefix_error(s, "%s: KILN_FFT_FUSE=%s, and the product cannot be fused: ", fn,
                                 kiln_setting_string("KILN_FFT_FUSE"));
    }
    return convolve_unfused(ctx, pa, pb, t, c, result);
}

/* 1 when the mode keeps all of the transform's output (circular, or a
 * full convolution of fast lengths), so the inverse writes the result
 * itself, into the caller's array where it can take it (device memory). */
static int whole(kiln_context *ctx, const conv_shape *c, const kiln_array *out) {
    for (int d = 0; d < c->ndim; d++)
        if (c->on_axis[d] && (c->start[d] != 0 || c->len[d] != c->fast[d])) return 0;
    return !out || out->memory == KILN_MEMORY_DEVICE ||
           kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY);
}

kiln_status kiln_fft_convolve(kiln_array *a, kiln_array *b, kiln_convolve_mode mode, const int *axes,
                              int naxes, kiln_array **out) {
    if (!a || !b || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !a ? "a" : !b ? "b" : "out");
    if (a->ctx != b->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: a and b belong to different contexts", fn);
    kiln_context *ctx = a->ctx;
    TRY(kiln_context_check(ctx));
    kiln_dtype t = KILN_FLOAT32;
    TRY(work_dtype(a->dtype, b->dtype, &t));
    conv_shape c;
    TRY(plan_shape(a, b, mode, axes, naxes, &c));
    if (*out) {
        int fits = (*out)->dtype == t && (*out)->ndim == c.ndim;
        for (int d = 0; fits && d < c.ndim; d++) fits = (*out)->shape[d] == c.len[d];
        if (!fits) {
            char want[96], got[96];
            return kiln_set_error(KILN_ERR_SHAPE, "%s: out is %s %s; the result is %s %s", fn,
                                  kiln_dtype_name((*out)->dtype),
                                  kiln_shape_format((*out)->ndim, (*out)->shape, got, sizeof got),
                                  kiln_dtype_name(t), kiln_shape_format(c.ndim, c.len, want, sizeof want));
        }
    }
    kiln_array *pa = NULL, *pb = NULL, *full = NULL, *view = NULL, *next = NULL;
    kiln_status s = padded(ctx, a, t, &c, &pa);
    if (s == KILN_OK) s = padded(ctx, b, t, &c, &pb);
    if (s == KILN_OK && whole(ctx, &c, *out)) {
        /* nothing to crop: the result is the transform's output */
        kiln_array *dst = *out;
        s = convolve_padded(ctx, pa, pb, t, &c, &dst);
        if (s == KILN_OK) *out = dst;
        kiln_array_release(pa);
        kiln_array_release(pb);
        return s;
    }
    if (s == KILN_OK) s = convolve_padded(ctx, pa, pb, t, &c, &full);
    view = full ? kiln_array_retain(full) : NULL;
    for (int d = 0; d < c.ndim && s == KILN_OK; d++) {
        if (!c.on_axis[d]) continue;
        s = kiln_array_slice(view, d, c.start[d], c.start[d] + c.len[d], 1, &next);
        kiln_array_release(view);
        view = next;
    }
    if (s == KILN_OK) s = *out ? kiln_array_assign(*out, view) : kiln_array_copy(view, out);
    kiln_array_release(view);
    kiln_array_release(full);
    kiln_array_release(pa);
    kiln_array_release(pb);
    return s;
}
