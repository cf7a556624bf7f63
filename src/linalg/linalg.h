/* linalg.h: the front of src/linalg (kiln_solve, kiln_qr, kiln_svd, ...)
 * and its two providers behind one table: cuSOLVER's dense API on CUDA
 * contexts (cuda_cusolver.c), LAPACK through LAPACKE on CPU contexts
 * (cpu_lapacke.c).
 *
 * Every problem reaches a provider in LAPACK's column-major terms, as a
 * contiguous batch of matrices in the context's memory: the front has made
 * the working copy (a routine works in place, and the user's array is
 * never written) in whichever orientation lets the factor be read back
 * row-major with the fewest copies (linalg_lu.c and the others say which).
 * A provider only translates dtypes, loops or batches, and reports each
 * matrix's LAPACK `info` on the host. */
#ifndef KILN_LINALG_LINALG_H
#define KILN_LINALG_LINALG_H

#include <stdint.h>

#include "core/context.h"
#include "core/error.h"
#include "core/provider.h"
#include "kiln.h"

/* `batch` column-major matrices of m rows and n columns, lda = m, one after
 * another (m*n elements apart) from `a` (device memory of the context).
 * info: host, batch entries, each matrix's LAPACK info (0: success). */
typedef struct linalg_job {
    kiln_dtype dtype;
    int64_t batch, m, n;
    void *a;
    int32_t *info;
} linalg_job;

typedef struct linalg_provider {
    kiln_provider base;     /* first: the one provider shape */
    int pivot_bytes;        /* getrf's pivots: 4 (LAPACK's int) or 8 (cuSOLVER's int64) */
    int svd_needs_tall;     /* gesvd only takes m >= n (cuSOLVER): the front transposes wide ones */
    int potrf_lower_faster; /* potrf 'L' beats 'U' by more than a transposing copy (cuSOLVER) */
    int host_memory;        /* the context's memory is the host's (CPU): layout copies by kiln's host
                               copy, else kiln's tiled transpose kernel */
    /* P A = L U in place (m == n); ipiv: batch * n pivots (1-based). */
    kiln_status (*getrf)(kiln_context *ctx, void *state, const linalg_job *j, void *ipiv);
    /* Solves op(A) X = B with getrf's factors of j (n x n); b: batch
     * matrices n x nrhs, n*nrhs apart. trans: 'N' or 'T'. info is set. */
    kiln_status (*getrs)(kiln_context *ctx, void *state, const linalg_job *j, const void *ipiv, char trans,
                         int64_t nrhs, void *b);
    /* Cholesky in place (m == n); uplo 'U' (A = U^H U) or 'L'. */
    kiln_status (*potrf)(kiln_context *ctx, void *state, const linalg_job *j, char uplo);
    /* Householder QR in place; tau: batch * min(m, n). */
    kiln_status (*geqrf)(kiln_context *ctx, void *state, const linalg_job *j, void *tau);
    /* Q from geqrf's reflectors: j is m x n (n <= m columns of Q wanted),
     * the first k columns holding the reflectors; tau: batch * k, k apart. */
    kiln_status (*orgqr)(kiln_context *ctx, void *state, const linalg_job *j, int64_t k, const void *tau);
    /* A = U S VT; job 'A' (U m x m, VT n x n), 'S' (U m x k, VT k x n,
     * k = min(m, n)), 'N' (neither; u, vt ignored); s: batch * k, real. */
    kiln_status (*gesvd)(kiln_context *ctx, void *state, const linalg_job *j, char job, void *s, void *u,
                         void *vt);
    /* Eigenvalues (ascending, real, batch * n into w) and, with vectors,
     * the eigenvectors over A (columns), of the Hermitian matrix whose
     * `uplo` triangle A holds. */
    kiln_status (*syevd)(kiln_context *ctx, void *state, const linalg_job *j, int vectors, char uplo,
                         void *w);
    /* Optional (NULL: kiln's kernels do it on the device): in the row-major
     * view of j's memory (batch matrices of m rows and n columns), zero
     * the strictly lower (keep_upper) or strictly upper triangle; or make
     * identities (eye, m == n). For memory the host writes as cheaply as a
     * kernel launch would (the CPU's). */
    void (*triangle)(const linalg_job *j, int keep_upper);
    void (*eye)(const linalg_job *j);
} linalg_provider;

const linalg_provider *kiln_linalg_lapacke_provider(void);
const linalg_provider *kiln_linalg_cusolver_provider(void);

/* ------------------------------------------------------------ the front (linalg_front.c) */

/* One call's context: its provider (loaded) and the provider's state. */
typedef struct linalg_call {
    kiln_context *ctx;
    const char *op; /* "solve", for messages and the profile */
    const linalg_provider *p;
    void *state;
    int host_loops; /* layout work by host loops and copies (p->host_memory, unless
                       KILN_LINALG_HOST_LOOPS=0 asks for the device path's kernels) */
} linalg_call;

/* Checks `a` is a stack of matrices (ndim >= 2; square when `square`) of a
 * dtype the libraries take, picks the provider. */
