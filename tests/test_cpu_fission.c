/* test_cpu_fission.c: per-kernel CPU paths and loop fission.
 *
 * Every barrier kernel here runs twice, once as compiled (fission on the
 * CPU) and once with -DKILN_CPU_FIBERS (fibers on the CPU; on CUDA both runs
 * are the GPU), and the two must agree; the ones with a host reference are
 * checked against it too. `kiln_compile_only` for the CPU reports each
 * kernel's path, which the path tests read. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/test_support.h"

static const char *src =
    "#define TILE 32\n"
    "#define ST 16\n"
    "__global__ void matmul(const float *A, const float *B, float *C, int n) {\n"
    "    __shared__ float As[TILE][TILE];\n"
    "    __shared__ float Bs[TILE][TILE];\n"
    "    int tx = threadIdx.x, ty = threadIdx.y;\n"
    "    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;\n"
    "    float acc = 0;\n"
    "    for (int t = 0; t < n; t += TILE) {\n"
    "        As[ty][tx] = (row < n && t + tx < n) ? A[row * n + t + tx] : 0.0f;\n"
    "        Bs[ty][tx] = (col < n && t + ty < n) ? B[(t + ty) * n + col] : 0.0f;\n"
    "        __syncthreads();\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < TILE; k++) acc += As[ty][k] * Bs[k][tx];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (row < n && col < n) C[row * n + col] = acc;\n"
    "}\n"
    "// 5-point stencil on a shared tile with a one-cell halo (edges clamp).\n"
    "__global__ void stencil(const float *in, float *out, int nx, int ny) {\n"
    "    __shared__ float tile[ST + 2][ST + 2];\n"
    "    int tx = threadIdx.x, ty = threadIdx.y;\n"
    "    int x = blockIdx.x * ST + tx, y = blockIdx.y * ST + ty;\n"
    "    int cx = min(x, nx - 1), cy = min(y, ny - 1);\n"
    "    tile[ty + 1][tx + 1] = in[cy * nx + cx];\n"
    "    if (tx == 0) tile[ty + 1][0] = in[cy * nx + max(cx - 1, 0)];\n"
    "    if (tx == ST - 1) tile[ty + 1][ST + 1] = in[cy * nx + min(cx + 1, nx - 1)];\n"
    "    if (ty == 0) tile[0][tx + 1] = in[max(cy - 1, 0) * nx + cx];\n"
    "    if (ty == ST - 1) tile[ST + 1][tx + 1] = in[min(cy + 1, ny - 1) * nx + cx];\n"
    "    __syncthreads();\n"
    "    if (x < nx && y < ny)\n"
    "        out[y * nx + x] = 0.2f * (tile[ty + 1][tx + 1] + tile[ty][tx + 1] + tile[ty + 2][tx + 1] +\n"
    "                                  tile[ty + 1][tx] + tile[ty + 1][tx + 2]);\n"
    "}\n"
    "__global__ void block_sum(const double *in, long long n, double *partial) {\n"
    "    extern __shared__ double sdata[];\n"
    "    unsigned t = threadIdx.x;\n"
    "    long long i = blockIdx.x * (long long)blockDim.x + t;\n"
    "    sdata[t] = i < n ? in[i] : 0.0;\n"
    "    __syncthreads();\n"
    "    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "        if (t < s) sdata[t] += sdata[t + s];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) partial[blockIdx.x] = sdata[0];\n"
    "}\n"
    "// Early return before the barrier: the rest of the block goes on.\n"
    "__global__ void pair_sum(const float *in, float *out, int n) {\n"
    "    __shared__ float s[256];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    s[threadIdx.x] = in[i];\n"
    "    __syncthreads();\n"
    "    int j = threadIdx.x ^ 1;\n"
    "    out[i] = 2.0f * s[threadIdx.x] + ((int)(blockIdx.x * blockDim.x) + j < n ? s[j] : 0.0f);\n"
    "}\n"
    "// A uniform if around barriers, a per-thread array and a scalar living\n"
    "// across them, a loop with break, returns inside a loop with barriers.\n"
    "__global__ void mixed(const float *in, float *out, int n, int mode) {\n"
    "    __shared__ float s[128];\n"
    "    unsigned t = threadIdx.x;\n"
    "    float v[4];\n"
    "    float acc = 0.0f;\n"
    "    for (int k = 0; k < 4; k++) v[k] = in[(blockIdx.x * 4 + k + t) % n];\n"
    "    if (mode > 0) {\n"
    "        s[t] = v[0] + v[3];\n"
    "        __syncthreads();\n"
    "        acc = s[(t + 1) % blockDim.x];\n"
    "        __syncthreads();\n"
    "    } else {\n"
    "        s[t] = v[1];\n"
    "        __syncthreads();\n"
    "        acc = -s[blockDim.x - 1 - t];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    for (int round = 0; round < 3; round++) {\n"
    "        if (t == 5u + round) return;\n"
    "        s[t] = acc + v[round];\n"
    "        __syncthreads();\n"
    "        for (int m = 0; m < 8; m++) {\n"
    "            float w = s[(t + m) % blockDim.x];\n"
    "            if (w > 1.5f) break;\n"
    "            acc += 0.125f * w;\n"
    "        }\n"
    "        __syncthreads();\n"
    "    }\n"
    "    out[blockIdx.x * blockDim.x + t] = acc;\n"
    "}\n"
    "// A shared scalar read into a local, then changed: the local keeps the old value.\n"
    "__global__ void shared_scalar(int *out) {\n"
    "    __shared__ int count;\n"
    "    unsigned t = threadIdx.x;\n"
    "    if (t == 0) count = 0;\n"
    "    __syncthreads();\n"
    "    atomicAdd(&count, (int)t + 1);\n"
    "    __syncthreads();\n"
    "    int first = count + (int)t;\n"
    "    __syncthreads();\n"
    "    if (t == 3) count = -1;\n"
    "    __syncthreads();\n"
    "    out[blockIdx.x * blockDim.x + t] = first * 10 + count;\n"
    "}\n"
    "// A device function that reads threadIdx, called between barriers.\n"
    "__device__ float twice_mine(const float *in) { return 2.0f * in[threadIdx.x]; }\n"
    "__global__ void calls_helper(const float *in, float *out) {\n"
    "    __shared__ float s[64];\n"
    "    s[threadIdx.x] = twice_mine(in);\n"
    "    __syncthreads();\n"
    "    out[threadIdx.x] = s[63 - threadIdx.x] + twice_mine(in);\n"
    "}\n"
    "__device__ void wait_all() { __syncthreads(); }\n"
    "__global__ void calls_barrier(float *o) {\n"
    "    __shared__ float s[64];\n"
    "    s[threadIdx.x] = (float)threadIdx.x;\n"
    "    wait_all();\n"
    "    o[threadIdx.x] = s[63 - threadIdx.x];\n"
    "}\n"
    "__global__ void divergent(float *o) {\n"
    "    __shared__ float s[64];\n"
    "    s[threadIdx.x] = (float)threadIdx.x;\n"
    "    if (threadIdx.x < 64) __syncthreads();\n"
    "    o[threadIdx.x] = s[63 - threadIdx.x];\n"
    "}\n"
    "// Guards on threadIdx.x itself (or a copy) against bounds of other types\n"
    "// and signs: the thread loop's range has a closed form, which must follow\n"
    "// C++'s conversions (a negative int bound against an unsigned index is\n"
    "// huge), or a search for a float bound.\n"
    "__global__ void guard_types(const int *in, int *out, int h, long long big, float f, unsigned uh) {\n"
    "    __shared__ int s[128];\n"
    "    unsigned t = threadIdx.x;\n"
    "    int it = threadIdx.x;\n"
    "    s[t] = in[blockIdx.x * blockDim.x + t];\n"
    "    __syncthreads();\n"
    "    int acc = s[(t + 1) % blockDim.x];\n"
    "    if (t < h) acc += 1;\n"
    "    if (it < h) acc += 2;\n"
    "    if (it <= h) acc += 4;\n"
    "    if (t == uh) acc += 8;\n"
    "    if (it < big) acc += 16;\n"
    "    if (t < f) acc += 32;\n"
    "    if (threadIdx.x <= uh && h > -1000) acc += 64;\n"
    "    if (h < 100 && it == h) acc += 128;\n"
    "    if (h > -5000 && t <= (unsigned char)h) acc += 256;\n"
    "    __syncthreads();\n"
    "    out[blockIdx.x * blockDim.x + t] = acc;\n"
    "}\n"
    "// Launched with more than 2^20 blocks: the grid where kiln's range\n"
    "// assumptions stop and the general body runs.\n"
    "__global__ void pair_swap(const int *in, int *out) {\n"
    "    __shared__ int s[2];\n"
    "    unsigned i = blockIdx.x * 2 + threadIdx.x;\n"
    "    s[threadIdx.x] = in[i];\n"
    "    __syncthreads();\n"
    "    out[i] = s[1 - threadIdx.x] * 3 + (int)blockIdx.x;\n"
    "}\n"
    "// int locals computed from CUDA's unsigned built-ins: arithmetic modulo\n"
    "// 2^32 (hashes wrap; blockIdx.x - 1 is -1 in block 0), which the fission\n"
    "// path's int spelling of them (kiln_fis_w) must keep.\n"
    "__global__ void wrap_ints(int *out, int k) {\n"
    "    __shared__ int s[64];\n"
    "    int h = blockIdx.x * 1103515245 + threadIdx.x * 12345 + k;\n"
    "    int prev = blockIdx.x - 1, neg = threadIdx.x - blockDim.x;\n"
    "    const int big = (blockIdx.x + 2147483647) * 3 - threadIdx.x;\n"
    "    int odd = blockIdx.x * 4000000000u + threadIdx.x / 2 + (threadIdx.x < 3) + -blockIdx.x;\n"
    "    s[threadIdx.x] = h ^ prev;\n"
    "    __syncthreads();\n"
    "    out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x] ^ (neg * 7) ^ big ^ odd ^ (h >> 28);\n"
    "}\n"
    "// A clamped load whose row check fails for one thread of a row only (the\n"
    "// last, when n is 31 past a multiple of 32): rows of 32 threads check it\n"
    "// in the loop of constant trip count, others in the general one.\n"
    "// Guards `tx == c` run one thread a row as straight code, or none where\n"
    "// the row is shorter than c (blocks 16 and 8 wide).\n"
    "__global__ void clamp_rows(const int *in, int *out, int n) {\n"
    "    __shared__ int s[32][33];\n"
    "    int tx = threadIdx.x, ty = threadIdx.y;\n"
    "    int i = (blockIdx.x * blockDim.y + ty) * blockDim.x + tx;\n"
    "    s[ty][tx] = in[min(i, n - 1)];\n"
    "    if (tx == 0) s[ty][32] = 7;\n"
    "    __syncthreads();\n"
    "    if (tx == 23) s[ty][32] += s[ty][0];\n"
    "    __syncthreads();\n"
    "    out[i] = s[ty][blockDim.x - 1 - tx] + (tx == 0 ? s[ty][32] : 0);\n"
    "}\n"
    "// Selections the fission path versions thread loops on: some rows take\n"
    "// the first side everywhere, some nowhere, some in part.\n"
    "// 64 threads in rows of blockDim.x (64, 32 or 16): rows of 32 take the\n"
    "// row check's copy of constant trip count.\n"
    "__global__ void selects(const int *in, int *out, int n, int lim) {\n"
    "    __shared__ int s[64];\n"
    "    int t = threadIdx.y * blockDim.x + threadIdx.x;\n"
    "    int i = blockIdx.x * 64 + t;\n"
    "    int c = min(i, n - 1), d = max(t - lim, 0);\n"
    "    unsigned u = min(t, lim);\n"
    "    s[t] = i < n ? in[c] : -1;\n"
    "    __syncthreads();\n"
    "    out[blockIdx.x * 64 + t] = s[d] + (t > lim ? c : d) + max(lim - t, -3) + (int)u;\n"
    "}\n"
    "// A selection on a uniform loop's counter (h): rows of 16 threads that\n"
    "// take its first side everywhere, nowhere, or in part, level by level.\n"
    "__global__ void scan_rows(const int *in, int *out) {\n"
    "    __shared__ int s[64];\n"
    "    int t = threadIdx.y * 16 + threadIdx.x;\n"
    "    s[t] = in[blockIdx.x * 64 + t];\n"
    "    __syncthreads();\n"
    "    for (int h = 1; h < 64; h *= 2) {\n"
    "        int v = t >= h ? s[t - h] : 0;\n"
    "        __syncthreads();\n"
    "        s[t] += v;\n"
    "        __syncthreads();\n"
    "    }\n"
    "    out[blockIdx.x * 64 + t] = s[t];\n"
    "}\n"
    "// A recomputed local that divides by the thread index, after a return\n"
    "// for thread 0: row checks must not evaluate it for thread 0.\n"
    "__global__ void guarded_div(const int *in, int *out, int n) {\n"
    "    __shared__ int s[64];\n"
    "    int t = threadIdx.x;\n"
    "    if (t == 0) return;\n"
    "    int q = 640 / t;\n"
    "    s[t] = q < n ? in[blockIdx.x * 64 + t] : 0;\n"
    "    __syncthreads();\n"
    "    out[blockIdx.x * 64 + t] = (q > 5 ? s[64 - t] : 1) + q;\n"
    "}\n"
    "__global__ void ends_wrap(const int *in, int *out, int lim, unsigned big, int base, int top) {\n"
    "    __shared__ int s[512];\n"
    "    unsigned char c = threadIdx.x;\n"
    "    int j = threadIdx.x + base;\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    s[threadIdx.x] = (c < lim ? in[i] : -1) + (j < big ? 10 : 20) + in[min(i, top)];\n"
    "    __syncthreads();\n"
    "    out[i] = s[blockDim.x - 1 - threadIdx.x];\n"
    "}\n"
    "// Tree reductions (cpu_fission_tree.c): each block's 2H values in, the whole\n"
    "// array out, so that every element's final value is compared.\n"
    "__global__ void tree_f(const float *in, float *out) {\n"
    "    __shared__ float s[256];\n"
    "    unsigned t = threadIdx.x;\n"
    "    for (int k = t; k < 256; k += blockDim.x) s[k] = in[blockIdx.x * 256 + k];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = 128; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    for (int k = t; k < 256; k += blockDim.x) out[blockIdx.x * 256 + k] = s[k];\n"
    "}\n"
    "__global__ void tree_d(const double *in, double *out) {\n"
    "    __shared__ double s[72];\n"
    "    int t = threadIdx.x;\n"
    "    for (int k = t; k < 72; k += blockDim.x) s[k] = in[blockIdx.x * 72 + k];\n"
    "    __syncthreads();\n"
    "    for (int h = 32; h != 0; h /= 2) {\n"
    "        __syncthreads();\n"
    "        if (t < h) s[t] += s[h + t];\n"
    "    }\n"
    "    __syncthreads();\n"
    "    for (int k = t; k < 72; k += blockDim.x) out[blockIdx.x * 72 + k] = s[k];\n"
    "}\n"
    "__global__ void tree_i(const int *in, int *out) {\n"
    "    __shared__ int s[1024];\n"
    "    for (int k = threadIdx.x; k < 1024; k += blockDim.x) s[k] = in[blockIdx.x * 1024 + k];\n"
    "    __syncthreads();\n"
    "    for (unsigned int h = 512; h >= 1; h >>= 1) {\n"
    "        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    for (int k = threadIdx.x; k < 1024; k += blockDim.x) out[blockIdx.x * 1024 + k] = s[k];\n"
    "}\n"
    "// The smallest trees: H = 8 (one vector, lanes only) and H = 16.\n"
    "__global__ void tree_8(const float *in, float *out) {\n"
    "    __shared__ float s[20];\n"
    "    unsigned t = threadIdx.x;\n"
    "    for (int k = t; k < 20; k += blockDim.x) s[k] = in[blockIdx.x * 20 + k];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = 8; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    for (int k = t; k < 20; k += blockDim.x) out[blockIdx.x * 20 + k] = s[k];\n"
    "}\n"
    "__global__ void tree_16(const double *in, double *out) {\n"
    "    __shared__ double s[32];\n"
    "    unsigned t = threadIdx.x;\n"
    "    for (int k = t; k < 32; k += blockDim.x) s[k] = in[blockIdx.x * 32 + k];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = 16; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    for (int k = t; k < 32; k += blockDim.x) out[blockIdx.x * 32 + k] = s[k];\n"
    "}\n"
    "// The first h from the block's width: the code dispatches on it.\n"
    "__global__ void tree_rt(const float *in, float *out) {\n"
    "    __shared__ float s[512];\n"
    "    unsigned t = threadIdx.x;\n"
    "    for (int k = t; k < 512; k += blockDim.x) s[k] = in[blockIdx.x * 512 + k];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    for (int k = t; k < 512; k += blockDim.x) out[blockIdx.x * 512 + k] = s[k];\n"
    "}\n"
    "// Over dynamic shared memory (the launch gives per elements): the code for\n"
    "// every h, the launch's size checked at run time.\n"
    "__global__ void tree_dyn(const double *in, double *out, int per) {\n"
    "    extern __shared__ double s[];\n"
    "    unsigned t = threadIdx.x;\n"
    "    for (int k = t; k < per; k += blockDim.x) s[k] = in[blockIdx.x * per + k];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    for (int k = t; k < per; k += blockDim.x) out[blockIdx.x * per + k] = s[k];\n"
    "}\n"
    "__global__ void tree_dyn64(const int *in, int *out, int per) {\n"
    "    extern __shared__ int si[];\n"
    "    int t = threadIdx.x;\n"
    "    for (int k = t; k < per; k += blockDim.x) si[k] = in[blockIdx.x * per + k];\n"
    "    __syncthreads();\n"
    "    for (int h = 64; h > 0; h >>= 1) {\n"
    "        if (t < h) si[t] += si[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    for (int k = t; k < per; k += blockDim.x) out[blockIdx.x * per + k] = si[k];\n"
    "}\n"
    "// Sums read afterwards: s[0] alone (the code stores that element only),\n"
    "// s[0] and s[1] (it stores them all), and a tree in a loop whose next trip\n"
    "// reads the whole array (it stores them all).\n"
    "__global__ void tree_sum0(const float *in, float *out) {\n"
    "    __shared__ float s[128];\n"
    "    unsigned t = threadIdx.x;\n"
    "    s[t] = in[blockIdx.x * 128 + t];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = 64; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) out[blockIdx.x * 3] = s[0];\n"
    "}\n"
    "__global__ void tree_sum1(const float *in, float *out) {\n"
    "    __shared__ float s[128];\n"
    "    unsigned t = threadIdx.x;\n"
    "    s[t] = in[blockIdx.x * 128 + t];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = 64; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) out[blockIdx.x * 3] = s[0];\n"
    "    if (t == 1) out[blockIdx.x * 3 + 1] = s[1];\n"
    "}\n"
    "__global__ void tree_sum2(const float *in, float *out) {\n"
    "    __shared__ float s[128];\n"
    "    unsigned t = threadIdx.x;\n"
    "    s[t] = in[blockIdx.x * 128 + t];\n"
    "    __syncthreads();\n"
    "    for (int pass = 0; pass < 2; pass++) {\n"
    "        for (unsigned h = 64; h > 0; h >>= 1) {\n"
    "            if (t < h) s[t] += s[t + h];\n"
    "            __syncthreads();\n"
    "        }\n"
    "        if (t == 0) out[blockIdx.x * 3 + pass + 1] = s[0];\n"
    "        __syncthreads();\n"
    "    }\n"
    "}\n"
    "// s[1] read after the loop through a pointer taken before it.\n"
    "__global__ void tree_sum3(const float *in, float *out) {\n"
    "    __shared__ float s[128];\n"
    "    unsigned t = threadIdx.x;\n"
    "    s[t] = in[blockIdx.x * 128 + t];\n"
    "    const float *second = &s[1];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = 64; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) out[blockIdx.x * 3] = s[0];\n"
    "    if (t == 1) out[blockIdx.x * 3 + 1] = *second;\n"
    "}\n"
    "// Not the pattern: t in a type that wraps in blocks of 256 threads or more.\n"
    "__global__ void tree_narrow(const float *in, float *out) {\n"
    "    __shared__ float s[256];\n"
    "    unsigned char t = threadIdx.x;\n"
    "    s[t] = in[blockIdx.x * 256 + t];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = 128; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) out[blockIdx.x] = s[0];\n"
    "}\n"
    "// blockDim.x / 2 over an array of 256: dispatched, up to h = 128.\n"
    "__global__ void tree_runtime(const float *in, float *out) {\n"
    "    __shared__ float s[256];\n"
    "    unsigned t = threadIdx.x;\n"
    "    s[t] = in[blockIdx.x * blockDim.x + t];\n"
    "    __syncthreads();\n"
    "    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) out[blockIdx.x] = s[0];\n"
    "}\n"
    "__global__ void plain(float *o, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) o[i] = 2.0f * i;\n"
    "}\n";

static int is_cpu(void) { return strcmp(test_target(), "cpu") == 0; }

static void test_paths_per_kernel(void **state) {
    (void)state;
    char *log = NULL;
    TEST_OK(kiln_compile_only("cpu", NULL, src, "fission.cu", NULL, &log));
    assert_non_null(log);
    test_expect_cpu_path(log, "matmul", "fission", NULL);
    test_expect_cpu_path(log, "stencil", "fission", NULL);
    test_expect_cpu_path(log, "block_sum", "fission", NULL);
    test_expect_cpu_path(log, "pair_sum", "fission", NULL);
    test_expect_cpu_path(log, "mixed", "fission", NULL);
    test_expect_cpu_path(log, "ends_wrap", "fission", NULL);
    test_expect_cpu_path(log, "shared_scalar", "fission", NULL);
    test_expect_cpu_path(log, "calls_helper", "fission", NULL);
    test_expect_cpu_path(log, "guard_types", "fission", NULL);
    test_expect_cpu_path(log, "pair_swap", "fission", NULL);
    test_expect_cpu_path(log, "wrap_ints", "fission", NULL);
    test_expect_cpu_path(log, "selects", "fission", NULL);
    test_expect_cpu_path(log, "clamp_rows", "fission", NULL);
    test_expect_cpu_path(log, "scan_rows", "fission", NULL);
    test_expect_cpu_path(log, "guarded_div", "fission", NULL);
    test_expect_cpu_path(log, "tree_f", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_d", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_i", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_8", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_16", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_runtime", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_rt", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_sum0", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_sum2", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_sum3", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_dyn", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_dyn64", "fission", "tree reduction at line");
    test_expect_cpu_path(log, "tree_narrow", "fission", "uniform control flow)");
    /* the barrier function is inlined into the kernel first */
    test_expect_cpu_path(log, "calls_barrier", "fission", NULL);
    test_expect_cpu_path(log, "divergent", "fibers", "not uniform");
    /* barrier kernels beside it do not move it off the loop path */
    test_expect_cpu_path(log, "plain", "loop", "no barriers");
    kiln_free(log);
    TEST_OK(kiln_compile_only("cpu", NULL, src, "fission.cu", "-DKILN_CPU_FIBERS", &log));
    test_expect_cpu_path(log, "matmul", "fibers", "KILN_CPU_FIBERS");
    kiln_free(log);
    /* and the kernels are CUDA C that NVRTC takes for sm_90 */
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "fission.cu", NULL, &log);
    if (s == KILN_ERR_COMPILER_MISSING) /* no CUDA toolkit here */
        print_message("NVRTC check skipped: %s\n", kiln_last_error());
    else if (s != KILN_OK)
        fail_msg("NVRTC for sm_90: %s: %s\n%s", kiln_status_string(s), kiln_last_error(), log ? log : "");
    kiln_free(log);
}

