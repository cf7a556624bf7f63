/* copy.c: moving array elements between host and device, any strides.
 *
 * Contiguous data moves in one backend copy. Strided device data is gathered
 * or scattered on the device by kiln_strided_copy (one pass, no host round
 * trip); strided host data by a host loop (array/raw_copy.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_ops/array_ops.h"
#include "core/error.h"
#include "kiln.h"

/* dst = src with both in device memory: one kernel launch. */
static kiln_status device_strided_copy(kiln_array *dst, kiln_array *src) {
    kiln_context *ctx = dst->ctx;
    int64_t n = kiln_array_size(dst);
    if (n == 0) return KILN_OK;
    if (kiln_array_is_contiguous(dst) && kiln_array_is_contiguous(src))
        return kiln_backend_copy(ctx, dst->data, src->data, kiln_array_nbytes(dst),
                                 KILN_COPY_DEVICE_TO_DEVICE, NULL, 0);
    kiln_kernel *k = NULL;
    kiln_status s = kiln_array_kernel(ctx, dst->dtype, 1, "kiln_strided_copy", &k);
    if (s != KILN_OK) return s;
    int nd = dst->ndim;
    int64_t meta[1 + 3 * KILN_MAX_DIMS];
    meta[0] = nd;
    for (int i = 0; i < nd; i++) {
        meta[1 + i] = dst->shape[i];
        meta[1 + nd + i] = dst->strides[i];
        meta[1 + 2 * nd + i] = src->strides[i];
    }
    int64_t meta_shape[1] = {1 + 3 * nd};
    kiln_array *meta_dev = NULL;
    s = kiln_array_from_host(ctx, KILN_INT64, 1, meta_shape, meta, sizeof(int64_t) * (size_t)meta_shape[0],
                             &meta_dev);
    if (s != KILN_OK) return s;
    s = kiln_launch(k, kiln_array_grid(ctx, n), KILN_DIM(256), 0, NULL,
                    KILN_ARGS(kiln_ptr(dst->data, KILN_DTYPE_COUNT), kiln_ptr(src->data, KILN_DTYPE_COUNT),
                              kiln_arr(meta_dev), kiln_i64(n)));
    kiln_array_release(meta_dev); /* stream-ordered free: safe after the launch */
    return s;
}

kiln_status kiln_array_from_host(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                 const void *data, size_t bytes, kiln_array **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_from_host: ctx or out is NULL");
    kiln_array *a = NULL;
    kiln_status s = kiln_array_empty(ctx, dtype, ndim, shape, &a);
    if (s == KILN_OK) s = kiln_array_from_host_copy(a, data, bytes);
    if (s != KILN_OK) {
        kiln_array_release(a);
        return s;
    }
    *out = a;
    return KILN_OK;
}

static kiln_status size_mismatch(const kiln_array *a, size_t bytes, const char *what) {
    char shape[256];
    return kiln_set_error(KILN_ERR_SHAPE,
                          "%s: copy size mismatch: the array %s of %s holds %zu bytes, the host buffer "
                          "is %zu bytes",
                          what, kiln_shape_format(a->ndim, a->shape, shape, sizeof shape),
                          kiln_dtype_name(a->dtype), kiln_array_nbytes(a), bytes);
}

/* Do dst and src share bytes without being the very same elements? Byte
 * extents are compared, so interleaved views that share no element also go
 * through a temporary: correct, one extra copy. The same view needs none. */
static int overlaps_differently(const kiln_array *dst, const kiln_array *src) {
    if (kiln_array_size(dst) == 0) return 0;
    if (dst->data == src->data &&
        memcmp(dst->strides, src->strides, sizeof(int64_t) * (size_t)dst->ndim) == 0)
        return 0;
    char *dlo, *dhi, *slo, *shi;
    kiln_array_byte_extent(dst, &dlo, &dhi);
    kiln_array_byte_extent(src, &slo, &shi);
    return dlo < shi && slo < dhi;
}

/* dst = src for arrays of two contexts (two GPUs, or a GPU and the CPU):
 * directly between the devices (the backend's copy_peer: over the peer link
 * when the devices allow it, else staged by the driver) when both are
 * contiguous device arrays of one backend, else through a host buffer. The
 * source context's queued work is waited for first (it may still be
 * writing src); the copy is queued on dst's default stream. */
