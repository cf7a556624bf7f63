/* cpu_graph.c: graphs on the CPU backend: while a stream captures, its
 * launches, copies, memsets, callbacks and event records are appended to a
 * list instead of run; a graph launch runs the list in order. The kernel
 * arguments are copied at capture (arrays are pointers, so an array's
 * contents are read at replay, as on a GPU). Replay skips the core's
 * per-call work (argument conversion and checks, dispatch, profiling),
 * which is what a graph saves on a GPU too. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

typedef enum node_kind { NODE_KERNEL, NODE_COPY, NODE_MEMSET, NODE_CALLBACK, NODE_EVENT } node_kind;

typedef struct graph_node {
    node_kind kind;
    kiln_backend_function *fn;
    kiln_launch_config cfg;
    unsigned char *values; /* the kernel's argument values, back to back */
    void **args;           /* pointers into values, one per parameter */
    void *dst;
    const void *src;
    size_t bytes;
    int value;
    void (*callback)(void *);
    void *user;
    kiln_backend_event *event;
} graph_node;

struct kiln_cpu_graph {
    graph_node *nodes;
    int count, cap;
    void **owned; /* memory allocated during the capture; freed with the graph */
    int owned_count, owned_cap;
    kiln_status failure; /* the first operation that could not be recorded */
};

struct kiln_backend_graph {
    struct kiln_cpu_graph g;
};

static graph_node *append(struct kiln_cpu_graph *g) {
    if (g->count == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        graph_node *n = realloc(g->nodes, (size_t)cap * sizeof *n);
        if (!n) return NULL;
        g->nodes = n;
        g->cap = cap;
    }
    graph_node *n = &g->nodes[g->count++];
    memset(n, 0, sizeof *n);
    return n;
}

/* Records the failure for end capture and returns it now too. */
static kiln_status fail(struct kiln_cpu_graph *g, kiln_status s, const char *what) {
    kiln_set_error(s, "%s", what);
    if (g->failure == KILN_OK) g->failure = s;
    return s;
}

int kiln_cpu_capture_launch(kiln_backend_stream *stream, kiln_backend_function *fn,
                            const kiln_launch_config *cfg, void **args, kiln_status *status) {
    if (!stream || !stream->capture) return 0;
    struct kiln_cpu_graph *g = stream->capture;
    int n = fn->param_count;
    size_t total = 0;
    for (int i = 0; i < n; i++) total += ((size_t)fn->param_size[i] + 15) & ~(size_t)15;
    unsigned char *values = malloc(total ? total : 1);
    void **ptrs = malloc((size_t)(n ? n : 1) * sizeof *ptrs);
    graph_node *node = values && ptrs ? append(g) : NULL;
    if (!node) {
        free(values);
        free(ptrs);
        *status = fail(g, KILN_ERR_OUT_OF_MEMORY, "out of host memory recording a launch in a graph");
        return 1;
    }
    /* Each value on a 16-byte boundary: the module reads it through a
     * pointer of its own type, which may be a vector type. */
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(values + at, args[i], fn->param_size[i]);
        ptrs[i] = values + at;
        at += ((size_t)fn->param_size[i] + 15) & ~(size_t)15;
    }
    node->kind = NODE_KERNEL;
    node->fn = fn;
    node->cfg = *cfg;
    node->values = values;
    node->args = ptrs;
    *status = KILN_OK;
    return 1;
}

int kiln_cpu_capture_copy(kiln_backend_stream *stream, void *dst, const void *src, size_t bytes, int async,
                          kiln_status *status) {
    if (!stream || !stream->capture) return 0;
    struct kiln_cpu_graph *g = stream->capture;
    if (!async) {
        *status = kiln_set_error(KILN_ERR_CAPTURE,
                                 "a synchronous copy on a stream capturing a graph: its data would be read "
                                 "before the graph runs; use an asynchronous copy to kiln_host_alloc memory");
        return 1;
    }
    graph_node *node = append(g);
    if (!node) {
        *status = fail(g, KILN_ERR_OUT_OF_MEMORY, "out of host memory recording a copy in a graph");
        return 1;
    }
    node->kind = NODE_COPY;
    node->dst = dst;
    node->src = src;
    node->bytes = bytes;
    *status = KILN_OK;
    return 1;
}

int kiln_cpu_capture_memset(kiln_backend_stream *stream, void *dst, int value, size_t bytes,
                            kiln_status *status) {
    if (!stream || !stream->capture) return 0;
    graph_node *node = append(stream->capture);
    if (!node) {
        *status = fail(stream->capture, KILN_ERR_OUT_OF_MEMORY, "out of host memory recording a memset");
        return 1;
    }
    node->kind = NODE_MEMSET;
    node->dst = dst;
    node->value = value;
    node->bytes = bytes;
    *status = KILN_OK;
    return 1;
}

int kiln_cpu_capture_callback(kiln_backend_stream *stream, void (*fn)(void *), void *user,
                              kiln_status *status) {
    if (!stream || !stream->capture) return 0;
    graph_node *node = append(stream->capture);
    if (!node) {
        *status = fail(stream->capture, KILN_ERR_OUT_OF_MEMORY, "out of host memory recording a callback");
        return 1;
    }
    node->kind = NODE_CALLBACK;
    node->callback = fn;
    node->user = user;
    *status = KILN_OK;
    return 1;
}

