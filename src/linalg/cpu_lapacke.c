/* cpu_lapacke.c: the CPU provider, LAPACK through LAPACKE (Debian's
 * liblapacke, whose LAPACK is OpenBLAS's where libopenblas0 is installed)
 * by dlopen. Calls are synchronous on the calling thread; OpenBLAS runs its
 * own threads inside each (KILN_NUM_THREADS of them, else one per core). A
 * batch is a loop of calls: LAPACK has no batched forms. The high-level
 * LAPACKE calls size and allocate their own workspace. The SVD is gesdd
 * (divide and conquer, as NumPy's), several times faster than gesvd.
 * getrf, getrs and potrf, which take no workspace, go through the _work
 * forms: the high-level ones first scan the matrix for NaN (a pass over it,
 * 3-5% of a 1024^2 potrf) and fail with an illegal-argument code where
 * NumPy runs LAPACK on the NaN (solve gives NaN, cholesky reports the
 * pivot), as cuSOLVER, which has no such scan, does. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/dynlib.h"
#include "core/settings.h"
#include "linalg/linalg.h"

enum { LAPACK_COL_MAJOR = 102, LAPACK_WORK_MEMORY_ERROR = -1010 };

typedef struct lapacke_table {
#define LAPACKE_FN(name, params) int(*name) params;
#include "linalg/cpu_lapacke_symbols.h"
#undef LAPACKE_FN
    void (*openblas_set_num_threads)(int);
} lapacke_table;

static lapacke_table lp;
static kiln_dynlib lp_lib;
static pthread_once_t lp_once = PTHREAD_ONCE_INIT;
static char lp_describe[640];

static const char *const lp_sonames[] = {"liblapacke.so.3", "liblapacke.so", NULL};
static const kiln_dynlib_spec lp_spec = {
    .label = "LAPACKE",
    .sonames = lp_sonames,
    .install_hint = "install LAPACKE: apt-get install liblapacke (with libopenblas0 for a fast LAPACK)",
    .search_cuda_dirs = 0,
    .env_override = "KILN_LAPACKE_LIB",
};

static void lp_load_once(void) {
    const kiln_dynlib_symbol symbols[] = {
#define LAPACKE_FN(name, params) {#name, (void **)&lp.name, 1},
#include "linalg/cpu_lapacke_symbols.h"
#undef LAPACKE_FN
        /* reached through liblapacke's dependencies when LAPACK is OpenBLAS's */
        {"openblas_set_num_threads", (void **)&lp.openblas_set_num_threads, 0},
    };
    kiln_dynlib_load(&lp_lib, &lp_spec, symbols, sizeof symbols / sizeof symbols[0]);
    if (lp_lib.status != KILN_OK) return;
    if (lp.openblas_set_num_threads) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        int threads = (int)kiln_setting_int("KILN_NUM_THREADS", 1, 4096, cores < 1 ? 1 : cores);
        lp.openblas_set_num_threads(threads);
        snprintf(lp_describe, sizeof lp_describe, "LAPACKE (%s) over OpenBLAS, %d threads", lp_lib.path,
                 threads);
    } else {
        snprintf(lp_describe, sizeof lp_describe, "LAPACKE (%s) over the reference LAPACK", lp_lib.path);
    }
}

static kiln_status lp_load(void) {
    pthread_once(&lp_once, lp_load_once);
    if (lp_lib.status == KILN_OK || strstr(lp_lib.why, lp_spec.install_hint))
        return kiln_dynlib_check(&lp_lib);
    return kiln_set_error(lp_lib.status, "%s; %s", lp_lib.why, lp_spec.install_hint);
}

static const char *lp_describe_fn(void) { return lp_describe; }

/* Sizes reach LAPACK as 32-bit ints. */
static kiln_status lp_fits(const linalg_job *j, int64_t extra) {
    int64_t worst = j->m * j->n > extra ? j->m * j->n : extra;
    if (worst <= INT32_MAX) return KILN_OK;
    return kiln_set_error(KILN_ERR_UNSUPPORTED,
                          "LAPACKE takes 32-bit sizes: a %lld x %lld matrix is too large", (long long)j->m,
                          (long long)j->n);
}

static char *at(const linalg_job *j, void *base, int64_t q, int64_t per) {
    return (char *)base + (size_t)(q * per) * kiln_dtype_size(j->dtype);
}

/* A LAPACKE return value: info >= 0 goes to the job, a workspace failure
 * is out of memory. */
static kiln_status lp_result(const linalg_job *j, int64_t q, int info, const char *what) {
    if (info == LAPACK_WORK_MEMORY_ERROR)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "LAPACKE %s: out of host memory for its workspace",
                              what);
    j->info[q] = info;
    return KILN_OK;
}

