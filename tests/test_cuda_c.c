/* test_cuda_c.c: CUDA C written for nvcc runs unchanged on both backends,
 * with the same options: kernels from NVIDIA's cuda-samples
 * (tests/corpus/cuda-samples, licence headers kept) that include
 * <cooperative_groups.h>, and kiln's cooperative-groups kernel file
 * (tests/corpus/kiln_cg_groups.cu), each against a plain C reference. On
 * CUDA the toolkit's own headers are used; on the CPU, kiln's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static kiln_module *corpus_module(kiln_context *ctx, const char *file, const char *options) {
    const char *root = getenv("KILN_SOURCE_DIR");
    if (!root) fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/corpus/%s", root, file);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_file(ctx, path, options, &m));
    return m;
}

static kiln_array *ints(kiln_context *ctx, const int *v, int64_t n) {
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &n, v, sizeof(int) * (size_t)n, &a));
    return a;
}

static kiln_array *zeros(kiln_context *ctx, kiln_dtype dtype, int64_t n) {
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, dtype, 1, &n, &a));
    return a;
}

/* cuda-samples scalarProd: block reduction with cg::sync(cta). */
static void sample_scalar_prod(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = corpus_module(ctx, "cuda-samples/scalarProd_kernel.cuh", NULL);
    enum { VN = 8, EN = 2048 };
    test_rng rng = test_rng_for("scalarProd");
    float *a = malloc(sizeof(float) * VN * EN), *b = malloc(sizeof(float) * VN * EN);
    test_fill_f32(&rng, a, VN * EN, -1, 1);
    test_fill_f32(&rng, b, VN * EN, -1, 1);
    int64_t n = VN * EN, vn = VN;
    kiln_array *A = NULL, *B = NULL, *C = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, a, sizeof(float) * VN * EN, &A));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, b, sizeof(float) * VN * EN, &B));
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &vn, &C));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "scalarProdGPU", &k));
    TEST_OK(kiln_launch(k, KILN_DIM(4), KILN_DIM(256), 0, NULL,
                        KILN_ARGS(kiln_arr(C), kiln_arr(A), kiln_arr(B), kiln_i32(VN), kiln_i32(EN))));
    float c[VN];
    TEST_OK(kiln_array_to_host(C, c, sizeof c));
    double ref[VN];
    for (int v = 0; v < VN; v++) {
        ref[v] = 0;
        for (int e = 0; e < EN; e++) ref[v] += (double)a[v * EN + e] * b[v * EN + e];
    }
    assert_true(test_max_rel_err_f32(c, ref, VN, 1e-4, 1e-4) <= 1);
    kiln_kernel_release(k);
    kiln_array_release(A);
    kiln_array_release(B);
    kiln_array_release(C);
    kiln_module_release(m);
    free(a);
    free(b);
}

/* cuda-samples dwtHaar1D: a whole Haar decomposition in one block, extern
 * __shared__ memory, cg::sync(cta) inside a loop; its constants come as -D
 * options, the same on both backends. */
static void sample_dwt_haar(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = corpus_module(ctx, "cuda-samples/dwtHaar1D_kernel.cuh",
                                   "-DINV_SQRT_2=0.70710678118654752440f -DLOG_NUM_BANKS=4");
    enum { BDIM = 256, LEN = 2 * BDIM, LEVELS = 9 };
    float x[LEN];
    test_rng rng = test_rng_for("dwtHaar1D");
    test_fill_f32(&rng, x, LEN, -1, 1);
    int64_t len = LEN, one = 1;
    kiln_array *in = NULL, *out = NULL, *approx = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &len, x, sizeof x, &in));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &len, &out));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &one, &approx));
    kiln_kernel *init = NULL, *dwt = NULL;
    TEST_OK(kiln_module_kernel(m, "initValue", &init));
    TEST_OK(kiln_module_kernel(m, "dwtHaar1D", &dwt));
    TEST_OK(kiln_launch(init, KILN_DIM(2), KILN_DIM(BDIM), 0, NULL, KILN_ARGS(kiln_arr(out), kiln_f32(0))));
    TEST_OK(kiln_launch(dwt, KILN_DIM(1), KILN_DIM(BDIM), 2 * LEN * sizeof(float), NULL,
                        KILN_ARGS(kiln_arr(in), kiln_arr(out), kiln_arr(approx), kiln_u32(LEVELS),
                                  kiln_u32(BDIM), kiln_i32(BDIM))));
    float got[LEN], got_approx;
    TEST_OK(kiln_array_to_host(out, got, sizeof got));
    TEST_OK(kiln_array_to_host(approx, &got_approx, sizeof got_approx));
    /* Mallat order: od[half + k] holds the details of the level whose
     * approximation has `half` values. */
    double a[LEN], ref[LEN] = {0};
    for (int i = 0; i < LEN; i++) a[i] = x[i];
    const double r = 0.70710678118654752440;
    for (int n = LEN; n > 1; n /= 2) {
        for (int k = 0; k < n / 2; k++) {
            ref[n / 2 + k] = (a[2 * k] - a[2 * k + 1]) * r;
            a[k] = (a[2 * k] + a[2 * k + 1]) * r;
        }
    }
    assert_true(test_max_rel_err_f32(got + 1, ref + 1, LEN - 1, 1e-5, 1e-4) <= 1);
    assert_true(fabs(got_approx - a[0]) <= 1e-4 * (1 + fabs(a[0])));
    kiln_kernel_release(init);
    kiln_kernel_release(dwt);
    kiln_array_release(in);
    kiln_array_release(out);
    kiln_array_release(approx);
    kiln_module_release(m);
}

