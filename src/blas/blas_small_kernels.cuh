// blas_small_kernels.cuh: kiln's batched product of small matrices (every
// dim <= 32), C = alpha A B + beta C for a batch of matrices at a fixed
// stride apart. At these sizes the work is the memory traffic (read A and
// B once, write C once): the kernel is built to keep loads in flight and to
// spend little on anything else.
//
// A block takes `per` products at a time (blas_small.c picks how many):
//  1. Staging. Each operand of its products is copied into shared memory in
//     the order it lies in global memory: when the block's products are one
//     dense run (the usual batch) as 16-byte vector loads, several issued
//     by a thread before any is stored; otherwise element by element in
//     memory order (still coalesced: a transposed operand reads along its
//     unit stride). Transposed operands (column-major A or B) are turned
//     into the one layout the inner loop reads here, so the product loop
//     never sees the op flags.
//  2. Products. A thread owns a TM x TN tile of one C in registers. Per KV
//     k-steps it reads KV consecutive k of each of its TM rows of A and TN
//     consecutive columns of each of KV rows of B, each as one vector read
//     of shared memory, then does KV*TM*TN multiply-adds (the last k % KV
//     steps one at a time).
//  3. Output. The tile goes straight to C: a warp writes whole rows of C
//     (vector stores of TN elements where C's layout allows), so every
//     sector it touches is written in full.
//
// Shared memory, in elements of the storage type (strides from the host,
// blas_small.c's small_layout, which also sizes the launch):
//  - A: a product's m rows of k at a_row apart; row i sits at position
//    (i % TM) * nti + i / TM, so the rows that one read instruction of the
//    warp touches (the same r = i % TM of different tiles) are adjacent;
//    a_row * item / 16 is odd, so adjacent rows fall on different 16-byte
//    bank groups. Products are a_mat apart, padded so that
//    the next product's rows continue the bank pattern.
//  - B: k rows of n at b_row apart, products b_mat apart, padded so that
//    the products a warp reads sit side by side on the banks.
// Rows of a tile beyond m read the last real row and columns beyond n
// whatever lies in the row's padding: their results are never stored, so
// the inner loop has no bounds checks and nothing is zero-filled.
//
// KILN_SG_KIND picks the types: 0 float, 1 double, 2 __half and 3
// __nv_bfloat16 (float accumulation), 4 kiln_complex64, 5 kiln_complex128.
// KILN_SG_TM, KILN_SG_TN: the register tile (1, 2, 4 or 8 each).
// KILN_SG_MAX_THREADS, KILN_SG_MIN_BLOCKS: the launch bounds blas_small.c
// launches within (threads a block at most; blocks a multiprocessor should
// hold, which caps the registers a thread may take).

#if KILN_SG_KIND == 2
#include <cuda_fp16.h>
typedef __half sg_t;
typedef float sg_acc;
typedef float sg_real;
static __device__ __forceinline__ sg_acc sg_in(sg_t v) { return __half2float(v); }
static __device__ __forceinline__ sg_t sg_out(sg_acc v) { return __float2half_rn(v); }
#elif KILN_SG_KIND == 3
#include <cuda_bf16.h>
typedef __nv_bfloat16 sg_t;
typedef float sg_acc;
typedef float sg_real;
static __device__ __forceinline__ sg_acc sg_in(sg_t v) { return __bfloat162float(v); }
static __device__ __forceinline__ sg_t sg_out(sg_acc v) { return __float2bfloat16_rn(v); }
#else
#if KILN_SG_KIND == 0
typedef float sg_t;
typedef float sg_real;
#elif KILN_SG_KIND == 1
typedef double sg_t;
typedef double sg_real;
#elif KILN_SG_KIND == 4
typedef kiln_complex64 sg_t;
typedef float sg_real;
#else
typedef kiln_complex128 sg_t;
typedef double sg_real;
#endif
typedef sg_t sg_acc;
static __device__ __forceinline__ sg_acc sg_in(sg_t v) { return v; }
static __device__ __forceinline__ sg_t sg_out(sg_acc v) { return v; }
#endif

#ifndef KILN_SG_TM
#define KILN_SG_TM 4
#endif
#ifndef KILN_SG_TN
#define KILN_SG_TN 4
#endif
#ifndef KILN_SG_MAX_THREADS
#define KILN_SG_MAX_THREADS 256
#endif
#ifndef KILN_SG_MIN_BLOCKS
#define KILN_SG_MIN_BLOCKS 2
#endif

