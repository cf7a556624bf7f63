/* cuda_launch.c: kernel attributes and the launch itself, kiln's hot path:
 * no allocation, no lock and no driver query per launch beyond
 * cuLaunchKernel (and cuCtxGetCurrent, a thread-local read in the driver). */

#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

kiln_status kiln_cuda_function_attributes(kiln_backend_state *st, kiln_backend_function *fn,
                                          kiln_kernel_attributes *out) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    int regs = 0, shared = 0, local = 0, threads = 0;
    const struct {
        CUfunction_attribute attr;
        int *value;
    } attrs[] = {{CU_FUNC_ATTRIBUTE_NUM_REGS, &regs},
                 {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &shared},
                 {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &local},
                 {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &threads}};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        CUresult r = st->cu->cuFuncGetAttribute(attrs[i].value, attrs[i].attr, fn->function);
        if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuFuncGetAttribute");
    }
    out->num_regs = regs;
    out->shared_bytes = (size_t)shared;
    out->local_bytes = (size_t)local;
    out->max_threads_per_block = threads;
    return KILN_OK;
}

/* Beyond 48 KiB (less the static shared memory) a kernel must opt in to
 * dynamic shared memory. Opting in once to the device's whole limit, rather
 * than to each launch's size, makes the call idempotent, so racing launches
 * from several threads need no lock. */
static kiln_status shared_opt_in(kiln_backend_state *st, kiln_backend_function *fn, size_t bytes) {
    if (bytes > fn->dynamic_limit_bytes)
        return kiln_set_error(
            KILN_ERR_LAUNCH_CONFIG,
            "%zu bytes of dynamic shared memory requested; this kernel can have at most %zu on "
            "CUDA device %d (%zu per block, less its static shared memory)",
            bytes, fn->dynamic_limit_bytes, st->ordinal, st->shared_optin_bytes);
    if (atomic_load_explicit(&fn->opted_in, memory_order_acquire)) return KILN_OK;
    CUresult r = st->cu->cuFuncSetAttribute(fn->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            (int)fn->dynamic_limit_bytes);
    if (r != CUDA_SUCCESS)
        return kiln_cuda_fail_launch(st->cu, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    atomic_store_explicit(&fn->opted_in, 1, memory_order_release);
    return KILN_OK;
}

kiln_status kiln_cuda_launch(kiln_backend_state *st, kiln_backend_function *fn, const kiln_launch_config *cfg,
                             kiln_backend_stream *stream, void **args) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    if (cfg->shared_bytes > fn->dynamic_default_bytes &&
        (s = shared_opt_in(st, fn, cfg->shared_bytes)) != KILN_OK)
        return s;
    CUresult r = st->cu->cuLaunchKernel(fn->function, cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0],
                                        cfg->block[1], cfg->block[2], (unsigned int)cfg->shared_bytes,
                                        kiln_cuda_stream(st, stream), args, NULL);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail_launch(st->cu, r, "cuLaunchKernel");
}

kiln_status kiln_cuda_launch_cooperative(kiln_backend_state *st, kiln_backend_function *fn,
                                         const kiln_launch_config *cfg, kiln_backend_stream *stream,
                                         void **args) {
    if (!st->cu->cuLaunchCooperativeKernel)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the driver has no cuLaunchCooperativeKernel");
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    if (cfg->shared_bytes > fn->dynamic_default_bytes &&
        (s = shared_opt_in(st, fn, cfg->shared_bytes)) != KILN_OK)
        return s;
    CUresult r = st->cu->cuLaunchCooperativeKernel(
        fn->function, cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0], cfg->block[1], cfg->block[2],
        (unsigned int)cfg->shared_bytes, kiln_cuda_stream(st, stream), args);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail_launch(st->cu, r, "cuLaunchCooperativeKernel");
}
