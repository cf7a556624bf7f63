/* cuda_cublas.c: the CUDA provider, cuBLAS through dlopen (it loads its own
 * dependency, cublasLt). One handle per context and kiln stream, made on
 * first use with the context current, pointer mode host, default math (no
 * TF32: float32 gemm is IEEE float32 unless the caller opts in, which goes
 * through cublasGemmEx with the TF32 compute type). cuBLAS allocates its
 * own workspace per handle. Every call first binds the handle to the
 * stream's CUstream (cheap, and safe if a freed stream's address comes
 * back). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas/blas_internal.h"
#include "core/dynlib.h"

enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_POINTER_MODE_HOST = 0,
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_OP_N = 0,
    CUBLAS_OP_T = 1,
    CUBLAS_OP_C = 2,
    CUDA_R_16F = 2,
    CUDA_R_16BF = 14,
    CUDA_R_32F = 0,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    CUBLAS_GEMM_DEFAULT = -1
};

typedef struct cublas_table {
#define CUBLAS_FN(name, params) int(*name) params;
#include "blas/cuda_cublas_symbols.h"
#undef CUBLAS_FN
    const char *(*cublasGetStatusString)(int);
} cublas_table;

static cublas_table cb;
static kiln_dynlib cb_lib;
static pthread_once_t cb_once = PTHREAD_ONCE_INIT;
static char cb_describe[600];

/* Newest first: a CUDA 13 driver runs both. */
static const char *const cb_sonames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
static const kiln_dynlib_spec cb_spec = {
    .label = "cuBLAS",
    .sonames = cb_sonames,
    .install_hint = "install the CUDA toolkit's cuBLAS (libcublas, e.g. apt-get install libcublas-13-0) "
                    "or set CUDA_HOME",
    .search_cuda_dirs = 1,
    .env_override = "KILN_CUBLAS_LIB",
};

static void cb_load_once(void) {
    const kiln_dynlib_symbol symbols[] = {
#define CUBLAS_FN(name, params) {#name, (void **)&cb.name, 1},
#include "blas/cuda_cublas_symbols.h"
#undef CUBLAS_FN
        {"cublasGetStatusString", (void **)&cb.cublasGetStatusString, 0},
    };
    kiln_dynlib_load(&cb_lib, &cb_spec, symbols, sizeof symbols / sizeof symbols[0]);
    if (cb_lib.status == KILN_OK) snprintf(cb_describe, sizeof cb_describe, "cuBLAS (%s)", cb_lib.path);
}

static kiln_status cb_load(void) {
    pthread_once(&cb_once, cb_load_once);
    if (cb_lib.status == KILN_OK || strstr(cb_lib.why, cb_spec.install_hint))
        return kiln_dynlib_check(&cb_lib);
    return kiln_set_error(cb_lib.status, "%s; %s", cb_lib.why, cb_spec.install_hint);
}

static const char *cb_describe_fn(void) { return cb_describe; }

static kiln_status cb_fail(int status, const char *what) {
    const char *name = cb.cublasGetStatusString ? cb.cublasGetStatusString(status) : "?";
    return kiln_set_error(status == CUBLAS_STATUS_ALLOC_FAILED ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_DRIVER,
                          "cuBLAS %s failed: status %d (%s)", what, status, name ? name : "?");
}

/* ------------------------------------------------------------ handles per stream */

typedef struct cb_handle {
    kiln_backend_stream *key;
    void *handle;
    pthread_mutex_t lock; /* a cuBLAS handle is used by one thread at a time */
} cb_handle;

typedef struct cb_state {
    pthread_mutex_t lock;
    cb_handle **handles;
    size_t count, cap;
} cb_state;

static kiln_status cb_context_init(kiln_context *ctx, void **state) {
    (void)ctx;
    cb_state *st = calloc(1, sizeof *st);
    if (!st) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for cuBLAS handles");
    pthread_mutex_init(&st->lock, NULL);
    *state = st;
    return KILN_OK;
}

