/* blas_internal.h: the front of src/blas (kiln_matmul, kiln_gemm, level 1-2)
 * and its two providers behind one table: cuBLAS on CUDA contexts
 * (cuda_cublas.c), OpenBLAS's CBLAS on CPU contexts (cpu_openblas.c),
 * chosen by kiln_provider_select; what differs between them is asked of the
 * table (capturable, half_gemm), never of the backend.
 *
 * Every problem reaches a provider in the libraries' column-major terms:
 * the front has already turned kiln's row-major views into transpose flags,
 * leading dimensions and batch strides (blas_layout.c), so a provider only
 * translates dtypes and calls. Sizes are in elements and fit in int32. */
#ifndef KILN_BLAS_INTERNAL_H
#define KILN_BLAS_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "core/context.h"
#include "core/error.h"
#include "core/provider.h"
#include "kiln.h"

/* One operand of a column-major gemm as stored: op(X) with X ld x ... */
typedef struct blas_operand {
    const char *data;
    int trans;            /* 0: N, 1: T */
    int conj;             /* with trans 1: conjugate transpose (complex dtypes; never with trans 0) */
    int64_t ld;           /* leading dimension of the stored matrix */
    int64_t batch_stride; /* elements between consecutive batch entries; 0 broadcasts */
} blas_operand;

/* C (m x n, column-major) = alpha op(A) (m x k) op(B) (k x n) + beta C,
 * `batch` times with the strides given. */
typedef struct blas_gemm_problem {
    kiln_dtype dtype;
    int64_t m, n, k, batch;
    blas_operand a, b;
    char *c;
    int64_t ldc, stride_c;
    kiln_blas_scalar alpha, beta;
    int allow_tf32;
} blas_gemm_problem;

/* y = alpha op(A) x + beta y, A m x n column-major as stored; incs > 0. */
typedef struct blas_gemv_problem {
    kiln_dtype dtype;
    int trans;
    int conj; /* with trans 1: conjugate transpose */
    int64_t m, n, lda;
    const char *a, *x;
    char *y;
    int64_t incx, incy;
    kiln_blas_scalar alpha, beta;
} blas_gemv_problem;

/* A 1-d operand: data at the lowest address touched, inc > 0. */
typedef struct blas_vector {
    char *data;
    int64_t inc;
} blas_vector;

typedef struct blas_provider {
    kiln_provider base;      /* first (core/provider.h); base.name is the profiler's label */
    const char *batch_label; /* what a batch becomes: "strided-batched", "batch loop" */
    /* kiln's kernel for batches of small products beside this library:
     * 1 the tiled kernel (blas_small.c, a block of products), 0 the gufunc
     * (a thread per product); each has its measured limits per dtype. */
    int small_tiled;
    /* 1: the library queues its work on the stream, so a graph may capture
     * it; 0: it runs inside the call (a CPU library). */
    int capturable;
    /* 1: float16 and bfloat16 gemm in the library; 0: bfloat16 goes
     * through float32 and float16 is refused. */
    int half_gemm;
    kiln_status (*gemm)(kiln_context *ctx, kiln_stream *stream, const blas_gemm_problem *p);
    /* Optional (NULL: the front loops over gemm): p->batch products whose
     * matrices lie anywhere, ptrs = the A, then B, then C addresses (host
     * memory, 3 * p->batch entries); batch strides in p are ignored. */
    kiln_status (*gemm_pointers)(kiln_context *ctx, kiln_stream *stream, const blas_gemm_problem *p,
                                 const void *const *ptrs);
    kiln_status (*gemv)(kiln_context *ctx, kiln_stream *stream, const blas_gemv_problem *p);
    kiln_status (*dot)(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n, blas_vector x,
                       blas_vector y, int conjugate, kiln_blas_scalar *out);
    kiln_status (*axpy)(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n,
                        kiln_blas_scalar alpha, blas_vector x, blas_vector y);
    kiln_status (*scal)(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n,
                        kiln_blas_scalar alpha, blas_vector x);
    kiln_status (*nrm2)(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n, blas_vector x,
                        double *out);
} blas_provider;

/* The providers, in the order the front tries them (kiln_provider_select:
 * the first that serves the context's backend and loads). */
extern const blas_provider kiln_blas_cublas;
extern const blas_provider kiln_blas_openblas;

/* What src/blas keeps per context (a context slot), made on first use. */
typedef struct kiln_blas_state {
    pthread_mutex_t lock;
    const blas_provider *provider;
    kiln_gufunc *small_gemm[2];            /* kiln_blas_small_gemm: float32, float64 */
    kiln_ufunc *convert[KILN_DTYPE_COUNT]; /* the cast of an input to the result dtype, per dtype */
    kiln_ufunc *round_bf16;                /* float32 -> bfloat16 (the CPU's bfloat16 gemm) */
    kiln_ufunc *conjugate;                 /* complex conjugate (conjugated views BLAS cannot take) */
} kiln_blas_state;

