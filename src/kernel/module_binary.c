/* module_binary.c: request -> (disk cache | compiler) -> binary
 * (module_binary.h). */
#include "kernel/module_binary.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "prof/prof.h"

void kiln_module_count_reject(kiln_context *ctx, const char *name, const char *why) {
    pthread_mutex_lock(&ctx->lock);
    ctx->jit.cache_rejects++;
    pthread_mutex_unlock(&ctx->lock);
    if (KILN_PROF_ON(ctx)) kiln_prof_cache_reject(ctx, name, why);
}

int kiln_module_load_cached(kiln_context *ctx, const char *name, const kiln_cache_dir *dir,
                            const unsigned char *key, kiln_blob *bin) {
    int rejected = 0, hit = kiln_cache_load(dir, key, bin, &rejected);
    if (rejected) kiln_module_count_reject(ctx, name, kiln_cache_reject_reason(rejected));
    return hit;
}

void kiln_module_request(kiln_context *ctx, const kiln_kernel_list *kernels, const kiln_global_list *globals,
                         const char *source, const char *name, const kiln_options *opts,
                         kiln_compile_request *req) {
    memset(req, 0, sizeof *req);
    req->source = source;
    req->name = name;
    req->kernel_names = (const char *const *)kernels->symbols;
    req->kernel_exprs = (const char *const *)kernels->names;
    req->kernel_count = kernels->count;
    req->arch = ctx->arch[0] ? ctx->arch : NULL;
    req->global_names = globals->names;
    req->global_count = globals->count;
    kiln_options_apply(opts, req);
}

kiln_status kiln_module_obtain_binary(kiln_context *ctx, const kiln_compile_request *req,
                                      const kiln_cache_dir *dir, const unsigned char *key, int use_cache,
                                      kiln_blob *bin, int *cache_hit, double *compile_ms) {
    *cache_hit = use_cache && kiln_module_load_cached(ctx, req->name, dir, key, bin);
    *compile_ms = 0;
    if (*cache_hit) return KILN_OK;

    char *log = NULL;
    double t0 = kiln_now_ms();
    kiln_status s = ctx->ops->compile(ctx->state, req, bin, &log);
    *compile_ms = kiln_now_ms() - t0;
    if (s != KILN_OK) {
        if (s == KILN_ERR_COMPILE && log)
            kiln_set_error(s, "%s did not compile for the %s backend:\n%s", req->name, ctx->ops->name, log);
        else
            kiln_prefix_error(s, "compiling %s for the %s backend: ", req->name, ctx->ops->name);
        free(log);
        return s;
    }
    free(log);
    kiln_cache_store(dir, key, bin);
    return KILN_OK;
}

kiln_status kiln_module_obtain_prebuilt(kiln_context *ctx, const kiln_compile_request *req,
                                        const kiln_module_prebuilt *p, kiln_blob *bin, int *packed) {
    *packed = 0;
    if (!p || !p->image) return KILN_OK;
    /* only on a context of the image's arch (the CPU's is none) */
    if (!req->arch || strcmp(req->arch, p->image->arch) != 0)
        return p->required ? kiln_set_error(KILN_ERR_UNSUPPORTED,
                                            "the prebuilt image of %s is for %s; this context is %s%s%s",
                                            req->name, p->image->arch, ctx->ops->name, req->arch ? " " : "",
                                            req->arch ? req->arch : "")
                           : KILN_OK;
    kiln_compile_request r = *req;
    r.prebuilt = p->image;
    char *log = NULL;
    kiln_status s = ctx->ops->compile(ctx->state, &r, bin, &log);
    free(log);
    if (s == KILN_OK) *packed = 1;
    return s == KILN_OK || (s == KILN_ERR_UNSUPPORTED && !p->required) ? KILN_OK : s;
}
