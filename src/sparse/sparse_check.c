/* sparse_check.c: the checks of a matrix made from arrays, SciPy's
 * check_format(full_check=True): dtypes, lengths, index ranges, monotone
 * pointers; and the sortedness flags SciPy keeps, found on the way. The
 * index arrays are read on the host once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sparse/sparse.h"

int sparse_value_dtype(kiln_dtype t) {
    return t == KILN_FLOAT32 || t == KILN_FLOAT64 || t == KILN_COMPLEX64 || t == KILN_COMPLEX128;
}

kiln_status sparse_read_indices(kiln_array *a, int64_t **out) {
    int64_t n = kiln_array_size(a);
    int64_t *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    if (!v)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %lld indices", (long long)n);
    kiln_status s = KILN_OK;
    if (kiln_array_dtype(a) == KILN_INT64) {
        if (n > 0) s = kiln_array_to_host(a, v, kiln_array_nbytes(a));
    } else {
        /* int32: read into the upper half, widen upwards from the front */
        int32_t *narrow = (int32_t *)(v + n) - n;
        if (n > 0) s = kiln_array_to_host(a, narrow, kiln_array_nbytes(a));
        for (int64_t i = 0; i < n && s == KILN_OK; i++) v[i] = narrow[i];
    }
    if (s != KILN_OK) {
        free(v);
        return s;
    }
    *out = v;
    return KILN_OK;
}

static kiln_status check_dtypes(kiln_sparse_format format, kiln_array *major, kiln_array *minor,
                                kiln_array *data) {
    const char *mj = format == KILN_SPARSE_COO ? "row" : "indptr",
               *mn = format == KILN_SPARSE_COO ? "col" : "indices";
    kiln_dtype t = kiln_array_dtype(data);
    if (!sparse_value_dtype(t))
        return kiln_set_error(KILN_ERR_DTYPE,
                              "sparse data of dtype %s: expected float32, float64, complex64 or complex128",
                              kiln_dtype_name(t));
    kiln_dtype i = kiln_array_dtype(minor), j = kiln_array_dtype(major);
    if (i != KILN_INT32 && i != KILN_INT64)
        return kiln_set_error(KILN_ERR_DTYPE, "sparse %s of dtype %s: expected int32 or int64", mn,
                              kiln_dtype_name(i));
    if (j != i)
        return kiln_set_error(KILN_ERR_DTYPE, "sparse %s is %s but %s is %s: expected one index dtype", mj,
                              kiln_dtype_name(j), mn, kiln_dtype_name(i));
    return KILN_OK;
}

/* COO: lengths, ranges, and whether the entries are in row-major order. */
static kiln_status check_coo(int64_t rows, int64_t cols, const int64_t *r, const int64_t *c, int64_t n,
                             int *sorted, int *canonical) {
    int sort = 1, canon = 1;
    for (int64_t k = 0; k < n; k++) {
        if (r[k] < 0 || r[k] >= rows)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                                  "COO row index %lld at entry %lld out of range [0, %lld)", (long long)r[k],
                                  (long long)k, (long long)rows);
        if (c[k] < 0 || c[k] >= cols)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                                  "COO column index %lld at entry %lld out of range [0, %lld)",
                                  (long long)c[k], (long long)k, (long long)cols);
        if (k > 0 && (r[k] < r[k - 1] || (r[k] == r[k - 1] && c[k] <= c[k - 1]))) {
            canon = 0;
            if (r[k] < r[k - 1] || c[k] < c[k - 1]) sort = 0;
        }
    }
    *sorted = sort;
    *canonical = canon && sort;
    return KILN_OK;
}

