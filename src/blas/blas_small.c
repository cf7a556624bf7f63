/* blas_small.c: kiln's own kernel for batches of small products (every dim
 * up to 32, blas_small_kernels.cuh): when it runs, its shared-memory layout
 * and launch shape, and the launch. A library's batched gemm spends most of
 * such a call on tiles made for big matrices; this kernel reads each A and
 * B once and writes each C once, so a batch runs near the memory's speed. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "array/array.h"
#include "blas/blas_internal.h"
#include "core/settings.h"
#include "kernel/builtins.h"
#include "prof/prof.h"

extern const char kiln_embedded_blas_small_kernels[];

/* A block's shared memory without opting in to more; threads a block aims
 * at; threads a block may have (the kernel's launch bounds: 256 lets a
 * thread keep the registers a 2 x 2 or larger tile wants, the smaller
 * tiles need more threads at 32 x 32). */
enum {
    SMALL_SHARED_MAX = 48 * 1024,
    SMALL_THREADS = 256,
    SMALL_THREADS_TILED = 256,
    SMALL_THREADS_FEW = 1024
};

/* The largest m, n and k at which kiln's kernels are chosen over the
 * library for a batch of at least 64 products, per dtype and backend, from
 * kiln_blas_bench's sweep (docs/PERF_NOTES.md, "Batches of small
 * matrices"). On the CPU the float32/float64 gufunc (a thread per product)
 * is kiln's kernel there and wins up to 8 x 8 against a loop of OpenBLAS
 * calls; the tiled kernel is for GPUs. KILN_BLAS_SMALL_MAX_DIM overrides. */
typedef struct small_limit {
    kiln_dtype dtype;
    int kind; /* KILN_SG_KIND in the kernel */
    int cpu_max;
} small_limit;

static const small_limit small_limits[] = {
    {KILN_FLOAT32, 0, 8},  {KILN_FLOAT64, 1, 8},   {KILN_FLOAT16, 2, 0},
    {KILN_BFLOAT16, 3, 0}, {KILN_COMPLEX64, 4, 0}, {KILN_COMPLEX128, 5, 0},
};

/* CUDA's limits, in the form `kiln_blas_bench --small` prints them from a
 * GPU run (the largest dim up to which kiln's kernel beat cuBLAS's
 * strided-batched call at every size). */
typedef struct small_cuda_limit {
    kiln_dtype dtype;
    int max_dim;
} small_cuda_limit;

/* H100, batches of 10^5 (kiln_blas_bench --small). */
static const small_cuda_limit small_cuda_limits[] = {
    {KILN_FLOAT32, 20}, {KILN_FLOAT64, 17},   {KILN_FLOAT16, 9},
    {KILN_BFLOAT16, 9}, {KILN_COMPLEX64, 20}, {KILN_COMPLEX128, 10},
};

static const small_limit *limit_of(kiln_dtype t) {
    for (size_t i = 0; i < sizeof small_limits / sizeof small_limits[0]; i++)
        if (small_limits[i].dtype == t) return &small_limits[i];
    return NULL;
}

static int cuda_max_of(kiln_dtype t) {
    for (size_t i = 0; i < sizeof small_cuda_limits / sizeof small_cuda_limits[0]; i++)
        if (small_cuda_limits[i].dtype == t) return small_cuda_limits[i].max_dim;
    return 0;
}

int kiln_blas_small_max_dim(const blas_provider *prov, kiln_dtype dtype) {
    const small_limit *l = limit_of(dtype);
    if (!l) return 0;
    int fallback = prov->small_tiled ? cuda_max_of(dtype) : l->cpu_max;
    return (int)kiln_setting_int("KILN_BLAS_SMALL_MAX_DIM", 0, 32, fallback);
}

/* ------------------------------------------------------------ layout */

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* The least length >= x elements that is an odd number of 16-byte units
 * (v elements): consecutive rows or products that far apart start on
 * different bank groups. */
static int64_t odd_units(int64_t x, int64_t v) { return (((x + v - 1) / v) | 1) * v; }

/* The register tile of C a thread owns: KILN_BLAS_SMALL_TILE ("RxC", each
 * 1, 2, 4 or 8), else 4 x 4 (complex128 2 x 2: sixteen of its 16-byte
 * accumulators plus the operands would spill). 4 x 4 reads half an element
 * of shared memory per multiply-add, which keeps the shared-memory pipe
 * below the memory's time at every size up to 32 (docs/PERF_NOTES.md). */
static void small_tile(kiln_dtype dtype, int *tm, int *tn) {
    *tm = *tn = dtype == KILN_COMPLEX128 ? 2 : 4;
    const char *s = kiln_setting_string("KILN_BLAS_SMALL_TILE");
    int r, c;
    char end;
    if (s && sscanf(s, "%dx%d%c", &r, &c, &end) == 2 && (r == 1 || r == 2 || r == 4 || r == 8) &&
        (c == 1 || c == 2 || c == 4 || c == 8))
        *tm = r, *tn = c;
}

/* Where the kernel keeps one product in shared memory, in elements (see
 * blas_small_kernels.cuh), and the launch shape. */
