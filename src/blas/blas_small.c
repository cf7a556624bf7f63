/* blas_small.c: kiln's own kernel for batches of small products (every dim
 * up to 32, blas_small_kernels.cuh): when it runs, and how it is launched.
 * A library's batched gemm spends most of such a call on tiles made for
 * big matrices; this kernel reads each A and B once and writes each C once,
 * so a batch runs near the memory's speed. */
#include <stdio.h>
#include <string.h>

#include "array/array.h"
#include "blas/blas_internal.h"
#include "core/settings.h"
#include "kernel/builtins.h"
#include "prof/prof.h"

extern const char kiln_embedded_blas_small_kernels[];

enum { SMALL_THREADS = 256, SMALL_SHARED_MAX = 48 * 1024 };

/* The largest m, n and k at which kiln's kernels are chosen over the
 * library for a batch of at least 64 products, per dtype and backend, from
 * kiln_blas_bench's sweep (docs/PERF_NOTES.md, "Batches of small
 * matrices"). On the CPU the float32/float64 gufunc (a thread per product)
 * is kiln's kernel there and wins up to 8 x 8 against a loop of OpenBLAS
 * calls; the tiled kernel is for GPUs. KILN_BLAS_SMALL_MAX_DIM overrides. */
typedef struct small_limit {
    kiln_dtype dtype;
    int kind; /* KILN_SG_KIND in the kernel */
    int cuda_max, cpu_max;
} small_limit;

static const small_limit small_limits[] = {
    {KILN_FLOAT32, 0, 12, 8}, {KILN_FLOAT64, 1, 12, 8},   {KILN_FLOAT16, 2, 8, 0},
    {KILN_BFLOAT16, 3, 8, 0}, {KILN_COMPLEX64, 4, 16, 0}, {KILN_COMPLEX128, 5, 4, 0},
};

static const small_limit *limit_of(kiln_dtype t) {
    for (size_t i = 0; i < sizeof small_limits / sizeof small_limits[0]; i++)
        if (small_limits[i].dtype == t) return &small_limits[i];
    return NULL;
}

int kiln_blas_small_max_dim(const blas_provider *prov, kiln_dtype dtype) {
    const small_limit *l = limit_of(dtype);
    if (!l) return 0;
    int fallback = prov->small_tiled ? l->cuda_max : l->cpu_max;
    return (int)kiln_setting_int("KILN_BLAS_SMALL_MAX_DIM", 0, 32, fallback);
}

/* Shared memory of one product: A^T and B with a word of padding a row. */
static size_t shared_per_product(int64_t m, int64_t n, int64_t k, size_t item) {
    int64_t mp = (m + 3) & ~3, np = (n + 3) & ~3;
    return (size_t)(k * (mp + 1) + k * (np + 1)) * item;
}

int kiln_blas_small_fits(kiln_dtype dtype, int64_t m, int64_t n, int64_t k) {
    return limit_of(dtype) && m >= 1 && n >= 1 && k >= 1 && m <= 32 && n <= 32 && k <= 32 &&
           shared_per_product(m, n, k, kiln_dtype_size(dtype)) <= SMALL_SHARED_MAX;
}

/* The products one block takes at a time: about a thread per 4 x 4 tile of
 * C, within the shared memory a block may use without asking. */
static int products_per_block(int64_t m, int64_t n, int64_t k, size_t item) {
    int64_t tiles = ((m + 3) / 4) * ((n + 3) / 4);
    int64_t per = SMALL_THREADS / tiles;
    if (per < 1) per = 1;
    while (per > 1 && (size_t)per * shared_per_product(m, n, k, item) > SMALL_SHARED_MAX) per--;
    return (int)per;
}

kiln_status kiln_blas_small_run(kiln_context *ctx, kiln_stream *stream, const blas_mat *A, const blas_mat *B,
                                const blas_mat *C, int64_t batch, const int64_t batch_strides[3],
                                kiln_blas_scalar alpha, kiln_blas_scalar beta) {
    kiln_dtype dtype = C->arr->dtype;
    const small_limit *l = limit_of(dtype);
    size_t item = kiln_dtype_size(dtype);
    int64_t m = C->shape[C->ndim - 2], n = C->shape[C->ndim - 1], k = A->shape[A->ndim - 1];
    if (!l || !kiln_blas_small_fits(dtype, m, n, k))
        return kiln_set_error(KILN_ERR_INTERNAL,
                              "kiln's small-matrix kernel cannot take %s (%lld x %lld x %lld)",
                              kiln_dtype_name(dtype), (long long)m, (long long)n, (long long)k);
    char options[32];
    snprintf(options, sizeof options, "-DKILN_SG_KIND=%d", l->kind);
    kiln_kernel *kernel;
    kiln_status s = kiln_builtin_kernel(ctx, kiln_embedded_blas_small_kernels, "kiln/blas_small.cu", options,
                                        "kiln_small_gemm", &kernel);
    if (s != KILN_OK) return s;
    const blas_mat *ops[3] = {A, B, C};
    int64_t st[3][2];
    for (int o = 0; o < 3; o++) {
        const blas_mat *M = ops[o];
        st[o][0] = M->strides[M->ndim - 2] / (int64_t)item;
        st[o][1] = M->strides[M->ndim - 1] / (int64_t)item;
    }
    int per = products_per_block(m, n, k, item);
    int64_t tiles = ((m + 3) / 4) * ((n + 3) / 4);
    int64_t threads = ((per * tiles + 31) / 32) * 32;
    if (threads > SMALL_THREADS) threads = SMALL_THREADS;
    int64_t blocks = (batch + per - 1) / per, most = (int64_t)ctx->info.multiprocessors * 16;
    if (most > 0 && blocks > most) blocks = most;
    size_t shared = (size_t)per * shared_per_product(m, n, k, item);
    kiln_array *va = NULL, *vb = NULL, *vc = NULL;
    s = kiln_blas_view(A->arr, A->ndim, A->shape, A->strides, 0, &va);
    if (s == KILN_OK) s = kiln_blas_view(B->arr, B->ndim, B->shape, B->strides, 0, &vb);
    if (s == KILN_OK) s = kiln_blas_view(C->arr, C->ndim, C->shape, C->strides, 0, &vc);
    struct kiln_prof_op *op =
        s == KILN_OK ? kiln_blas_prof_begin(ctx, stream, "matmul", dtype, "kiln small-matrix kernel",
                                            2.0 * (double)batch * m * n * k,
                                            "batch %lld of (%lld x %lld) @ (%lld x %lld)", (long long)batch,
                                            (long long)m, (long long)k, (long long)k, (long long)n)
                     : NULL;
    if (s == KILN_OK)
        s = kiln_launch(
            kernel, KILN_DIM((uint32_t)blocks), KILN_DIM((uint32_t)threads), (uint32_t)shared, stream,
            KILN_ARGS(kiln_arr(va), kiln_arr(vb), kiln_arr(vc), kiln_i64(batch), kiln_i32((int32_t)m),
                      kiln_i32((int32_t)n), kiln_i32((int32_t)k), kiln_i32(per), kiln_i64(batch_strides[0]),
                      kiln_i64(st[0][0]), kiln_i64(st[0][1]), kiln_i64(batch_strides[1]), kiln_i64(st[1][0]),
                      kiln_i64(st[1][1]), kiln_i64(batch_strides[2]), kiln_i64(st[2][0]), kiln_i64(st[2][1]),
                      kiln_f64(alpha.re), kiln_f64(beta.re)));
    kiln_blas_prof_end(ctx, op);
    kiln_array_release(va);
    kiln_array_release(vb);
    kiln_array_release(vc);
    return s;
}
