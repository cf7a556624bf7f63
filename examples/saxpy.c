/* saxpy.c: seed 004, out = a*x + y compiled at run time from a source
 * string (NVRTC on a GPU, the host compiler on the CPU). size = n elements;
 * the seed's 512 threads x 32768 blocks. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "example_list.h"
#include "example_util.h"

/* The seed's kernel, word for word apart from const: one element per thread,
 * the tail guarded by the size_t count. */
const char kiln_saxpy_source[] =
    "extern \"C\" __global__ void saxpy(float a, const float *x, const float *y, float *out,\n"
    "                                   size_t n) {\n"
    "    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
    "    if (tid < n) out[tid] = a * x[tid] + y[tid];\n"
    "}\n";

enum { SAXPY_THREADS = 512 };
static const float saxpy_a = 2.0f;

int kiln_saxpy_prepare(kiln_context *ctx, int64_t n, kiln_example_launch *l) {
    if (n < 1 || (n + SAXPY_THREADS - 1) / SAXPY_THREADS > INT32_MAX) {
        fprintf(stderr, "saxpy: size %lld out of range (1 .. 2^40)\n", (long long)n);
        return KILN_ERR_INVALID_ARGUMENT;
    }
    size_t bytes = (size_t)n * sizeof(float);
    float *x = l->host[0] = example_alloc(bytes, "saxpy x");
    float *y = l->host[1] = example_alloc(bytes, "saxpy y");
    if (!x || !y) return KILN_ERR_OUT_OF_MEMORY;
    example_rng rng = {4};
    example_fill_f32(&rng, x, (size_t)n, 0, 1); /* np.random.rand, as in the seed */
    example_fill_f32(&rng, y, (size_t)n, 0, 1);

    kiln_array *dx = NULL, *dy = NULL, *dout = NULL;
    EXAMPLE_TRY(kiln_kernel_from_source(ctx, kiln_saxpy_source, "saxpy", NULL, &l->kernel));
    EXAMPLE_TRY(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, x, bytes, &dx));
    kiln_value ax = example_keep(l, dx);
    EXAMPLE_TRY(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, y, bytes, &dy));
    kiln_value ay = example_keep(l, dy);
    EXAMPLE_TRY(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &dout));
    kiln_value aout = example_keep(l, dout);

    example_arg(l, kiln_f32(saxpy_a));
    example_arg(l, ax);
    example_arg(l, ay);
    example_arg(l, aout);
    example_arg(l, kiln_u64((uint64_t)n));
    l->grid = KILN_DIM((uint32_t)((n + SAXPY_THREADS - 1) / SAXPY_THREADS));
    l->block = KILN_DIM(SAXPY_THREADS);
    l->size = n;
    l->bytes = 3.0 * (double)bytes; /* read x, y; write out */
    l->flops = 2.0 * (double)n;
    return KILN_OK;
}

/* Bound: one float rounding of the product and one of the sum (or a single
 * one when the compiler fuses them), against a float64 reference. */
int kiln_saxpy_verify(kiln_example_launch *l, const kiln_example_opts *opts, kiln_example_result *res) {
    (void)opts;
    size_t n = (size_t)l->size;
    const float *x = l->host[0], *y = l->host[1];
    float *out = example_alloc(n * sizeof *out, "saxpy result");
    if (!out) return KILN_ERR_OUT_OF_MEMORY;
    int s = kiln_array_to_host(l->arrays[2], out, n * sizeof *out);
    if (s == KILN_OK) {
        double worst = 0;
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            double ref = (double)saxpy_a * x[i] + y[i];
            double bound = 2.0 * FLT_EPSILON * (fabs((double)saxpy_a * x[i]) + fabs(y[i]));
            double err = fabs(out[i] - ref);
            if (!(err <= bound)) bad++; /* catches NaN too */
            double rel = ref != 0 ? err / fabs(ref) : err;
            if (rel > worst || rel != rel) worst = rel;
        }
        res->passed = bad == 0;
        snprintf(res->check, sizeof res->check, "max rel err %.2g vs float64 host, %zu of %zu beyond 2 ulp",
                 worst, bad, n);
    }
    free(out);
    return s;
}
