/* slot.c: the context's slots (context.h), where the parts above core keep
 * their per-context state. Slots are taken under ctx->lock and never given
 * back, so a reader without the lock (kiln_slot_peek) sees a slot's class
 * fixed before it sees the count that includes it. */
#include "core/context.h"
#include "core/error.h"

/* Under ctx->lock: the index of cls's slot, or -1. */
static int slot_index(kiln_context *ctx, const kiln_slot_class *cls) {
    int n = atomic_load_explicit(&ctx->nslots, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        if (ctx->slots[i].cls == cls) return i;
    return -1;
}

kiln_status kiln_slot_get_locked(kiln_context *ctx, const kiln_slot_class *cls, kiln_slot_create_fn create,
                                 void *arg, void **out) {
    int i = slot_index(ctx, cls);
    void *state = i >= 0 ? atomic_load_explicit(&ctx->slots[i].state, memory_order_relaxed) : NULL;
    if (state) {
        *out = state;
        return KILN_OK;
    }
    if (i < 0) {
        i = atomic_load_explicit(&ctx->nslots, memory_order_relaxed);
        if (i == KILN_CONTEXT_SLOTS)
            return kiln_set_error(KILN_ERR_INTERNAL, "no free context slot for %s (all %d in use)", cls->name,
                                  KILN_CONTEXT_SLOTS);
    }
    kiln_status s = create(ctx, arg, &state);
    if (s != KILN_OK) return s;
    if (!state) return kiln_set_error(KILN_ERR_INTERNAL, "the %s state was not made", cls->name);
    atomic_store_explicit(&ctx->slots[i].state, state, memory_order_release);
    if (ctx->slots[i].cls != cls) {
        ctx->slots[i].cls = cls;
        atomic_store_explicit(&ctx->nslots, i + 1, memory_order_release);
    }
    *out = state;
    return KILN_OK;
}

kiln_status kiln_slot_get(kiln_context *ctx, const kiln_slot_class *cls, kiln_slot_create_fn create,
                          void *arg, void **out) {
    void *state = kiln_slot_peek(ctx, cls);
    if (state) {
        *out = state;
        return KILN_OK;
    }
    pthread_mutex_lock(&ctx->lock);
    kiln_status s = kiln_slot_get_locked(ctx, cls, create, arg, out);
    pthread_mutex_unlock(&ctx->lock);
    return s;
}

void *kiln_slot_take(kiln_context *ctx, const kiln_slot_class *cls) {
    pthread_mutex_lock(&ctx->lock);
    int i = slot_index(ctx, cls);
    void *state = i >= 0 ? atomic_exchange(&ctx->slots[i].state, NULL) : NULL;
    pthread_mutex_unlock(&ctx->lock);
    return state;
}