typedef struct small_layout {
    int tm, tn, tiles;    /* register tile; tiles of C per product */
    int max_threads;      /* the launch bound */
    int min_blocks;       /* blocks a multiprocessor should hold (registers) */
    int a_row, a_mat;     /* A: row stride, product stride */
    int b_row, b_mat;     /* B: the same */
    size_t product_bytes; /* shared memory of one product */
} small_layout;

static void small_layout_of(kiln_dtype dtype, int64_t m, int64_t n, int64_t k, small_layout *L) {
    int64_t item = (int64_t)kiln_dtype_size(dtype);
    int64_t v = item >= 16 ? 1 : 16 / item; /* elements in 16 bytes */
    int64_t bank = 128 / item;              /* elements across the 32 banks */
    small_tile(dtype, &L->tm, &L->tn);
    int64_t nti = (m + L->tm - 1) / L->tm, ntj = (n + L->tn - 1) / L->tn;
    int64_t mp = nti * L->tm, np = ntj * L->tn;
    L->tiles = (int)(nti * ntj);
    L->max_threads = L->tm * L->tn >= 4 ? SMALL_THREADS_TILED : SMALL_THREADS_FEW;
    /* float32 fits a 4 x 4 tile and the copy's registers in 80 a thread
     * (3 blocks of 256, ptxas for sm_90); the others take up to 128 */
    int fallback = L->max_threads > SMALL_THREADS_TILED ? 1 : dtype == KILN_FLOAT32 ? 3 : 2;
    L->min_blocks = (int)kiln_setting_int("KILN_BLAS_SMALL_MIN_BLOCKS", 1, 8, fallback);
    if (L->min_blocks * L->max_threads > 2048) L->min_blocks = 2048 / L->max_threads;
    /* a row of A an odd number of 16-byte units, so that adjacent rows
     * start on different bank groups */
    L->a_row = (int)odd_units(k, v);
    /* the next product's rows continue where this one's read rows end */
    int64_t a_body = mp * L->a_row, a_want = (nti * L->a_row) % bank;
    L->a_mat = (int)(a_body + ((a_want - a_body % bank) % bank + bank) % bank);
    L->b_row = (int)round_up(np, v > L->tn ? v : L->tn);
    int64_t b_body = k * L->b_row, b_want = np % bank;
    L->b_mat = (int)(b_body + ((b_want - b_body % bank) % bank + bank) % bank);
    if (L->tiles == 1) {
        /* a thread per product, each read one piece of a row: products an
         * odd number of units apart suffice, and the smaller padding lets
         * a block take half again as many (2x2 float32: 128 bytes, not 288) */
        L->a_mat = (int)odd_units(a_body, v);
        L->b_mat = (int)odd_units(b_body, v);
    }
    L->product_bytes = (size_t)(L->a_mat + L->b_mat) * (size_t)item;
}

int kiln_blas_small_fits(kiln_dtype dtype, int64_t m, int64_t n, int64_t k) {
    if (!limit_of(dtype) || m < 1 || n < 1 || k < 1 || m > 32 || n > 32 || k > 32) return 0;
    small_layout L;
    small_layout_of(dtype, m, n, k, &L);
    return L.product_bytes <= SMALL_SHARED_MAX && L.tiles <= L.max_threads;
}

/* Products per block: KILN_BLAS_SMALL_PER_BLOCK, else enough for about 256
 * threads; then as many as the block's threads and shared memory allow,
 * and no more than the batch. */
static int products_per_block(const small_layout *L, int64_t batch) {
    int64_t per = kiln_setting_int("KILN_BLAS_SMALL_PER_BLOCK", 1, 1024, 0);
    if (per == 0) per = SMALL_THREADS / L->tiles;
    if (per * L->tiles > L->max_threads) per = L->max_threads / L->tiles;
    if ((size_t)per * L->product_bytes > SMALL_SHARED_MAX)
        per = (int64_t)(SMALL_SHARED_MAX / L->product_bytes);
    if (per > batch) per = batch;
    return per < 1 ? 1 : (int)per;
}

/* ------------------------------------------------------------ the call */

/* How the kernel walks an operand (rows x cols, element strides st: batch,
 * row, column): bit 0 when its rows are the unit-stride index (stored
 * transposed), bit 1 when the whole batch is one dense run in that order. */
static int operand_layout(int64_t rows, int64_t cols, int64_t batch, const int64_t st[3]) {
    int rows_inner = rows > 1 && st[1] == 1 && !(cols > 1 && st[2] == 1);
    int64_t inner = rows_inner ? rows : cols, outer = rows_inner ? cols : rows;
    int64_t is = rows_inner ? st[1] : st[2], os = rows_inner ? st[2] : st[1];
    int dense =
        (inner == 1 || is == 1) && (outer == 1 || os == inner) && (batch == 1 || st[0] == rows * cols);
    return rows_inner | dense << 1;
}

