/* saxpy.c: the smallest complete kiln program (seed 004): compile a kernel
 * from a string at run time, move data, launch, check.
 *
 *   ./example_saxpy            # CUDA if a GPU is usable, else the CPU
 *   KILN_TARGET=cpu ./example_saxpy
 */
#include <kiln.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* CUDA C, exactly what you would give NVRTC. kiln compiles it with NVRTC on a
 * GPU and with the host C++ compiler on the CPU, and caches the result on
 * disk, so the second run of this program does not compile at all. */
static const char *saxpy_src =
    "extern \"C\" __global__ void saxpy(float a, const float *x, const float *y, float *out,\n"
    "                                   size_t n) {\n"
    "    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
    "    if (tid < n) out[tid] = a * x[tid] + y[tid];\n"
    "}\n";

static int run(kiln_context *ctx, float *hx, float *hy, float *hout, size_t n) {
    /* 1. Compile (or load from the cache) and look the kernel up by name. */
    kiln_kernel *saxpy = NULL;
    KILN_CHECK(kiln_kernel_from_source(ctx, saxpy_src, "saxpy", NULL, &saxpy));

    /* 2. Device arrays: x and y copied from the host, out left empty. */
    int64_t shape[1] = {(int64_t)n};
    kiln_array *x = NULL, *y = NULL, *out = NULL;
    int status = KILN_OK;
    if ((status = kiln_array_from_host(ctx, KILN_FLOAT32, 1, shape, hx, n * sizeof(float), &x)) ||
        (status = kiln_array_from_host(ctx, KILN_FLOAT32, 1, shape, hy, n * sizeof(float), &y)) ||
        (status = kiln_array_empty(ctx, KILN_FLOAT32, 1, shape, &out)))
        kiln_report_failure(status, "allocating the arrays", __FILE__, __LINE__);

    /* 3. Launch: arguments are checked against the kernel's parameters
     *    (2.0f must be a float for `float a`, n fits size_t), then queued. */
    if (status == KILN_OK) {
        const unsigned threads = 512;
        const unsigned blocks = (unsigned)((n + threads - 1) / threads);
        status = kiln_launch(saxpy, KILN_DIM(blocks), KILN_DIM(threads), 0, NULL,
                             KILN_ARGS(kiln_f32(2.0f), kiln_arr(x), kiln_arr(y), kiln_arr(out), kiln_u64(n)));
        if (status) kiln_report_failure(status, "kiln_launch", __FILE__, __LINE__);
    }
    /* 4. Copy the result back; this waits for the kernel. */
    if (status == KILN_OK) {
        status = kiln_array_to_host(out, hout, n * sizeof(float));
        if (status) kiln_report_failure(status, "kiln_array_to_host", __FILE__, __LINE__);
    }
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_array_release(out);
    kiln_kernel_release(saxpy);
    return status;
}

int main(void) {
    const size_t n = 512 * 32768; /* the seed's size */
    float *hx = malloc(n * sizeof *hx), *hy = malloc(n * sizeof *hy), *hout = malloc(n * sizeof *hout);
    if (!hx || !hy || !hout) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    srand(4);
    for (size_t i = 0; i < n; i++) {
        hx[i] = (float)rand() / (float)RAND_MAX;
        hy[i] = (float)rand() / (float)RAND_MAX;
    }

    kiln_context *ctx = NULL;
    int status = kiln_open(&ctx, "auto"); /* KILN_TARGET overrides "auto" */
    if (status != KILN_OK) {
        kiln_report_failure(status, "kiln_open", __FILE__, __LINE__);
        return 1;
    }
    printf("saxpy on %s, n = %zu\n", kiln_context_backend_name(ctx), n);
    status = run(ctx, hx, hy, hout, n);
    kiln_close(ctx);

    /* 5. Check against the host, like the seed's np.allclose. */
    size_t bad = 0;
    for (size_t i = 0; status == KILN_OK && i < n; i++) {
        float expect = 2.0f * hx[i] + hy[i];
        if (fabsf(hout[i] - expect) > 1e-6f * (1 + fabsf(expect))) bad++;
    }
    if (status == KILN_OK)
        printf("%zu of %zu values differ from the host: %s\n", bad, n, bad ? "FAIL" : "ok");
    free(hx);
    free(hy);
    free(hout);
    return status != KILN_OK || bad ? 1 : 0;
}