/* At kiln_close, before the device goes. */
static void cb_context_release(kiln_context *ctx, void *state) {
    cb_state *st = state;
    /* cublasDestroy needs the context current; if that fails the handles
     * die with the context. */
    kiln_status s = ctx->ops->native_handles(ctx->state, NULL, NULL, NULL);
    for (size_t i = 0; i < st->count; i++) {
        if (s == KILN_OK) (void)cb.cublasDestroy_v2(st->handles[i]->handle);
        pthread_mutex_destroy(&st->handles[i]->lock);
        free(st->handles[i]);
    }
    free(st->handles);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static kiln_status cb_state_of(kiln_context *ctx, cb_state **out) {
    return kiln_provider_state(ctx, &kiln_blas_cublas.base, (void **)out);
}

/* The stream's handle, locked and bound to its CUstream with the context
 * current; release with cb_unlock. */
static kiln_status cb_lock(kiln_context *ctx, kiln_stream *stream, cb_handle **out) {
    if (!ctx->ops->native_handles)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the %s backend gives no native stream for cuBLAS",
                              ctx->ops->name);
    cb_state *st;
    kiln_status s = cb_state_of(ctx, &st);
    if (s != KILN_OK) return s;
    void *native_stream = NULL;
    kiln_backend_stream *key = kiln_stream_impl(stream);
    s = ctx->ops->native_handles(ctx->state, key, NULL, &native_stream);
    if (s != KILN_OK) return kiln_context_note(ctx, s);
    pthread_mutex_lock(&st->lock);
    cb_handle *h = NULL;
    for (size_t i = 0; i < st->count && !h; i++)
        if (st->handles[i]->key == key) h = st->handles[i];
    if (!h) {
        if (st->count == st->cap) {
            size_t cap = st->cap ? 2 * st->cap : 4;
            cb_handle **grown = realloc(st->handles, cap * sizeof *grown);
            if (!grown) {
                pthread_mutex_unlock(&st->lock);
                return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for cuBLAS handles");
            }
            st->handles = grown;
            st->cap = cap;
        }
        h = calloc(1, sizeof *h);
        int rc = h ? cb.cublasCreate_v2(&h->handle) : CUBLAS_STATUS_ALLOC_FAILED;
        if (rc == CUBLAS_STATUS_SUCCESS) rc = cb.cublasSetPointerMode_v2(h->handle, CUBLAS_POINTER_MODE_HOST);
        if (rc == CUBLAS_STATUS_SUCCESS) rc = cb.cublasSetMathMode(h->handle, CUBLAS_DEFAULT_MATH);
        if (rc != CUBLAS_STATUS_SUCCESS) {
            if (h && h->handle) (void)cb.cublasDestroy_v2(h->handle);
            free(h);
            pthread_mutex_unlock(&st->lock);
            return cb_fail(rc, "cublasCreate");
        }
        h->key = key;
        pthread_mutex_init(&h->lock, NULL);
        st->handles[st->count++] = h;
    }
    pthread_mutex_unlock(&st->lock);
    pthread_mutex_lock(&h->lock);
    int rc = cb.cublasSetStream_v2(h->handle, native_stream);
    if (rc != CUBLAS_STATUS_SUCCESS) {
        pthread_mutex_unlock(&h->lock);
        return cb_fail(rc, "cublasSetStream");
    }
    *out = h;
    return KILN_OK;
}

static void cb_unlock(cb_handle *h) { pthread_mutex_unlock(&h->lock); }

/* ------------------------------------------------------------ calls */

/* conj comes only with a transpose (the front copies other conjugates) */
static int op(int t, int conj) { return conj ? CUBLAS_OP_C : t ? CUBLAS_OP_T : CUBLAS_OP_N; }