/* What each thread of a tile of n threads must see (kiln_cg_groups.cu's
 * tile_ops), from the block's values v. */
static void check_tile(const int *v, const int *o, int threads, int n, int block_dim) {
    for (int g = 0; g < threads; g++) {
        int rank = g % block_dim, lane = rank % n, base = g - lane;
        const int *t = v + base, *r = o + 19 * g;
        int sum = 0, mn = t[0], mx = t[0], and_ = t[0], or_ = 0, xor_ = 0, any = 0, all = 1, incl = 0,
            excl = 0;
        unsigned ballot = 0;
        for (int j = 0; j < n; j++) {
            sum += t[j];
            mn = t[j] < mn ? t[j] : mn;
            mx = t[j] > mx ? t[j] : mx;
            and_ &= t[j];
            or_ |= t[j];
            xor_ ^= t[j];
            ballot |= (unsigned)(t[j] & 1) << j;
            any |= t[j] > 90;
            all &= t[j] >= 0;
            if (j <= lane) incl += t[j];
            if (j < lane) excl += t[j];
        }
        int expect[19] = {sum,
                          mn,
                          mx,
                          and_,
                          or_,
                          xor_,
                          t[1 % n],
                          lane + 1 < n ? t[lane + 1] : t[lane],
                          lane >= 2 ? t[lane - 2] : t[lane],
                          t[lane ^ (n > 1 ? 1 : 0)],
                          (int)ballot,
                          any,
                          all,
                          lane,
                          rank / n,
                          (block_dim + n - 1) / n,
                          incl,
                          excl,
                          n};
        for (int e = 0; e < 19; e++) {
            int got = (e == 11 || e == 12) ? r[e] != 0 : r[e];
            if (e == 17 && lane == 0) continue; /* CUDA leaves the first exclusive result unspecified */
            if (got != expect[e])
                fail_msg("tile of %d, thread %d, value %d: got %d, expected %d", n, g, e, got, expect[e]);
        }
    }
}

static void cg_tiles(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = corpus_module(ctx, "kiln_cg_groups.cu", NULL);
    enum { BLOCKS = 2, BD = 64, N = BLOCKS * BD };
    int v[N];
    test_rng rng = test_rng_for("cg_tiles");
    for (int i = 0; i < N; i++) v[i] = (int)test_uniform(&rng, 0, 100);
    kiln_array *in = ints(ctx, v, N), *o4 = zeros(ctx, KILN_INT32, 19 * N),
               *o16 = zeros(ctx, KILN_INT32, 19 * N), *o32 = zeros(ctx, KILN_INT32, 19 * N);
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "tiles", &k));
    TEST_OK(kiln_launch(k, KILN_DIM(BLOCKS), KILN_DIM(BD), 0, NULL,
                        KILN_ARGS(kiln_arr(in), kiln_arr(o4), kiln_arr(o16), kiln_arr(o32))));
    int *r = malloc(sizeof(int) * 19 * N);
    TEST_OK(kiln_array_to_host(o4, r, sizeof(int) * 19 * N));
    check_tile(v, r, N, 4, BD);
    TEST_OK(kiln_array_to_host(o16, r, sizeof(int) * 19 * N));
    check_tile(v, r, N, 16, BD);
    TEST_OK(kiln_array_to_host(o32, r, sizeof(int) * 19 * N));
    check_tile(v, r, N, 32, BD);
    free(r);
    kiln_kernel_release(k);
    kiln_array_release(in);
    kiln_array_release(o4);
    kiln_array_release(o16);
    kiln_array_release(o32);
    kiln_module_release(m);
}

static void cg_block_and_coalesced(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = corpus_module(ctx, "kiln_cg_groups.cu", NULL);
    enum { BLOCKS = 3, BD = 64, N = BLOCKS * BD };
    kiln_array *info = zeros(ctx, KILN_INT32, 8 * N);
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "block_info", &k));
    TEST_OK(kiln_launch(k, KILN_DIM(BLOCKS), KILN_DIM(16, 4), 0, NULL, KILN_ARGS(kiln_arr(info))));
    int *r = malloc(sizeof(int) * 8 * N);
    TEST_OK(kiln_array_to_host(info, r, sizeof(int) * 8 * N));
    for (int g = 0; g < N; g++) {
        int rank = g % BD, b = g / BD;
        int expect[8] = {rank, BD, b, rank % 16, rank / 16, 1604, rank % 8, g};
        for (int e = 0; e < 8; e++)
            if (r[8 * g + e] != expect[e])
                fail_msg("thread %d, value %d: got %d, expected %d", g, e, r[8 * g + e], expect[e]);
    }
    free(r);
    kiln_kernel_release(k);
    kiln_array_release(info);

    enum { M = 1000 };
    int src[M], positives = 0;
    test_rng rng = test_rng_for("coalesced");
    for (int i = 0; i < M; i++) {
        src[i] = (int)test_uniform(&rng, -50, 50);
        positives += src[i] > 0;
    }
    kiln_array *s = ints(ctx, src, M), *dst = zeros(ctx, KILN_INT32, M), *count = zeros(ctx, KILN_INT32, 1);
    TEST_OK(kiln_module_kernel(m, "filter_positive", &k));
    TEST_OK(kiln_launch(k, KILN_DIM((M + 127) / 128), KILN_DIM(128), 0, NULL,
                        KILN_ARGS(kiln_arr(dst), kiln_arr(count), kiln_arr(s), kiln_i32(M))));
    int got_count = 0, got[M];
    TEST_OK(kiln_array_to_host(count, &got_count, sizeof got_count));
    TEST_OK(kiln_array_to_host(dst, got, sizeof got));
    assert_int_equal(got_count, positives);
    /* the same values, in whatever order the groups took their slots */
    long long hist_ref[51] = {0}, hist[51] = {0};
    for (int i = 0; i < M; i++)
        if (src[i] > 0) hist_ref[src[i]]++;
    for (int i = 0; i < got_count; i++) {
        assert_true(got[i] > 0 && got[i] <= 50);
        hist[got[i]]++;
    }
    assert_memory_equal(hist, hist_ref, sizeof hist);
    kiln_kernel_release(k);
    kiln_array_release(s);
    kiln_array_release(dst);
    kiln_array_release(count);
    kiln_module_release(m);
}