/* The context's state with its provider loaded. */
kiln_status kiln_blas_state_get(kiln_context *ctx, kiln_blas_state **out);
/* The small-matrix gufunc for dtype (float32 / float64), compiled on first use. */
kiln_status kiln_blas_small_gemm(kiln_context *ctx, kiln_dtype dtype, kiln_gufunc **out);
/* The conversion ufunc to `dtype` (a floating or complex dtype): one
 * signature dtype(dtype), which every input that casts safely takes. */
kiln_status kiln_blas_converter(kiln_context *ctx, kiln_dtype dtype, kiln_ufunc **out);
/* float32 -> bfloat16, rounded to nearest even. */
kiln_status kiln_blas_bf16_rounder(kiln_context *ctx, kiln_ufunc **out);
/* conj(a) (complex a) on `stream`: into a new contiguous array when *out
 * is NULL ("blas conjugate copy" in the profile, with `why`), else into
 * *out, which may be a itself ("blas conjugate in place"). */
kiln_status kiln_blas_conjugate(kiln_array *a, kiln_stream *stream, const char *why, kiln_array **out);

/* ------------------------------------------------------------ gemm (blas_gemm_core.c) */

/* A stack of row-major matrices: arr's memory (element 0 at arr->data),
 * seen with this shape and these byte strides; the matrix dims are the last
 * two. Batch dims are right-aligned with C's and broadcast (extent 1). */
typedef struct blas_mat {
    kiln_array *arr;
    int conj; /* the operand is the conjugate of this view (complex dtypes) */
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    int64_t strides[KILN_MAX_DIMS];
} blas_mat;

/* C = alpha A B + beta C; C has the full batch shape, one dtype for all;
 * shapes already checked. Picks kiln's kernel or the provider. */
kiln_status kiln_blas_gemm_core(kiln_context *ctx, kiln_stream *stream, int flags, kiln_blas_scalar alpha,
                                blas_mat A, blas_mat B, kiln_blas_scalar beta, blas_mat C);
/* kiln's kernel for batches of small products (blas_small.c): whether it
 * can take a dtype and shape at all (every dim <= 32, the shared memory of
 * one product within a block's), the largest dim at which it is chosen
 * over the library on ctx's backend, and a call: C = alpha A B + beta C
 * (real alpha and beta), batch products at batch_strides (elements of A,
 * B, C) apart. */
int kiln_blas_small_fits(kiln_dtype dtype, int64_t m, int64_t n, int64_t k);
int kiln_blas_small_max_dim(const blas_provider *prov, kiln_dtype dtype);
kiln_status kiln_blas_small_run(kiln_context *ctx, kiln_stream *stream, const blas_mat *A, const blas_mat *B,
                                const blas_mat *C, int64_t batch, const int64_t batch_strides[3],
                                kiln_blas_scalar alpha, kiln_blas_scalar beta);

/* All of `a` as an operand: its own shape and strides, not conjugated. */
blas_mat kiln_blas_mat_whole(kiln_array *a);

/* ------------------------------------------------------------ layouts (blas_layout.c) */

/* A view of `a` with the given shape and strides (bytes) over the same
 * memory, element 0 at a's element 0 + offset_bytes; keeps a alive. */
kiln_status kiln_blas_view(kiln_array *a, int ndim, const int64_t *shape, const int64_t *strides,
                           int64_t offset_bytes, kiln_array **out);

/* How a row-major (rows x cols) matrix with element strides (sr, sc) is
 * stored column-major: as itself (trans_of_rowmajor 0: X = M, ld = sc) or as
 * its transpose (1: X = M^T, ld = sr). 0 when neither fits (copy it). */
int kiln_blas_matrix_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, int *stored_transposed,
                            int64_t *ld);

/* A 1-d operand as BLAS takes it; 0 when its stride is 0 or not a whole
 * number of elements (copy it). `reversed` is 1 for a negative stride:
 * the BLAS vector runs backwards through the kiln array. */
int kiln_blas_vector_layout(const kiln_array *x, blas_vector *out, int *reversed);

/* 1 when a lies in host memory that the context's device cannot read
 * (a backend without KILN_BACKEND_CAP_HOST_MEMORY): the libraries and
 * kiln's kernels take a device copy of it. */
int kiln_blas_host_only(const kiln_array *a);

/* Stages an operand the library cannot take as it is: a contiguous device
 * copy (*copy, caller releases), ordered after `stream`'s work. */
kiln_status kiln_blas_stage(kiln_array *a, kiln_stream *stream, const char *why, kiln_array **copy);

/* ------------------------------------------------------------ profiling (blas_prof.c) */
struct kiln_prof_op;
/* Opens the profiler record of one call: "blas <op> <dtype> [<provider>]"
 * with `shape_desc` and the GFLOP it does in the trace's arguments. NULL
 * when the profiler is off. */
struct kiln_prof_op *kiln_blas_prof_begin(kiln_context *ctx, kiln_stream *stream, const char *op,
                                          kiln_dtype dtype, const char *provider, double flops,
                                          const char *shape_fmt, ...) KILN_PRINTF(7, 8);
void kiln_blas_prof_end(kiln_context *ctx, struct kiln_prof_op *op);

/* Checks a size fits the libraries' int. */
kiln_status kiln_blas_check_int(const char *what, int64_t value);

#endif
