/* linalg_front.c: what every linalg call and provider shares: the working
 * copies in LAPACK's order, views, and the errors a factorisation's `info`
 * turns into. */
#include <stdio.h>
#include <string.h>

#include "array/array.h"
#include "linalg/linalg.h"
#include "prof/prof.h"

kiln_dtype kiln_linalg_real_dtype(kiln_dtype t) {
    return t == KILN_COMPLEX64 ? KILN_FLOAT32 : t == KILN_COMPLEX128 ? KILN_FLOAT64 : t;
}

/* One element of `size` bytes (4, 8 or 16: the four dtypes). */
static void copy_element(char *d, const char *s, size_t size) {
    if (size == 4)
        memcpy(d, s, 4);
    else if (size == 8)
        memcpy(d, s, 8);
    else
        memcpy(d, s, 16);
}

/* dst (contiguous host memory) = src (host memory, any strides) in 32x32
 * tiles: a transposed view read row by row would miss the cache on every
 * element (kiln's general strided copy walks it so). */
static void host_tiled_copy(kiln_array *dst, const kiln_array *src) {
    int nd = src->ndim;
    size_t size = kiln_dtype_size(src->dtype);
    int64_t rows = src->shape[nd - 2], cols = src->shape[nd - 1], batch = 1;
    int64_t si = src->strides[nd - 2], sj = src->strides[nd - 1];
    for (int d = 0; d < nd - 2; d++) batch *= src->shape[d];
    for (int64_t b = 0; b < batch; b++) {
        const char *s = src->data;
        for (int64_t d = nd - 3, rest = b; d >= 0; d--) {
            s += (rest % src->shape[d]) * src->strides[d];
            rest /= src->shape[d];
        }
        char *out = dst->data + (size_t)(b * rows * cols) * size;
        for (int64_t i0 = 0; i0 < rows; i0 += 32)
            for (int64_t j0 = 0; j0 < cols; j0 += 32)
                for (int64_t i = i0; i < rows && i < i0 + 32; i++)
                    for (int64_t j = j0; j < cols && j < j0 + 32; j++)
                        copy_element(out + (size_t)(i * cols + j) * size, s + i * si + j * sj, size);
    }
}

/* dst = v: the tiled kernel, or the tiled host loop for a transposed view
 * of host memory; else kiln's copy (a contiguous one is a memcpy). */
static kiln_status layout_copy(const linalg_call *call, kiln_array *dst, kiln_array *v, int upper_only) {
    if (!call->host_loops) {
        kiln_status s = kiln_linalg_transpose_copy(call, dst, v, upper_only);
        if (s != KILN_ERR_UNSUPPORTED) return s;
    } else if (v->ndim >= 2 && v->strides[v->ndim - 1] != (int64_t)kiln_dtype_size(v->dtype) &&
               kiln_array_memory(v) == KILN_MEMORY_DEVICE) {
        host_tiled_copy(dst, v);
        return KILN_OK;
    }
    return kiln_array_assign(dst, v);
}

kiln_status kiln_linalg_copy(const linalg_call *call, kiln_array *a, int ndim_batch, const int64_t *batch,
                             linalg_copy_kind kind, kiln_array **out) {
    *out = NULL;
    int transpose = kind != LINALG_COPY_PLAIN;
    kiln_array *v;
    kiln_status s = kiln_array_view_header(a, &v);
    if (s != KILN_OK) return s;
    int ab = a->ndim - 2; /* a's batch dims, right-aligned with batch */
    v->ndim = ndim_batch + 2;
    for (int d = 0; d < ndim_batch; d++) {
        int src = d - (ndim_batch - ab);
        v->shape[d] = batch[d];
        v->strides[d] = src >= 0 && a->shape[src] == batch[d] && batch[d] != 1 ? a->strides[src] : 0;
    }
    int r = a->ndim - 2, c = a->ndim - 1;
    v->shape[ndim_batch] = a->shape[transpose ? c : r];
    v->shape[ndim_batch + 1] = a->shape[transpose ? r : c];
    v->strides[ndim_batch] = a->strides[transpose ? c : r];
    v->strides[ndim_batch + 1] = a->strides[transpose ? r : c];
    s = kiln_linalg_empty(a->ctx, a->dtype, v->ndim, v->shape, out);
    if (s == KILN_OK) s = layout_copy(call, *out, v, kind == LINALG_COPY_TRANSPOSED_UPPER);
    kiln_array_release(v);
    if (s != KILN_OK) {
        kiln_array_release(*out);
        *out = NULL;
    }
    return s;
}

