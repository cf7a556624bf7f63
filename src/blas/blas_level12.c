/* blas_level12.c: the level-1 and level-2 calls (dot, vdot, axpy, scal,
 * nrm2, gemv) on 1-d and 2-d kiln arrays. Scalar results come back as host
 * values (the libraries' host pointer mode): the call returns once they are
 * known, which also means the stream's earlier work is done. */
#include <stdio.h>
#include <string.h>

#include "array/array.h"
#include "blas/blas_internal.h"

/* (not an enum range: KILN_BFLOAT16 comes after the complex dtypes) */
static int is_cx(kiln_dtype t) { return t == KILN_COMPLEX64 || t == KILN_COMPLEX128; }

static int is_lib_dtype(kiln_dtype t) {
    return t == KILN_FLOAT32 || t == KILN_FLOAT64 || t == KILN_COMPLEX64 || t == KILN_COMPLEX128;
}

/* binary: y is an operand too (and must be given). */
static kiln_status check_vectors(const char *what, kiln_stream *stream, kiln_array *x, kiln_array *y,
                                 int binary) {
    if (!x || (binary && !y))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: arrays must not be NULL", what);
    if ((y && y->ctx != x->ctx) || (stream && stream->ctx != x->ctx))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the arrays and the stream must share a context",
                              what);
    char sx[96], sy[96];
    if (x->ndim != 1 || (y && y->ndim != 1))
        return kiln_set_error(KILN_ERR_SHAPE, "%s: expected 1-d arrays, got x %s%s%s", what,
                              kiln_shape_format(x->ndim, x->shape, sx, sizeof sx), y ? " and y " : "",
                              y ? kiln_shape_format(y->ndim, y->shape, sy, sizeof sy) : "");
    if (y && x->shape[0] != y->shape[0])
        return kiln_set_error(KILN_ERR_SHAPE, "%s: x has %lld elements, y %lld", what, (long long)x->shape[0],
                              (long long)y->shape[0]);
    if (y && x->dtype != y->dtype)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: x is %s, y is %s: expected one dtype", what,
                              kiln_dtype_name(x->dtype), kiln_dtype_name(y->dtype));
    if (!is_lib_dtype(x->dtype))
        return kiln_set_error(KILN_ERR_DTYPE,
                              "%s: %s is not a BLAS dtype (float32, float64, complex64, complex128)", what,
                              kiln_dtype_name(x->dtype));
    return kiln_blas_check_int("n", x->shape[0]);
}

/* An operand the library can take, or a staged copy of it (*keep). */
static kiln_status vector_of(kiln_array *x, kiln_stream *stream, blas_vector *v, int *reversed,
                             kiln_array **keep) {
    *keep = NULL;
    int host_only = kiln_blas_host_only(x);
    if (!host_only && kiln_blas_vector_layout(x, v, reversed)) return KILN_OK;
    kiln_status s = kiln_blas_stage(
        x, stream, host_only ? "x is in host memory" : "stride 0 or not a whole element", keep);
    if (s != KILN_OK) return s;
    kiln_blas_vector_layout(*keep, v, reversed);
    return KILN_OK;
}

/* An output operand: itself, or (force_copy, or not expressible) a staged
 * copy that finish_output writes back. */
static kiln_status output_of(kiln_array *y, kiln_stream *stream, int force_copy, blas_vector *v,
                             int *reversed, kiln_array **keep) {
    int host_on_device = kiln_blas_host_only(y);
    *keep = NULL;
    if (y->shape[0] > 1 && y->strides[0] == 0)
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "the output has stride 0: its %lld elements are one, and would overwrite each other",
            (long long)y->shape[0]);
    if (!force_copy && !host_on_device && kiln_blas_vector_layout(y, v, reversed)) return KILN_OK;
    kiln_status s = kiln_blas_stage(y, stream,
                                    host_on_device ? "y is in host memory"
                                    : force_copy   ? "negative stride against a positive one"
                                                   : "stride 0 or not a whole element",
                                    keep);
    if (s == KILN_OK) kiln_blas_vector_layout(*keep, v, reversed);
    return s;
}