static kiln_status assign_across(kiln_array *dst, kiln_array *src) {
    kiln_context *ctx = dst->ctx;
    kiln_status s = kiln_context_check(src->ctx);
    if (s == KILN_OK) s = kiln_context_note(src->ctx, src->ctx->ops->synchronize(src->ctx->state));
    if (s != KILN_OK) return s;
    size_t bytes = kiln_array_nbytes(dst);
    if (bytes == 0) return KILN_OK;
    if (ctx->ops == src->ctx->ops && ctx->ops->copy_peer && dst->memory == KILN_MEMORY_DEVICE &&
        src->memory == KILN_MEMORY_DEVICE && kiln_array_is_contiguous(dst) && kiln_array_is_contiguous(src)) {
        kiln_array_note_stream(dst, NULL);
        return kiln_context_note(
            ctx, ctx->ops->copy_peer(ctx->state, dst->data, src->ctx->state, src->data, bytes, NULL));
    }
    void *staging = malloc(bytes);
    if (!staging)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_array_assign: no host memory to stage %zu bytes",
                              bytes);
    s = kiln_array_to_host(src, staging, bytes);
    if (s == KILN_OK) s = kiln_array_from_host_copy(dst, staging, bytes);
    free(staging);
    return s;
}

kiln_status kiln_array_assign(kiln_array *dst, kiln_array *src) {
    if (!dst || !src) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_assign: NULL array");
    kiln_context *ctx = dst->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    char a[256], b[256];
    if (dst->dtype != src->dtype)
        return kiln_set_error(KILN_ERR_DTYPE, "kiln_array_assign: dtypes differ (%s <- %s)",
                              kiln_dtype_name(dst->dtype), kiln_dtype_name(src->dtype));
    if (dst->ndim != src->ndim || memcmp(dst->shape, src->shape, sizeof(int64_t) * (size_t)dst->ndim) != 0)
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_array_assign: shapes differ: %s <- %s",
                              kiln_shape_format(dst->ndim, dst->shape, a, sizeof a),
                              kiln_shape_format(src->ndim, src->shape, b, sizeof b));
    if ((s = kiln_array_check_write(dst)) != KILN_OK) return s;
    if (src->ctx != ctx) return assign_across(dst, src);
    if (overlaps_differently(dst, src)) {
        /* NumPy reads every source element before writing any (a[:] = a[::-1]):
         * copy the source aside first, then assign from the copy. */
        kiln_array *aside = NULL;
        s = kiln_array_copy(src, &aside);
        if (s == KILN_OK) s = kiln_array_assign(dst, aside);
        kiln_array_release(aside);
        return s;
    }
    int dst_host = kiln_array_host_accessible(dst), src_host = kiln_array_host_accessible(src);
    if (dst_host && src_host) {
        /* device memory that is host memory: kernels still writing it finish first */
        if (kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY)) (void)ctx->ops->synchronize(ctx->state);
        kiln_host_strided_copy(dst, src);
        return KILN_OK;
    }
    if (!dst_host && !src_host) return device_strided_copy(dst, src);
    /* One side on the host, one on the device: stage through a contiguous
     * array on each side as needed. */
    int dst_contig = kiln_array_is_contiguous(dst), src_contig = kiln_array_is_contiguous(src);
    size_t bytes = kiln_array_nbytes(dst);
    if (src_host) {
        void *packed = src->data;
        if (!src_contig) {
            kiln_array *tmp = NULL;
            if (!(packed = malloc(bytes ? bytes : 1)))
                return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
            s = kiln_array_wrap_host(ctx, src->dtype, src->ndim, src->shape, NULL, packed, &tmp);
            if (s == KILN_OK) kiln_host_strided_copy(tmp, src);
            kiln_array_release(tmp);
        }
        if (s == KILN_OK && dst_contig) {
            s = kiln_backend_copy(ctx, dst->data, packed, bytes, KILN_COPY_HOST_TO_DEVICE, NULL, 0);
        } else if (s == KILN_OK) {
            kiln_array *tmp = NULL;
            s = kiln_array_from_host(ctx, dst->dtype, dst->ndim, dst->shape, packed, bytes, &tmp);
            if (s == KILN_OK) s = device_strided_copy(dst, tmp);
            kiln_array_release(tmp);
        }
        if (!src_contig) free(packed);
        return s;
    }
    /* device -> host */
    kiln_array *gathered = NULL;
    if (!src_contig) {
        s = kiln_array_copy(src, &gathered);
        if (s != KILN_OK) return s;
    }
    const void *from = gathered ? gathered->data : src->data;
    if (dst_contig) {
        s = kiln_backend_copy(ctx, dst->data, from, bytes, KILN_COPY_DEVICE_TO_HOST, NULL, 0);
    } else {
        void *packed = malloc(bytes ? bytes : 1);
        kiln_array *tmp = NULL;
        if (!packed) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        if (s == KILN_OK) s = kiln_backend_copy(ctx, packed, from, bytes, KILN_COPY_DEVICE_TO_HOST, NULL, 0);
        if (s == KILN_OK)
            s = kiln_array_wrap_host(ctx, dst->dtype, dst->ndim, dst->shape, NULL, packed, &tmp);
        if (s == KILN_OK) kiln_host_strided_copy(dst, tmp);
        kiln_array_release(tmp);
        free(packed);
    }
    kiln_array_release(gathered);
    return s;
}