static void test_shapes_outside_the_transform_say_why(void **state) {
    (void)state;
    static const struct {
        const char *src, *why;
    } cases[] = {
        {"__global__ void k(int *o) { int v = threadIdx.x; v = v > 3 ? __shfl_down_sync(0xffffffffu, v, 1) : "
         "v;"
         " o[threadIdx.x] = v; }",
         "warp function under ?:"},
        {"__global__ void k(int *o) { __shared__ int s[32]; int i = 0;"
         " while (i < 3) { s[threadIdx.x] = i; __syncthreads(); i++; } o[threadIdx.x] = s[0]; }",
         "while"},
        {"__global__ void k(int *o, int n) { __shared__ int s[32]; for (int i = 0; i < n; i++) {"
         " s[threadIdx.x] = i; __syncthreads(); if (s[0] > 3) break; } o[threadIdx.x] = s[0]; }",
         "break or continue"},
        {"__global__ void k(int *o) { __shared__ int s[32]; s[threadIdx.x] = 1;"
         " for (int i = threadIdx.x; i < 32; i++) __syncthreads(); o[threadIdx.x] = s[0]; }",
         "not uniform"},
        {"__global__ void k(int *o) { __shared__ int s[32]; auto v = threadIdx.x * 2 + o[0];"
         " s[threadIdx.x] = 1; __syncthreads(); o[threadIdx.x] = s[0] + v; }",
         "lives across a barrier"},
        {"__global__ void k(int *o) { __shared__ int s[32]; auto v = o[threadIdx.x]; if (threadIdx.x < 4) "
         "o[0] = v;"
         " s[threadIdx.x] = 1; __syncthreads(); o[threadIdx.x] = s[0]; }",
         NULL},
        /* a parameter assigned in the body is a local of that name */
        {"__global__ void k(int *o) { __shared__ int s[32]; o += 1; s[threadIdx.x] = 1; __syncthreads();"
         " o[threadIdx.x] = s[0]; }",
         NULL},
        /* a barrier function inlined where only some threads call it */
        {"__device__ void w() { __syncthreads(); }\n__global__ void k(int *o) { __shared__ int s[32];"
         " s[threadIdx.x] = 1; if (threadIdx.x < 4) w(); o[threadIdx.x] = s[0]; }",
         "an if whose condition is not uniform"},
        {"__device__ int w(int v) { __syncthreads(); return v; }\n__global__ void k(int *o) {"
         " o[threadIdx.x] = o[0] > 0 ? w(1) : 2; }",
         "under ?:"},
        /* the reason names the helper's local as written, not as kiln renamed it */
        {"__device__ void w(int *o) { int n = o[0]; for (int i = 0; i < n; i++) __syncthreads(); }\n"
         "__global__ void k(int *o) { w(o); o[threadIdx.x] = 1; }",
         "not uniform (at 'n', line 1)"},
        {"__device__ int w(int v) { if (v) return 1; __syncthreads(); return v; }\n__global__ void k(int *o) "
         "{"
         " o[threadIdx.x] = w(o[0]); }",
         "a return before the end"},
        /* __shared__ storage is declared outside the transformed body */
        {"__global__ void k(int *o) { const int n = 32; __shared__ int s[n]; s[threadIdx.x] = 1;"
         " __syncthreads(); o[threadIdx.x] = s[0]; }",
         "names the kernel's locals"},
        {"#define N 32\n__global__ void k(int *o) { __shared__ int s[N], t[N]; s[threadIdx.x] = 1;"
         " t[threadIdx.x] = 2; __syncthreads(); o[threadIdx.x] = s[0] + t[1]; }",
         NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *log = NULL;
        TEST_OK(kiln_compile_only("cpu", NULL, cases[i].src, "shape.cu", NULL, &log));
        /* why NULL: a shape that must stay on the fission path */
        test_expect_cpu_path(log, "k", cases[i].why ? "fibers" : "fission", cases[i].why);
        kiln_free(log);
    }
}

/* The prelude's precompiled header: built once per configuration in the
 * cache folder, used by the next modules, and the modules it compiles work. */
static void test_precompiled_prelude(void **state) {
    (void)state;
    const char *old = getenv("KILN_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL;
    char *dir = test_temp_dir("pch");
    assert_non_null(dir);
    setenv("KILN_CACHE_DIR", dir, 1);
    char *log = NULL;
    TEST_OK(kiln_compile_only("cpu", NULL, "__global__ void a(float *o) { o[threadIdx.x] = 1; }", "a.cu",
                              NULL, &log));
    kiln_free(log);
    DIR *d = opendir(dir);
    assert_non_null(d);
    char gch[2048] = "";
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "cpu-pch-", 8) == 0)
            snprintf(gch, sizeof gch, "%s/%s/kiln_cpu_prelude_all.h.gch", dir, e->d_name);
    closedir(d);
    struct stat sb;
    if (!gch[0] || stat(gch, &sb) != 0 || sb.st_size < 1000) fail_msg("no precompiled prelude under %s", dir);
    time_t built = sb.st_mtime;
    /* a second module, other source and defines: the same header serves */
    TEST_OK(kiln_compile_only("cpu", NULL, src, "fission.cu", "-DUNUSED=3", &log));
    kiln_free(log);
    assert_int_equal(stat(gch, &sb), 0);
    assert_true(sb.st_mtime == built);
    /* off: still compiles */
    setenv("KILN_CPU_PCH", "0", 1);
    TEST_OK(kiln_compile_only("cpu", NULL, "__global__ void b(float *o) { o[0] = 2; }", "b.cu", NULL, &log));
    kiln_free(log);
    unsetenv("KILN_CPU_PCH");
    if (saved)
        setenv("KILN_CACHE_DIR", saved, 1);
    else
        unsetenv("KILN_CACHE_DIR");
    free(saved);
    free(dir);
}

