/* linalg_lu.c: what the LU factorisation gives: kiln_solve, kiln_inv,
 * kiln_det, kiln_slogdet.
 *
 * Row-major A's memory is column-major A^T, so the working copy is a plain
 * copy of A and getrf factors A^T = P L U without a transpose:
 *  - solve: getrs with trans 'T' solves (A^T)^T X = A X = B; B must be
 *    column-major, so b (..., n, k) is copied transposed, and X comes back
 *    transposed (a vector b needs neither: its copy is its own transpose);
 *  - inv: getrs 'N' with B = I gives inv(A^T) column-major, which read
 *    row-major is inv(A): no transpose at all;
 *  - det: det(A^T) = det(A). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "linalg/linalg.h"

/* The LU factors of a's matrices (a plain copy, see above) and pivots. */
typedef struct lu_parts {
    int nb;
    int64_t batch_shape[KILN_MAX_DIMS];
    int64_t batch, n;
    kiln_array *lu, *ipiv;
} lu_parts;

static void lu_release(lu_parts *f) {
    kiln_array_release(f->lu);
    kiln_array_release(f->ipiv);
}

/* Factors a broadcast to batch_shape (nb dims). `singular_ok`: a zero
 * pivot is a result (det), not an error. */
static kiln_status lu_factor(linalg_call *call, kiln_array *a, int nb, const int64_t *batch_shape,
                             int singular_ok, lu_parts *f) {
    memset(f, 0, sizeof *f);
    f->nb = nb;
    f->batch = 1;
    for (int d = 0; d < nb; d++) {
        f->batch_shape[d] = batch_shape[d];
        f->batch *= batch_shape[d];
    }
    f->n = a->shape[a->ndim - 1];
    kiln_status s = kiln_linalg_copy(call, a, nb, batch_shape, LINALG_COPY_PLAIN, &f->lu);
    int64_t npiv = f->batch * f->n;
    if (s == KILN_OK)
        s = kiln_linalg_empty(call->ctx, call->p->pivot_bytes == 8 ? KILN_INT64 : KILN_INT32, 1, &npiv,
                              &f->ipiv);
    int32_t *info = s == KILN_OK ? calloc((size_t)(f->batch ? f->batch : 1), sizeof *info) : NULL;
    if (s == KILN_OK && !info) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) {
        char desc[160];
        snprintf(desc, sizeof desc, "getrf: %lld matrices %lld x %lld", (long long)f->batch, (long long)f->n,
                 (long long)f->n);
        double flops = (double)f->batch * 2.0 / 3.0 * (double)f->n * (double)f->n * (double)f->n;
        struct kiln_prof_op *op = kiln_linalg_prof_begin(call, "getrf", a->dtype, flops, desc);
        linalg_job j = {a->dtype, f->batch, f->n, f->n, f->lu->data, info};
        s = call->p->getrf(call->ctx, call->state, &j, f->ipiv->data);
        kiln_linalg_prof_end(call, op);
    }
    if (s == KILN_OK && !singular_ok)
        s = kiln_linalg_check_info(call, info, f->batch, nb, f->batch_shape,
                                   "is singular: its LU factor U has an exact zero on the diagonal");
    free(info);
    if (s != KILN_OK) lu_release(f);
    return s;
}

static kiln_status lu_solve(linalg_call *call, lu_parts *f, char trans, int64_t nrhs, kiln_array *x) {
    int32_t *info = calloc((size_t)(f->batch ? f->batch : 1), sizeof *info);
    if (!info) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    char desc[160];
    snprintf(desc, sizeof desc, "getrs: %lld systems %lld x %lld, %lld right-hand sides", (long long)f->batch,
             (long long)f->n, (long long)f->n, (long long)nrhs);
    double flops = (double)f->batch * 2.0 * (double)f->n * (double)f->n * (double)nrhs;
    struct kiln_prof_op *op = kiln_linalg_prof_begin(call, "getrs", x->dtype, flops, desc);
    linalg_job j = {x->dtype, f->batch, f->n, f->n, f->lu->data, info};
    kiln_status s = call->p->getrs(call->ctx, call->state, &j, f->ipiv->data, trans, nrhs, x->data);
    kiln_linalg_prof_end(call, op);
    if (s == KILN_OK)
        s = kiln_linalg_check_info(call, info, f->batch, f->nb, f->batch_shape, "could not be solved");
    free(info);
    return s;
}

