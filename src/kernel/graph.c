/* graph.c: kiln_graph: stream capture, replay and update, over the
 * backend's graph ops (CUDA graphs; on the CPU a recorded list). The core's
 * part is the bookkeeping that lets kiln itself refuse what cannot be
 * captured (core/context.h: kiln_context_capturing) and keeps the memory of
 * arrays released mid-capture for as long as the graph lives. */
#include <stdio.h>
#include <stdlib.h>

#include "array/array.h"
#include "core/context.h"
#include "core/error.h"
#include "prof/prof.h"

struct kiln_graph {
    kiln_context *ctx;
    kiln_backend_graph *impl;
    int node_count;
    char label[48]; /* the profiler's row: "graph (N nodes)" */
    /* Arrays released during the capture, whose memory the graph may use
     * (kiln's own temporaries too): freed with the graph. */
    kiln_array **deferred;
    int deferred_count;
};

/* Frees arrays kept for a graph, once no launch of it can still run. */
static void free_deferred(kiln_context *ctx, kiln_array **d, int n) {
    if (n > 0 && !atomic_load(&ctx->dead)) (void)ctx->ops->synchronize(ctx->state);
    for (int i = 0; i < n; i++) kiln_array_free_now(d[i]);
    free(d);
}

static kiln_status need_graph_ops(kiln_context *ctx) {
    if (!ctx->ops->graph_begin_capture || !ctx->ops->graph_end_capture || !ctx->ops->graph_launch)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "graphs are not available on the %s backend",
                              ctx->ops->name);
    return KILN_OK;
}

kiln_status kiln_graph_begin_capture(kiln_stream *stream) {
    if (!stream)
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "kiln_graph_begin_capture: stream is NULL (the default stream serves kiln's own "
            "allocations and cannot capture; use a stream of kiln_stream_create)");
    kiln_context *ctx = stream->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK) s = need_graph_ops(ctx);
    if (s != KILN_OK) return s;
    if (kiln_stream_capturing(stream))
        return kiln_set_error(KILN_ERR_CAPTURE, "kiln_graph_begin_capture: the stream is already capturing");
    s = ctx->ops->graph_begin_capture(ctx->state, stream->impl);
    if (s != KILN_OK) return kiln_context_note(ctx, s);
    atomic_store(&stream->capturing, 1);
    atomic_fetch_add(&ctx->capturing, 1);
    return KILN_OK;
}

kiln_status kiln_graph_end_capture(kiln_stream *stream, kiln_graph **out) {
    if (!stream || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_graph_end_capture: %s is NULL",
                              !stream ? "stream" : "out");
    *out = NULL;
    kiln_context *ctx = stream->ctx;
    if (!kiln_stream_capturing(stream))
        return kiln_set_error(KILN_ERR_CAPTURE,
                              "kiln_graph_end_capture: the stream is not capturing a graph");
    kiln_graph *g = calloc(1, sizeof *g);
    kiln_backend_graph *impl = NULL;
    int nodes = 0;
    /* Ended whatever happens, so the stream is usable again. */
    kiln_status s = ctx->ops->graph_end_capture(ctx->state, stream->impl, &impl, &nodes);
    atomic_store(&stream->capturing, 0);
    atomic_fetch_sub(&ctx->capturing, 1);
    int deferred_count = 0;
    kiln_array **deferred = kiln_stream_take_deferred(stream, &deferred_count);
    if (s == KILN_OK && !g) {
        ctx->ops->graph_destroy(ctx->state, impl);
        s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_graph_end_capture: out of host memory");
    }
    if (s != KILN_OK) {
        free(g);
        free_deferred(ctx, deferred, deferred_count);
        return kiln_context_note(ctx, kiln_prefix_error(s, "kiln_graph_end_capture: "));
    }
    g->ctx = kiln_context_retain(ctx);
    g->impl = impl;
    g->deferred = deferred;
    g->deferred_count = deferred_count;
    g->node_count = nodes;
    snprintf(g->label, sizeof g->label, "graph (%d node%s)", nodes, nodes == 1 ? "" : "s");
    *out = g;
    return KILN_OK;
}

kiln_status kiln_graph_launch(kiln_graph *graph, kiln_stream *stream) {
    if (!graph) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_graph_launch: graph is NULL");
    kiln_context *ctx = graph->ctx;
    if (stream && stream->ctx != ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_graph_launch: the stream belongs to another context than the graph");
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    kiln_prof_op *op = NULL;
    if (KILN_PROF_ON(ctx)) op = kiln_prof_library_begin(ctx, graph->label, kiln_stream_impl(stream), "", 0);
    s = ctx->ops->graph_launch(ctx->state, graph->impl, kiln_stream_impl(stream));
    if (op) kiln_prof_end(ctx, op);
    if (s != KILN_OK) kiln_prefix_error(s, "kiln_graph_launch: ");
    return kiln_context_note(ctx, s);
}

kiln_status kiln_graph_update(kiln_graph *graph, kiln_graph *from) {
    if (!graph || !from)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_graph_update: %s is NULL",
                              !graph ? "graph" : "from");
    if (graph == from) return KILN_OK;
    kiln_context *ctx = graph->ctx;
    if (from->ctx != ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_graph_update: the graphs belong to different contexts");
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!ctx->ops->graph_update)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "kiln_graph_update: not available on the %s backend",
                              ctx->ops->name);
    s = ctx->ops->graph_update(ctx->state, graph->impl, from->impl);
    if (s != KILN_OK) return kiln_context_note(ctx, kiln_prefix_error(s, "kiln_graph_update: "));
    /* The backends swap contents: from now holds what graph held, and the
     * memory each uses goes with it. */
    int n = graph->node_count;
    graph->node_count = from->node_count;
    from->node_count = n;
    kiln_array **d = graph->deferred;
    graph->deferred = from->deferred;
    from->deferred = d;
    n = graph->deferred_count;
    graph->deferred_count = from->deferred_count;
    from->deferred_count = n;
    snprintf(graph->label, sizeof graph->label, "graph (%d node%s)", graph->node_count,
             graph->node_count == 1 ? "" : "s");
    snprintf(from->label, sizeof from->label, "graph (%d node%s)", from->node_count,
             from->node_count == 1 ? "" : "s");
    return KILN_OK;
}

int kiln_graph_node_count(const kiln_graph *graph) { return graph ? graph->node_count : 0; }

void kiln_graph_destroy(kiln_graph *graph) {
    if (!graph) return;
    kiln_context *ctx = graph->ctx;
    ctx->ops->graph_destroy(ctx->state, graph->impl);
    free_deferred(ctx, graph->deferred, graph->deferred_count);
    free(graph);
    kiln_context_release(ctx);
}