/* The Ex calls' storage type of a dtype they take. */
static int ex_type(kiln_dtype t) {
    return t == KILN_FLOAT16 ? CUDA_R_16F : t == KILN_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* float16 and bfloat16 (and float32 with TF32 allowed) go through the Ex
 * calls: 16-bit storage (A, B and C), float32 accumulation and scalars
 * (CUBLAS_COMPUTE_32F), tensor cores. */
static int cb_gemm_ex(void *h, const blas_gemm_problem *p) {
    int type = ex_type(p->dtype);
    int compute = p->dtype == KILN_FLOAT32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    float alpha = (float)p->alpha.re, beta = (float)p->beta.re;
    int m = (int)p->m, n = (int)p->n, k = (int)p->k;
    if (p->batch == 1)
        return cb.cublasGemmEx(h, op(p->a.trans, p->a.conj), op(p->b.trans, p->b.conj), m, n, k, &alpha,
                               p->a.data, type, (int)p->a.ld, p->b.data, type, (int)p->b.ld, &beta, p->c,
                               type, (int)p->ldc, compute, CUBLAS_GEMM_DEFAULT);
    return cb.cublasGemmStridedBatchedEx(
        h, op(p->a.trans, p->a.conj), op(p->b.trans, p->b.conj), m, n, k, &alpha, p->a.data, type,
        (int)p->a.ld, p->a.batch_stride, p->b.data, type, (int)p->b.ld, p->b.batch_stride, &beta, p->c, type,
        (int)p->ldc, p->stride_c, (int)p->batch, compute, CUBLAS_GEMM_DEFAULT);
}

#define CB_GEMM_(fn, alpha, beta)                                                                            \
    (p->batch == 1                                                                                           \
         ? cb.fn##_v2(h->handle, op(p->a.trans, p->a.conj), op(p->b.trans, p->b.conj), m, n, k, alpha,       \
                      p->a.data, lda, p->b.data, ldb, beta, p->c, ldc)                                       \
         : cb.fn##StridedBatched(h->handle, op(p->a.trans, p->a.conj), op(p->b.trans, p->b.conj), m, n, k,   \
                                 alpha, p->a.data, lda, p->a.batch_stride, p->b.data, ldb,                   \
                                 p->b.batch_stride, beta, p->c, ldc, p->stride_c, (int)p->batch))

static kiln_status cb_gemm(kiln_context *ctx, kiln_stream *stream, const blas_gemm_problem *p) {
    cb_handle *h;
    kiln_status s = cb_lock(ctx, stream, &h);
    if (s != KILN_OK) return s;
    int m = (int)p->m, n = (int)p->n, k = (int)p->k, lda = (int)p->a.ld, ldb = (int)p->b.ld,
        ldc = (int)p->ldc;
    float fa[2] = {(float)p->alpha.re, (float)p->alpha.im}, fb[2] = {(float)p->beta.re, (float)p->beta.im};
    double da[2] = {p->alpha.re, p->alpha.im}, db[2] = {p->beta.re, p->beta.im};
    int rc;
    switch (p->dtype) {
    case KILN_FLOAT16:
    case KILN_BFLOAT16: rc = cb_gemm_ex(h->handle, p); break;
    case KILN_FLOAT32: rc = p->allow_tf32 ? cb_gemm_ex(h->handle, p) : CB_GEMM_(cublasSgemm, fa, fb); break;
    case KILN_FLOAT64: rc = CB_GEMM_(cublasDgemm, da, db); break;
    case KILN_COMPLEX64: rc = CB_GEMM_(cublasCgemm, fa, fb); break;
    case KILN_COMPLEX128: rc = CB_GEMM_(cublasZgemm, da, db); break;
    default:
        cb_unlock(h);
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "cuBLAS gemm: %s is not supported",
                              kiln_dtype_name(p->dtype));
    }
    cb_unlock(h);
    return rc == CUBLAS_STATUS_SUCCESS ? KILN_OK
                                       : cb_fail(rc, p->batch == 1 ? "gemm" : "strided-batched gemm");
}

/* Batches whose strides are not uniform: one batched call over arrays of
 * matrix addresses, which cuBLAS reads from device memory (allocated and
 * freed in the stream's order). */
