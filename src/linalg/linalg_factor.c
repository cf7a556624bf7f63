/* linalg_factor.c: kiln_cholesky and kiln_qr.
 *
 * Cholesky: row-major Hermitian A's memory is column-major A^T = conj(A).
 * potrf with uplo 'U' on a plain copy gives conj(A) = U^H U; U's storage
 * read row-major is U^T, lower triangular, and U^T (U^T)^H = conj(U^H U) =
 * A: NumPy's L, with no transpose. potrf reads only that triangle, which
 * is A's lower one, as NumPy reads; kiln zeroes the other.
 *
 * cuSOLVER's potrf is much slower on the upper triangle than on the lower
 * (0.52-0.60 x at 8192^2 on an H100), so where the provider says so the
 * working copy is transposed instead (A column-major, A's lower triangle
 * still the one read), potrf 'L' gives A = L L^H with L column-major, and
 * one pass returns it row-major in place, zeros above the diagonal
 * (linalg_lower_from_colmajor: half the matrix read, all of it written; a
 * transposing copy into a second buffer and then the triangle pass cost
 * 0.922 x cuSOLVER's time-speed at 8192^2 float64 on an H100). The
 * working copy itself takes only A's lower triangle's tiles (potrf 'L'
 * reads no more): half a matrix read and written where the vendor's own
 * call copies a whole one.
 *
 * QR has no such identity (A^T's QR is not A's), so the working copy is
 * transposed (A column-major), and R and Q are transposed back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/settings.h"
#include "linalg/linalg.h"

static int batch_of(kiln_array *a, int64_t *shape, int64_t *count) {
    *count = 1;
    for (int d = 0; d < a->ndim - 2; d++) {
        shape[d] = a->shape[d];
        *count *= a->shape[d];
    }
    return a->ndim - 2;
}

kiln_status kiln_cholesky(kiln_array *a, kiln_array **l) {
    if (!l) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_cholesky: l is NULL");
    *l = NULL;
    linalg_call call;
    kiln_status s = kiln_linalg_begin("cholesky", a, 1, &call);
    if (s != KILN_OK) return s;
    int64_t shape[KILN_MAX_DIMS], batch, n = a->shape[a->ndim - 1];
    int nb = batch_of(a, shape, &batch);
    static const char *const factors[] = {"auto", "lower", "upper"};
    int factor = kiln_setting_choice("KILN_CHOLESKY_FACTOR", factors, 3, 0);
    int lower = factor ? factor == 1 : call.p->potrf_lower_faster;
    kiln_array *w = NULL;
    s = kiln_linalg_copy(&call, a, nb, shape, lower ? LINALG_COPY_TRANSPOSED_UPPER : LINALG_COPY_PLAIN, &w);
    int32_t *info = s == KILN_OK ? calloc((size_t)(batch ? batch : 1), sizeof *info) : NULL;
    if (s == KILN_OK && !info) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) {
        char desc[128];
        snprintf(desc, sizeof desc, "potrf: %lld matrices %lld x %lld", (long long)batch, (long long)n,
                 (long long)n);
        struct kiln_prof_op *op =
            kiln_linalg_prof_begin(&call, "potrf", a->dtype, (double)batch * n * n * (double)n / 3.0, desc);
        linalg_job j = {a->dtype, batch, n, n, w->data, info};
        s = call.p->potrf(call.ctx, call.state, &j, lower ? 'L' : 'U');
        kiln_linalg_prof_end(&call, op);
    }
    if (s == KILN_OK)
        s = kiln_linalg_check_info(
            &call, info, batch, nb, shape,
            "is not positive definite: its leading minor of the order given by info is not");
    if (s == KILN_OK)
        s = lower ? kiln_linalg_lower_from_colmajor(&call, w, batch, n)
                  : kiln_linalg_triangle(&call, w, batch, n, n, 0);
    free(info);
    if (s != KILN_OK) {
        kiln_array_release(w);
        return s;
    }
    *l = w;
    return KILN_OK;
}

/* geqrf on `w` (batch + (n, m): A column-major), tau batch * k. */
static kiln_status qr_factor(linalg_call *call, kiln_array *w, int64_t batch, int64_t m, int64_t n,
                             kiln_array **tau) {
    int64_t k = m < n ? m : n, count = batch * k;
    kiln_status s = kiln_linalg_empty(call->ctx, w->dtype, 1, &count, tau);
    int32_t *info = s == KILN_OK ? calloc((size_t)(batch ? batch : 1), sizeof *info) : NULL;
    if (s == KILN_OK && !info) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) {
        char desc[128];
        snprintf(desc, sizeof desc, "geqrf: %lld matrices %lld x %lld", (long long)batch, (long long)m,
                 (long long)n);
        double flops = (double)batch * (2.0 * m * n * (double)k - 2.0 / 3.0 * k * k * (double)k);
        struct kiln_prof_op *op = kiln_linalg_prof_begin(call, "geqrf", w->dtype, flops, desc);
        linalg_job j = {w->dtype, batch, m, n, w->data, info};
        s = call->p->geqrf(call->ctx, call->state, &j, (*tau)->data);
        kiln_linalg_prof_end(call, op);
    }
    if (s == KILN_OK) s = kiln_linalg_check_info(call, info, batch, 0, NULL, "failed in geqrf");
    free(info);
    return s;
}

