/* test_cpu_fission_warp.c: warp functions (shuffles, votes, cooperative
 * groups' tiles and their reduce) and shared-memory atomics take loop
 * fission on the CPU. Each kernel runs as compiled and with
 * -DKILN_CPU_FIBERS (on CUDA both are the GPU); the two must agree to the
 * bit and match a host reference that moves values between lanes the way a
 * warp does. Blocks of 2-d shape and of a size that is no multiple of 32
 * check the lanes' numbering and the last, partial warp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_support.h"

static const char *src =
    "#include <cooperative_groups.h>\n"
    "#include <cooperative_groups/reduce.h>\n"
    "#include <cooperative_groups/scan.h>\n"
    "namespace cg = cooperative_groups;\n"
    "// a warp's sum by shuffles down, then each warp's sum through shared memory\n"
    "__global__ void warp_sum(const float *in, float *out) {\n"
    "    __shared__ float s[32];\n"
    "    int t = threadIdx.y * blockDim.x + threadIdx.x;\n"
    "    int n = blockDim.x * blockDim.y;\n"
    "    float v = in[blockIdx.x * n + t];\n"
    "    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);\n"
    "    if ((t & 31) == 0) s[t >> 5] = v;\n"
    "    __syncthreads();\n"
    "    float w = __shfl_sync(0xffffffffu, v, 3);\n"
    "    out[blockIdx.x * n + t] = s[t >> 5] + w;\n"
    "}\n"
    "// a butterfly over half warps, and a shuffle up by a parameter\n"
    "__global__ void butterfly(const double *in, double *out, int up) {\n"
    "    int t = threadIdx.x;\n"
    "    double v = in[blockIdx.x * blockDim.x + t];\n"
    "    for (int m = 1; m < 16; m <<= 1) {\n"
    "        double o = __shfl_xor_sync(0xffffffffu, v, m, 16);\n"
    "        v = v * 0.5 + o;\n"
    "    }\n"
    "    __syncwarp();\n"
    "    v -= __shfl_up_sync(0xffffffffu, v, up);\n"
    "    out[blockIdx.x * blockDim.x + t] = v;\n"
    "}\n"
    "// votes: a ballot, any, all (in a condition), and the active mask\n"
    "__global__ void votes(const int *in, unsigned *out) {\n"
    "    int t = threadIdx.x;\n"
    "    int x = in[blockIdx.x * blockDim.x + t];\n"
    "    unsigned b = __ballot_sync(0xffffffffu, x > 0);\n"
    "    int any = __any_sync(0xffffffffu, x > 40);\n"
    "    unsigned all = 0;\n"
    "    if (__all_sync(0xffffffffu, x > -45)) all = 1;\n"
    "    unsigned *o = out + 4 * (blockIdx.x * blockDim.x + t);\n"
    "    o[0] = b;\n"
    "    o[1] = any;\n"
    "    o[2] = all;\n"
    "    o[3] = __activemask();\n"
    "}\n"
    "// cooperative groups: a tile's reduce and an inclusive scan by shfl_up,\n"
    "// votes of a tile of 8, and a shared histogram by atomicAdd\n"
    "__global__ void tiles(const int *in, int *out) {\n"
    "    cg::thread_block cta = cg::this_thread_block();\n"
    "    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cta);\n"
    "    cg::thread_block_tile<8> eight = cg::tiled_partition<8>(cta);\n"
    "    __shared__ int hist[16];\n"
    "    if (threadIdx.x < 16) hist[threadIdx.x] = 0;\n"
    "    cta.sync();\n"
    "    int v = in[blockIdx.x * blockDim.x + threadIdx.x];\n"
    "    int *h = hist + (v & 7);\n"
    "    atomicAdd(&hist[(v >> 3) & 7], 1);\n"
    "    atomicAdd(h + 8, 2);\n"
    "    int r = cg::reduce(tile, v, cg::plus<int>());\n"
    "    for (int i = 1; i < tile.size(); i *= 2) {\n"
    "        int n = tile.shfl_up(v, i);\n"
    "        if (tile.thread_rank() >= i) v += n;\n"
    "    }\n"
    "    unsigned b8 = eight.ballot(v & 1);\n"
    "    int a8 = eight.all(v > -1000);\n"
    "    int d8 = eight.shfl_down(v, 3);\n"
    "    cg::sync(cta);\n"
    "    int *o = out + 4 * (blockIdx.x * blockDim.x + threadIdx.x);\n"
    "    o[0] = v + hist[threadIdx.x & 15];\n"
    "    o[1] = r;\n"
    "    o[2] = (int)b8 + 1000 * a8;\n"
    "    o[3] = d8;\n"
    "}\n"
    "// reduce6's last warp: shuffles under an if the first warp takes\n"
    "__global__ void tail_warp(const float *in, float *out) {\n"
    "    cg::thread_block cta = cg::this_thread_block();\n"
    "    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);\n"
    "    __shared__ float sdata[128];\n"
    "    unsigned int tid = threadIdx.x;\n"
    "    float mySum = in[blockIdx.x * 128 + tid];\n"
    "    sdata[tid] = mySum;\n"
    "    cg::sync(cta);\n"
    "    if (tid < 64) sdata[tid] = mySum = mySum + sdata[tid + 64];\n"
    "    cg::sync(cta);\n"
    "    if (cta.thread_rank() < 32) {\n"
    "        mySum += sdata[tid + 32];\n"
    "        for (int offset = tile32.size() / 2; offset > 0; offset /= 2)\n"
    "            mySum += tile32.shfl_down(mySum, offset);\n"
    "    }\n"
    "    if (cta.thread_rank() == 0) out[blockIdx.x] = mySum;\n"
    "}\n"
    "// reduce7's: the warp sums' reduce among the lanes a ballot names\n"
    "__global__ void masked(const int *in, int *out) {\n"
    "    __shared__ int s[8];\n"
    "    unsigned tid = threadIdx.x;\n"
    "    int v = in[blockIdx.x * 256 + tid];\n"
    "    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);\n"
    "    if ((tid % 32) == 0) s[tid / 32] = v;\n"
    "    __syncthreads();\n"
    "    const unsigned mask = __ballot_sync(0xffffffffu, tid < 8);\n"
    "    if (tid < 8) {\n"
    "        v = s[tid];\n"
    "        for (int off = 4; off > 0; off /= 2) v += __shfl_down_sync(mask, v, off);\n"
    "    }\n"
    "    if (tid == 0) out[blockIdx.x] = v;\n"
    "}\n"
    "// groups declared auto, a scan by shfl_up, the tile's ranks\n"
    "__global__ void autos(const int *in, int *out) {\n"
    "    auto cta = cg::this_thread_block();\n"
    "    const auto tile = cg::tiled_partition<32>(cta);\n"
    "    int v = in[blockIdx.x * blockDim.x + threadIdx.x];\n"
    "    unsigned lane = tile.thread_rank();\n"
    "    for (unsigned i = 1; i < tile.num_threads(); i *= 2) {\n"
    "        const int n = tile.shfl_up(v, i);\n"
    "        if (lane >= i) v += n;\n"
    "    }\n"
    "    out[blockIdx.x * blockDim.x + threadIdx.x] = v + 1000 * tile.meta_group_rank();\n"
    "}\n"
    "// atomics on shared scalars, an array and a pointer into it: plain\n"
    "// read-modify-writes on fission; final values that no order changes\n"
    "__global__ void counts(const int *in, int *out) {\n"
    "    __shared__ int total, bits_or, bits_and, bits_xor, lowest;\n"
    "    __shared__ unsigned highest, up, down, last;\n"
    "    __shared__ int bins[16];\n"
    "    int t = threadIdx.x;\n"
    "    int *half = bins + 8;\n"
    "    if (t == 0) {\n"
    "        total = 0; bits_or = 0; bits_and = -1; bits_xor = 0; lowest = 1 << 30;\n"
    "        highest = 0; up = 0; down = 1000; last = 0;\n"
    "    }\n"
    "    if (t < 16) bins[t] = 0;\n"
    "    __syncthreads();\n"
    "    int v = in[blockIdx.x * blockDim.x + t];\n"
    "    atomicAdd(&total, v);\n"
    "    atomicSub(&total, 1);\n"
    "    atomicOr(&bits_or, v & 0xff);\n"
    "    atomicAnd(&bits_and, v | 0x100);\n"
    "    atomicXor(&bits_xor, v);\n"
    "    atomicMin(&lowest, v);\n"
    "    atomicMax(&highest, (unsigned)(v + 1000));\n"
    "    atomicInc(&up, 100000u);\n"
    "    atomicDec(&down, 2000u);\n"
    "    atomicExch(&last, 7u);\n"
    "    atomicAdd(&bins[v & 7], 1);\n"
    "    atomicAdd(half + ((v >> 3) & 7), 2);\n"
    "    __syncthreads();\n"
    "    int *o = out + 16 * blockIdx.x;\n"
    "    if (t < 16) o[t] = bins[t];\n"
    "    if (t == 0) {\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 0] = total;\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 1] = bits_or;\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 2] = bits_and;\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 3] = bits_xor;\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 4] = lowest;\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 5] = (int)highest;\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 6] = (int)up;\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 7] = (int)down;\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 8] = (int)last;\n"
    "        out[16 * gridDim.x + 10 * blockIdx.x + 9] = 1;\n"
    "    }\n"
    "}\n"
    "// cg's scans over tiles of 16\n"
    "__global__ void scans(const int *in, int *out) {\n"
    "    cg::thread_block cta = cg::this_thread_block();\n"
    "    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(cta);\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    int v = in[i];\n"
    "    int a = cg::inclusive_scan(t16, v, cg::bit_xor<int>());\n"
    "    int b = cg::exclusive_scan(t16, v);\n"
    "    out[2 * i] = a;\n"
    "    out[2 * i + 1] = b;\n"
    "}\n"
    "// the block's votes, with threads that returned before them\n"
    "__global__ void block_votes(const int *in, int *out) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    int v = in[i];\n"
    "    if (v < -90) return;\n"
    "    int c = __syncthreads_count(v > 0);\n"
    "    int a = __syncthreads_and(v > -50);\n"
    "    if (__syncthreads_or(v > 95)) out[3 * i + 2] = 1; else out[3 * i + 2] = 2;\n"
    "    out[3 * i] = c;\n"
    "    out[3 * i + 1] = a;\n"
    "}\n"
    "// atomics in __device__ helpers given shared memory, as histogram256's\n"
    "// addWord and addByte\n"
    "__device__ void add_byte(unsigned *warp_hist, unsigned b) { atomicAdd(warp_hist + b, 1u); }\n"
    "__device__ void add_word(unsigned *warp_hist, unsigned w) {\n"
    "    add_byte(warp_hist, w & 0xffu);\n"
    "    add_byte(warp_hist, (w >> 8) & 0xffu);\n"
    "}\n"
    "__global__ void helpers(const unsigned *in, unsigned *out) {\n"
    "    __shared__ unsigned hist[2 * 256];\n"
    "    unsigned *warp_hist = hist + (threadIdx.x >> 5) * 256;\n"
    "    for (int b = threadIdx.x; b < 512; b += blockDim.x) hist[b] = 0;\n"
    "    __syncthreads();\n"
    "    unsigned w = in[blockIdx.x * blockDim.x + threadIdx.x];\n"
    "    add_word(warp_hist, w);\n"
    "    __syncthreads();\n"
    "    for (int b = threadIdx.x; b < 256; b += blockDim.x)\n"
    "        out[blockIdx.x * 256 + b] = hist[b] + hist[256 + b];\n"
    "}\n"
    "// warps taking different branches, each with its own shuffle\n"
    "__global__ void alternate(const int *in, int *out) {\n"
    "    int v = in[blockIdx.x * blockDim.x + threadIdx.x];\n"
    "    if (threadIdx.x & 32)\n"
    "        v = __shfl_xor_sync(0xffffffffu, v, 1);\n"
    "    else\n"
    "        v = __shfl_xor_sync(0xffffffffu, v, 2) * 10;\n"
    "    out[blockIdx.x * blockDim.x + threadIdx.x] = v;\n"
    "}\n";

/* Forms that keep fibers, for their path notes. */
/* Atomics on global memory stay atomic: the path note counts none. */
static const char *global_atomics = "__global__ void global_atomics(int *out) {\n"
                                    "    __shared__ int s[64];\n"
                                    "    int *p = out + 1;\n"
                                    "    s[threadIdx.x] = threadIdx.x;\n"
                                    "    __syncthreads();\n"
                                    "    atomicAdd(out, s[63 - threadIdx.x]);\n"
                                    "    atomicAdd(p, 1);\n"
                                    "}\n";

