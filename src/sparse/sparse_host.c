/* sparse_host.c: a matrix's components between the device and the host:
 * indices widened to int64 and values to (re, im) doubles, which hold every
 * value of the four value dtypes exactly, so one set of structural
 * algorithms serves all of them; and back to a new matrix. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "sparse/sparse.h"

void sparse_values_widen(const void *src, kiln_dtype t, int64_t n, double *dst) {
    for (int64_t i = 0; i < n; i++) {
        double re = 0, im = 0;
        switch (t) {
        case KILN_BOOL: re = ((const uint8_t *)src)[i] != 0; break;
        case KILN_INT8: re = ((const int8_t *)src)[i]; break;
        case KILN_INT16: re = ((const int16_t *)src)[i]; break;
        case KILN_INT32: re = ((const int32_t *)src)[i]; break;
        case KILN_INT64: re = (double)((const int64_t *)src)[i]; break;
        case KILN_UINT8: re = ((const uint8_t *)src)[i]; break;
        case KILN_UINT16: re = ((const uint16_t *)src)[i]; break;
        case KILN_UINT32: re = ((const uint32_t *)src)[i]; break;
        case KILN_UINT64: re = (double)((const uint64_t *)src)[i]; break;
        case KILN_FLOAT16:
        case KILN_BFLOAT16: re = kiln_half_value_of(t, ((const uint16_t *)src)[i]); break;
        case KILN_FLOAT32: re = ((const float *)src)[i]; break;
        case KILN_FLOAT64: re = ((const double *)src)[i]; break;
        case KILN_COMPLEX64:
            re = ((const float *)src)[2 * i];
            im = ((const float *)src)[2 * i + 1];
            break;
        case KILN_COMPLEX128:
            re = ((const double *)src)[2 * i];
            im = ((const double *)src)[2 * i + 1];
            break;
        default: break;
        }
        dst[2 * i] = re;
        dst[2 * i + 1] = im;
    }
}

/* Only the value dtypes are written (the results of sparse operations). */
void sparse_values_narrow(const double *src, kiln_dtype t, int64_t n, void *dst) {
    for (int64_t i = 0; i < n; i++) switch (t) {
        case KILN_FLOAT32: ((float *)dst)[i] = (float)src[2 * i]; break;
        case KILN_FLOAT64: ((double *)dst)[i] = src[2 * i]; break;
        case KILN_COMPLEX64:
            ((float *)dst)[2 * i] = (float)src[2 * i];
            ((float *)dst)[2 * i + 1] = (float)src[2 * i + 1];
            break;
        case KILN_COMPLEX128:
            ((double *)dst)[2 * i] = src[2 * i];
            ((double *)dst)[2 * i + 1] = src[2 * i + 1];
            break;
        default: break;
        }
}

void sparse_host_free(sparse_host *h) {
    free(h->major);
    free(h->minor);
    free(h->values);
    memset(h, 0, sizeof *h);
}

kiln_status sparse_host_read(kiln_sparse *a, sparse_host *out) {
    memset(out, 0, sizeof *out);
    out->rows = a->rows;
    out->cols = a->cols;
    out->nnz = a->nnz;
    out->format = a->format;
    kiln_status s = sparse_read_indices(a->major, &out->major);
    if (s == KILN_OK) s = sparse_read_indices(a->minor, &out->minor);
    size_t n = (size_t)(a->nnz > 0 ? a->nnz : 1);
    void *raw = s == KILN_OK ? malloc(n * kiln_dtype_size(a->dtype)) : NULL;
    out->values = s == KILN_OK ? malloc(2 * n * sizeof(double)) : NULL;
    if (s == KILN_OK && (!raw || !out->values))
        s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %lld sparse values",
                           (long long)a->nnz);
    if (s == KILN_OK && a->nnz > 0) s = kiln_array_to_host(a->data, raw, kiln_array_nbytes(a->data));
    if (s == KILN_OK) sparse_values_widen(raw, a->dtype, a->nnz, out->values);
    free(raw);
    if (s != KILN_OK) sparse_host_free(out);
    return s;
}

static kiln_status upload_indices(kiln_context *ctx, const int64_t *v, int64_t n, kiln_dtype t,
                                  kiln_array **out) {
    if (t == KILN_INT64) return kiln_array_from_host(ctx, KILN_INT64, 1, &n, v, (size_t)n * sizeof *v, out);
    int32_t *narrow = malloc(sizeof *narrow * (size_t)(n > 0 ? n : 1));
    if (!narrow)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %lld indices", (long long)n);
    for (int64_t i = 0; i < n; i++) narrow[i] = (int32_t)v[i];
    kiln_status s = kiln_array_from_host(ctx, KILN_INT32, 1, &n, narrow, (size_t)n * sizeof *narrow, out);
    free(narrow);
    return s;
}