kiln_status kiln_linalg_begin(const char *op, kiln_array *a, int square, linalg_call *call);

/* What kiln_linalg_copy writes. */
typedef enum linalg_copy_kind {
    LINALG_COPY_PLAIN = 0,
    LINALG_COPY_TRANSPOSED = 1, /* then rows = a's cols */
    /* Transposed, and where kiln's tiled kernel copies (device memory)
     * only the 32 x 32 tiles on and above the diagonal: a's lower
     * triangle, all that potrf 'L' reads of a column-major copy; the
     * tiles below are left as the allocation had them. */
    LINALG_COPY_TRANSPOSED_UPPER = 2
} linalg_copy_kind;
/* A new contiguous array of shape batch + (rows, cols) holding `a`'s last
 * two dims broadcast over batch (ndim_batch dims), as `kind` says. */
kiln_status kiln_linalg_copy(const linalg_call *call, kiln_array *a, int ndim_batch, const int64_t *batch,
                             linalg_copy_kind kind, kiln_array **out);
/* A new contiguous array for a library to work in: its memory runs on
 * for KILN_LINALG_PAD_BYTES past the last element, which OpenBLAS's
 * vector kernels may read (cgemv_n on AVX-512, inside cgesdd, reads past
 * the end of its matrix: a fault when the end is a page's). */
#define KILN_LINALG_PAD_BYTES 1024
kiln_status kiln_linalg_empty(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                              kiln_array **out);
/* A new contiguous array of w's elements with its last two dims swapped. */
kiln_status kiln_linalg_transposed(const linalg_call *call, kiln_array *w, kiln_array **out);
/* dst (contiguous) = src (same shape, any strides) with kiln's tiled
 * transpose kernel when src's last dim is the slower one in memory (a
 * transposed view) and its batch dims fold into one stride; else
 * KILN_ERR_UNSUPPORTED with no message (the caller copies otherwise).
 * upper_only: the tiles below the diagonal are skipped. */
kiln_status kiln_linalg_transpose_copy(const linalg_call *call, kiln_array *dst, kiln_array *src,
                                       int upper_only);
/* A view of `a` (same memory from element 0) with this shape, C order. */
kiln_status kiln_linalg_view(kiln_array *a, int ndim, const int64_t *shape, kiln_array **out);

/* The error for a nonzero info: "<op>: <what> (matrix (1, 2) of the batch
 * ..., LAPACK info i)" with KILN_ERR_LINALG; KILN_OK when all are 0. A
 * negative info (an argument the library refused) is KILN_ERR_INTERNAL. */
kiln_status kiln_linalg_check_info(const linalg_call *call, const int32_t *info, int64_t batch,
                                   int ndim_batch, const int64_t *batch_shape, const char *what);

/* The real dtype of a (complex) dtype. */
kiln_dtype kiln_linalg_real_dtype(kiln_dtype t);

/* Profiling: "linalg <op> <routine> <dtype> [<provider>]" ("linalg solve
 * getrf float64 [cuSOLVER]"). NULL when off. */
struct kiln_prof_op *kiln_linalg_prof_begin(const linalg_call *call, const char *routine, kiln_dtype dtype,
                                            double flops, const char *shape_desc);
void kiln_linalg_prof_end(const linalg_call *call, struct kiln_prof_op *op);

/* ------------------------------------------------------------ kiln's kernels (linalg_kernels.c) */

/* Zeroes the strictly lower (keep_upper) or strictly upper triangle of each
 * row-major rows x cols matrix of the contiguous array a (batch matrices). */
kiln_status kiln_linalg_triangle(linalg_call *call, kiln_array *a, int64_t batch, int64_t rows, int64_t cols,
                                 int keep_upper);
/* w (contiguous, batch n x n) holds potrf 'L''s factors column-major:
 * rewrites each row-major in place, zeros above the diagonal. */
kiln_status kiln_linalg_lower_from_colmajor(linalg_call *call, kiln_array *w, int64_t batch, int64_t n);
/* Sets a (contiguous, batch n x n matrices) to identities. */
kiln_status kiln_linalg_eye(linalg_call *call, kiln_array *a, int64_t batch, int64_t n);
/* From getrf's factors: det (dtype of lu) or sign and log|det| (logabs
 * real); every output holds `batch` values. */
kiln_status kiln_linalg_lu_det(linalg_call *call, kiln_array *lu, kiln_array *ipiv, int64_t batch, int64_t n,
                               kiln_array *det, kiln_array *sign, kiln_array *logabs);
/* a[i, j] *= s[j] over a contiguous rows x cols a (s real, cols values). */
kiln_status kiln_linalg_scale_columns(linalg_call *call, kiln_array *a, int64_t rows, int64_t cols,
                                      kiln_array *s);
/* out[j] = sum_i |r[i, j]|^2 over a contiguous rows x cols r (out real). */
kiln_status kiln_linalg_column_norms2(linalg_call *call, kiln_array *r, int64_t rows, int64_t cols,
                                      kiln_array *out);

#endif