static const char *kept =
    "__global__ void divergent(float *x) {\n"
    "    float v = x[threadIdx.x];\n"
    "    if (threadIdx.x < 32) v += __shfl_down_sync(0xffffffffu, v, 1);\n"
    "    x[threadIdx.x] = v;\n"
    "}\n"
    "__global__ void synced(float *x) {\n"
    "    float v = x[threadIdx.x];\n"
    "    if (threadIdx.x < 32) { v += __shfl_xor_sync(0xffffffffu, v, 1); __syncthreads(); }\n"
    "    x[threadIdx.x] = v;\n"
    "}\n"
    "__global__ void two(float *x) {\n"
    "    float v = x[threadIdx.x];\n"
    "    v = __shfl_down_sync(0xffffffffu, v, 1) + __shfl_up_sync(0xffffffffu, v, 1);\n"
    "    x[threadIdx.x] = v;\n"
    "}\n";

static void test_paths(void **state) {
    (void)state;
    char *log = NULL;
    TEST_OK(kiln_compile_only("cpu", NULL, src, "warp.cu", NULL, &log));
    test_expect_cpu_path(log, "warp_sum", "fission", NULL);
    test_expect_cpu_path(log, "butterfly", "fission", NULL);
    test_expect_cpu_path(log, "votes", "fission", NULL);
    test_expect_cpu_path(log, "tiles", "fission", NULL);
    test_expect_cpu_path(log, "tail_warp", "fission", NULL);
    test_expect_cpu_path(log, "masked", "fission", NULL);
    test_expect_cpu_path(log, "alternate", "fission", NULL);
    test_expect_cpu_path(log, "autos", "fission", NULL);
    test_expect_cpu_path(log, "scans", "fission", NULL);
    test_expect_cpu_path(log, "block_votes", "fission", NULL);
    test_expect_cpu_path(log, "helpers", "fission", "2 shared-memory atomics without a lock");
    test_expect_cpu_path(log, "counts", "fission", "12 shared-memory atomics without a lock");
    kiln_free(log);
    log = NULL;
    TEST_OK(kiln_compile_only("cpu", NULL, global_atomics, "global.cu", NULL, &log));
    test_expect_cpu_path(log, "global_atomics", "fission", NULL);
    if (strstr(log, "atomic without") || strstr(log, "atomics without"))
        fail_msg("global atomics taken for shared ones:\n%s", log);
    kiln_free(log);
    log = NULL;
    TEST_OK(kiln_compile_only("cpu", NULL, kept, "kept.cu", NULL, &log));
    test_expect_cpu_path(log, "divergent", "fission", NULL);
    test_expect_cpu_path(log, "synced", "fibers", "__syncthreads under an if whose condition is not uniform");
    test_expect_cpu_path(log, "two", "fibers",
                         "two warp functions in one statement (at '__shfl_down_sync', line 13)");
    kiln_free(log);
    log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "warp.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING) TEST_OK(s);
    kiln_free(log);
}

