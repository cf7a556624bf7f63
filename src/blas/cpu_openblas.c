/* cpu_openblas.c: the CPU provider, OpenBLAS's CBLAS through dlopen. Calls
 * are synchronous on the calling thread (OpenBLAS runs its own threads,
 * KILN_NUM_THREADS of them, else one per core). A batch is a loop of calls:
 * Debian's OpenBLAS (0.3.21) has no batched gemm. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas/blas_internal.h"
#include "core/dynlib.h"
#include "core/settings.h"

enum { CBLAS_COL_MAJOR = 102, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112, CBLAS_CONJ_TRANS = 113 };

typedef struct openblas_table {
#define OPENBLAS_FN(name, ret, params) ret(*name) params;
#include "blas/cpu_openblas_symbols.h"
#undef OPENBLAS_FN
} openblas_table;

static openblas_table ob;
static kiln_dynlib ob_lib;
static pthread_once_t ob_once = PTHREAD_ONCE_INIT;
static char ob_describe[640];

static const char *const ob_sonames[] = {"libopenblas.so.0", "libopenblas.so", NULL};
static const kiln_dynlib_spec ob_spec = {
    .label = "OpenBLAS",
    .sonames = ob_sonames,
    .install_hint = "install OpenBLAS: apt-get install libopenblas0 (or libopenblas-dev)",
    .search_cuda_dirs = 0,
    .env_override = "KILN_OPENBLAS_LIB",
};

/* KILN_NUM_THREADS, as the CPU backend reads it, else the online cores. */
static int ob_threads(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return (int)kiln_setting_int("KILN_NUM_THREADS", 1, 4096, cores < 1 ? 1 : cores);
}

static void ob_load_once(void) {
    const kiln_dynlib_symbol symbols[] = {
#define OPENBLAS_FN(name, ret, params) {#name, (void **)&ob.name, 1},
#include "blas/cpu_openblas_symbols.h"
#undef OPENBLAS_FN
    };
    kiln_dynlib_load(&ob_lib, &ob_spec, symbols, sizeof symbols / sizeof symbols[0]);
    if (ob_lib.status != KILN_OK) return;
    int threads = ob_threads();
    ob.openblas_set_num_threads(threads);
    const char *config = ob.openblas_get_config();
    snprintf(ob_describe, sizeof ob_describe, "OpenBLAS (%s; %s), %d threads", ob_lib.path,
             config ? config : "?", threads);
}

static kiln_status ob_load(void) {
    pthread_once(&ob_once, ob_load_once);
    if (ob_lib.status == KILN_OK) return KILN_OK;
    if (strstr(ob_lib.why, ob_spec.install_hint)) return kiln_dynlib_check(&ob_lib);
    return kiln_set_error(ob_lib.status, "%s; %s", ob_lib.why, ob_spec.install_hint);
}

static const char *ob_describe_fn(void) { return ob_describe; }

/* conj comes only with a transpose (the front copies other conjugates) */
static int tr(int t, int conj) { return conj ? CBLAS_CONJ_TRANS : t ? CBLAS_TRANS : CBLAS_NO_TRANS; }

static kiln_status ob_gemm(kiln_context *ctx, kiln_stream *stream, const blas_gemm_problem *p) {
    (void)ctx;
    (void)stream;
    size_t size = kiln_dtype_size(p->dtype);
    int m = (int)p->m, n = (int)p->n, k = (int)p->k;
    int lda = (int)p->a.ld, ldb = (int)p->b.ld, ldc = (int)p->ldc;
    float fa = (float)p->alpha.re, fb = (float)p->beta.re;
    float ca[2] = {(float)p->alpha.re, (float)p->alpha.im}, cb[2] = {(float)p->beta.re, (float)p->beta.im};
    double za[2] = {p->alpha.re, p->alpha.im}, zb[2] = {p->beta.re, p->beta.im};
    for (int64_t q = 0; q < p->batch; q++) {
        const char *a = p->a.data + (size_t)(q * p->a.batch_stride) * size;
        const char *b = p->b.data + (size_t)(q * p->b.batch_stride) * size;
        char *c = p->c + (size_t)(q * p->stride_c) * size;
        switch (p->dtype) {
        case KILN_FLOAT32:
            ob.cblas_sgemm(CBLAS_COL_MAJOR, tr(p->a.trans, p->a.conj), tr(p->b.trans, p->b.conj), m, n, k, fa,
                           (const float *)a, lda, (const float *)b, ldb, fb, (float *)c, ldc);
            break;
        case KILN_FLOAT64:
            ob.cblas_dgemm(CBLAS_COL_MAJOR, tr(p->a.trans, p->a.conj), tr(p->b.trans, p->b.conj), m, n, k,
                           p->alpha.re, (const double *)a, lda, (const double *)b, ldb, p->beta.re,
                           (double *)c, ldc);
            break;
        case KILN_COMPLEX64:
            ob.cblas_cgemm(CBLAS_COL_MAJOR, tr(p->a.trans, p->a.conj), tr(p->b.trans, p->b.conj), m, n, k, ca,
                           a, lda, b, ldb, cb, c, ldc);
            break;
        case KILN_COMPLEX128:
            ob.cblas_zgemm(CBLAS_COL_MAJOR, tr(p->a.trans, p->a.conj), tr(p->b.trans, p->b.conj), m, n, k, za,
                           a, lda, b, ldb, zb, c, ldc);
            break;
        default:
            return kiln_set_error(
                KILN_ERR_UNSUPPORTED,
                "%s gemm is not available on the CPU backend (OpenBLAS has float32, float64, "
                "complex64, complex128; float16 runs on CUDA only, bfloat16 through float32): convert "
                "to float32",
                kiln_dtype_name(p->dtype));
        }
    }
    return KILN_OK;
}