kiln_status sparse_host_upload(kiln_context *ctx, const sparse_host *h, kiln_dtype dtype,
                               kiln_dtype index_dtype, int sorted, int canonical, kiln_sparse **out) {
    int64_t nmajor = h->format == KILN_SPARSE_COO   ? h->nnz
                     : h->format == KILN_SPARSE_CSR ? h->rows + 1
                                                    : h->cols + 1;
    if (index_dtype == KILN_INT32 && (h->rows > INT32_MAX || h->cols > INT32_MAX || h->nnz > INT32_MAX))
        index_dtype = KILN_INT64;
    kiln_array *mj = NULL, *mn = NULL, *data = NULL;
    kiln_status s = upload_indices(ctx, h->major, nmajor, index_dtype, &mj);
    if (s == KILN_OK) s = upload_indices(ctx, h->minor, h->nnz, index_dtype, &mn);
    void *raw = NULL;
    if (s == KILN_OK) {
        raw = malloc((size_t)(h->nnz > 0 ? h->nnz : 1) * kiln_dtype_size(dtype));
        if (!raw)
            s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %lld values",
                               (long long)h->nnz);
    }
    if (s == KILN_OK) {
        int64_t n = h->nnz;
        sparse_values_narrow(h->values, dtype, n, raw);
        s = kiln_array_from_host(ctx, dtype, 1, &n, raw, (size_t)n * kiln_dtype_size(dtype), &data);
    }
    free(raw);
    if (s == KILN_OK) s = sparse_wrap(h->format, h->rows, h->cols, mj, mn, data, sorted, canonical, out);
    kiln_array_release(mj);
    kiln_array_release(mn);
    kiln_array_release(data);
    return s;
}

kiln_status sparse_host_expand(const sparse_host *h, int64_t **out) {
    int64_t nmajor = h->format == KILN_SPARSE_CSR ? h->rows : h->cols;
    int64_t *m = malloc(sizeof *m * (size_t)(h->nnz > 0 ? h->nnz : 1));
    if (!m)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %lld indices",
                              (long long)h->nnz);
    for (int64_t i = 0; i < nmajor; i++)
        for (int64_t k = h->major[i]; k < h->major[i + 1]; k++) m[k] = i;
    *out = m;
    return KILN_OK;
}

/* Two stable counting sorts, by minor then by major, leave the entries in
 * major order with minor indices sorted in each slice and duplicates next
 * to each other, in O(n + nmajor + nminor); the duplicates are then summed
 * in place. */
kiln_status sparse_host_compress(int64_t nmajor, int64_t nminor, const int64_t *major, const int64_t *minor,
                                 const double *values, int64_t n, int drop_zeros, sparse_host *out) {
    size_t nn = (size_t)(n > 0 ? n : 1);
    int64_t *ptr = calloc((size_t)nmajor + 1, sizeof *ptr),
            *count = calloc((size_t)nminor + 1, sizeof *count);
    int64_t *order = malloc(nn * sizeof *order), *order2 = malloc(nn * sizeof *order2);
    int64_t *idx = malloc(nn * sizeof *idx);
    double *val = malloc(2 * nn * sizeof *val);
    if (!ptr || !count || !order || !order2 || !idx || !val) {
        free(ptr), free(count), free(order), free(order2), free(idx), free(val);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %lld sparse entries",
                              (long long)n);
    }
    for (int64_t k = 0; k < n; k++) count[minor[k] + 1]++;
    for (int64_t j = 0; j < nminor; j++) count[j + 1] += count[j];
    for (int64_t k = 0; k < n; k++) order[count[minor[k]]++] = k;
    for (int64_t k = 0; k < n; k++) ptr[major[k] + 1]++;
    for (int64_t i = 0; i < nmajor; i++) ptr[i + 1] += ptr[i];
    /* ptr[i] is now where slice i starts; a cursor per slice places the
     * entries, taken in minor order */
    int64_t *start = malloc(((size_t)nmajor + 1) * sizeof *start);
    if (!start) {
        free(ptr), free(count), free(order), free(order2), free(idx), free(val);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %lld slices",
                              (long long)nmajor);
    }
    memcpy(start, ptr, ((size_t)nmajor + 1) * sizeof *start);
    for (int64_t q = 0; q < n; q++) {
        int64_t k = order[q];
        order2[start[major[k]]++] = k;
    }
    /* sum duplicates, slice by slice, writing packed */
    int64_t w = 0;
    for (int64_t i = 0; i < nmajor; i++) {
        int64_t begin = ptr[i], end = ptr[i + 1];
        ptr[i] = w;
        for (int64_t q = begin; q < end;) {
            int64_t k = order2[q], j = minor[k];
            double re = values[2 * k], im = values[2 * k + 1];
            for (q++; q < end && minor[order2[q]] == j; q++) {
                re += values[2 * order2[q]];
                im += values[2 * order2[q] + 1];
            }
            if (drop_zeros && re == 0 && im == 0) continue;
            idx[w] = j;
            val[2 * w] = re;
            val[2 * w + 1] = im;
            w++;
        }
    }
    ptr[nmajor] = w;
    free(start), free(count), free(order), free(order2);
    memset(out, 0, sizeof *out);
    out->major = ptr;
    out->minor = idx;
    out->values = val;
    out->nnz = w;
    return KILN_OK;
}