typedef struct pair {
    kiln_kernel *fast, *fibers;
} pair;

static void get_pair(kiln_context *ctx, const char *name, pair *p) {
    TEST_OK(kiln_kernel_from_source(ctx, src, name, NULL, &p->fast));
    TEST_OK(kiln_kernel_from_source(ctx, src, name, "-DKILN_CPU_FIBERS", &p->fibers));
}

static void release_pair(pair *p) {
    kiln_kernel_release(p->fast);
    kiln_kernel_release(p->fibers);
}

/* Launches the pair's two kernels with the same arguments but argument
 * `out`, which is d1 for the fission kernel and d2 for the fiber one, and
 * copies `bytes` of each output back, into o1 and o2 (of equal size). */
static void run_pair(const pair *p, kiln_dim3 grid, kiln_dim3 block, size_t shared, int out, kiln_array *d1,
                     kiln_array *d2, void *o1, void *o2, size_t bytes, const kiln_value *args, int nargs) {
    kiln_value a[8];
    assert_true(nargs <= 8 && out < nargs);
    memcpy(a, args, sizeof *a * (size_t)nargs);
    a[out] = kiln_arr(d1);
    TEST_OK(kiln_launch(p->fast, grid, block, shared, NULL, a, nargs));
    a[out] = kiln_arr(d2);
    TEST_OK(kiln_launch(p->fibers, grid, block, shared, NULL, a, nargs));
    TEST_OK(kiln_array_to_host(d1, o1, bytes));
    TEST_OK(kiln_array_to_host(d2, o2, bytes));
}