/* Runs kernel `name` built with `options` (NULL or -DKILN_CPU_FIBERS) on
 * `blocks` blocks of `block`; in and out of the given element size. */
static void *run(kiln_context *ctx, const char *options, const char *name, kiln_dtype in_type,
                 kiln_dtype out_type, size_t esize, const void *in, size_t n_in, size_t n_out, int blocks,
                 kiln_dim3 block, const kiln_value *extra, int nextra) {
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "warp.cu", options, &m));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, name, &k));
    int64_t ni = (int64_t)n_in, no = (int64_t)n_out;
    kiln_array *a = NULL, *o = NULL;
    TEST_OK(kiln_array_from_host(ctx, in_type, 1, &ni, in, n_in * esize, &a));
    TEST_OK(kiln_array_zeros(ctx, out_type, 1, &no, &o));
    kiln_value args[3] = {kiln_arr(a), kiln_arr(o)};
    for (int i = 0; i < nextra; i++) args[2 + i] = extra[i];
    TEST_OK(kiln_launch(k, KILN_DIM(blocks), block, 0, NULL, args, 2 + nextra));
    void *out = malloc(n_out * esize);
    TEST_OK(kiln_array_to_host(o, out, n_out * esize));
    kiln_array_release(a);
    kiln_array_release(o);
    kiln_kernel_release(k);
    kiln_module_release(m);
    return out;
}

