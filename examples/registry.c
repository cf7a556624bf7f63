/* registry.c: the table of seed workloads behind kiln_examples(). */
#include <string.h>

#include "example_list.h"

/* `run` has no way to know its table row, so each row gets a one-line
 * wrapper that passes it (defined after the table). */
#define EXAMPLE_RUNNER_DECLARE_(name)                                                             \
    static int run_##name(kiln_context *ctx, const kiln_example_opts *opts,                       \
                          kiln_example_result *res);
EXAMPLE_RUNNER_DECLARE_(saxpy)
EXAMPLE_RUNNER_DECLARE_(mandelbrot)
EXAMPLE_RUNNER_DECLARE_(matmul)
EXAMPLE_RUNNER_DECLARE_(haversine_mesh)

#define EXAMPLE_ROW_(n, seed_id, kernel, size, size_cpu, text)                                    \
    {.name = #n, .seed = seed_id, .summary = text, .run = run_##n, .source = kiln_##n##_source, \
     .kernel_name = kernel, .default_size = size, .default_size_cpu = size_cpu,                 \
     .prepare = kiln_##n##_prepare, .verify = kiln_##n##_verify}

static const kiln_example example_table[] = {
    EXAMPLE_ROW_(saxpy, "004", "saxpy", 512 * 32768, 0,
                 "out = a*x + y over 16M f32 (size = n), kernel from a source string"),
    EXAMPLE_ROW_(mandelbrot, "001", "mandel_kernel", 1536, 0,
                 "1536x1024 u8 image, complex64 z*z+c, 20 iters, grid-stride loops (size = width)"),
    /* On the CPU every barrier switches all 1024 threads of a block (fibers):
     * the seed's n = 1600 takes ~20 s a launch on two cores, so the CPU
     * default is n = 400 (64x fewer flops). --size 1600 runs the seed's. */
    EXAMPLE_ROW_(matmul, "001", "square_matrix_mul", 1600, 400,
                 "n x n f32 matmul, 32x32 shared-memory tiles + __syncthreads (size = n; cpu 400)"),
    EXAMPLE_ROW_(haversine_mesh, "000", "haversine_mesh", 1000, 0,
                 "haversine over a lat/lon mesh made in the kernel, f64 (size = nx = ny)"),
};

#define EXAMPLE_RUNNER_(name, index)                                                              \
    static int run_##name(kiln_context *ctx, const kiln_example_opts *opts,                       \
                          kiln_example_result *res) {                                             \
        return kiln_example_run(&example_table[index], ctx, opts, res);                           \
    }
EXAMPLE_RUNNER_(saxpy, 0)
EXAMPLE_RUNNER_(mandelbrot, 1)
EXAMPLE_RUNNER_(matmul, 2)
EXAMPLE_RUNNER_(haversine_mesh, 3)

const kiln_example *kiln_examples(int *count) {
    if (count) *count = (int)(sizeof example_table / sizeof example_table[0]);
    return example_table;
}

const kiln_example *kiln_example_find(const char *name) {
    int n;
    const kiln_example *all = kiln_examples(&n);
    for (int i = 0; name && i < n; i++)
        if (strcmp(all[i].name, name) == 0) return &all[i];
    return NULL;
}

const char *kiln_example_source(const char *name) {
    const kiln_example *ex = kiln_example_find(name);
    return ex ? ex->source : NULL;
}