static void expect_same_f32(const float *a, const float *b, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (fabsf(a[i] - b[i]) > 1e-5f * (1 + fabsf(b[i])))
            fail_msg("%s[%zu]: %g on the fission path, %g on fibers", what, i, a[i], b[i]);
}

/* C = A B (n x n, square_matrix_mul's arguments A, B, C, n) for random A
 * and B, written into a and b, through `fast` (the fission path) and
 * `fibers`: the two Cs must agree; the fission path's C into c. */
static void matmul_on_both_paths(kiln_context *ctx, test_rng *r, kiln_kernel *fast, kiln_kernel *fibers,
                                 int n, float *a, float *b, float *c) {
    int64_t shape[2] = {n, n};
    size_t count = (size_t)n * n, bytes = count * 4;
    float *c2 = malloc(bytes);
    assert_non_null(c2);
    test_fill_f32(r, a, count, -1, 1);
    test_fill_f32(r, b, count, -1, 1);
    kiln_array *da, *db, *dc1, *dc2;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, a, bytes, &da));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, b, bytes, &db));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &dc1));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &dc2));
    kiln_dim3 grid = KILN_DIM((uint32_t)(n + 31) / 32, (uint32_t)(n + 31) / 32), block = KILN_DIM(32, 32);
    TEST_OK(kiln_launch(fast, grid, block, 0, NULL,
                        KILN_ARGS(kiln_arr(da), kiln_arr(db), kiln_arr(dc1), kiln_i32(n))));
    TEST_OK(kiln_launch(fibers, grid, block, 0, NULL,
                        KILN_ARGS(kiln_arr(da), kiln_arr(db), kiln_arr(dc2), kiln_i32(n))));
    TEST_OK(kiln_array_to_host(dc1, c, bytes));
    TEST_OK(kiln_array_to_host(dc2, c2, bytes));
    expect_same_f32(c, c2, count, "C");
    kiln_array_release(da);
    kiln_array_release(db);
    kiln_array_release(dc1);
    kiln_array_release(dc2);
    free(c2);
}

static void test_matmul_matches_fibers_and_host(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    pair p;
    get_pair(ctx, "matmul", &p);
    for (int round = 0; round < 2; round++) {
        int n = 33 + (int)test_uniform(&r, 0, 80);
        size_t bytes = (size_t)n * n * 4;
        float *a = malloc(bytes), *b = malloc(bytes), *c1 = malloc(bytes);
        matmul_on_both_paths(ctx, &r, p.fast, p.fibers, n, a, b, c1);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                long double ref = 0, mag = 0;
                for (int k = 0; k < n; k++) {
                    ref += (long double)a[i * n + k] * b[k * n + j];
                    mag += fabsl((long double)a[i * n + k] * b[k * n + j]);
                }
                if (fabsl(c1[i * n + j] - ref) > 4 * n * 1.2e-7L * mag + 1e-6L)
                    fail_msg("C[%d][%d] = %g, expected %Lg (n %d)", i, j, c1[i * n + j], ref, n);
            }
        free(a);
        free(b);
        free(c1);
    }
    release_pair(&p);
}

static void test_stencil_matches_fibers_and_host(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    pair p;
    get_pair(ctx, "stencil", &p);
    int nx = 50 + (int)test_uniform(&r, 0, 40), ny = 20 + (int)test_uniform(&r, 0, 40);
    int64_t shape[2] = {ny, nx};
    size_t count = (size_t)nx * ny, bytes = count * 4;
    float *in = malloc(bytes), *o1 = malloc(bytes), *o2 = malloc(bytes);
    test_fill_f32(&r, in, count, -3, 3);
    kiln_array *din, *d1, *d2;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, in, bytes, &din));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &d1));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &d2));
    kiln_dim3 grid = KILN_DIM((uint32_t)(nx + 15) / 16, (uint32_t)(ny + 15) / 16), block = KILN_DIM(16, 16);
    run_pair(&p, grid, block, 0, 1, d1, d2, o1, o2, bytes,
             KILN_ARGS(kiln_arr(din), kiln_arr(d1), kiln_i32(nx), kiln_i32(ny)));
    expect_same_f32(o1, o2, count, "stencil");
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) {
#define AT(xx, yy) (double)in[(yy)*nx + (xx)]
            double ref = 0.2 * (AT(x, y) + AT(x, y > 0 ? y - 1 : 0) + AT(x, y < ny - 1 ? y + 1 : y) +
                                AT(x > 0 ? x - 1 : 0, y) + AT(x < nx - 1 ? x + 1 : x, y));
#undef AT
            if (fabs(o1[y * nx + x] - ref) > 1e-5 * (1 + fabs(ref)))
                fail_msg("stencil (%d, %d) = %g, expected %g", x, y, o1[y * nx + x], ref);
        }
    kiln_array_release(din);
    kiln_array_release(d1);
    kiln_array_release(d2);
    free(in);
    free(o1);
    free(o2);
    release_pair(&p);
}

