/* stream.c: streams and events, thin wrappers over the backend's. */
#include <stdlib.h>

#include "core/context.h"
#include "core/error.h"

kiln_status kiln_stream_create(kiln_context *ctx, kiln_stream **out) {
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_stream_create: out is NULL");
    kiln_stream *st = calloc(1, sizeof *st);
    if (!st) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_stream_create: out of host memory");
    atomic_init(&st->refs, 1);
    st->ctx = kiln_context_retain(ctx);
    pthread_mutex_init(&st->deferred_lock, NULL);
    s = ctx->ops->stream_create(ctx->state, &st->impl);
    if (s != KILN_OK) {
        pthread_mutex_destroy(&st->deferred_lock);
        kiln_context_release(ctx);
        free(st);
        return s;
    }
    *out = st;
    return KILN_OK;
}

kiln_status kiln_stream_synchronize(kiln_stream *stream) {
    if (!stream) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_stream_synchronize: stream is NULL");
    kiln_status s = kiln_context_check(stream->ctx);
    if (s != KILN_OK) return s;
    if (kiln_stream_capturing(stream))
        return kiln_set_error(
            KILN_ERR_CAPTURE,
            "kiln_stream_synchronize: the stream is capturing a graph, whose work runs only "
            "at kiln_graph_launch; end the capture first");
    return kiln_context_note(stream->ctx,
                             stream->ctx->ops->stream_synchronize(stream->ctx->state, stream->impl));
}

kiln_stream *kiln_stream_retain(kiln_stream *s) {
    if (s) atomic_fetch_add(&s->refs, 1);
    return s;
}

void kiln_stream_release(kiln_stream *stream) {
    if (!stream || atomic_fetch_sub(&stream->refs, 1) != 1) return;
    kiln_context *ctx = stream->ctx;
    if (kiln_stream_capturing(stream)) {
        /* Released mid-capture: the capture is ended and its graph dropped
         * (the backend cannot synchronise a capturing stream). */
        kiln_backend_graph *g = NULL;
        int nodes = 0;
        if (ctx->ops->graph_end_capture(ctx->state, stream->impl, &g, &nodes) == KILN_OK && g)
            ctx->ops->graph_destroy(ctx->state, g);
        atomic_store(&stream->capturing, 0);
        atomic_fetch_sub(&ctx->capturing, 1);
    }
    if (!atomic_load(&ctx->dead)) (void)ctx->ops->stream_synchronize(ctx->state, stream->impl);
    /* Deferred arrays hold the stream, so none can be left by now. */
    free(stream->deferred);
    pthread_mutex_destroy(&stream->deferred_lock);
    ctx->ops->stream_destroy(ctx->state, stream->impl);
    free(stream);
    kiln_context_release(ctx);
}

kiln_status kiln_event_create(kiln_context *ctx, kiln_event **out) {
    return kiln_event_create_ex(ctx, KILN_EVENT_DEFAULT, out);
}

kiln_status kiln_event_create_ex(kiln_context *ctx, unsigned flags, kiln_event **out) {
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_event_create: out is NULL");
    if (flags & ~KILN_EVENT_DISABLE_TIMING)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_event_create_ex: unknown flags 0x%x (KILN_EVENT_DISABLE_TIMING is 0x%x)",
                              flags & ~KILN_EVENT_DISABLE_TIMING, KILN_EVENT_DISABLE_TIMING);
    if (flags && !ctx->ops->event_create_flags)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the %s backend has no events without timing",
                              ctx->ops->name);
    kiln_event *ev = calloc(1, sizeof *ev);
    if (!ev) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_event_create: out of host memory");
    ev->ctx = kiln_context_retain(ctx);
    ev->flags = flags;
    s = flags ? ctx->ops->event_create_flags(ctx->state, flags, &ev->impl)
              : ctx->ops->event_create(ctx->state, &ev->impl);
    if (s != KILN_OK) {
        kiln_context_release(ctx);
        free(ev);
        return s;
    }
    *out = ev;
    return KILN_OK;
}

