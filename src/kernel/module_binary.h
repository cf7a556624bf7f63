/* module_binary.h: a module's binary, the step between its source and its
 * loading: the compile request, then the disk cache or the compiler. Used
 * by a module's build (module.c) and by its tier-up (tier_up.c). */
#ifndef KILN_KERNEL_MODULE_BINARY_H
#define KILN_KERNEL_MODULE_BINARY_H

#include "core/context.h"
#include "jit/cache.h"
#include "kernel/globals.h"
#include "kernel/kernel_scanner.h"
#include "kernel/module.h"
#include "kernel/options.h"

/* The compile request for `source` under `name` with options opts, for a
 * module with these kernels and variables on ctx (it points into all of
 * them). */
void kiln_module_request(kiln_context *ctx, const kiln_kernel_list *kernels, const kiln_global_list *globals,
                         const char *source, const char *name, const kiln_options *opts,
                         kiln_compile_request *req);
/* 1 when the disk cache holds a valid entry for key (into bin); a refused
 * one is counted (kiln_module_count_reject). */
int kiln_module_load_cached(kiln_context *ctx, const char *name, const kiln_cache_dir *dir,
                            const unsigned char *key, kiln_blob *bin);
/* Counts a disk-cache entry of `name` refused for `why` (and tells the
 * profiler). */
void kiln_module_count_reject(kiln_context *ctx, const char *name, const char *why);
/* req's binary: from the disk cache when it holds a valid entry for key
 * (and use_cache; a refused entry is counted), else from the compiler, and
 * then stored. On a compile error the message holds the compiler's log. */
kiln_status kiln_module_obtain_binary(kiln_context *ctx, const kiln_compile_request *req,
                                      const kiln_cache_dir *dir, const unsigned char *key, int use_cache,
                                      kiln_blob *bin, int *cache_hit, double *compile_ms);
/* req's binary packed from the image p (NULL: none) by the backend,
 * never through the disk cache: packing costs less than reading an
 * entry, and a packed blob must not stand in for a compiled one or the
 * reverse. *packed = 1 when it was; 0 when p cannot serve req on ctx
 * (another arch, another text, options: the backend's message) and is not
 * required, and then the caller builds as usual. */
kiln_status kiln_module_obtain_prebuilt(kiln_context *ctx, const kiln_compile_request *req,
                                        const kiln_module_prebuilt *p, kiln_blob *bin, int *packed);

#endif