enum {
    SG_TM = KILN_SG_TM,
    SG_TN = KILN_SG_TN,
    SG_V = sizeof(sg_t) >= 16 ? 1 : 16 / sizeof(sg_t), // elements in 16 bytes
    SG_KV = SG_V < 4 ? SG_V : 4,                       // k-steps one read of a row of A covers
    SG_STAGE_U = 4                                      // loads a thread issues before storing
};

// N consecutive elements read or written as one access (a vector load or
// store where N * item is 4, 8 or 16 bytes; two or four of 16 beyond).
template <int N> struct alignas(N * sizeof(sg_t) < 16 ? N * sizeof(sg_t) : 16) sg_pack {
    sg_t e[N];
};
typedef sg_pack<SG_V> sg_vec16; // 16 bytes

// x / d for x * d < 2^32 (Granlund and Montgomery's multiply-high with a
// rounded-up reciprocal): the staging divides every index by sizes known
// only at run time, and a real division would cost more than the copy.
struct sg_div {
    unsigned d, mul;
};
static __device__ __forceinline__ sg_div sg_div_make(unsigned d) {
    sg_div r;
    r.d = d;
    r.mul = d > 1 ? 0xffffffffu / d + 1 : 0;
    return r;
}
static __device__ __forceinline__ unsigned sg_quot(unsigned x, sg_div v) {
    return v.d > 1 ? __umulhi(x, v.mul) : x;
}

// Where an operand's element goes in shared memory, and how the copy walks
// it: element f of the block's products in memory order is (q, o, i) with
// i the unit-stride index (columns, or rows when rows_inner).
struct sg_place {
    sg_t *s;
    int s_mat, s_row, perm; // perm > 0: row r sits at (r % TM) * perm + r / TM
    int rows_inner, inner, outer;
    unsigned per_mat;
    sg_div d_mat, d_in;
};

static __device__ __forceinline__ int sg_row_at(const sg_place &p, int r) {
    return p.perm > 0 ? (r % SG_TM) * p.perm + r / SG_TM : r;
}
static __device__ __forceinline__ int sg_index(const sg_place &p, int q, int o, int i) {
    const int r = p.rows_inner ? i : o, c = p.rows_inner ? o : i;
    return q * p.s_mat + sg_row_at(p, r) * p.s_row + c;
}
static __device__ __forceinline__ void sg_split(const sg_place &p, unsigned f, int *q, int *o, int *i) {
    const unsigned mat = sg_quot(f, p.d_mat), rem = f - mat * p.per_mat, out = sg_quot(rem, p.d_in);
    *q = (int)mat, *o = (int)out, *i = (int)(rem - out * (unsigned)p.inner);
}

// Stores the SG_V elements of one 16-byte load from memory-order position
// f0: one vector store when they are one aligned run of a row in shared
// memory, else one by one, stepping (q, o, i) without a division.
static __device__ __forceinline__ void sg_scatter(const sg_place &p, const sg_vec16 &x, unsigned f0) {
    int q, o, i;
    sg_split(p, f0, &q, &o, &i);
    const int at = sg_index(p, q, o, i);
    if (!p.rows_inner && i + SG_V <= p.inner && at % SG_V == 0) {
        *(sg_vec16 *)(p.s + at) = x;
        return;
    }
#pragma unroll
    for (int e = 0; e < SG_V; e++) {
        p.s[sg_index(p, q, o, i)] = x.e[e];
        if (++i == p.inner) {
            i = 0;
            if (++o == p.outer) o = 0, q++;
        }
    }
}

