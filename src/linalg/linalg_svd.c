/* linalg_svd.c: kiln_svd and kiln_eigh.
 *
 * SVD: row-major A's memory is column-major X = A^T. If X = U' S V'^H then
 * A = conj(V') S U'^T, and the libraries' outputs read row-major are
 * already NumPy's: U' stored column-major reads as U'^T = Vh, V'^H reads as
 * conj(V') = U. So a plain copy goes in and nothing is transposed after,
 * unless the provider needs tall matrices (cuSOLVER's gesvd: rows >= cols)
 * and X is not: then A itself goes in column-major (a transposed copy) and
 * U and Vh come back transposed.
 *
 * eigh: the transposed copy (A column-major) keeps UPLO's meaning and the
 * eigenvectors come back transposed; the eigenvalues are real, ascending. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "linalg/linalg.h"

static int batch_of(kiln_array *a, int64_t *shape, int64_t *count) {
    *count = 1;
    for (int d = 0; d < a->ndim - 2; d++) {
        shape[d] = a->shape[d];
        *count *= a->shape[d];
    }
    return a->ndim - 2;
}

static kiln_status with_tail(kiln_context *ctx, kiln_dtype t, int nb, const int64_t *shape, int tail,
                             int64_t d0, int64_t d1, kiln_array **out) {
    int64_t full[KILN_MAX_DIMS];
    memcpy(full, shape, sizeof *shape * (size_t)nb);
    full[nb] = d0;
    full[nb + 1] = d1;
    return kiln_linalg_empty(ctx, t, nb + tail, full, out);
}

kiln_status kiln_svd(kiln_array *a, int full_matrices, int compute_uv, kiln_array **u, kiln_array **s_out,
                     kiln_array **vh) {
    if (!s_out || (compute_uv && (!u || !vh)))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_svd: s is NULL, or u or vh is NULL with compute_uv");
    *s_out = NULL;
    if (u) *u = NULL;
    if (vh) *vh = NULL;
    linalg_call call;
    kiln_status s = kiln_linalg_begin("svd", a, 0, &call);
    if (s != KILN_OK) return s;
    int64_t shape[KILN_MAX_DIMS], batch, m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1];
    int64_t k = m < n ? m : n;
    int nb = batch_of(a, shape, &batch);
    /* X = A^T (n x m) as is, or A (m x n) through a transposed copy */
    int transposed = call.p->svd_needs_tall && n < m;
    int64_t xm = transposed ? m : n, xn = transposed ? n : m;
    char job = !compute_uv ? 'N' : full_matrices ? 'A' : 'S';
    int64_t ucols = job == 'A' ? xm : k, vrows = job == 'A' ? xn : k;
    kiln_array *w = NULL, *sv = NULL, *uw = NULL, *vw = NULL;
    s = kiln_linalg_copy(&call, a, nb, shape, transposed ? LINALG_COPY_TRANSPOSED : LINALG_COPY_PLAIN, &w);
    if (s == KILN_OK) s = with_tail(call.ctx, kiln_linalg_real_dtype(a->dtype), nb, shape, 1, k, 0, &sv);
    /* column-major U' (xm x ucols) and V'^H (vrows x xn) as row-major arrays */
    if (s == KILN_OK && compute_uv) s = with_tail(call.ctx, a->dtype, nb, shape, 2, ucols, xm, &uw);
    if (s == KILN_OK && compute_uv) s = with_tail(call.ctx, a->dtype, nb, shape, 2, xn, vrows, &vw);
    int32_t *info = s == KILN_OK ? calloc((size_t)(batch ? batch : 1), sizeof *info) : NULL;
    if (s == KILN_OK && !info) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) {
        char desc[128];
        snprintf(desc, sizeof desc, "gesvd job %c: %lld matrices %lld x %lld", job, (long long)batch,
                 (long long)xm, (long long)xn);
        double flops = (double)batch * (compute_uv ? 22.0 : 4.0) * (double)xm * xn * (double)k;
        struct kiln_prof_op *op = kiln_linalg_prof_begin(&call, "gesvd", a->dtype, flops, desc);
        linalg_job j = {a->dtype, batch, xm, xn, w->data, info};
        s = call.p->gesvd(call.ctx, call.state, &j, job, sv->data, uw ? uw->data : NULL,
                          vw ? vw->data : NULL);
        kiln_linalg_prof_end(&call, op);
    }
    if (s == KILN_OK)
        s = kiln_linalg_check_info(&call, info, batch, nb, shape, "did not converge in the SVD");
    free(info);
    kiln_array_release(w);
    kiln_array *uo = NULL, *vo = NULL;
    if (s == KILN_OK && compute_uv && transposed) {
        /* U' and V'^H of A itself: transpose both back */
        s = kiln_linalg_transposed(&call, uw, &uo);
        if (s == KILN_OK) s = kiln_linalg_transposed(&call, vw, &vo);
        kiln_array_release(uw);
        kiln_array_release(vw);
    } else if (compute_uv) {
        uo = vw; /* conj(V') = U */
        vo = uw; /* U'^T = Vh */
    }
    if (s != KILN_OK) {
        kiln_array_release(sv);
        kiln_array_release(uo);
        kiln_array_release(vo);
        return s;
    }
    *s_out = sv;
    if (compute_uv) {
        *u = uo;
        *vh = vo;
    }
    return KILN_OK;
}

kiln_status kiln_eigh(kiln_array *a, char uplo, kiln_array **w_out, kiln_array **v) {
    if (!w_out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_eigh: w is NULL");
    *w_out = NULL;
    if (v) *v = NULL;
    if (uplo != 'L' && uplo != 'U')
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_eigh: expected UPLO 'L' or 'U', found '%c'",
                              uplo ? uplo : '0');
    linalg_call call;
    kiln_status s = kiln_linalg_begin("eigh", a, 1, &call);
    if (s != KILN_OK) return s;
    int64_t shape[KILN_MAX_DIMS], batch, n = a->shape[a->ndim - 1];
    int nb = batch_of(a, shape, &batch);
    kiln_array *work = NULL, *w = NULL;
    s = kiln_linalg_copy(&call, a, nb, shape, LINALG_COPY_TRANSPOSED, &work);
    if (s == KILN_OK) s = with_tail(call.ctx, kiln_linalg_real_dtype(a->dtype), nb, shape, 1, n, 0, &w);
    int32_t *info = s == KILN_OK ? calloc((size_t)(batch ? batch : 1), sizeof *info) : NULL;
    if (s == KILN_OK && !info) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) {
        char desc[128];
        snprintf(desc, sizeof desc, "syevd: %lld matrices %lld x %lld, %s", (long long)batch, (long long)n,
                 (long long)n, v ? "vectors" : "values");
        double flops = (double)batch * (v ? 9.0 : 4.0 / 3.0) * (double)n * n * (double)n;
        struct kiln_prof_op *op = kiln_linalg_prof_begin(&call, "syevd", a->dtype, flops, desc);
        linalg_job j = {a->dtype, batch, n, n, work->data, info};
        s = call.p->syevd(call.ctx, call.state, &j, v != NULL, uplo, w->data);
        kiln_linalg_prof_end(&call, op);
    }
    if (s == KILN_OK) s = kiln_linalg_check_info(&call, info, batch, nb, shape, "did not converge in eigh");
    free(info);
    if (s == KILN_OK && v) s = kiln_linalg_transposed(&call, work, v);
    kiln_array_release(work);
    if (s != KILN_OK) {
        kiln_array_release(w);
        return s;
    }
    *w_out = w;
    return KILN_OK;
}
