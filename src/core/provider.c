/* provider.c: choosing a library's provider for a context, and the
 * providers' per-context states, all kept in one context slot. */
#include "core/provider.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/context.h"
#include "core/error.h"

int kiln_provider_serves(const kiln_provider *p, const kiln_context *ctx) {
    return p && ctx && (p->backends & KILN_PROVIDER_ON(kiln_context_backend(ctx))) != 0;
}

static const char *backend_name(const kiln_context *ctx) {
    return kiln_context_backend(ctx) == KILN_BACKEND_CUDA ? "CUDA" : "CPU";
}

kiln_status kiln_provider_select(kiln_context *ctx, const kiln_provider *const *candidates, size_t n,
                                 const kiln_provider **out) {
    *out = NULL;
    const char *library = NULL;
    kiln_status first = KILN_OK;
    char first_message[512] = "";
    for (size_t i = 0; i < n; i++) {
        const kiln_provider *p = candidates[i];
        if (!p) continue;
        if (p->abi != KILN_PROVIDER_ABI)
            return kiln_set_error(KILN_ERR_INTERNAL, "%s provider %s has ABI %d, kiln's is %d", p->library,
                                  p->name, p->abi, KILN_PROVIDER_ABI);
        library = p->library;
        if (!kiln_provider_serves(p, ctx)) continue;
        kiln_status s = p->load ? p->load() : KILN_OK;
        if (s == KILN_OK) {
            *out = p;
            return KILN_OK;
        }
        if (first == KILN_OK) {
            first = s;
            snprintf(first_message, sizeof first_message, "%s", kiln_last_error());
        }
    }
    if (first != KILN_OK) return kiln_set_error(first, "%s", first_message);
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s has no provider on the %s backend",
                          library ? library : "this library", backend_name(ctx));
}

const char *kiln_provider_describe(const kiln_provider *p) {
    const char *d = p->describe ? p->describe() : NULL;
    return d && *d ? d : p->name;
}

/* ------------------------------------------------------------ per-context states */

typedef struct provider_entry {
    const kiln_provider *provider;
    void *state;
} provider_entry;

typedef struct provider_states {
    pthread_mutex_t lock; /* held while a provider makes its state */
    provider_entry *entries;
    int count, cap;
} provider_states;

static void states_on_close(kiln_context *ctx, void *state) {
    provider_states *ps = state;
    pthread_mutex_lock(&ps->lock);
    for (int i = ps->count - 1; i >= 0; i--) {
        const kiln_provider *p = ps->entries[i].provider;
        if (p->context_release && ps->entries[i].state) p->context_release(ctx, ps->entries[i].state);
    }
    ps->count = 0;
    pthread_mutex_unlock(&ps->lock);
}

static void states_destroy(kiln_context *ctx, void *state) {
    provider_states *ps = state;
    states_on_close(ctx, ps);
    pthread_mutex_destroy(&ps->lock);
    free(ps->entries);
    free(ps);
}

static const kiln_slot_class states_class = {
    .name = "providers",
    .close_stage = KILN_SLOT_CLOSE_RELEASE,
    .on_close = states_on_close,
    .destroy = states_destroy,
};

static kiln_status states_create(kiln_context *ctx, void *arg, void **out) {
    (void)ctx, (void)arg;
    provider_states *ps = calloc(1, sizeof *ps);
    if (!ps) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for provider states");
    pthread_mutex_init(&ps->lock, NULL);
    *out = ps;
    return KILN_OK;
}

kiln_status kiln_provider_state(kiln_context *ctx, const kiln_provider *p, void **state) {
    *state = NULL;
    if (!p->context_init) return KILN_OK;
    kiln_status s = kiln_context_check_open(ctx, p->library);
    if (s != KILN_OK) return s;
    provider_states *ps;
    s = kiln_slot_get(ctx, &states_class, states_create, NULL, (void **)&ps);
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&ps->lock);
    for (int i = 0; i < ps->count; i++)
        if (ps->entries[i].provider == p) {
            *state = ps->entries[i].state;
            pthread_mutex_unlock(&ps->lock);
            return KILN_OK;
        }
    if (ps->count == ps->cap) {
        int cap = ps->cap ? 2 * ps->cap : 8;
        provider_entry *grown = realloc(ps->entries, (size_t)cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&ps->lock);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for provider states");
        }
        ps->entries = grown;
        ps->cap = cap;
    }
    void *made = NULL;
    s = p->context_init(ctx, &made);
    if (s == KILN_OK) {
        ps->entries[ps->count++] = (provider_entry){p, made};
        *state = made;
    }
    pthread_mutex_unlock(&ps->lock);
    return s;
}
