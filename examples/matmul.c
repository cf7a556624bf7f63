/* matmul.c: seed 001's cu_square_matrix_mul, C = A B for n x n float32,
 * 32 x 32 tiles staged through shared memory between two barriers.
 * size = n; the seed's 50 blocks x 32 threads = 1600. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "blas_examples.h"
#include "example_list.h"
#include "example_util.h"

/* The seed's kernel with the edges fixed: it read past the matrix when n is
 * not a multiple of the tile; here out-of-range tile entries load as 0, and
 * every thread reaches every barrier (the guards sit around the loads and the
 * store, never around __syncthreads). */
const char kiln_matmul_source[] =
    "#define TPB 32\n"
    "extern \"C\" __global__ void square_matrix_mul(const float *A, const float *B, float *C,\n"
    "                                             int n) {\n"
    "    __shared__ float sA[TPB][TPB];\n"
    "    __shared__ float sB[TPB][TPB];\n"
    "    int tx = threadIdx.x, ty = threadIdx.y;\n"
    "    int x = tx + blockIdx.x * blockDim.x; // column of C\n"
    "    int y = ty + blockIdx.y * blockDim.y; // row of C\n"
    "    float acc = 0.0f;\n"
    "    int tiles = (n + TPB - 1) / TPB;\n"
    "    for (int i = 0; i < tiles; i++) {\n"
    "        int a_col = tx + i * TPB, b_row = ty + i * TPB;\n"
    "        sA[ty][tx] = (y < n && a_col < n) ? A[(size_t)y * n + a_col] : 0.0f;\n"
    "        sB[ty][tx] = (b_row < n && x < n) ? B[(size_t)b_row * n + x] : 0.0f;\n"
    "        __syncthreads();\n"
    "        for (int j = 0; j < TPB; j++) acc += sA[ty][j] * sB[j][tx];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (x < n && y < n) C[(size_t)y * n + x] = acc;\n"
    "}\n";

enum { MATMUL_TILE = 32, MATMUL_CHECK_ROWS = 96 };

int kiln_matmul_prepare(kiln_context *ctx, int64_t n, kiln_example_launch *l) {
    if (n < 1 || n > 32768) {
        fprintf(stderr, "matmul: n %lld out of range (1 .. 32768)\n", (long long)n);
        return KILN_ERR_INVALID_ARGUMENT;
    }
    int64_t shape[2] = {n, n};
    size_t count = (size_t)(n * n), bytes = count * sizeof(float);
    float *a = l->host[0] = example_alloc(bytes, "matmul A");
    float *b = l->host[1] = example_alloc(bytes, "matmul B");
    if (!a || !b) return KILN_ERR_OUT_OF_MEMORY;
    example_rng rng = {1600};
    example_fill_f32(&rng, a, count, -1, 1);
    example_fill_f32(&rng, b, count, -1, 1);

    kiln_array *da = NULL, *db = NULL, *dc = NULL;
    EXAMPLE_TRY(kiln_kernel_from_source(ctx, kiln_matmul_source, "square_matrix_mul", NULL, &l->kernel));
    EXAMPLE_TRY(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, a, bytes, &da));
    kiln_value aa = example_keep(l, da);
    EXAMPLE_TRY(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, b, bytes, &db));
    kiln_value ab = example_keep(l, db);
    EXAMPLE_TRY(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &dc));
    kiln_value ac = example_keep(l, dc);
    example_arg(l, aa);
    example_arg(l, ab);
    example_arg(l, ac);
    example_arg(l, kiln_i32((int32_t)n));
    uint32_t tiles = (uint32_t)((n + MATMUL_TILE - 1) / MATMUL_TILE);
    l->grid = KILN_DIM(tiles, tiles);
    l->block = KILN_DIM(MATMUL_TILE, MATMUL_TILE);
    l->size = n;
    l->bytes = 3.0 * (double)bytes; /* A and B read, C written, at least once */
    l->flops = 2.0 * (double)n * (double)n * (double)n;
    return KILN_OK;
}

/* The library's product of the same device arrays (kiln_matmul: cuBLAS
 * on CUDA, OpenBLAS on the CPU), timed like the kernel, into *out. A
 * missing library is not the example's failure: *note says so instead. */
