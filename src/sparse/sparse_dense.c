/* sparse_dense.c: dense arrays to sparse matrices and back, and the
 * elementwise operations that make a new structure (a + b) or keep it
 * (a * s). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sparse/sparse.h"

kiln_status kiln_sparse_to_dense(kiln_sparse *a, kiln_array **out) {
    if (!a || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_to_dense: NULL argument");
    size_t cells = (size_t)a->rows * (size_t)a->cols;
    sparse_host h;
    kiln_status s = sparse_host_read(a, &h);
    if (s != KILN_OK) return s;
    double *dense = calloc(2 * (cells ? cells : 1), sizeof *dense);
    void *raw = malloc((cells ? cells : 1) * kiln_dtype_size(a->dtype));
    int64_t *expanded = NULL;
    if (!dense || !raw)
        s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for a dense (%lld, %lld) %s matrix",
                           (long long)a->rows, (long long)a->cols, kiln_dtype_name(a->dtype));
    if (s == KILN_OK && a->format != KILN_SPARSE_COO) s = sparse_host_expand(&h, &expanded);
    if (s == KILN_OK) {
        const int64_t *r = a->format == KILN_SPARSE_COO   ? h.major
                           : a->format == KILN_SPARSE_CSR ? expanded
                                                          : h.minor;
        const int64_t *c = a->format == KILN_SPARSE_COO   ? h.minor
                           : a->format == KILN_SPARSE_CSR ? h.minor
                                                          : expanded;
        for (int64_t k = 0; k < h.nnz; k++) {
            size_t at = (size_t)r[k] * (size_t)a->cols + (size_t)c[k];
            dense[2 * at] += h.values[2 * k];
            dense[2 * at + 1] += h.values[2 * k + 1];
        }
        sparse_values_narrow(dense, a->dtype, (int64_t)cells, raw);
        int64_t shape[2] = {a->rows, a->cols};
        s = kiln_array_from_host(kiln_sparse_context(a), a->dtype, 2, shape, raw,
                                 cells * kiln_dtype_size(a->dtype), out);
    }
    free(expanded), free(dense), free(raw);
    sparse_host_free(&h);
    return s;
}

kiln_status kiln_sparse_from_dense(kiln_array *dense, kiln_sparse_format format, kiln_dtype index_dtype,
                                   kiln_sparse **out) {
    if (!dense || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_from_dense: NULL argument");
    *out = NULL;
    kiln_dtype t = kiln_array_dtype(dense);
    if (kiln_array_ndim(dense) != 2)
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_sparse_from_dense: expected a 2-d array, found %d dims",
                              kiln_array_ndim(dense));
    if (!sparse_value_dtype(t))
        return kiln_set_error(
            KILN_ERR_DTYPE,
            "kiln_sparse_from_dense: dtype %s: expected float32, float64, complex64 or complex128",
            kiln_dtype_name(t));
    if (index_dtype != KILN_INT32 && index_dtype != KILN_INT64)
        return kiln_set_error(KILN_ERR_DTYPE,
                              "kiln_sparse_from_dense: index dtype %s: expected int32 or int64",
                              kiln_dtype_name(index_dtype));
    if (format != KILN_SPARSE_CSR && format != KILN_SPARSE_CSC && format != KILN_SPARSE_COO)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_from_dense: unknown format %d",
                              (int)format);
    int64_t rows = kiln_array_shape(dense)[0], cols = kiln_array_shape(dense)[1];
    size_t cells = (size_t)rows * (size_t)cols, nn = cells ? cells : 1;
    void *raw = malloc(nn * kiln_dtype_size(t));
    double *wide = malloc(2 * nn * sizeof *wide);
    sparse_host h;
    memset(&h, 0, sizeof h);
    int64_t nmajor = format == KILN_SPARSE_CSC ? cols : rows,
            nminor = format == KILN_SPARSE_CSC ? rows : cols;
    h.major = malloc(((format == KILN_SPARSE_COO ? nn : (size_t)nmajor) + 1) * sizeof *h.major);
    h.minor = malloc(nn * sizeof *h.minor);
    h.values = malloc(2 * nn * sizeof *h.values);
    kiln_status s =
        raw && wide && h.major && h.minor && h.values
            ? KILN_OK
            : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for a (%lld, %lld) matrix",
                             (long long)rows, (long long)cols);
    if (s == KILN_OK && cells) s = kiln_array_to_host(dense, raw, kiln_array_nbytes(dense));
    if (s == KILN_OK) {
        sparse_values_widen(raw, t, (int64_t)cells, wide);
        int64_t w = 0;
        if (format != KILN_SPARSE_COO) h.major[0] = 0;
        /* CSR and COO walk rows, CSC walks columns: entries come out sorted */
        for (int64_t i = 0; i < nmajor; i++) {
            for (int64_t j = 0; j < nminor; j++) {
                size_t at = format == KILN_SPARSE_CSC ? (size_t)j * (size_t)cols + (size_t)i
                                                      : (size_t)i * (size_t)cols + (size_t)j;
                if (wide[2 * at] == 0 && wide[2 * at + 1] == 0) continue;
                if (format == KILN_SPARSE_COO) h.major[w] = i;
                h.minor[w] = j;
                h.values[2 * w] = wide[2 * at];
                h.values[2 * w + 1] = wide[2 * at + 1];
                w++;
            }
            if (format != KILN_SPARSE_COO) h.major[i + 1] = w;
        }
        h.nnz = w;
        h.rows = rows;
        h.cols = cols;
        h.format = format;
        s = sparse_host_upload(kiln_array_context(dense), &h, t, index_dtype, 1, 1, out);
    }
    free(raw), free(wide);
    sparse_host_free(&h);
    return s;
}

