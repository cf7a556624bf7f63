/* cuda_graph.c: graphs by stream capture. Capture is relaxed: kiln refuses
 * by itself what cannot be captured (kernel/graph.c), and a stricter mode
 * would also forbid calls on other threads and streams that have nothing
 * to do with the capture (a compile's cuModuleLoadData, a host copy on the
 * default stream). A graph holds its CUgraph and one instantiation; memory
 * that captured calls allocate from the pool lives in the graph and is
 * freed before each relaunch (AUTO_FREE_ON_LAUNCH). */
#include <stdlib.h>

#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

struct kiln_backend_graph {
    CUgraph graph;
    CUgraphExec exec;
};

#define NEED_GRAPHS(st)                                                                                      \
    do {                                                                                                     \
        if (!(st)->cu->cuStreamBeginCapture || !(st)->cu->cuStreamEndCapture ||                              \
            !(st)->cu->cuGraphInstantiateWithFlags || !(st)->cu->cuGraphLaunch ||                            \
            !(st)->cu->cuGraphExecDestroy || !(st)->cu->cuGraphDestroy)                                      \
            return kiln_set_error(KILN_ERR_UNSUPPORTED, "the CUDA driver lacks the graph API "               \
                                                        "(cuStreamBeginCapture ... cuGraphLaunch)");         \
    } while (0)

kiln_status kiln_cuda_graph_begin_capture(kiln_backend_state *st, kiln_backend_stream *stream) {
    NEED_GRAPHS(st);
    if (!stream)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "the default stream cannot capture a graph");
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuStreamBeginCapture(kiln_cuda_stream(st, stream), CU_STREAM_CAPTURE_MODE_RELAXED);
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuStreamBeginCapture");
}

kiln_status kiln_cuda_graph_end_capture(kiln_backend_state *st, kiln_backend_stream *stream,
                                        kiln_backend_graph **out, int *node_count) {
    NEED_GRAPHS(st);
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUgraph graph = NULL;
    CUresult r = st->cu->cuStreamEndCapture(kiln_cuda_stream(st, stream), &graph);
    if (r != CUDA_SUCCESS) {
        if (graph) (void)st->cu->cuGraphDestroy(graph);
        s = kiln_cuda_fail(st->cu, r, "cuStreamEndCapture");
        if (r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
            kiln_prefix_error(s, "an operation queued during the capture could not be captured: ");
        return s;
    }
    size_t nodes = 0;
    if (st->cu->cuGraphGetNodes) (void)st->cu->cuGraphGetNodes(graph, NULL, &nodes);
    CUgraphExec exec = NULL;
    r = st->cu->cuGraphInstantiateWithFlags(&exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    kiln_backend_graph *g = r == CUDA_SUCCESS ? calloc(1, sizeof *g) : NULL;
    if (!g) {
        s = r != CUDA_SUCCESS ? kiln_cuda_fail(st->cu, r, "cuGraphInstantiateWithFlags")
                              : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        if (exec) (void)st->cu->cuGraphExecDestroy(exec);
        (void)st->cu->cuGraphDestroy(graph);
        return s;
    }
    g->graph = graph;
    g->exec = exec;
    *node_count = (int)nodes;
    *out = g;
    return KILN_OK;
}

kiln_status kiln_cuda_graph_launch(kiln_backend_state *st, kiln_backend_graph *g,
                                   kiln_backend_stream *stream) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuGraphLaunch(g->exec, kiln_cuda_stream(st, stream));
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuGraphLaunch");
}

/* In place when the topology matches (kernel arguments, copy addresses);
 * else a new instantiation of from's graph. Either way the CUgraphs are
 * swapped, so from keeps the one graph no longer describes. */
kiln_status kiln_cuda_graph_update(kiln_backend_state *st, kiln_backend_graph *g, kiln_backend_graph *from) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    if (st->cu->cuGraphExecUpdate) {
        CUgraphExecUpdateResultInfo info = {0, NULL, NULL};
        r = st->cu->cuGraphExecUpdate(g->exec, from->graph, &info);
    }
    if (r != CUDA_SUCCESS) {
        if (r != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) return kiln_cuda_fail(st->cu, r, "cuGraphExecUpdate");
        CUgraphExec exec = NULL;
        /* The new instantiation first, so that a failure leaves the graph
         * as it was (from's CUgraph has no other instantiation, which a
         * graph with memory nodes may not have). */
        r = st->cu->cuGraphInstantiateWithFlags(&exec, from->graph,
                                                CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
        if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuGraphInstantiateWithFlags");
        (void)st->cu->cuGraphExecDestroy(g->exec);
        g->exec = exec;
    }
    CUgraph t = g->graph;
    g->graph = from->graph;
    from->graph = t;
    return KILN_OK;
}

void kiln_cuda_graph_destroy(kiln_backend_state *st, kiln_backend_graph *g) {
    if (!g) return;
    if (kiln_cuda_make_current(st) == KILN_OK) {
        if (g->exec) (void)st->cu->cuGraphExecDestroy(g->exec);
        if (g->graph) (void)st->cu->cuGraphDestroy(g->graph);
    }
    free(g);
}