static int library_product(kiln_example_launch *l, const kiln_example_opts *opts, float *out, double *ms,
                           char *note, size_t note_size) {
    kiln_array *c2 = NULL;
    int64_t n = l->size, shape[2] = {n, n};
    const char *provider = "?";
    int s = kiln_blas_provider(l->ctx, &provider);
    if (s == KILN_ERR_LIBRARY_MISSING) {
        snprintf(note, note_size, "library n/a: %.120s", kiln_last_error());
        return KILN_ERR_LIBRARY_MISSING;
    }
    if (s == KILN_OK) s = kiln_array_empty(l->ctx, KILN_FLOAT32, 2, shape, &c2);
    int repeat = opts && opts->repeat > 0 ? opts->repeat : 5;
    if (s == KILN_OK)
        s = example_blas_time(l->ctx, KILN_BLAS_DEFAULT, l->arrays[0], l->arrays[1], c2, repeat, ms);
    if (s == KILN_OK) s = kiln_array_to_host(c2, out, (size_t)(n * n) * sizeof *out);
    kiln_array_release(c2);
    snprintf(note, note_size, "%.*s", (int)strcspn(provider, " ("), provider); /* "cuBLAS", "OpenBLAS" */
    return s;
}

/* Float32 accumulation of n products errs by at most about n*eps times
 * sum_k |a_ik b_kj| (Higham's gamma_n bound), so each entry's error is
 * measured against that sum: a relative tolerance that stays meaningful
 * when the entry itself cancels to near 0. Rows are sampled evenly (the
 * last one always, for the ragged edge tile) to keep the float64 host
 * reference at O(rows n^2). The library's product of the same arrays is
 * checked against the same rows and timed beside the kernel. */
int kiln_matmul_verify(kiln_example_launch *l, const kiln_example_opts *opts, kiln_example_result *res) {
    int64_t n = l->size;
    const float *a = l->host[0], *b = l->host[1];
    size_t count = (size_t)(n * n);
    float *c = example_alloc(count * sizeof *c, "matmul C");
    float *lib = example_alloc(count * sizeof *lib, "matmul library C");
    double *ref = example_alloc((size_t)n * sizeof *ref, "matmul reference row");
    double *mag = example_alloc((size_t)n * sizeof *mag, "matmul magnitude row");
    int s = c && lib && ref && mag ? kiln_array_to_host(l->arrays[2], c, count * sizeof *c)
                                   : KILN_ERR_OUT_OF_MEMORY;
    double lib_ms = 0;
    char note[160] = "";
    int have_lib = 0;
    if (s == KILN_OK) {
        int ls = library_product(l, opts, lib, &lib_ms, note, sizeof note);
        have_lib = ls == KILN_OK;
        if (ls != KILN_OK && ls != KILN_ERR_LIBRARY_MISSING) s = ls;
    }
    if (s == KILN_OK) {
        int64_t rows = n < MATMUL_CHECK_ROWS ? n : MATMUL_CHECK_ROWS;
        double worst = 0, worst_lib = 0, bound = (double)n * FLT_EPSILON;
        for (int64_t r = 0; r < rows; r++) {
            int64_t i = rows == 1 ? n - 1 : r * (n - 1) / (rows - 1);
            for (int64_t j = 0; j < n; j++) ref[j] = mag[j] = 0;
            for (int64_t k = 0; k < n; k++) {
                double aik = a[i * n + k];
                const float *brow = b + k * n;
                for (int64_t j = 0; j < n; j++) {
                    ref[j] += aik * brow[j];
                    mag[j] += fabs(aik * brow[j]);
                }
            }
            for (int64_t j = 0; j < n; j++) {
                double e = fabs(c[i * n + j] - ref[j]) / (mag[j] > 0 ? mag[j] : 1);
                if (e > worst || e != e) worst = e;
                double el = have_lib ? fabs(lib[i * n + j] - ref[j]) / (mag[j] > 0 ? mag[j] : 1) : 0;
                if (el > worst_lib || el != el) worst_lib = el;
            }
        }
        res->passed = worst <= bound && worst_lib <= bound;
        if (have_lib)
            snprintf(res->check, sizeof res->check,
                     "max |err|/sum|a*b| %.2g, library %.2g (bound %.2g) vs float64 host, %lld rows; "
                     "library (%s) %.4f ms = %.2fx the kernel's speed",
                     worst, worst_lib, bound, (long long)rows, note, lib_ms,
                     res->ms_median > 0 && lib_ms > 0 ? res->ms_median / lib_ms : 0);
        else
            snprintf(res->check, sizeof res->check,
                     "max |err|/sum|a*b| %.2g (bound n*eps %.2g) vs float64 host, %lld of %lld rows; %s",
                     worst, bound, (long long)rows, (long long)n, note);
        if (opts && opts->verbose && have_lib)
            printf(
                "matmul %lld^3 f32: shared-memory kernel %.4f ms (%.1f GFLOP/s), %s %.4f ms (%.1f GFLOP/s)\n",
                (long long)n, res->ms_median, l->flops / (res->ms_median * 1e6), note, lib_ms,
                l->flops / (lib_ms * 1e6));
    }
    free(c);
    free(lib);
    free(ref);
    free(mag);
    return s;
}
