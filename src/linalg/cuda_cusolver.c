/* cuda_cusolver.c: the CUDA provider, cuSOLVER's dense API through dlopen:
 * the 64-bit generic calls (cusolverDnXgetrf, Xgetrs, Xpotrf, Xgeqrf,
 * Xgesvd, Xsyevd), the typed orgqr/ungqr, and potrfBatched for batches of
 * small matrices. One handle per context (kiln_provider_state), bound to
 * the context's default stream, where the front's copies and kernels run
 * too; calls of one context take turns on it (a cuSOLVER handle is used by
 * one thread at a time). The device workspace and the per-matrix info
 * array are kiln arrays kept with the handle and grown as needed, so a
 * loop of calls allocates once. A batch the library has no batched form
 * for is a loop of calls on the stream; the infos come back to the host in
 * one copy at the end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/dynlib.h"
#include "linalg/linalg.h"

enum {
    CUDA_R_32F = 0,
    CUDA_R_64F = 1,
    CUDA_C_32F = 4,
    CUDA_C_64F = 5,
    FILL_LOWER = 0,
    FILL_UPPER = 1,
    OP_N = 0,
    OP_T = 1,
    STATUS_ALLOC_FAILED = 2,
    EIG_NOVECTOR = 0,
    EIG_VECTOR = 1
};

typedef struct cusolver_table {
#define CUSOLVER_FN(name, params) int(*name) params;
#include "linalg/cuda_cusolver_symbols.h"
#undef CUSOLVER_FN
} cusolver_table;

static cusolver_table cs;
static kiln_dynlib cs_lib;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;
static char cs_describe[600];

/* Newest first: a CUDA 13 driver runs both. */
static const char *const cs_sonames[] = {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so", NULL};
static const kiln_dynlib_spec cs_spec = {
    .label = "cuSOLVER",
    .sonames = cs_sonames,
    .install_hint =
        "install the CUDA toolkit's cuSOLVER (libcusolver, e.g. apt-get install libcusolver-13-0) "
        "or set CUDA_HOME",
    .search_cuda_dirs = 1,
    .env_override = "KILN_CUSOLVER_LIB",
};

static void cs_load_once(void) {
    const kiln_dynlib_symbol symbols[] = {
#define CUSOLVER_FN(name, params) {#name, (void **)&cs.name, 1},
#include "linalg/cuda_cusolver_symbols.h"
#undef CUSOLVER_FN
    };
    kiln_dynlib_load(&cs_lib, &cs_spec, symbols, sizeof symbols / sizeof symbols[0]);
    if (cs_lib.status == KILN_OK) snprintf(cs_describe, sizeof cs_describe, "cuSOLVER (%s)", cs_lib.path);
}

static kiln_status cs_load(void) {
    pthread_once(&cs_once, cs_load_once);
    if (cs_lib.status == KILN_OK || strstr(cs_lib.why, cs_spec.install_hint))
        return kiln_dynlib_check(&cs_lib);
    return kiln_set_error(cs_lib.status, "%s; %s", cs_lib.why, cs_spec.install_hint);
}

static const char *cs_describe_fn(void) { return cs_describe; }

static kiln_status cs_fail(int status, const char *what) {
    return kiln_set_error(status == STATUS_ALLOC_FAILED ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_DRIVER,
                          "cuSOLVER %s failed: cusolverStatus_t %d", what, status);
}

/* ------------------------------------------------------------ per-context state */

typedef struct cs_state {
    pthread_mutex_t lock; /* the handle, the workspace and the info array */
    void *handle, *params;
    kiln_array *work; /* device workspace, uint8 */
    void *host_work;
    size_t host_bytes;
    kiln_array *info; /* int32, one per matrix of a batch */
    kiln_array *ptrs; /* uint64 matrix addresses for the batched calls */
} cs_state;

static void cs_context_release(kiln_context *ctx, void *state) {
    cs_state *st = state;
    if (!st) return;
    /* cusolverDnDestroy needs the context current; if that fails the handle
     * dies with the context. */
    if (ctx->ops->native_handles(ctx->state, NULL, NULL, NULL) == KILN_OK) {
        if (st->params) (void)cs.cusolverDnDestroyParams(st->params);
        if (st->handle) (void)cs.cusolverDnDestroy(st->handle);
    }
    kiln_array_release(st->work);
    kiln_array_release(st->info);
    kiln_array_release(st->ptrs);
    free(st->host_work);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static kiln_status cs_context_init(kiln_context *ctx, void **state) {
    *state = NULL;
    if (!ctx->ops->native_handles)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the %s backend gives no native stream for cuSOLVER",
                              ctx->ops->name);
    kiln_status s = kiln_context_note(ctx, ctx->ops->native_handles(ctx->state, NULL, NULL, NULL));
    if (s != KILN_OK) return s;
    cs_state *st = calloc(1, sizeof *st);
    if (!st) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for the cuSOLVER state");
    pthread_mutex_init(&st->lock, NULL);
    int rc = cs.cusolverDnCreate(&st->handle);
    if (rc == 0) rc = cs.cusolverDnCreateParams(&st->params);
    if (rc != 0) {
        cs_context_release(ctx, st);
        return cs_fail(rc, "cusolverDnCreate");
    }
    *state = st;
    return KILN_OK;
}

/* Takes the handle, bound to the default stream with the context current. */
static kiln_status cs_lock(kiln_context *ctx, cs_state *st) {
    void *stream = NULL;
    kiln_status s = kiln_context_note(ctx, ctx->ops->native_handles(ctx->state, NULL, NULL, &stream));
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&st->lock);
    int rc = cs.cusolverDnSetStream(st->handle, stream);
    if (rc != 0) {
        pthread_mutex_unlock(&st->lock);
        return cs_fail(rc, "cusolverDnSetStream");
    }
    return KILN_OK;
}

