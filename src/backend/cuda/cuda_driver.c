/* cuda_driver.c: the driver layer's ops on CUDA: events without timing,
 * event and stream waits, host callbacks, occupancy and shared memory
 * attributes, mapped and managed memory, the pool's release threshold and
 * peer access. Each driver entry point is optional in the symbol table; a
 * driver without one makes its call KILN_ERR_UNSUPPORTED naming it. */
#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

#define NEED_SYMBOL(st, name)                                                                                \
    do {                                                                                                     \
        if (!(st)->cu->name) return kiln_set_error(KILN_ERR_UNSUPPORTED, "the CUDA driver lacks " #name);    \
    } while (0)

static CUevent event_of(kiln_backend_event *ev) { return (CUevent)(void *)ev; }
static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

kiln_status kiln_cuda_event_create_flags(kiln_backend_state *st, unsigned flags, kiln_backend_event **out) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUevent ev = NULL;
    CUresult r = st->cu->cuEventCreate(&ev, flags & KILN_EVENT_DISABLE_TIMING ? CU_EVENT_DISABLE_TIMING : 0);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuEventCreate");
    *out = (kiln_backend_event *)(void *)ev;
    return KILN_OK;
}

kiln_status kiln_cuda_event_query(kiln_backend_state *st, kiln_backend_event *ev, int *done) {
    NEED_SYMBOL(st, cuEventQuery);
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuEventQuery(event_of(ev));
    *done = r == CUDA_SUCCESS;
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) return KILN_OK;
    return kiln_cuda_fail(st->cu, r, "cuEventQuery");
}

kiln_status kiln_cuda_stream_wait_event(kiln_backend_state *st, kiln_backend_stream *stream,
                                        kiln_backend_event *ev) {
    NEED_SYMBOL(st, cuStreamWaitEvent);
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuStreamWaitEvent(kiln_cuda_stream(st, stream), event_of(ev), 0);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuStreamWaitEvent");
}

kiln_status kiln_cuda_stream_add_callback(kiln_backend_state *st, kiln_backend_stream *stream,
                                          void (*fn)(void *), void *user) {
    NEED_SYMBOL(st, cuLaunchHostFunc);
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuLaunchHostFunc(kiln_cuda_stream(st, stream), fn, user);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuLaunchHostFunc");
}

/* Occupancy past 48 KiB of dynamic shared memory counts only once the
 * kernel has opted in, as a launch of that size would. */
static kiln_status opt_in_for(kiln_backend_state *st, kiln_backend_function *fn, size_t bytes) {
    if (bytes <= fn->dynamic_default_bytes || atomic_load(&fn->opted_in)) return KILN_OK;
    if (bytes > fn->dynamic_limit_bytes)
        return kiln_set_error(KILN_ERR_LAUNCH_CONFIG,
                              "%zu bytes of dynamic shared memory: this kernel can have at most %zu on CUDA "
                              "device %d",
                              bytes, fn->dynamic_limit_bytes, st->ordinal);
    CUresult r = st->cu->cuFuncSetAttribute(fn->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            (int)fn->dynamic_limit_bytes);
    if (r != CUDA_SUCCESS)
        return kiln_cuda_fail(st->cu, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    atomic_store(&fn->opted_in, 1);
    return KILN_OK;
}

kiln_status kiln_cuda_function_occupancy(kiln_backend_state *st, kiln_backend_function *fn, int block_threads,
                                         size_t dynamic_shared_bytes, int *blocks_per_sm) {
    NEED_SYMBOL(st, cuOccupancyMaxActiveBlocksPerMultiprocessor);
    kiln_status s = kiln_cuda_make_current(st);
    if (s == KILN_OK) s = opt_in_for(st, fn, dynamic_shared_bytes);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, fn->function,
                                                                     block_threads, dynamic_shared_bytes);
    return r == CUDA_SUCCESS ? KILN_OK
                             : kiln_cuda_fail(st->cu, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
}

kiln_status kiln_cuda_function_block_size(kiln_backend_state *st, kiln_backend_function *fn,
                                          size_t dynamic_shared_bytes, int block_limit, int *min_grid,
                                          int *block_threads) {
    NEED_SYMBOL(st, cuOccupancyMaxPotentialBlockSize);
    kiln_status s = kiln_cuda_make_current(st);
    if (s == KILN_OK) s = opt_in_for(st, fn, dynamic_shared_bytes);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuOccupancyMaxPotentialBlockSize(min_grid, block_threads, fn->function, NULL,
                                                          dynamic_shared_bytes, block_limit);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuOccupancyMaxPotentialBlockSize");
}

kiln_status kiln_cuda_function_set_shared(kiln_backend_state *st, kiln_backend_function *fn,
                                          size_t max_dynamic_shared_bytes, int carveout_percent) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    if (max_dynamic_shared_bytes > fn->dynamic_limit_bytes)
        return kiln_set_error(KILN_ERR_LAUNCH_CONFIG,
                              "%zu bytes of dynamic shared memory: this kernel can have at most %zu on CUDA "
                              "device %d (%zu per block, less its static shared memory)",
                              max_dynamic_shared_bytes, fn->dynamic_limit_bytes, st->ordinal,
                              st->shared_optin_bytes);
    CUresult r = st->cu->cuFuncSetAttribute(fn->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            (int)max_dynamic_shared_bytes);
    if (r != CUDA_SUCCESS)
        return kiln_cuda_fail(st->cu, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    /* The user's limit stands: kiln's own opt-in at launch stays away. */
    atomic_store(&fn->opted_in, 1);
    if (carveout_percent >= 0) {
        r = st->cu->cuFuncSetAttribute(fn->function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                       carveout_percent);
        if (r != CUDA_SUCCESS)
            return kiln_cuda_fail(st->cu, r, "cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT)");
    }
    return KILN_OK;
}

size_t kiln_cuda_function_dynamic_shared_limit(kiln_backend_state *st, kiln_backend_function *fn) {
    (void)st;
    return fn->dynamic_limit_bytes;
}

kiln_status kiln_cuda_mem_alloc_kind(kiln_backend_state *st, kiln_memory kind, size_t bytes, void **device,
                                     void **host) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r;
    if (kind == KILN_MEMORY_MANAGED) {
        NEED_SYMBOL(st, cuMemAllocManaged);
        NEED_SYMBOL(st, cuMemFree);
        CUdeviceptr p = 0;
        r = st->cu->cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL);
        if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuMemAllocManaged");
        *device = *host = (void *)(uintptr_t)p;
        return KILN_OK;
    }
    if (kind != KILN_MEMORY_MAPPED)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "memory kind %d is not mapped or managed",
                              (int)kind);
    NEED_SYMBOL(st, cuMemHostGetDevicePointer);
    void *p = NULL;
    /* PORTABLE: pinned for every context; DEVICEMAP: kernels address it. */
    r = st->cu->cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuMemHostAlloc(DEVICEMAP)");
    CUdeviceptr d = 0;
    r = st->cu->cuMemHostGetDevicePointer(&d, p, 0);
    if (r != CUDA_SUCCESS) {
        (void)st->cu->cuMemFreeHost(p);
        return kiln_cuda_fail(st->cu, r, "cuMemHostGetDevicePointer");
    }
    *device = (void *)(uintptr_t)d; /* equal to p under unified addressing (every 64-bit GPU since Fermi) */
    *host = p;
    return KILN_OK;
}

