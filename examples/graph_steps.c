/* graph_steps.c: the time-step loop of `kiln demo graphs`: many small
 * kernels and one ufunc call per step, queued directly and replayed as a
 * captured graph. With kernels this small the GPU finishes each faster than
 * the host can queue the next, so the host's cost per launch is the step's
 * cost; a graph pays it once per step instead of once per kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver_examples.h"

/* One relaxation sweep, out <- in, ends held: a stencil that moves n floats. */
static const char *relax_src =
    "__global__ void relax(float *out, const float *in, int n, float w) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    float c = in[i];\n"
    "    out[i] = (i == 0 || i == n - 1) ? c : c + w * (in[i - 1] + in[i + 1] - 2.0f * c);\n"
    "}\n";

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

typedef struct steps_state {
    kiln_kernel *relax;
    kiln_ufunc *damp;
    kiln_array *a, *b;
    kiln_stream *s;
    int64_t n;
    int kernels;
} steps_state;

/* One step on st->s: `kernels` sweeps a->b->a... (an even count ends in a)
 * and a *= 0.999 by the ufunc. */
static kiln_status step(steps_state *st) {
    kiln_dim3 grid = KILN_DIM((uint32_t)((st->n + 255) / 256)), block = KILN_DIM(256);
    for (int k = 0; k < st->kernels; k++) {
        kiln_array *dst = k % 2 ? st->a : st->b, *src = k % 2 ? st->b : st->a;
        kiln_status s =
            kiln_launch(st->relax, grid, block, 0, st->s,
                        KILN_ARGS(kiln_arr(dst), kiln_arr(src), kiln_i32((int)st->n), kiln_f32(0.25f)));
        if (s != KILN_OK) return s;
    }
    kiln_array *outs[1] = {st->a};
    return kiln_call_ex(st->damp, NULL, st->s, KILN_ARGS(kiln_arr(st->a), kiln_f32(0.999f)), outs);
}

static kiln_status reset(steps_state *st, const float *init) {
    return kiln_array_from_host_copy(st->a, init, (size_t)st->n * sizeof *init);
}

#define TRY(call)                                                                                            \
    do {                                                                                                     \
        if ((s = (call)) != KILN_OK) goto done;                                                              \
    } while (0)

float kiln_example_graph_init(int64_t i) { return (i % 97) < 48 ? 1.0f : 0.0f; }

int kiln_example_graph_steps(kiln_context *ctx, int64_t n, int steps, int kernels, float *final_state,
                             kiln_graph_demo_result *res) {
    if (!ctx || n < 2 || n > (1 << 30) || steps < 1 || kernels < 2 || kernels % 2 || !res)
        return KILN_ERR_INVALID_ARGUMENT;
    memset(res, 0, sizeof *res);
    res->n = n;
    res->steps = steps;
    res->kernels = kernels;
    kiln_status s = KILN_OK;
    steps_state st = {0};
    st.n = n;
    st.kernels = kernels;
    kiln_graph *g = NULL;
    float *init = malloc((size_t)n * sizeof *init), *direct = malloc((size_t)n * sizeof *init),
          *graphed = malloc((size_t)n * sizeof *init);
    if (!init || !direct || !graphed) {
        s = KILN_ERR_OUT_OF_MEMORY;
        goto done;
    }
    for (int64_t i = 0; i < n; i++) init[i] = kiln_example_graph_init(i);
    TRY(kiln_kernel_from_source(ctx, relax_src, "relax", NULL, &st.relax));
    TRY(kiln_vectorize(ctx, "damp", "f4(f4,f4)", "x, d", "return x * d;", NULL, &st.damp));
    TRY(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &st.a));
    TRY(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &st.b));
    TRY(kiln_stream_create(ctx, &st.s));

    /* Warm-up steps: first calls build what they need, and the ufunc's
     * exact kernel (built beside the first call) replaces its first one,
     * so both runs below use the same kernels. */
    TRY(reset(&st, init));
    TRY(step(&st));
    TRY(kiln_stream_synchronize(st.s));
    TRY(kiln_jit_wait(ctx));
    TRY(step(&st));
    TRY(kiln_stream_synchronize(st.s));
    TRY(kiln_jit_wait(ctx));

    TRY(reset(&st, init));
    double t0 = now_ms();
    for (int i = 0; i < steps; i++) TRY(step(&st));
    double queued = now_ms();
    TRY(kiln_stream_synchronize(st.s));
    res->direct_ms = now_ms() - t0;
    res->direct_us_node = (queued - t0) * 1e3 / ((double)steps * (kernels + 1));
    TRY(kiln_array_to_host(st.a, direct, (size_t)n * sizeof *direct));

    TRY(reset(&st, init));
    double c0 = now_ms();
    TRY(kiln_graph_begin_capture(st.s));
    s = step(&st);
    kiln_status end = kiln_graph_end_capture(st.s, &g);
    if (s == KILN_OK) s = end;
    if (s != KILN_OK) goto done;
    res->capture_ms = now_ms() - c0;
    res->nodes = kiln_graph_node_count(g);
    TRY(kiln_graph_launch(g, st.s)); /* uploads the graph to the device */
    TRY(kiln_stream_synchronize(st.s));
    TRY(reset(&st, init));
    t0 = now_ms();
    for (int i = 0; i < steps; i++) TRY(kiln_graph_launch(g, st.s));
    queued = now_ms();
    TRY(kiln_stream_synchronize(st.s));
    res->graph_ms = now_ms() - t0;
    res->graph_us_node = (queued - t0) * 1e3 / ((double)steps * (res->nodes > 0 ? res->nodes : 1));
    TRY(kiln_array_to_host(st.a, graphed, (size_t)n * sizeof *graphed));
    res->equal = memcmp(direct, graphed, (size_t)n * sizeof *direct) == 0;
    if (final_state) memcpy(final_state, graphed, (size_t)n * sizeof *graphed);
done:
    kiln_graph_destroy(g);
    kiln_stream_release(st.s);
    kiln_array_release(st.a);
    kiln_array_release(st.b);
    kiln_ufunc_release(st.damp);
    kiln_kernel_release(st.relax);
    free(init);
    free(direct);
    free(graphed);
    return s;
}

/* The registry's runner (`kiln demo graphs`): size = n (default 4096), 1000
 * kernels and one ufunc call a step, --repeat steps (default 20, 5 on the
 * CPU). ms_median: the graph's wall time per step. */
int kiln_example_graphs(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    int64_t n = opts && opts->size > 0 ? opts->size : 4096;
    int steps = opts && opts->repeat > 0                        ? opts->repeat
                : kiln_context_backend(ctx) == KILN_BACKEND_CPU ? 5
                                                                : 20;
    kiln_graph_demo_result r;
    int s = kiln_example_graph_steps(ctx, n, steps, 1000, NULL, &r);
    if (s != KILN_OK) return s;
    res->size = n;
    res->runs = steps;
    res->ms_median = res->ms_min = r.graph_ms / steps;
    res->bytes = (double)n * 8 * (r.kernels + 2);
    res->passed = r.equal;
    snprintf(
        res->check, sizeof res->check,
        "graph %s direct; host per node: direct %.2f us, graph %.2f us (%d nodes); a step: direct %.3f ms, "
        "graph %.3f ms",
        r.equal ? "==" : "!=", r.direct_us_node, r.graph_us_node, r.nodes, r.direct_ms / steps,
        r.graph_ms / steps);
    return KILN_OK;
}