static void test_reduction_matches_fibers_and_host(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    pair p;
    get_pair(ctx, "block_sum", &p);
    static const int threads[] = {32, 128, 256, 1024};
    for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
        int t = threads[k], n = 1000 + (int)test_uniform(&r, 0, 20000), blocks = (n + t - 1) / t;
        int64_t nn = n, nb = blocks;
        double *x = malloc((size_t)n * 8), *s1 = malloc((size_t)blocks * 8), *s2 = malloc((size_t)blocks * 8);
        test_fill_f64(&r, x, (size_t)n, -1, 1);
        kiln_array *dx, *d1, *d2;
        TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &nn, x, (size_t)n * 8, &dx));
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &nb, &d1));
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &nb, &d2));
        run_pair(&p, KILN_DIM((uint32_t)blocks), KILN_DIM((uint32_t)t), (size_t)t * 8, 2, d1, d2, s1, s2,
                 (size_t)blocks * 8, KILN_ARGS(kiln_arr(dx), kiln_i64(n), kiln_arr(d1)));
        for (int b = 0; b < blocks; b++) {
            long double ref = 0;
            for (int i = b * t; i < (b + 1) * t && i < n; i++) ref += x[i];
            if (s1[b] != s2[b])
                fail_msg("block %d of %d threads: %.17g fission, %.17g fibers", b, t, s1[b], s2[b]);
            if (fabsl(s1[b] - ref) > 1e-12L) fail_msg("block %d sum %g vs %Lg", b, s1[b], ref);
        }
        kiln_array_release(dx);
        kiln_array_release(d1);
        kiln_array_release(d2);
        free(x);
        free(s1);
        free(s2);
    }
    release_pair(&p);
}

/* What the tree kernels compute, in C: the same additions in the same
 * order, on threads t < min(h, bx) of each level (threads a block lacks do
 * nothing), as the loop does on every path. */
#define TREE_REF(T)                                                                                          \
    static void tree_ref_##T(T *s, unsigned h0, unsigned bx) {                                               \
        for (unsigned h = h0; h > 0; h >>= 1)                                                                \
            for (unsigned t = 0; t < h && t < bx; t++) s[t] += s[t + h];                                     \
    }
TREE_REF(float)
TREE_REF(double)
TREE_REF(int)

/* Tree reductions in registers (cpu_fission_tree.c) where the block fits,
 * the loop where it does not (fewer threads than the first h): bit for bit
 * the fibers' result and the C one, every element of the shared array. */
static void test_tree_reductions_keep_every_bit(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    static const struct {
        const char *name;
        kiln_dtype dtype;
        int per, h0, threads[3], dynamic; /* dynamic: per elements of extern shared memory */
    } cases[] = {{"tree_f", KILN_FLOAT32, 256, 128, {256, 128, 64}, 0},
                 {"tree_d", KILN_FLOAT64, 72, 32, {32, 96, 16}, 0},
                 {"tree_i", KILN_INT32, 1024, 512, {1024, 512, 100}, 0},
                 {"tree_8", KILN_FLOAT32, 20, 8, {8, 32, 5}, 0},
                 {"tree_16", KILN_FLOAT64, 32, 16, {16, 32, 12}, 0},
                 /* h0 0: blockDim.x / 2; 96 and 320 threads (48 and 160: not powers
                  * of two) run the loop */
                 {"tree_rt", KILN_FLOAT32, 512, 0, {512, 64, 96}, 0},
                 {"tree_rt", KILN_FLOAT32, 512, 0, {16, 320, 32}, 0},
                 /* the launch gives exactly 2h elements (256 and 1024 threads)
                  * or more; 200 and 96 threads (h 100, 48) run the loop */
                 {"tree_dyn", KILN_FLOAT64, 256, 0, {256, 200, 32}, 1},
                 {"tree_dyn", KILN_FLOAT64, 1024, 0, {1024, 16, 96}, 1},
                 {"tree_dyn64", KILN_INT32, 128, 64, {128, 64, 40}, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        pair p;
        get_pair(ctx, cases[c].name, &p);
        int blocks = 37, per = cases[c].per;
        size_t count = (size_t)blocks * (size_t)per, bytes = count * kiln_dtype_size(cases[c].dtype);
        int64_t nn = (int64_t)count;
        void *in = malloc(bytes), *o1 = malloc(bytes), *o2 = malloc(bytes), *ref = malloc(bytes);
        for (size_t i = 0; i < count; i++) {
            double v = test_uniform(&r, -1000, 1000);
            if (cases[c].dtype == KILN_FLOAT32) ((float *)in)[i] = (float)v;
            if (cases[c].dtype == KILN_FLOAT64) ((double *)in)[i] = v;
            if (cases[c].dtype == KILN_INT32) ((int *)in)[i] = (int)v;
        }
        kiln_array *din, *d1, *d2;
        TEST_OK(kiln_array_from_host(ctx, cases[c].dtype, 1, &nn, in, bytes, &din));
        TEST_OK(kiln_array_zeros(ctx, cases[c].dtype, 1, &nn, &d1));
        TEST_OK(kiln_array_zeros(ctx, cases[c].dtype, 1, &nn, &d2));
        for (int k = 0; k < 3; k++) {
            unsigned bx = (unsigned)cases[c].threads[k];
            if (cases[c].dynamic)
                run_pair(&p, KILN_DIM((uint32_t)blocks), KILN_DIM(bx),
                         (size_t)per * kiln_dtype_size(cases[c].dtype), 1, d1, d2, o1, o2, bytes,
                         KILN_ARGS(kiln_arr(din), kiln_arr(d1), kiln_i32(per)));
            else
                run_pair(&p, KILN_DIM((uint32_t)blocks), KILN_DIM(bx), 0, 1, d1, d2, o1, o2, bytes,
                         KILN_ARGS(kiln_arr(din), kiln_arr(d1)));
            memcpy(ref, in, bytes);
            unsigned h0 = cases[c].h0 ? (unsigned)cases[c].h0 : bx / 2;
            for (int b = 0; b < blocks; b++) {
                size_t at = (size_t)b * (size_t)per;
                if (cases[c].dtype == KILN_FLOAT32) tree_ref_float((float *)ref + at, h0, bx);
                if (cases[c].dtype == KILN_FLOAT64) tree_ref_double((double *)ref + at, h0, bx);
                if (cases[c].dtype == KILN_INT32) tree_ref_int((int *)ref + at, h0, bx);
            }
            if (memcmp(o1, o2, bytes) != 0)
                fail_msg("%s, %u threads: fission and fibers differ", cases[c].name, bx);
            if (memcmp(o1, ref, bytes) != 0)
                fail_msg("%s, %u threads: not the C tree's bits", cases[c].name, bx);
        }
        kiln_array_release(din);
        kiln_array_release(d1);
        kiln_array_release(d2);
        free(in);
        free(o1);
        free(o2);
        free(ref);
        release_pair(&p);
    }
}

/* A tree whose sums the kernel reads afterwards as s[0] only stores s[0]
 * (cpu_fission_tree.c); one that also reads s[1] (tree_sum1, and tree_sum3
 * through a pointer taken before the loop), or sits in a loop whose next
 * trip reads the array, stores every sum: each kernel's outputs equal the
 * fibers' and the C tree's, bit for bit. tree_sum2's second pass sums the
 * first pass's partial sums, so a missing store changes its result. */
static void test_tree_sums_store_what_is_read(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    static const char *const names[] = {"tree_sum0", "tree_sum1", "tree_sum2", "tree_sum3"};
    enum { blocks = 29, per = 128 };
    float in[blocks * per], s[per], o1[blocks * 3], o2[blocks * 3], ref[blocks * 3];
    test_fill_f32(&r, in, blocks * per, -100, 100);
    int64_t ni = blocks * per, no = blocks * 3;
    kiln_array *din, *d1, *d2;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &ni, in, sizeof in, &din));
    for (int k = 0; k < 4; k++) {
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &no, &d1));
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &no, &d2));
        pair p;
        get_pair(ctx, names[k], &p);
        memset(ref, 0, sizeof ref);
        for (int b = 0; b < blocks; b++) {
            memcpy(s, in + b * per, sizeof s);
            for (int pass = 0; pass < (k == 2 ? 2 : 1); pass++) {
                tree_ref_float(s, 64, per);
                ref[b * 3 + (k == 2 ? pass + 1 : 0)] = s[0];
            }
            if (k == 1 || k == 3) ref[b * 3 + 1] = s[1];
        }
        run_pair(&p, KILN_DIM(blocks), KILN_DIM(per), 0, 1, d1, d2, o1, o2, sizeof o1,
                 KILN_ARGS(kiln_arr(din), kiln_arr(d1)));
        if (memcmp(o1, o2, sizeof o1) != 0) fail_msg("%s: fission and fibers differ", names[k]);
        if (memcmp(o1, ref, sizeof o1) != 0) fail_msg("%s: not the C tree's bits", names[k]);
        release_pair(&p);
        kiln_array_release(d1);
        kiln_array_release(d2);
    }
    kiln_array_release(din);
}

/* The guard_types kernel's value for thread t of a block of bx threads,
 * in C (the same conversions as C++), from its neighbour's input. */
static int guard_types_ref(const int *in, unsigned b, unsigned t, unsigned bx, int h, long long big, float f,
                           unsigned uh) {
    int it = (int)t, acc = in[b * bx + (t + 1) % bx];
    if (t < (unsigned)h) acc += 1;
    if (it < h) acc += 2;
    if (it <= h) acc += 4;
    if (t == uh) acc += 8;
    if (it < big) acc += 16;
    if ((float)t < f) acc += 32;
    if (t <= uh && h > -1000) acc += 64;
    if (h < 100 && it == h) acc += 128;
    if (h > -5000 && (int)t <= (int)(unsigned char)h) acc += 256;
    return acc;
}

