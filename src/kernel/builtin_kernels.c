/* builtin_kernels.c: the context's table of its own compiled kernels. */
#include "kernel/builtin_kernels.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernel/module.h"

typedef struct builtin_entry {
    const char *source; /* static text: compared by address */
    char *options;
    char *kernel_name;
    kiln_kernel *kernel;
    struct builtin_entry *next;
} builtin_entry;

struct kiln_builtin_cache {
    builtin_entry *head;
};

static void builtins_destroy(kiln_context *ctx, void *state);

/* The kernels are owned by the context (they hold no reference to it), so
 * they stay until its last release, after every library's objects. */
static const kiln_slot_class builtins_slot = {
    .name = "builtin kernels",
    .close_stage = KILN_SLOT_CLOSE_RELEASE,
    .destroy = builtins_destroy,
};

static kiln_status builtins_create(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    (void)arg;
    *state = calloc(1, sizeof(struct kiln_builtin_cache));
    return *state ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
}

/* Under ctx->lock. */
static kiln_kernel *builtin_find(kiln_context *ctx, const char *source, const char *options,
                                 const char *kernel_name) {
    struct kiln_builtin_cache *cache = kiln_slot_peek(ctx, &builtins_slot);
    if (!cache) return NULL;
    for (builtin_entry *e = cache->head; e; e = e->next)
        if (e->source == source && strcmp(e->options, options) == 0 &&
            strcmp(e->kernel_name, kernel_name) == 0)
            return e->kernel;
    return NULL;
}

kiln_status kiln_builtin_kernel(kiln_context *ctx, const char *source, const char *name, const char *options,
                                const char *kernel_name, kiln_kernel **out) {
    if (!options) options = "";
    pthread_mutex_lock(&ctx->lock);
    kiln_kernel *k = builtin_find(ctx, source, options, kernel_name);
    pthread_mutex_unlock(&ctx->lock);
    if (k) {
        *out = k;
        return KILN_OK;
    }
    /* Compile outside the lock; if two threads race, one result is kept. */
    kiln_module *m = NULL;
    kiln_status s = kiln_module_build(ctx, source, name, options, NULL, &m);
    if (s != KILN_OK) return kiln_prefix_error(s, "building kiln's own kernel %s: ", kernel_name);
    kiln_module_owned_by_context(m);
    s = kiln_module_kernel(m, kernel_name, &k);
    kiln_module_release(m);
    if (s != KILN_OK) return s;
    builtin_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->options = strdup(options)) || !(e->kernel_name = strdup(kernel_name))) {
        if (e) free(e->options);
        free(e);
        kiln_kernel_release(k);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    e->source = source;
    e->kernel = k;
    pthread_mutex_lock(&ctx->lock);
    kiln_kernel *existing = builtin_find(ctx, source, options, kernel_name);
    void *state = NULL;
    if (!existing && kiln_slot_get_locked(ctx, &builtins_slot, builtins_create, NULL, &state) == KILN_OK) {
        struct kiln_builtin_cache *cache = state;
        e->next = cache->head;
        cache->head = e;
        existing = k;
        e = NULL;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (e) { /* lost the race (or out of memory): drop ours */
        kiln_kernel_release(e->kernel);
        free(e->options);
        free(e->kernel_name);
        free(e);
    }
    if (!existing) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    *out = existing;
    return KILN_OK;
}

static void builtins_destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    struct kiln_builtin_cache *cache = state;
    builtin_entry *e = cache->head;
    while (e) {
        builtin_entry *next = e->next;
        kiln_kernel_release(e->kernel);
        free(e->options);
        free(e->kernel_name);
        free(e);
        e = next;
    }
    free(cache);
}
