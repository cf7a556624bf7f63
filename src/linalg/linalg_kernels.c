/* linalg_kernels.c: launching linalg_kernels.cuh, built per dtype (and
 * pivot type) through kiln's builtin-kernel cache, on the default stream
 * where the providers' work runs too. */
#include <stdio.h>

#include "array/array.h"
#include "array_ops/array_ops.h"
#include "kernel/builtins.h"
#include "linalg/linalg.h"

extern const char kiln_embedded_linalg_kernels[];

static kiln_status kernel_for(linalg_call *call, kiln_dtype dtype, const char *name, kiln_kernel **out) {
    int cplx = dtype == KILN_COMPLEX64 || dtype == KILN_COMPLEX128;
    int dbl = dtype == KILN_FLOAT64 || dtype == KILN_COMPLEX128;
    char options[96];
    snprintf(options, sizeof options, "-DLINALG_R=%s -DLINALG_C=%d -DLINALG_P64=%d", dbl ? "double" : "float",
             cplx ? 2 : 1, call->p->pivot_bytes == 8);
    return kiln_builtin_kernel(call->ctx, kiln_embedded_linalg_kernels, "kiln/linalg_kernels.cu", options,
                               name, out);
}

static kiln_dim3 grid_for(linalg_call *call, int64_t n) { return kiln_array_grid(call->ctx, n > 0 ? n : 1); }

/* Rows x cols over batch matrices: blocks along a row (x) and over rows (y),
 * as many in all as kiln's elementwise kernels take for the same size. */
static kiln_dim3 grid_rows(linalg_call *call, int64_t rows, int64_t cols) {
    int64_t budget = grid_for(call, rows * cols).x;
    int64_t gx = (cols + 255) / 256;
    if (gx > budget) gx = budget;
    if (gx < 1) gx = 1;
    int64_t gy = budget / gx;
    if (gy > rows) gy = rows;
    if (gy > 65535) gy = 65535;
    if (gy < 1) gy = 1;
    return KILN_DIM((uint32_t)gx, (uint32_t)gy);
}

static kiln_value ptr(kiln_array *a) { return kiln_ptr(a ? a->data : NULL, KILN_DTYPE_COUNT); }

kiln_status kiln_linalg_triangle(linalg_call *call, kiln_array *a, int64_t batch, int64_t rows, int64_t cols,
                                 int keep_upper) {
    if (call->p->triangle && call->host_loops) {
        linalg_job j = {a->dtype, batch, rows, cols, a->data, NULL};
        call->p->triangle(&j, keep_upper);
        return KILN_OK;
    }
    kiln_kernel *k;
    kiln_status s = kernel_for(call, a->dtype, "linalg_triangle", &k);
    if (s != KILN_OK || batch * rows * cols == 0) return s;
    return kiln_launch(
        k, grid_rows(call, batch * rows, cols), KILN_DIM(256), 0, NULL,
        KILN_ARGS(ptr(a), kiln_i64(batch), kiln_i64(rows), kiln_i64(cols), kiln_i32(keep_upper)));
}

kiln_status kiln_linalg_lower_from_colmajor(linalg_call *call, kiln_array *w, int64_t batch, int64_t n) {
    kiln_kernel *k;
    kiln_status s = kernel_for(call, w->dtype, "linalg_lower_from_colmajor", &k);
    if (s != KILN_OK || batch * n == 0) return s;
    int64_t tiles = (n + 31) / 32, blocks = batch * tiles * tiles;
    int64_t cap = grid_for(call, batch * n * n).x;
    if (blocks > cap) blocks = cap;
    return kiln_launch(k, KILN_DIM((uint32_t)(blocks > 0 ? blocks : 1)), KILN_DIM(32, 8), 0, NULL,
                       KILN_ARGS(ptr(w), kiln_i64(batch), kiln_i64(n)));
}

kiln_status kiln_linalg_eye(linalg_call *call, kiln_array *a, int64_t batch, int64_t n) {
    if (call->p->eye && call->host_loops) {
        linalg_job j = {a->dtype, batch, n, n, a->data, NULL};
        call->p->eye(&j);
        return KILN_OK;
    }
    kiln_kernel *k;
    kiln_status s = kernel_for(call, a->dtype, "linalg_eye", &k);
    if (s != KILN_OK || batch * n == 0) return s;
    return kiln_launch(k, grid_rows(call, batch * n, n), KILN_DIM(256), 0, NULL,
                       KILN_ARGS(ptr(a), kiln_i64(batch), kiln_i64(n)));
}