static void test_guard_ranges_follow_conversions(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    pair p;
    get_pair(ctx, "guard_types", &p);
    enum { BX = 96, BLOCKS = 3, N = BX * BLOCKS };
    static const int hs[] = {-5, 0, 3, 95, 96, 200, -2000, 257};
    static const long long bigs[] = {-1, 0, 5, 1ll << 40};
    static const float fs[] = {-0.5f, 0.0f, 2.5f, 95.5f, 1000.0f};
    static const unsigned uhs[] = {0, 7, 95, 4000000000u};
    int in[N], o1[N], o2[N];
    for (int i = 0; i < N; i++) in[i] = (int)test_uniform(&r, -1000, 1000);
    int64_t nn = N;
    kiln_array *din, *d1, *d2;
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &nn, in, sizeof in, &din));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d1));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d2));
    for (size_t k = 0; k < sizeof hs / sizeof *hs; k++) {
        int h = hs[k];
        long long big = bigs[k % 4];
        float f = fs[k % 5];
        unsigned uh = uhs[(k + 1) % 4];
        TEST_OK(kiln_launch(
            p.fast, KILN_DIM(BLOCKS), KILN_DIM(BX), 0, NULL,
            KILN_ARGS(kiln_arr(din), kiln_arr(d1), kiln_i32(h), kiln_i64(big), kiln_f32(f), kiln_u32(uh))));
        TEST_OK(kiln_launch(
            p.fibers, KILN_DIM(BLOCKS), KILN_DIM(BX), 0, NULL,
            KILN_ARGS(kiln_arr(din), kiln_arr(d2), kiln_i32(h), kiln_i64(big), kiln_f32(f), kiln_u32(uh))));
        TEST_OK(kiln_array_to_host(d1, o1, sizeof o1));
        TEST_OK(kiln_array_to_host(d2, o2, sizeof o2));
        for (int i = 0; i < N; i++) {
            int want = guard_types_ref(in, (unsigned)(i / BX), (unsigned)(i % BX), BX, h, big, f, uh);
            if (o1[i] != o2[i] || o1[i] != want)
                fail_msg("thread %d (h %d, big %lld, f %g, uh %u): %d fission, %d fibers, %d expected", i, h,
                         big, (double)f, uh, o1[i], o2[i], want);
        }
    }
    kiln_array_release(din);
    kiln_array_release(d1);
    kiln_array_release(d2);
    release_pair(&p);
}

/* wrap_ints's values as CUDA computes them: in uint32_t, then as int32_t. */
static int32_t wrap_ints_thread(uint32_t bx, uint32_t tx, int32_t k, int part) {
    uint32_t h = bx * 1103515245u + tx * 12345u + (uint32_t)k, prev = bx - 1u;
    return part ? (int32_t)h : (int32_t)(h ^ prev);
}
static int32_t wrap_ints_ref(uint32_t bx, uint32_t tx, int32_t k) {
    int32_t neg = (int32_t)(tx - 64u), big = (int32_t)((bx + 2147483647u) * 3u - tx);
    int32_t odd = (int32_t)(bx * 4000000000u + tx / 2 + (tx < 3) + (0u - bx));
    return wrap_ints_thread(bx, 63 - tx, k, 0) ^ (neg * 7) ^ big ^ odd ^
           (wrap_ints_thread(bx, tx, k, 1) >> 28);
}

static void test_int_locals_of_unsigned_indices_wrap(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    pair p;
    get_pair(ctx, "wrap_ints", &p);
    enum { BLOCKS = 7, N = BLOCKS * 64 };
    int o1[N], o2[N];
    int64_t nn = N;
    kiln_array *d1, *d2;
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d1));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d2));
    const int ks[] = {0, -1, 2147483647, (int)test_uniform(&r, -2e9, 2e9)};
    for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
        run_pair(&p, KILN_DIM(BLOCKS), KILN_DIM(64), 0, 0, d1, d2, o1, o2, sizeof o1,
                 KILN_ARGS(kiln_arr(d1), kiln_i32(ks[j])));
        for (int i = 0; i < N; i++) {
            int want = wrap_ints_ref((uint32_t)(i / 64), (uint32_t)(i % 64), ks[j]);
            if (o1[i] != o2[i] || o1[i] != want)
                fail_msg("thread %d (k %d): %d fission, %d fibers, %d expected", i, ks[j], o1[i], o2[i],
                         want);
        }
    }
    kiln_array_release(d1);
    kiln_array_release(d2);
    release_pair(&p);
}

static int selects_ref(const int *in, int n, int lim, int b, int t) {
    int s[64];
    for (int k = 0; k < 64; k++) {
        int i = b * 64 + k;
        s[k] = i < n ? in[i < n - 1 ? i : n - 1] : -1;
    }
    int i = b * 64 + t, c = i < n - 1 ? i : n - 1, d = t - lim > 0 ? t - lim : 0;
    int u = t < lim ? t : lim, m = lim - t > -3 ? lim - t : -3;
    return s[d] + (t > lim ? c : d) + m + u;
}

static void test_versioned_selections(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    pair p;
    get_pair(ctx, "selects", &p);
    enum { BLOCKS = 6, N = BLOCKS * 64 };
    int in[N], o1[N], o2[N];
    for (int i = 0; i < N; i++) in[i] = (int)test_uniform(&r, -1000, 1000);
    int64_t nn = N;
    kiln_array *din, *d1, *d2;
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &nn, in, sizeof in, &din));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d1));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d2));
    const int ns[] = {N, N - 1, 130, (int)test_uniform(&r, 1, N), 96};
    const int lims[] = {0, 70, 63, (int)test_uniform(&r, 0, 70), 31};
    const kiln_dim3 shapes[] = {KILN_DIM(64), KILN_DIM(32, 2), KILN_DIM(16, 4)};
    for (size_t j = 0; j < 5; j++)
        for (size_t q = 0; q < 5; q++) {
            int n = ns[j], lim = lims[q];
            kiln_dim3 shape = shapes[(j + q) % 3];
            run_pair(&p, KILN_DIM(BLOCKS), shape, 0, 1, d1, d2, o1, o2, sizeof o1,
                     KILN_ARGS(kiln_arr(din), kiln_arr(d1), kiln_i32(n), kiln_i32(lim)));
            for (int i = 0; i < N; i++) {
                int want = selects_ref(in, n, lim, i / 64, i % 64);
                if (o1[i] != o2[i] || o1[i] != want)
                    fail_msg("thread %d (n %d, lim %d, block %ux%u): %d fission, %d fibers, %d expected", i,
                             n, lim, (unsigned)shape.x, (unsigned)shape.y, o1[i], o2[i], want);
            }
        }
    kiln_array_release(din);
    kiln_array_release(d1);
    kiln_array_release(d2);
    release_pair(&p);
    /* guarded_div: thread 0 of each block returns before dividing by its index */
    get_pair(ctx, "guarded_div", &p);
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &nn, in, sizeof in, &din));
    for (int j = 0; j < 3; j++) {
        int n = j == 0 ? 1000 : j == 1 ? 20 : (int)test_uniform(&r, 0, 700);
        TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d1));
        TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d2));
        run_pair(&p, KILN_DIM(BLOCKS), KILN_DIM(64), 0, 1, d1, d2, o1, o2, sizeof o1,
                 KILN_ARGS(kiln_arr(din), kiln_arr(d1), kiln_i32(n)));
        for (int i = 0; i < N; i++) {
            int b = i / 64, t = i % 64, want = 0;
            if (t) {
                int q = 640 / t, u = 64 - t, qu = 640 / u;
                want = (q > 5 ? (qu < n ? in[b * 64 + u] : 0) : 1) + q;
            }
            if (o1[i] != o2[i] || o1[i] != want)
                fail_msg("guarded_div[%d] (n %d): %d fission, %d fibers, %d expected", i, n, o1[i], o2[i],
                         want);
        }
        kiln_array_release(d1);
        kiln_array_release(d2);
    }
    kiln_array_release(din);
    release_pair(&p);
    /* scan_rows: each block's inclusive prefix sums */
    get_pair(ctx, "scan_rows", &p);
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &nn, in, sizeof in, &din));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d1));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d2));
    run_pair(&p, KILN_DIM(BLOCKS), KILN_DIM(16, 4), 0, 1, d1, d2, o1, o2, sizeof o1,
             KILN_ARGS(kiln_arr(din), kiln_arr(d1)));
    for (int i = 0, sum = 0; i < N; i++) {
        sum = (i % 64 ? sum : 0) + in[i];
        if (o1[i] != o2[i] || o1[i] != sum)
            fail_msg("scan_rows[%d]: %d fission, %d fibers, %d expected", i, o1[i], o2[i], sum);
    }
    kiln_array_release(din);
    kiln_array_release(d1);
    kiln_array_release(d2);
    release_pair(&p);
}

/* Selections decided from a row's two ends (fis_site_ends): a rising
 * operand that wraps inside the row (an unsigned char copy of threadIdx.x
 * in blocks wider than 256; an int that crosses zero compared as unsigned)
 * can hold at both ends and fail between them, so the check must see the
 * wrap and look at the whole row. Fission, fibers and the host agree for
 * bounds that hold everywhere, nowhere, at the ends only and on a prefix. */
