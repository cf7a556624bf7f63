/* module_cache.c: the context's cache of kiln's own compiled modules
 * (module_cache.h). A list under ctx->lock: a context holds tens of
 * entries, and a hit compares a hash before any text. */
#include "kernel/module_cache.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "kernel/module.h"

struct kiln_cached_module {
    uint64_t hash;
    const char *source; /* owned_source, or the caller's static text */
    char *owned_source;
    char *options; /* "" when none */
    const kiln_prebuilt_image *prebuilt;
    int prebuilt_required;
    kiln_module *module;
    char **names;
    kiln_kernel **kernels;
    int nkernels, cap_kernels;
    void *payload;
    void (*payload_destroy)(void *payload);
    uint64_t recipe[2];
    int has_recipe;
    struct kiln_cached_module *next;
};

struct module_cache {
    kiln_cached_module *head;
};

static void cache_destroy(kiln_context *ctx, void *state);

/* The modules hold no reference to the context: they go at its last
 * release, after every object that may still launch their kernels. */
static const kiln_slot_class module_cache_slot = {
    .name = "module cache",
    .close_stage = KILN_SLOT_CLOSE_RELEASE,
    .destroy = cache_destroy,
};

static kiln_status cache_create(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    (void)arg;
    *state = calloc(1, sizeof(struct module_cache));
    return *state ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
}

/* Under ctx->lock: the first entry, NULL when there is no cache yet. */
static kiln_cached_module *first(kiln_context *ctx) {
    struct module_cache *c = kiln_slot_peek(ctx, &module_cache_slot);
    return c ? c->head : NULL;
}

/* e was built for spec's options and image. */
static int same_build(const kiln_cached_module *e, const kiln_module_spec *spec) {
    return strcmp(e->options, spec->options ? spec->options : "") == 0 && e->prebuilt == spec->prebuilt &&
           e->prebuilt_required == (spec->prebuilt && spec->prebuilt_required);
}

/* Under ctx->lock: the entry with spec's very text pointer, options and image. */
static kiln_cached_module *find_by_address(kiln_context *ctx, const kiln_module_spec *spec) {
    for (kiln_cached_module *e = first(ctx); e; e = e->next)
        if (e->source == spec->source && same_build(e, spec)) return e;
    return NULL;
}

/* Under ctx->lock. */
static kiln_cached_module *find(kiln_context *ctx, uint64_t hash, const kiln_module_spec *spec) {
    for (kiln_cached_module *e = first(ctx); e; e = e->next)
        if ((e->source == spec->source || (e->hash == hash && strcmp(e->source, spec->source) == 0)) &&
            same_build(e, spec))
            return e;
    return NULL;
}

static void entry_free(kiln_cached_module *e) {
    for (int i = 0; i < e->nkernels; i++) {
        kiln_kernel_release(e->kernels[i]);
        free(e->names[i]);
    }
    free(e->names);
    free(e->kernels);
    if (e->payload && e->payload_destroy) e->payload_destroy(e->payload);
    kiln_module_release(e->module);
    free(e->owned_source);
    free(e->options);
    free(e);
}

