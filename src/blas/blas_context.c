/* blas_context.c: what src/blas keeps per context: the provider (chosen by
 * kiln_provider_select, which keeps its per-context state) and kiln's own
 * kernels (small batched matmul, dtype conversion), each made on first use. */
#include <stdio.h>
#include <stdlib.h>

#include "array/array.h"
#include "blas/blas_internal.h"
#include "core/dtype.h"

static void blas_destroy(kiln_context *ctx, void *state);
static void blas_on_close(kiln_context *ctx, void *state);

/* kiln's own ufuncs hold the context: released at kiln_close. */
static const kiln_slot_class blas_slot = {
    .name = "BLAS",
    .close_stage = KILN_SLOT_CLOSE_RELEASE,
    .on_close = blas_on_close,
    .destroy = blas_destroy,
};

static void blas_destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    kiln_blas_state *st = state;
    kiln_gufunc_release(st->small_gemm[0]);
    kiln_gufunc_release(st->small_gemm[1]);
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) kiln_ufunc_release(st->convert[t]);
    kiln_ufunc_release(st->round_bf16);
    kiln_ufunc_release(st->conjugate);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static void blas_on_close(kiln_context *ctx, void *state) {
    (void)state;
    void *st = kiln_slot_take(ctx, &blas_slot);
    if (st) blas_destroy(ctx, st);
}

/* The slot's create; `arg` is the provider. */
static kiln_status blas_create(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    kiln_blas_state *st = calloc(1, sizeof *st);
    if (!st) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for the BLAS state");
    pthread_mutex_init(&st->lock, NULL);
    st->provider = arg;
    *state = st;
    return KILN_OK;
}

static const kiln_provider *const blas_providers[] = {&kiln_blas_cublas.base, &kiln_blas_openblas.base};

kiln_status kiln_blas_state_get(kiln_context *ctx, kiln_blas_state **out) {
    *out = NULL;
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK) s = kiln_context_check_open(ctx, "BLAS");
    if (s != KILN_OK) return s;
    const kiln_provider *chosen;
    s = kiln_provider_select(ctx, blas_providers, sizeof blas_providers / sizeof blas_providers[0], &chosen);
    if (s != KILN_OK) return s;
    const blas_provider *prov = (const blas_provider *)chosen;
    /* A library that runs inside the call would run now, not at the
     * graph's launch (kernel/graph.c). */
    if (!prov->capturable && kiln_context_capturing(ctx)) {
        char what[64];
        snprintf(what, sizeof what, "BLAS through %s", prov->base.name);
        return kiln_capture_refuse(ctx, what);
    }
    void *state = NULL;
    s = kiln_slot_get(ctx, &blas_slot, blas_create, (void *)prov, &state);
    if (s != KILN_OK) return s;
    *out = state;
    return KILN_OK;
}

int kiln_blas_host_only(const kiln_array *a) {
    return a->memory == KILN_MEMORY_HOST && !kiln_backend_has(a->ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY);
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

kiln_status kiln_blas_converter(kiln_context *ctx, kiln_dtype dtype, kiln_ufunc **out) {
    kiln_blas_state *st;
    kiln_status s = kiln_blas_state_get(ctx, &st);
    if (s != KILN_OK) return s;
    if ((unsigned)dtype >= KILN_DTYPE_COUNT)
        return kiln_set_error(KILN_ERR_DTYPE, "blas: no conversion to dtype %d", (int)dtype);
    pthread_mutex_lock(&st->lock);
    /* One signature per target: kiln_call takes any input that casts to it
     * safely (int8 to bfloat16 as well as float32 to float64). */
    if (!st->convert[dtype]) {
        char name[48], sig[48];
        const char *code = kiln_dtype_code(dtype);
        snprintf(name, sizeof name, "kiln_blas_convert_%s", code);
        snprintf(sig, sizeof sig, "%s(%s)", code, code);
        s = kiln_vectorize(ctx, name, sig, "x", "return x;", NULL, &st->convert[dtype]);
    }
    *out = st->convert[dtype];
    pthread_mutex_unlock(&st->lock);
    return s;
}

kiln_status kiln_blas_bf16_rounder(kiln_context *ctx, kiln_ufunc **out) {
    kiln_blas_state *st;
    kiln_status s = kiln_blas_state_get(ctx, &st);
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&st->lock);
    if (!st->round_bf16)
        s = kiln_vectorize(ctx, "kiln_blas_round_bf16", "bf16(f4)", "x", "return x;", NULL, &st->round_bf16);
    *out = st->round_bf16;
    pthread_mutex_unlock(&st->lock);
    return s;
}

static kiln_status conjugator(kiln_context *ctx, kiln_ufunc **out) {
    kiln_blas_state *st;
    kiln_status s = kiln_blas_state_get(ctx, &st);
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&st->lock);
    if (!st->conjugate)
        s = kiln_vectorize(ctx, "kiln_blas_conj", "c8(c8); c16(c16)", "x", "return conj(x);", NULL,
                           &st->conjugate);
    *out = st->conjugate;
    pthread_mutex_unlock(&st->lock);
    return s;
}

kiln_status kiln_blas_conjugate(kiln_array *a, kiln_stream *stream, const char *why, kiln_array **out) {
    kiln_context *ctx = a->ctx;
    kiln_ufunc *f;
    kiln_status s = conjugator(ctx, &f);
    kiln_array *y = *out;
    int made = !y;
    if (s == KILN_OK && made) s = kiln_array_empty(ctx, a->dtype, a->ndim, a->shape, &y);
    char shape[96];
    struct kiln_prof_op *op =
        s == KILN_OK ? kiln_blas_prof_begin(ctx, stream, made ? "conjugate copy" : "conjugate in place",
                                            a->dtype, "kiln", 0, "%s: %s",
                                            kiln_shape_format(a->ndim, a->shape, shape, sizeof shape), why)
                     : NULL;
    const kiln_value arg = kiln_arr(a);
    if (s == KILN_OK) s = kiln_call_ex(f, NULL, stream, &arg, 1, &y);
    kiln_blas_prof_end(ctx, op);
    if (s != KILN_OK) {
        if (made) kiln_array_release(y);
        return kiln_prefix_error(s, "conjugating a BLAS operand (%s): ", why);
    }
    *out = y;
    return KILN_OK;
}

kiln_status kiln_blas_check_int(const char *what, int64_t value) {
    if (value >= 0 && value <= INT32_MAX) return KILN_OK;
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s = %lld does not fit the BLAS libraries' 32-bit int", what,
                          (long long)value);
}
