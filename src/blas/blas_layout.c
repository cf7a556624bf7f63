/* blas_layout.c: kiln's row-major strided views in the BLAS's column-major
 * terms, and the one copy made of what cannot be expressed. */
#include <stdlib.h>

#include "array/array.h"
#include "blas/blas_internal.h"
#include "core/backend.h"

kiln_status kiln_blas_view(kiln_array *a, int ndim, const int64_t *shape, const int64_t *strides,
                           int64_t offset_bytes, kiln_array **out) {
    kiln_array *v;
    kiln_status s = kiln_array_view_header(a, &v);
    if (s != KILN_OK) return s;
    v->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        v->shape[d] = shape[d];
        v->strides[d] = strides[d];
    }
    v->data = a->data + offset_bytes;
    *out = v;
    return KILN_OK;
}

/* Column-major X (r x c) with leading dimension ld is element (i, j) at
 * i + j*ld; the library requires ld >= max(1, r). A row-major view M with
 * strides (sr, sc) is X = M when sr == 1 (ld = sc), or X = M^T (c x r) when
 * sc == 1 (ld = sr). A dim of extent 1 has no meaningful stride, so it is
 * ignored, and the smallest legal ld is used. */
int kiln_blas_matrix_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, int *stored_transposed,
                            int64_t *ld) {
    int64_t min_as_is = rows > 1 ? rows : 1, min_as_t = cols > 1 ? cols : 1;
    if (rows <= 1 || sr == 1) { /* X = M, r x c, ld = sc */
        int64_t l = cols <= 1 ? min_as_is : sc;
        if (l >= min_as_is) {
            *stored_transposed = 0;
            *ld = l;
            return 1;
        }
    }
    if (cols <= 1 || sc == 1) { /* X = M^T, c x r, ld = sr */
        int64_t l = rows <= 1 ? min_as_t : sr;
        if (l >= min_as_t) {
            *stored_transposed = 1;
            *ld = l;
            return 1;
        }
    }
    return 0;
}

int kiln_blas_vector_layout(const kiln_array *x, blas_vector *out, int *reversed) {
    int64_t n = x->shape[0], size = (int64_t)kiln_dtype_size(x->dtype), sb = x->strides[0];
    if (n <= 1) {
        out->data = x->data;
        out->inc = 1;
        *reversed = 0;
        return 1;
    }
    if (sb == 0 || sb % size != 0) return 0;
    int64_t inc = sb / size;
    *reversed = inc < 0;
    out->inc = inc < 0 ? -inc : inc;
    out->data = inc < 0 ? x->data + (n - 1) * sb : x->data;
    return 1;
}

kiln_status kiln_blas_stage(kiln_array *a, kiln_stream *stream, const char *why, kiln_array **copy) {
    kiln_context *ctx = a->ctx;
    /* kiln_array_copy works on the default stream: order it after the
     * caller's stream, and the caller's stream after it (below). */
    kiln_status s = stream ? ctx->ops->stream_synchronize(ctx->state, kiln_stream_impl(stream)) : KILN_OK;
    char shape[96];
    struct kiln_prof_op *op =
        kiln_blas_prof_begin(ctx, NULL, "layout copy", a->dtype, "kiln", 0, "%s: %s",
                             kiln_shape_format(a->ndim, a->shape, shape, sizeof shape), why);
    if (s == KILN_OK) s = kiln_array_copy(a, copy);
    kiln_blas_prof_end(ctx, op);
    if (s == KILN_OK && stream) s = ctx->ops->stream_synchronize(ctx->state, NULL);
    if (s != KILN_OK)
        return kiln_prefix_error(kiln_context_note(ctx, s), "copying a BLAS operand (%s): ", why);
    return KILN_OK;
}