kiln_status kiln_linalg_lu_det(linalg_call *call, kiln_array *lu, kiln_array *ipiv, int64_t batch, int64_t n,
                               kiln_array *det, kiln_array *sign, kiln_array *logabs) {
    kiln_kernel *k;
    kiln_status s = kernel_for(call, lu->dtype, "linalg_lu_det", &k);
    if (s != KILN_OK || batch == 0) return s;
    /* few threads per block: one matrix each, and batches may be small */
    int64_t blocks = (batch + 63) / 64;
    return kiln_launch(k, KILN_DIM((uint32_t)(blocks < 65535 ? blocks : 65535)), KILN_DIM(64), 0, NULL,
                       KILN_ARGS(ptr(lu), ptr(ipiv), kiln_i64(batch), kiln_i64(n), kiln_i32(det != NULL),
                                 ptr(det), ptr(sign), ptr(logabs)));
}

kiln_status kiln_linalg_scale_columns(linalg_call *call, kiln_array *a, int64_t rows, int64_t cols,
                                      kiln_array *s_arr) {
    kiln_kernel *k;
    kiln_status s = kernel_for(call, a->dtype, "linalg_scale_columns", &k);
    if (s != KILN_OK || rows * cols == 0) return s;
    return kiln_launch(k, grid_for(call, rows * cols), KILN_DIM(256), 0, NULL,
                       KILN_ARGS(ptr(a), kiln_i64(rows), kiln_i64(cols), ptr(s_arr)));
}

kiln_status kiln_linalg_column_norms2(linalg_call *call, kiln_array *r, int64_t rows, int64_t cols,
                                      kiln_array *out) {
    kiln_kernel *k;
    kiln_status s = kernel_for(call, r->dtype, "linalg_column_norms2", &k);
    if (s != KILN_OK || cols == 0) return s;
    int64_t blocks = (cols + 63) / 64;
    return kiln_launch(k, KILN_DIM((uint32_t)(blocks < 65535 ? blocks : 65535)), KILN_DIM(64), 0, NULL,
                       KILN_ARGS(ptr(r), kiln_i64(rows), kiln_i64(cols), ptr(out)));
}

kiln_status kiln_linalg_transpose_copy(const linalg_call *call, kiln_array *dst, kiln_array *src,
                                       int upper_only) {
    int nd = src->ndim;
    int64_t size = (int64_t)kiln_dtype_size(src->dtype), rows = src->shape[nd - 2], cols = src->shape[nd - 1];
    int64_t si = src->strides[nd - 2], sj = src->strides[nd - 1];
    /* a transposed view: unit steps down a column, whole elements */
    if (nd < 2 || (rows > 1 && si != size) || sj % size || sj <= 0) return KILN_ERR_UNSUPPORTED;
    /* the batch dims as one stride (0 when broadcast) */
    int64_t batch = 1, sb = -1, next = 0;
    for (int d = nd - 3; d >= 0; d--) {
        if (src->shape[d] == 1) continue;
        if (sb < 0) {
            sb = src->strides[d];
            next = sb * src->shape[d];
        } else if (src->strides[d] == next || (sb == 0 && src->strides[d] == 0)) {
            next = src->strides[d] * src->shape[d];
        } else {
            return KILN_ERR_UNSUPPORTED;
        }
        batch *= src->shape[d];
    }
    if (sb < 0) sb = 0;
    if (sb % size || batch * rows * cols == 0)
        return batch * rows * cols == 0 ? KILN_OK : KILN_ERR_UNSUPPORTED;
    kiln_kernel *k;
    kiln_status s = kernel_for((linalg_call *)call, src->dtype, "linalg_transpose_copy", &k);
    if (s != KILN_OK) return s;
    int64_t gz = batch < 65535 ? batch : 65535;
    return kiln_launch(k, KILN_DIM((uint32_t)((cols + 31) / 32), (uint32_t)((rows + 31) / 32), (uint32_t)gz),
                       KILN_DIM(32, 8), 0, NULL,
                       KILN_ARGS(ptr(dst), ptr(src), kiln_i64(batch), kiln_i64(rows), kiln_i64(cols),
                                 kiln_i64(sb / size), kiln_i64(1), kiln_i64(sj / size),
                                 kiln_i32(upper_only)));
}