static kiln_status finish_output(kiln_array *y, kiln_stream *stream, kiln_array *staged, kiln_status s) {
    if (s == KILN_OK && stream) kiln_array_note_stream(staged ? staged : y, stream);
    if (s == KILN_OK && staged) {
        kiln_context *ctx = y->ctx;
        if (stream) s = ctx->ops->stream_synchronize(ctx->state, kiln_stream_impl(stream));
        if (s == KILN_OK) s = kiln_array_assign(y, staged);
    }
    kiln_array_release(staged);
    return s;
}

static kiln_status dot_common(const char *what, kiln_stream *stream, kiln_array *x, kiln_array *y, int conj,
                              kiln_blas_scalar *result) {
    kiln_status s = check_vectors(what, stream, x, y, 1);
    if (s == KILN_OK && !result)
        s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: result must not be NULL", what);
    kiln_blas_state *st;
    if (s == KILN_OK) s = kiln_blas_state_get(x->ctx, &st);
    if (s != KILN_OK) return s;
    blas_vector vx, vy;
    int rx = 0, ry = 0;
    kiln_array *kx = NULL, *ky = NULL;
    s = vector_of(x, stream, &vx, &rx, &kx);
    if (s == KILN_OK) s = vector_of(y, stream, &vy, &ry, &ky);
    /* Both running backwards pairs the same elements; one alone would not. */
    if (s == KILN_OK && rx != ry) {
        kiln_array *t = NULL;
        s = kiln_blas_stage(rx ? x : y, stream, "negative stride against a positive one", &t);
        if (s == KILN_OK) {
            kiln_array_release(rx ? kx : ky);
            if (rx)
                kx = t, kiln_blas_vector_layout(t, &vx, &rx);
            else
                ky = t, kiln_blas_vector_layout(t, &vy, &ry);
        }
    }
    if (s == KILN_OK) {
        int64_t n = x->shape[0];
        struct kiln_prof_op *op =
            kiln_blas_prof_begin(x->ctx, stream, what, x->dtype, st->provider->base.name,
                                 (is_cx(x->dtype) ? 8.0 : 2.0) * (double)n, "n %lld, inc %lld %lld",
                                 (long long)n, (long long)vx.inc, (long long)vy.inc);
        s = st->provider->dot(x->ctx, stream, x->dtype, n, vx, vy, conj, result);
        kiln_blas_prof_end(x->ctx, op);
        if (s != KILN_OK) s = kiln_context_note(x->ctx, s);
    }
    kiln_array_release(kx);
    kiln_array_release(ky);
    return s;
}

kiln_status kiln_dot(kiln_stream *stream, kiln_array *x, kiln_array *y, kiln_blas_scalar *result) {
    return dot_common("dot", stream, x, y, 0, result);
}

kiln_status kiln_vdot(kiln_stream *stream, kiln_array *x, kiln_array *y, kiln_blas_scalar *result) {
    return dot_common("vdot", stream, x, y, 1, result);
}

kiln_status kiln_axpy(kiln_stream *stream, kiln_blas_scalar alpha, kiln_array *x, kiln_array *y) {
    kiln_status s = check_vectors("axpy", stream, x, y, 1);
    kiln_blas_state *st;
    if (s == KILN_OK) s = kiln_blas_state_get(x->ctx, &st);
    if (s != KILN_OK) return s;
    blas_vector vx, vy;
    int rx = 0, ry = 0;
    kiln_array *kx = NULL, *ky = NULL;
    s = vector_of(x, stream, &vx, &rx, &kx);
    if (s == KILN_OK) s = output_of(y, stream, 0, &vy, &ry, &ky);
    if (s == KILN_OK && rx && !ry) { /* a forward copy of x */
        kiln_array *t = NULL;
        s = kiln_blas_stage(x, stream, "negative stride against a positive one", &t);
        kiln_array_release(kx);
        kx = t;
        if (s == KILN_OK) kiln_blas_vector_layout(t, &vx, &rx);
    } else if (s == KILN_OK && !rx && ry) { /* a forward copy of y, written back */
        s = output_of(y, stream, 1, &vy, &ry, &ky);
    }
    if (s == KILN_OK && x->shape[0] > 0) {
        int64_t n = x->shape[0];
        struct kiln_prof_op *op =
            kiln_blas_prof_begin(x->ctx, stream, "axpy", x->dtype, st->provider->base.name,
                                 (is_cx(x->dtype) ? 8.0 : 2.0) * (double)n, "n %lld", (long long)n);
        s = st->provider->axpy(x->ctx, stream, x->dtype, n, alpha, vx, vy);
        kiln_blas_prof_end(x->ctx, op);
        if (s != KILN_OK) s = kiln_context_note(x->ctx, s);
    }
    if (s == KILN_OK && stream) kiln_array_note_stream(kx ? kx : x, stream);
    kiln_array_release(kx);
    return finish_output(y, stream, ky, s);
}

