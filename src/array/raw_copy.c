/* raw_copy.c: the moves that need no kernel: contiguous copies through the
 * backend (recorded by the profiler) and strided copies by a host loop. */
#include <string.h>

#include "array/array.h"
#include "prof/prof.h"

int kiln_array_host_accessible(const kiln_array *a) {
    return a->memory == KILN_MEMORY_HOST || kiln_backend_has(a->ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY);
}

kiln_status kiln_backend_copy(kiln_context *ctx, void *dst, const void *src, size_t bytes,
                              kiln_copy_kind kind, kiln_backend_stream *stream, int async) {
    if (bytes == 0) return KILN_OK;
    kiln_prof_op *op = NULL;
    if (KILN_PROF_ON(ctx)) {
        const void *host = kind == KILN_COPY_HOST_TO_DEVICE ? src : dst;
        int pinned = ctx->ops->host_is_pinned ? ctx->ops->host_is_pinned(ctx->state, host) : 0;
        op = kiln_prof_copy_begin(ctx, kind, bytes, pinned, stream);
    }
    kiln_status s = ctx->ops->copy(ctx->state, dst, src, bytes, kind, stream, async);
    if (op) kiln_prof_end(ctx, op);
    return kiln_context_note(ctx, s);
}

static void host_copy_rec(char *dst, const int64_t *ds, const char *src, const int64_t *ss,
                          const int64_t *shape, int ndim, size_t item) {
    if (ndim == 0) {
        memcpy(dst, src, item);
        return;
    }
    if (ndim == 1 && ds[0] == (int64_t)item && ss[0] == (int64_t)item) {
        memcpy(dst, src, (size_t)shape[0] * item);
        return;
    }
    for (int64_t i = 0; i < shape[0]; i++)
        host_copy_rec(dst + i * ds[0], ds + 1, src + i * ss[0], ss + 1, shape + 1, ndim - 1, item);
}

void kiln_host_strided_copy(const kiln_array *dst, const kiln_array *src) {
    if (kiln_array_size(dst) == 0) return;
    host_copy_rec(dst->data, dst->strides, src->data, src->strides, dst->shape, dst->ndim,
                  kiln_dtype_size(dst->dtype));
}