/* CSR/CSC: the pointers, the minor indices' range and order. */
static kiln_status check_compressed(kiln_sparse_format format, int64_t nmajor, int64_t nminor,
                                    const int64_t *ptr, const int64_t *idx, int64_t nnz, int *sorted,
                                    int *canonical) {
    const char *slice = format == KILN_SPARSE_CSR ? "row" : "column";
    const char *minor = format == KILN_SPARSE_CSR ? "column" : "row";
    if (ptr[0] != 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "indptr[0] is %lld: expected 0", (long long)ptr[0]);
    for (int64_t i = 0; i < nmajor; i++)
        if (ptr[i + 1] < ptr[i])
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                                  "indptr is not monotone: indptr[%lld] = %lld > indptr[%lld] = %lld",
                                  (long long)i, (long long)ptr[i], (long long)(i + 1), (long long)ptr[i + 1]);
    if (ptr[nmajor] != nnz)
        return kiln_set_error(KILN_ERR_SHAPE, "indptr[%lld] = %lld but indices and data have %lld entries",
                              (long long)nmajor, (long long)ptr[nmajor], (long long)nnz);
    int sort = 1, canon = 1;
    for (int64_t i = 0; i < nmajor; i++)
        for (int64_t k = ptr[i]; k < ptr[i + 1]; k++) {
            if (idx[k] < 0 || idx[k] >= nminor)
                return kiln_set_error(
                    KILN_ERR_INVALID_ARGUMENT, "%s index %lld in %s %lld (entry %lld) out of range [0, %lld)",
                    minor, (long long)idx[k], slice, (long long)i, (long long)k, (long long)nminor);
            if (k > ptr[i] && idx[k] <= idx[k - 1]) {
                canon = 0;
                if (idx[k] < idx[k - 1]) sort = 0;
            }
        }
    *sorted = sort;
    *canonical = canon && sort;
    return KILN_OK;
}

kiln_status sparse_check_components(kiln_sparse_format format, int64_t rows, int64_t cols, kiln_array *major,
                                    kiln_array *minor, kiln_array *data, int *sorted, int *canonical) {
    kiln_status s = check_dtypes(format, major, minor, data);
    if (s != KILN_OK) return s;
    int64_t nnz = kiln_array_size(data), nmajor = format == KILN_SPARSE_CSC ? cols : rows,
            nminor = format == KILN_SPARSE_CSC ? rows : cols;
    if (kiln_array_dtype(minor) == KILN_INT32 && (rows > INT32_MAX || cols > INT32_MAX || nnz > INT32_MAX))
        return kiln_set_error(KILN_ERR_DTYPE,
                              "shape (%lld, %lld) with %lld entries does not fit int32 indices: use int64",
                              (long long)rows, (long long)cols, (long long)nnz);
    if (kiln_array_size(minor) != nnz)
        return kiln_set_error(KILN_ERR_SHAPE, "%s has %lld entries but data has %lld",
                              format == KILN_SPARSE_COO ? "col" : "indices",
                              (long long)kiln_array_size(minor), (long long)nnz);
    if (format == KILN_SPARSE_COO && kiln_array_size(major) != nnz)
        return kiln_set_error(KILN_ERR_SHAPE, "row has %lld entries but data has %lld",
                              (long long)kiln_array_size(major), (long long)nnz);
    if (format != KILN_SPARSE_COO && kiln_array_size(major) != nmajor + 1)
        return kiln_set_error(KILN_ERR_SHAPE, "%s indptr has %lld entries: expected %s + 1 = %lld",
                              format == KILN_SPARSE_CSR ? "CSR" : "CSC", (long long)kiln_array_size(major),
                              format == KILN_SPARSE_CSR ? "rows" : "cols", (long long)(nmajor + 1));
    int64_t *mj = NULL, *mn = NULL;
    s = sparse_read_indices(major, &mj);
    if (s == KILN_OK) s = sparse_read_indices(minor, &mn);
    if (s == KILN_OK)
        s = format == KILN_SPARSE_COO
                ? check_coo(rows, cols, mj, mn, nnz, sorted, canonical)
                : check_compressed(format, nmajor, nminor, mj, mn, nnz, sorted, canonical);
    free(mj);
    free(mn);
    return s;
}