/* `*have` holds at least `count` elements of dtype (grown by replacing). */
static kiln_status cs_reserve(kiln_context *ctx, kiln_array **have, kiln_dtype dtype, int64_t count) {
    if (count < 1) count = 1;
    if (*have && (*have)->shape[0] >= count) return KILN_OK;
    kiln_array_release(*have);
    *have = NULL;
    return kiln_array_empty(ctx, dtype, 1, &count, have);
}

/* Device and host workspaces of these sizes, and `batch` infos. */
static kiln_status cs_prepare(kiln_context *ctx, cs_state *st, size_t dev_bytes, size_t host_bytes,
                              int64_t batch) {
    kiln_status s = cs_reserve(ctx, &st->work, KILN_UINT8, (int64_t)dev_bytes);
    if (s == KILN_OK) s = cs_reserve(ctx, &st->info, KILN_INT32, batch);
    if (s == KILN_OK && host_bytes > st->host_bytes) {
        void *grown = realloc(st->host_work, host_bytes);
        if (!grown)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for cuSOLVER's workspace");
        st->host_work = grown;
        st->host_bytes = host_bytes;
    }
    return s;
}

static int *dev_info(cs_state *st, int64_t q) { return (int *)(void *)st->info->data + q; }

/* The infos of a batch, to the host (waits for the stream). */
static kiln_status cs_infos(const linalg_job *j, cs_state *st) {
    kiln_array *v = NULL;
    kiln_status s = kiln_linalg_view(st->info, 1, &j->batch, &v);
    if (s == KILN_OK && j->batch > 0) s = kiln_array_to_host(v, j->info, sizeof *j->info * (size_t)j->batch);
    kiln_array_release(v);
    return s;
}

static int cuda_type(kiln_dtype t) {
    return t == KILN_FLOAT32     ? CUDA_R_32F
           : t == KILN_FLOAT64   ? CUDA_R_64F
           : t == KILN_COMPLEX64 ? CUDA_C_32F
                                 : CUDA_C_64F;
}
static int real_type(kiln_dtype t) { return cuda_type(kiln_linalg_real_dtype(t)); }

static char *at(const linalg_job *j, const void *base, int64_t q, int64_t per) {
    return (char *)(uintptr_t)base + (size_t)(q * per) * kiln_dtype_size(j->dtype);
}

/* ------------------------------------------------------------ calls */

static kiln_status cs_getrf(kiln_context *ctx, void *state, const linalg_job *j, void *ipiv) {
    cs_state *st = state;
    kiln_status s = cs_lock(ctx, st);
    if (s != KILN_OK) return s;
    int t = cuda_type(j->dtype);
    int64_t n = j->n, ld = n > 1 ? n : 1;
    size_t dev = 0, host = 0;
    int rc = cs.cusolverDnXgetrf_bufferSize(st->handle, st->params, n, n, t, j->a, ld, t, &dev, &host);
    if (rc != 0) s = cs_fail(rc, "cusolverDnXgetrf_bufferSize");
    if (s == KILN_OK) s = cs_prepare(ctx, st, dev, host, j->batch);
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        rc = cs.cusolverDnXgetrf(st->handle, st->params, n, n, t, at(j, j->a, q, n * n), ld,
                                 (int64_t *)ipiv + q * n, t, st->work->data, dev, st->host_work, host,
                                 dev_info(st, q));
        if (rc != 0) s = cs_fail(rc, "cusolverDnXgetrf");
    }
    if (s == KILN_OK) s = cs_infos(j, st);
    pthread_mutex_unlock(&st->lock);
    return s;
}

