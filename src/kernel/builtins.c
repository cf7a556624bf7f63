/* builtins.c: kiln's own kernels, kept in the context's module cache. */
#include "kernel/builtins.h"

#include "core/error.h"
#include "kernel/module_cache.h"

kiln_status kiln_builtin_kernel(kiln_context *ctx, const char *source, const char *name, const char *options,
                                const char *kernel_name, kiln_kernel **out) {
    kiln_module_spec spec = {.source = source, .name = name, .options = options, .static_source = 1};
    kiln_status s = kiln_module_cache_get_kernel(ctx, &spec, kernel_name, out);
    return s == KILN_OK ? s : kiln_prefix_error(s, "building kiln's own kernel %s: ", kernel_name);
}
