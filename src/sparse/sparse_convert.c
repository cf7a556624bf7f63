/* sparse_convert.c: conversions between formats and to and from dense
 * arrays, sums, scaling and value dtypes, with SciPy's results: tocsr sums
 * duplicates and sorts, a sum is canonical CSR without entries that came
 * out exactly zero, a scaled matrix keeps its structure. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sparse/sparse.h"

/* NumPy's result type, through two facts per dtype: complex or not, and the
 * float precision (32 or 64 bits) it needs next to a float32 or complex64. */
kiln_dtype sparse_result_dtype(kiln_dtype a, kiln_dtype b) {
    if (a < 0 || a >= KILN_DTYPE_COUNT || b < 0 || b >= KILN_DTYPE_COUNT) return KILN_DTYPE_COUNT;
    static const int wide[KILN_DTYPE_COUNT] = {[KILN_INT32] = 1,  [KILN_INT64] = 1,   [KILN_UINT32] = 1,
                                               [KILN_UINT64] = 1, [KILN_FLOAT64] = 1, [KILN_COMPLEX128] = 1};
    int cx = a == KILN_COMPLEX64 || a == KILN_COMPLEX128 || b == KILN_COMPLEX64 || b == KILN_COMPLEX128;
    int w = wide[a] || wide[b];
    return cx ? (w ? KILN_COMPLEX128 : KILN_COMPLEX64) : (w ? KILN_FLOAT64 : KILN_FLOAT32);
}

kiln_status sparse_scaled_values(kiln_sparse *a, kiln_dtype to, const double *scale, kiln_array **out) {
    size_t n = (size_t)(a->nnz > 0 ? a->nnz : 1);
    void *raw = malloc(n * kiln_dtype_size(a->dtype)), *conv = malloc(n * kiln_dtype_size(to));
    double *wide = malloc(2 * n * sizeof *wide);
    kiln_status s =
        raw && conv && wide
            ? KILN_OK
            : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %lld values", (long long)a->nnz);
    if (s == KILN_OK && a->nnz > 0) s = kiln_array_to_host(a->data, raw, kiln_array_nbytes(a->data));
    if (s == KILN_OK) {
        sparse_values_widen(raw, a->dtype, a->nnz, wide);
        if (scale)
            for (int64_t k = 0; k < a->nnz; k++) {
                double re = wide[2 * k], im = wide[2 * k + 1];
                wide[2 * k] = re * scale[0] - im * scale[1];
                wide[2 * k + 1] = re * scale[1] + im * scale[0];
            }
        sparse_values_narrow(wide, to, a->nnz, conv);
        int64_t len = a->nnz;
        s = kiln_array_from_host(kiln_sparse_context(a), to, 1, &len, conv, (size_t)len * kiln_dtype_size(to),
                                 out);
    }
    free(raw), free(conv), free(wide);
    return s;
}

kiln_status sparse_astype(kiln_sparse *a, kiln_dtype to, kiln_sparse **out) {
    if (a->dtype == to) {
        *out = kiln_sparse_retain(a);
        return KILN_OK;
    }
    kiln_array *data = NULL;
    kiln_status s = sparse_scaled_values(a, to, NULL, &data);
    if (s == KILN_OK)
        s = sparse_wrap(a->format, a->rows, a->cols, a->major, a->minor, data, a->sorted, a->canonical, out);
    kiln_array_release(data);
    return s;
}

kiln_status sparse_array_astype(kiln_array *a, kiln_dtype to, kiln_array **out) {
    kiln_dtype from = kiln_array_dtype(a);
    if (from == to) {
        *out = kiln_array_retain(a);
        return KILN_OK;
    }
    int64_t n = kiln_array_size(a);
    size_t nn = (size_t)(n > 0 ? n : 1);
    void *raw = malloc(nn * kiln_dtype_size(from)), *conv = malloc(nn * kiln_dtype_size(to));
    double *wide = malloc(2 * nn * sizeof *wide);
    kiln_status s = raw && conv && wide ? KILN_OK
                                        : kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                                                         "out of host memory for %lld values", (long long)n);
    if (s == KILN_OK && n > 0) s = kiln_array_to_host(a, raw, kiln_array_nbytes(a));
    if (s == KILN_OK) {
        sparse_values_widen(raw, from, n, wide);
        sparse_values_narrow(wide, to, n, conv);
        s = kiln_array_from_host(kiln_array_context(a), to, kiln_array_ndim(a), kiln_array_shape(a), conv,
                                 (size_t)n * kiln_dtype_size(to), out);
    }
    free(raw), free(conv), free(wide);
    return s;
}

