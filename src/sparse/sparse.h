/* sparse.h: the insides of src/sparse. A kiln_sparse is three kiln arrays
 * (compressed pointers or row indices, minor indices, values) and a shape;
 * the front (sparse_*.c) checks and converts, and two providers behind one
 * table compute the products: cuSPARSE on CUDA contexts (cuda_cusparse.c),
 * kiln's own CSR kernels on CPU contexts (cpu_csr.c).
 *
 * Structural work (checks, COO -> CSR, sums, dense <-> sparse) is done on
 * the host over copies of the components (sparse_host.c): it is linear in
 * the stored entries and runs once per matrix, where SpMV and SpMM run many
 * times and stay on the device. */
#ifndef KILN_SPARSE_SPARSE_H
#define KILN_SPARSE_SPARSE_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/provider.h"
#include "kiln.h"

struct kiln_sparse {
    atomic_int refs;
    kiln_sparse_format format;
    int64_t rows, cols; /* the matrix's shape (a CSC matrix's too, not its storage's) */
    int64_t nnz;        /* stored entries, duplicates of a COO matrix included */
    kiln_dtype dtype, index_dtype;
    /* CSR: indptr (rows + 1) and column indices; CSC: indptr (cols + 1) and
     * row indices; COO: row and column indices. 1-d, contiguous. */
    kiln_array *major, *minor;
    kiln_array *data; /* nnz values, 1-d, contiguous */
    int sorted;       /* CSR/CSC: minor indices non-decreasing in every slice; COO: row-major order */
    int canonical;    /* sorted, and no entry twice */
};

/* An index array (int32 or int64) read to the host as int64 (caller frees). */
kiln_status sparse_read_indices(kiln_array *a, int64_t **out);

/* Host copies of a matrix's components, as int64 indices and values widened
 * to complex double (im 0 for real dtypes), for the structural algorithms. */
typedef struct sparse_host {
    int64_t rows, cols, nnz;
    kiln_sparse_format format;
    int64_t *major; /* CSR/CSC: nmajor + 1 pointers; COO: nnz rows */
    int64_t *minor; /* nnz */
    double *values; /* 2 * nnz: re, im */
} sparse_host;

/* The components of `a` on the host (release with sparse_host_free). */
kiln_status sparse_host_read(kiln_sparse *a, sparse_host *out);
void sparse_host_free(sparse_host *h);
/* A new matrix on ctx from host components: indices stored as index_dtype,
 * values as dtype; flags sorted/canonical as given (not rechecked). */
kiln_status sparse_host_upload(kiln_context *ctx, const sparse_host *h, kiln_dtype dtype,
                               kiln_dtype index_dtype, int sorted, int canonical, kiln_sparse **out);

/* Values of dtype t (any numeric dtype) widened to (re, im) doubles, and back. */
void sparse_values_widen(const void *src, kiln_dtype t, int64_t n, double *dst);
void sparse_values_narrow(const double *src, kiln_dtype t, int64_t n, void *dst);

/* Structural algorithms on host components (sparse_host_ops.c); each fills
 * *out with new buffers. */
/* Entries (major[k], minor[k], values[k]) compressed by major into a
 * canonical matrix: minor indices sorted in each slice, duplicates summed
 * (entries summing to exactly zero dropped when drop_zeros). out->format
 * says CSR or CSC, and rows/cols are set by the caller. */
kiln_status sparse_host_compress(int64_t nmajor, int64_t nminor, const int64_t *major, const int64_t *minor,
                                 const double *values, int64_t n, int drop_zeros, sparse_host *out);
/* The major index of every entry of a compressed matrix (nnz entries). */
kiln_status sparse_host_expand(const sparse_host *h, int64_t **out);

/* A new kiln_sparse taking one reference to each array (no checks). */
kiln_status sparse_wrap(kiln_sparse_format format, int64_t rows, int64_t cols, kiln_array *major,
                        kiln_array *minor, kiln_array *data, int sorted, int canonical, kiln_sparse **out);

/* Checks components as SciPy's check_format(full_check=True) does and
 * says whether the minor indices are sorted (and canonical). nmajor is the
 * number of compressed slices (CSR rows, CSC columns); COO: major are rows. */
kiln_status sparse_check_components(kiln_sparse_format format, int64_t rows, int64_t cols, kiln_array *major,
                                    kiln_array *minor, kiln_array *data, int *sorted, int *canonical);

/* A value dtype kiln's sparse matrices hold: float32/64, complex64/128. */
int sparse_value_dtype(kiln_dtype t);
/* NumPy's result dtype of a sparse value dtype and any numeric dtype, as
 * SciPy's upcast gives it; KILN_DTYPE_COUNT when there is none. */
kiln_dtype sparse_result_dtype(kiln_dtype a, kiln_dtype b);
/* The same matrix with values of dtype `to` (a new reference to a itself when
 * it already has it). */
kiln_status sparse_astype(kiln_sparse *a, kiln_dtype to, kiln_sparse **out);
/* a's values times scale (re, im; NULL: 1) as a new 1-d array of dtype `to`. */
kiln_status sparse_scaled_values(kiln_sparse *a, kiln_dtype to, const double *scale, kiln_array **out);
/* A dense array of dtype `to` with a's values (a new reference to a when it
 * already has that dtype). */
kiln_status sparse_array_astype(kiln_array *a, kiln_dtype to, kiln_array **out);

/* ------------------------------------------------------------ providers */

/* A CSR operand as providers take it: op(A) with A (rows x cols) stored as
 * CSR, transposed 1 when the operand is A^T (a CSC matrix). coo 1: A is a
 * COO matrix in row-major order instead, `indptr` its row indices (one per
 * entry), for providers that take one. */
typedef struct sparse_csr {
    int64_t rows, cols, nnz;
    kiln_dtype dtype, index_dtype;
    kiln_array *indptr, *indices, *data;
    int transposed;
    int coo;
} sparse_csr;

typedef struct sparse_provider {
    kiln_provider base; /* first: the one provider shape */
    /* What the provider takes as it is; the front converts or stages the rest. */
    int takes_transposed;       /* spmv with op(A) = A^T (spmm always gets A) */
    int takes_strided_vectors;  /* x and y of spmv with any element stride */
    int takes_strided_matrices; /* b and c of spmm with any strides (else C-contiguous) */
    int takes_sorted_coo;       /* spmv of a COO matrix in row-major order, duplicates summed */
    /* y = alpha op(A) x + beta y; one dtype for all; beta 0 ignores y. */
    kiln_status (*spmv)(kiln_context *ctx, void *state, kiln_stream *stream, const sparse_csr *a,
                        kiln_blas_scalar alpha, kiln_array *x, kiln_blas_scalar beta, kiln_array *y);
    /* c = alpha op(A) b + beta c, b and c 2-d. */
    kiln_status (*spmm)(kiln_context *ctx, void *state, kiln_stream *stream, const sparse_csr *a,
                        kiln_blas_scalar alpha, kiln_array *b, kiln_blas_scalar beta, kiln_array *c);
} sparse_provider;

extern const sparse_provider kiln_sparse_cusparse_provider;
extern const sparse_provider kiln_sparse_cpu_provider;

/* The provider for ctx's backend, loaded, and its per-context state. */
kiln_status sparse_provider_for(kiln_context *ctx, const sparse_provider **out, void **state);

#endif