/* this_grid().sync() under kiln_launch_cooperative: every block resident,
 * on CUDA and on the CPU; on the CPU a grid sync across blocks of a plain
 * launch faults, naming the reason (in a context of its own, as a fault
 * kills it). */
static void cg_grid_sync(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    int cpu = strcmp(test_target(), "cpu") == 0;
    kiln_module *m = corpus_module(ctx, "kiln_cg_groups.cu", NULL);
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, "grid_phases", &k));
    enum { N = 128 };
    kiln_array *data = zeros(ctx, KILN_INT32, 4 * N), *out = zeros(ctx, KILN_INT32, 4 * N);
    TEST_OK(kiln_launch_cooperative(k, KILN_DIM(1), KILN_DIM(N), 0, NULL,
                                    KILN_ARGS(kiln_arr(data), kiln_arr(out))));
    int got[4 * N];
    kiln_array *head = NULL;
    TEST_OK(kiln_array_slice(out, 0, 0, N, 1, &head));
    TEST_OK(kiln_array_to_host(head, got, sizeof(int) * N));
    for (int i = 0; i < N; i++) assert_int_equal(got[i], N - 1 - i);
    kiln_status four = kiln_launch_cooperative(k, KILN_DIM(4), KILN_DIM(N), 0, NULL,
                                               KILN_ARGS(kiln_arr(data), kiln_arr(out)));
    TEST_OK(four);
    TEST_OK(kiln_array_to_host(out, got, sizeof got));
    for (int i = 0; i < 4 * N; i++) assert_int_equal(got[i], 4 * N - 1 - i);
    if (cpu)
        TEST_FAILS_WITH(
            kiln_launch(k, KILN_DIM(4), KILN_DIM(N), 0, NULL, KILN_ARGS(kiln_arr(data), kiln_arr(out))),
            KILN_ERR_DEVICE_FAULT, "grid-wide barrier needs every block resident at once");
    kiln_array_release(head);
    kiln_array_release(data);
    kiln_array_release(out);
    kiln_kernel_release(k);
    kiln_module_release(m);
    kiln_close(ctx);
}

/* Rounds of block sums through grid syncs: each block reduces its slice
 * (scaled per round) in static shared memory into partial[block], then
 * every thread of every block reads all partials, and a second grid sync
 * keeps the next round from overwriting a partial before everyone read it.
 * Shared memory must be per block and the grid sync a fence for this to
 * come out right. */
static const char grid_rounds_src[] =
    "#include <cooperative_groups.h>\n"
    "namespace cg = cooperative_groups;\n"
    "__global__ void grid_rounds(const int *x, int *partial, long long *out, int rounds) {\n"
    "    __shared__ int slice[256];\n"
    "    cg::grid_group grid = cg::this_grid();\n"
    "    unsigned t = threadIdx.x, b = blockIdx.x, nb = gridDim.x, bd = blockDim.x;\n"
    "    for (int r = 0; r < rounds; r++) {\n"
    "        slice[t] = x[b * bd + t] * (r + 1) + r;\n"
    "        __syncthreads();\n"
    "        if (t == 0) {\n"
    "            int sum = 0;\n"
    "            for (unsigned i = 0; i < bd; i++) sum += slice[i];\n"
    "            partial[b] = sum;\n"
    "        }\n"
    "        grid.sync();\n"
    "        long long total = 0;\n"
    "        for (unsigned i = 0; i < nb; i++) total += partial[(i + b + t) % nb];\n"
    "        out[((unsigned long long)r * nb + b) * bd + t] = total;\n"
    "        grid.sync();\n"
    "    }\n"
    "}\n"
    "// Block 0's threads all return; the others wait at a grid sync.\n"
    "__global__ void grid_leave(int *out) {\n"
    "    if (blockIdx.x == 0) return;\n"
    "    cg::this_grid().sync();\n"
    "    out[blockIdx.x] = 1;\n"
    "}\n"
    "// Block 1 traps while the others wait at a grid sync.\n"
    "__global__ void grid_trap(int *out) {\n"
    "    if (blockIdx.x == 1 && threadIdx.x == 3) __trap();\n"
    "    cg::this_grid().sync();\n"
    "    out[blockIdx.x] = 1;\n"
    "}\n";

