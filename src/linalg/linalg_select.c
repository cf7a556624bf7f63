/* linalg_select.c: the start of every linalg call: argument checks and the
 * provider's choice (cuSOLVER on CUDA contexts, LAPACKE on the CPU), in one
 * place above the providers. */
#include <string.h>

#include "array/array.h"
#include "core/settings.h"
#include "linalg/linalg.h"

static const kiln_provider *const *candidates(size_t *n) {
    static const kiln_provider *list[2];
    /* the tables are static const objects: their addresses never change */
    list[0] = &kiln_linalg_cusolver_provider()->base;
    list[1] = &kiln_linalg_lapacke_provider()->base;
    *n = 2;
    return list;
}

kiln_status kiln_linalg_begin(const char *op, kiln_array *a, int square, linalg_call *call) {
    memset(call, 0, sizeof *call);
    call->op = op;
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_%s: the array is NULL", op);
    kiln_context *ctx = a->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK) s = kiln_context_check_open(ctx, "linear algebra");
    if (s != KILN_OK) return s;
    /* The call reads each matrix's status back to the host before it
     * returns (NumPy raises at once), which a graph cannot hold. */
    if (kiln_context_capturing(ctx))
        return kiln_capture_refuse(ctx, "linear algebra (kiln_solve, kiln_qr, ...)");
    kiln_dtype t = a->dtype;
    if (t != KILN_FLOAT32 && t != KILN_FLOAT64 && t != KILN_COMPLEX64 && t != KILN_COMPLEX128)
        return kiln_set_error(KILN_ERR_DTYPE,
                              "kiln_%s: expected float32, float64, complex64 or complex128, found %s "
                              "(convert integers to float64 first, as NumPy does)",
                              op, kiln_dtype_name(t));
    char shape[160];
    if (a->ndim < 2)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "kiln_%s: expected a stack of matrices (ndim >= 2), found shape %s", op,
                              kiln_shape_format(a->ndim, a->shape, shape, sizeof shape));
    if (square && a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_%s: expected square matrices (..., n, n), found shape %s",
                              op, kiln_shape_format(a->ndim, a->shape, shape, sizeof shape));
    size_t n;
    const kiln_provider *const *list = candidates(&n);
    const kiln_provider *p;
    s = kiln_provider_select(ctx, list, n, &p);
    if (s == KILN_OK) s = kiln_provider_state(ctx, p, &call->state);
    if (s != KILN_OK) return kiln_prefix_error(s, "kiln_%s: ", op);
    call->ctx = ctx;
    call->p = (const linalg_provider *)p;
    call->host_loops = call->p->host_memory && kiln_setting_flag("KILN_LINALG_HOST_LOOPS", 1);
    /* the host reads and writes the memory itself: work queued before
     * this call must have finished */
    if (call->p->host_memory) s = kiln_context_note(ctx, ctx->ops->stream_synchronize(ctx->state, NULL));
    if (s != KILN_OK) return kiln_prefix_error(s, "kiln_%s: ", op);
    return KILN_OK;
}

kiln_status kiln_linalg_provider(kiln_context *ctx, const char **name) {
    if (!ctx || !name)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_linalg_provider: ctx or name is NULL");
    *name = NULL;
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    size_t n;
    const kiln_provider *const *list = candidates(&n);
    const kiln_provider *p;
    s = kiln_provider_select(ctx, list, n, &p);
    if (s == KILN_OK) *name = kiln_provider_describe(p);
    return s;
}