static kiln_status cs_getrs(kiln_context *ctx, void *state, const linalg_job *j, const void *ipiv, char trans,
                            int64_t nrhs, void *b) {
    cs_state *st = state;
    kiln_status s = cs_lock(ctx, st);
    if (s != KILN_OK) return s;
    int t = cuda_type(j->dtype);
    int64_t n = j->n, ld = n > 1 ? n : 1;
    s = cs_prepare(ctx, st, 0, 0, j->batch);
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        int rc = cs.cusolverDnXgetrs(st->handle, st->params, trans == 'T' ? OP_T : OP_N, n, nrhs, t,
                                     at(j, j->a, q, n * n), ld, (const int64_t *)ipiv + q * n, t,
                                     at(j, b, q, n * nrhs), ld, dev_info(st, q));
        if (rc != 0) s = cs_fail(rc, "cusolverDnXgetrs");
    }
    if (s == KILN_OK) s = cs_infos(j, st);
    pthread_mutex_unlock(&st->lock);
    return s;
}

/* Batches of small matrices in one call: cusolverDn<t>potrfBatched over
 * the matrices' addresses. */
static kiln_status cs_potrf_batched(kiln_context *ctx, cs_state *st, const linalg_job *j, char uplo) {
    uint64_t *host = malloc(sizeof *host * (size_t)j->batch);
    if (!host) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t q = 0; q < j->batch; q++) host[q] = (uint64_t)(uintptr_t)at(j, j->a, q, j->n * j->n);
    kiln_status s = cs_reserve(ctx, &st->ptrs, KILN_UINT64, j->batch);
    kiln_array *v = NULL;
    if (s == KILN_OK) s = kiln_linalg_view(st->ptrs, 1, &j->batch, &v);
    if (s == KILN_OK) s = kiln_array_from_host_copy(v, host, sizeof *host * (size_t)j->batch);
    kiln_array_release(v);
    free(host);
    if (s != KILN_OK) return s;
    int fill = uplo == 'U' ? FILL_UPPER : FILL_LOWER, n = (int)j->n, b = (int)j->batch;
    void **arr = (void **)(void *)st->ptrs->data;
    int rc = j->dtype == KILN_FLOAT32
                 ? cs.cusolverDnSpotrfBatched(st->handle, fill, n, arr, n, dev_info(st, 0), b)
             : j->dtype == KILN_FLOAT64
                 ? cs.cusolverDnDpotrfBatched(st->handle, fill, n, arr, n, dev_info(st, 0), b)
             : j->dtype == KILN_COMPLEX64
                 ? cs.cusolverDnCpotrfBatched(st->handle, fill, n, arr, n, dev_info(st, 0), b)
                 : cs.cusolverDnZpotrfBatched(st->handle, fill, n, arr, n, dev_info(st, 0), b);
    return rc == 0 ? KILN_OK : cs_fail(rc, "cusolverDn<t>potrfBatched");
}

static kiln_status cs_potrf(kiln_context *ctx, void *state, const linalg_job *j, char uplo) {
    cs_state *st = state;
    kiln_status s = cs_lock(ctx, st);
    if (s != KILN_OK) return s;
    int t = cuda_type(j->dtype), fill = uplo == 'U' ? FILL_UPPER : FILL_LOWER;
    int64_t n = j->n, ld = n > 1 ? n : 1;
    /* one launch for many small matrices instead of one call each */
    int batched = j->batch >= 8 && n >= 1 && n <= 256 && j->batch <= INT32_MAX;
    size_t dev = 0, host = 0;
    if (!batched) {
        int rc = cs.cusolverDnXpotrf_bufferSize(st->handle, st->params, fill, n, t, j->a, ld, t, &dev, &host);
        if (rc != 0) s = cs_fail(rc, "cusolverDnXpotrf_bufferSize");
    }
    if (s == KILN_OK) s = cs_prepare(ctx, st, dev, host, j->batch);
    if (s == KILN_OK && batched) s = cs_potrf_batched(ctx, st, j, uplo);
    for (int64_t q = 0; !batched && q < j->batch && s == KILN_OK; q++) {
        int rc = cs.cusolverDnXpotrf(st->handle, st->params, fill, n, t, at(j, j->a, q, n * n), ld, t,
                                     st->work->data, dev, st->host_work, host, dev_info(st, q));
        if (rc != 0) s = cs_fail(rc, "cusolverDnXpotrf");
    }
    if (s == KILN_OK) s = cs_infos(j, st);
    pthread_mutex_unlock(&st->lock);
    return s;
}