static kiln_status cb_gemm_pointers(kiln_context *ctx, kiln_stream *stream, const blas_gemm_problem *p,
                                    const void *const *ptrs) {
    size_t bytes = 3 * (size_t)p->batch * sizeof(void *);
    kiln_backend_stream *bs = kiln_stream_impl(stream);
    void *dev = NULL;
    kiln_status s = ctx->ops->mem_alloc(ctx->state, bytes, bs, &dev);
    if (s == KILN_OK) s = ctx->ops->copy(ctx->state, dev, ptrs, bytes, KILN_COPY_HOST_TO_DEVICE, bs, 0);
    cb_handle *h = NULL;
    if (s == KILN_OK) s = cb_lock(ctx, stream, &h);
    if (s != KILN_OK) {
        if (dev) ctx->ops->mem_free(ctx->state, dev, bs);
        return s;
    }
    const void *const *da = (const void *const *)dev, *const *db = da + p->batch;
    void *const *dc = (void *const *)(da + 2 * p->batch);
    int m = (int)p->m, n = (int)p->n, k = (int)p->k, lda = (int)p->a.ld, ldb = (int)p->b.ld,
        ldc = (int)p->ldc;
    int ta = op(p->a.trans, p->a.conj), tb = op(p->b.trans, p->b.conj), count = (int)p->batch, rc = -1;
    float fa[2] = {(float)p->alpha.re, (float)p->alpha.im}, fb[2] = {(float)p->beta.re, (float)p->beta.im};
    double za[2] = {p->alpha.re, p->alpha.im}, zb[2] = {p->beta.re, p->beta.im};
    if (p->dtype == KILN_FLOAT16 || p->dtype == KILN_BFLOAT16 ||
        (p->dtype == KILN_FLOAT32 && p->allow_tf32)) {
        int type = ex_type(p->dtype);
        int compute = p->dtype == KILN_FLOAT32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        rc = cb.cublasGemmBatchedEx(h->handle, ta, tb, m, n, k, fa, da, type, lda, db, type, ldb, fb, dc,
                                    type, ldc, count, compute, CUBLAS_GEMM_DEFAULT);
    } else if (p->dtype == KILN_FLOAT32) {
        rc = cb.cublasSgemmBatched(h->handle, ta, tb, m, n, k, fa, da, lda, db, ldb, fb, dc, ldc, count);
    } else if (p->dtype == KILN_FLOAT64) {
        rc = cb.cublasDgemmBatched(h->handle, ta, tb, m, n, k, za, da, lda, db, ldb, zb, dc, ldc, count);
    } else if (p->dtype == KILN_COMPLEX64) {
        rc = cb.cublasCgemmBatched(h->handle, ta, tb, m, n, k, fa, da, lda, db, ldb, fb, dc, ldc, count);
    } else if (p->dtype == KILN_COMPLEX128) {
        rc = cb.cublasZgemmBatched(h->handle, ta, tb, m, n, k, za, da, lda, db, ldb, zb, dc, ldc, count);
    }
    cb_unlock(h);
    ctx->ops->mem_free(ctx->state, dev, bs); /* after the call, in stream order */
    if (rc == -1)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "cuBLAS batched gemm: %s is not supported",
                              kiln_dtype_name(p->dtype));
    return rc == CUBLAS_STATUS_SUCCESS ? KILN_OK : cb_fail(rc, "batched gemm (pointer arrays)");
}

