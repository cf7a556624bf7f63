/* linalg_lstsq.c: kiln_lstsq, NumPy's numpy.linalg.lstsq, through the SVD
 * on both backends (LAPACK's gelsd is SVD-based too, and cuSOLVER has no
 * rank-revealing least squares): with A = U S Vh (reduced), the
 * minimum-norm solution is x = Vh^H S+ U^H b, where S+ inverts the
 * singular values above rcond * max(S) and drops the rest. S+ scales U's
 * columns (kiln's kernel), the two products are kiln_gemm's. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "linalg/linalg.h"

typedef struct lstsq_parts {
    kiln_array *u, *s, *vh, *sinv, *c, *x, *r, *res, *bm;
} lstsq_parts;

static void parts_release(lstsq_parts *p, int keep_outputs) {
    kiln_array_release(p->u);
    kiln_array_release(p->vh);
    kiln_array_release(p->sinv);
    kiln_array_release(p->c);
    kiln_array_release(p->r);
    kiln_array_release(p->bm);
    if (!keep_outputs) {
        kiln_array_release(p->s);
        kiln_array_release(p->x);
        kiln_array_release(p->res);
    }
}

/* S+ on the host (k values): the rank, and 1/s or 0 per value. */
static kiln_status pseudo_inverse(linalg_call *call, lstsq_parts *p, int64_t k, double rcond, int64_t *rank) {
    kiln_dtype rt = p->s->dtype;
    size_t size = kiln_dtype_size(rt);
    void *host = malloc(size * (size_t)(k ? k : 1));
    if (!host) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_status s = kiln_array_to_host(p->s, host, size * (size_t)k);
    double smax = 0;
    for (int64_t i = 0; s == KILN_OK && i < k; i++) {
        double v = rt == KILN_FLOAT32 ? ((float *)host)[i] : ((double *)host)[i];
        if (v > smax) smax = v;
    }
    double cutoff = rcond * smax;
    *rank = 0;
    for (int64_t i = 0; s == KILN_OK && i < k; i++) {
        double v = rt == KILN_FLOAT32 ? ((float *)host)[i] : ((double *)host)[i];
        double inv = v > cutoff && v > 0 ? 1.0 / v : 0.0;
        *rank += inv != 0;
        if (rt == KILN_FLOAT32)
            ((float *)host)[i] = (float)inv;
        else
            ((double *)host)[i] = inv;
    }
    if (s == KILN_OK) s = kiln_array_from_host(call->ctx, rt, 1, &k, host, size * (size_t)k, &p->sinv);
    free(host);
    return s;
}

kiln_status kiln_lstsq(kiln_array *a, kiln_array *b, double rcond, kiln_array **x, kiln_array **residuals,
                       int64_t *rank, kiln_array **sv) {
    if (!x || !residuals || !rank || !sv)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_lstsq: x, residuals, rank or s is NULL");
    *x = *residuals = *sv = NULL;
    *rank = 0;
    linalg_call call;
    kiln_status s = kiln_linalg_begin("lstsq", a, 0, &call);
    if (s != KILN_OK) return s;
    char sa[160], sb[160];
    if (a->ndim != 2)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "kiln_lstsq: expected a 2-d a (m, n), as NumPy's lstsq, found %s",
                              kiln_shape_format(a->ndim, a->shape, sa, sizeof sa));
    if (!b) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_lstsq: b is NULL");
    if (b->ctx != a->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_lstsq: a and b belong to different contexts");
    if (b->dtype != a->dtype)
        return kiln_set_error(KILN_ERR_DTYPE, "kiln_lstsq: expected b of a's dtype %s, found %s",
                              kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
    int64_t m = a->shape[0], n = a->shape[1], k = m < n ? m : n;
    if ((b->ndim != 1 && b->ndim != 2) || b->shape[0] != m)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "kiln_lstsq: a %s needs b of shape (%lld,) or (%lld, k), found %s",
                              kiln_shape_format(a->ndim, a->shape, sa, sizeof sa), (long long)m, (long long)m,
                              kiln_shape_format(b->ndim, b->shape, sb, sizeof sb));
    if (rcond < 0)
        rcond = (a->dtype == KILN_FLOAT32 || a->dtype == KILN_COMPLEX64 ? FLT_EPSILON : DBL_EPSILON) *
                (double)(m > n ? m : n);
    int vector = b->ndim == 1;
    int64_t nrhs = vector ? 1 : b->shape[1];
    lstsq_parts p;
    memset(&p, 0, sizeof p);
    /* b as an (m, nrhs) view */
    if ((s = kiln_array_view_header(b, &p.bm)) != KILN_OK) return s;
    p.bm->ndim = 2;
    p.bm->shape[1] = nrhs;
    p.bm->strides[1] = vector ? 0 : b->strides[1];
    kiln_blas_scalar one = {1, 0}, zero = {0, 0}, minus_one = {-1, 0};
    s = kiln_svd(a, 0, 1, &p.u, &p.s, &p.vh);
    if (s == KILN_OK) s = pseudo_inverse(&call, &p, k, rcond, rank);
    if (s == KILN_OK) s = kiln_linalg_scale_columns(&call, p.u, m, k, p.sinv);
    int64_t cshape[2] = {k, nrhs}, xshape[2] = {n, nrhs};
    if (s == KILN_OK) s = kiln_array_empty(call.ctx, a->dtype, 2, cshape, &p.c);
    if (s == KILN_OK) s = kiln_gemm(NULL, 0, KILN_BLAS_C, KILN_BLAS_N, one, p.u, p.bm, zero, p.c);
    if (s == KILN_OK) s = kiln_array_empty(call.ctx, a->dtype, 2, xshape, &p.x);
    if (s == KILN_OK) s = kiln_gemm(NULL, 0, KILN_BLAS_C, KILN_BLAS_N, one, p.vh, p.c, zero, p.x);
    /* NumPy: squared residual norms per column when A has full column
     * rank and more rows than columns; else an empty array */
    int64_t nres = *rank == n && m > n ? nrhs : 0;
    if (s == KILN_OK) s = kiln_array_empty(call.ctx, kiln_linalg_real_dtype(a->dtype), 1, &nres, &p.res);
    if (s == KILN_OK && nres > 0) {
        s = kiln_array_copy(p.bm, &p.r);
        if (s == KILN_OK) s = kiln_gemm(NULL, 0, KILN_BLAS_N, KILN_BLAS_N, one, a, p.x, minus_one, p.r);
        if (s == KILN_OK) s = kiln_linalg_column_norms2(&call, p.r, m, nrhs, p.res);
    }
    kiln_array *xo = NULL;
    if (s == KILN_OK) s = vector ? kiln_linalg_view(p.x, 1, &n, &xo) : (xo = kiln_array_retain(p.x), KILN_OK);
    if (s != KILN_OK) {
        parts_release(&p, 0);
        return kiln_prefix_error(s, "kiln_lstsq: ");
    }
    *x = xo;
    *residuals = p.res;
    *sv = p.s;
    kiln_array_release(p.x);
    parts_release(&p, 1);
    return KILN_OK;
}
