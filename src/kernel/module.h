/* module.h: compiled modules and their kernels (private layout). */
#ifndef KILN_KERNEL_MODULE_H
#define KILN_KERNEL_MODULE_H

#include <stdatomic.h>

#include "core/context.h"
#include "jit/cache.h"
#include "kernel/globals.h"
#include "kernel/kernel_scanner.h"
#include "kernel/options.h"

#define KILN_MAX_PARAMS 128

struct kiln_module {
    atomic_int refs;
    kiln_context *ctx;
    int holds_ctx; /* 1: the module holds a reference to ctx (not kiln's own kernels) */
    kiln_backend_module *impl;
    kiln_kernel_list kernels;
    char *name;
    atomic_int tier_armed;    /* its -O3 build waits for a launch (module_tier.h) */
    kiln_global_list globals; /* its __constant__/__device__ variables (module_global.c) */
};

struct kiln_kernel {
    kiln_module *module;
    kiln_backend_function *impl;
    char *name;
    int param_count;
    kiln_param_info params[KILN_MAX_PARAMS];
    size_t static_shared_bytes;
};

/* Compiles (or loads from the disk cache) `source` for ctx's backend.
 * options may be NULL. The error message names `name`. For kiln's own
 * modules: never built in tiers (module_tier.h), unlike the program's. */
kiln_status kiln_module_build(kiln_context *ctx, const char *source, const char *name, const char *options,
                              const char *include_dir, kiln_module **out);
kiln_module *kiln_module_retain(kiln_module *m);
/* The compile request for m's source under `name` with options opts (it
 * points into m, source and opts). */
void kiln_module_request(const kiln_module *m, const char *source, const char *name, const kiln_options *opts,
                         kiln_compile_request *req);
/* req's binary: from the disk cache when it holds a valid entry for key
 * (and use_cache; a refused entry is counted), else from the compiler, and
 * then stored. On a compile error the message holds the compiler's log. */
kiln_status kiln_module_obtain_binary(kiln_context *ctx, const kiln_compile_request *req,
                                      const kiln_cache_dir *dir, const unsigned char *key, int use_cache,
                                      kiln_blob *bin, int *cache_hit, double *compile_ms);
/* For modules the context itself keeps (kernel/builtin_kernels.c): drops the module's
 * reference to its context, which would otherwise keep the context alive
 * forever; the context unloads the module before it closes. */
void kiln_module_owned_by_context(kiln_module *m);

#endif