/* Both paths' outputs, compared to each other bit for bit and to want. */
static void check(kiln_context *ctx, const char *name, kiln_dtype in_type, kiln_dtype out_type, size_t esize,
                  const void *in, size_t n_in, size_t n_out, int blocks, kiln_dim3 block,
                  const kiln_value *extra, int nextra, const void *want) {
    char *fis = run(ctx, NULL, name, in_type, out_type, esize, in, n_in, n_out, blocks, block, extra, nextra);
    char *fib = run(ctx, "-DKILN_CPU_FIBERS", name, in_type, out_type, esize, in, n_in, n_out, blocks, block,
                    extra, nextra);
    for (size_t i = 0; i < n_out; i++) {
        if (memcmp(fis + i * esize, fib + i * esize, esize) != 0)
            fail_msg("%s: element %zu differs between fission and fibers", name, i);
        if (memcmp(fis + i * esize, (const char *)want + i * esize, esize) != 0)
            fail_msg("%s: element %zu differs from the host reference", name, i);
    }
    free(fis);
    free(fib);
}

/* Lane l of the warp that holds thread t of a block of n threads reads
 * thread src (own value past the block's end), as CUDA's and kiln's
 * shuffles do. */
static int lane_src(int t, int n, int from) {
    int at = (t & ~31) + from;
    return at < n ? at : t;
}

