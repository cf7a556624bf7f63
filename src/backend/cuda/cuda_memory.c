/* cuda_memory.c: device memory from the stream-ordered pool, pinned host
 * memory, copies and memset. */
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

/* Device pointers travel through kiln as void *; the driver wants integers. */
static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

kiln_status kiln_cuda_mem_alloc(kiln_backend_state *st, size_t bytes, kiln_backend_stream *stream,
                                void **out) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUdeviceptr p = 0;
    CUresult r = st->cu->cuMemAllocAsync(&p, bytes, kiln_cuda_stream(st, stream));
    if (r != CUDA_SUCCESS) {
        s = kiln_cuda_fail(st->cu, r, "cuMemAllocAsync");
        if (s == KILN_ERR_OUT_OF_MEMORY)
            kiln_prefix_error(s, "cannot allocate %zu bytes on CUDA device %d: ", bytes, st->ordinal);
        return s;
    }
    *out = (void *)(uintptr_t)p;
    return KILN_OK;
}

/* Never reports: freeing must work even on a context a fault has killed. */
void kiln_cuda_mem_free(kiln_backend_state *st, void *ptr, kiln_backend_stream *stream) {
    if (!ptr || kiln_cuda_make_current(st) != KILN_OK) return;
    (void)st->cu->cuMemFreeAsync(dptr(ptr), kiln_cuda_stream(st, stream));
}

kiln_status kiln_cuda_host_alloc(kiln_backend_state *st, size_t bytes, void **out) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    void *p = NULL;
    /* PORTABLE: pinned for every context, not only this one. */
    CUresult r = st->cu->cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
    if (r != CUDA_SUCCESS) {
        s = kiln_cuda_fail(st->cu, r, "cuMemHostAlloc");
        if (s == KILN_ERR_OUT_OF_MEMORY) kiln_prefix_error(s, "cannot pin %zu bytes of host memory: ", bytes);
        return s;
    }
    *out = p;
    return KILN_OK;
}

void kiln_cuda_host_free(kiln_backend_state *st, void *ptr) {
    if (!ptr || kiln_cuda_make_current(st) != KILN_OK) return;
    (void)st->cu->cuMemFreeHost(ptr);
}

int kiln_cuda_host_is_pinned(kiln_backend_state *st, const void *ptr) {
    if (!ptr || kiln_cuda_make_current(st) != KILN_OK) return 0;
    unsigned int type = 0;
    /* Fails (CUDA_ERROR_INVALID_VALUE, not sticky) for pageable memory. */
    return st->cu->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(ptr)) ==
               CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_HOST;
}

kiln_status kiln_cuda_copy(kiln_backend_state *st, void *dst, const void *src, size_t bytes,
                           kiln_copy_kind kind, kiln_backend_stream *stream, int async) {
    if (bytes == 0) return KILN_OK;
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    const kiln_cuda_driver *cu = st->cu;
    CUstream cs = kiln_cuda_stream(st, stream);
    CUresult r;
    const char *what;
    switch (kind) {
    case KILN_COPY_HOST_TO_DEVICE:
        what = "cuMemcpyHtoDAsync";
        r = cu->cuMemcpyHtoDAsync(dptr(dst), src, bytes, cs);
        break;
    case KILN_COPY_DEVICE_TO_HOST:
        what = "cuMemcpyDtoHAsync";
        r = cu->cuMemcpyDtoHAsync(dst, dptr(src), bytes, cs);
        break;
    case KILN_COPY_DEVICE_TO_DEVICE:
        what = "cuMemcpyDtoDAsync";
        r = cu->cuMemcpyDtoDAsync(dptr(dst), dptr(src), bytes, cs);
        break;
    case KILN_COPY_HOST_TO_HOST:
        /* Host buffers may still be targets of copies queued on the stream. */
        what = "cuStreamSynchronize";
        r = cu->cuStreamSynchronize(cs);
        if (r == CUDA_SUCCESS) memmove(dst, src, bytes);
        return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(cu, r, what);
    default: return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "unknown copy kind %d", (int)kind);
    }
    if (r == CUDA_SUCCESS && !async) {
        what = "cuStreamSynchronize after a copy";
        r = cu->cuStreamSynchronize(cs);
    }
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(cu, r, what);
}

kiln_status kiln_cuda_memset(kiln_backend_state *st, void *dst, int value, size_t bytes,
                             kiln_backend_stream *stream) {
    if (bytes == 0) return KILN_OK;
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r =
        st->cu->cuMemsetD8Async(dptr(dst), (unsigned char)value, bytes, kiln_cuda_stream(st, stream));
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuMemsetD8Async");
}