static kiln_status cs_geqrf(kiln_context *ctx, void *state, const linalg_job *j, void *tau) {
    cs_state *st = state;
    kiln_status s = cs_lock(ctx, st);
    if (s != KILN_OK) return s;
    int t = cuda_type(j->dtype);
    int64_t m = j->m, n = j->n, k = m < n ? m : n, ld = m > 1 ? m : 1;
    size_t dev = 0, host = 0;
    int rc =
        cs.cusolverDnXgeqrf_bufferSize(st->handle, st->params, m, n, t, j->a, ld, t, tau, t, &dev, &host);
    if (rc != 0) s = cs_fail(rc, "cusolverDnXgeqrf_bufferSize");
    if (s == KILN_OK) s = cs_prepare(ctx, st, dev, host, j->batch);
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        rc = cs.cusolverDnXgeqrf(st->handle, st->params, m, n, t, at(j, j->a, q, m * n), ld, t,
                                 at(j, tau, q, k), t, st->work->data, dev, st->host_work, host,
                                 dev_info(st, q));
        if (rc != 0) s = cs_fail(rc, "cusolverDnXgeqrf");
    }
    if (s == KILN_OK) s = cs_infos(j, st);
    pthread_mutex_unlock(&st->lock);
    return s;
}

static kiln_status cs_orgqr(kiln_context *ctx, void *state, const linalg_job *j, int64_t k, const void *tau) {
    if (j->m > INT32_MAX || j->n > INT32_MAX || j->m * j->n > INT32_MAX)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "cuSOLVER's orgqr takes 32-bit sizes: %lld x %lld is too large",
                              (long long)j->m, (long long)j->n);
    cs_state *st = state;
    kiln_status s = cs_lock(ctx, st);
    if (s != KILN_OK) return s;
    int m = (int)j->m, n = (int)j->n, kk = (int)k, ld = m > 1 ? m : 1, lwork = 0, rc;
    switch (j->dtype) {
    case KILN_FLOAT32:
        rc = cs.cusolverDnSorgqr_bufferSize(st->handle, m, n, kk, j->a, ld, tau, &lwork);
        break;
    case KILN_FLOAT64:
        rc = cs.cusolverDnDorgqr_bufferSize(st->handle, m, n, kk, j->a, ld, tau, &lwork);
        break;
    case KILN_COMPLEX64:
        rc = cs.cusolverDnCungqr_bufferSize(st->handle, m, n, kk, j->a, ld, tau, &lwork);
        break;
    default: rc = cs.cusolverDnZungqr_bufferSize(st->handle, m, n, kk, j->a, ld, tau, &lwork); break;
    }
    if (rc != 0) s = cs_fail(rc, "cusolverDn<t>orgqr_bufferSize");
    if (s == KILN_OK) s = cs_prepare(ctx, st, (size_t)lwork * kiln_dtype_size(j->dtype), 0, j->batch);
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        void *a = at(j, j->a, q, j->m * j->n), *w = st->work->data;
        const void *tq = at(j, tau, q, k);
        int *info = dev_info(st, q);
        switch (j->dtype) {
        case KILN_FLOAT32: rc = cs.cusolverDnSorgqr(st->handle, m, n, kk, a, ld, tq, w, lwork, info); break;
        case KILN_FLOAT64: rc = cs.cusolverDnDorgqr(st->handle, m, n, kk, a, ld, tq, w, lwork, info); break;
        case KILN_COMPLEX64: rc = cs.cusolverDnCungqr(st->handle, m, n, kk, a, ld, tq, w, lwork, info); break;
        default: rc = cs.cusolverDnZungqr(st->handle, m, n, kk, a, ld, tq, w, lwork, info); break;
        }
        if (rc != 0) s = cs_fail(rc, "cusolverDn<t>orgqr");
    }
    if (s == KILN_OK) s = cs_infos(j, st);
    pthread_mutex_unlock(&st->lock);
    return s;
}