static void test_warp_sum(void **state) {
    enum { BX = 16, BY = 6, N = BX * BY, BLOCKS = 3 };
    float in[N * BLOCKS], want[N * BLOCKS];
    test_rng r = test_rng_for("fission_warp_sum");
    test_fill_f32(&r, in, N * BLOCKS, -4, 4);
    for (int b = 0; b < BLOCKS; b++) {
        float v[N], s[32];
        memcpy(v, in + b * N, sizeof v);
        for (int off = 16; off > 0; off /= 2) {
            float o[N];
            for (int t = 0; t < N; t++) {
                int lane = t & 31, sl = lane + off;
                o[t] = v[lane_src(t, N, (sl & ~31) == (lane & ~31) ? sl : lane)];
            }
            for (int t = 0; t < N; t++) v[t] += o[t];
        }
        for (int t = 0; t < N; t++)
            if ((t & 31) == 0) s[t >> 5] = v[t];
        for (int t = 0; t < N; t++) want[b * N + t] = s[t >> 5] + v[lane_src(t, N, 3)];
    }
    check(*state, "warp_sum", KILN_FLOAT32, KILN_FLOAT32, sizeof(float), in, N * BLOCKS, N * BLOCKS, BLOCKS,
          KILN_DIM(BX, BY), NULL, 0, want);
}

/* A block of `partial` threads (a last warp of fewer than 32) on the CPU;
 * on a GPU a warp function whose mask names lanes past the block's end is
 * undefined, so there the block is `whole` (a multiple of 32). */
static int threads_for(kiln_context *ctx, int partial, int whole) {
    kiln_device_info info;
    TEST_OK(kiln_device_info_get(ctx, &info));
    return info.compute_major == 0 ? partial : whole;
}