kiln_status kiln_linalg_empty(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                              kiln_array **out) {
    *out = NULL;
    size_t size = kiln_dtype_size(dtype);
    int64_t count = kiln_shape_size(ndim, shape);
    if (count < 0) return kiln_set_error(KILN_ERR_SHAPE, "linalg: the array's size overflows");
    int64_t padded = count + (int64_t)((KILN_LINALG_PAD_BYTES + size - 1) / size);
    kiln_array *buffer = NULL;
    kiln_status s = kiln_array_empty(ctx, dtype, 1, &padded, &buffer);
    if (s == KILN_OK) s = kiln_linalg_view(buffer, ndim, shape, out);
    kiln_array_release(buffer); /* the view keeps it */
    return s;
}

kiln_status kiln_linalg_transposed(const linalg_call *call, kiln_array *w, kiln_array **out) {
    *out = NULL;
    int axes[KILN_MAX_DIMS];
    for (int d = 0; d < w->ndim; d++) axes[d] = d;
    axes[w->ndim - 2] = w->ndim - 1;
    axes[w->ndim - 1] = w->ndim - 2;
    kiln_array *v = NULL;
    kiln_status s = kiln_array_transpose(w, axes, &v);
    if (s == KILN_OK) s = kiln_array_empty(w->ctx, w->dtype, v->ndim, v->shape, out);
    if (s == KILN_OK) s = layout_copy(call, *out, v, 0);
    kiln_array_release(v);
    if (s != KILN_OK) {
        kiln_array_release(*out);
        *out = NULL;
    }
    return s;
}

kiln_status kiln_linalg_view(kiln_array *a, int ndim, const int64_t *shape, kiln_array **out) {
    kiln_array *v;
    kiln_status s = kiln_array_view_header(a, &v);
    if (s != KILN_OK) return s;
    v->ndim = ndim;
    memcpy(v->shape, shape, sizeof *shape * (size_t)ndim);
    kiln_contiguous_strides(ndim, shape, kiln_dtype_size(a->dtype), v->strides);
    *out = v;
    return KILN_OK;
}

kiln_status kiln_linalg_check_info(const linalg_call *call, const int32_t *info, int64_t batch,
                                   int ndim_batch, const int64_t *batch_shape, const char *what) {
    for (int64_t b = 0; b < batch; b++) {
        if (info[b] == 0) continue;
        if (info[b] < 0)
            return kiln_set_error(KILN_ERR_INTERNAL, "kiln_%s: %s refused argument %d of matrix %lld",
                                  call->op, call->p->base.name, -info[b], (long long)b);
        /* the batch index as NumPy prints it: (1, 2) */
        char index[192] = "()";
        if (ndim_batch > 0) {
            int64_t idx[KILN_MAX_DIMS], rest = b;
            for (int d = ndim_batch - 1; d >= 0; d--) {
                idx[d] = batch_shape[d] ? rest % batch_shape[d] : 0;
                rest = batch_shape[d] ? rest / batch_shape[d] : 0;
            }
            size_t len = 0;
            for (int d = 0; d < ndim_batch && len < sizeof index; d++)
                len += (size_t)snprintf(index + len, sizeof index - len, "%s%lld", d ? ", " : "(",
                                        (long long)idx[d]);
            if (len < sizeof index)
                snprintf(index + len, sizeof index - len, "%s)", ndim_batch == 1 ? "," : "");
        }
        return kiln_set_error(KILN_ERR_LINALG, "kiln_%s: matrix %s of the batch %s (%s info %d)", call->op,
                              index, what, call->p->base.name, info[b]);
    }
    return KILN_OK;
}

struct kiln_prof_op *kiln_linalg_prof_begin(const linalg_call *call, const char *routine, kiln_dtype dtype,
                                            double flops, const char *shape_desc) {
    if (!KILN_PROF_ON(call->ctx)) return NULL;
    char name[160];
    snprintf(name, sizeof name, "linalg %s %s %s [%s]", call->op, routine, kiln_dtype_name(dtype),
             call->p->base.name);
    return kiln_prof_library_begin(call->ctx, name, NULL, KILN_PROF_WANTS_ARGS(call->ctx) ? shape_desc : "",
                                   flops);
}

void kiln_linalg_prof_end(const linalg_call *call, struct kiln_prof_op *op) {
    if (op) kiln_prof_end(call->ctx, op);
}