kiln_status kiln_scal(kiln_stream *stream, kiln_blas_scalar alpha, kiln_array *x) {
    kiln_status s = check_vectors("scal", stream, x, NULL, 0);
    kiln_blas_state *st;
    if (s == KILN_OK) s = kiln_blas_state_get(x->ctx, &st);
    if (s != KILN_OK) return s;
    blas_vector vx;
    int rx = 0; /* order does not matter to a scaling */
    kiln_array *kx = NULL;
    s = output_of(x, stream, 0, &vx, &rx, &kx);
    if (s == KILN_OK && x->shape[0] > 0) {
        int64_t n = x->shape[0];
        struct kiln_prof_op *op =
            kiln_blas_prof_begin(x->ctx, stream, "scal", x->dtype, st->provider->base.name,
                                 (is_cx(x->dtype) ? 6.0 : 1.0) * (double)n, "n %lld", (long long)n);
        s = st->provider->scal(x->ctx, stream, x->dtype, n, alpha, vx);
        kiln_blas_prof_end(x->ctx, op);
        if (s != KILN_OK) s = kiln_context_note(x->ctx, s);
    }
    return finish_output(x, stream, kx, s);
}

kiln_status kiln_nrm2(kiln_stream *stream, kiln_array *x, double *result) {
    kiln_status s = check_vectors("nrm2", stream, x, NULL, 0);
    if (s == KILN_OK && !result)
        s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "nrm2: result must not be NULL");
    kiln_blas_state *st;
    if (s == KILN_OK) s = kiln_blas_state_get(x->ctx, &st);
    if (s != KILN_OK) return s;
    blas_vector vx;
    int rx = 0;
    kiln_array *kx = NULL;
    s = vector_of(x, stream, &vx, &rx, &kx);
    if (s == KILN_OK) {
        int64_t n = x->shape[0];
        struct kiln_prof_op *op =
            kiln_blas_prof_begin(x->ctx, stream, "nrm2", x->dtype, st->provider->base.name,
                                 (is_cx(x->dtype) ? 4.0 : 2.0) * (double)n, "n %lld", (long long)n);
        s = n > 0 ? st->provider->nrm2(x->ctx, stream, x->dtype, n, vx, result) : KILN_OK;
        if (n == 0) *result = 0;
        kiln_blas_prof_end(x->ctx, op);
        if (s != KILN_OK) s = kiln_context_note(x->ctx, s);
    }
    kiln_array_release(kx);
    return s;
}

/* A matrix as the library stores it, or a staged copy (*keep). */
static kiln_status gemv_matrix(kiln_array *a, kiln_stream *stream, int *stored_t, int64_t *lda,
                               const char **data, kiln_array **keep) {
    int64_t size = (int64_t)kiln_dtype_size(a->dtype);
    int host_on_device = kiln_blas_host_only(a);
    *keep = NULL;
    if (!host_on_device && a->strides[0] % size == 0 && a->strides[1] % size == 0 &&
        kiln_blas_matrix_layout(a->shape[0], a->shape[1], a->strides[0] / size, a->strides[1] / size,
                                stored_t, lda)) {
        *data = a->data;
        return KILN_OK;
    }
    kiln_status s = kiln_blas_stage(
        a, stream, host_on_device ? "a is in host memory" : "a's layout has no leading dimension", keep);
    if (s != KILN_OK) return s;
    kiln_blas_matrix_layout((*keep)->shape[0], (*keep)->shape[1], (*keep)->strides[0] / size,
                            (*keep)->strides[1] / size, stored_t, lda);
    *data = (*keep)->data;
    return KILN_OK;
}