static void test_butterfly(void **state) {
    enum { MAX = 96, BLOCKS = 2, UP = 5 };
    const int N = threads_for(*state, 80, MAX);
    double in[MAX * BLOCKS], want[MAX * BLOCKS];
    test_rng r = test_rng_for("fission_warp_butterfly");
    test_fill_f64(&r, in, N * BLOCKS, -1, 1);
    for (int b = 0; b < BLOCKS; b++) {
        double v[MAX], o[MAX];
        memcpy(v, in + b * N, (size_t)N * sizeof *v);
        for (int m = 1; m < 16; m <<= 1) {
            for (int t = 0; t < N; t++) {
                int lane = t & 31, s = lane ^ m;
                o[t] = v[lane_src(t, N, (s & ~15) == (lane & ~15) ? s : lane)];
            }
            for (int t = 0; t < N; t++) v[t] = v[t] * 0.5 + o[t];
        }
        for (int t = 0; t < N; t++) {
            int lane = t & 31, s = lane - UP;
            o[t] = v[lane_src(t, N, s >= 0 ? s : lane)];
        }
        for (int t = 0; t < N; t++) want[b * N + t] = v[t] - o[t];
    }
    kiln_value extra[] = {kiln_i32(UP)};
    check(*state, "butterfly", KILN_FLOAT64, KILN_FLOAT64, sizeof(double), in, (size_t)N * BLOCKS,
          (size_t)N * BLOCKS, BLOCKS, KILN_DIM(N), extra, 1, want);
}

/* Lanes of t's warp whose x satisfies p, one bit each. */
static unsigned lanes_where(const int *x, int t, int n, int lo, int below) {
    unsigned bits = 0;
    for (int i = t & ~31; i < (t & ~31) + 32 && i < n; i++)
        if (below ? x[i] <= lo : x[i] > lo) bits |= 1u << (i & 31);
    return bits;
}

static void test_votes(void **state) {
    enum { MAX = 128, BLOCKS = 3 };
    const int N = threads_for(*state, 100, MAX);
    int in[MAX * BLOCKS];
    unsigned want[4 * MAX * BLOCKS];
    test_rng r = test_rng_for("fission_warp_votes");
    for (int i = 0; i < N * BLOCKS; i++) in[i] = (int)test_uniform(&r, -50, 50);
    in[N + 40] = -48; /* one warp where not all are above -45 */
    for (int b = 0; b < BLOCKS; b++)
        for (int t = 0; t < N; t++) {
            const int *x = in + b * N;
            unsigned *o = want + 4 * (b * N + t);
            o[0] = lanes_where(x, t, N, 0, 0);
            o[1] = lanes_where(x, t, N, 40, 0) != 0;
            o[2] = lanes_where(x, t, N, -45, 1) == 0;
            o[3] = 0xffffffffu;
        }
    check(*state, "votes", KILN_INT32, KILN_UINT32, sizeof(unsigned), in, (size_t)N * BLOCKS,
          (size_t)4 * N * BLOCKS, BLOCKS, KILN_DIM(N), NULL, 0, want);
}

static void test_tiles(void **state) {
    enum { N = 96, BLOCKS = 2 };
    int in[N * BLOCKS], want[4 * N * BLOCKS];
    test_rng r = test_rng_for("fission_warp_tiles");
    for (int i = 0; i < N * BLOCKS; i++) in[i] = (int)test_uniform(&r, -100, 100);
    for (int b = 0; b < BLOCKS; b++) {
        const int *x = in + b * N;
        int hist[16] = {0}, v[N], red[N];
        for (int t = 0; t < N; t++) {
            hist[(x[t] >> 3) & 7] += 1;
            hist[(x[t] & 7) + 8] += 2;
        }
        for (int t = 0; t < N; t++) {
            red[t] = 0;
            for (int i = t & ~31; i < (t & ~31) + 32; i++) red[t] += x[i];
            v[t] = 0;
            for (int i = t & ~31; i <= t; i++) v[t] += x[i];
        }
        for (int t = 0; t < N; t++) {
            int *o = want + 4 * (b * N + t);
            unsigned b8 = 0;
            for (int i = t & ~7; i < (t & ~7) + 8; i++) b8 |= (unsigned)(v[i] & 1) << (i & 7);
            int s = (t & 31) + 3, d8 = v[(s & ~7) == ((t & 31) & ~7) ? (t & ~31) + s : t];
            o[0] = v[t] + hist[t & 15];
            o[1] = red[t];
            o[2] = (int)b8 + 1000;
            o[3] = d8;
        }
    }
    check(*state, "tiles", KILN_INT32, KILN_INT32, sizeof(int), in, N * BLOCKS, 4 * N * BLOCKS, BLOCKS,
          KILN_DIM(N), NULL, 0, want);
}