static void cg_grid_sync_blocks(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = NULL;
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_from_source(ctx, grid_rounds_src, "grid_rounds.cu", NULL, &m));
    TEST_OK(kiln_module_kernel(m, "grid_rounds", &k));
    static const unsigned block_counts[] = {1, 2, 7, 64}, block_sizes[] = {32, 96, 256};
    enum { ROUNDS = 3, MAX_THREADS = 64 * 256 };
    static int x[MAX_THREADS];
    static long long got[ROUNDS * MAX_THREADS];
    test_rng rng = test_rng_for("grid_rounds");
    for (int i = 0; i < MAX_THREADS; i++) x[i] = (int)test_uniform(&rng, -100, 100);
    kiln_array *xs = ints(ctx, x, MAX_THREADS), *partial = zeros(ctx, KILN_INT32, 64);
    for (size_t c = 0; c < sizeof block_counts / sizeof *block_counts; c++)
        for (size_t z = 0; z < sizeof block_sizes / sizeof *block_sizes; z++) {
            unsigned nb = block_counts[c], bd = block_sizes[z], n = nb * bd;
            kiln_array *out = zeros(ctx, KILN_INT64, (int64_t)ROUNDS * n);
            TEST_OK(kiln_launch_cooperative(
                k, KILN_DIM(nb), KILN_DIM(bd), 0, NULL,
                KILN_ARGS(kiln_arr(xs), kiln_arr(partial), kiln_arr(out), kiln_i32(ROUNDS))));
            TEST_OK(kiln_array_to_host(out, got, sizeof(long long) * ROUNDS * n));
            for (int r = 0; r < ROUNDS; r++) {
                long long total = 0;
                for (unsigned i = 0; i < n; i++) total += (long long)x[i] * (r + 1) + r;
                for (unsigned i = 0; i < n; i++)
                    if (got[(size_t)r * n + i] != total)
                        fail_msg("%u blocks of %u threads, round %d, thread %u: %lld, expected %lld", nb, bd,
                                 r, i, got[(size_t)r * n + i], total);
            }
            kiln_array_release(out);
        }
    kiln_array_release(xs);
    kiln_array_release(partial);
    kiln_kernel_release(k);
    kiln_module_release(m);
}

/* A cooperative grid too large to keep resident is refused, saying what
 * the limit is; on the CPU, so is a block that leaves while the others
 * wait at a grid sync (a GPU hangs there), and a fault in one block while
 * others wait reports that fault, not the wait. Faults kill a context:
 * each in a context of its own. */
static void cg_grid_sync_limits(void **state) {
    (void)state;
    int cpu = strcmp(test_target(), "cpu") == 0;
    kiln_context *ctx = test_open();
    kiln_module *m = NULL;
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_from_source(ctx, grid_rounds_src, "grid_rounds.cu", NULL, &m));
    TEST_OK(kiln_module_kernel(m, "grid_rounds", &k));
    kiln_array *x = zeros(ctx, KILN_INT32, 1), *partial = zeros(ctx, KILN_INT32, 1),
               *out = zeros(ctx, KILN_INT64, 1);
    /* far more than any GPU holds at once, too */
    kiln_status s =
        kiln_launch_cooperative(k, KILN_DIM(1u << 20), KILN_DIM(1024), 0, NULL,
                                KILN_ARGS(kiln_arr(x), kiln_arr(partial), kiln_arr(out), kiln_i32(1)));
    assert_int_equal(s, KILN_ERR_LAUNCH_CONFIG);
    if (cpu) {
        assert_true(test_contains(kiln_last_error(), "at most 1024 blocks and 16384 threads in all"));
        TEST_FAILS_WITH(
            kiln_launch_cooperative(k, KILN_DIM(1025), KILN_DIM(1), 0, NULL,
                                    KILN_ARGS(kiln_arr(x), kiln_arr(partial), kiln_arr(out), kiln_i32(1))),
            KILN_ERR_LAUNCH_CONFIG, "cooperative launch of 1025 blocks of 1 threads");
        TEST_FAILS_WITH(
            kiln_launch_cooperative(k, KILN_DIM(64), KILN_DIM(512), 0, NULL,
                                    KILN_ARGS(kiln_arr(x), kiln_arr(partial), kiln_arr(out), kiln_i32(1))),
            KILN_ERR_LAUNCH_CONFIG, "(32768 threads)");
    }
    kiln_array_release(x);
    kiln_array_release(partial);
    kiln_array_release(out);
    kiln_kernel_release(k);
    if (!cpu) {
        kiln_module_release(m);
        kiln_close(ctx);
        return;
    }
    static const char *const kernels[] = {"grid_leave", "grid_trap"};
    static const char *const needles[] = {
        "block (0,0,0) all returned while other blocks wait at a grid sync",
        "in block (1,0,0), thread (3,0,0): grid_rounds.cu:30: __trap() called"};
    kiln_module_release(m);
    kiln_close(ctx);
    for (int i = 0; i < 2; i++) {
        ctx = test_open();
        TEST_OK(kiln_module_from_source(ctx, grid_rounds_src, "grid_rounds.cu", NULL, &m));
        TEST_OK(kiln_module_kernel(m, kernels[i], &k));
        out = zeros(ctx, KILN_INT32, 8);
        TEST_FAILS_WITH(
            kiln_launch_cooperative(k, KILN_DIM(8), KILN_DIM(64), 0, NULL, KILN_ARGS(kiln_arr(out))),
            KILN_ERR_DEVICE_FAULT, needles[i]);
        kiln_array_release(out);
        kiln_kernel_release(k);
        kiln_module_release(m);
        kiln_close(ctx);
    }
}

/* The toolkit's headers compile through NVRTC with no option naming them
 * (skipped where NVRTC is absent). */