/* A batch given as matrix addresses: one gemm per product (the same loop
 * as a strided batch, over the addresses the front computed). */
static kiln_status ob_gemm_pointers(kiln_context *ctx, kiln_stream *stream, const blas_gemm_problem *p,
                                    const void *const *ptrs) {
    blas_gemm_problem one = *p;
    one.batch = 1;
    kiln_status s = KILN_OK;
    for (int64_t q = 0; q < p->batch && s == KILN_OK; q++) {
        one.a.data = ptrs[q];
        one.b.data = ptrs[p->batch + q];
        one.c = (char *)(uintptr_t)ptrs[2 * p->batch + q];
        s = ob_gemm(ctx, stream, &one);
    }
    return s;
}

static kiln_status ob_gemv(kiln_context *ctx, kiln_stream *stream, const blas_gemv_problem *p) {
    (void)ctx;
    (void)stream;
    int m = (int)p->m, n = (int)p->n, lda = (int)p->lda, incx = (int)p->incx, incy = (int)p->incy;
    float ca[2] = {(float)p->alpha.re, (float)p->alpha.im}, cb[2] = {(float)p->beta.re, (float)p->beta.im};
    double za[2] = {p->alpha.re, p->alpha.im}, zb[2] = {p->beta.re, p->beta.im};
    switch (p->dtype) {
    case KILN_FLOAT32:
        ob.cblas_sgemv(CBLAS_COL_MAJOR, tr(p->trans, p->conj), m, n, (float)p->alpha.re, (const float *)p->a,
                       lda, (const float *)p->x, incx, (float)p->beta.re, (float *)p->y, incy);
        break;
    case KILN_FLOAT64:
        ob.cblas_dgemv(CBLAS_COL_MAJOR, tr(p->trans, p->conj), m, n, p->alpha.re, (const double *)p->a, lda,
                       (const double *)p->x, incx, p->beta.re, (double *)p->y, incy);
        break;
    case KILN_COMPLEX64:
        ob.cblas_cgemv(CBLAS_COL_MAJOR, tr(p->trans, p->conj), m, n, ca, p->a, lda, p->x, incx, cb, p->y,
                       incy);
        break;
    case KILN_COMPLEX128:
        ob.cblas_zgemv(CBLAS_COL_MAJOR, tr(p->trans, p->conj), m, n, za, p->a, lda, p->x, incx, zb, p->y,
                       incy);
        break;
    default:
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "gemv: %s is not supported", kiln_dtype_name(p->dtype));
    }
    return KILN_OK;
}

