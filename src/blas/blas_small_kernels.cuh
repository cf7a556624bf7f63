// blas_small_kernels.cuh: kiln's batched product of small matrices
// (every dim <= 32), C = alpha A B + beta C for a batch of matrices at a
// fixed stride apart. For these sizes a library's tiles are mostly padding
// and the work is the memory traffic: read A and B once, write C once.
//
// A block takes `per_block` products at a time. It copies their A's and B's
// into shared memory in the order they lie in memory (coalesced reads), A
// transposed so that a thread reads four rows of one column with adjacent
// words, both with one word of padding per row so that the threads of a
// warp fall on different banks. Each thread then computes a 4 x 4 tile of
// one C from registers (8 shared loads per 16 multiply-adds) and writes it;
// rows and columns beyond m and n are zero padding in shared memory, so the
// inner loop has no bounds checks.
//
// KILN_SG_KIND picks the types: 0 float, 1 double, 2 __half and 3
// __nv_bfloat16 (float accumulation), 4 kiln_complex64, 5 kiln_complex128.

#if KILN_SG_KIND == 2
#include <cuda_fp16.h>
typedef __half sg_t;
typedef float sg_acc;
static __device__ __forceinline__ sg_acc sg_in(sg_t v) { return __half2float(v); }
static __device__ __forceinline__ sg_t sg_out(sg_acc v) { return __float2half_rn(v); }
#elif KILN_SG_KIND == 3
#include <cuda_bf16.h>
typedef __nv_bfloat16 sg_t;
typedef float sg_acc;
static __device__ __forceinline__ sg_acc sg_in(sg_t v) { return __bfloat162float(v); }
static __device__ __forceinline__ sg_t sg_out(sg_acc v) { return __float2bfloat16_rn(v); }
#else
#if KILN_SG_KIND == 0
typedef float sg_t;
#elif KILN_SG_KIND == 1
typedef double sg_t;
#elif KILN_SG_KIND == 4
typedef kiln_complex64 sg_t;
#else
typedef kiln_complex128 sg_t;
#endif
typedef sg_t sg_acc;
static __device__ __forceinline__ sg_acc sg_in(sg_t v) { return v; }
static __device__ __forceinline__ sg_t sg_out(sg_acc v) { return v; }
#endif

extern "C" __global__ void kiln_small_gemm(const sg_t *__restrict__ A, const sg_t *__restrict__ B,
                                           sg_t *__restrict__ C, long long batch, int m, int n, int k,
                                           int per_block, long long a_b, long long a_r, long long a_c,
                                           long long b_b, long long b_r, long long b_c, long long c_b,
                                           long long c_r, long long c_c, double alpha, double beta) {
    extern __shared__ double sg_shared[]; // double: aligned for every kind
    const int mp = (m + 3) & ~3, np = (n + 3) & ~3;
    const int at_row = mp + 1, bs_row = np + 1;  // padded rows: A^T is k x mp, B is k x np
    const int at_mat = k * at_row, bs_mat = k * bs_row;
    sg_t *At = (sg_t *)sg_shared;
    sg_t *Bs = At + per_block * at_mat;
    const int col_tiles = np / 4, tiles = (mp / 4) * col_tiles;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int a_per = 32 / k, a_sub = lane / k, a_col = lane - a_sub * k, a_on = a_sub < a_per;
    const int b_per = 32 / n, b_sub = lane / n, b_col = lane - b_sub * n, b_on = b_sub < b_per;
    const sg_acc zero = sg_acc(0);
    for (long long b0 = (long long)blockIdx.x * per_block; b0 < batch;
         b0 += (long long)gridDim.x * per_block) {
        const int here = batch - b0 < per_block ? (int)(batch - b0) : per_block;
        // a warp copies a_per rows of A (b_per of B) at a time, a lane an
        // element: one division per row rather than two per element
        if (a_on)
            for (int q = warp * a_per + a_sub; q < here * m; q += warps * a_per) {
                const int mat = q / m, r = q - mat * m;
                At[mat * at_mat + a_col * at_row + r] = A[(b0 + mat) * a_b + r * a_r + a_col * a_c];
            }
        if (b_on)
            for (int q = warp * b_per + b_sub; q < here * k; q += warps * b_per) {
                const int mat = q / k, r = q - mat * k;
                Bs[mat * bs_mat + r * bs_row + b_col] = B[(b0 + mat) * b_b + r * b_r + b_col * b_c];
            }
        // the padding rows of A^T's columns and columns of B
        for (int i = threadIdx.x; i < here * k * (mp - m); i += blockDim.x) {
            int mat = i / (k * (mp - m)), e = i - mat * k * (mp - m), c = e / (mp - m);
            At[mat * at_mat + c * at_row + m + (e - c * (mp - m))] = sg_out(zero);
        }
        for (int i = threadIdx.x; i < here * k * (np - n); i += blockDim.x) {
            int mat = i / (k * (np - n)), e = i - mat * k * (np - n), r = e / (np - n);
            Bs[mat * bs_mat + r * bs_row + n + (e - r * (np - n))] = sg_out(zero);
        }
        __syncthreads();
        for (int t = threadIdx.x; t < here * tiles; t += blockDim.x) {
            const int mat = t / tiles, tt = t - mat * tiles;
            const int r0 = (tt / col_tiles) * 4, c0 = (tt - (tt / col_tiles) * col_tiles) * 4;
            const sg_t *at = At + mat * at_mat + r0, *bs = Bs + mat * bs_mat + c0;
            sg_acc acc[4][4];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = zero;
            for (int kk = 0; kk < k; kk++) {
                sg_acc av[4], bv[4];
#pragma unroll
                for (int i = 0; i < 4; i++) av[i] = sg_in(at[kk * at_row + i]);
#pragma unroll
                for (int j = 0; j < 4; j++) bv[j] = sg_in(bs[kk * bs_row + j]);
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) acc[i][j] += av[i] * bv[j];
            }
            sg_t *c = C + (b0 + mat) * c_b;
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int r = r0 + i, col = c0 + j;
                    if (r >= m || col >= n) continue;
                    sg_t *out = c + r * c_r + col * c_c;
                    sg_acc v = acc[i][j];
                    if (alpha != 1.0) v = v * alpha;
                    if (beta != 0.0) v = v + sg_in(*out) * beta;
                    *out = sg_out(v);
                }
        }
        __syncthreads();
    }
}