/* The shuffle-down tree of a warp's 32 values: lane 0's sum. */
static float warp_tree(float *v) {
    for (int off = 16; off > 0; off /= 2) {
        float o[32];
        for (int l = 0; l < 32; l++) o[l] = l + off < 32 ? v[l + off] : v[l];
        for (int l = 0; l < 32; l++) v[l] += o[l];
    }
    return v[0];
}

static void test_tail_warp(void **state) {
    enum { N = 128, BLOCKS = 5 };
    float in[N * BLOCKS], want[BLOCKS];
    test_rng r = test_rng_for("fission_warp_tail");
    test_fill_f32(&r, in, N * BLOCKS, -2, 2);
    for (int b = 0; b < BLOCKS; b++) {
        const float *x = in + b * N;
        float v[32];
        for (int t = 0; t < 32; t++) v[t] = (x[t] + x[t + 64]) + (x[t + 32] + x[t + 96]);
        want[b] = warp_tree(v);
    }
    check(*state, "tail_warp", KILN_FLOAT32, KILN_FLOAT32, sizeof(float), in, N * BLOCKS, BLOCKS, BLOCKS,
          KILN_DIM(N), NULL, 0, want);
}

static void test_masked(void **state) {
    enum { N = 256, BLOCKS = 4 };
    int in[N * BLOCKS], want[BLOCKS];
    test_rng r = test_rng_for("fission_warp_masked");
    for (int i = 0; i < N * BLOCKS; i++) in[i] = (int)test_uniform(&r, -1000, 1000);
    for (int b = 0; b < BLOCKS; b++) {
        want[b] = 0;
        for (int t = 0; t < N; t++) want[b] += in[b * N + t];
    }
    check(*state, "masked", KILN_INT32, KILN_INT32, sizeof(int), in, N * BLOCKS, BLOCKS, BLOCKS, KILN_DIM(N),
          NULL, 0, want);
}

static void test_alternate(void **state) {
    enum { N = 128, BLOCKS = 2 };
    int in[N * BLOCKS], want[N * BLOCKS];
    test_rng r = test_rng_for("fission_warp_alternate");
    for (int i = 0; i < N * BLOCKS; i++) in[i] = (int)test_uniform(&r, -1000, 1000);
    for (int i = 0; i < N * BLOCKS; i++) want[i] = (i % N) & 32 ? in[i ^ 1] : in[i ^ 2] * 10;
    check(*state, "alternate", KILN_INT32, KILN_INT32, sizeof(int), in, N * BLOCKS, N * BLOCKS, BLOCKS,
          KILN_DIM(N), NULL, 0, want);
}

static void test_autos(void **state) {
    enum { N = 96, BLOCKS = 2 };
    int in[N * BLOCKS], want[N * BLOCKS];
    test_rng r = test_rng_for("fission_warp_autos");
    for (int i = 0; i < N * BLOCKS; i++) in[i] = (int)test_uniform(&r, -1000, 1000);
    for (int i = 0; i < N * BLOCKS; i++) {
        int t = i % N, sum = 0;
        for (int k = i - (t & 31); k <= i; k++) sum += in[k];
        want[i] = sum + 1000 * (t / 32);
    }
    check(*state, "autos", KILN_INT32, KILN_INT32, sizeof(int), in, N * BLOCKS, N * BLOCKS, BLOCKS,
          KILN_DIM(N), NULL, 0, want);
}

static void test_counts(void **state) {
    enum { N = 64, BLOCKS = 3 };
    int in[N * BLOCKS], want[26 * BLOCKS];
    test_rng r = test_rng_for("fission_warp_counts");
    for (int i = 0; i < N * BLOCKS; i++) in[i] = (int)test_uniform(&r, -500, 500);
    for (int b = 0; b < BLOCKS; b++) {
        const int *x = in + b * N;
        int *bins = want + 16 * b, *o = want + 16 * BLOCKS + 10 * b;
        int total = 0, bor = 0, band = -1, bxor = 0, lowest = 1 << 30;
        unsigned highest = 0;
        memset(bins, 0, 16 * sizeof *bins);
        for (int t = 0; t < N; t++) {
            total += x[t] - 1;
            bor |= x[t] & 0xff;
            band &= x[t] | 0x100;
            bxor ^= x[t];
            if (x[t] < lowest) lowest = x[t];
            if ((unsigned)(x[t] + 1000) > highest) highest = (unsigned)(x[t] + 1000);
            bins[x[t] & 7] += 1;
            bins[8 + ((x[t] >> 3) & 7)] += 2;
        }
        int vals[10] = {total, bor, band, bxor, lowest, (int)highest, N, 1000 - N, 7, 1};
        memcpy(o, vals, sizeof vals);
    }
    check(*state, "counts", KILN_INT32, KILN_INT32, sizeof(int), in, N * BLOCKS, 26 * BLOCKS, BLOCKS,
          KILN_DIM(N), NULL, 0, want);
}

