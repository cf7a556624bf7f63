/* module_cache.h: the context's one cache of the modules kiln compiles for
 * itself (array and linalg built-ins, BLAS helpers, reductions and scans,
 * ufunc and gufunc variants, sort, random's own generators, sparse's CPU
 * kernels).
 *
 * One per context, in a context slot. An entry is keyed by (source, options,
 * target): the full text of the module (found by its hash, then compared),
 * its compile options, and the context's target (one cache per context, so
 * the target is the context's own). A repeated lookup costs a hash and a
 * compare (or only an address compare for static text), never a compile or
 * a disk-cache load. Each entry keeps the kernels looked up in it and one
 * payload of its user, with the user's destroy callback.
 *
 * Lifetime: the modules hold no reference to the context (that would keep
 * it alive forever); they are unloaded at its last release, before the
 * backend closes, so kernels from the cache are valid for as long as the
 * caller holds the context or an object that holds it. Callers never
 * release what the cache gives them.
 *
 * Concurrency: lookups take ctx->lock; a miss compiles outside the lock and
 * inserts under it; two threads that miss at once both compile and one
 * result is kept (the other is dropped). */
#ifndef KILN_KERNEL_MODULE_CACHE_H
#define KILN_KERNEL_MODULE_CACHE_H

#include <stdint.h>

#include "core/context.h"

typedef struct kiln_module_spec {
    const char *source;  /* the module's whole text */
    const char *name;    /* the module's name in messages, logs and profiles */
    const char *options; /* compile options; NULL: none */
    /* 1: source is static text (it outlives every context), kept by
     * address and looked up by address before its hash is computed. */
    int static_source;
    /* Optional: this module compiled when kiln was built (core/backend.h),
     * packed instead of compiled on a context of the image's arch, never
     * through the disk cache; NULL: none. Part of the entry's key. */
    const kiln_prebuilt_image *prebuilt;
    /* 1: the module comes from `prebuilt` or not at all (an error where
     * the image cannot serve: another arch, another text); 0: it compiles
     * as usual there. */
    int prebuilt_required;
} kiln_module_spec;

typedef struct kiln_cached_module kiln_cached_module;

/* The entry for spec on ctx: found, or compiled (or loaded from the disk
 * cache) and kept. A compile error comes back as the compiler's status and
 * message, not prefixed. */
kiln_status kiln_module_cache_get(kiln_context *ctx, const kiln_module_spec *spec, kiln_cached_module **out);
/* The entry for spec on ctx if it is there, else NULL (nothing is built). */
kiln_cached_module *kiln_module_cache_find(kiln_context *ctx, const kiln_module_spec *spec);
/* The kernel kernel_name of e's module, looked up once and kept with e. */
kiln_status kiln_module_cache_kernel(kiln_context *ctx, kiln_cached_module *e, const char *kernel_name,
                                     kiln_kernel **out);
/* Both at once: the kernel kernel_name of spec's module. */
kiln_status kiln_module_cache_get_kernel(kiln_context *ctx, const kiln_module_spec *spec,
                                         const char *kernel_name, kiln_kernel **out);
/* e's text (valid while the context lives). */
const char *kiln_module_cache_source(const kiln_cached_module *e);
/* e's module, for its globals (kiln_module_global); owned by the cache:
 * never released by the caller. */
kiln_module *kiln_module_cache_module(const kiln_cached_module *e);

/* The user's payload of e, NULL when none was set. */
void *kiln_module_cache_payload(kiln_context *ctx, kiln_cached_module *e);
/* Sets e's payload unless it has one: returns the payload e keeps (the
 * existing one, whose user won a race, or `payload`). destroy (may be
 * NULL) is called on the kept payload at the context's last release; a
 * payload not kept is the caller's to free. */
void *kiln_module_cache_set_payload(kiln_context *ctx, kiln_cached_module *e, void *payload,
                                    void (*destroy)(void *payload));

/* A recipe: a user's short key for what generated an entry's text, so a
 * repeated call finds the entry without generating the text again. */
void kiln_module_cache_set_recipe(kiln_context *ctx, kiln_cached_module *e, const uint64_t recipe[2]);
/* The entry whose recipe is `recipe`, or NULL. */
kiln_cached_module *kiln_module_cache_find_recipe(kiln_context *ctx, const uint64_t recipe[2]);

#endif