static int batch_of(kiln_array *a, int64_t *shape) {
    for (int d = 0; d < a->ndim - 2; d++) shape[d] = a->shape[d];
    return a->ndim - 2;
}

/* NumPy's broadcast of two batch shapes (right-aligned). */
static kiln_status broadcast_batches(const char *op, kiln_array *a, kiln_array *b, int *nb, int64_t *shape) {
    int na = a->ndim - 2, nbb = b->ndim - 2;
    *nb = na > nbb ? na : nbb;
    for (int d = 0; d < *nb; d++) {
        int da = d - (*nb - na), db = d - (*nb - nbb);
        int64_t ea = da >= 0 ? a->shape[da] : 1, eb = db >= 0 ? b->shape[db] : 1;
        if (ea != eb && ea != 1 && eb != 1) {
            char sa[160], sb[160];
            return kiln_set_error(
                KILN_ERR_SHAPE,
                "kiln_%s: the batch dims of a %s and b %s do not broadcast: dim %d is %lld vs %lld", op,
                kiln_shape_format(a->ndim, a->shape, sa, sizeof sa),
                kiln_shape_format(b->ndim, b->shape, sb, sizeof sb), d, (long long)ea, (long long)eb);
        }
        shape[d] = ea == 1 ? eb : ea;
    }
    return KILN_OK;
}

