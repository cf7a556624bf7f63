/* registry.c: the table of seed workloads behind kiln_examples(). */
#include <string.h>

#include "driver_examples.h"
#include "example_list.h"

/* `run` has no way to know its table row, so each row gets a one-line
 * wrapper that passes it (defined after the table). */
#define EXAMPLE_RUNNER_DECLARE_(name)                                                                        \
    static int run_##name(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
EXAMPLE_RUNNER_DECLARE_(saxpy)
EXAMPLE_RUNNER_DECLARE_(mandelbrot)
EXAMPLE_RUNNER_DECLARE_(matmul)
EXAMPLE_RUNNER_DECLARE_(haversine_mesh)

#define EXAMPLE_ROW_(n, seed_id, kernel, size, size_cpu, text)                                               \
    {                                                                                                        \
        .name = #n, .seed = seed_id, .summary = text, .run = run_##n, .source = kiln_##n##_source,           \
        .kernel_name = kernel, .default_size = size, .default_size_cpu = size_cpu,                           \
        .prepare = kiln_##n##_prepare, .verify = kiln_##n##_verify                                           \
    }

/* The seeds' vectorize and guvectorize workloads (ufunc_examples.c,
 * gufunc_examples.c) run whole: kiln generates their kernels, so there is no
 * source here to compile or time natively (bench/ufunc_bench.c compares
 * them with hand-written kernels). */
int kiln_example_ufunc_haversine(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_ufunc_add(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_ufunc_black_scholes(kiln_context *ctx, const kiln_example_opts *opts,
                                     kiln_example_result *res);
int kiln_example_ufunc_vector_add(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_gufunc_hermite(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_gufunc_batched_matmul(kiln_context *ctx, const kiln_example_opts *opts,
                                       kiln_example_result *res);
/* Scale-out (comm_demo.c): one rank here; many under mpirun (examples/bin). */
int kiln_example_comm_mc_pi(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_comm_heat(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
/* FFT (examples/fft_convolve.c). */
int kiln_example_fft_convolve(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_reduce(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_random_xorwow(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_random_pi(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_sort(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
/* Sparse matrices (examples/sparse_demo.c). */
int kiln_example_sparse(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
/* Dense solvers (examples/linalg_demo.c). */
int kiln_example_linalg_solve(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
#define UFUNC_ROW_(n, seed_id, text)                                                                         \
    { .name = #n, .seed = seed_id, .summary = text, .run = kiln_example_ufunc_##n }
#define GUFUNC_ROW_(n, seed_id, text)                                                                        \
    { .name = #n, .seed = seed_id, .summary = text, .run = kiln_example_gufunc_##n }

/* In seed order. */
static const kiln_example example_table[] = {
    UFUNC_ROW_(haversine, "000",
               "vectorize haversine over a 1000x1000 mesh, host arrays and scalar broadcast"),
    EXAMPLE_ROW_(haversine_mesh, "000", "haversine_mesh", 1000, 0,
                 "haversine over a lat/lon mesh made in the kernel, f64 (size = nx = ny)"),
    UFUNC_ROW_(add, "001", "vectorize Add, f32, on the cpu and cuda targets (size = N)"),
    EXAMPLE_ROW_(mandelbrot, "001", "mandel_kernel", 1536, 0,
                 "1536x1024 u8 image, complex64 z*z+c, 20 iters, grid-stride loops (size = width)"),
    /* On the CPU every barrier switches all 1024 threads of a block (fibers):
     * the seed's n = 1600 takes ~20 s a launch on two cores, so the CPU
     * default is n = 400 (64x fewer flops). --size 1600 runs the seed's. */
    EXAMPLE_ROW_(matmul, "001", "square_matrix_mul", 1600, 400,
                 "n x n f32 matmul, 32x32 shared-memory tiles + __syncthreads (size = n; cpu 400)"),
    UFUNC_ROW_(black_scholes, "001", "vectorize Black-Scholes, 4M options f64, two outputs"),
    {.name = "fft_convolve",
     .seed = "001",
     .summary = "512x512 image * 5x5 Laplacian, same mode, via C2C FFTs "
                "and a complex64 vectorize multiply (size = side; --image FILE.png)",
     .run = kiln_example_fft_convolve},
    {.name = "xorwow",
     .seed = "001",
     .summary = "cuRAND XORWOW: 1M uniform f32, checked against cuRAND's host generator",
     .run = kiln_example_random_xorwow},
    {.name = "rng_pi",
     .seed = "001",
     .summary = "Monte Carlo pi, 4M points from the in-kernel stateless Philox in a vectorize body",
     .run = kiln_example_random_pi},
    GUFUNC_ROW_(hermite, "002", "guvectorize Hermite recurrence (n)->(n) in place, and ()->(n)"),
    GUFUNC_ROW_(batched_matmul, "002", "guvectorize (m,n),(n,p)->(m,p) over a batch of 4x4 f32"),
    UFUNC_ROW_(vector_add, "003", "vectorAdd of 320M f32 from host arrays + a fused expression"),
    EXAMPLE_ROW_(saxpy, "004", "saxpy", 512 * 32768, 0,
                 "out = a*x + y over 16M f32 (size = n), kernel from a source string"),
    {.name = "mc_pi",
     .seed = "-",
     .summary = "Monte Carlo pi, Philox subsequence per rank, all-reduced (size = samples)",
     .run = kiln_example_comm_mc_pi},
    {.name = "heat",
     .seed = "-",
     .summary = "2-d heat stencil in row bands, halo send/recv (size = n x n grid)",
     .run = kiln_example_comm_heat},
    {.name = "streams",
     .seed = "001",
     .summary = "to_device, kernel, copy_to_host in 8 chunks over 3 streams ordered by events, one host "
                "wait (size = n f32)",
     .run = kiln_example_streams},
    {.name = "graphs",
     .seed = "-",
     .summary = "time steps of 1000 small kernels + 1 ufunc call, direct vs one captured graph a step "
                "(size = n; --repeat = steps)",
     .run = kiln_example_graphs},
    {.name = "reduce",
     .seed = "001",
     .summary = "sum, argmax, cumsum of 2^28 f32 (cpu 2^24) and row/column sums of a "
                "16384^2 matrix (cpu 2048^2) vs long double (size = n)",
     .run = kiln_example_reduce},
    {.name = "sort",
     .seed = "-",
     .summary = "2^24 float32 keys, alone and with int32 values, vs qsort of (key, index) (size = n)",
     .run = kiln_example_sort},
    {.name = "sparse",
     .seed = "-",
     .summary = "2-d Poisson 5-point Laplacian (1024^2 unknowns, cpu 256^2) as CSR: SpMV, and conjugate "
                "gradients to 1e-8 with kiln_sparse_spmv + BLAS dot/axpy (size = grid side)",
     .run = kiln_example_sparse},
    {.name = "solve",
     .seed = "-",
     .summary = "numpy.linalg.solve: 1000 64x64 f64 systems in one call and one 8192^2 (cpu 2048^2), "
                "residuals vs long double (size = n)",
     .run = kiln_example_linalg_solve},
};

#define EXAMPLE_RUNNER_(name)                                                                                \
    static int run_##name(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {      \
        return kiln_example_run(kiln_example_find(#name), ctx, opts, res);                                   \
    }
EXAMPLE_RUNNER_(saxpy)
EXAMPLE_RUNNER_(mandelbrot)
EXAMPLE_RUNNER_(matmul)
EXAMPLE_RUNNER_(haversine_mesh)

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