int kiln_cpu_capture_event(kiln_backend_stream *stream, kiln_backend_event *ev, kiln_status *status) {
    if (!stream || !stream->capture) return 0;
    graph_node *node = append(stream->capture);
    if (!node) {
        *status = fail(stream->capture, KILN_ERR_OUT_OF_MEMORY, "out of host memory recording an event");
        return 1;
    }
    node->kind = NODE_EVENT;
    node->event = ev;
    *status = KILN_OK;
    return 1;
}

/* 1 when not capturing or recorded; 0 when the list could not grow. */
int kiln_cpu_capture_alloc(kiln_backend_stream *stream, void *ptr) {
    if (!stream || !stream->capture) return 1;
    struct kiln_cpu_graph *g = stream->capture;
    if (g->owned_count == g->owned_cap) {
        int cap = g->owned_cap ? 2 * g->owned_cap : 8;
        void **o = realloc(g->owned, (size_t)cap * sizeof *o);
        if (!o) {
            if (g->failure == KILN_OK) g->failure = KILN_ERR_OUT_OF_MEMORY;
            return 0;
        }
        g->owned = o;
        g->owned_cap = cap;
    }
    g->owned[g->owned_count++] = ptr;
    return 1;
}

int kiln_cpu_capture_owns(kiln_backend_stream *stream, const void *ptr) {
    if (!stream || !stream->capture || !ptr) return 0;
    for (int i = 0; i < stream->capture->owned_count; i++)
        if (stream->capture->owned[i] == ptr) return 1;
    return 0;
}

static void graph_clear(kiln_backend_state *st, struct kiln_cpu_graph *g) {
    for (int i = 0; i < g->count; i++) {
        free(g->nodes[i].values);
        free(g->nodes[i].args);
    }
    free(g->nodes);
    for (int i = 0; i < g->owned_count; i++) kiln_cpu_mem_free(st, g->owned[i], NULL);
    free(g->owned);
    memset(g, 0, sizeof *g);
}

kiln_status kiln_cpu_graph_begin_capture(kiln_backend_state *st, kiln_backend_stream *stream) {
    (void)st;
    if (!stream)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "the default stream cannot capture a graph");
    if (stream->capture) return kiln_set_error(KILN_ERR_CAPTURE, "the stream is already capturing a graph");
    stream->capture = calloc(1, sizeof *stream->capture);
    if (!stream->capture) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    return KILN_OK;
}

kiln_status kiln_cpu_graph_end_capture(kiln_backend_state *st, kiln_backend_stream *stream,
                                       kiln_backend_graph **out, int *node_count) {
    if (!stream || !stream->capture)
        return kiln_set_error(KILN_ERR_CAPTURE, "the stream is not capturing a graph");
    struct kiln_cpu_graph *g = stream->capture;
    stream->capture = NULL;
    if (g->failure != KILN_OK) {
        kiln_status s = g->failure;
        graph_clear(st, g);
        free(g);
        return kiln_set_error(s,
                              "the capture failed: an operation could not be recorded (out of host memory)");
    }
    kiln_backend_graph *graph = calloc(1, sizeof *graph);
    if (!graph) {
        graph_clear(st, g);
        free(g);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    graph->g = *g;
    free(g);
    *node_count = graph->g.count;
    *out = graph;
    return KILN_OK;
}

static kiln_status run_node(kiln_backend_state *st, const graph_node *n, kiln_backend_stream *stream) {
    switch (n->kind) {
    case NODE_KERNEL: return kiln_cpu_launch(st, n->fn, &n->cfg, stream, n->args);
    case NODE_COPY: return kiln_cpu_copy(st, n->dst, n->src, n->bytes, KILN_COPY_DEVICE_TO_DEVICE, stream, 1);
    case NODE_MEMSET: return kiln_cpu_memset(st, n->dst, n->value, n->bytes, stream);
    case NODE_CALLBACK:
        if (stream && stream->capture) return kiln_cpu_stream_add_callback(st, stream, n->callback, n->user);
        n->callback(n->user);
        return KILN_OK;
    case NODE_EVENT: return kiln_cpu_event_record(st, n->event, stream);
    }
    return KILN_OK;
}

kiln_status kiln_cpu_graph_launch(kiln_backend_state *st, kiln_backend_graph *graph,
                                  kiln_backend_stream *stream) {
    /* On a capturing stream each node is recorded in turn: a graph inside a
     * graph, as cuStreamBeginCapture makes of a captured cuGraphLaunch. */
    for (int i = 0; i < graph->g.count; i++) {
        kiln_status s = run_node(st, &graph->g.nodes[i], stream);
        if (s != KILN_OK) return kiln_prefix_error(s, "graph node %d of %d: ", i, graph->g.count);
    }
    return KILN_OK;
}

kiln_status kiln_cpu_graph_update(kiln_backend_state *st, kiln_backend_graph *graph,
                                  kiln_backend_graph *from) {
    (void)st;
    /* Swapped, not copied: from's nodes may point at memory from owns. */
    struct kiln_cpu_graph t = graph->g;
    graph->g = from->g;
    from->g = t;
    return KILN_OK;
}

void kiln_cpu_graph_destroy(kiln_backend_state *st, kiln_backend_graph *graph) {
    if (!graph) return;
    graph_clear(st, &graph->g);
    free(graph);
}

void kiln_cpu_capture_discard(kiln_backend_state *st, kiln_backend_stream *stream) {
    if (!stream || !stream->capture) return;
    graph_clear(st, stream->capture);
    free(stream->capture);
    stream->capture = NULL;
}