static void toolkit_headers_through_nvrtc(void **state) {
    (void)state;
    static const char *src =
        "#include <cooperative_groups.h>\n"
        "#include <cooperative_groups/reduce.h>\n"
        "#include <cuda/std/cstdint>\n"
        "#include <cuda/std/limits>\n"
        "#include <cuda_fp16.h>\n"
        "#include <cuda_bf16.h>\n"
        "#include <curand_kernel.h>\n"
        "namespace cg = cooperative_groups;\n"
        "__global__ void k(float *out, unsigned long long seed) {\n"
        "    auto t = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "    curandStatePhilox4_32_10_t s;\n"
        "    curand_init(seed, threadIdx.x, 0, &s);\n"
        "    __half h = __float2half(curand_uniform(&s));\n"
        "    __nv_bfloat16 b = __float2bfloat16(1.5f);\n"
        "    cuda::std::int32_t i = cuda::std::numeric_limits<cuda::std::int32_t>::max();\n"
        "    out[threadIdx.x] = cg::reduce(t, __half2float(__hmul(h, h)) + __bfloat162float(b) + (i > 0), "
        "cg::plus<float>());\n"
        "}\n";
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "headers.cu", NULL, &log);
    kiln_free(log);
    if (s == KILN_ERR_COMPILER_MISSING) skip();
    TEST_OK(s);
    /* and the corpus, as the GPU run will compile it */
    const char *root = getenv("KILN_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/corpus/kiln_cg_groups.cu", root);
    char *text = test_read_file(path);
    assert_non_null(text);
    TEST_OK(kiln_compile_only("cuda", "sm_90", text, "kiln_cg_groups.cu", NULL, &log));
    kiln_free(log);
    free(text);
}

/* float -> binary16 / bfloat16 with round to nearest even, for the references. */
static float round_half(double v) {
    if (v != v) return (float)v;
    double a = fabs(v);
    if (a >= 65520.0) return v > 0 ? INFINITY : -INFINITY;
    int e;
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    double ulp = ldexp(1.0, (e - 11 < -24) ? -24 : e - 11);
    double q = a / ulp, r = nearbyint(q); /* nearest, ties to even */
    return (float)copysign(r * ulp, v);
}
static float round_bf16(double v) {
    float f = (float)v; /* bfloat16 keeps float's exponent */
    if (f != f || isinf(f) || f == 0) return f;
    int e;
    frexpf(f, &e);
    double ulp = ldexp(1.0, e - 8);
    return (float)(nearbyint((double)f / ulp) * ulp);
}

/* <cuda_fp16.h> and <cuda_bf16.h>: conversions and arithmetic rounded to
 * the 16-bit formats, the same bits on both backends. */
static void half_and_bfloat16(void **state) {
    kiln_context *ctx = *state;
    static const char *src = "#include <cuda_fp16.h>\n"
                             "#include <cuda_bf16.h>\n"
                             "__global__ void ops(const float *a, const float *b, float *o, int n) {\n"
                             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    if (i >= n) return;\n"
                             "    __half x = __float2half(a[i]), y = __float2half_rn(b[i]);\n"
                             "    o[0 * n + i] = __half2float(x);\n"
                             "    o[1 * n + i] = __half2float(__hadd(x, y));\n"
                             "    o[2 * n + i] = __half2float(__hmul(x, y));\n"
                             "    o[3 * n + i] = __half2float(__hfma(x, y, __float2half(0.5f)));\n"
                             "    o[4 * n + i] = __half2float(x / y);\n"
                             "    __half2 p = __floats2half2_rn(a[i], b[i]);\n"
                             "    o[5 * n + i] = __high2float(__hmul2(p, p));\n"
                             "    __nv_bfloat16 u = __float2bfloat16(a[i]), v = __float2bfloat16(b[i]);\n"
                             "    o[6 * n + i] = __bfloat162float(u);\n"
                             "    o[7 * n + i] = __bfloat162float(__hadd(u, v));\n"
                             "    o[8 * n + i] = __bfloat162float(__hmul(u, v));\n"
                             "    o[9 * n + i] = __hlt(x, y) ? 1.0f : 0.0f;\n"
                             "}\n";
    enum { N = 512, OUTS = 10 };
    float a[N], b[N];
    test_rng rng = test_rng_for("half");
    test_fill_f32(&rng, a, N, -300, 300);
    test_fill_f32(&rng, b, N, 0.01, 50);
    int64_t n = N;
    kiln_array *A = NULL, *B = NULL, *O = zeros(ctx, KILN_FLOAT32, OUTS * N);
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, a, sizeof a, &A));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, b, sizeof b, &B));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "ops", NULL, &k));
    TEST_OK(kiln_launch(k, KILN_DIM(N / 128), KILN_DIM(128), 0, NULL,
                        KILN_ARGS(kiln_arr(A), kiln_arr(B), kiln_arr(O), kiln_i32(N))));
    float *o = malloc(sizeof(float) * OUTS * N);
    TEST_OK(kiln_array_to_host(O, o, sizeof(float) * OUTS * N));
    for (int i = 0; i < N; i++) {
        double x = round_half(a[i]), y = round_half(b[i]), u = round_bf16(a[i]), v = round_bf16(b[i]);
        float expect[OUTS] = {
            (float)x,          round_half(x + y),  round_half(x * y), round_half(x * y + 0.5),
            round_half(x / y), round_half(y * y),  (float)u,          round_bf16(u + v),
            round_bf16(u * v), x < y ? 1.0f : 0.0f};
        for (int e = 0; e < OUTS; e++)
            if (o[e * N + i] != expect[e])
                fail_msg("value %d for a=%g b=%g: got %.9g, expected %.9g", e, a[i], b[i], o[e * N + i],
                         expect[e]);
    }
    free(o);
    kiln_kernel_release(k);
    kiln_array_release(A);
    kiln_array_release(B);
    kiln_array_release(O);
}

