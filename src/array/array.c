/* array.c: creating, retaining and releasing arrays, and their accessors. */
#include "array/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/clock.h"
#include "core/error.h"
#include "prof/prof.h"

int64_t kiln_shape_size(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] != 0 && n > INT64_MAX / shape[i]) return -1;
        n *= shape[i];
    }
    return n;
}

void kiln_contiguous_strides(int ndim, const int64_t *shape, size_t itemsize, int64_t *strides) {
    int64_t s = (int64_t)itemsize;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

const char *kiln_shape_format(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, ndim == 1 ? ",)" : ")");
    return buf;
}

kiln_status kiln_array_alloc_header(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                    kiln_array **out) {
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "out is NULL");
    if ((unsigned)dtype >= KILN_DTYPE_COUNT)
        return kiln_set_error(KILN_ERR_DTYPE, "invalid dtype %d", (int)dtype);
    if (ndim < 0 || ndim > KILN_MAX_DIMS)
        return kiln_set_error(KILN_ERR_SHAPE, "ndim %d out of range: kiln arrays have 0 to %d dims", ndim,
                              KILN_MAX_DIMS);
    if (ndim > 0 && !shape)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "shape is NULL for ndim %d", ndim);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return kiln_set_error(KILN_ERR_SHAPE, "negative dimension: shape[%d] = %lld", i,
                                  (long long)shape[i]);
    int64_t n = kiln_shape_size(ndim, shape);
    if (n < 0 || (uint64_t)n > SIZE_MAX / kiln_dtype_size(dtype))
        return kiln_set_error(KILN_ERR_SHAPE, "array too large: the element count overflows");
    kiln_array *a = calloc(1, sizeof *a);
    if (!a) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    atomic_init(&a->refs, 1);
    atomic_init(&a->last_stream, NULL);
    a->ctx = kiln_context_retain(ctx); /* every array struct holds its context */
    a->dtype = dtype;
    a->ndim = ndim;
    for (int i = 0; i < ndim; i++) a->shape[i] = shape[i];
    kiln_contiguous_strides(ndim, a->shape, kiln_dtype_size(dtype), a->strides);
    *out = a;
    return KILN_OK;
}

kiln_status kiln_array_empty(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                             kiln_array **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_empty: ctx or out is NULL");
    kiln_array *a = NULL;
    kiln_status s = kiln_array_alloc_header(ctx, dtype, ndim, shape, &a);
    if (s != KILN_OK) return s;
    size_t bytes = kiln_array_nbytes(a);
    double t0 = KILN_PROF_ON(ctx) ? kiln_now_ms() : 0;
    /* Zero-size arrays still get a real (1-byte) allocation: kernels may be
     * handed their pointer, and NULL would read as "no array". */
    s = ctx->ops->mem_alloc(ctx->state, bytes ? bytes : 1, NULL, &a->allocation);
    if (s != KILN_OK) {
        kiln_context_release(a->ctx);
        free(a);
        char shape_text[256];
        return kiln_prefix_error(s, "allocating %s array %s (%zu bytes): ", kiln_dtype_name(dtype),
                                 kiln_shape_format(ndim, shape, shape_text, sizeof shape_text), bytes);
    }
    if (KILN_PROF_ON(ctx)) kiln_prof_alloc(ctx, bytes, kiln_now_ms() - t0);
    a->data = a->allocation;
    a->memory = KILN_MEMORY_DEVICE;
    *out = a;
    return KILN_OK;
}

/* Host memory for kiln_array_empty_host: plain, not pinned. Pinning is not
 * cheap enough to do per array: cuMemHostAlloc page-locks every page up front
 * (a cost of the order of copying the buffer a few times) and cuMemFreeHost
 * synchronises the whole device, which would stall unrelated streams at each
 * release. The ufunc pipeline moves pageable memory through pinned staging
 * buffers of its own instead. Alignment as the CPU backend's: a cache line,
 * whole pages for large buffers, and 2 MiB for very large ones, which then ask
 * for transparent huge pages: such arrays are usually written once, front to
 * back, and 2 MiB pages take 512 times fewer faults on that first touch. */
#define HOST_LARGE_BYTES ((size_t)1 << 20)
#define HOST_HUGE_PAGE_BYTES ((size_t)2 << 20)

static void *host_memory(size_t bytes) {
    if (bytes == 0) bytes = 1;
    size_t align = bytes >= 4 * HOST_HUGE_PAGE_BYTES ? HOST_HUGE_PAGE_BYTES
                   : bytes >= HOST_LARGE_BYTES       ? 4096
                                                     : 64;
    if (bytes > SIZE_MAX - align) return NULL;
    size_t rounded = (bytes + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, rounded);
#ifdef MADV_HUGEPAGE
    if (p && align == HOST_HUGE_PAGE_BYTES) (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only */
#endif
    return p;
}

kiln_status kiln_array_empty_host(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                  kiln_array **out) {
    kiln_array *a = NULL;
    kiln_status s = kiln_array_alloc_header(ctx, dtype, ndim, shape, &a);
    if (s != KILN_OK) return s;
    size_t bytes = kiln_array_nbytes(a);
    a->allocation = host_memory(bytes);
    if (!a->allocation) {
        kiln_context_release(a->ctx);
        free(a);
        char shape_text[256];
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory allocating %s array %s (%zu bytes)",
                              kiln_dtype_name(dtype),
                              kiln_shape_format(ndim, shape, shape_text, sizeof shape_text), bytes);
    }
    a->host_allocation = 1;
    a->data = a->allocation;
    a->memory = KILN_MEMORY_HOST;
    *out = a;
    return KILN_OK;
}

