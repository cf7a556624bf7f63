/* prof_events.c: the events timer, for GPUs without CUPTI (or with
 * KILN_PROFILE_TIMER=events): two backend events recorded around each
 * operation on its stream, drawn from a pool that the resolver refills, and
 * read lazily. An anchor event recorded at start puts device times on the
 * host clock of the trace. */
#include <stdlib.h>

#include "core/clock.h"
#include "core/error.h"
#include "prof/prof_internal.h"

static kiln_backend_event *take_event(kiln_prof *p) {
    if (p->events_failed) return NULL;
    if (p->free_event_count == 0) {
        if (p->free_event_cap < PROF_EVENT_BATCH) {
            kiln_backend_event **n = realloc(p->free_events, PROF_EVENT_BATCH * sizeof *n);
            if (!n) return NULL;
            p->free_events = n;
            p->free_event_cap = PROF_EVENT_BATCH;
        }
        kiln_context *ctx = p->ctx;
        for (int i = 0; i < PROF_EVENT_BATCH; i++) {
            kiln_backend_event *ev = NULL;
            if (ctx->ops->event_create(ctx->state, &ev) != KILN_OK || !ev) break;
            p->free_events[p->free_event_count++] = ev;
        }
        if (p->free_event_count == 0) {
            p->events_failed = 1;
            kiln_clear_error();
            return NULL;
        }
    }
    return p->free_events[--p->free_event_count];
}

static void give_event(kiln_prof *p, kiln_backend_event *ev) {
    if (!ev) return;
    if (p->free_event_count == p->free_event_cap) {
        size_t cap = p->free_event_cap ? p->free_event_cap * 2 : PROF_EVENT_BATCH;
        kiln_backend_event **n = realloc(p->free_events, cap * sizeof *n);
        if (!n) {
            p->ctx->ops->event_destroy(p->ctx->state, ev);
            return;
        }
        p->free_events = n;
        p->free_event_cap = cap;
    }
    p->free_events[p->free_event_count++] = ev;
}

/* Reads a finished GPU record's event times; host times if that fails. */
void kiln_prof_events_read(kiln_prof *p, prof_record *r, int wait) {
    kiln_context *ctx = p->ctx;
    r->dev_begin_ms = r->host_begin_ms;
    r->dev_ms = r->host_end_ms - r->host_begin_ms;
    if (!r->ev[0] || !r->ev[1] || r->ev_failed || atomic_load(&ctx->dead)) return;
    float ms = 0, since_base = 0;
    /* Old chunks (wait == 0) finished long ago: read at once, and wait for
     * the end event only if the driver says it is not done. */
    (void)wait;
    if (ctx->ops->event_elapsed_ms(ctx->state, r->ev[0], r->ev[1], &ms) != KILN_OK) {
        kiln_clear_error(); /* not ready is not an error of the caller's */
        if (ctx->ops->event_synchronize(ctx->state, r->ev[1]) != KILN_OK ||
            ctx->ops->event_elapsed_ms(ctx->state, r->ev[0], r->ev[1], &ms) != KILN_OK)
            goto failed;
    }
    r->dev_ms = ms;
    if (p->base_event &&
        ctx->ops->event_elapsed_ms(ctx->state, p->base_event, r->ev[0], &since_base) == KILN_OK)
        r->dev_begin_ms = p->base_host_ms + since_base;
    return;
failed:
    kiln_clear_error();
}

void kiln_prof_events_start(kiln_prof *p) {
    kiln_context *ctx = p->ctx;
    const kiln_backend_ops *ops = ctx->ops;
    if (!ops->event_create || !ops->event_record || !ops->event_elapsed_ms || !ops->event_synchronize ||
        !ops->event_destroy)
        return;
    /* The anchor that puts device times on the host clock of the trace. */
    if (ops->event_create(ctx->state, &p->base_event) == KILN_OK &&
        ops->event_record(ctx->state, p->base_event, NULL) == KILN_OK &&
        ops->event_synchronize(ctx->state, p->base_event) == KILN_OK) {
        p->base_host_ms = kiln_now_ms();
        p->use_events = 1;
        p->timer = PROF_TIMER_EVENTS;
    } else {
        if (p->base_event) ops->event_destroy(ctx->state, p->base_event);
        p->base_event = NULL;
        kiln_clear_error();
    }
}

/* Two events for a record about to start; none if the pool is dry. Lock held. */
void kiln_prof_events_take(kiln_prof *p, prof_record *r) {
    if ((r->ev[0] = take_event(p)) && !(r->ev[1] = take_event(p))) {
        give_event(p, r->ev[0]);
        r->ev[0] = NULL;
    }
}

/* A resolved record's events back to the pool. Lock held. */
void kiln_prof_events_give(kiln_prof *p, prof_record *r) {
    give_event(p, r->ev[0]);
    give_event(p, r->ev[1]);
    r->ev[0] = r->ev[1] = NULL;
}

/* Destroys every event the profiler holds: pooled, anchor, and those of
 * records never resolved. */
void kiln_prof_events_free(kiln_prof *p) {
    kiln_context *ctx = p->ctx;
    for (size_t i = 0; i < p->free_event_count; i++) ctx->ops->event_destroy(ctx->state, p->free_events[i]);
    for (prof_chunk *c = p->open.head; c; c = c->next)
        for (uint32_t i = c->resolved; i < c->count; i++)
            for (int k = 0; k < 2; k++)
                if (c->rec[i].ev[k]) ctx->ops->event_destroy(ctx->state, c->rec[i].ev[k]);
    if (p->base_event) ctx->ops->event_destroy(ctx->state, p->base_event);
    free(p->free_events);
    p->free_events = NULL;
    p->free_event_count = p->free_event_cap = 0;
    p->base_event = NULL;
}
