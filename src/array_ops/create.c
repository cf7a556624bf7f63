/* create.c: arrays made on the device: zeros, full, arange, linspace,
 * meshgrid (seed 000's point: a mesh made where it is used costs no transfer). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "array_ops/array_ops.h"
#include "core/dtype.h"
#include "core/error.h"

kiln_status kiln_array_zeros(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                             kiln_array **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_zeros: ctx or out is NULL");
    kiln_array *a = NULL;
    kiln_status s = kiln_array_empty(ctx, dtype, ndim, shape, &a);
    if (s == KILN_OK && kiln_array_nbytes(a))
        s = kiln_context_note(ctx, ctx->ops->memset(ctx->state, a->data, 0, kiln_array_nbytes(a), NULL));
    if (s != KILN_OK) {
        kiln_array_release(a);
        return s;
    }
    *out = a;
    return KILN_OK;
}

/* The fill value as a kernel argument of the array's element type. */
static kiln_value fill_value(kiln_dtype dtype, double re, double im) {
    switch (kiln_dtype_kind(dtype)) {
    case 'b': return kiln_bool(re != 0);
    case 'i': return kiln_scalar_i_(dtype, (int64_t)re);
    case 'u': return kiln_scalar_u_(dtype, (uint64_t)re);
    case 'c': return kiln_scalar_f_(dtype, re, im);
    default:
        if (kiln_dtype_is_half(dtype)) return kiln_u16(kiln_half_bits_of(dtype, (float)re));
        return kiln_scalar_f_(dtype, re, 0);
    }
}

/* A finite double as text: integral ones in full ("2147483648", not
 * "2.147483648e+09"), so the message shows the very value that was refused. */
static const char *value_text(double v, char *buf, size_t cap) {
    if (isfinite(v) && v == trunc(v) && fabs(v) < 1e21)
        snprintf(buf, cap, "%.0f", v);
    else
        snprintf(buf, cap, "%g", v);
    return buf;
}

/* NumPy refuses a Python integer its dtype cannot hold; kiln's fill value is
 * a double, so the same holds for any value whose truncation (C's and NumPy's
 * float-to-int conversion) is out of range, for NaN and infinities into
 * integers, and for a finite value a float dtype would turn into infinity. */
static kiln_status check_fill_value(kiln_dtype dtype, double re, double im) {
    char k = kiln_dtype_kind(dtype), v[64];
    if (k == 'i' || k == 'u') {
        int bits = (int)kiln_dtype_size(dtype) * 8;
        /* [lo, hi) in doubles: both ends are powers of two, exact */
        double lo = k == 'u' ? 0.0 : -ldexp(1.0, bits - 1), hi = ldexp(1.0, k == 'u' ? bits : bits - 1);
        double t = trunc(re);
        if (!isfinite(re) || t < lo || t >= hi) {
            char lo_text[32], hi_text[32];
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                                  "kiln_array_full: fill value %s does not fit %s, which holds %s to %s",
                                  value_text(re, v, sizeof v), kiln_dtype_name(dtype),
                                  value_text(lo, lo_text, sizeof lo_text),
                                  value_text(hi - 1, hi_text, sizeof hi_text));
        }
        return KILN_OK;
    }
    if (k != 'f' && k != 'c') return KILN_OK; /* bool: any value, non-zero (NaN too) is true */
    double parts[2] = {re, k == 'c' ? im : 0.0};
    for (int p = 0; p < 2; p++) {
        int overflows = kiln_dtype_is_half(dtype) ? (kiln_half_bits_of(dtype, (float)parts[p]) & 0x7fffu) ==
                                                        (dtype == KILN_BFLOAT16 ? 0x7f80u : 0x7c00u)
                        : dtype == KILN_FLOAT32 || dtype == KILN_COMPLEX64 ? isinf((float)parts[p])
                                                                           : 0;
        if (isfinite(parts[p]) && overflows)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                                  "kiln_array_full: fill value %s%s overflows %s to infinity (its largest "
                                  "finite value is %g); pass INFINITY to fill with an infinity",
                                  value_text(parts[p], v, sizeof v), p ? " (imaginary part)" : "",
                                  kiln_dtype_name(dtype),
                                  dtype == KILN_FLOAT16    ? 65504.0
                                  : dtype == KILN_BFLOAT16 ? 3.3895313892515355e38
                                                           : 3.4028234663852886e38);
    }
    return KILN_OK;
}

