/* sort_cache.c: the sort modules of a context, kept in each provider's
 * per-context state (kiln_provider_state), keyed by their text: a repeated
 * sort costs a compare of the text, never a compile or a disk-cache load.
 * A module's text is the key class's #defines, sort_keys.cuh, the
 * element-wise kernels and the provider's own. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/text.h"
#include "kernel/module.h"
#include "sort/sort.h"

extern const char kiln_embedded_sort_keys[];
extern const char kiln_embedded_sort_util[];

#define SORT_MODULE_KERNELS 16

typedef struct sort_module {
    char *source;
    kiln_module *module;
    const char *names[SORT_MODULE_KERNELS]; /* kernel names are the callers' literals */
    kiln_kernel *kernels[SORT_MODULE_KERNELS];
    struct sort_module *next;
} sort_module;

typedef struct sort_cache {
    pthread_mutex_t lock;
    sort_module *head;
} sort_cache;

kiln_status sort_cache_init(kiln_context *ctx, void **state) {
    (void)ctx;
    sort_cache *c = calloc(1, sizeof *c);
    if (!c) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for sort modules");
    pthread_mutex_init(&c->lock, NULL);
    *state = c;
    return KILN_OK;
}

void sort_cache_release(kiln_context *ctx, void *state) {
    (void)ctx;
    sort_cache *c = state;
    for (sort_module *m = c->head, *next; m; m = next) {
        next = m->next;
        for (int i = 0; i < SORT_MODULE_KERNELS; i++)
            if (m->kernels[i]) kiln_kernel_release(m->kernels[i]);
        kiln_module_release(m->module);
        free(m->source);
        free(m);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

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

/* Under c->lock. */
static kiln_status module_kernel(sort_module *m, const char *name, kiln_kernel **out) {
    int i = 0;
    for (; i < SORT_MODULE_KERNELS && m->names[i]; i++)
        if (strcmp(m->names[i], name) == 0) {
            *out = m->kernels[i];
            return KILN_OK;
        }
    if (i == SORT_MODULE_KERNELS)
        return kiln_set_error(KILN_ERR_INTERNAL, "sort module has more than %d kernels", SORT_MODULE_KERNELS);
    kiln_status s = kiln_module_kernel(m->module, name, &m->kernels[i]);
    if (s != KILN_OK) return s;
    m->names[i] = name;
    *out = m->kernels[i];
    return KILN_OK;
}

kiln_status sort_kernel(kiln_context *ctx, const sort_provider *p, const char *source, const char *name,
                        kiln_kernel **out) {
    sort_cache *c = NULL;
    kiln_status s = kiln_provider_state(ctx, &p->base, (void **)&c);
    if (s != KILN_OK) return s;
    /* held across the compile: two threads asking for one module build it once */
    pthread_mutex_lock(&c->lock);
    sort_module *m = c->head;
    while (m && strcmp(m->source, source) != 0) m = m->next;
    if (!m) {
        kiln_module *built = NULL;
        s = kiln_module_build(ctx, source, "kiln-sort.cu", NULL, NULL, &built);
        if (s == KILN_OK && (!(m = calloc(1, sizeof *m)) || !(m->source = strdup(source)))) {
            free(m);
            m = NULL;
            kiln_module_release(built);
            s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for sort modules");
        }
        if (s == KILN_OK) {
            m->module = built;
            m->next = c->head;
            c->head = m;
        } else {
            s = kiln_prefix_error(s, "kiln's sort kernels did not compile: ");
        }
    }
    if (s == KILN_OK) s = module_kernel(m, name, out);
    pthread_mutex_unlock(&c->lock);
    return s;
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