static int ends_wrap_ref(const int *in, int lim, unsigned big, int base, int top, int bx, int b, int t) {
    int u = bx - 1 - t, i = b * bx + u;
    unsigned char c = (unsigned char)u;
    int j = (int)((unsigned)u + (unsigned)base);
    return (c < lim ? in[i] : -1) + ((unsigned)j < big ? 10 : 20) + in[i < top ? i : top];
}

static void test_row_ends_see_wraps(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    pair p;
    get_pair(ctx, "ends_wrap", &p);
    enum { BLOCKS = 3, MAXN = BLOCKS * 512 };
    int in[MAXN], o1[MAXN], o2[MAXN];
    for (int i = 0; i < MAXN; i++) in[i] = (int)test_uniform(&r, -1000, 1000);
    int64_t nn = MAXN;
    kiln_array *din;
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &nn, in, sizeof in, &din));
    static const struct {
        int bx, lim;
        unsigned big;
        int base, top; /* top < 0: the last element */
    } cases[] = {
        {300, 100, 1000u, 0, -1},         /* c wraps inside the row: c < 100 at both ends only */
        {256, 1000, 0xFFFFFFFEu, -5, -1}, /* j wraps (crosses zero as unsigned): at both ends only */
        {300, 100, 0xFFFFFFFEu, -5, -1},  /* both */
        {300, 1000, 1000u, 0, -1},        /* c wraps, yet c < 1000 everywhere */
        {200, 150, 1000u, 0, -1},         /* no wrap: a prefix, the last end fails */
        {200, 250, 1000u, 3, -1},         /* no wrap: everywhere */
        {512, 60, 0xFFFFFFF0u, -7, -1},   /* c wraps twice */
        {256, 1000, 1000u, 0, 300},       /* min(i, top) clamps inside block 1 */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int bx = cases[k].bx, lim = cases[k].lim, base = cases[k].base, n = BLOCKS * bx;
        int top = cases[k].top < 0 ? n - 1 : cases[k].top;
        unsigned big = cases[k].big;
        int64_t no = n;
        kiln_array *d1, *d2;
        TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &no, &d1));
        TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &no, &d2));
        run_pair(&p, KILN_DIM(BLOCKS), KILN_DIM((uint32_t)bx), 0, 1, d1, d2, o1, o2, sizeof(int) * (size_t)n,
                 KILN_ARGS(kiln_arr(din), kiln_arr(d1), kiln_i32(lim), kiln_u32(big), kiln_i32(base),
                           kiln_i32(top)));
        for (int i = 0; i < n; i++) {
            int want = ends_wrap_ref(in, lim, big, base, top, bx, i / bx, i % bx);
            if (o1[i] != o2[i] || o1[i] != want)
                fail_msg("case %zu, thread %d: %d fission, %d fibers, %d expected", k, i, o1[i], o2[i], want);
        }
        kiln_array_release(d1);
        kiln_array_release(d2);
    }
    kiln_array_release(din);
    release_pair(&p);
}

static void test_row_check_of_32_threads(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    pair p;
    get_pair(ctx, "clamp_rows", &p);
    enum { N = 8 * 128 };
    int in[N], o1[N], o2[N];
    for (int i = 0; i < N; i++) in[i] = (int)test_uniform(&r, -100000, 100000);
    int64_t nn = N;
    kiln_array *din, *d1, *d2;
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &nn, in, sizeof in, &din));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d1));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &d2));
    /* rows of 32 (the constant-count check), 16, 8 and 24 threads; n just
     * short of a row's end, at it, mid-row, beyond the array */
    const kiln_dim3 shapes[] = {KILN_DIM(32, 4), KILN_DIM(16, 8), KILN_DIM(8, 16), KILN_DIM(24, 4)};
    const int ns[] = {32 * 5 + 31, 32 * 9 + 30, 32 * 11, 500, N + 7, 1 + 32 * (int)test_uniform(&r, 0, 30)};
    for (size_t g = 0; g < 4; g++)
        for (size_t j = 0; j < 6; j++) {
            kiln_dim3 b = shapes[g];
            int per = (int)(b.x * b.y), blocks = N / per, n = ns[j];
            run_pair(&p, KILN_DIM((uint32_t)blocks), b, 0, 1, d1, d2, o1, o2, sizeof o1,
                     KILN_ARGS(kiln_arr(din), kiln_arr(d1), kiln_i32(n)));
            for (int i = 0; i < blocks * per; i++) {
                int tx = i % (int)b.x, row = i - tx, mirror = row + ((int)b.x - 1 - tx);
                int want = in[mirror < n - 1 ? mirror : n - 1];
                if (tx == 0) want += 7 + (b.x > 23 ? in[row < n - 1 ? row : n - 1] : 0);
                if (o1[i] != o2[i] || o1[i] != want)
                    fail_msg("clamp_rows[%d] (block %ux%u, n %d): %d fission, %d fibers, %d expected", i,
                             (unsigned)b.x, (unsigned)b.y, n, o1[i], o2[i], want);
            }
        }
    kiln_array_release(din);
    kiln_array_release(d1);
    kiln_array_release(d2);
    release_pair(&p);
}

/* Grids of more than 2^20 blocks in x take the body without kiln's range
 * assumptions (kiln_cpu_fission.cuh); both sides of the line must agree
 * with the host. */
static void test_huge_grid_takes_the_general_body(void **state) {
    kiln_context *ctx = *state;
    if (!is_cpu()) skip(); /* a million blocks is the CPU body's limit, not a GPU question */
    test_rng r = test_rng_for(__func__);
    kiln_kernel *k;
    TEST_OK(kiln_kernel_from_source(ctx, src, "pair_swap", NULL, &k));
    static const unsigned grids[] = {1u << 20, (1u << 20) + 3};
    for (int g = 0; g < 2; g++) {
        size_t n = (size_t)grids[g] * 2;
        int64_t nn = (int64_t)n;
        int *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
        for (size_t i = 0; i < n; i++) in[i] = (int)test_uniform(&r, -1000, 1000);
        kiln_array *din, *dout;
        TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &nn, in, n * sizeof *in, &din));
        TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &nn, &dout));
        TEST_OK(kiln_launch(k, KILN_DIM(grids[g]), KILN_DIM(2), 0, NULL,
                            KILN_ARGS(kiln_arr(din), kiln_arr(dout))));
        TEST_OK(kiln_array_to_host(dout, out, n * sizeof *out));
        for (size_t i = 0; i < n; i++) {
            int want = in[i ^ 1] * 3 + (int)(i / 2);
            if (out[i] != want) fail_msg("grid %u, out[%zu] = %d, expected %d", grids[g], i, out[i], want);
        }
        kiln_array_release(din);
        kiln_array_release(dout);
        free(in);
        free(out);
    }
    kiln_kernel_release(k);
}

/* examples/matmul.c, seed 001's kernel as `kiln demo matmul` runs it. */
extern const char kiln_matmul_source[];

static void test_example_matmul_takes_fission(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    char *log = NULL;
    TEST_OK(kiln_compile_only("cpu", NULL, kiln_matmul_source, "matmul.cu", NULL, &log));
    test_expect_cpu_path(log, "square_matrix_mul", "fission", NULL);
    kiln_free(log);
    kiln_kernel *k1, *k2;
    TEST_OK(kiln_kernel_from_source(ctx, kiln_matmul_source, "square_matrix_mul", NULL, &k1));
    TEST_OK(kiln_kernel_from_source(ctx, kiln_matmul_source, "square_matrix_mul", "-DKILN_CPU_FIBERS", &k2));
    int n = 40 + (int)test_uniform(&r, 0, 40);
    size_t bytes = (size_t)n * n * 4;
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    matmul_on_both_paths(ctx, &r, k1, k2, n, a, b, c);
    free(a);
    free(b);
    free(c);
    kiln_kernel_release(k1);
    kiln_kernel_release(k2);
}

static void test_early_return_and_uniform_control_flow(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    int n = 1000 + (int)test_uniform(&r, 0, 500);
    int64_t nn = n;
    size_t bytes = (size_t)n * 4;
    float *in = malloc(bytes), *o1 = malloc(bytes), *o2 = malloc(bytes);
    test_fill_f32(&r, in, (size_t)n, -1, 1);
    kiln_array *din, *d1, *d2;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &nn, in, bytes, &din));
    pair p;
    get_pair(ctx, "pair_sum", &p);
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nn, &d1));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nn, &d2));
    kiln_dim3 grid = KILN_DIM((uint32_t)(n + 255) / 256), block = KILN_DIM(256);
    run_pair(&p, grid, block, 0, 1, d1, d2, o1, o2, bytes,
             KILN_ARGS(kiln_arr(din), kiln_arr(d1), kiln_i32(n)));
    expect_same_f32(o1, o2, (size_t)n, "pair_sum");
    for (int i = 0; i < n; i++) {
        double ref = 2.0 * in[i] + ((i ^ 1) < n ? in[i ^ 1] : 0.0);
        if (fabs(o1[i] - ref) > 1e-6 * (1 + fabs(ref)))
            fail_msg("pair_sum[%d] = %g, expected %g", i, o1[i], ref);
    }
    release_pair(&p);
    kiln_array_release(d1);
    kiln_array_release(d2);

    /* mixed: 128-thread blocks over n rounded down, both modes */
    get_pair(ctx, "mixed", &p);
    int blocks = n / 128;
    int64_t nout = (int64_t)blocks * 128;
    for (int mode = 0; mode < 2; mode++) {
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nout, &d1));
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nout, &d2));
        run_pair(&p, KILN_DIM((uint32_t)blocks), KILN_DIM(128), 0, 1, d1, d2, o1, o2, (size_t)nout * 4,
                 KILN_ARGS(kiln_arr(din), kiln_arr(d1), kiln_i32(n), kiln_i32(mode)));
        expect_same_f32(o1, o2, (size_t)nout, mode ? "mixed (mode 1)" : "mixed (mode 0)");
        int nonzero = 0;
        for (int64_t i = 0; i < nout; i++) nonzero += o1[i] != 0;
        if (nonzero < nout / 2) fail_msg("mixed wrote only %d of %lld values", nonzero, (long long)nout);
        for (int b = 0; b < blocks; b++)
            for (int t = 5; t < 8; t++)
                if (o1[b * 128 + t] != 0)
                    fail_msg("thread %d of block %d returned, yet wrote %g", t, b, o1[b * 128 + t]);
        kiln_array_release(d1);
        kiln_array_release(d2);
    }
    release_pair(&p);
    kiln_array_release(din);
    free(in);
    free(o1);
    free(o2);
}