kiln_status kiln_event_record(kiln_event *event, kiln_stream *stream) {
    if (!event) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_event_record: event is NULL");
    if (stream && stream->ctx != event->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_event_record: stream and event belong to different contexts");
    kiln_status s = kiln_context_check(event->ctx);
    if (s != KILN_OK) return s;
    return event->ctx->ops->event_record(event->ctx->state, event->impl, kiln_stream_impl(stream));
}

kiln_status kiln_event_synchronize(kiln_event *event) {
    if (!event) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_event_synchronize: event is NULL");
    kiln_status s = kiln_context_check(event->ctx);
    if (s != KILN_OK) return s;
    return kiln_context_note(event->ctx, event->ctx->ops->event_synchronize(event->ctx->state, event->impl));
}

kiln_status kiln_event_elapsed_ms(kiln_event *start, kiln_event *end, float *ms) {
    if (!start || !end || !ms)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_event_elapsed_ms: NULL argument");
    if (start->ctx != end->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_event_elapsed_ms: events of different contexts");
    if ((start->flags | end->flags) & KILN_EVENT_DISABLE_TIMING)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_event_elapsed_ms: the %s event was made with KILN_EVENT_DISABLE_TIMING",
                              start->flags & KILN_EVENT_DISABLE_TIMING ? "start" : "end");
    return start->ctx->ops->event_elapsed_ms(start->ctx->state, start->impl, end->impl, ms);
}

void kiln_event_release(kiln_event *event) {
    if (!event) return;
    kiln_context *ctx = event->ctx;
    ctx->ops->event_destroy(ctx->state, event->impl);
    free(event);
    kiln_context_release(ctx);
}

kiln_status kiln_capture_refuse(kiln_context *ctx, const char *what) {
    (void)ctx; /* the message is the thread's, whichever stream captures */
    return kiln_set_error(KILN_ERR_CAPTURE,
                          "%s while a stream of the context captures a graph: it cannot be part of the graph "
                          "(do it before kiln_graph_begin_capture or after kiln_graph_end_capture)",
                          what);
}

static _Thread_local int capture_exempt;

void kiln_capture_exempt_thread(void) { capture_exempt = 1; }

int kiln_capture_refuses_compile(kiln_context *ctx) { return !capture_exempt && kiln_context_capturing(ctx); }

int kiln_stream_defer_release(kiln_stream *stream, kiln_array *a) {
    pthread_mutex_lock(&stream->deferred_lock);
    int ok = 1;
    if (stream->deferred_count == stream->deferred_cap) {
        int cap = stream->deferred_cap ? 2 * stream->deferred_cap : 8;
        kiln_array **d = realloc(stream->deferred, (size_t)cap * sizeof *d);
        if (d) {
            stream->deferred = d;
            stream->deferred_cap = cap;
        } else {
            ok = 0;
        }
    }
    if (ok) stream->deferred[stream->deferred_count++] = a;
    pthread_mutex_unlock(&stream->deferred_lock);
    return ok;
}

kiln_array **kiln_stream_take_deferred(kiln_stream *stream, int *count) {
    pthread_mutex_lock(&stream->deferred_lock);
    kiln_array **d = stream->deferred;
    *count = stream->deferred_count;
    stream->deferred = NULL;
    stream->deferred_count = stream->deferred_cap = 0;
    pthread_mutex_unlock(&stream->deferred_lock);
    return d;
}

/* ------------------------------------------------------------------ ordering without the host */

/* The backend op or KILN_ERR_UNSUPPORTED naming the call. */
#define NEED_OP(ctx, op, what)                                                                               \
    do {                                                                                                     \
        if (!(ctx)->ops->op)                                                                                 \
            return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: not available on the %s backend", what,         \
                                  (ctx)->ops->name);                                                         \
    } while (0)

kiln_status kiln_event_query(kiln_event *event) {
    if (!event) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_event_query: event is NULL");
    kiln_context *ctx = event->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    NEED_OP(ctx, event_query, "kiln_event_query");
    int done = 0;
    s = kiln_context_note(ctx, ctx->ops->event_query(ctx->state, event->impl, &done));
    if (s != KILN_OK) return s;
    return done ? KILN_OK : KILN_ERR_NOT_READY;
}

kiln_status kiln_stream_query(kiln_stream *stream) {
    kiln_context *ctx = stream ? stream->ctx : NULL;
    if (!ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_stream_query: stream is NULL (the default stream has no context to name; "
                              "use kiln_synchronize)");
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (kiln_stream_capturing(stream))
        return kiln_set_error(KILN_ERR_CAPTURE, "kiln_stream_query: the stream is capturing a graph");
    NEED_OP(ctx, stream_query, "kiln_stream_query");
    int done = 0;
    s = kiln_context_note(ctx, ctx->ops->stream_query(ctx->state, stream->impl, &done));
    if (s != KILN_OK) return s;
    return done ? KILN_OK : KILN_ERR_NOT_READY;
}

kiln_status kiln_stream_wait_event(kiln_stream *stream, kiln_event *event) {
    if (!event) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_stream_wait_event: event is NULL");
    kiln_context *ctx = event->ctx;
    if (stream && stream->ctx != ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_stream_wait_event: stream and event belong to different contexts");
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    NEED_OP(ctx, stream_wait_event, "kiln_stream_wait_event");
    return kiln_context_note(ctx,
                             ctx->ops->stream_wait_event(ctx->state, kiln_stream_impl(stream), event->impl));
}

kiln_status kiln_stream_add_callback(kiln_stream *stream, kiln_host_fn fn, void *user) {
    if (!stream || !fn)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_stream_add_callback: %s is NULL",
                              !stream ? "stream" : "fn");
    kiln_context *ctx = stream->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    NEED_OP(ctx, stream_add_callback, "kiln_stream_add_callback");
    return kiln_context_note(ctx, ctx->ops->stream_add_callback(ctx->state, stream->impl, fn, user));
}
