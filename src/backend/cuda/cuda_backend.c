/* cuda_backend.c: opening a device (primary context, default stream, memory
 * pool), describing it, and the ops table the core sees. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backends.h"
#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

kiln_status kiln_cuda_make_current(kiln_backend_state *st) {
    CUcontext current = NULL;
    if (st->cu->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == st->context) return KILN_OK;
    CUresult r = st->cu->cuCtxSetCurrent(st->context);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuCtxSetCurrent");
}

static kiln_status cuda_device_count(int *count, const char **why) {
    *count = 0;
    kiln_status s;
    const char *reason = "";
    const kiln_cuda_driver *cu = kiln_cuda_driver_load(&s, &reason);
    int n = 0;
    if (cu && (cu->cuDeviceGetCount(&n) != CUDA_SUCCESS || n <= 0)) {
        n = 0;
        reason = "no CUDA device";
    }
    *count = n;
    if (why) *why = n > 0 ? "" : reason;
    return KILN_OK;
}

static kiln_status device_attribute(kiln_backend_state *st, CUdevice_attribute attr, int *out) {
    CUresult r = st->cu->cuDeviceGetAttribute(out, attr, st->device);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuDeviceGetAttribute");
}

/* The pool keeps freed memory for reuse instead of returning it to the
 * driver at every synchronisation, so repeated allocations of a loop cost no
 * driver round trip (the default threshold, 0, gives memory back at once). */
static kiln_status setup_pool(kiln_backend_state *st) {
    int pools = 0;
    kiln_status s = device_attribute(st, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, &pools);
    if (s != KILN_OK) return s;
    if (!pools)
        return kiln_set_error(KILN_ERR_NO_DEVICE,
                              "CUDA device %d has no stream-ordered memory pools "
                              "(cuMemAllocAsync), which kiln needs",
                              st->ordinal);
    CUresult r = st->cu->cuDeviceGetDefaultMemPool(&st->pool, st->device);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuDeviceGetDefaultMemPool");
    cuuint64_t keep_all = UINT64_MAX;
    r = st->cu->cuMemPoolSetAttribute(st->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuMemPoolSetAttribute");
}

static kiln_status open_device(kiln_backend_state *st) {
    const kiln_cuda_driver *cu = st->cu;
    CUresult r = cu->cuDeviceGet(&st->device, st->ordinal);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(cu, r, "cuDeviceGet");
    /* Device attributes need no context: read the arch first, so that
     * NVRTC's start-up (cuda_warmup.c) runs while the driver makes the
     * context, the slow part of opening. */
    kiln_status s = device_attribute(st, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &st->compute_major);
    if (s == KILN_OK)
        s = device_attribute(st, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &st->compute_minor);
    if (s != KILN_OK) return s;
    snprintf(st->arch, sizeof st->arch, "sm_%d%d", st->compute_major, st->compute_minor);
    kiln_cuda_warmup_start(st->arch);
    r = cu->cuDevicePrimaryCtxRetain(&st->context, st->device);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(cu, r, "cuDevicePrimaryCtxRetain");
    s = kiln_cuda_make_current(st);
    int optin = 0;
    if (s == KILN_OK) s = device_attribute(st, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &optin);
    if (s == KILN_OK) s = setup_pool(st);
    if (s != KILN_OK) return s;
    st->shared_optin_bytes = (size_t)optin;
    /* Not the legacy NULL stream: that one serialises with every blocking
     * stream in the process, including other libraries'. */
    r = cu->cuStreamCreate(&st->stream, CU_STREAM_NON_BLOCKING);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(cu, r, "cuStreamCreate");
}

static void cuda_close(kiln_backend_state *st) {
    if (!st) return;
    kiln_cuda_warmup_wait(); /* a program may close before compiling anything */
    const kiln_cuda_driver *cu = st->cu;
    if (st->context) {
        (void)kiln_cuda_make_current(st);
        if (st->stream) {
            (void)cu->cuStreamSynchronize(st->stream);
            (void)cu->cuStreamDestroy(st->stream);
        }
        /* The primary context may outlive us (other users retain it): give
         * back what our raised release threshold kept. */
        if (st->pool) (void)cu->cuMemPoolTrimTo(st->pool, 0);
        (void)cu->cuDevicePrimaryCtxRelease(st->device);
    }
    free(st);
}

static kiln_status cuda_open(int ordinal, kiln_backend_state **out) {
    kiln_status s;
    const char *why = "";
    const kiln_cuda_driver *cu = kiln_cuda_driver_load(&s, &why);
    if (!cu) return kiln_set_error(s, "CUDA backend unavailable: %s", why);
    int count = 0;
    CUresult r = cu->cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(cu, r, "cuDeviceGetCount");
    if (count <= 0) return kiln_set_error(KILN_ERR_NO_DEVICE, "CUDA backend unavailable: no CUDA device");
    if (ordinal < 0 || ordinal >= count)
        return kiln_set_error(KILN_ERR_NO_DEVICE, "CUDA device %d requested, but there %s only %d (0..%d)",
                              ordinal, count == 1 ? "is" : "are", count, count - 1);
    kiln_backend_state *st = calloc(1, sizeof *st);
    if (!st)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory opening CUDA device %d", ordinal);
    st->cu = cu;
    st->ordinal = ordinal;
    s = open_device(st);
    if (s != KILN_OK) {
        kiln_prefix_error(s, "opening CUDA device %d: ", ordinal);
        cuda_close(st);
        return s;
    }
    *out = st;
    return KILN_OK;
}

static kiln_status cuda_device_info(kiln_backend_state *st, kiln_device_info *out) {
    const kiln_cuda_driver *cu = st->cu;
    kiln_device_info info;
    memset(&info, 0, sizeof info);
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = cu->cuDeviceGetName(info.name, (int)sizeof info.name, st->device);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(cu, r, "cuDeviceGetName");
    info.ordinal = st->ordinal;
    int shared = 0, optin = 0;
    const struct {
        CUdevice_attribute attr;
        int *value;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.multiprocessors},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.compute_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.compute_minor},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info.max_threads_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &info.max_block_dim[0]},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &info.max_block_dim[1]},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &info.max_block_dim[2]},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &info.max_grid_dim[0]},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &info.max_grid_dim[1]},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &info.max_grid_dim[2]},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &shared},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &optin},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &info.warp_size},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if ((s = device_attribute(st, attrs[i].attr, attrs[i].value)) != KILN_OK) return s;
    info.max_shared_bytes_per_block = (size_t)shared;
    info.max_shared_bytes_per_block_optin = (size_t)optin;
    r = cu->cuDeviceTotalMem(&info.total_memory_bytes, st->device);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(cu, r, "cuDeviceTotalMem");
    size_t total = 0;
    r = cu->cuMemGetInfo(&info.free_memory_bytes, &total);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(cu, r, "cuMemGetInfo");
    info.driver_version = cu->driver_version;
    *out = info;
    return KILN_OK;
}