static kiln_status cs_gesvd(kiln_context *ctx, void *state, const linalg_job *j, char job, void *s_out,
                            void *u, void *vt) {
    cs_state *st = state;
    kiln_status s = cs_lock(ctx, st);
    if (s != KILN_OK) return s;
    int t = cuda_type(j->dtype), rt = real_type(j->dtype);
    int64_t m = j->m, n = j->n, k = m < n ? m : n, ld = m > 1 ? m : 1;
    int64_t ucols = job == 'A' ? m : k, vrows = job == 'A' ? n : k, ldvt = vrows > 1 ? vrows : 1;
    size_t real = kiln_dtype_size(kiln_linalg_real_dtype(j->dtype)), dev = 0, host = 0;
    signed char jb = (signed char)job;
    int rc = cs.cusolverDnXgesvd_bufferSize(st->handle, st->params, jb, jb, m, n, t, j->a, ld, rt, s_out, t,
                                            u, ld, t, vt, ldvt, t, &dev, &host);
    if (rc != 0) s = cs_fail(rc, "cusolverDnXgesvd_bufferSize");
    if (s == KILN_OK) s = cs_prepare(ctx, st, dev, host, j->batch);
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        void *uq = job == 'N' ? NULL : at(j, u, q, m * ucols),
             *vq = job == 'N' ? NULL : at(j, vt, q, vrows * n);
        rc = cs.cusolverDnXgesvd(st->handle, st->params, jb, jb, m, n, t, at(j, j->a, q, m * n), ld, rt,
                                 (char *)s_out + (size_t)(q * k) * real, t, uq, ld, t, vq, ldvt, t,
                                 st->work->data, dev, st->host_work, host, dev_info(st, q));
        if (rc != 0) s = cs_fail(rc, "cusolverDnXgesvd");
    }
    if (s == KILN_OK) s = cs_infos(j, st);
    pthread_mutex_unlock(&st->lock);
    return s;
}

static kiln_status cs_syevd(kiln_context *ctx, void *state, const linalg_job *j, int vectors, char uplo,
                            void *w) {
    cs_state *st = state;
    kiln_status s = cs_lock(ctx, st);
    if (s != KILN_OK) return s;
    int t = cuda_type(j->dtype), rt = real_type(j->dtype);
    int mode = vectors ? EIG_VECTOR : EIG_NOVECTOR, fill = uplo == 'U' ? FILL_UPPER : FILL_LOWER;
    int64_t n = j->n, ld = n > 1 ? n : 1;
    size_t real = kiln_dtype_size(kiln_linalg_real_dtype(j->dtype)), dev = 0, host = 0;
    int rc = cs.cusolverDnXsyevd_bufferSize(st->handle, st->params, mode, fill, n, t, j->a, ld, rt, w, t,
                                            &dev, &host);
    if (rc != 0) s = cs_fail(rc, "cusolverDnXsyevd_bufferSize");
    if (s == KILN_OK) s = cs_prepare(ctx, st, dev, host, j->batch);
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        rc = cs.cusolverDnXsyevd(st->handle, st->params, mode, fill, n, t, at(j, j->a, q, n * n), ld, rt,
                                 (char *)w + (size_t)(q * n) * real, t, st->work->data, dev, st->host_work,
                                 host, dev_info(st, q));
        if (rc != 0) s = cs_fail(rc, "cusolverDnXsyevd");
    }
    if (s == KILN_OK) s = cs_infos(j, st);
    pthread_mutex_unlock(&st->lock);
    return s;
}

static const linalg_provider cusolver_provider = {
    .base =
        {
            .abi = KILN_PROVIDER_ABI,
            .library = "linalg",
            .name = "cuSOLVER",
            .backends = KILN_PROVIDER_ON(KILN_BACKEND_CUDA),
            .load = cs_load,
            .describe = cs_describe_fn,
            .context_init = cs_context_init,
            .context_release = cs_context_release,
        },
    .pivot_bytes = 8,
    .svd_needs_tall = 1,
    .potrf_lower_faster = 1,
    .host_memory = 0,
    .getrf = cs_getrf,
    .getrs = cs_getrs,
    .potrf = cs_potrf,
    .geqrf = cs_geqrf,
    .orgqr = cs_orgqr,
    .gesvd = cs_gesvd,
    .syevd = cs_syevd,
};

const linalg_provider *kiln_linalg_cusolver_provider(void) { return &cusolver_provider; }