kiln_status kiln_array_wrap_host(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                 const int64_t *strides_bytes, void *data, kiln_array **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_wrap_host: ctx or out is NULL");
    if (!data) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_wrap_host: data is NULL");
    kiln_array *a = NULL;
    kiln_status s = kiln_array_alloc_header(ctx, dtype, ndim, shape, &a);
    if (s != KILN_OK) return s;
    if (strides_bytes)
        for (int i = 0; i < ndim; i++) a->strides[i] = strides_bytes[i];
    a->data = data;
    a->memory = KILN_MEMORY_HOST;
    *out = a;
    return KILN_OK;
}

kiln_array *kiln_array_retain(kiln_array *a) {
    if (a) atomic_fetch_add(&a->refs, 1);
    return a;
}

void kiln_array_note_stream(kiln_array *a, kiln_stream *stream) {
    kiln_array *owner = a->base ? a->base : a;
    if (atomic_load_explicit(&owner->last_stream, memory_order_relaxed) == stream) return;
    kiln_stream_retain(stream);
    kiln_stream_release(atomic_exchange(&owner->last_stream, stream));
}

void kiln_array_release(kiln_array *a) {
    if (!a || atomic_fetch_sub(&a->refs, 1) != 1) return;
    kiln_stream *last = a->base ? NULL : atomic_load(&a->last_stream);
    /* Memory a capture used may be used at every launch of its graph:
     * freed with the graph, not now (kernel/graph.c). */
    if (a->allocation && kiln_stream_capturing(last) && kiln_stream_defer_release(last, a)) return;
    kiln_array_free_now(a);
}

/* Frees an owner's memory of a driver-layer kind (array/memory_kinds.c
 * makes it; freeing is the array's own job). */
static void free_of_kind(kiln_array *a) {
    /* Mapped and managed frees are not stream-ordered: wait for the work
     * that last used the memory, as cuMemFreeHost and cuMemFree would for
     * the whole device anyway. */
    kiln_stream *last = atomic_load(&a->last_stream);
    if (!atomic_load(&a->ctx->dead) && !kiln_stream_capturing(last))
        (void)a->ctx->ops->stream_synchronize(a->ctx->state, kiln_stream_impl(last));
    a->ctx->ops->mem_free_kind(a->ctx->state, a->kind, a->allocation);
}

void kiln_array_free_now(kiln_array *a) {
    if (a->base)
        kiln_array_release(a->base);
    else if (a->keeper_release) {
        kiln_stream_release(atomic_load(&a->last_stream));
        a->keeper_release(a->keeper);
    } else if (a->allocation) {
        kiln_stream *last = atomic_load(&a->last_stream);
        /* No queued device work can still touch host memory: kernels refuse
         * host arrays on CUDA and every copy to or from one has completed
         * when it returns, so free() needs no wait. */
        if (a->host_allocation)
            free(a->allocation);
        else if (a->kind == KILN_MEMORY_MAPPED || a->kind == KILN_MEMORY_MANAGED)
            free_of_kind(a);
        else
            a->ctx->ops->mem_free(a->ctx->state, a->allocation, kiln_stream_impl(last));
        kiln_stream_release(last);
    }
    kiln_context *ctx = a->ctx;
    free(a);
    kiln_context_release(ctx);
}

kiln_status kiln_array_check_write(const kiln_array *a) {
    const kiln_array *owner = a->base ? a->base : a;
    return owner->keeper_write_check ? owner->keeper_write_check(owner->keeper) : KILN_OK;
}

kiln_context *kiln_array_context(const kiln_array *a) { return a ? a->ctx : NULL; }
kiln_dtype kiln_array_dtype(const kiln_array *a) { return a ? a->dtype : KILN_DTYPE_COUNT; }
int kiln_array_ndim(const kiln_array *a) { return a ? a->ndim : -1; }
const int64_t *kiln_array_shape(const kiln_array *a) { return a ? a->shape : NULL; }
const int64_t *kiln_array_strides(const kiln_array *a) { return a ? a->strides : NULL; }
int64_t kiln_array_size(const kiln_array *a) { return a ? kiln_shape_size(a->ndim, a->shape) : 0; }
size_t kiln_array_nbytes(const kiln_array *a) {
    return a ? (size_t)kiln_array_size(a) * kiln_dtype_size(a->dtype) : 0;
}
kiln_memory kiln_array_memory(const kiln_array *a) {
    return a ? (a->kind ? a->kind : a->memory) : KILN_MEMORY_DEVICE;
}
void *kiln_array_data(const kiln_array *a) { return a ? a->data : NULL; }

int kiln_array_is_contiguous(const kiln_array *a) {
    if (!a) return 0;
    int64_t expect = (int64_t)kiln_dtype_size(a->dtype);
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] == 0) return 1;
        if (a->shape[i] != 1 && a->strides[i] != expect) return 0;
        expect *= a->shape[i];
    }
    return 1;
}

void kiln_array_byte_extent(const kiln_array *a, char **lo, char **hi) {
    char *l = a->data, *h = a->data;
    if (kiln_array_size(a) == 0) {
        *lo = *hi = a->data;
        return;
    }
    for (int i = 0; i < a->ndim; i++) {
        int64_t span = (a->shape[i] - 1) * a->strides[i];
        if (span < 0)
            l += span;
        else
            h += span;
    }
    *lo = l;
    *hi = h + kiln_dtype_size(a->dtype);
}