/* <curand_kernel.h> gives the numbers kiln's own cuRAND-exact generators
 * (kiln_rng_device_source, checked against cuRAND by test_random) give:
 * the toolkit's header on CUDA, kiln's on the CPU. */
static void curand_kernel_streams(void **state) {
    kiln_context *ctx = *state;
    static const char *with_header =
        "#include <curand_kernel.h>\n"
        "__global__ void draw(unsigned *u, float *f, float *g, double *d, unsigned long long seed, int n) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i >= n) return;\n"
        "    curandState s;\n"
        "    curand_init(seed, i, 3, &s);\n"
        "    curandStatePhilox4_32_10_t p;\n"
        "    curand_init(seed, i, 5, &p);\n"
        "    curandStateMRG32k3a_t m;\n"
        "    curand_init(seed, i, 0, &m);\n"
        "    u[3 * i] = curand(&s); u[3 * i + 1] = curand(&p); u[3 * i + 2] = curand(&m);\n"
        "    f[3 * i] = curand_uniform(&s); f[3 * i + 1] = curand_uniform(&p); f[3 * i + 2] = "
        "curand_uniform(&m);\n"
        "    g[3 * i] = curand_normal(&s); g[3 * i + 1] = curand_normal(&p); g[3 * i + 2] = "
        "curand_normal(&m);\n"
        "    d[2 * i] = curand_uniform_double(&s); d[2 * i + 1] = curand_uniform_double(&p);\n"
        "}\n";
    static const char *with_kiln =
        "__global__ void draw(unsigned *u, float *f, float *g, double *d, unsigned long long seed, int n,\n"
        "                     const unsigned *tables) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i >= n) return;\n"
        "    kiln_xorwow_state s;\n"
        "    kiln_curand_init_xorwow(seed, i, 3, &s, tables);\n"
        "    kiln_philox_state p;\n"
        "    kiln_curand_init_philox(seed, i, 5, &p);\n"
        "    kiln_mrg32k3a_state m;\n"
        "    kiln_curand_init_mrg32k3a(seed, i, 0, &m);\n"
        "    u[3 * i] = kiln_curand_xorwow(&s); u[3 * i + 1] = kiln_curand_philox(&p);\n"
        "    u[3 * i + 2] = kiln_curand_mrg32k3a(&m);\n"
        "    f[3 * i] = kiln_curand_uniform_xorwow(&s); f[3 * i + 1] = kiln_curand_uniform_philox(&p);\n"
        "    f[3 * i + 2] = kiln_curand_uniform_mrg32k3a(&m);\n"
        "    g[3 * i] = kiln_curand_normal_xorwow(&s); g[3 * i + 1] = kiln_curand_normal_philox(&p);\n"
        "    g[3 * i + 2] = kiln_curand_normal_mrg32k3a(&m);\n"
        "    d[2 * i] = kiln_curand_uniform_double_xorwow(&s); d[2 * i + 1] = "
        "kiln_curand_uniform_double_philox(&p);\n"
        "}\n";
    enum { N = 256 };
    size_t klen = strlen(kiln_rng_device_source()) + strlen(with_kiln) + 1;
    char *kiln_src = malloc(klen);
    snprintf(kiln_src, klen, "%s%s", kiln_rng_device_source(), with_kiln);
    kiln_kernel *a = NULL, *b = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, with_header, "draw", NULL, &a));
    TEST_OK(kiln_kernel_from_source(ctx, kiln_src, "draw", NULL, &b));
    kiln_array *tables = NULL;
    TEST_OK(kiln_rng_xorwow_tables(ctx, &tables));
    kiln_array *out[2][4];
    for (int v = 0; v < 2; v++) {
        out[v][0] = zeros(ctx, KILN_UINT32, 3 * N);
        out[v][1] = zeros(ctx, KILN_FLOAT32, 3 * N);
        out[v][2] = zeros(ctx, KILN_FLOAT32, 3 * N);
        out[v][3] = zeros(ctx, KILN_FLOAT64, 2 * N);
    }
    unsigned long long seed = 1234567ull;
    TEST_OK(kiln_launch(a, KILN_DIM(N / 64), KILN_DIM(64), 0, NULL,
                        KILN_ARGS(kiln_arr(out[0][0]), kiln_arr(out[0][1]), kiln_arr(out[0][2]),
                                  kiln_arr(out[0][3]), kiln_u64(seed), kiln_i32(N))));
    TEST_OK(kiln_launch(b, KILN_DIM(N / 64), KILN_DIM(64), 0, NULL,
                        KILN_ARGS(kiln_arr(out[1][0]), kiln_arr(out[1][1]), kiln_arr(out[1][2]),
                                  kiln_arr(out[1][3]), kiln_u64(seed), kiln_i32(N), kiln_arr(tables))));
    static unsigned u[2][3 * N];
    static float f[2][3 * N], g[2][3 * N];
    static double d[2][2 * N];
    for (int v = 0; v < 2; v++) {
        TEST_OK(kiln_array_to_host(out[v][0], u[v], sizeof u[v]));
        TEST_OK(kiln_array_to_host(out[v][1], f[v], sizeof f[v]));
        TEST_OK(kiln_array_to_host(out[v][2], g[v], sizeof g[v]));
        TEST_OK(kiln_array_to_host(out[v][3], d[v], sizeof d[v]));
    }
    assert_memory_equal(u[0], u[1], sizeof u[0]);
    assert_memory_equal(f[0], f[1], sizeof f[0]);
    assert_memory_equal(d[0], d[1], sizeof d[0]);
    for (int i = 0; i < 3 * N; i++)
        if (fabsf(g[0][i] - g[1][i]) > 2e-5f * (1 + fabsf(g[1][i])))
            fail_msg("normal %d: %.9g from <curand_kernel.h>, %.9g from kiln", i, g[0][i], g[1][i]);
    for (int v = 0; v < 2; v++)
        for (int j = 0; j < 4; j++) kiln_array_release(out[v][j]);
    kiln_array_release(tables);
    kiln_kernel_release(a);
    kiln_kernel_release(b);
    free(kiln_src);
}