/* Can a^H go to the library's gemv as it is? Only when a is stored as
 * itself column-major (a transposed view of a row-major matrix): the BLAS
 * conjugates only together with a transpose. */
static int conj_as_stored(const kiln_array *a) {
    int64_t size = (int64_t)kiln_dtype_size(a->dtype);
    int stored_t = 1;
    int64_t ld;
    if (kiln_blas_host_only(a)) return 0;
    return a->strides[0] % size == 0 && a->strides[1] % size == 0 &&
           kiln_blas_matrix_layout(a->shape[0], a->shape[1], a->strides[0] / size, a->strides[1] / size,
                                   &stored_t, &ld) &&
           !stored_t;
}

static kiln_blas_scalar conj_of(kiln_blas_scalar s) { return (kiln_blas_scalar){s.re, -s.im}; }

/* y = alpha a^H x + beta y for every other a (a row-major a above all): with
 * X = a^T as the library stores a, a^H x = conj(X) x, and
 *   conj(y') = conj(alpha) X conj(x) + conj(beta) conj(y),
 * so x is conjugated into a copy and y in place before and after an
 * untransposed gemv: O(m + n) extra work instead of copying the matrix (a
 * one-row cgemm, the other way round, was 7.6x slower than cgemv on
 * OpenBLAS 0.3.21: it packs the whole matrix). The profile shows the
 * "blas conjugate" rows beside the gemv's. */
static kiln_status gemv_conj_rowmajor(kiln_stream *stream, kiln_blas_scalar alpha, kiln_array *a,
                                      kiln_array *x, kiln_blas_scalar beta, kiln_array *y) {
    static const char *why =
        "gemv op C on a row-major a: conj(y) = conj(alpha) a^T conj(x) + conj(beta) conj(y)";
    kiln_array *xc = NULL;
    kiln_status s = kiln_blas_conjugate(x, stream, why, &xc);
    int keep_y = beta.re != 0 || beta.im != 0; /* beta 0: y's old contents are ignored anyway */
    if (s == KILN_OK && keep_y) s = kiln_blas_conjugate(y, stream, why, &y);
    if (s == KILN_OK) s = kiln_gemv(stream, KILN_BLAS_T, conj_of(alpha), a, xc, conj_of(beta), y);
    if (s == KILN_OK) s = kiln_blas_conjugate(y, stream, why, &y);
    if (s == KILN_OK && stream) kiln_array_note_stream(xc, stream);
    kiln_array_release(xc);
    return s;
}