static kiln_status lp_getrf(kiln_context *ctx, void *state, const linalg_job *j, void *ipiv) {
    (void)ctx;
    (void)state;
    kiln_status s = lp_fits(j, 0);
    int n = (int)j->n;
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        void *a = at(j, j->a, q, j->m * j->n);
        int *p = (int *)ipiv + q * j->n, info;
        switch (j->dtype) {
        case KILN_FLOAT32: info = lp.LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, p); break;
        case KILN_FLOAT64: info = lp.LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, p); break;
        case KILN_COMPLEX64: info = lp.LAPACKE_cgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, p); break;
        default: info = lp.LAPACKE_zgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, p); break;
        }
        s = lp_result(j, q, info, "getrf");
    }
    return s;
}

static kiln_status lp_getrs(kiln_context *ctx, void *state, const linalg_job *j, const void *ipiv, char trans,
                            int64_t nrhs, void *b) {
    (void)ctx;
    (void)state;
    kiln_status s = lp_fits(j, j->n * nrhs);
    int n = (int)j->n, k = (int)nrhs, ldb = n > 1 ? n : 1;
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        const void *a = at(j, j->a, q, j->n * j->n);
        void *x = at(j, b, q, j->n * nrhs);
        const int *p = (const int *)ipiv + q * j->n;
        int info;
        switch (j->dtype) {
        case KILN_FLOAT32:
            info = lp.LAPACKE_sgetrs_work(LAPACK_COL_MAJOR, trans, n, k, a, n, p, x, ldb);
            break;
        case KILN_FLOAT64:
            info = lp.LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, trans, n, k, a, n, p, x, ldb);
            break;
        case KILN_COMPLEX64:
            info = lp.LAPACKE_cgetrs_work(LAPACK_COL_MAJOR, trans, n, k, a, n, p, x, ldb);
            break;
        default: info = lp.LAPACKE_zgetrs_work(LAPACK_COL_MAJOR, trans, n, k, a, n, p, x, ldb); break;
        }
        s = lp_result(j, q, info, "getrs");
    }
    return s;
}

static kiln_status lp_potrf(kiln_context *ctx, void *state, const linalg_job *j, char uplo) {
    (void)ctx;
    (void)state;
    kiln_status s = lp_fits(j, 0);
    int n = (int)j->n;
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        void *a = at(j, j->a, q, j->n * j->n);
        int info;
        switch (j->dtype) {
        case KILN_FLOAT32: info = lp.LAPACKE_spotrf_work(LAPACK_COL_MAJOR, uplo, n, a, n); break;
        case KILN_FLOAT64: info = lp.LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, uplo, n, a, n); break;
        case KILN_COMPLEX64: info = lp.LAPACKE_cpotrf_work(LAPACK_COL_MAJOR, uplo, n, a, n); break;
        default: info = lp.LAPACKE_zpotrf_work(LAPACK_COL_MAJOR, uplo, n, a, n); break;
        }
        s = lp_result(j, q, info, "potrf");
    }
    return s;
}

static kiln_status lp_geqrf(kiln_context *ctx, void *state, const linalg_job *j, void *tau) {
    (void)ctx;
    (void)state;
    kiln_status s = lp_fits(j, 0);
    int m = (int)j->m, n = (int)j->n, lda = m > 1 ? m : 1;
    int64_t k = j->m < j->n ? j->m : j->n;
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        void *a = at(j, j->a, q, j->m * j->n), *t = at(j, tau, q, k);
        int info;
        switch (j->dtype) {
        case KILN_FLOAT32: info = lp.LAPACKE_sgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, t); break;
        case KILN_FLOAT64: info = lp.LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, t); break;
        case KILN_COMPLEX64: info = lp.LAPACKE_cgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, t); break;
        default: info = lp.LAPACKE_zgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, t); break;
        }
        s = lp_result(j, q, info, "geqrf");
    }
    return s;
}

static kiln_status lp_orgqr(kiln_context *ctx, void *state, const linalg_job *j, int64_t k, const void *tau) {
    (void)ctx;
    (void)state;
    kiln_status s = lp_fits(j, 0);
    int m = (int)j->m, n = (int)j->n, kk = (int)k, lda = m > 1 ? m : 1;
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        void *a = at(j, j->a, q, j->m * j->n);
        const void *t = at(j, (void *)(uintptr_t)tau, q, k);
        int info;
        switch (j->dtype) {
        case KILN_FLOAT32: info = lp.LAPACKE_sorgqr(LAPACK_COL_MAJOR, m, n, kk, a, lda, t); break;
        case KILN_FLOAT64: info = lp.LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, n, kk, a, lda, t); break;
        case KILN_COMPLEX64: info = lp.LAPACKE_cungqr(LAPACK_COL_MAJOR, m, n, kk, a, lda, t); break;
        default: info = lp.LAPACKE_zungqr(LAPACK_COL_MAJOR, m, n, kk, a, lda, t); break;
        }
        s = lp_result(j, q, info, "orgqr");
    }
    return s;
}