kiln_status kiln_array_copy(kiln_array *a, kiln_array **out) {
    if (!a || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_copy: NULL argument");
    kiln_array *c = NULL;
    kiln_status s = kiln_array_empty(a->ctx, a->dtype, a->ndim, a->shape, &c);
    if (s == KILN_OK) s = kiln_array_assign(c, a);
    if (s != KILN_OK) {
        kiln_array_release(c);
        return s;
    }
    *out = c;
    return KILN_OK;
}

/* Wraps a C-order host buffer as an array shaped like a and assigns. */
static kiln_status host_transfer(kiln_array *a, void *host, size_t bytes, int to_host, const char *what) {
    if (!a || (!host && bytes)) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (bytes != kiln_array_nbytes(a)) return size_mismatch(a, bytes, what);
    kiln_status s = kiln_context_check(a->ctx);
    if (s == KILN_OK && !to_host) s = kiln_array_check_write(a);
    if (s != KILN_OK || bytes == 0) return s;
    /* The capture's work on a runs only at the graph's launch: reading or
     * writing a from the host now would miss it (graphs, kernel/graph.c). */
    if (kiln_stream_capturing(atomic_load(&(a->base ? a->base : a)->last_stream)))
        return kiln_set_error(
            KILN_ERR_CAPTURE,
            "%s: the array is used by a graph being captured; a host %s cannot be part of the "
            "graph (use the _async form with kiln_host_alloc memory on the capturing stream)",
            what, to_host ? "read" : "write");
    if (kiln_array_is_contiguous(a)) {
        kiln_copy_kind kind = a->memory == KILN_MEMORY_HOST
                                  ? KILN_COPY_HOST_TO_HOST
                                  : (to_host ? KILN_COPY_DEVICE_TO_HOST : KILN_COPY_HOST_TO_DEVICE);
        return kiln_backend_copy(a->ctx, to_host ? host : a->data, to_host ? a->data : host, bytes, kind,
                                 NULL, 0);
    }
    kiln_array *h = NULL;
    s = kiln_array_wrap_host(a->ctx, a->dtype, a->ndim, a->shape, NULL, host, &h);
    if (s == KILN_OK) s = to_host ? kiln_array_assign(h, a) : kiln_array_assign(a, h);
    kiln_array_release(h);
    return s;
}

kiln_status kiln_array_to_host(kiln_array *a, void *dst, size_t bytes) {
    return host_transfer(a, dst, bytes, 1, "kiln_array_to_host");
}

kiln_status kiln_array_from_host_copy(kiln_array *a, const void *src, size_t bytes) {
    return host_transfer(a, (void *)src, bytes, 0, "kiln_array_from_host_copy");
}

static kiln_status async_transfer(kiln_array *a, void *host, size_t bytes, kiln_stream *stream, int to_host,
                                  const char *what) {
    if (!a || (!host && bytes)) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (bytes != kiln_array_nbytes(a)) return size_mismatch(a, bytes, what);
    if (stream && stream->ctx != a->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: stream belongs to another context", what);
    if (!kiln_array_is_contiguous(a))
        return kiln_set_error(KILN_ERR_SHAPE,
                              "%s: asynchronous copies need a contiguous array; "
                              "use kiln_array_copy first or the synchronous form",
                              what);
    kiln_status s = kiln_context_check(a->ctx);
    if (s == KILN_OK && !to_host) s = kiln_array_check_write(a);
    if (s != KILN_OK) return s;
    /* A graph copies only to and from page-locked memory: the driver cannot
     * capture a pageable copy, which it stages through the host. */
    if (kiln_stream_capturing(stream) && a->ctx->ops->host_is_pinned &&
        !a->ctx->ops->host_is_pinned(a->ctx->state, host))
        return kiln_set_error(KILN_ERR_CAPTURE,
                              "%s on a stream capturing a graph: the host buffer is pageable; a graph copies "
                              "only to and from kiln_host_alloc memory",
                              what);
    if (stream) kiln_array_note_stream(a, stream);
    kiln_copy_kind kind = a->memory == KILN_MEMORY_HOST ? KILN_COPY_HOST_TO_HOST
                          : to_host                     ? KILN_COPY_DEVICE_TO_HOST
                                                        : KILN_COPY_HOST_TO_DEVICE;
    return kiln_backend_copy(a->ctx, to_host ? host : a->data, to_host ? a->data : host, bytes, kind,
                             kiln_stream_impl(stream), 1);
}

kiln_status kiln_array_to_host_async(kiln_array *a, void *dst, size_t bytes, kiln_stream *stream) {
    return async_transfer(a, dst, bytes, stream, 1, "kiln_array_to_host_async");
}

kiln_status kiln_array_from_host_async(kiln_array *a, const void *src, size_t bytes, kiln_stream *stream) {
    return async_transfer(a, (void *)src, bytes, stream, 0, "kiln_array_from_host_async");
}