// Copies `count` products of an R x Cc operand (element (r, c) of product
// q at g[q * bs + r * rs + c * cs]) into shared memory as `p` places them.
// dense: the products are one run of count * R * Cc elements in memory
// order (blas_small.c decides), read as 16-byte vectors from the first
// 16-byte boundary, the elements before it and after the last whole vector
// one by one.
static __device__ __forceinline__ void sg_stage(const sg_t *__restrict__ g, long long bs, long long rs, long long cs, int dense,
                                int count, const sg_place &p) {
    const unsigned total = (unsigned)count * p.per_mat;
    const long long os = p.rows_inner ? cs : rs, is = p.rows_inner ? rs : cs;
    unsigned head = total, nvec = 0;
    if (dense && (unsigned long long)g % sizeof(sg_t) == 0) {
        head = (unsigned)(((16 - ((unsigned long long)g & 15)) & 15) / sizeof(sg_t));
        if (head > total) head = total;
        nvec = (total - head) / SG_V;
    }
    const sg_vec16 *gv = (const sg_vec16 *)(g + head);
    for (unsigned v0 = threadIdx.x; v0 < nvec; v0 += SG_STAGE_U * blockDim.x) {
        sg_vec16 x[SG_STAGE_U];
#pragma unroll
        for (int u = 0; u < SG_STAGE_U; u++)
            if (v0 + u * blockDim.x < nvec) x[u] = gv[v0 + u * blockDim.x];
#pragma unroll
        for (int u = 0; u < SG_STAGE_U; u++)
            if (v0 + u * blockDim.x < nvec) sg_scatter(p, x[u], head + (v0 + u * blockDim.x) * SG_V);
    }
    // the rest one element at a time: before the vectors, then after them
    const unsigned tail0 = head + nvec * SG_V, rest = total - nvec * SG_V;
    for (unsigned j0 = threadIdx.x; j0 < rest; j0 += SG_STAGE_U * blockDim.x) {
        sg_t x[SG_STAGE_U];
        int at[SG_STAGE_U];
#pragma unroll
        for (int u = 0; u < SG_STAGE_U; u++) {
            const unsigned j = j0 + u * blockDim.x;
            if (j < rest) {
                const unsigned f = j < head ? j : tail0 + (j - head);
                int q, o, i;
                sg_split(p, f, &q, &o, &i);
                at[u] = sg_index(p, q, o, i);
                x[u] = dense ? g[f] : g[q * bs + o * os + i * is];
            }
        }
#pragma unroll
        for (int u = 0; u < SG_STAGE_U; u++)
            if (j0 + u * blockDim.x < rest) p.s[at[u]] = x[u];
    }
}

static __device__ __forceinline__ sg_place sg_place_make(sg_t *s, int s_mat, int s_row, int perm, int rows,
                                                         int cols, int rows_inner) {
    sg_place p;
    p.s = s, p.s_mat = s_mat, p.s_row = s_row, p.perm = perm, p.rows_inner = rows_inner;
    p.inner = rows_inner ? rows : cols, p.outer = rows_inner ? cols : rows;
    p.per_mat = (unsigned)(rows * cols);
    p.d_mat = sg_div_make(p.per_mat), p.d_in = sg_div_make((unsigned)p.inner);
    return p;
}

// One thread's TM x TN tile of product `mat` (C's rows ti*TM.., columns
// tj*TN..), accumulated over k from shared memory: KV k-steps per read of
// A while whole steps remain, then one at a time.
static __device__ __forceinline__ void sg_tile(const sg_t *As, const sg_t *Bs, int m, int k, int nti, int ti,
                                               int tj, int a_row, int b_row, sg_acc acc[SG_TM][SG_TN]) {
    const sg_t *arow[SG_TM];
#pragma unroll
    for (int r = 0; r < SG_TM; r++) {
        const int i = ti * SG_TM + r < m ? ti * SG_TM + r : m - 1;
        arow[r] = As + ((i % SG_TM) * nti + i / SG_TM) * a_row;
    }
    const sg_t *bcol = Bs + tj * SG_TN;
#pragma unroll
    for (int r = 0; r < SG_TM; r++)
#pragma unroll
        for (int c = 0; c < SG_TN; c++) acc[r][c] = sg_acc(0);
    int p = 0;
    for (; p + SG_KV <= k; p += SG_KV) {
        sg_acc a[SG_TM][SG_KV], b[SG_KV][SG_TN];
#pragma unroll
        for (int r = 0; r < SG_TM; r++) {
            const sg_pack<SG_KV> v = *(const sg_pack<SG_KV> *)(arow[r] + p);
#pragma unroll
            for (int kk = 0; kk < SG_KV; kk++) a[r][kk] = sg_in(v.e[kk]);
        }
#pragma unroll
        for (int kk = 0; kk < SG_KV; kk++) {
            const sg_pack<SG_TN> v = *(const sg_pack<SG_TN> *)(bcol + (p + kk) * b_row);
#pragma unroll
            for (int c = 0; c < SG_TN; c++) b[kk][c] = sg_in(v.e[c]);
        }
#pragma unroll
        for (int kk = 0; kk < SG_KV; kk++)
#pragma unroll
            for (int r = 0; r < SG_TM; r++)
#pragma unroll
                for (int c = 0; c < SG_TN; c++) acc[r][c] += a[r][kk] * b[kk][c];
    }
    for (; p < k; p++) {
        sg_acc a[SG_TM], b[SG_TN];
#pragma unroll
        for (int r = 0; r < SG_TM; r++) a[r] = sg_in(arow[r][p]);
        const sg_pack<SG_TN> v = *(const sg_pack<SG_TN> *)(bcol + p * b_row);
#pragma unroll
        for (int c = 0; c < SG_TN; c++) b[c] = sg_in(v.e[c]);
#pragma unroll
        for (int r = 0; r < SG_TM; r++)
#pragma unroll
            for (int c = 0; c < SG_TN; c++) acc[r][c] += a[r] * b[c];
    }
}