kiln_status kiln_array_full(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, double value,
                            double value_imag, kiln_array **out) {
    if (!ctx || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_full: ctx or out is NULL");
    kiln_array *a = NULL;
    kiln_status s = (unsigned)dtype < KILN_DTYPE_COUNT ? check_fill_value(dtype, value, value_imag) : KILN_OK;
    if (s != KILN_OK) return s;
    s = kiln_array_empty(ctx, dtype, ndim, shape, &a);
    kiln_kernel *k = NULL;
    int64_t n = a ? kiln_array_size(a) : 0;
    if (s == KILN_OK && n > 0) s = kiln_array_kernel(ctx, dtype, 0, "kiln_fill", &k);
    if (s == KILN_OK && n > 0)
        s = kiln_launch(k, kiln_array_grid(ctx, n), KILN_DIM(256), 0, NULL,
                        KILN_ARGS(kiln_ptr(a->data, KILN_DTYPE_COUNT), kiln_i64(n),
                                  fill_value(dtype, value, value_imag)));
    if (s != KILN_OK) {
        kiln_array_release(a);
        return s;
    }
    *out = a;
    return KILN_OK;
}

static kiln_status make_range(kiln_context *ctx, kiln_dtype dtype, int64_t n, double start, double step,
                              double stop, int pin_last, const char *what, kiln_array **out) {
    if (kiln_dtype_is_half(dtype) || dtype == KILN_BOOL)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: dtype %s is not supported", what, kiln_dtype_name(dtype));
    kiln_array *a = NULL;
    kiln_status s = kiln_array_empty(ctx, dtype, 1, &n, &a);
    kiln_kernel *k = NULL;
    if (s == KILN_OK && n > 0) s = kiln_array_kernel(ctx, dtype, 0, "kiln_arange", &k);
    if (s == KILN_OK && n > 0)
        s = kiln_launch(k, kiln_array_grid(ctx, n), KILN_DIM(256), 0, NULL,
                        KILN_ARGS(kiln_ptr(a->data, KILN_DTYPE_COUNT), kiln_i64(n), kiln_f64(start),
                                  kiln_f64(step), kiln_f64(stop), kiln_i32(pin_last)));
    if (s != KILN_OK) {
        kiln_array_release(a);
        return s;
    }
    *out = a;
    return KILN_OK;
}

kiln_status kiln_array_arange(kiln_context *ctx, kiln_dtype dtype, double start, double stop, double step,
                              kiln_array **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_arange: ctx or out is NULL");
    if (step == 0 || !isfinite(step) || !isfinite(start) || !isfinite(stop))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "arange: start, stop and step must be finite and step non-zero");
    double count = ceil((stop - start) / step);
    if (count > 9e15) return kiln_set_error(KILN_ERR_SHAPE, "arange: %.0f elements is too many", count);
    return make_range(ctx, dtype, count > 0 ? (int64_t)count : 0, start, step, stop, 0, "arange", out);
}

kiln_status kiln_array_linspace(kiln_context *ctx, kiln_dtype dtype, double start, double stop, int64_t num,
                                int endpoint, kiln_array **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_linspace: ctx or out is NULL");
    if (num < 0)
        return kiln_set_error(KILN_ERR_SHAPE, "linspace: num must be >= 0, got %lld", (long long)num);
    int64_t div = endpoint ? num - 1 : num;
    double step = div > 0 ? (stop - start) / (double)div : 0.0;
    return make_range(ctx, dtype, num, start, step, stop, endpoint && num > 1, "linspace", out);
}

kiln_status kiln_array_meshgrid(kiln_array *x, kiln_array *y, const char *indexing, kiln_array **out_x,
                                kiln_array **out_y) {
    if (!x || !y || !out_x || !out_y)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "meshgrid: NULL argument");
    int ij = indexing && strcmp(indexing, "ij") == 0;
    if (indexing && !ij && strcmp(indexing, "xy") != 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "meshgrid: indexing must be \"xy\" or \"ij\", got \"%s\"", indexing);
    if (x->ndim != 1 || y->ndim != 1)
        return kiln_set_error(KILN_ERR_SHAPE, "meshgrid: x and y must be 1-d, got %d-d and %d-d", x->ndim,
                              y->ndim);
    if (x->dtype != y->dtype)
        return kiln_set_error(KILN_ERR_DTYPE, "meshgrid: x is %s but y is %s", kiln_dtype_name(x->dtype),
                              kiln_dtype_name(y->dtype));
    if (x->ctx != y->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "meshgrid: arrays of different contexts");
    kiln_context *ctx = x->ctx;
    int64_t nx = x->shape[0], ny = y->shape[0];
    int64_t shape[2] = {ij ? nx : ny, ij ? ny : nx};
    kiln_array *cx = NULL, *cy = NULL, *X = NULL, *Y = NULL;
    kiln_kernel *k = NULL;
    /* The kernel reads contiguous device vectors; copy views/host arrays first. */
    kiln_status s = kiln_array_copy(x, &cx);
    if (s == KILN_OK) s = kiln_array_copy(y, &cy);
    if (s == KILN_OK) s = kiln_array_empty(ctx, x->dtype, 2, shape, &X);
    if (s == KILN_OK) s = kiln_array_empty(ctx, x->dtype, 2, shape, &Y);
    if (s == KILN_OK && nx * ny > 0) s = kiln_array_kernel(ctx, x->dtype, 1, "kiln_meshgrid", &k);
    if (s == KILN_OK && nx * ny > 0)
        s = kiln_launch(k, kiln_array_grid(ctx, nx * ny), KILN_DIM(256), 0, NULL,
                        KILN_ARGS(kiln_ptr(X->data, KILN_DTYPE_COUNT), kiln_ptr(Y->data, KILN_DTYPE_COUNT),
                                  kiln_ptr(cx->data, KILN_DTYPE_COUNT), kiln_ptr(cy->data, KILN_DTYPE_COUNT),
                                  kiln_i64(nx), kiln_i64(ny), kiln_i32(ij)));
    kiln_array_release(cx);
    kiln_array_release(cy);
    if (s != KILN_OK) {
        kiln_array_release(X);
        kiln_array_release(Y);
        return s;
    }
    *out_x = X;
    *out_y = Y;
    return KILN_OK;
}