static kiln_status cb_gemv(kiln_context *ctx, kiln_stream *stream, const blas_gemv_problem *p) {
    cb_handle *h;
    kiln_status s = cb_lock(ctx, stream, &h);
    if (s != KILN_OK) return s;
    int m = (int)p->m, n = (int)p->n, lda = (int)p->lda, ix = (int)p->incx, iy = (int)p->incy;
    float fa[2] = {(float)p->alpha.re, (float)p->alpha.im}, fb[2] = {(float)p->beta.re, (float)p->beta.im};
    double da[2] = {p->alpha.re, p->alpha.im}, db[2] = {p->beta.re, p->beta.im};
    int rc = -1;
    switch (p->dtype) {
    case KILN_FLOAT32:
        rc = cb.cublasSgemv_v2(h->handle, op(p->trans, p->conj), m, n, fa, p->a, lda, p->x, ix, fb, p->y, iy);
        break;
    case KILN_FLOAT64:
        rc = cb.cublasDgemv_v2(h->handle, op(p->trans, p->conj), m, n, da, p->a, lda, p->x, ix, db, p->y, iy);
        break;
    case KILN_COMPLEX64:
        rc = cb.cublasCgemv_v2(h->handle, op(p->trans, p->conj), m, n, fa, p->a, lda, p->x, ix, fb, p->y, iy);
        break;
    case KILN_COMPLEX128:
        rc = cb.cublasZgemv_v2(h->handle, op(p->trans, p->conj), m, n, da, p->a, lda, p->x, ix, db, p->y, iy);
        break;
    default: break;
    }
    cb_unlock(h);
    if (rc == -1)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "cuBLAS gemv: %s is not supported",
                              kiln_dtype_name(p->dtype));
    return rc == CUBLAS_STATUS_SUCCESS ? KILN_OK : cb_fail(rc, "gemv");
}

static kiln_status cb_dot(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n, blas_vector x,
                          blas_vector y, int conjugate, kiln_blas_scalar *out) {
    cb_handle *h;
    kiln_status s = cb_lock(ctx, stream, &h);
    if (s != KILN_OK) return s;
    int nn = (int)n, ix = (int)x.inc, iy = (int)y.inc, rc = -1;
    float f[2] = {0, 0};
    double d[2] = {0, 0};
    switch (dtype) {
    case KILN_FLOAT32: rc = cb.cublasSdot_v2(h->handle, nn, x.data, ix, y.data, iy, f); break;
    case KILN_FLOAT64: rc = cb.cublasDdot_v2(h->handle, nn, x.data, ix, y.data, iy, d); break;
    case KILN_COMPLEX64:
        rc = (conjugate ? cb.cublasCdotc_v2 : cb.cublasCdotu_v2)(h->handle, nn, x.data, ix, y.data, iy, f);
        break;
    case KILN_COMPLEX128:
        rc = (conjugate ? cb.cublasZdotc_v2 : cb.cublasZdotu_v2)(h->handle, nn, x.data, ix, y.data, iy, d);
        break;
    default: break;
    }
    cb_unlock(h);
    if (rc == -1)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "cuBLAS dot: %s is not supported",
                              kiln_dtype_name(dtype));
    if (rc != CUBLAS_STATUS_SUCCESS) return cb_fail(rc, "dot");
    int single = dtype == KILN_FLOAT32 || dtype == KILN_COMPLEX64;
    *out = single ? (kiln_blas_scalar){f[0], f[1]} : (kiln_blas_scalar){d[0], d[1]};
    return KILN_OK;
}

static kiln_status cb_axpy(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n,
                           kiln_blas_scalar alpha, blas_vector x, blas_vector y) {
    cb_handle *h;
    kiln_status s = cb_lock(ctx, stream, &h);
    if (s != KILN_OK) return s;
    int nn = (int)n, ix = (int)x.inc, iy = (int)y.inc, rc = -1;
    float f[2] = {(float)alpha.re, (float)alpha.im};
    double d[2] = {alpha.re, alpha.im};
    switch (dtype) {
    case KILN_FLOAT32: rc = cb.cublasSaxpy_v2(h->handle, nn, f, x.data, ix, y.data, iy); break;
    case KILN_FLOAT64: rc = cb.cublasDaxpy_v2(h->handle, nn, d, x.data, ix, y.data, iy); break;
    case KILN_COMPLEX64: rc = cb.cublasCaxpy_v2(h->handle, nn, f, x.data, ix, y.data, iy); break;
    case KILN_COMPLEX128: rc = cb.cublasZaxpy_v2(h->handle, nn, d, x.data, ix, y.data, iy); break;
    default: break;
    }
    cb_unlock(h);
    if (rc == -1)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "cuBLAS axpy: %s is not supported",
                              kiln_dtype_name(dtype));
    return rc == CUBLAS_STATUS_SUCCESS ? KILN_OK : cb_fail(rc, "axpy");
}

