/* cache.c: reduction and scan modules in the context's module cache
 * (kernel/module_cache.h), keyed by their full generated source (a module's
 * text fixes everything about it), and the recipe keys that let a repeated
 * call find its module without generating the text. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernel/module_cache.h"
#include "reduce/reduce.h"

kiln_status rd_cached_kernel(kiln_context *ctx, const char *source, const char *name, const char *kernel,
                             const char *what, kiln_kernel **out) {
    kiln_module_spec spec = {.source = source, .name = name};
    kiln_cached_module *e = kiln_module_cache_find(ctx, &spec);
    if (!e) {
        kiln_status s = kiln_context_check_open(ctx, "reduction");
        if (s == KILN_OK) s = kiln_module_cache_get(ctx, &spec, &e);
        if (s != KILN_OK) return what ? kiln_prefix_error(s, "%s", what) : s;
    }
    return kiln_module_cache_kernel(ctx, e, kernel, out);
}

/* The payload a reduction module keeps: its accumulator's size. */
typedef struct rd_payload {
    size_t aux;
} rd_payload;

size_t rd_cache_aux(kiln_context *ctx, const char *source) {
    kiln_module_spec spec = {.source = source};
    kiln_cached_module *e = kiln_module_cache_find(ctx, &spec);
    rd_payload *p = e ? kiln_module_cache_payload(ctx, e) : NULL;
    return p ? p->aux : 0;
}

void rd_cache_set_aux(kiln_context *ctx, const char *source, size_t value) {
    kiln_module_spec spec = {.source = source};
    kiln_cached_module *e = kiln_module_cache_find(ctx, &spec);
    rd_payload *p = e ? malloc(sizeof *p) : NULL;
    if (!p) return; /* not kept: asked of the device again next time */
    p->aux = value;
    if (kiln_module_cache_set_payload(ctx, e, p, free) != p) free(p);
}

void rd_key_add(uint64_t key[2], const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        key[0] = (key[0] ^ p[i]) * 1099511628211ull;
        key[1] = (key[1] ^ p[i]) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
    }
}

void rd_key_str(uint64_t key[2], const char *s) {
    if (s)
        rd_key_add(key, s, strlen(s) + 1);
    else
        rd_key_add(key, "\1\0", 2);
}

const char *rd_cache_source_for_key(kiln_context *ctx, const uint64_t key[2]) {
    kiln_cached_module *e = kiln_module_cache_find_recipe(ctx, key);
    return e ? kiln_module_cache_source(e) : NULL;
}

void rd_cache_set_key(kiln_context *ctx, const char *source, const uint64_t key[2]) {
    kiln_module_spec spec = {.source = source};
    kiln_cached_module *e = kiln_module_cache_find(ctx, &spec);
    if (e) kiln_module_cache_set_recipe(ctx, e, key);
}