/* Mapped memory is freed by its host address, which under unified
 * addressing (every 64-bit CUDA platform) is its device address. */
void kiln_cuda_mem_free_kind(kiln_backend_state *st, kiln_memory kind, void *device) {
    if (!device || kiln_cuda_make_current(st) != KILN_OK) return;
    if (kind == KILN_MEMORY_MANAGED && st->cu->cuMemFree)
        (void)st->cu->cuMemFree(dptr(device));
    else if (kind == KILN_MEMORY_MAPPED)
        (void)st->cu->cuMemFreeHost(device);
}

kiln_status kiln_cuda_mem_prefetch(kiln_backend_state *st, void *ptr, size_t bytes, int to_device,
                                   kiln_backend_stream *stream) {
    NEED_SYMBOL(st, cuMemPrefetchAsync);
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUmemLocation where = {to_device ? CU_MEM_LOCATION_TYPE_DEVICE : CU_MEM_LOCATION_TYPE_HOST,
                           to_device ? st->device : 0};
    CUresult r = st->cu->cuMemPrefetchAsync(dptr(ptr), bytes, where, 0, kiln_cuda_stream(st, stream));
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuMemPrefetchAsync");
}

kiln_status kiln_cuda_mem_advise(kiln_backend_state *st, void *ptr, size_t bytes, kiln_memory_advice advice) {
    NEED_SYMBOL(st, cuMemAdvise);
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUmemLocation device = {CU_MEM_LOCATION_TYPE_DEVICE, st->device};
    CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
    int what = CU_MEM_ADVISE_SET_READ_MOSTLY;
    CUmemLocation where = device; /* ignored for READ_MOSTLY */
    switch (advice) {
    case KILN_ADVISE_READ_MOSTLY: break;
    case KILN_ADVISE_PREFER_DEVICE: what = CU_MEM_ADVISE_SET_PREFERRED_LOCATION; break;
    case KILN_ADVISE_PREFER_HOST:
        what = CU_MEM_ADVISE_SET_PREFERRED_LOCATION;
        where = host;
        break;
    case KILN_ADVISE_ACCESSED_BY_DEVICE: what = CU_MEM_ADVISE_SET_ACCESSED_BY; break;
    }
    CUresult r = st->cu->cuMemAdvise(dptr(ptr), bytes, what, where);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuMemAdvise");
}

kiln_status kiln_cuda_pool_set_release_threshold(kiln_backend_state *st, uint64_t bytes) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    cuuint64_t keep = bytes;
    CUresult r = st->cu->cuMemPoolSetAttribute(st->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    return r == CUDA_SUCCESS ? KILN_OK
                             : kiln_cuda_fail(st->cu, r, "cuMemPoolSetAttribute(RELEASE_THRESHOLD)");
}

kiln_status kiln_cuda_device_can_access_peer(kiln_backend_state *st, kiln_backend_state *peer, int *can) {
    if (st->device == peer->device) {
        *can = 1;
        return KILN_OK;
    }
    NEED_SYMBOL(st, cuDeviceCanAccessPeer);
    CUresult r = st->cu->cuDeviceCanAccessPeer(can, st->device, peer->device);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuDeviceCanAccessPeer");
}
