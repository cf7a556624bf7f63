/* graph_native.h: the graphs demo's time-step loop written directly against
 * the CUDA runtime (graph_native.cu, built by nvcc into
 * libkiln_graph_native.so, which kiln_graph_bench dlopens): the same relax
 * kernels and damping step as examples/graph_steps.c, queued directly and
 * as a graph captured from a stream, on kiln's arrays (kiln's CUDA backend
 * runs on the device's primary context, which the runtime shares). */
#ifndef KILN_GRAPH_NATIVE_H
#define KILN_GRAPH_NATIVE_H

#ifdef __cplusplus
extern "C" {
#endif

#define GRAPH_NATIVE_ABI 1

typedef struct graph_native_result {
    double direct_ms, graph_ms;           /* host wall time for all steps, waiting included */
    double direct_us_node, graph_us_node; /* host time queuing, per launch / per graph node */
    int nodes;                            /* of one step's graph */
} graph_native_result;

typedef int (*graph_native_abi_fn)(void);
typedef const char *(*graph_native_error_fn)(int code);
/* a: the state (n floats, set to init before each run), b: scratch. Runs a
 * warm-up step each way, then `steps` steps directly and `steps` launches
 * of one step's graph, each from init; leaves the graph run's final state
 * in a. Returns 0 or a cudaError_t for graph_native_error. */
typedef int (*graph_native_run_fn)(int device, float *a, float *b, const float *init_host, int n, int steps,
                                   int kernels, graph_native_result *out);

#ifdef __cplusplus
}
#endif
#endif