static void test_scans(void **state) {
    enum { N = 64, BLOCKS = 2 };
    int in[N * BLOCKS], want[2 * N * BLOCKS];
    test_rng r = test_rng_for("fission_warp_scans");
    for (int i = 0; i < N * BLOCKS; i++) in[i] = (int)test_uniform(&r, -1000, 1000);
    for (int i = 0; i < N * BLOCKS; i++) {
        int a = 0, b = 0;
        for (int k = i & ~15; k <= i; k++) a ^= in[k];
        for (int k = i & ~15; k < i; k++) b += in[k];
        want[2 * i] = a;
        want[2 * i + 1] = b;
    }
    check(*state, "scans", KILN_INT32, KILN_INT32, sizeof(int), in, N * BLOCKS, 2 * N * BLOCKS, BLOCKS,
          KILN_DIM(N), NULL, 0, want);
}

static void test_block_votes(void **state) {
    enum { N = 64, BLOCKS = 4 };
    int in[N * BLOCKS], want[3 * N * BLOCKS];
    test_rng r = test_rng_for("fission_warp_block_votes");
    for (int i = 0; i < N * BLOCKS; i++) in[i] = (int)test_uniform(&r, -100, 100);
    for (int t = 0; t < N; t++) in[N + t] = (in[N + t] + 100) % 100 - 40; /* block 1: all in [-40, 60) */
    for (int b = 0; b < BLOCKS; b++) {
        int count = 0, all = 1, any = 0;
        for (int t = 0; t < N; t++) {
            int v = in[b * N + t];
            if (v < -90) continue;
            count += v > 0;
            all &= v > -50;
            any |= v > 95;
        }
        for (int t = 0; t < N; t++) {
            int i = b * N + t, alive = in[i] >= -90;
            want[3 * i] = alive ? count : 0;
            want[3 * i + 1] = alive ? all : 0;
            want[3 * i + 2] = alive ? (any ? 1 : 2) : 0;
        }
    }
    check(*state, "block_votes", KILN_INT32, KILN_INT32, sizeof(int), in, N * BLOCKS, 3 * N * BLOCKS, BLOCKS,
          KILN_DIM(N), NULL, 0, want);
}

static void test_helpers(void **state) {
    enum { N = 64, BLOCKS = 3 };
    unsigned in[N * BLOCKS], want[256 * BLOCKS];
    test_rng r = test_rng_for("fission_warp_helpers");
    for (int i = 0; i < N * BLOCKS; i++) in[i] = (unsigned)test_uniform(&r, 0, 65536);
    memset(want, 0, sizeof want);
    for (int i = 0; i < N * BLOCKS; i++) {
        want[(i / N) * 256 + (in[i] & 0xffu)]++;
        want[(i / N) * 256 + ((in[i] >> 8) & 0xffu)]++;
    }
    check(*state, "helpers", KILN_UINT32, KILN_UINT32, sizeof(unsigned), in, N * BLOCKS, 256 * BLOCKS, BLOCKS,
          KILN_DIM(N), NULL, 0, want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),   cmocka_unit_test(test_warp_sum),  cmocka_unit_test(test_butterfly),
        cmocka_unit_test(test_votes),   cmocka_unit_test(test_tiles),     cmocka_unit_test(test_tail_warp),
        cmocka_unit_test(test_masked),  cmocka_unit_test(test_alternate), cmocka_unit_test(test_autos),
        cmocka_unit_test(test_counts),  cmocka_unit_test(test_scans),     cmocka_unit_test(test_block_votes),
        cmocka_unit_test(test_helpers),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
