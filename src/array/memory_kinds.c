/* memory_kinds.c: arrays of the driver layer's memory kinds: mapped pinned
 * host memory, managed memory, and device memory taken from the pool in a
 * stream's order; prefetch and advice for managed memory; the pool's
 * release threshold. */
#include <stdlib.h>

#include "array/array.h"
#include "core/error.h"

static kiln_status need(kiln_context *ctx, int present, const char *what) {
    if (!present)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: not available on the %s backend", what,
                              ctx->ops->name);
    return KILN_OK;
}

static kiln_status empty_kind(kiln_context *ctx, kiln_memory kind, kiln_dtype dtype, int ndim,
                              const int64_t *shape, kiln_array **out, const char *what) {
    if (!ctx || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: ctx or out is NULL", what);
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK) s = need(ctx, ctx->ops->mem_alloc_kind && ctx->ops->mem_free_kind, what);
    if (s != KILN_OK) return s;
    /* Neither kind comes from a stream-ordered pool: on a GPU the driver
     * cannot put their allocation into a graph. */
    if (kiln_context_capturing(ctx)) return kiln_capture_refuse(ctx, what);
    kiln_array *a = NULL;
    s = kiln_array_alloc_header(ctx, dtype, ndim, shape, &a);
    if (s != KILN_OK) return s;
    size_t bytes = kiln_array_nbytes(a);
    void *device = NULL, *host = NULL;
    s = ctx->ops->mem_alloc_kind(ctx->state, kind, bytes ? bytes : 1, &device, &host);
    if (s != KILN_OK) {
        kiln_context_release(a->ctx);
        free(a);
        return kiln_prefix_error(s, "%s (%zu bytes): ", what, bytes);
    }
    a->allocation = device;
    a->data = device;
    a->memory = KILN_MEMORY_DEVICE; /* kernels and copies take it as device memory */
    a->kind = kind;
    a->device_base = device;
    a->host_base = host;
    *out = a;
    return KILN_OK;
}

kiln_status kiln_array_empty_mapped(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                    kiln_array **out) {
    return empty_kind(ctx, KILN_MEMORY_MAPPED, dtype, ndim, shape, out, "kiln_array_empty_mapped");
}

kiln_status kiln_array_empty_managed(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                     kiln_array **out) {
    return empty_kind(ctx, KILN_MEMORY_MANAGED, dtype, ndim, shape, out, "kiln_array_empty_managed");
}

kiln_status kiln_array_empty_async(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                   kiln_stream *stream, kiln_array **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_empty_async: ctx or out is NULL");
    if (stream && stream->ctx != ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_array_empty_async: the stream belongs to another context");
    /* An array outlives the capture, but memory allocated in a graph is the
     * graph's (re-made at each launch on a GPU): kiln's own temporaries in
     * captured calls may be, a user's array may not. */
    if (kiln_stream_capturing(stream))
        return kiln_capture_refuse(ctx, "kiln_array_empty_async on the capturing stream");
    kiln_array *a = NULL;
    kiln_status s = kiln_array_alloc_header(ctx, dtype, ndim, shape, &a);
    if (s != KILN_OK) return s;
    size_t bytes = kiln_array_nbytes(a);
    s = ctx->ops->mem_alloc(ctx->state, bytes ? bytes : 1, kiln_stream_impl(stream), &a->allocation);
    if (s != KILN_OK) {
        kiln_context_release(a->ctx);
        free(a);
        return kiln_prefix_error(s, "kiln_array_empty_async (%zu bytes): ", bytes);
    }
    a->data = a->allocation;
    a->memory = KILN_MEMORY_DEVICE;
    /* Freed on the stream it was made on unless later work moves it. */
    kiln_array_note_stream(a, stream);
    *out = a;
    return KILN_OK;
}

void *kiln_array_host_data(const kiln_array *a) {
    if (!a) return NULL;
    if (a->kind == KILN_MEMORY_MAPPED || a->kind == KILN_MEMORY_MANAGED)
        return a->host_base + (a->data - a->device_base);
    if (a->memory == KILN_MEMORY_HOST || kiln_backend_has(a->ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY))
        return a->data;
    return NULL;
}

static kiln_status managed_only(kiln_array *a, const char *what) {
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: array is NULL", what);
    kiln_status s = kiln_context_check(a->ctx);
    if (s != KILN_OK) return s;
    if (a->kind != KILN_MEMORY_MANAGED)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: the array is not managed memory (make it with kiln_array_empty_managed)",
                              what);
    return KILN_OK;
}

/* The bytes a's elements span, from its lowest. */
static void span(kiln_array *a, char **lo, size_t *bytes) {
    char *hi;
    kiln_array_byte_extent(a, lo, &hi);
    *bytes = (size_t)(hi - *lo);
}

kiln_status kiln_array_prefetch(kiln_array *a, int to_device, kiln_stream *stream) {
    kiln_status s = managed_only(a, "kiln_array_prefetch");
    if (s != KILN_OK) return s;
    if (stream && stream->ctx != a->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_array_prefetch: the stream belongs to another context");
    s = need(a->ctx, a->ctx->ops->mem_prefetch != NULL, "kiln_array_prefetch");
    if (s != KILN_OK) return s;
    char *lo;
    size_t bytes;
    span(a, &lo, &bytes);
    if (bytes == 0) return KILN_OK;
    kiln_array_note_stream(a, stream);
    return kiln_context_note(a->ctx, a->ctx->ops->mem_prefetch(a->ctx->state, lo, bytes, to_device != 0,
                                                               kiln_stream_impl(stream)));
}

kiln_status kiln_array_advise(kiln_array *a, kiln_memory_advice advice) {
    kiln_status s = managed_only(a, "kiln_array_advise");
    if (s != KILN_OK) return s;
    if (advice < KILN_ADVISE_READ_MOSTLY || advice > KILN_ADVISE_ACCESSED_BY_DEVICE)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_advise: unknown advice %d", (int)advice);
    s = need(a->ctx, a->ctx->ops->mem_advise != NULL, "kiln_array_advise");
    if (s != KILN_OK) return s;
    char *lo;
    size_t bytes;
    span(a, &lo, &bytes);
    if (bytes == 0) return KILN_OK;
    return kiln_context_note(a->ctx, a->ctx->ops->mem_advise(a->ctx->state, lo, bytes, advice));
}

kiln_status kiln_pool_set_release_threshold(kiln_context *ctx, uint64_t bytes) {
    if (!ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_pool_set_release_threshold: ctx is NULL");
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK)
        s = need(ctx, ctx->ops->pool_set_release_threshold != NULL, "kiln_pool_set_release_threshold");
    if (s != KILN_OK) return s;
    return kiln_context_note(ctx, ctx->ops->pool_set_release_threshold(ctx->state, bytes));
}

kiln_status kiln_device_can_access_peer(kiln_context *ctx, kiln_context *peer, int *can) {
    if (!ctx || !peer || !can)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_device_can_access_peer: NULL argument");
    *can = 0;
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK) s = kiln_context_check(peer);
    if (s != KILN_OK) return s;
    if (ctx->ops != peer->ops) return KILN_OK; /* a CPU and a GPU context: through the host */
    s = need(ctx, ctx->ops->device_can_access_peer != NULL, "kiln_device_can_access_peer");
    if (s != KILN_OK) return s;
    return kiln_context_note(ctx, ctx->ops->device_can_access_peer(ctx->state, peer->state, can));
}