static kiln_status ob_dot(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n, blas_vector x,
                          blas_vector y, int conjugate, kiln_blas_scalar *out) {
    (void)ctx;
    (void)stream;
    int nn = (int)n, ix = (int)x.inc, iy = (int)y.inc;
    float c[2] = {0, 0};
    double z[2] = {0, 0};
    switch (dtype) {
    case KILN_FLOAT32:
        *out = (kiln_blas_scalar){ob.cblas_sdot(nn, (float *)x.data, ix, (float *)y.data, iy), 0};
        break;
    case KILN_FLOAT64:
        *out = (kiln_blas_scalar){ob.cblas_ddot(nn, (double *)x.data, ix, (double *)y.data, iy), 0};
        break;
    case KILN_COMPLEX64:
        (conjugate ? ob.cblas_cdotc_sub : ob.cblas_cdotu_sub)(nn, x.data, ix, y.data, iy, c);
        *out = (kiln_blas_scalar){c[0], c[1]};
        break;
    case KILN_COMPLEX128:
        (conjugate ? ob.cblas_zdotc_sub : ob.cblas_zdotu_sub)(nn, x.data, ix, y.data, iy, z);
        *out = (kiln_blas_scalar){z[0], z[1]};
        break;
    default: return kiln_set_error(KILN_ERR_UNSUPPORTED, "dot: %s is not supported", kiln_dtype_name(dtype));
    }
    return KILN_OK;
}

static kiln_status ob_axpy(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n,
                           kiln_blas_scalar alpha, blas_vector x, blas_vector y) {
    (void)ctx;
    (void)stream;
    int nn = (int)n, ix = (int)x.inc, iy = (int)y.inc;
    float c[2] = {(float)alpha.re, (float)alpha.im};
    double z[2] = {alpha.re, alpha.im};
    switch (dtype) {
    case KILN_FLOAT32: ob.cblas_saxpy(nn, c[0], (float *)x.data, ix, (float *)y.data, iy); break;
    case KILN_FLOAT64: ob.cblas_daxpy(nn, z[0], (double *)x.data, ix, (double *)y.data, iy); break;
    case KILN_COMPLEX64: ob.cblas_caxpy(nn, c, x.data, ix, y.data, iy); break;
    case KILN_COMPLEX128: ob.cblas_zaxpy(nn, z, x.data, ix, y.data, iy); break;
    default: return kiln_set_error(KILN_ERR_UNSUPPORTED, "axpy: %s is not supported", kiln_dtype_name(dtype));
    }
    return KILN_OK;
}

static kiln_status ob_scal(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n,
                           kiln_blas_scalar alpha, blas_vector x) {
    (void)ctx;
    (void)stream;
    int nn = (int)n, ix = (int)x.inc;
    float c[2] = {(float)alpha.re, (float)alpha.im};
    double z[2] = {alpha.re, alpha.im};
    switch (dtype) {
    case KILN_FLOAT32: ob.cblas_sscal(nn, c[0], (float *)x.data, ix); break;
    case KILN_FLOAT64: ob.cblas_dscal(nn, z[0], (double *)x.data, ix); break;
    case KILN_COMPLEX64: ob.cblas_cscal(nn, c, x.data, ix); break;
    case KILN_COMPLEX128: ob.cblas_zscal(nn, z, x.data, ix); break;
    default: return kiln_set_error(KILN_ERR_UNSUPPORTED, "scal: %s is not supported", kiln_dtype_name(dtype));
    }
    return KILN_OK;
}

static kiln_status ob_nrm2(kiln_context *ctx, kiln_stream *stream, kiln_dtype dtype, int64_t n, blas_vector x,
                           double *out) {
    (void)ctx;
    (void)stream;
    int nn = (int)n, ix = (int)x.inc;
    switch (dtype) {
    case KILN_FLOAT32: *out = ob.cblas_snrm2(nn, (float *)x.data, ix); break;
    case KILN_FLOAT64: *out = ob.cblas_dnrm2(nn, (double *)x.data, ix); break;
    case KILN_COMPLEX64: *out = ob.cblas_scnrm2(nn, x.data, ix); break;
    case KILN_COMPLEX128: *out = ob.cblas_dznrm2(nn, x.data, ix); break;
    default: return kiln_set_error(KILN_ERR_UNSUPPORTED, "nrm2: %s is not supported", kiln_dtype_name(dtype));
    }
    return KILN_OK;
}

/* On the CPU kiln's small-matrix gufunc still beats a loop of OpenBLAS
 * calls 2.7x at 8x8, so it takes every dim <= 8 here. */
const blas_provider kiln_blas_openblas = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "BLAS",
             .name = "OpenBLAS",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU),
             .load = ob_load,
             .describe = ob_describe_fn},
    .batch_label = "batch loop",
    .gemm = ob_gemm,
    .gemm_pointers = ob_gemm_pointers,
    .gemv = ob_gemv,
    .dot = ob_dot,
    .axpy = ob_axpy,
    .scal = ob_scal,
    .nrm2 = ob_nrm2,
};