/* R (batch + (k or m, n), row-major) from geqrf's w: its first rows of
 * w^T's storage, upper triangle. */
static kiln_status qr_r(linalg_call *call, kiln_array *w, int64_t batch, int64_t rows, int64_t n,
                        kiln_array **r) {
    kiln_array *cols = NULL;
    kiln_status s = kiln_array_slice(w, w->ndim - 1, 0, rows, 1, &cols);
    if (s == KILN_OK) s = kiln_linalg_transposed(call, cols, r);
    kiln_array_release(cols);
    if (s == KILN_OK) s = kiln_linalg_triangle(call, *r, batch, rows, n, 1);
    return s;
}

/* Q (batch + (m, ncols), row-major) from geqrf's reflectors in w. */
static kiln_status qr_q(linalg_call *call, kiln_array *w, kiln_array *tau, int nb, const int64_t *shape,
                        int64_t batch, int64_t m, int64_t n, int64_t ncols, kiln_array **q) {
    int64_t k = m < n ? m : n;
    kiln_array *qw = NULL;
    kiln_status s = KILN_OK;
    if (ncols == n) {
        qw = kiln_array_retain(w); /* w already is m x ncols with the reflectors */
    } else {
        int64_t qshape[KILN_MAX_DIMS];
        memcpy(qshape, shape, sizeof *shape * (size_t)nb);
        qshape[nb] = ncols;
        qshape[nb + 1] = m;
        kiln_array *dst = NULL, *src = NULL;
        s = kiln_linalg_empty(call->ctx, w->dtype, nb + 2, qshape, &qw);
        if (s == KILN_OK) /* the columns past the reflectors start as zeros */
            s = kiln_context_note(call->ctx, call->ctx->ops->memset(call->ctx->state, qw->data, 0,
                                                                    kiln_array_nbytes(qw), NULL));
        if (s == KILN_OK) s = kiln_array_slice(qw, nb, 0, k, 1, &dst);
        if (s == KILN_OK) s = kiln_array_slice(w, nb, 0, k, 1, &src);
        if (s == KILN_OK) s = kiln_array_assign(dst, src);
        kiln_array_release(dst);
        kiln_array_release(src);
    }
    int32_t *info = s == KILN_OK ? calloc((size_t)(batch ? batch : 1), sizeof *info) : NULL;
    if (s == KILN_OK && !info) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) {
        char desc[128];
        snprintf(desc, sizeof desc, "orgqr: %lld matrices %lld x %lld from %lld reflectors", (long long)batch,
                 (long long)m, (long long)ncols, (long long)k);
        double flops = (double)batch * (4.0 * m * ncols * (double)k - 2.0 * (m + ncols) * k * (double)k +
                                        4.0 / 3.0 * k * k * (double)k);
        struct kiln_prof_op *op = kiln_linalg_prof_begin(call, "orgqr", w->dtype, flops, desc);
        linalg_job j = {w->dtype, batch, m, ncols, qw->data, info};
        s = call->p->orgqr(call->ctx, call->state, &j, k, tau->data);
        kiln_linalg_prof_end(call, op);
    }
    if (s == KILN_OK) s = kiln_linalg_check_info(call, info, batch, 0, NULL, "failed in orgqr");
    free(info);
    if (s == KILN_OK) s = kiln_linalg_transposed(call, qw, q);
    kiln_array_release(qw);
    return s;
}

kiln_status kiln_qr(kiln_array *a, kiln_qr_mode mode, kiln_array **q, kiln_array **r) {
    if (!r || (mode != KILN_QR_R && !q))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_qr: r is NULL, or q is NULL for a mode that gives Q");
    if (mode != KILN_QR_REDUCED && mode != KILN_QR_COMPLETE && mode != KILN_QR_R)
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "kiln_qr: expected mode KILN_QR_REDUCED, KILN_QR_COMPLETE or KILN_QR_R, found %d", (int)mode);
    *r = NULL;
    if (q) *q = NULL;
    linalg_call call;
    kiln_status s = kiln_linalg_begin("qr", a, 0, &call);
    if (s != KILN_OK) return s;
    int64_t shape[KILN_MAX_DIMS], batch, m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1];
    int64_t k = m < n ? m : n;
    int nb = batch_of(a, shape, &batch);
    kiln_array *w = NULL, *tau = NULL, *rr = NULL, *qq = NULL;
    s = kiln_linalg_copy(&call, a, nb, shape, LINALG_COPY_TRANSPOSED, &w);
    if (s == KILN_OK) s = qr_factor(&call, w, batch, m, n, &tau);
    /* NumPy: complete gives R (m, n), reduced and r give R (k, n) */
    if (s == KILN_OK) s = qr_r(&call, w, batch, mode == KILN_QR_COMPLETE ? m : k, n, &rr);
    if (s == KILN_OK && mode != KILN_QR_R)
        s = qr_q(&call, w, tau, nb, shape, batch, m, n, mode == KILN_QR_COMPLETE ? m : k, &qq);
    kiln_array_release(w);
    kiln_array_release(tau);
    if (s != KILN_OK) {
        kiln_array_release(rr);
        kiln_array_release(qq);
        return s;
    }
    *r = rr;
    if (q) *q = qq;
    return KILN_OK;
}
