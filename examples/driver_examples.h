/* driver_examples.h: workloads of the driver layer (events, graphs), used
 * by examples/bin, `kiln demo graphs`, kiln_bench and tests/test_driver.c. */
#ifndef KILN_DRIVER_EXAMPLES_H
#define KILN_DRIVER_EXAMPLES_H

#include <stdint.h>

#include "kiln.h"

/* Seed 001's streams workload (to_device, a kernel, copy_to_host on a
 * stream) as a three-stream pipeline over `chunks` pieces of n floats:
 * uploads on one stream, the kernel on a second, downloads on a third, each
 * piece handed on by an event (kiln_stream_wait_event), and one host wait at
 * the end. *max_err: the largest difference from the host's result (0 when
 * every element matches). Returns a kiln_status. */
int kiln_example_streams_events(kiln_context *ctx, int64_t n, int chunks, double *max_err);

/* The time-step loop of `kiln demo graphs`: each step launches `kernels`
 * small kernels (a relaxation of n floats, in place, ping-ponging through
 * two arrays) and one ufunc call (a damping of the state), `steps` times,
 * run directly and as one captured graph per step replayed `steps` times. */
typedef struct kiln_graph_demo_result {
    int64_t n;
    int steps, kernels;
    int equal;             /* the two final states are bitwise equal */
    double direct_ms;      /* host time queuing every step directly, then waiting */
    double graph_ms;       /* host time launching the graph every step, then waiting */
    double direct_us_node; /* host time per launch queued directly */
    double graph_us_node;  /* host time per graph node (launch call / nodes) */
    double capture_ms;     /* capturing one step */
    int nodes;             /* nodes of one step's graph */
} kiln_graph_demo_result;
/* final_state (may be NULL): n floats, receives the graph run's result. */
int kiln_example_graph_steps(kiln_context *ctx, int64_t n, int steps, int kernels, float *final_state,
                             kiln_graph_demo_result *res);
/* The loop's starting state, element i of n (the native baseline uses it). */
float kiln_example_graph_init(int64_t i);

/* The registry's runners (`kiln demo streams`, `kiln demo graphs`). */
#include "examples.h"
int kiln_example_streams(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_graphs(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);

#endif
