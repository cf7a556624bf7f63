/* cuda_cusparse.c: the CUDA provider, cuSPARSE's generic API through
 * dlopen. One handle per context (made on first use with the context
 * current, used by one thread at a time), bound to the call's stream each
 * call. CSR matrices (a CSC one as the transpose of its CSR storage) and,
 * for SpMV, COO matrices in row-major order go to cuSPARSE as they are.
 * Descriptors are made per call over kiln's arrays (host-side work of a
 * microsecond; the product itself is queued and not waited for), and a
 * workspace, when cuSPARSE asks for one, comes from the stream-ordered pool
 * and goes back to it after the call in the stream's order. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/dynlib.h"
#include "core/error.h"
#include "prof/prof.h"
#include "sparse/sparse.h"

enum {
    CUSPARSE_STATUS_SUCCESS = 0,
    CUSPARSE_STATUS_ALLOC_FAILED = 2,
    CUSPARSE_INDEX_32I = 2,
    CUSPARSE_INDEX_64I = 3,
    CUSPARSE_INDEX_BASE_ZERO = 0,
    CUSPARSE_OPERATION_NON_TRANSPOSE = 0,
    CUSPARSE_OPERATION_TRANSPOSE = 1,
    CUSPARSE_ORDER_ROW = 2,
    CUSPARSE_SPMV_ALG_DEFAULT = 0,
    CUSPARSE_SPMM_ALG_DEFAULT = 0,
    CUDA_R_32F = 0,
    CUDA_R_64F = 1,
    CUDA_C_32F = 4,
    CUDA_C_64F = 5
};

typedef struct cusparse_table {
#define CUSPARSE_FN(name, params) int(*name) params;
#include "sparse/cusparse_symbols.h"
#undef CUSPARSE_FN
    const char *(*cusparseGetErrorString)(int);
} cusparse_table;

static cusparse_table cs;
static kiln_dynlib cs_lib;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;
static char cs_describe[600];

/* Newest first: a CUDA 13 driver runs both (cuSPARSE 12.x ships with CUDA 12 and 13). */
static const char *const cs_sonames[] = {"libcusparse.so.12", "libcusparse.so.13", "libcusparse.so", NULL};
static const kiln_dynlib_spec cs_spec = {
    .label = "cuSPARSE",
    .sonames = cs_sonames,
    .install_hint =
        "install the CUDA toolkit's cuSPARSE (libcusparse, e.g. apt-get install libcusparse-13-0) "
        "or set CUDA_HOME",
    .search_cuda_dirs = 1,
    .env_override = "KILN_CUSPARSE_LIBRARY",
};

static void cs_load_once(void) {
    const kiln_dynlib_symbol symbols[] = {
#define CUSPARSE_FN(name, params) {#name, (void **)&cs.name, 1},
#include "sparse/cusparse_symbols.h"
#undef CUSPARSE_FN
        {"cusparseGetErrorString", (void **)&cs.cusparseGetErrorString, 0},
    };
    kiln_dynlib_load(&cs_lib, &cs_spec, symbols, sizeof symbols / sizeof symbols[0]);
    if (cs_lib.status == KILN_OK) snprintf(cs_describe, sizeof cs_describe, "cuSPARSE (%s)", cs_lib.path);
}

static kiln_status cs_load(void) {
    pthread_once(&cs_once, cs_load_once);
    if (cs_lib.status == KILN_OK || strstr(cs_lib.why, cs_spec.install_hint))
        return kiln_dynlib_check(&cs_lib);
    return kiln_set_error(cs_lib.status, "%s; %s", cs_lib.why, cs_spec.install_hint);
}

static const char *cs_describe_fn(void) { return cs_describe; }

static kiln_status cs_fail(int status, const char *what) {
    const char *name = cs.cusparseGetErrorString ? cs.cusparseGetErrorString(status) : "?";
    return kiln_set_error(status == CUSPARSE_STATUS_ALLOC_FAILED ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_DRIVER,
                          "cuSPARSE %s failed: status %d (%s)", what, status, name ? name : "?");
}

