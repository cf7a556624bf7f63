/* occupancy.c: what a compiled kernel uses, how many of its blocks a
 * multiprocessor holds, and its shared memory settings, over the backend's
 * optional ops (cuFuncGetAttribute and cuOccupancy* on CUDA, the emulation's
 * limits on the CPU). */
#include "core/error.h"
#include "kernel/module.h"

static kiln_status kernel_ctx(kiln_kernel *k, const void *out, const char *what, kiln_context **ctx) {
    if (!k || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    *ctx = k->module->ctx;
    return kiln_context_check(*ctx);
}

static kiln_status need(kiln_context *ctx, int present, const char *what) {
    if (!present)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: not available on the %s backend", what,
                              ctx->ops->name);
    return KILN_OK;
}

kiln_status kiln_kernel_info(kiln_kernel *k, kiln_kernel_resources *out) {
    kiln_context *ctx = NULL;
    kiln_status s = kernel_ctx(k, out, "kiln_kernel_info", &ctx);
    if (s == KILN_OK)
        s = need(ctx, ctx->ops->function_attributes && ctx->ops->function_dynamic_shared_limit,
                 "kiln_kernel_info");
    if (s != KILN_OK) return s;
    kiln_kernel_attributes attr;
    s = ctx->ops->function_attributes(ctx->state, k->impl, &attr);
    if (s != KILN_OK) return kiln_context_note(ctx, s);
    out->registers = attr.num_regs;
    out->static_shared_bytes = attr.shared_bytes;
    out->max_dynamic_shared_bytes = ctx->ops->function_dynamic_shared_limit(ctx->state, k->impl);
    out->max_threads_per_block = attr.max_threads_per_block;
    out->local_bytes = attr.local_bytes;
    return KILN_OK;
}

kiln_status kiln_occupancy(kiln_kernel *k, int block_threads, size_t dynamic_shared_bytes,
                           int *blocks_per_sm) {
    kiln_context *ctx = NULL;
    kiln_status s = kernel_ctx(k, blocks_per_sm, "kiln_occupancy", &ctx);
    if (s == KILN_OK) s = need(ctx, ctx->ops->function_occupancy != NULL, "kiln_occupancy");
    if (s != KILN_OK) return s;
    if (block_threads < 1 || block_threads > ctx->info.max_threads_per_block)
        return kiln_set_error(KILN_ERR_LAUNCH_CONFIG,
                              "kiln_occupancy: a block of %d threads: expected 1 to %d", block_threads,
                              ctx->info.max_threads_per_block);
    return kiln_context_note(ctx, ctx->ops->function_occupancy(ctx->state, k->impl, block_threads,
                                                               dynamic_shared_bytes, blocks_per_sm));
}

kiln_status kiln_occupancy_block_size(kiln_kernel *k, size_t dynamic_shared_bytes, int block_limit,
                                      int *min_grid, int *block_threads) {
    kiln_context *ctx = NULL;
    kiln_status s = kernel_ctx(k, min_grid, "kiln_occupancy_block_size", &ctx);
    if (s == KILN_OK && !block_threads)
        s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_occupancy_block_size: block_threads is NULL");
    if (s == KILN_OK) s = need(ctx, ctx->ops->function_block_size != NULL, "kiln_occupancy_block_size");
    if (s != KILN_OK) return s;
    if (block_limit < 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_occupancy_block_size: block_limit %d (0 means no limit)", block_limit);
    return kiln_context_note(ctx, ctx->ops->function_block_size(ctx->state, k->impl, dynamic_shared_bytes,
                                                                block_limit, min_grid, block_threads));
}

kiln_status kiln_kernel_set_shared(kiln_kernel *k, size_t max_dynamic_shared_bytes, int carveout_percent) {
    if (!k) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_kernel_set_shared: kernel is NULL");
    kiln_context *ctx = k->module->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK) s = need(ctx, ctx->ops->function_set_shared != NULL, "kiln_kernel_set_shared");
    if (s != KILN_OK) return s;
    if (carveout_percent < -1 || carveout_percent > 100)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_kernel_set_shared: carve-out %d%%: expected 0 to 100, or -1 to leave it",
                              carveout_percent);
    s = ctx->ops->function_set_shared(ctx->state, k->impl, max_dynamic_shared_bytes, carveout_percent);
    if (s != KILN_OK) kiln_prefix_error(s, "kiln_kernel_set_shared(%s): ", k->name);
    return kiln_context_note(ctx, s);
}