/* Headers nvcc's sources include for host-side names (<stdio.h> for
 * printf, <cstddef>, <cstdint>) and clock(): the same file on every
 * backend and through NVRTC, which has no C library of its own. */
static void c_headers_and_clock(void **state) {
    kiln_context *ctx = *state;
    static const char *src = "#include <stdio.h>\n"
                             "#include <stddef.h>\n"
                             "#include <stdint.h>\n"
                             "#include <cstddef>\n"
                             "#include <cstdint>\n"
                             "__global__ void k(long long *o) {\n"
                             "    clock_t start = clock();\n"
                             "    std::size_t n = sizeof(std::int16_t) + sizeof(std::uint64_t);\n"
                             "    o[0] = (long long)n + INT32_MAX;\n"
                             "    o[1] = (unsigned)(clock() - start);\n"
                             "    if (o[0] < 0) printf(\"unreachable %lld\\n\", o[0]);\n"
                             "}\n";
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "k", NULL, &k));
    kiln_array *o = zeros(ctx, KILN_INT64, 2);
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL, KILN_ARGS(kiln_arr(o))));
    long long got[2];
    TEST_OK(kiln_array_to_host(o, got, sizeof got));
    assert_int_equal(got[0], 10 + 2147483647LL);
    /* clock() does not run backwards (as a 32-bit difference: the GPU's wraps) */
    assert_true(got[1] < 0x80000000LL);
    kiln_array_release(o);
    kiln_kernel_release(k);
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "c_headers.cu", NULL, &log);
    kiln_free(log);
    if (s != KILN_ERR_COMPILER_MISSING) TEST_OK(s);
}

/* A tile shuffle of a type wider than 8 bytes (cooperative groups takes
 * any trivially copyable type): uint4 and double2 across lanes. */
static void wide_tile_shuffles(void **state) {
    kiln_context *ctx = *state;
    static const char *src =
        "#include <cooperative_groups.h>\n"
        "namespace cg = cooperative_groups;\n"
        "__global__ void k(unsigned *u, double *d) {\n"
        "    auto tile = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "    unsigned t = threadIdx.x;\n"
        "    uint4 v = make_uint4(t, t * 10u, t * 100u, t * 1000u);\n"
        "    uint4 x = tile.shfl_xor(v, 5), y = tile.shfl_up(v, 3);\n"
        "    double2 p = make_double2(t + 0.5, -(double)t);\n"
        "    double2 q = tile.shfl_down(p, 2);\n"
        "    u[8 * t] = x.x; u[8 * t + 1] = x.y; u[8 * t + 2] = x.z; u[8 * t + 3] = x.w;\n"
        "    u[8 * t + 4] = y.x; u[8 * t + 5] = y.y; u[8 * t + 6] = y.z; u[8 * t + 7] = y.w;\n"
        "    d[2 * t] = q.x; d[2 * t + 1] = q.y;\n"
        "}\n";
    enum { N = 64 };
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "k", NULL, &k));
    kiln_array *u = zeros(ctx, KILN_UINT32, 8 * N), *d = zeros(ctx, KILN_FLOAT64, 2 * N);
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(N), 0, NULL, KILN_ARGS(kiln_arr(u), kiln_arr(d))));
    unsigned gu[8 * N];
    double gd[2 * N];
    TEST_OK(kiln_array_to_host(u, gu, sizeof gu));
    TEST_OK(kiln_array_to_host(d, gd, sizeof gd));
    for (unsigned t = 0; t < N; t++) {
        unsigned lane = t % 32, base = t - lane, x = base + (lane ^ 5), y = lane >= 3 ? t - 3 : t,
                 q = lane + 2 < 32 ? t + 2 : t;
        unsigned expect[8] = {x, x * 10, x * 100, x * 1000, y, y * 10, y * 100, y * 1000};
        for (int e = 0; e < 8; e++)
            if (gu[8 * t + e] != expect[e])
                fail_msg("thread %u, uint4 value %d: got %u, expected %u", t, e, gu[8 * t + e], expect[e]);
        assert_true(gd[2 * t] == q + 0.5 && gd[2 * t + 1] == -(double)q);
    }
    kiln_array_release(u);
    kiln_array_release(d);
    kiln_kernel_release(k);
}

/* A shuffle that one warp reaches while the rest of the block goes on to
 * __syncthreads: right on a GPU and on the CPU's loop fission (a warp
 * function among its warp's lanes); on the CPU's fiber path, where a warp
 * function waits for the whole block, the launch says so instead of pairing
 * the shuffle with the other warps' __syncthreads. A warp that shuffles
 * while the others have returned is fine everywhere. */