/* The entries of a matrix read on the host as (row, col, value) lists. */
static kiln_status triplets(kiln_sparse *a, sparse_host *h, int64_t **rows, int64_t **cols,
                            int64_t **expanded) {
    *expanded = NULL;
    kiln_status s = sparse_host_read(a, h);
    if (s != KILN_OK) return s;
    if (a->format == KILN_SPARSE_COO) {
        *rows = h->major, *cols = h->minor;
        return KILN_OK;
    }
    s = sparse_host_expand(h, expanded);
    if (s != KILN_OK) {
        sparse_host_free(h);
        return s;
    }
    int csr = a->format == KILN_SPARSE_CSR;
    *rows = csr ? *expanded : h->minor;
    *cols = csr ? h->minor : *expanded;
    return KILN_OK;
}

/* Both matrices' entries in one list, compressed with duplicates summed:
 * the pairs that meet add up, and what comes out exactly zero goes, as in
 * SciPy's csr_plus_csr. */
kiln_status kiln_sparse_add(kiln_sparse *a, kiln_sparse *b, kiln_sparse **out) {
    if (!a || !b || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_add: NULL argument");
    *out = NULL;
    if (kiln_sparse_context(a) != kiln_sparse_context(b))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_sparse_add: the matrices belong to different contexts");
    if (a->rows != b->rows || a->cols != b->cols)
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_sparse_add: shapes (%lld, %lld) and (%lld, %lld) differ",
                              (long long)a->rows, (long long)a->cols, (long long)b->rows, (long long)b->cols);
    kiln_dtype t = sparse_result_dtype(a->dtype, b->dtype);
    kiln_dtype it = a->index_dtype == KILN_INT64 || b->index_dtype == KILN_INT64 ? KILN_INT64 : KILN_INT32;
    int csc = a->format == KILN_SPARSE_CSC && b->format == KILN_SPARSE_CSC;
    sparse_host ha, hb, c;
    int64_t *ra, *ca, *ea, *rb, *cb, *eb;
    kiln_status s = triplets(a, &ha, &ra, &ca, &ea);
    if (s != KILN_OK) return s;
    s = triplets(b, &hb, &rb, &cb, &eb);
    if (s != KILN_OK) {
        free(ea);
        sparse_host_free(&ha);
        return s;
    }
    size_t n = (size_t)(ha.nnz + hb.nnz), nn = n ? n : 1;
    int64_t *r = malloc(nn * sizeof *r), *col = malloc(nn * sizeof *col);
    double *v = malloc(2 * nn * sizeof *v);
    if (!r || !col || !v) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %zu entries", n);
    if (s == KILN_OK) {
        size_t na = (size_t)ha.nnz;
        memcpy(r, ra, na * sizeof *r), memcpy(r + na, rb, (n - na) * sizeof *r);
        memcpy(col, ca, na * sizeof *col), memcpy(col + na, cb, (n - na) * sizeof *col);
        memcpy(v, ha.values, 2 * na * sizeof *v), memcpy(v + 2 * na, hb.values, 2 * (n - na) * sizeof *v);
        s = csc ? sparse_host_compress(a->cols, a->rows, col, r, v, (int64_t)n, 1, &c)
                : sparse_host_compress(a->rows, a->cols, r, col, v, (int64_t)n, 1, &c);
    }
    if (s == KILN_OK) {
        c.format = csc ? KILN_SPARSE_CSC : KILN_SPARSE_CSR;
        c.rows = a->rows;
        c.cols = a->cols;
        s = sparse_host_upload(kiln_sparse_context(a), &c, t, it, 1, 1, out);
        sparse_host_free(&c);
    }
    free(r), free(col), free(v), free(ea), free(eb);
    sparse_host_free(&ha);
    sparse_host_free(&hb);
    return s;
}

/* The structure is shared; only the values are new. */
kiln_status kiln_sparse_scale(kiln_sparse *a, kiln_value scalar, kiln_sparse **out) {
    if (!a || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_scale: NULL argument");
    *out = NULL;
    if (scalar.kind != KILN_VALUE_SCALAR || scalar.dtype < 0 || scalar.dtype >= KILN_DTYPE_COUNT)
        return kiln_set_error(KILN_ERR_ARG_TYPE,
                              "kiln_sparse_scale: expected a scalar value (kiln_f64, kiln_c128, ...)");
    double sv[2] = {0, 0};
    switch (scalar.dtype) {
    case KILN_BOOL:
    case KILN_INT8:
    case KILN_INT16:
    case KILN_INT32:
    case KILN_INT64: sv[0] = (double)scalar.as.i; break;
    case KILN_UINT8:
    case KILN_UINT16:
    case KILN_UINT32:
    case KILN_UINT64: sv[0] = (double)scalar.as.u; break;
    default:
        sv[0] = scalar.as.c[0];
        sv[1] = scalar.dtype == KILN_COMPLEX64 || scalar.dtype == KILN_COMPLEX128 ? scalar.as.c[1] : 0;
    }
    int cx = scalar.dtype == KILN_COMPLEX64 || scalar.dtype == KILN_COMPLEX128;
    kiln_dtype t = a->dtype;
    if (cx && t == KILN_FLOAT32) t = KILN_COMPLEX64;
    if (cx && t == KILN_FLOAT64) t = KILN_COMPLEX128;
    kiln_array *data = NULL;
    kiln_status s = sparse_scaled_values(a, t, sv, &data);
    if (s == KILN_OK)
        s = sparse_wrap(a->format, a->rows, a->cols, a->major, a->minor, data, a->sorted, a->canonical, out);
    kiln_array_release(data);
    return s;
}
