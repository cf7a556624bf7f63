/* blas_context.c: what src/blas keeps per context: the provider (picked by
 * the context's backend), its per-context state, and kiln's own kernels
 * (small batched matmul, dtype conversion), each made on first use. */
#include <stdlib.h>

#include "blas/blas_internal.h"

void kiln_blas_context_release(kiln_context *ctx) {
    kiln_blas_state *st = ctx->blas;
    if (!st) return;
    if (st->provider && st->provider->context_release) st->provider->context_release(ctx, st->provider_state);
    kiln_gufunc_release(st->small_gemm[0]);
    kiln_gufunc_release(st->small_gemm[1]);
    kiln_ufunc_release(st->convert);
    pthread_mutex_destroy(&st->lock);
    free(st);
    ctx->blas = NULL;
}

/* The shape class of kiln's small-matrix kernel, measured per backend (see
 * blas_gemm_core.c): on the H100 the gufunc is 7.4x faster than cuBLAS at 4x4
 * but 0.57x at 8x8, so every dim <= 4 there; on the CPU it still wins 2.7x at
 * 8x8 against a loop of OpenBLAS calls, so <= 8. KILN_BLAS_SMALL_MAX_DIM
 * (0..64, 0 = never) moves it without a rebuild, to measure a new device. */
static int small_max_dim(kiln_backend_kind kind) {
    const char *e = getenv("KILN_BLAS_SMALL_MAX_DIM");
    if (e && *e) {
        char *end = NULL;
        long v = strtol(e, &end, 10);
        if (end && *end == '\0' && v >= 0 && v <= 64) return (int)v;
    }
    return kind == KILN_BACKEND_CUDA ? 4 : 8;
}

kiln_status kiln_blas_state_get(kiln_context *ctx, kiln_blas_state **out) {
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK) s = kiln_context_check_open(ctx, "BLAS");
    if (s != KILN_OK) return s;
    const blas_provider *prov =
        ctx->ops->kind == KILN_BACKEND_CUDA ? kiln_blas_cublas_provider() : kiln_blas_openblas_provider();
    s = prov->load();
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&ctx->lock);
    if (!ctx->blas) {
        kiln_blas_state *st = calloc(1, sizeof *st);
        if (st) {
            pthread_mutex_init(&st->lock, NULL);
            st->provider = prov;
            st->small_max_dim = small_max_dim(ctx->ops->kind);
            ctx->blas = st;
        }
    }
    kiln_blas_state *st = ctx->blas;
    pthread_mutex_unlock(&ctx->lock);
    if (!st) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for the BLAS state");
    *out = st;
    return KILN_OK;
}

/* One body per dtype (the accumulator's type), over any strides: the
 * gufunc machinery stages rows through registers or shared memory. */
#define SMALL_GEMM_BODY(acc_type)                                                                            \
    "for (int i = 0; i < C.shape[0]; i++)\n"                                                                 \
    "    for (int j = 0; j < C.shape[1]; j++) {\n"                                                           \
    "        " acc_type " acc = 0;\n"                                                                        \
    "        for (int k = 0; k < A.shape[1]; k++) acc += A(i, k) * B(k, j);\n"                               \
    "        C(i, j) = acc;\n"                                                                               \
    "    }\n"

kiln_status kiln_blas_small_gemm(kiln_context *ctx, kiln_dtype dtype, kiln_gufunc **out) {
    kiln_blas_state *st;
    kiln_status s = kiln_blas_state_get(ctx, &st);
    if (s != KILN_OK) return s;
    int which = dtype == KILN_FLOAT64;
    pthread_mutex_lock(&st->lock);
    if (!st->small_gemm[which])
        s = which ? kiln_guvectorize(ctx, "kiln_blas_small_dgemm", "void(f8[:,:], f8[:,:], f8[:,:])",
                                     "(m,k),(k,n)->(m,n)", "A, B, C", SMALL_GEMM_BODY("double"), NULL,
                                     &st->small_gemm[which])
                  : kiln_guvectorize(ctx, "kiln_blas_small_sgemm", "void(f4[:,:], f4[:,:], f4[:,:])",
                                     "(m,k),(k,n)->(m,n)", "A, B, C", SMALL_GEMM_BODY("float"), NULL,
                                     &st->small_gemm[which]);
    *out = st->small_gemm[which];
    pthread_mutex_unlock(&st->lock);
    return s;
}

kiln_status kiln_blas_converter(kiln_context *ctx, kiln_ufunc **out) {
    kiln_blas_state *st;
    kiln_status s = kiln_blas_state_get(ctx, &st);
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&st->lock);
    /* kiln_call picks the first signature the input casts to safely and
     * writes the result into an output of any dtype it casts to safely. */
    if (!st->convert)
        s = kiln_vectorize(ctx, "kiln_blas_convert", "f4(f4); f8(f8); c8(c8); c16(c16)", "x", "return x;",
                           NULL, &st->convert);
    *out = st->convert;
    pthread_mutex_unlock(&st->lock);
    return s;
}

kiln_status kiln_blas_check_int(const char *what, int64_t value) {
    if (value >= 0 && value <= INT32_MAX) return KILN_OK;
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s = %lld does not fit the BLAS libraries' 32-bit int", what,
                          (long long)value);
}
