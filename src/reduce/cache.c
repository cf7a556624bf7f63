/* cache.c: the context's table of compiled reduction and scan modules,
 * keyed by their full generated source (a module's text fixes everything
 * about it), so a repeated call costs a hash and a compare, never a compile
 * or a disk-cache load. Kernels looked up in a module are kept with it. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "kernel/module.h"
#include "reduce/reduce.h"

#define RD_CACHE_KERNELS 8

typedef struct rd_entry {
    uint64_t hash;
    char *source;
    kiln_module *module;
    char *names[RD_CACHE_KERNELS];
    kiln_kernel *kernels[RD_CACHE_KERNELS];
    size_t aux;      /* a number the module's user keeps with it (the accumulator's size) */
    uint64_t key[2]; /* rd_key of what generated the source (0, 0: none) */
    struct rd_entry *next;
} rd_entry;

struct kiln_reduce_cache {
    rd_entry *head;
};

static void cache_on_close(kiln_context *ctx, void *state);
static void cache_destroy(kiln_context *ctx, void *state);

/* The modules hold the context: released at kiln_close. */
static const kiln_slot_class reduce_slot = {
    .name = "reductions",
    .close_stage = KILN_SLOT_CLOSE_RELEASE,
    .on_close = cache_on_close,
    .destroy = cache_destroy,
};

static kiln_status cache_create(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    (void)arg;
    *state = calloc(1, sizeof(struct kiln_reduce_cache));
    return *state ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
}

/* Under ctx->lock: the first entry, NULL when there is no cache yet. */
static rd_entry *first(kiln_context *ctx) {
    struct kiln_reduce_cache *c = kiln_slot_peek(ctx, &reduce_slot);
    return c ? c->head : NULL;
}

static rd_entry *find(kiln_context *ctx, uint64_t h, const char *source) {
    for (rd_entry *e = first(ctx); e; e = e->next)
        if (e->source == source || (e->hash == h && strcmp(e->source, source) == 0)) return e;
    return NULL;
}

/* The entry whose own text is `source` (a pointer rd_cache_source_for_key
 * gave): no hashing of the text. */
static rd_entry *find_own(kiln_context *ctx, const char *source) {
    for (rd_entry *e = first(ctx); e; e = e->next)
        if (e->source == source) return e;
    return NULL;
}

static kiln_status entry_kernel(rd_entry *e, const char *kernel, kiln_kernel **out) {
    for (int i = 0; i < RD_CACHE_KERNELS && e->names[i]; i++)
        if (strcmp(e->names[i], kernel) == 0) {
            *out = e->kernels[i];
            return KILN_OK;
        }
    for (int i = 0; i < RD_CACHE_KERNELS; i++) {
        if (e->names[i]) continue;
        kiln_kernel *k = NULL;
        kiln_status s = kiln_module_kernel(e->module, kernel, &k);
        if (s != KILN_OK) return s;
        if (!(e->names[i] = strdup(kernel))) {
            kiln_kernel_release(k);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        e->kernels[i] = k;
        *out = k;
        return KILN_OK;
    }
    return kiln_set_error(KILN_ERR_INTERNAL, "reduction module has more than %d kernels", RD_CACHE_KERNELS);
}

kiln_status rd_cached_kernel(kiln_context *ctx, const char *source, const char *name, const char *kernel,
                             const char *what, kiln_kernel **out) {
    pthread_mutex_lock(&ctx->lock);
    rd_entry *e = find_own(ctx, source);
    if (e) {
        kiln_status s = entry_kernel(e, kernel, out);
        pthread_mutex_unlock(&ctx->lock);
        return s;
    }
    pthread_mutex_unlock(&ctx->lock);
    uint64_t h = kiln_fnv1a_str(source);
    pthread_mutex_lock(&ctx->lock);
    e = find(ctx, h, source);
    kiln_status s = KILN_OK;
    if (e) s = entry_kernel(e, kernel, out);
    pthread_mutex_unlock(&ctx->lock);
    if (e) return s;
    if ((s = kiln_context_check_open(ctx, "reduction")) != KILN_OK) return s;
    kiln_module *m = NULL;
    s = kiln_module_build(ctx, source, name, NULL, NULL, &m);
    if (s != KILN_OK) return what ? kiln_prefix_error(s, "%s", what) : s;
    rd_entry *n = calloc(1, sizeof *n);
    if (!n || !(n->source = strdup(source))) {
        free(n);
        kiln_module_release(m);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    n->hash = h;
    n->module = m;
    pthread_mutex_lock(&ctx->lock);
    e = find(ctx, h, source);
    void *state = NULL;
    if (!e && kiln_slot_get_locked(ctx, &reduce_slot, cache_create, NULL, &state) == KILN_OK) {
        struct kiln_reduce_cache *c = state;
        n->next = c->head;
        c->head = n;
        e = n;
        n = NULL;
    }
    s = e ? entry_kernel(e, kernel, out) : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_unlock(&ctx->lock);
    if (n) { /* another thread built it first */
        kiln_module_release(n->module);
        free(n->source);
        free(n);
    }
    return s;
}

size_t rd_cache_aux(kiln_context *ctx, const char *source) {
    pthread_mutex_lock(&ctx->lock);
    rd_entry *e = find_own(ctx, source);
    pthread_mutex_unlock(&ctx->lock);
    uint64_t h = e ? 0 : kiln_fnv1a_str(source);
    pthread_mutex_lock(&ctx->lock);
    if (!e) e = find(ctx, h, source);
    size_t v = e ? e->aux : 0;
    pthread_mutex_unlock(&ctx->lock);
    return v;
}

void rd_cache_set_aux(kiln_context *ctx, const char *source, size_t value) {
    uint64_t h = kiln_fnv1a_str(source);
    pthread_mutex_lock(&ctx->lock);
    rd_entry *e = find(ctx, h, source);
    if (e) e->aux = value;
    pthread_mutex_unlock(&ctx->lock);
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
    const char *src = NULL;
    pthread_mutex_lock(&ctx->lock);
    for (rd_entry *e = first(ctx); e && !src; e = e->next)
        if (e->key[0] == key[0] && e->key[1] == key[1]) src = e->source;
    pthread_mutex_unlock(&ctx->lock);
    return src;
}

void rd_cache_set_key(kiln_context *ctx, const char *source, const uint64_t key[2]) {
    uint64_t h = kiln_fnv1a_str(source);
    pthread_mutex_lock(&ctx->lock);
    rd_entry *e = find(ctx, h, source);
    if (e) {
        e->key[0] = key[0];
        e->key[1] = key[1];
    }
    pthread_mutex_unlock(&ctx->lock);
}

static void cache_destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    struct kiln_reduce_cache *c = state;
    rd_entry *e = c->head;
    while (e) {
        rd_entry *next = e->next;
        for (int i = 0; i < RD_CACHE_KERNELS; i++) {
            if (e->kernels[i]) kiln_kernel_release(e->kernels[i]);
            free(e->names[i]);
        }
        kiln_module_release(e->module);
        free(e->source);
        free(e);
        e = next;
    }
    free(c);
}

static void cache_on_close(kiln_context *ctx, void *state) {
    (void)state;
    void *c = kiln_slot_take(ctx, &reduce_slot);
    if (c) cache_destroy(ctx, c);
}
