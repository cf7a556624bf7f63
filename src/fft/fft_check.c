/* fft_check.c: the FFT front's argument checks: turns arrays and arguments
 * into the plan cache's key, or an error that names the values. */
#include <string.h>

#include "array/array.h"
#include "core/error.h"
#include "fft/fft.h"

static const char *kind_name(kiln_fft_kind k) {
    return k == KILN_FFT_R2C ? "R2C" : k == KILN_FFT_C2R ? "C2R" : "C2C";
}

static kiln_status check_dtypes(const char *fn, kiln_fft_kind kind, const kiln_array *in,
                                const kiln_array *out) {
    kiln_dtype a = in->dtype, b = out->dtype;
    const char *an = kiln_dtype_name(a), *bn = kiln_dtype_name(b);
    switch (kind) {
    case KILN_FFT_C2C:
        if (!kiln_fft_is_complex(a))
            return kiln_set_error(KILN_ERR_DTYPE, "%s: C2C needs complex64 or complex128 input, got %s%s", fn,
                                  an, kiln_fft_is_real(a) ? " (use kiln_rfftn for real input)" : "");
        if (b != a)
            return kiln_set_error(KILN_ERR_DTYPE, "%s: C2C output must be %s like the input, got %s", fn, an,
                                  bn);
        return KILN_OK;
    case KILN_FFT_R2C:
        if (!kiln_fft_is_real(a))
            return kiln_set_error(KILN_ERR_DTYPE, "%s: R2C needs float32 or float64 input, got %s", fn, an);
        if (b != kiln_fft_complex_of(a))
            return kiln_set_error(KILN_ERR_DTYPE, "%s: R2C of %s writes %s, got an output of %s", fn, an,
                                  kiln_dtype_name(kiln_fft_complex_of(a)), bn);
        return KILN_OK;
    default:
        if (!kiln_fft_is_complex(a))
            return kiln_set_error(KILN_ERR_DTYPE, "%s: C2R needs complex64 or complex128 input, got %s", fn,
                                  an);
        if (kiln_fft_complex_of(b) != a || !kiln_fft_is_real(b))
            return kiln_set_error(KILN_ERR_DTYPE, "%s: C2R of %s writes %s, got an output of %s", fn, an,
                                  kiln_dtype_name(kiln_fft_real_of(a)), bn);
        return KILN_OK;
    }
}

static kiln_status check_axes(const char *fn, int ndim, const int *axes, int naxes, int *norm_axes,
                              int *count) {
    if (!axes) {
        for (int i = 0; i < ndim; i++) norm_axes[i] = i;
        *count = ndim;
        return KILN_OK;
    }
    if (naxes < 1 || naxes > ndim)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: naxes is %d; expected 1..%d for a %d-d array",
                              fn, naxes, ndim, ndim);
    for (int i = 0; i < naxes; i++) {
        int a = axes[i] < 0 ? axes[i] + ndim : axes[i];
        if (a < 0 || a >= ndim)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: axis %d is out of range for a %d-d array",
                                  fn, axes[i], ndim);
        for (int j = 0; j < i; j++)
            if (norm_axes[j] == a)
                return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: axis %d is given twice", fn, axes[i]);
        norm_axes[i] = a;
    }
    *count = naxes;
    return KILN_OK;
}

/* The output shape the transform needs, from the input's. */
static void expected_out_shape(kiln_fft_kind kind, const kiln_array *in, const kiln_array *out, int last,
                               int64_t *shape) {
    memcpy(shape, in->shape, sizeof(int64_t) * (size_t)in->ndim);
    if (kind == KILN_FFT_R2C) shape[last] = in->shape[last] / 2 + 1;
    if (kind == KILN_FFT_C2R) shape[last] = out->shape[last]; /* checked against the input below */
}

static kiln_status check_shapes(const char *fn, kiln_fft_kind kind, const kiln_array *in,
                                const kiln_array *out, const int *ax, int naxes) {
    char a[256], b[256], c[256];
    if (in->ndim != out->ndim)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: input %s and output %s differ in dims", fn,
                              kiln_shape_format(in->ndim, in->shape, a, sizeof a),
                              kiln_shape_format(out->ndim, out->shape, b, sizeof b));
    int last = ax[naxes - 1];
    int64_t want[KILN_MAX_DIMS];
    expected_out_shape(kind, in, out, last, want);
    if (memcmp(want, out->shape, sizeof(int64_t) * (size_t)in->ndim) != 0)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "%s: %s of input %s over axes ending in %d writes %s, got an output of %s", fn,
                              kind_name(kind), kiln_shape_format(in->ndim, in->shape, a, sizeof a), last,
                              kiln_shape_format(in->ndim, want, b, sizeof b),
                              kiln_shape_format(out->ndim, out->shape, c, sizeof c));
    if (kind == KILN_FFT_C2R && in->shape[last] != out->shape[last] / 2 + 1)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "%s: C2R to %lld reals along axis %d needs %lld complex inputs there, got %lld",
                              fn, (long long)out->shape[last], last, (long long)(out->shape[last] / 2 + 1),
                              (long long)in->shape[last]);
    for (int i = 0; i < naxes; i++) {
        int64_t n = kind == KILN_FFT_C2R ? out->shape[ax[i]] : in->shape[ax[i]];
        if (n == 0)
            return kiln_set_error(KILN_ERR_SHAPE, "%s: transform axis %d has length 0 (input %s)", fn, ax[i],
                                  kiln_shape_format(in->ndim, in->shape, a, sizeof a));
    }
    return KILN_OK;
}