// alpha acc + beta C -> C for the tile's elements inside C. c_vec: a row of
// the tile is one aligned run of C (blas_small.c checked the layout).
static __device__ __forceinline__ void sg_store(sg_t *c, long long c_r, long long c_c, int c_vec, int m, int n,
                                                int ti, int tj, const sg_acc acc[SG_TM][SG_TN], sg_real alpha,
                                                sg_real beta) {
#pragma unroll
    for (int r = 0; r < SG_TM; r++) {
        const int i = ti * SG_TM + r, j0 = tj * SG_TN;
        if (i >= m) break;
        if (c_vec) {
            sg_pack<SG_TN> *out = (sg_pack<SG_TN> *)(c + i * c_r + j0);
            sg_pack<SG_TN> old, v;
            if (beta != sg_real(0)) old = *out;
#pragma unroll
            for (int col = 0; col < SG_TN; col++) {
                sg_acc x = acc[r][col];
                if (alpha != sg_real(1)) x = x * alpha;
                if (beta != sg_real(0)) x = x + sg_in(old.e[col]) * beta;
                v.e[col] = sg_out(x);
            }
            *out = v;
            continue;
        }
#pragma unroll
        for (int col = 0; col < SG_TN; col++) {
            if (j0 + col >= n) break;
            sg_t *out = c + i * c_r + (j0 + col) * c_c;
            sg_acc x = acc[r][col];
            if (alpha != sg_real(1)) x = x * alpha;
            if (beta != sg_real(0)) x = x + sg_in(*out) * beta;
            *out = sg_out(x);
        }
    }
}

// A, B, C: element (r, c) of product q at X[q * x_b + r * x_r + c * x_c].
// x_layout: bit 0 the rows are the unit-stride index (a transposed
// operand), bit 1 the batch is one dense run. Shared strides as above.
extern "C" __global__ void __launch_bounds__(KILN_SG_MAX_THREADS, KILN_SG_MIN_BLOCKS) kiln_small_gemm(const sg_t *__restrict__ A, const sg_t *__restrict__ B,
                                           sg_t *__restrict__ C, long long batch, int m, int n, int k, int per,
                                           int a_row, int a_mat, int b_row, int b_mat, long long a_b,
                                           long long a_r, long long a_c, int a_layout, long long b_b,
                                           long long b_r, long long b_c, int b_layout, long long c_b,
                                           long long c_r, long long c_c, int c_vec, double alpha, double beta) {
    extern __shared__ float4 sg_shared[]; // float4: 16-byte aligned for the vector accesses
    sg_t *As = (sg_t *)sg_shared;
    sg_t *Bs = As + per * a_mat;
    const int nti = (m + SG_TM - 1) / SG_TM, ntj = (n + SG_TN - 1) / SG_TN, tiles = nti * ntj;
    for (long long b0 = (long long)blockIdx.x * per; b0 < batch; b0 += (long long)gridDim.x * per) {
        const int here = batch - b0 < per ? (int)(batch - b0) : per;
        {
            const sg_place pa = sg_place_make(As, a_mat, a_row, nti, m, k, a_layout & 1);
            const sg_place pb = sg_place_make(Bs, b_mat, b_row, 0, k, n, b_layout & 1);
            sg_stage(A + b0 * a_b, a_b, a_r, a_c, a_layout & 2, here, pa);
            sg_stage(B + b0 * b_b, b_b, b_r, b_c, b_layout & 2, here, pb);
        }
        __syncthreads();
        const int mat = threadIdx.x / tiles, tt = threadIdx.x - mat * tiles;
        if (mat < here) {
            const int ti = tt / ntj, tj = tt - ti * ntj;
            sg_acc acc[SG_TM][SG_TN];
            sg_tile(As + mat * a_mat, Bs + mat * b_mat, m, k, nti, ti, tj, a_row, b_row, acc);
            sg_store(C + (b0 + mat) * c_b, c_r, c_c, c_vec, m, n, ti, tj, acc, (sg_real)alpha, (sg_real)beta);
        }
        __syncthreads();
    }
}