static kiln_status check_partner(const char *op, kiln_array *a, kiln_array *b) {
    if (!b) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_%s: b is NULL", op);
    if (b->ctx != a->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_%s: a and b belong to different contexts", op);
    if (b->dtype != a->dtype)
        return kiln_set_error(KILN_ERR_DTYPE, "kiln_%s: expected b of a's dtype %s, found %s", op,
                              kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
    return KILN_OK;
}

kiln_status kiln_solve(kiln_array *a, kiln_array *b, kiln_array **x) {
    if (!x) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_solve: x is NULL");
    *x = NULL;
    linalg_call call;
    kiln_status s = kiln_linalg_begin("solve", a, 1, &call);
    if (s == KILN_OK) s = check_partner("solve", a, b);
    if (s != KILN_OK) return s;
    int64_t n = a->shape[a->ndim - 1], batch_shape[KILN_MAX_DIMS];
    int vector = b->ndim == 1, nb;
    char sa[160], sb[160];
    if ((vector ? b->shape[0] : b->ndim >= 2 ? b->shape[b->ndim - 2] : -1) != n)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "kiln_solve: a %s needs b of shape (%lld,) or (..., %lld, k), found %s",
                              kiln_shape_format(a->ndim, a->shape, sa, sizeof sa), (long long)n, (long long)n,
                              kiln_shape_format(b->ndim, b->shape, sb, sizeof sb));
    if (vector)
        nb = batch_of(a, batch_shape);
    else if ((s = broadcast_batches("solve", a, b, &nb, batch_shape)) != KILN_OK)
        return s;
    /* b as a matrix (n, k); a vector is (n, 1) */
    kiln_array *bm = NULL;
    if (vector) {
        s = kiln_array_view_header(b, &bm);
        if (s != KILN_OK) return s;
        bm->ndim = 2;
        bm->shape[0] = n;
        bm->shape[1] = 1;
        bm->strides[0] = b->strides[0];
        bm->strides[1] = 0;
    } else {
        bm = kiln_array_retain(b);
    }
    int64_t k = bm->shape[bm->ndim - 1];
    lu_parts f;
    s = lu_factor(&call, a, nb, batch_shape, 0, &f);
    kiln_array *xw = NULL; /* batch + (k, n): X column-major */
    if (s == KILN_OK) {
        s = kiln_linalg_copy(&call, bm, nb, batch_shape, LINALG_COPY_TRANSPOSED, &xw);
        if (s == KILN_OK) s = lu_solve(&call, &f, 'T', k, xw);
        lu_release(&f);
    }
    kiln_array_release(bm);
    if (s == KILN_OK && vector) {
        batch_shape[nb] = n;
        s = kiln_linalg_view(xw, nb + 1, batch_shape, x);
    } else if (s == KILN_OK) {
        s = kiln_linalg_transposed(&call, xw, x);
    }
    kiln_array_release(xw);
    return s;
}

kiln_status kiln_inv(kiln_array *a, kiln_array **out) {
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_inv: out is NULL");
    *out = NULL;
    linalg_call call;
    kiln_status s = kiln_linalg_begin("inv", a, 1, &call);
    if (s != KILN_OK) return s;
    int64_t batch_shape[KILN_MAX_DIMS];
    int nb = batch_of(a, batch_shape);
    lu_parts f;
    s = lu_factor(&call, a, nb, batch_shape, 0, &f);
    if (s != KILN_OK) return s;
    kiln_array *x = NULL;
    s = kiln_linalg_empty(call.ctx, a->dtype, a->ndim, a->shape, &x);
    if (s == KILN_OK) s = kiln_linalg_eye(&call, x, f.batch, f.n);
    if (s == KILN_OK) s = lu_solve(&call, &f, 'N', f.n, x);
    lu_release(&f);
    if (s != KILN_OK) {
        kiln_array_release(x);
        return s;
    }
    *out = x;
    return KILN_OK;
}

/* det (sign == NULL) or slogdet. */
static kiln_status determinant(const char *op, kiln_array *a, kiln_array **det, kiln_array **sign,
                               kiln_array **logabs) {
    linalg_call call;
    kiln_status s = kiln_linalg_begin(op, a, 1, &call);
    if (s != KILN_OK) return s;
    int64_t batch_shape[KILN_MAX_DIMS];
    int nb = batch_of(a, batch_shape);
    lu_parts f;
    s = lu_factor(&call, a, nb, batch_shape, 1, &f);
    if (s != KILN_OK) return s;
    kiln_array *d = NULL, *sg = NULL, *la = NULL;
    if (det) {
        s = kiln_array_empty(call.ctx, a->dtype, nb, batch_shape, &d);
    } else {
        s = kiln_array_empty(call.ctx, a->dtype, nb, batch_shape, &sg);
        if (s == KILN_OK)
            s = kiln_array_empty(call.ctx, kiln_linalg_real_dtype(a->dtype), nb, batch_shape, &la);
    }
    if (s == KILN_OK) s = kiln_linalg_lu_det(&call, f.lu, f.ipiv, f.batch, f.n, d, sg, la);
    lu_release(&f);
    if (s != KILN_OK) {
        kiln_array_release(d);
        kiln_array_release(sg);
        kiln_array_release(la);
        return s;
    }
    if (det) *det = d;
    if (sign) {
        *sign = sg;
        *logabs = la;
    }
    return KILN_OK;
}

kiln_status kiln_det(kiln_array *a, kiln_array **out) {
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_det: out is NULL");
    *out = NULL;
    return determinant("det", a, out, NULL, NULL);
}

kiln_status kiln_slogdet(kiln_array *a, kiln_array **sign, kiln_array **logabsdet) {
    if (!sign || !logabsdet)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_slogdet: sign or logabsdet is NULL");
    *sign = *logabsdet = NULL;
    return determinant("slogdet", a, NULL, sign, logabsdet);
}