kiln_status kiln_gemv(kiln_stream *stream, kiln_blas_op op, kiln_blas_scalar alpha, kiln_array *a,
                      kiln_array *x, kiln_blas_scalar beta, kiln_array *y) {
    if (!a || !x || !y) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "gemv: a, x and y must not be NULL");
    if (op != KILN_BLAS_N && op != KILN_BLAS_T && op != KILN_BLAS_C)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "gemv: op %d: expected KILN_BLAS_N, KILN_BLAS_T or KILN_BLAS_C", (int)op);
    char sa[96], sx[96], sy[96];
    if (a->ndim != 2 || x->ndim != 1 || y->ndim != 1)
        return kiln_set_error(KILN_ERR_SHAPE, "gemv: expected a 2-d, x and y 1-d; got a %s, x %s, y %s",
                              kiln_shape_format(a->ndim, a->shape, sa, sizeof sa),
                              kiln_shape_format(x->ndim, x->shape, sx, sizeof sx),
                              kiln_shape_format(y->ndim, y->shape, sy, sizeof sy));
    kiln_status s = check_vectors("gemv", stream, x, NULL, 0);
    if (s != KILN_OK) return s;
    if (a->ctx != x->ctx || y->ctx != x->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "gemv: a, x and y must share a context");
    if (a->dtype != x->dtype || y->dtype != x->dtype)
        return kiln_set_error(KILN_ERR_DTYPE, "gemv: a %s, x %s, y %s: expected one dtype",
                              kiln_dtype_name(a->dtype), kiln_dtype_name(x->dtype),
                              kiln_dtype_name(y->dtype));
    int64_t rows = op != KILN_BLAS_N ? a->shape[1] : a->shape[0],
            cols = op != KILN_BLAS_N ? a->shape[0] : a->shape[1];
    if (x->shape[0] != cols || y->shape[0] != rows)
        return kiln_set_error(
            KILN_ERR_SHAPE, "gemv: op(a) of a %s is %lld x %lld; x %s needs %lld elements, y %s %lld",
            kiln_shape_format(a->ndim, a->shape, sa, sizeof sa), (long long)rows, (long long)cols,
            kiln_shape_format(x->ndim, x->shape, sx, sizeof sx), (long long)cols,
            kiln_shape_format(y->ndim, y->shape, sy, sizeof sy), (long long)rows);
    char *lo, *hi, *ylo, *yhi;
    kiln_array_byte_extent(y, &ylo, &yhi);
    for (int i = 0; i < 2 && rows > 0; i++) {
        kiln_array_byte_extent(i ? x : a, &lo, &hi);
        if (kiln_array_size(i ? x : a) > 0 && lo < yhi && ylo < hi)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                                  "gemv: y overlaps %s in memory; give a separate y", i ? "x" : "a");
    }
    kiln_blas_state *st;
    s = kiln_blas_state_get(a->ctx, &st);
    if (s != KILN_OK) return s;
    if (rows == 0) return KILN_OK;
    int complex = a->dtype == KILN_COMPLEX64 || a->dtype == KILN_COMPLEX128;
    if (complex && op == KILN_BLAS_C && !conj_as_stored(a))
        return gemv_conj_rowmajor(stream, alpha, a, x, beta, y);
    int stored_t = 0, rx = 0, ry = 0;
    int64_t lda = 1;
    const char *adata = NULL;
    blas_vector vx, vy;
    kiln_array *ka = NULL, *kx = NULL, *ky = NULL;
    s = gemv_matrix(a, stream, &stored_t, &lda, &adata, &ka);
    if (s == KILN_OK) s = vector_of(x, stream, &vx, &rx, &kx);
    if (s == KILN_OK && rx) { /* gemv needs x forwards */
        kiln_array *t = NULL;
        s = kiln_blas_stage(x, stream, "negative stride", &t);
        kiln_array_release(kx);
        kx = t;
        if (s == KILN_OK) kiln_blas_vector_layout(t, &vx, &rx);
    }
    if (s == KILN_OK) s = output_of(y, stream, 0, &vy, &ry, &ky);
    if (s == KILN_OK && ry) {
        kiln_array_release(ky);
        s = output_of(y, stream, 1, &vy, &ry, &ky);
    }
    if (s == KILN_OK) s = kiln_blas_check_int("lda", lda);
    if (s == KILN_OK) {
        /* Column-major X is a (stored_t 0) or a^T (1): y = op(a) x is
         * op(X) with op = op xor stored_t over X's own shape. */
        blas_gemv_problem p = {.dtype = a->dtype,
                               .trans = (op != KILN_BLAS_N) != (stored_t != 0),
                               .conj = complex && op == KILN_BLAS_C,
                               .m = stored_t ? a->shape[1] : a->shape[0],
                               .n = stored_t ? a->shape[0] : a->shape[1],
                               .lda = lda,
                               .a = adata,
                               .x = vx.data,
                               .y = vy.data,
                               .incx = vx.inc,
                               .incy = vy.inc,
                               .alpha = alpha,
                               .beta = beta};
        struct kiln_prof_op *pop =
            kiln_blas_prof_begin(a->ctx, stream, "gemv", a->dtype, st->provider->base.name,
                                 (complex ? 8.0 : 2.0) * (double)rows * (double)cols, "%lld x %lld, op %c",
                                 (long long)rows, (long long)cols,
                                 op == KILN_BLAS_C   ? 'C'
                                 : op == KILN_BLAS_T ? 'T'
                                                     : 'N');
        s = st->provider->gemv(a->ctx, stream, &p);
        kiln_blas_prof_end(a->ctx, pop);
        if (s != KILN_OK) s = kiln_context_note(a->ctx, s);
    }
    if (s == KILN_OK && stream) {
        kiln_array_note_stream(ka ? ka : a, stream);
        kiln_array_note_stream(kx ? kx : x, stream);
    }
    kiln_array_release(ka);
    kiln_array_release(kx);
    return finish_output(y, stream, ky, s);
}