static kiln_status lp_gesvd(kiln_context *ctx, void *state, const linalg_job *j, char job, void *s_out,
                            void *u, void *vt) {
    (void)ctx;
    (void)state;
    kiln_status s = lp_fits(j, j->m * j->m > j->n * j->n ? j->m * j->m : j->n * j->n);
    int m = (int)j->m, n = (int)j->n, k = m < n ? m : n, lda = m > 1 ? m : 1;
    int ucols = job == 'A' ? m : k, vrows = job == 'A' ? n : k;
    int ldu = m > 1 ? m : 1, ldvt = vrows > 1 ? vrows : 1;
    size_t real = kiln_dtype_size(kiln_linalg_real_dtype(j->dtype));
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        void *a = at(j, j->a, q, j->m * j->n);
        void *sv = (char *)s_out + (size_t)(q * k) * real;
        void *uq = job == 'N' ? NULL : at(j, u, q, (int64_t)m * ucols);
        void *vq = job == 'N' ? NULL : at(j, vt, q, (int64_t)vrows * n);
        int info;
        switch (j->dtype) {
        case KILN_FLOAT32:
            info = lp.LAPACKE_sgesdd(LAPACK_COL_MAJOR, job, m, n, a, lda, sv, uq, ldu, vq, ldvt);
            break;
        case KILN_FLOAT64:
            info = lp.LAPACKE_dgesdd(LAPACK_COL_MAJOR, job, m, n, a, lda, sv, uq, ldu, vq, ldvt);
            break;
        case KILN_COMPLEX64:
            info = lp.LAPACKE_cgesdd(LAPACK_COL_MAJOR, job, m, n, a, lda, sv, uq, ldu, vq, ldvt);
            break;
        default: info = lp.LAPACKE_zgesdd(LAPACK_COL_MAJOR, job, m, n, a, lda, sv, uq, ldu, vq, ldvt); break;
        }
        s = lp_result(j, q, info, "gesdd");
    }
    return s;
}

static kiln_status lp_syevd(kiln_context *ctx, void *state, const linalg_job *j, int vectors, char uplo,
                            void *w) {
    (void)ctx;
    (void)state;
    kiln_status s = lp_fits(j, 0);
    int n = (int)j->n, lda = n > 1 ? n : 1;
    char jobz = vectors ? 'V' : 'N';
    size_t real = kiln_dtype_size(kiln_linalg_real_dtype(j->dtype));
    for (int64_t q = 0; q < j->batch && s == KILN_OK; q++) {
        void *a = at(j, j->a, q, j->n * j->n);
        void *wq = (char *)w + (size_t)(q * j->n) * real;
        int info;
        switch (j->dtype) {
        case KILN_FLOAT32: info = lp.LAPACKE_ssyevd(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, wq); break;
        case KILN_FLOAT64: info = lp.LAPACKE_dsyevd(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, wq); break;
        case KILN_COMPLEX64: info = lp.LAPACKE_cheevd(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, wq); break;
        default: info = lp.LAPACKE_zheevd(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, wq); break;
        }
        s = lp_result(j, q, info, "syevd");
    }
    return s;
}

/* Host loops: a CPU context's memory is the host's, and a kernel launch
 * costs more than writing a triangle of zeros. */
static void lp_triangle(const linalg_job *j, int keep_upper) {
    size_t size = kiln_dtype_size(j->dtype);
    for (int64_t r = 0; r < j->batch * j->m; r++) {
        int64_t i = r % j->m, lo = keep_upper ? 0 : i + 1, hi = keep_upper ? (i < j->n ? i : j->n) : j->n;
        if (hi > lo) memset((char *)j->a + (size_t)(r * j->n + lo) * size, 0, (size_t)(hi - lo) * size);
    }
}

static void lp_eye(const linalg_job *j) {
    size_t size = kiln_dtype_size(j->dtype);
    memset(j->a, 0, (size_t)(j->batch * j->n * j->n) * size);
    int dbl = j->dtype == KILN_FLOAT64 || j->dtype == KILN_COMPLEX128;
    for (int64_t r = 0; r < j->batch * j->n; r++) {
        char *one = (char *)j->a + (size_t)(r * j->n + r % j->n) * size;
        if (dbl)
            *(double *)(void *)one = 1;
        else
            *(float *)(void *)one = 1;
    }
}

static const linalg_provider lapacke_provider = {
    .base =
        {
            .abi = KILN_PROVIDER_ABI,
            .library = "linalg",
            .name = "LAPACKE",
            .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU),
            .load = lp_load,
            .describe = lp_describe_fn,
        },
    .pivot_bytes = 4,
    .svd_needs_tall = 0,
    .potrf_lower_faster = 0,
    .host_memory = 1,
    .getrf = lp_getrf,
    .getrs = lp_getrs,
    .potrf = lp_potrf,
    .geqrf = lp_geqrf,
    .orgqr = lp_orgqr,
    .gesvd = lp_gesvd,
    .syevd = lp_syevd,
    .triangle = lp_triangle,
    .eye = lp_eye,
};

const linalg_provider *kiln_linalg_lapacke_provider(void) { return &lapacke_provider; }