static kiln_status cuda_native_handles(kiln_backend_state *st, kiln_backend_stream *stream,
                                       void **native_context, void **native_stream) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    if (native_context) *native_context = (void *)st->context;
    if (native_stream) *native_stream = (void *)kiln_cuda_stream(st, stream);
    return KILN_OK;
}

static const kiln_backend_ops cuda_ops = {
    .version = KILN_BACKEND_OPS_VERSION,
    .name = "cuda",
    .kind = KILN_BACKEND_CUDA,
    .open = cuda_open,
    .close = cuda_close,
    .device_info = cuda_device_info,
    .mem_alloc = kiln_cuda_mem_alloc,
    .mem_free = kiln_cuda_mem_free,
    .host_alloc = kiln_cuda_host_alloc,
    .host_free = kiln_cuda_host_free,
    .copy = kiln_cuda_copy,
    .memset = kiln_cuda_memset,
    .stream_create = kiln_cuda_stream_create,
    .stream_synchronize = kiln_cuda_stream_synchronize,
    .stream_destroy = kiln_cuda_stream_destroy,
    .synchronize = kiln_cuda_synchronize,
    .event_create = kiln_cuda_event_create,
    .event_record = kiln_cuda_event_record,
    .event_synchronize = kiln_cuda_event_synchronize,
    .event_elapsed_ms = kiln_cuda_event_elapsed_ms,
    .event_destroy = kiln_cuda_event_destroy,
    .compiler_id = kiln_cuda_compiler_id,
    .compile = kiln_cuda_compile,
    .module_load = kiln_cuda_module_load,
    .module_unload = kiln_cuda_module_unload,
    .function_get = kiln_cuda_function_get,
    .function_attributes = kiln_cuda_function_attributes,
    .launch = kiln_cuda_launch,
    .host_is_pinned = kiln_cuda_host_is_pinned,
    .native_handles = cuda_native_handles,
    .stream_query = kiln_cuda_stream_query,
    .copy_peer = kiln_cuda_copy_peer,
    /* the driver layer */
    .event_create_flags = kiln_cuda_event_create_flags,
    .event_query = kiln_cuda_event_query,
    .stream_wait_event = kiln_cuda_stream_wait_event,
    .stream_add_callback = kiln_cuda_stream_add_callback,
    .function_occupancy = kiln_cuda_function_occupancy,
    .function_block_size = kiln_cuda_function_block_size,
    .function_set_shared = kiln_cuda_function_set_shared,
    .function_dynamic_shared_limit = kiln_cuda_function_dynamic_shared_limit,
    .mem_alloc_kind = kiln_cuda_mem_alloc_kind,
    .mem_free_kind = kiln_cuda_mem_free_kind,
    .mem_prefetch = kiln_cuda_mem_prefetch,
    .mem_advise = kiln_cuda_mem_advise,
    .pool_set_release_threshold = kiln_cuda_pool_set_release_threshold,
    .device_can_access_peer = kiln_cuda_device_can_access_peer,
    .graph_begin_capture = kiln_cuda_graph_begin_capture,
    .graph_end_capture = kiln_cuda_graph_end_capture,
    .graph_launch = kiln_cuda_graph_launch,
    .graph_update = kiln_cuda_graph_update,
    .graph_destroy = kiln_cuda_graph_destroy,

    .compile_only = kiln_cuda_compile_only,
    .device_count = cuda_device_count,
    .get_proc_address = kiln_cuda_get_proc_address,
    .module_global = kiln_cuda_module_global,
    .launch_cooperative = kiln_cuda_launch_cooperative,
    .caps = 0,
};

const kiln_backend_ops *kiln_backend_cuda(void) { return &cuda_ops; }