static kiln_status cb_scal(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n,
                           kiln_blas_scalar alpha, blas_vector x) {
    cb_handle *h;
    kiln_status s = cb_lock(ctx, stream, &h);
    if (s != KILN_OK) return s;
    int nn = (int)n, ix = (int)x.inc, rc = -1;
    float f[2] = {(float)alpha.re, (float)alpha.im};
    double d[2] = {alpha.re, alpha.im};
    switch (dtype) {
    case KILN_FLOAT32: rc = cb.cublasSscal_v2(h->handle, nn, f, x.data, ix); break;
    case KILN_FLOAT64: rc = cb.cublasDscal_v2(h->handle, nn, d, x.data, ix); break;
    case KILN_COMPLEX64: rc = cb.cublasCscal_v2(h->handle, nn, f, x.data, ix); break;
    case KILN_COMPLEX128: rc = cb.cublasZscal_v2(h->handle, nn, d, x.data, ix); break;
    default: break;
    }
    cb_unlock(h);
    if (rc == -1)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "cuBLAS scal: %s is not supported",
                              kiln_dtype_name(dtype));
    return rc == CUBLAS_STATUS_SUCCESS ? KILN_OK : cb_fail(rc, "scal");
}

static kiln_status cb_nrm2(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n, blas_vector x,
                           double *out) {
    cb_handle *h;
    kiln_status s = cb_lock(ctx, stream, &h);
    if (s != KILN_OK) return s;
    int nn = (int)n, ix = (int)x.inc, rc = -1;
    float f = 0;
    double d = 0;
    switch (dtype) {
    case KILN_FLOAT32:
        rc = cb.cublasSnrm2_v2(h->handle, nn, x.data, ix, &f);
        d = f;
        break;
    case KILN_FLOAT64: rc = cb.cublasDnrm2_v2(h->handle, nn, x.data, ix, &d); break;
    case KILN_COMPLEX64:
        rc = cb.cublasScnrm2_v2(h->handle, nn, x.data, ix, &f);
        d = f;
        break;
    case KILN_COMPLEX128: rc = cb.cublasDznrm2_v2(h->handle, nn, x.data, ix, &d); break;
    default: break;
    }
    cb_unlock(h);
    if (rc == -1)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "cuBLAS nrm2: %s is not supported",
                              kiln_dtype_name(dtype));
    if (rc != CUBLAS_STATUS_SUCCESS) return cb_fail(rc, "nrm2");
    *out = d;
    return KILN_OK;
}

/* Beside cuBLAS kiln's tiled small-matrix kernel (blas_small.c, a block of
 * products) takes batches up to the limits measured per dtype against the
 * strided-batched call; a thread per product (the gufunc) lost to cuBLAS
 * from 8x8 on the H100. */
const blas_provider kiln_blas_cublas = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "BLAS",
             .name = "cuBLAS",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CUDA),
             .load = cb_load,
             .describe = cb_describe_fn,
             .context_init = cb_context_init,
             .context_release = cb_context_release},
    .batch_label = "strided-batched",
    .small_tiled = 1,
    .capturable = 1,
    .half_gemm = 1,
    .gemm = cb_gemm,
    .gemm_pointers = cb_gemm_pointers,
    .gemv = cb_gemv,
    .dot = cb_dot,
    .axpy = cb_axpy,
    .scal = cb_scal,
    .nrm2 = cb_nrm2,
};

/* For tests on machines without a GPU: loads the library and resolves every
 * symbol (catches a misspelt name). */
kiln_status kiln_blas_cublas_load(void);
kiln_status kiln_blas_cublas_load(void) { return cb_load(); }