static void partial_block_shuffles(void **state) {
    (void)state;
    int cpu = strcmp(test_target(), "cpu") == 0;
    kiln_context *ctx = test_open();
    static const char *src = "__global__ void first_warp(const int *x, int *out) {\n"
                             "    int v = x[threadIdx.x];\n"
                             "    if (threadIdx.x < 32) v = __shfl_down_sync(0xffffffffu, v, 1);\n"
                             "    __syncthreads();\n"
                             "    out[threadIdx.x] = v;\n"
                             "}\n"
                             "__global__ void others_return(const int *x, int *out) {\n"
                             "    if (threadIdx.x >= 32) return;\n"
                             "    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, x[threadIdx.x], 1);\n"
                             "}\n";
    enum { N = 64 };
    int hx[N], got[N];
    test_rng rng = test_rng_for("partial_block_shuffles");
    for (int i = 0; i < N; i++) hx[i] = (int)test_uniform(&rng, -1000, 1000);
    kiln_module *m = NULL;
    kiln_kernel *first = NULL, *others = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "partial.cu", NULL, &m));
    TEST_OK(kiln_module_kernel(m, "first_warp", &first));
    TEST_OK(kiln_module_kernel(m, "others_return", &others));
    kiln_array *x = ints(ctx, hx, N), *out = zeros(ctx, KILN_INT32, N);
    TEST_OK(kiln_launch(first, KILN_DIM(1), KILN_DIM(N), 0, NULL, KILN_ARGS(kiln_arr(x), kiln_arr(out))));
    TEST_OK(kiln_array_to_host(out, got, sizeof got));
    for (int i = 0; i < N; i++) assert_int_equal(got[i], i < 31 ? hx[i + 1] : hx[i]);
    if (cpu) {
        kiln_module *fm = NULL;
        kiln_kernel *ff = NULL;
        TEST_OK(kiln_module_from_source(ctx, src, "partial.cu", "-DKILN_CPU_FIBERS", &fm));
        TEST_OK(kiln_module_kernel(fm, "first_warp", &ff));
        kiln_status s =
            kiln_launch(ff, KILN_DIM(1), KILN_DIM(N), 0, NULL, KILN_ARGS(kiln_arr(x), kiln_arr(out)));
        assert_int_equal(s, KILN_ERR_UNSUPPORTED);
        assert_true(test_contains(kiln_last_error(), "reached by only part of the block"));
        kiln_kernel_release(ff);
        kiln_module_release(fm);
    }
    TEST_OK(kiln_launch(others, KILN_DIM(1), KILN_DIM(N), 0, NULL, KILN_ARGS(kiln_arr(x), kiln_arr(out))));
    TEST_OK(kiln_array_to_host(out, got, sizeof got));
    for (int i = 0; i < 32; i++) assert_int_equal(got[i], i < 31 ? hx[i + 1] : hx[i]);
    kiln_array_release(x);
    kiln_array_release(out);
    kiln_kernel_release(first);
    kiln_kernel_release(others);
    kiln_module_release(m);
    kiln_close(ctx);
}

/* What a backend cannot run is refused at compile time, naming the
 * construct and its line: textures and surfaces, and kernels launching
 * kernels, on the CPU. NVRTC takes textures (kiln drops -minimal for them). */
static void unsupported_constructs(void **state) {
    (void)state;
    static const char *tex = "// a texture read\n"
                             "__global__ void k(cudaTextureObject_t t, float *o) {\n"
                             "    o[threadIdx.x] = tex1Dfetch<float>(t, threadIdx.x);\n"
                             "}\n";
    static const char *launch = "__global__ void child(int *o) { o[0] = 1; }\n"
                                "/* child<<<1, 1>>> in a comment is fine */\n"
                                "__global__ void parent(int *o) {\n"
                                "    child<<<1, 1>>>(o);\n"
                                "}\n";
    char *log = NULL;
    TEST_FAILS_WITH(kiln_compile_only("cpu", NULL, tex, "tex.cu", NULL, &log), KILN_ERR_COMPILE,
                    "tex.cu:2: error: cudaTextureObject_t: textures and surfaces are not supported");
    kiln_free(log);
    TEST_FAILS_WITH(kiln_compile_only("cpu", NULL, launch, "launch.cu", NULL, &log), KILN_ERR_COMPILE,
                    "launch.cu:4: error: a kernel launch inside device code");
    kiln_free(log);
    kiln_status s = kiln_compile_only("cuda", "sm_90", tex, "tex.cu", NULL, &log);
    kiln_free(log);
    if (s != KILN_ERR_COMPILER_MISSING) TEST_OK(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sample_scalar_prod),
        cmocka_unit_test(sample_dwt_haar),
        cmocka_unit_test(cg_tiles),
        cmocka_unit_test(cg_block_and_coalesced),
        cmocka_unit_test(cg_grid_sync),
        cmocka_unit_test(cg_grid_sync_blocks),
        cmocka_unit_test(cg_grid_sync_limits),
        cmocka_unit_test(toolkit_headers_through_nvrtc),
        cmocka_unit_test(unsupported_constructs),
        cmocka_unit_test(half_and_bfloat16),
        cmocka_unit_test(curand_kernel_streams),
        cmocka_unit_test(c_headers_and_clock),
        cmocka_unit_test(wide_tile_shuffles),
        cmocka_unit_test(partial_block_shuffles),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
