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
    atomic_int tier_up_armed; /* its tier-up waits for a launch (tier_up.h) */
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

/* A module's image built ahead of time (kiln_module_spec's), and whether
 * the module must come from it. */
typedef struct kiln_module_prebuilt {
    const kiln_prebuilt_image *image;
    int required;
} kiln_module_prebuilt;

/* Compiles (or loads from the disk cache) `source` for ctx's backend, or
 * packs `prebuilt` (may be NULL) where it serves (module_binary.h).
 * options may be NULL. The error message names `name`. For kiln's own
 * modules: never given a tier-up (tier_up.h), unlike the program's. */
kiln_status kiln_module_build(kiln_context *ctx, const char *source, const char *name, const char *options,
                              const char *include_dir, const kiln_module_prebuilt *prebuilt,
                              kiln_module **out);
kiln_module *kiln_module_retain(kiln_module *m);
/* For modules the context itself keeps (kernel/module_cache.c): drops the module's
 * reference to its context, which would otherwise keep the context alive
 * forever; the context unloads the module before it closes. */
void kiln_module_owned_by_context(kiln_module *m);

#endif
