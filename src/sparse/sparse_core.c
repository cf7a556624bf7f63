/* sparse_core.c: the kiln_sparse handle: making one from arrays (checked),
 * references, what it is, its arrays, and the transpose view. */
#include <stdlib.h>

#include "core/error.h"
#include "sparse/sparse.h"

static const char *format_name(kiln_sparse_format f) {
    return f == KILN_SPARSE_CSR ? "CSR" : f == KILN_SPARSE_CSC ? "CSC" : "COO";
}

kiln_status sparse_wrap(kiln_sparse_format format, int64_t rows, int64_t cols, kiln_array *major,
                        kiln_array *minor, kiln_array *data, int sorted, int canonical, kiln_sparse **out) {
    kiln_sparse *a = calloc(1, sizeof *a);
    if (!a) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for a sparse matrix");
    atomic_init(&a->refs, 1);
    a->format = format;
    a->rows = rows;
    a->cols = cols;
    a->nnz = kiln_array_size(data);
    a->dtype = kiln_array_dtype(data);
    a->index_dtype = kiln_array_dtype(minor);
    a->major = kiln_array_retain(major);
    a->minor = kiln_array_retain(minor);
    a->data = kiln_array_retain(data);
    a->sorted = sorted;
    a->canonical = canonical;
    *out = a;
    return KILN_OK;
}

/* A 1-d contiguous array with a's elements: a itself (retained) or a copy. */
static kiln_status contiguous_1d(const char *what, kiln_array *a, kiln_array **out) {
    if (kiln_array_ndim(a) != 1)
        return kiln_set_error(KILN_ERR_SHAPE, "%s must be 1-d, found %d dims", what, kiln_array_ndim(a));
    if (kiln_array_is_contiguous(a) && kiln_array_memory(a) == KILN_MEMORY_DEVICE) {
        *out = kiln_array_retain(a);
        return KILN_OK;
    }
    return kiln_array_copy(a, out);
}

static kiln_status make_checked(kiln_sparse_format format, int64_t rows, int64_t cols, kiln_array *major,
                                kiln_array *minor, kiln_array *data, kiln_sparse **out) {
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse: out is NULL");
    *out = NULL;
    const char *names[3] = {format == KILN_SPARSE_COO ? "row" : "indptr",
                            format == KILN_SPARSE_COO ? "col" : "indices", "data"};
    kiln_array *given[3] = {major, minor, data};
    for (int i = 0; i < 3; i++)
        if (!given[i])
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_%s: %s is NULL",
                                  format == KILN_SPARSE_CSR   ? "csr"
                                  : format == KILN_SPARSE_CSC ? "csc"
                                                              : "coo",
                                  names[i]);
    if (rows < 0 || cols < 0)
        return kiln_set_error(KILN_ERR_SHAPE, "%s shape (%lld, %lld): dims must be >= 0", format_name(format),
                              (long long)rows, (long long)cols);
    kiln_context *ctx = kiln_array_context(data);
    for (int i = 0; i < 2; i++)
        if (kiln_array_context(given[i]) != ctx)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s and data belong to different contexts",
                                  names[i]);
    kiln_array *c[3] = {NULL, NULL, NULL};
    kiln_status s = KILN_OK;
    for (int i = 0; i < 3 && s == KILN_OK; i++) s = contiguous_1d(names[i], given[i], &c[i]);
    int sorted = 0, canonical = 0;
    if (s == KILN_OK) s = sparse_check_components(format, rows, cols, c[0], c[1], c[2], &sorted, &canonical);
    if (s == KILN_OK) s = sparse_wrap(format, rows, cols, c[0], c[1], c[2], sorted, canonical, out);
    for (int i = 0; i < 3; i++) kiln_array_release(c[i]);
    return s;
}

kiln_status kiln_sparse_csr(int64_t rows, int64_t cols, kiln_array *indptr, kiln_array *indices,
                            kiln_array *data, kiln_sparse **out) {
    return make_checked(KILN_SPARSE_CSR, rows, cols, indptr, indices, data, out);
}

kiln_status kiln_sparse_csc(int64_t rows, int64_t cols, kiln_array *indptr, kiln_array *indices,
                            kiln_array *data, kiln_sparse **out) {
    return make_checked(KILN_SPARSE_CSC, rows, cols, indptr, indices, data, out);
}

kiln_status kiln_sparse_coo(int64_t rows, int64_t cols, kiln_array *row, kiln_array *col, kiln_array *data,
                            kiln_sparse **out) {
    return make_checked(KILN_SPARSE_COO, rows, cols, row, col, data, out);
}

kiln_sparse *kiln_sparse_retain(kiln_sparse *a) {
    if (a) atomic_fetch_add(&a->refs, 1);
    return a;
}

void kiln_sparse_release(kiln_sparse *a) {
    if (!a || atomic_fetch_sub(&a->refs, 1) != 1) return;
    kiln_array_release(a->major);
    kiln_array_release(a->minor);
    kiln_array_release(a->data);
    free(a);
}

kiln_context *kiln_sparse_context(const kiln_sparse *a) { return a ? kiln_array_context(a->data) : NULL; }
kiln_sparse_format kiln_sparse_format_of(const kiln_sparse *a) { return a->format; }
int64_t kiln_sparse_rows(const kiln_sparse *a) { return a->rows; }
int64_t kiln_sparse_cols(const kiln_sparse *a) { return a->cols; }
int64_t kiln_sparse_nnz(const kiln_sparse *a) { return a->nnz; }
kiln_dtype kiln_sparse_dtype(const kiln_sparse *a) { return a->dtype; }
kiln_dtype kiln_sparse_index_dtype(const kiln_sparse *a) { return a->index_dtype; }
int kiln_sparse_has_sorted_indices(const kiln_sparse *a) { return a->sorted; }
int kiln_sparse_has_canonical_format(const kiln_sparse *a) { return a->canonical; }

kiln_status kiln_sparse_arrays(kiln_sparse *a, kiln_array **indptr_or_row, kiln_array **indices_or_col,
                               kiln_array **data) {
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_arrays: the matrix is NULL");
    if (indptr_or_row) *indptr_or_row = kiln_array_retain(a->major);
    if (indices_or_col) *indices_or_col = kiln_array_retain(a->minor);
    if (data) *data = kiln_array_retain(a->data);
    return KILN_OK;
}

/* A COO matrix's transpose swaps its index arrays; its row-major order
 * becomes column-major, so it is no longer "sorted". */
kiln_status kiln_sparse_transpose(kiln_sparse *a, kiln_sparse **out) {
    if (!a || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_transpose: NULL argument");
    if (a->format == KILN_SPARSE_COO)
        return sparse_wrap(KILN_SPARSE_COO, a->cols, a->rows, a->minor, a->major, a->data, 0, 0, out);
    kiln_sparse_format f = a->format == KILN_SPARSE_CSR ? KILN_SPARSE_CSC : KILN_SPARSE_CSR;
    return sparse_wrap(f, a->cols, a->rows, a->major, a->minor, a->data, a->sorted, a->canonical, out);
}