/* ------------------------------------------------------------ the handle */

typedef struct cs_state {
    pthread_mutex_t lock; /* a cuSPARSE handle is used by one thread at a time */
    void *handle;
} cs_state;

static kiln_status cs_context_init(kiln_context *ctx, void **state) {
    if (!ctx->ops->native_handles)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the %s backend gives no native stream for cuSPARSE",
                              ctx->ops->name);
    kiln_status s = ctx->ops->native_handles(ctx->state, NULL, NULL, NULL); /* makes the context current */
    if (s != KILN_OK) return kiln_context_note(ctx, s);
    cs_state *st = calloc(1, sizeof *st);
    if (!st) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for the cuSPARSE handle");
    int rc = cs.cusparseCreate(&st->handle);
    if (rc != CUSPARSE_STATUS_SUCCESS) {
        free(st);
        return cs_fail(rc, "cusparseCreate");
    }
    pthread_mutex_init(&st->lock, NULL);
    *state = st;
    return KILN_OK;
}

static void cs_context_release(kiln_context *ctx, void *state) {
    cs_state *st = state;
    /* cusparseDestroy needs the context current; if that fails the handle
     * dies with the context. */
    if (ctx->ops->native_handles(ctx->state, NULL, NULL, NULL) == KILN_OK)
        (void)cs.cusparseDestroy(st->handle);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

/* The handle, locked and bound to the stream's CUstream; unlock after. */
static kiln_status cs_lock(kiln_context *ctx, cs_state *st, kiln_stream *stream) {
    void *native_stream = NULL;
    kiln_status s = ctx->ops->native_handles(ctx->state, kiln_stream_impl(stream), NULL, &native_stream);
    if (s != KILN_OK) return kiln_context_note(ctx, s);
    pthread_mutex_lock(&st->lock);
    int rc = cs.cusparseSetStream(st->handle, native_stream);
    if (rc != CUSPARSE_STATUS_SUCCESS) {
        pthread_mutex_unlock(&st->lock);
        return cs_fail(rc, "cusparseSetStream");
    }
    return KILN_OK;
}

static int cuda_type(kiln_dtype t) {
    return t == KILN_FLOAT32     ? CUDA_R_32F
           : t == KILN_FLOAT64   ? CUDA_R_64F
           : t == KILN_COMPLEX64 ? CUDA_C_32F
                                 : CUDA_C_64F;
}

/* alpha and beta as cuSPARSE reads them (host pointer mode): the value
 * dtype's own layout. */
typedef union cs_scalar {
    float f[2];
    double d[2];
} cs_scalar;

static cs_scalar scalar_of(kiln_dtype t, kiln_blas_scalar v) {
    cs_scalar s;
    if (t == KILN_FLOAT32 || t == KILN_COMPLEX64) {
        s.f[0] = (float)v.re;
        s.f[1] = (float)v.im;
    } else {
        s.d[0] = v.re;
        s.d[1] = v.im;
    }
    return s;
}

/* CSR, or COO in row-major order (cuSPARSE's COO SpMV adds duplicates). */
static int csr_descriptor(const sparse_csr *a, void **out) {
    int it = a->index_dtype == KILN_INT64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
    if (a->coo)
        return cs.cusparseCreateCoo(out, a->rows, a->cols, a->nnz, kiln_array_data(a->indptr),
                                    kiln_array_data(a->indices), kiln_array_data(a->data), it,
                                    CUSPARSE_INDEX_BASE_ZERO, cuda_type(a->dtype));
    return cs.cusparseCreateCsr(out, a->rows, a->cols, a->nnz, kiln_array_data(a->indptr),
                                kiln_array_data(a->indices), kiln_array_data(a->data), it, it,
                                CUSPARSE_INDEX_BASE_ZERO, cuda_type(a->dtype));
}

/* The workspace cuSPARSE asked for, from the pool in the stream's order. */
static kiln_status workspace(kiln_context *ctx, kiln_stream *stream, size_t bytes, void **out) {
    *out = NULL;
    if (bytes == 0) return KILN_OK;
    return ctx->ops->mem_alloc(ctx->state, bytes, kiln_stream_impl(stream), out);
}

static struct kiln_prof_op *prof_begin(kiln_context *ctx, kiln_stream *stream, const char *op,
                                       const sparse_csr *a, int64_t n) {
    if (!KILN_PROF_ON(ctx)) return NULL;
    char name[128], desc[160] = "";
    snprintf(name, sizeof name, "sparse %s %s [cuSPARSE]", op, kiln_dtype_name(a->dtype));
    if (KILN_PROF_WANTS_ARGS(ctx))
        snprintf(desc, sizeof desc, "%s (%lld, %lld) nnz %lld%s, n %lld", a->coo ? "COO" : "CSR",
                 (long long)a->rows, (long long)a->cols, (long long)a->nnz,
                 a->transposed ? " transposed" : "", (long long)n);
    return kiln_prof_library_begin(ctx, name, kiln_stream_impl(stream), desc,
                                   2.0 * (double)a->nnz * (double)n);
}

static kiln_status cs_spmv(kiln_context *ctx, void *state, kiln_stream *stream, const sparse_csr *a,
                           kiln_blas_scalar alpha, kiln_array *x, kiln_blas_scalar beta, kiln_array *y) {
    cs_state *st = state;
    kiln_status s = cs_lock(ctx, st, stream);
    if (s != KILN_OK) return s;
    struct kiln_prof_op *rec = prof_begin(ctx, stream, "spmv", a, 1);
    int t = cuda_type(a->dtype),
        op = a->transposed ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
    cs_scalar al = scalar_of(a->dtype, alpha), be = scalar_of(a->dtype, beta);
    void *mat = NULL, *vx = NULL, *vy = NULL, *buf = NULL;
    size_t bytes = 0;
    const char *what = a->coo ? "cusparseCreateCoo" : "cusparseCreateCsr";
    int rc = csr_descriptor(a, &mat);
    if (rc == CUSPARSE_STATUS_SUCCESS) {
        what = "cusparseCreateDnVec";
        rc = cs.cusparseCreateDnVec(&vx, kiln_array_size(x), kiln_array_data(x), t);
    }
    if (rc == CUSPARSE_STATUS_SUCCESS)
        rc = cs.cusparseCreateDnVec(&vy, kiln_array_size(y), kiln_array_data(y), t);
    if (rc == CUSPARSE_STATUS_SUCCESS) {
        what = "cusparseSpMV_bufferSize";
        rc = cs.cusparseSpMV_bufferSize(st->handle, op, &al, mat, vx, &be, vy, t, CUSPARSE_SPMV_ALG_DEFAULT,
                                        &bytes);
    }
    if (rc == CUSPARSE_STATUS_SUCCESS) s = workspace(ctx, stream, bytes, &buf);
    if (rc == CUSPARSE_STATUS_SUCCESS && s == KILN_OK) {
        what = "cusparseSpMV";
        rc = cs.cusparseSpMV(st->handle, op, &al, mat, vx, &be, vy, t, CUSPARSE_SPMV_ALG_DEFAULT, buf);
    }
    if (buf) ctx->ops->mem_free(ctx->state, buf, kiln_stream_impl(stream));
    if (vy) cs.cusparseDestroyDnVec(vy);
    if (vx) cs.cusparseDestroyDnVec(vx);
    if (mat) cs.cusparseDestroySpMat(mat);
    pthread_mutex_unlock(&st->lock);
    if (rec) kiln_prof_end(ctx, rec);
    if (s != KILN_OK) return s;
    return rc == CUSPARSE_STATUS_SUCCESS ? KILN_OK : cs_fail(rc, what);
}

/* b and c arrive C-contiguous (the front stages others): row-major dense
 * matrices with their row length as the leading dimension. */
static kiln_status cs_spmm(kiln_context *ctx, void *state, kiln_stream *stream, const sparse_csr *a,
                           kiln_blas_scalar alpha, kiln_array *b, kiln_blas_scalar beta, kiln_array *c) {
    cs_state *st = state;
    kiln_status s = cs_lock(ctx, st, stream);
    if (s != KILN_OK) return s;
    int64_t n = kiln_array_shape(b)[1];
    struct kiln_prof_op *rec = prof_begin(ctx, stream, "spmm", a, n);
    int t = cuda_type(a->dtype),
        op = a->transposed ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
    cs_scalar al = scalar_of(a->dtype, alpha), be = scalar_of(a->dtype, beta);
    void *mat = NULL, *mb = NULL, *mc = NULL, *buf = NULL;
    size_t bytes = 0;
    const char *what = "cusparseCreateCsr";
    int rc = csr_descriptor(a, &mat);
    if (rc == CUSPARSE_STATUS_SUCCESS) {
        what = "cusparseCreateDnMat";
        rc = cs.cusparseCreateDnMat(&mb, kiln_array_shape(b)[0], n, n, kiln_array_data(b), t,
                                    CUSPARSE_ORDER_ROW);
    }
    if (rc == CUSPARSE_STATUS_SUCCESS)
        rc = cs.cusparseCreateDnMat(&mc, kiln_array_shape(c)[0], n, n, kiln_array_data(c), t,
                                    CUSPARSE_ORDER_ROW);
    if (rc == CUSPARSE_STATUS_SUCCESS) {
        what = "cusparseSpMM_bufferSize";
        rc = cs.cusparseSpMM_bufferSize(st->handle, op, CUSPARSE_OPERATION_NON_TRANSPOSE, &al, mat, mb, &be,
                                        mc, t, CUSPARSE_SPMM_ALG_DEFAULT, &bytes);
    }
    if (rc == CUSPARSE_STATUS_SUCCESS) s = workspace(ctx, stream, bytes, &buf);
    if (rc == CUSPARSE_STATUS_SUCCESS && s == KILN_OK) {
        what = "cusparseSpMM";
        rc = cs.cusparseSpMM(st->handle, op, CUSPARSE_OPERATION_NON_TRANSPOSE, &al, mat, mb, &be, mc, t,
                             CUSPARSE_SPMM_ALG_DEFAULT, buf);
    }
    if (buf) ctx->ops->mem_free(ctx->state, buf, kiln_stream_impl(stream));
    if (mc) cs.cusparseDestroyDnMat(mc);
    if (mb) cs.cusparseDestroyDnMat(mb);
    if (mat) cs.cusparseDestroySpMat(mat);
    pthread_mutex_unlock(&st->lock);
    if (rec) kiln_prof_end(ctx, rec);
    if (s != KILN_OK) return s;
    return rc == CUSPARSE_STATUS_SUCCESS ? KILN_OK : cs_fail(rc, what);
}

const sparse_provider kiln_sparse_cusparse_provider = {
    .base =
        {
            .abi = KILN_PROVIDER_ABI,
            .library = "sparse",
            .name = "cuSPARSE",
            .backends = KILN_PROVIDER_ON(KILN_BACKEND_CUDA),
            .load = cs_load,
            .describe = cs_describe_fn,
            .context_init = cs_context_init,
            .context_release = cs_context_release,
        },
    .takes_transposed = 1,
    .takes_strided_vectors = 0,
    .takes_strided_matrices = 0,
    .takes_sorted_coo = 1,
    .spmv = cs_spmv,
    .spmm = cs_spmm,
};
