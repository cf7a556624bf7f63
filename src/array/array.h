/* array.h: the layout of kiln_array (private to src/). */
#ifndef KILN_ARRAY_ARRAY_H
#define KILN_ARRAY_ARRAY_H

#include <stdatomic.h>

#include "core/context.h"

struct kiln_array {
    atomic_int refs;
    kiln_context *ctx;
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    int64_t strides[KILN_MAX_DIMS]; /* bytes */
    kiln_memory memory;
    char *data;          /* element 0 */
    void *allocation;    /* what to free when the last reference goes (owner only) */
    int host_allocation; /* allocation is plain host memory (kiln_array_empty_host),
                            freed with free() whatever the context's backend */
    kiln_array *base;    /* views: the array that owns the memory (retained) */
    /* Owners: the user stream that last queued work on the memory (retained;
     * NULL = the default stream). The free is queued on it. */
    _Atomic(kiln_stream *) last_stream;
    /* Memory of the driver layer's kinds (array/memory_kinds.c):
     * KILN_MEMORY_MAPPED or _MANAGED, else 0 (memory says what it is).
     * Such memory is device memory to the rest of kiln (memory ==
     * KILN_MEMORY_DEVICE); views copy these fields, so host_base +
     * (data - device_base) is any view's host address. */
    kiln_memory kind;
    char *device_base, *host_base;
    /* Arrays over memory something else owns, such as a module's variable
     * (kiln_module_global): `keeper` is held while the array lives and
     * let go with keeper_release; keeper_write_check, when set, says
     * whether a write may start now (kiln_array_check_write). Views reach
     * them through base. */
    void *keeper;
    void (*keeper_release)(void *keeper);
    kiln_status (*keeper_write_check)(void *keeper);
};

/* KILN_OK when a's memory may be written now; else the keeper's error. */
kiln_status kiln_array_check_write(const kiln_array *a);

/* A new array struct sharing a's memory, shape and strides (the caller then
 * edits them): it holds a's context and a's owner, as every view must. */
kiln_status kiln_array_view_header(kiln_array *a, kiln_array **out);

/* What kiln_array_release does once the last reference is gone (a graph
 * calls it for arrays released during its capture). */
void kiln_array_free_now(kiln_array *a);

/* Records that work on `stream` uses a's memory (see last_stream). */
void kiln_array_note_stream(kiln_array *a, kiln_stream *stream);

/* New array struct with C-order strides; no memory attached. */
kiln_status kiln_array_alloc_header(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                    kiln_array **out);
/* Element count of a shape; -1 on overflow. */
int64_t kiln_shape_size(int ndim, const int64_t *shape);
void kiln_contiguous_strides(int ndim, const int64_t *shape, size_t itemsize, int64_t *strides);
/* Formats "(3, 4)" into buf. */
const char *kiln_shape_format(int ndim, const int64_t *shape, char *buf, size_t cap);
/* Lowest and one-past-highest byte touched by the array (for overlap checks). */
void kiln_array_byte_extent(const kiln_array *a, char **lo, char **hi);

/* A new contiguous array of ctx in plain host memory (KILN_MEMORY_HOST, on
 * any backend): what the host reads and writes directly, e.g. ufunc results
 * for host inputs on a CUDA context. The array owns the memory; it is freed
 * when the last reference (views count) goes, without the backend, so the
 * release works even after the context's device has faulted. */
kiln_status kiln_array_empty_host(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                  kiln_array **out);
/* Can the host touch this array's memory directly? */
int kiln_array_host_accessible(const kiln_array *a);
/* dst = src for host-accessible arrays of equal shape and item size. */
void kiln_host_strided_copy(const kiln_array *dst, const kiln_array *src);
/* Contiguous copy through the backend, recorded by the profiler. */
kiln_status kiln_backend_copy(kiln_context *ctx, void *dst, const void *src, size_t bytes,
                              kiln_copy_kind kind, kiln_backend_stream *stream, int async);

#endif
