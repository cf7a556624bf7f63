/* sort_cache.c: the text of the sort modules, whose compiled modules the
 * context's module cache keeps (kernel/module_cache.h): a repeated sort
 * costs a compare of the text, never a compile or a disk-cache load. A
 * module's text is the key class's #defines, sort_keys.cuh, the element-wise
 * kernels and the provider's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/text.h"
#include "kernel/module_cache.h"
#include "sort/sort.h"

extern const char kiln_embedded_sort_keys[];
extern const char kiln_embedded_sort_util[];

char *sort_module_source(kiln_dtype dtype, size_t value_bytes, const char *defines, const char *kernels) {
    size_t bytes = kiln_dtype_size(dtype);
    int kind = 0;
    const char *exp = "0";
    switch (dtype) {
    case KILN_INT8:
    case KILN_INT16:
    case KILN_INT32:
    case KILN_INT64: kind = 1; break;
    case KILN_FLOAT16: kind = 2, exp = "0x7c00u"; break;
    case KILN_BFLOAT16: kind = 2, exp = "0x7f80u"; break;
    case KILN_FLOAT32: kind = 2, exp = "0x7f800000u"; break;
    case KILN_FLOAT64: kind = 2, exp = "0x7ff0000000000000ull"; break;
    default: break;
    }
    kiln_text t = {0};
    kiln_text_printf(&t,
                     "// kiln sort kernels\n#define KILN_SK_BYTES %zu\n#define KILN_SK_KIND %d\n"
                     "#define KILN_SK_EXP %s\n#define KILN_SV_BYTES %zu\n%s",
                     bytes, kind, exp, value_bytes, defines ? defines : "");
    kiln_text_puts(&t, kiln_embedded_sort_keys);
    kiln_text_puts(&t, kiln_embedded_sort_util);
    if (kernels) kiln_text_puts(&t, kernels);
    return kiln_text_take(&t);
}

kiln_status sort_kernel(kiln_context *ctx, const char *source, const char *name, kiln_kernel **out) {
    kiln_status s = kiln_context_check_open(ctx, "sort");
    if (s != KILN_OK) return s;
    kiln_module_spec spec = {.source = source, .name = "kiln-sort.cu"};
    s = kiln_module_cache_get_kernel(ctx, &spec, name, out);
    return s == KILN_ERR_COMPILE ? kiln_prefix_error(s, "kiln's sort kernels did not compile: ") : s;
}

kiln_status sort_launch_util(kiln_context *ctx, const sort_provider *p, kiln_kernel *k, int64_t n,
                             kiln_stream *stream, const kiln_value *args, int nargs) {
    if (n <= 0) return KILN_OK;
    int64_t units = ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 1;
    int64_t blocks = (n + p->util_block - 1) / p->util_block, most = units * p->util_blocks_per_unit;
    if (blocks > most) blocks = most;
    return kiln_launch(k, KILN_DIM((uint32_t)blocks), KILN_DIM((uint32_t)p->util_block), 0, stream, args,
                       nargs);
}