/* ------------------------------------------------------------ formats */

kiln_status kiln_sparse_tocsr(kiln_sparse *a, kiln_sparse **out) {
    if (!a || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_tocsr: NULL argument");
    if (a->format == KILN_SPARSE_CSR) {
        *out = kiln_sparse_retain(a);
        return KILN_OK;
    }
    sparse_host h, c;
    kiln_status s = sparse_host_read(a, &h);
    if (s != KILN_OK) return s;
    int64_t *rows = h.major, *cols = h.minor, *expanded = NULL;
    if (a->format == KILN_SPARSE_CSC) { /* CSC: minor are rows, the expanded pointers columns */
        s = sparse_host_expand(&h, &expanded);
        rows = h.minor;
        cols = expanded;
    }
    if (s == KILN_OK) s = sparse_host_compress(a->rows, a->cols, rows, cols, h.values, h.nnz, 0, &c);
    if (s == KILN_OK) {
        c.format = KILN_SPARSE_CSR;
        c.rows = a->rows;
        c.cols = a->cols;
        s = sparse_host_upload(kiln_sparse_context(a), &c, a->dtype, a->index_dtype, 1, 1, out);
        sparse_host_free(&c);
    }
    free(expanded);
    sparse_host_free(&h);
    return s;
}

/* CSC of a = the transpose of CSR of a's transpose. */
kiln_status kiln_sparse_tocsc(kiln_sparse *a, kiln_sparse **out) {
    if (!a || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_tocsc: NULL argument");
    if (a->format == KILN_SPARSE_CSC) {
        *out = kiln_sparse_retain(a);
        return KILN_OK;
    }
    kiln_sparse *t = NULL, *tc = NULL;
    kiln_status s = kiln_sparse_transpose(a, &t);
    if (s == KILN_OK) s = kiln_sparse_tocsr(t, &tc);
    if (s == KILN_OK) s = kiln_sparse_transpose(tc, out);
    kiln_sparse_release(t);
    kiln_sparse_release(tc);
    return s;
}

/* The entries as stored: the minor indices and values are shared, the
 * expanded pointers are new. */
kiln_status kiln_sparse_tocoo(kiln_sparse *a, kiln_sparse **out) {
    if (!a || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_tocoo: NULL argument");
    if (a->format == KILN_SPARSE_COO) {
        *out = kiln_sparse_retain(a);
        return KILN_OK;
    }
    sparse_host h;
    memset(&h, 0, sizeof h);
    h.rows = a->rows, h.cols = a->cols, h.nnz = a->nnz, h.format = a->format;
    int64_t *expanded = NULL;
    kiln_array *major = NULL;
    kiln_status s = sparse_read_indices(a->major, &h.major);
    if (s == KILN_OK) s = sparse_host_expand(&h, &expanded);
    if (s == KILN_OK) {
        int64_t n = a->nnz;
        if (a->index_dtype == KILN_INT64) {
            s = kiln_array_from_host(kiln_sparse_context(a), KILN_INT64, 1, &n, expanded, (size_t)n * 8,
                                     &major);
        } else {
            int32_t *narrow = (int32_t *)expanded; /* in place, front to back */
            for (int64_t k = 0; k < n; k++) narrow[k] = (int32_t)expanded[k];
            s = kiln_array_from_host(kiln_sparse_context(a), KILN_INT32, 1, &n, narrow, (size_t)n * 4,
                                     &major);
        }
    }
    if (s == KILN_OK) {
        int csr = a->format == KILN_SPARSE_CSR;
        s = sparse_wrap(KILN_SPARSE_COO, a->rows, a->cols, csr ? major : a->minor, csr ? a->minor : major,
                        a->data, csr && a->sorted, csr && a->canonical, out);
    }
    kiln_array_release(major);
    free(expanded);
    sparse_host_free(&h);
    return s;
}