/* In place is the same memory with the same strides (C2C only); any other
 * overlap would have the library read what it already wrote. */
static kiln_status check_overlap(const char *fn, kiln_fft_kind kind, const kiln_array *in,
                                 const kiln_array *out, int *inplace) {
    *inplace = 0;
    char *ilo, *ihi, *olo, *ohi;
    kiln_array_byte_extent(in, &ilo, &ihi);
    kiln_array_byte_extent(out, &olo, &ohi);
    if (ilo >= ohi || olo >= ihi || kiln_array_size(in) == 0 || kiln_array_size(out) == 0) return KILN_OK;
    if (kind == KILN_FFT_C2C && in->data == out->data &&
        memcmp(in->strides, out->strides, sizeof(int64_t) * (size_t)in->ndim) == 0) {
        *inplace = 1;
        return KILN_OK;
    }
    if (kind != KILN_FFT_C2C)
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "%s: %s in place (or into overlapping memory) is not supported; give a separate output", fn,
            kind_name(kind));
    return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                          "%s: input and output overlap without being the same array (same data and strides)",
                          fn);
}

static kiln_status check_memory(const char *fn, const kiln_array *a) {
    /* The device libraries (cuFFT) take device arrays, not host memory
     * they would read over the bus. */
    if (!kiln_backend_has(a->ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY) && a->memory != KILN_MEMORY_DEVICE)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: a host-memory array on a CUDA context; cuFFT works on device arrays "
                              "(kiln_array_copy makes one)",
                              fn);
    return KILN_OK;
}

kiln_status kiln_fft_key_from(const char *fn, kiln_fft_kind kind, kiln_fft_direction dir,
                              const kiln_array *in, const kiln_array *out, const int *axes, int naxes,
                              kiln_fft_norm norm, kiln_fft_key *key) {
    if (!in || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL array", fn);
    if (in->ctx != out->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: input and output belong to different contexts",
                              fn);
    kiln_status s = kiln_context_check(in->ctx);
    if (s != KILN_OK) return s;
    if (kind != KILN_FFT_C2C && kind != KILN_FFT_R2C && kind != KILN_FFT_C2R)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: unknown transform kind %d", fn, (int)kind);
    if (dir != KILN_FFT_FORWARD && dir != KILN_FFT_INVERSE)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: direction %d is neither KILN_FFT_FORWARD (-1) nor "
                              "KILN_FFT_INVERSE (1)",
                              fn, (int)dir);
    if ((kind == KILN_FFT_R2C && dir != KILN_FFT_FORWARD) ||
        (kind == KILN_FFT_C2R && dir != KILN_FFT_INVERSE))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: %s is %s only", fn, kind_name(kind),
                              kind == KILN_FFT_R2C ? "forward" : "inverse");
    if (norm != KILN_FFT_NORM_BACKWARD && norm != KILN_FFT_NORM_ORTHO && norm != KILN_FFT_NORM_FORWARD)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: unknown normalisation %d", fn, (int)norm);
    if (in->ndim < 1) return kiln_set_error(KILN_ERR_SHAPE, "%s: a 0-d array has no axis to transform", fn);
    if ((s = check_dtypes(fn, kind, in, out)) != KILN_OK) return s;
    if ((s = check_memory(fn, in)) != KILN_OK || (s = check_memory(fn, out)) != KILN_OK) return s;
    memset(key, 0, sizeof *key);
    int count = 0;
    if ((s = check_axes(fn, in->ndim, axes, naxes, key->axes, &count)) != KILN_OK) return s;
    if ((s = check_shapes(fn, kind, in, out, key->axes, count)) != KILN_OK) return s;
    int inplace = 0;
    if ((s = check_overlap(fn, kind, in, out, &inplace)) != KILN_OK) return s;
    key->kind = kind;
    key->sign = dir;
    key->norm = norm;
    key->dtype_in = in->dtype;
    key->dtype_out = out->dtype;
    key->ndim = in->ndim;
    key->naxes = count;
    key->inplace = inplace;
    size_t dims = sizeof(int64_t) * (size_t)in->ndim;
    memcpy(key->in_shape, in->shape, dims);
    memcpy(key->in_strides, in->strides, dims);
    memcpy(key->out_shape, out->shape, dims);
    memcpy(key->out_strides, out->strides, dims);
    return KILN_OK;
}