static void test_shared_scalar_keeps_values(void **state) {
    kiln_context *ctx = *state;
    pair p;
    get_pair(ctx, "shared_scalar", &p);
    int64_t n = 2 * 64;
    kiln_array *d1, *d2;
    int o1[128], o2[128];
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &n, &d1));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &n, &d2));
    run_pair(&p, KILN_DIM(2), KILN_DIM(64), 0, 0, d1, d2, o1, o2, sizeof o1, KILN_ARGS(kiln_arr(d1)));
    for (int i = 0; i < 128; i++) {
        int expect = (64 * 65 / 2 + i % 64) * 10 - 1;
        if (o1[i] != expect || o2[i] != expect)
            fail_msg("out[%d]: %d on the fission path, %d on fibers, expected %d", i, o1[i], o2[i], expect);
    }
    kiln_array_release(d1);
    kiln_array_release(d2);
    release_pair(&p);
}

static void test_device_function_sees_thread_index(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    float in[64], o1[64], o2[64];
    test_fill_f32(&r, in, 64, -1, 1);
    int64_t n = 64;
    kiln_array *din, *d1, *d2;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, in, sizeof in, &din));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &d1));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &d2));
    pair p;
    get_pair(ctx, "calls_helper", &p);
    run_pair(&p, KILN_DIM(1), KILN_DIM(64), 0, 1, d1, d2, o1, o2, sizeof o1,
             KILN_ARGS(kiln_arr(din), kiln_arr(d1)));
    expect_same_f32(o1, o2, 64, "calls_helper");
    for (int i = 0; i < 64; i++) {
        double ref = 2.0 * in[63 - i] + 2.0 * in[i];
        if (fabs(o1[i] - ref) > 1e-6) fail_msg("out[%d] = %g, expected %g", i, o1[i], ref);
    }
    release_pair(&p);
    kiln_array_release(din);
    kiln_array_release(d1);
    kiln_array_release(d2);
}

/* ---- every barrier kernel written in the tests and examples */

/* The next sequence of adjacent C string literals at or after *p in C
 * source text, unescaped into out (cap bytes); 0 when none is left.
 * Comments and character literals are skipped. */
static int next_literal_run(const char **p, char *out, size_t cap) {
    const char *s = *p;
    size_t n = 0;
    int in_run = 0;
    while (*s) {
        if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n') s++;
        } else if (s[0] == '/' && s[1] == '*') {
            const char *e = strstr(s + 2, "*/");
            s = e ? e + 2 : s + strlen(s);
        } else if (*s == '\'') {
            for (s++; *s && *s != '\''; s++)
                if (*s == '\\' && s[1]) s++;
            if (*s) s++;
        } else if (*s == '"') {
            for (s++; *s && *s != '"'; s++) {
                char c = *s;
                if (c == '\\' && s[1]) {
                    c = *++s;
                    c = c == 'n' ? '\n' : c == 't' ? '\t' : c == '0' ? '\0' : c;
                }
                if (n + 1 < cap) out[n++] = c;
            }
            if (*s) s++;
            in_run = 1;
        } else if (in_run && !(*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')) {
            break;
        } else
            s++;
    }
    out[n] = '\0';
    *p = s;
    return in_run;
}

/* No barrier kernel in the tests' and examples' sources falls off the
 * fission path because its transformed code did not compile (kiln would
 * quietly run the module on fibers then): each one compiles, and each
 * kernel's path is fission or fibers with the transformer's reason. */
static void test_no_barrier_kernel_falls_back(void **state) {
    (void)state;
    const char *root = getenv("KILN_SOURCE_DIR");
    if (!root) fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    static const char *const dirs[] = {"tests", "examples"};
    enum { CAP = 1 << 16 };
    char *lit = malloc(CAP);
    int kernels = 0;
    for (int d = 0; d < 2; d++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", root, dirs[d]);
        DIR *dp = opendir(dir);
        if (!dp) fail_msg("cannot open %s", dir);
        struct dirent *e;
        while ((e = readdir(dp)) != NULL) {
            size_t len = strlen(e->d_name);
            if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0) continue;
            char path[1400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            char *text = test_read_file(path);
            if (!text) fail_msg("cannot read %s", path);
            const char *p = text;
            while (next_literal_run(&p, lit, CAP)) {
                if (!strstr(lit, "__global__") || !strstr(lit, "__syncthreads")) continue;
                char *log = NULL;
                kiln_status st = kiln_compile_only("cpu", NULL, lit, e->d_name, NULL, &log);
                if (st != KILN_OK) { /* sources meant not to compile, or to be refused */
                    kiln_free(log);
                    continue;
                }
                if (strstr(log, "did not compile"))
                    fail_msg("%s: a barrier kernel's fission code did not compile:\n%s\n%s", path, log, lit);
                for (const char *l = strstr(log, "CPU path of "); l; l = strstr(l + 1, "CPU path of ")) {
                    kernels++;
                    const char *end = strchr(l, '\n');
                    int line = (int)(end ? end - l : (long)strlen(l));
                    if (strstr(l, ": fibers") && strstr(l, ": fibers") < l + line &&
                        !strstr(l, "(loop fission:") && !strstr(l, "called function"))
                        fail_msg("%s: %.*s", path, line, l);
                }
                kiln_free(log);
            }
            free(text);
        }
        closedir(dp);
    }
    free(lit);
    print_message("%d kernels in the tests' and examples' barrier sources\n", kernels);
    if (kernels < 20) fail_msg("only %d kernels found: is KILN_SOURCE_DIR the source tree?", kernels);
}

static void test_fiber_kernels_still_run(void **state) {
    kiln_context *ctx = *state;
    static const char *const names[] = {"calls_barrier", "divergent"};
    for (int k = 0; k < 2; k++) {
        kiln_kernel *kern;
        TEST_OK(kiln_kernel_from_source(ctx, src, names[k], NULL, &kern));
        int64_t n = 64;
        kiln_array *d;
        float o[64];
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &d));
        TEST_OK(kiln_launch(kern, KILN_DIM(1), KILN_DIM(64), 0, NULL, KILN_ARGS(kiln_arr(d))));
        TEST_OK(kiln_array_to_host(d, o, sizeof o));
        for (int i = 0; i < 64; i++)
            if (o[i] != (float)(63 - i)) fail_msg("%s: o[%d] = %g, expected %d", names[k], i, o[i], 63 - i);
        kiln_array_release(d);
        kiln_kernel_release(kern);
    }
}

int main(void) {
    const struct CMUnitTest cpu_only[] = {
        cmocka_unit_test(test_paths_per_kernel),
        cmocka_unit_test(test_shapes_outside_the_transform_say_why),
        cmocka_unit_test(test_precompiled_prelude),
        cmocka_unit_test(test_no_barrier_kernel_falls_back),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_matches_fibers_and_host),
        cmocka_unit_test(test_stencil_matches_fibers_and_host),
        cmocka_unit_test(test_reduction_matches_fibers_and_host),
        cmocka_unit_test(test_tree_reductions_keep_every_bit),
        cmocka_unit_test(test_tree_sums_store_what_is_read),
        cmocka_unit_test(test_guard_ranges_follow_conversions),
        cmocka_unit_test(test_int_locals_of_unsigned_indices_wrap),
        cmocka_unit_test(test_versioned_selections),
        cmocka_unit_test(test_row_check_of_32_threads),
        cmocka_unit_test(test_row_ends_see_wraps),
        cmocka_unit_test(test_example_matmul_takes_fission),
        cmocka_unit_test(test_huge_grid_takes_the_general_body),
        cmocka_unit_test(test_early_return_and_uniform_control_flow),
        cmocka_unit_test(test_shared_scalar_keeps_values),
        cmocka_unit_test(test_device_function_sees_thread_index),
        cmocka_unit_test(test_fiber_kernels_still_run),
    };
    int failed = is_cpu() ? cmocka_run_group_tests_name("cpu paths", cpu_only, NULL, NULL) : 0;
    return failed +
           cmocka_run_group_tests_name("barrier kernels", tests, test_setup_context, test_teardown_context);
}