/* Compiles spec into a new entry (not yet in the cache). */
static kiln_status entry_build(kiln_context *ctx, const kiln_module_spec *spec, const char *options,
                               uint64_t hash, kiln_cached_module **out) {
    kiln_module *m = NULL;
    kiln_module_prebuilt prebuilt = {spec->prebuilt, spec->prebuilt_required};
    kiln_status s = kiln_module_build(ctx, spec->source, spec->name, spec->options, NULL,
                                      spec->prebuilt ? &prebuilt : NULL, &m);
    if (s != KILN_OK) return s;
    kiln_module_owned_by_context(m);
    kiln_cached_module *e = calloc(1, sizeof *e);
    if (e) e->module = m;
    if (!e || !(e->options = strdup(options)) ||
        (!spec->static_source && !(e->owned_source = strdup(spec->source)))) {
        if (e)
            entry_free(e);
        else
            kiln_module_release(m);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    e->hash = hash;
    e->source = spec->static_source ? spec->source : e->owned_source;
    e->prebuilt = spec->prebuilt;
    e->prebuilt_required = spec->prebuilt && spec->prebuilt_required;
    *out = e;
    return KILN_OK;
}

/* The entry for spec, NULL when absent; *hash: the text's hash when it was
 * computed (the address did not find it). */
static kiln_cached_module *lookup(kiln_context *ctx, const kiln_module_spec *spec, uint64_t *hash) {
    pthread_mutex_lock(&ctx->lock);
    kiln_cached_module *e = find_by_address(ctx, spec);
    pthread_mutex_unlock(&ctx->lock);
    if (e) return e;
    *hash = kiln_fnv1a_str(spec->source); /* outside the lock: a module's text is long */
    pthread_mutex_lock(&ctx->lock);
    e = find(ctx, *hash, spec);
    pthread_mutex_unlock(&ctx->lock);
    return e;
}

kiln_cached_module *kiln_module_cache_find(kiln_context *ctx, const kiln_module_spec *spec) {
    uint64_t hash = 0;
    return lookup(ctx, spec, &hash);
}

kiln_status kiln_module_cache_get(kiln_context *ctx, const kiln_module_spec *spec, kiln_cached_module **out) {
    const char *options = spec->options ? spec->options : "";
    uint64_t hash = 0;
    kiln_cached_module *e = lookup(ctx, spec, &hash);
    if (e) {
        *out = e;
        return KILN_OK;
    }
    kiln_cached_module *made = NULL;
    kiln_status s = entry_build(ctx, spec, options, hash, &made);
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&ctx->lock);
    e = find(ctx, hash, spec);
    void *state = NULL;
    if (!e && kiln_slot_get_locked(ctx, &module_cache_slot, cache_create, NULL, &state) == KILN_OK) {
        struct module_cache *c = state;
        made->next = c->head;
        c->head = made;
        e = made;
        made = NULL;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (made) entry_free(made); /* another thread built it first (or no slot: e is NULL) */
    if (!e) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    *out = e;
    return KILN_OK;
}

/* Under ctx->lock. */
static kiln_status entry_kernel(kiln_cached_module *e, const char *kernel_name, kiln_kernel **out) {
    for (int i = 0; i < e->nkernels; i++)
        if (strcmp(e->names[i], kernel_name) == 0) {
            *out = e->kernels[i];
            return KILN_OK;
        }
    if (e->nkernels == e->cap_kernels) {
        int cap = e->cap_kernels ? e->cap_kernels * 2 : 4;
        char **names = realloc(e->names, sizeof *names * (size_t)cap);
        if (names) e->names = names;
        kiln_kernel **kernels = names ? realloc(e->kernels, sizeof *kernels * (size_t)cap) : NULL;
        if (!kernels) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        e->kernels = kernels;
        e->cap_kernels = cap;
    }
    kiln_kernel *k = NULL;
    kiln_status s = kiln_module_kernel(e->module, kernel_name, &k);
    if (s != KILN_OK) return s;
    if (!(e->names[e->nkernels] = strdup(kernel_name))) {
        kiln_kernel_release(k);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    e->kernels[e->nkernels++] = k;
    *out = k;
    return KILN_OK;
}

kiln_status kiln_module_cache_kernel(kiln_context *ctx, kiln_cached_module *e, const char *kernel_name,
                                     kiln_kernel **out) {
    pthread_mutex_lock(&ctx->lock);
    kiln_status s = entry_kernel(e, kernel_name, out);
    pthread_mutex_unlock(&ctx->lock);
    return s;
}

kiln_status kiln_module_cache_get_kernel(kiln_context *ctx, const kiln_module_spec *spec,
                                         const char *kernel_name, kiln_kernel **out) {
    kiln_cached_module *e = NULL;
    kiln_status s = kiln_module_cache_get(ctx, spec, &e);
    return s == KILN_OK ? kiln_module_cache_kernel(ctx, e, kernel_name, out) : s;
}

const char *kiln_module_cache_source(const kiln_cached_module *e) { return e->source; }

kiln_module *kiln_module_cache_module(const kiln_cached_module *e) { return e->module; }

void *kiln_module_cache_payload(kiln_context *ctx, kiln_cached_module *e) {
    pthread_mutex_lock(&ctx->lock);
    void *p = e->payload;
    pthread_mutex_unlock(&ctx->lock);
    return p;
}

void *kiln_module_cache_set_payload(kiln_context *ctx, kiln_cached_module *e, void *payload,
                                    void (*destroy)(void *payload)) {
    pthread_mutex_lock(&ctx->lock);
    if (!e->payload) {
        e->payload = payload;
        e->payload_destroy = destroy;
    }
    void *kept = e->payload;
    pthread_mutex_unlock(&ctx->lock);
    return kept;
}

void kiln_module_cache_set_recipe(kiln_context *ctx, kiln_cached_module *e, const uint64_t recipe[2]) {
    pthread_mutex_lock(&ctx->lock);
    e->recipe[0] = recipe[0];
    e->recipe[1] = recipe[1];
    e->has_recipe = 1;
    pthread_mutex_unlock(&ctx->lock);
}

kiln_cached_module *kiln_module_cache_find_recipe(kiln_context *ctx, const uint64_t recipe[2]) {
    pthread_mutex_lock(&ctx->lock);
    kiln_cached_module *e = first(ctx);
    while (e && !(e->has_recipe && e->recipe[0] == recipe[0] && e->recipe[1] == recipe[1])) e = e->next;
    pthread_mutex_unlock(&ctx->lock);
    return e;
}

static void cache_destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    struct module_cache *c = state;
    for (kiln_cached_module *e = c->head, *next; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    free(c);
}