/* 1 when each row of a C tile (tn elements) is one aligned run in memory. */
static int c_rows_aligned(const blas_mat *C, int64_t n, int tn, int64_t item, const int64_t st[3]) {
    int64_t align = (int64_t)tn * item < 16 ? (int64_t)tn * item : 16;
    uintptr_t addr = (uintptr_t)kiln_array_data(C->arr);
    return st[2] == 1 && n % tn == 0 && addr % (uintptr_t)align == 0 && (st[1] * item) % align == 0 &&
           (st[0] * item) % align == 0;
}

kiln_status kiln_blas_small_run(kiln_context *ctx, kiln_stream *stream, const blas_mat *A, const blas_mat *B,
                                const blas_mat *C, int64_t batch, const int64_t batch_strides[3],
                                kiln_blas_scalar alpha, kiln_blas_scalar beta) {
    kiln_dtype dtype = C->arr->dtype;
    const small_limit *l = limit_of(dtype);
    int64_t item = (int64_t)kiln_dtype_size(dtype);
    int64_t m = C->shape[C->ndim - 2], n = C->shape[C->ndim - 1], k = A->shape[A->ndim - 1];
    if (!l || !kiln_blas_small_fits(dtype, m, n, k))
        return kiln_set_error(KILN_ERR_INTERNAL,
                              "kiln's small-matrix kernel cannot take %s (%lld x %lld x %lld)",
                              kiln_dtype_name(dtype), (long long)m, (long long)n, (long long)k);
    small_layout L;
    small_layout_of(dtype, m, n, k, &L);
    char options[160];
    snprintf(
        options, sizeof options,
        "-DKILN_SG_KIND=%d -DKILN_SG_TM=%d -DKILN_SG_TN=%d -DKILN_SG_MAX_THREADS=%d -DKILN_SG_MIN_BLOCKS=%d",
        l->kind, L.tm, L.tn, L.max_threads, L.min_blocks);
    kiln_kernel *kernel;
    kiln_status s = kiln_builtin_kernel(ctx, kiln_embedded_blas_small_kernels, "kiln/blas_small.cu", options,
                                        "kiln_small_gemm", &kernel);
    if (s != KILN_OK) return s;
    const blas_mat *ops[3] = {A, B, C};
    const int64_t rows[3] = {m, k, m}, cols[3] = {k, n, n};
    int64_t st[3][3];
    int layout[3];
    for (int o = 0; o < 3; o++) {
        const blas_mat *M = ops[o];
        st[o][0] = batch_strides[o];
        st[o][1] = M->strides[M->ndim - 2] / item;
        st[o][2] = M->strides[M->ndim - 1] / item;
        layout[o] = operand_layout(rows[o], cols[o], batch, st[o]);
    }
    int c_vec = c_rows_aligned(C, n, L.tn, item, st[2]);
    int per = products_per_block(&L, batch);
    int64_t threads = round_up((int64_t)per * L.tiles, 32);
    int64_t blocks = (batch + per - 1) / per;
    if (blocks > INT32_MAX) blocks = INT32_MAX; /* the kernel loops over the rest */
    size_t shared = (size_t)per * L.product_bytes;
    kiln_array *va = NULL, *vb = NULL, *vc = NULL;
    s = kiln_blas_view(A->arr, A->ndim, A->shape, A->strides, 0, &va);
    if (s == KILN_OK) s = kiln_blas_view(B->arr, B->ndim, B->shape, B->strides, 0, &vb);
    if (s == KILN_OK) s = kiln_blas_view(C->arr, C->ndim, C->shape, C->strides, 0, &vc);
    struct kiln_prof_op *op =
        s == KILN_OK
            ? kiln_blas_prof_begin(
                  ctx, stream, "matmul", dtype, "kiln small-matrix kernel", 2.0 * (double)batch * m * n * k,
                  "batch %lld of (%lld x %lld) @ (%lld x %lld), tile %dx%d, %d a block", (long long)batch,
                  (long long)m, (long long)k, (long long)k, (long long)n, L.tm, L.tn, per)
            : NULL;
    if (s == KILN_OK)
        s = kiln_launch(
            kernel, KILN_DIM((uint32_t)blocks), KILN_DIM((uint32_t)threads), (uint32_t)shared, stream,
            KILN_ARGS(kiln_arr(va), kiln_arr(vb), kiln_arr(vc), kiln_i64(batch), kiln_i32((int32_t)m),
                      kiln_i32((int32_t)n), kiln_i32((int32_t)k), kiln_i32(per), kiln_i32(L.a_row),
                      kiln_i32(L.a_mat), kiln_i32(L.b_row), kiln_i32(L.b_mat), kiln_i64(st[0][0]),
                      kiln_i64(st[0][1]), kiln_i64(st[0][2]), kiln_i32(layout[0]), kiln_i64(st[1][0]),
                      kiln_i64(st[1][1]), kiln_i64(st[1][2]), kiln_i32(layout[1]), kiln_i64(st[2][0]),
                      kiln_i64(st[2][1]), kiln_i64(st[2][2]), kiln_i32(c_vec), kiln_f64(alpha.re),
                      kiln_f64(beta.re)));
    kiln_blas_prof_end(ctx, op);
    kiln_array_release(va);
    kiln_array_release(vb);
    kiln_array_release(vc);
    return s;
}
