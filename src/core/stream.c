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
    s = ctx->ops->stream_create(ctx->state, &st->impl);
    if (s != KILN_OK) {
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
    if (!atomic_load(&ctx->dead)) (void)ctx->ops->stream_synchronize(ctx->state, stream->impl);
    ctx->ops->stream_destroy(ctx->state, stream->impl);
    free(stream);
    kiln_context_release(ctx);
}

kiln_status kiln_event_create(kiln_context *ctx, kiln_event **out) {
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_event_create: out is NULL");
    kiln_event *ev = calloc(1, sizeof *ev);
    if (!ev) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_event_create: out of host memory");
    ev->ctx = kiln_context_retain(ctx);
    s = ctx->ops->event_create(ctx->state, &ev->impl);
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
    return start->ctx->ops->event_elapsed_ms(start->ctx->state, start->impl, end->impl, ms);
}

void kiln_event_release(kiln_event *event) {
    if (!event) return;
    kiln_context *ctx = event->ctx;
    ctx->ops->event_destroy(ctx->state, event->impl);
    free(event);
    kiln_context_release(ctx);
}
