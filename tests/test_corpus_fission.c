/* test_corpus_fission.c: barrier kernels from NVIDIA's cuda-samples on
 * every backend against C references on random inputs, and on the CPU the
 * path each takes: loop fission, with the same bits as the fiber path
 * (-DKILN_CPU_FIBERS). These are the idioms real code uses: template
 * kernels, barriers inside __device__ functions, parameters advanced in the
 * body, cooperative groups' block sync, barrier loops of uniform trip count.
 *
 * Each module is the upstream files' kernel lines, cut as they stand
 * (tests/support/corpus_cuts.c says how and why). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_cuts.h"
#include "test_support.h"

static const char *source_dir(void) {
    const char *root = getenv("KILN_SOURCE_DIR");
    if (!root) fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    return root;
}

/* The module's source (tests/support/corpus_cuts.c). */
static char *module_source(int m) {
    char dir[1024], err[1200];
    snprintf(dir, sizeof dir, "%s/tests/corpus/cuda-samples", source_dir());
    char *src = corpus_module_source(dir, m, err, sizeof err);
    if (!src) fail_msg("%s", err);
    return src;
}

static int is_cpu(void) { return strcmp(test_target(), "cpu") == 0; }

typedef struct fixture {
    kiln_context *ctx;
    kiln_module *mod[M_COUNT], *fibers[M_COUNT]; /* fibers: CPU only */
} fixture;

static kiln_module *build(kiln_context *ctx, int m, int fibers) {
    char *src = module_source(m);
    char options[1200];
    snprintf(options, sizeof options, "-I%s/tests/corpus/cuda-samples/%s%s", source_dir(),
             corpus_modules[m].folder, fibers ? " -DKILN_CPU_FIBERS" : "");
    kiln_module *out = NULL;
    kiln_status s = kiln_module_from_source(ctx, src, corpus_modules[m].cuts[0].file, options, &out);
    if (s != KILN_OK)
        fail_msg("%s: %s: %s", corpus_modules[m].cuts[0].file, kiln_status_string(s), kiln_last_error());
    free(src);
    return out;
}

/* ------------------------------------------------------------ launching */

typedef struct karg {
    int scalar;
    kiln_dtype t;
    int64_t n;
    const void *init; /* n elements of t; NULL: zeros */
    kiln_value v;
} karg;
#define ARR(t, n, p)                                                                                         \
    {                                                                                                        \
        0, t, n, p, { 0 }                                                                                    \
    }
#define VAL(val)                                                                                             \
    { 1, KILN_INT32, 0, NULL, val }

/* Runs kernel k of module m on copies of the arrays; returns what each
 * array holds afterwards (NULL for scalars). */
static void **launch(kiln_context *ctx, kiln_module *m, const char *k, kiln_dim3 g, kiln_dim3 b, size_t shm,
                     const karg *args, int n) {
    kiln_array *arr[8] = {0};
    kiln_value v[8];
    void **out = calloc(8, sizeof *out);
    assert_non_null(out);
    for (int i = 0; i < n; i++) {
        if (args[i].scalar) {
            v[i] = args[i].v;
            continue;
        }
        size_t bytes = (size_t)args[i].n * kiln_dtype_size(args[i].t);
        void *zero = args[i].init ? NULL : calloc(1, bytes);
        TEST_OK(kiln_array_from_host(ctx, args[i].t, 1, &args[i].n, args[i].init ? args[i].init : zero, bytes,
                                     &arr[i]));
        free(zero);
        v[i] = kiln_arr(arr[i]);
    }
    kiln_kernel *kernel = NULL;
    TEST_OK(kiln_module_kernel(m, k, &kernel));
    kiln_status s = kiln_launch(kernel, g, b, shm, NULL, v, n);
    if (s != KILN_OK) fail_msg("%s: %s: %s", k, kiln_status_string(s), kiln_last_error());
    for (int i = 0; i < n; i++) {
        if (!arr[i]) continue;
        out[i] = test_read_array(arr[i]);
        kiln_array_release(arr[i]);
    }
    kiln_kernel_release(kernel);
    return out;
}

static void free_out(void **o) {
    for (int i = 0; i < 8; i++) free(o[i]);
    free(o);
}

/* The kernel on the fixture's target; on the CPU also on fibers, which must
 * leave every array with the same bits. */
static void **run(fixture *x, int m, const char *k, kiln_dim3 g, kiln_dim3 b, size_t shm, const karg *args,
                  int n) {
    void **got = launch(x->ctx, x->mod[m], k, g, b, shm, args, n);
    if (x->fibers[m]) {
        void **ref = launch(x->ctx, x->fibers[m], k, g, b, shm, args, n);
        for (int i = 0; i < n; i++)
            if (got[i] && memcmp(got[i], ref[i], (size_t)args[i].n * kiln_dtype_size(args[i].t)) != 0) {
                size_t e = kiln_dtype_size(args[i].t), at = 0;
                while (memcmp((char *)got[i] + at * e, (char *)ref[i] + at * e, e) == 0) at++;
                fail_msg("%s: argument %d differs between loop fission and fibers from element %zu on", k, i,
                         at);
            }
        free_out(ref);
    }
    return got;
}

static void expect_u32(const char *k, const uint32_t *got, const uint32_t *want, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: element %lld: got %u, expected %u", k, (long long)i, got[i], want[i]);
}
static void expect_f32(const char *k, const float *got, const double *want, int64_t n, double tol) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]))))
            fail_msg("%s: element %lld: got %.9g, expected %.9g", k, (long long)i, got[i], want[i]);
}

static uint32_t *random_u32(const char *seed, int64_t n, double lo, double hi) {
    test_rng r = test_rng_for(seed);
    uint32_t *a = malloc((size_t)n * sizeof *a);
    assert_non_null(a);
    for (int64_t i = 0; i < n; i++) a[i] = (uint32_t)test_uniform(&r, lo, hi);
    return a;
}
static float *random_f32(const char *seed, int64_t n, double lo, double hi, int integral) {
    test_rng r = test_rng_for(seed);
    float *a = malloc((size_t)n * sizeof *a);
    assert_non_null(a);
    for (int64_t i = 0; i < n; i++)
        a[i] = (float)(integral ? floor(test_uniform(&r, lo, hi)) : test_uniform(&r, lo, hi));
    return a;
}

#define D3(a, b, c) ((kiln_dim3){a, b, c})

/* ---------------------------------------------------------------- cases */

/* matrixMul: MatrixMulCUDA<16> and <32>, a template on the tile. Each
 * element is the chain of fused multiply-adds in k's order, as CUDA
 * contracts `Csub += As[ty][k] * Bs[k][tx]`: loop fission gives those bits
 * exactly. The fiber path is held to a tolerance only: for 32-wide tiles
 * GCC vectorises the unrolled k loop's products there and adds them one by
 * one, without the fused rounding. */
static void matrix_mul(void **state) {
    fixture *x = *state;
    enum { W = 128, H = 96 };
    float *A = random_f32("mm:A", H * W, -1, 1, 0), *B = random_f32("mm:B", W * W, -1, 1, 0);
    double *C = calloc(H * W, sizeof *C);
    for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++) {
            float c = 0;
            for (int k = 0; k < W; k++) c = fmaf(A[i * W + k], B[k * W + j], c);
            C[i * W + j] = c;
        }
    static const char *const names[] = {"MatrixMulCUDA<16>", "MatrixMulCUDA<32>"};
    for (int t = 0; t < 2; t++) {
        unsigned bs = t ? 32 : 16;
        karg a[] = {ARR(KILN_FLOAT32, H * W, NULL), ARR(KILN_FLOAT32, H * W, A), ARR(KILN_FLOAT32, W * W, B),
                    VAL(kiln_i32(W)), VAL(kiln_i32(W))};
        void **o = launch(x->ctx, x->mod[M_MATMUL], names[t], D3(W / bs, H / bs, 1), D3(bs, bs, 1), 0, a, 5);
        expect_f32(names[t], o[0], C, H * W, 0);
        free_out(o);
        if (!x->fibers[M_MATMUL]) continue;
        o = launch(x->ctx, x->fibers[M_MATMUL], names[t], D3(W / bs, H / bs, 1), D3(bs, bs, 1), 0, a, 5);
        expect_f32(names[t], o[0], C, H * W, 1e-5);
        free_out(o);
    }
    free(A), free(B), free(C);
}

/* reduce0..reduce3: block sums, templates on the element type. */
static void reductions(void **state) {
    fixture *x = *state;
    enum { N = 1 << 14, T = 256 };
    float *f = random_f32("reduce:f", N, -1, 1, 0);
    int32_t *v = (int32_t *)random_u32("reduce:i", N, 0, 1000);
    static const char *const names[] = {"reduce0<float>", "reduce1<int>", "reduce2<float>", "reduce3<int>"};
    for (int k = 0; k < 4; k++) {
        int is_int = k & 1, per = k == 3 ? 2 * T : T, blocks = N / per;
        karg a[] = {ARR(is_int ? KILN_INT32 : KILN_FLOAT32, N, is_int ? (void *)v : (void *)f),
                    ARR(is_int ? KILN_INT32 : KILN_FLOAT32, blocks, NULL), VAL(kiln_u32(N))};
        void **o = run(x, M_REDUCE, names[k], D3(blocks, 1, 1), D3(T, 1, 1), T * 4, a, 3);
        for (int b = 0; b < blocks; b++) {
            double sum = 0;
            for (int i = 0; i < per; i++) sum += is_int ? v[b * per + i] : f[b * per + i];
            double got = is_int ? ((int32_t *)o[1])[b] : ((float *)o[1])[b];
            if (fabs(got - sum) > 1e-4 * (1 + fabs(sum)))
                fail_msg("%s: block %d: %g, not %g", names[k], b, got, sum);
        }
        free_out(o);
    }
    free(f), free(v);
}

/* scan: the barriers inside __device__ helpers three calls deep. */
static void scans(void **state) {
    fixture *x = *state;
    enum { N = 8 * 1024, L = 1024 };
    uint32_t *src = random_u32("scan:src", N, 0, 1 << 20), *want = malloc(N * sizeof *want);
    for (int i = 0; i < N; i++) want[i] = i % L ? want[i - 1] + src[i - 1] : 0;
    karg a[] = {ARR(KILN_UINT32, N, NULL), ARR(KILN_UINT32, N, src), VAL(kiln_u32(L))};
    void **o = run(x, M_SCAN, "scanExclusiveShared", D3(N / (4 * 256), 1, 1), D3(256, 1, 1), 0, a, 3);
    expect_u32("scanExclusiveShared", o[0], want, N);
    free_out(o);
    /* the second level: d_Buf[p] = exclusive scan of dst + src at the top of each 1024 */
    enum { P = 256 };
    uint32_t *dst = random_u32("scan:dst", P * 1024, 0, 1 << 20), *buf = malloc(P * sizeof *buf);
    for (int p = 0; p < P; p++)
        buf[p] = p ? buf[p - 1] + dst[1023 + 1024 * (p - 1)] + src[(1023 + 1024 * (p - 1)) % N] : 0;
    uint32_t *src2 = malloc(P * 1024 * sizeof *src2);
    for (int i = 0; i < P * 1024; i++) src2[i] = src[i % N];
    karg b[] = {ARR(KILN_UINT32, P, NULL), ARR(KILN_UINT32, P * 1024, dst), ARR(KILN_UINT32, P * 1024, src2),
                VAL(kiln_u32(P)), VAL(kiln_u32(P))};
    o = run(x, M_SCAN, "scanExclusiveShared2", D3(1, 1, 1), D3(256, 1, 1), 0, b, 5);
    expect_u32("scanExclusiveShared2", o[0], buf, P);
    free_out(o);
    /* uniformUpdate: each block's 1024 values plus its buffer word */
    for (int i = 0; i < N; i++) want[i] = src[i] + dst[i / 1024];
    karg c[] = {ARR(KILN_UINT32, N, src), ARR(KILN_UINT32, N / 1024, dst)};
    o = run(x, M_SCAN, "uniformUpdate", D3(N / 1024, 1, 1), D3(256, 1, 1), 0, c, 2);
    expect_u32("uniformUpdate", o[0], want, N);
    free_out(o);
    free(src), free(want), free(dst), free(buf), free(src2);
}

/* histogram256 and histogram64, each with its merge kernel. */
static void histograms(void **state) {
    fixture *x = *state;
    enum { G = 16, T256 = 192, WORDS = G * T256 * 8, T64 = 64, V64 = G * T64 * 4 };
    uint32_t *data = random_u32("hist:data", WORDS, 0, 4294967296.0);
    uint32_t *part = calloc(G * 256, sizeof *part), *total = calloc(256, sizeof *total);
    for (int b = 0; b < G; b++)
        for (int t = 0; t < T256; t++)
            for (int pos = b * T256 + t; pos < WORDS; pos += T256 * G)
                for (int k = 0; k < 4; k++) part[b * 256 + ((data[pos] >> (8 * k)) & 0xFF)]++;
    for (int i = 0; i < G * 256; i++) total[i % 256] += part[i];
    karg a[] = {ARR(KILN_UINT32, G * 256, NULL), ARR(KILN_UINT32, WORDS, data), VAL(kiln_u32(WORDS))};
    void **o = run(x, M_HIST256, "histogram256Kernel", D3(G, 1, 1), D3(T256, 1, 1), 0, a, 3);
    expect_u32("histogram256Kernel", o[0], part, G * 256);
    free_out(o);
    karg m[] = {ARR(KILN_UINT32, 256, NULL), ARR(KILN_UINT32, G * 256, part), VAL(kiln_u32(G))};
    o = run(x, M_HIST256, "mergeHistogram256Kernel", D3(256, 1, 1), D3(256, 1, 1), 0, m, 3);
    expect_u32("mergeHistogram256Kernel", o[0], total, 256);
    free_out(o);
    /* 64 bins: data_t is uint4, the six high bits of each byte */
    memset(part, 0, G * 256 * sizeof *part);
    memset(total, 0, 256 * sizeof *total);
    for (int b = 0; b < G; b++)
        for (int t = 0; t < T64; t++)
            for (int pos = b * T64 + t; pos < V64; pos += T64 * G)
                for (int w = 0; w < 4; w++)
                    for (int k = 0; k < 4; k++) part[b * 64 + ((data[4 * pos + w] >> (8 * k + 2)) & 0x3F)]++;
    for (int i = 0; i < G * 64; i++) total[i % 64] += part[i];
    karg c[] = {ARR(KILN_UINT32, G * 64, NULL), ARR(KILN_UINT32, 4 * V64, data), VAL(kiln_u32(V64))};
    o = run(x, M_HIST64, "histogram64Kernel", D3(G, 1, 1), D3(T64, 1, 1), 0, c, 3);
    expect_u32("histogram64Kernel", o[0], part, G * 64);
    free_out(o);
    karg d[] = {ARR(KILN_UINT32, 64, NULL), ARR(KILN_UINT32, G * 64, part), VAL(kiln_u32(G))};
    o = run(x, M_HIST64, "mergeHistogram64Kernel", D3(64, 1, 1), D3(256, 1, 1), 0, d, 3);
    expect_u32("mergeHistogram64Kernel", o[0], total, 64);
    free_out(o);
    free(data), free(part), free(total);
}

/* bitonic sort: pointer parameters advanced by the block's offset. Keys
 * are a permutation, so the values' order is defined too. */
static int order_up(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}
static void bitonic(void **state) {
    fixture *x = *state;
    enum { L = 1024, B = 6, N = L * B };
    test_rng r = test_rng_for("bitonic");
    uint32_t *key = malloc(N * sizeof *key), *val = malloc(N * sizeof *val),
             *pair = malloc(2 * N * sizeof *pair);
    for (int i = 0; i < N; i++)
        key[i] = (uint32_t)i * 2654435761u, val[i] = (uint32_t)test_uniform(&r, 0, 1e9);
    for (int kind = 0; kind < 3; kind++) { /* ascending, descending, alternating by block */
        karg a[] = {ARR(KILN_UINT32, N, NULL), ARR(KILN_UINT32, N, NULL), ARR(KILN_UINT32, N, key),
                    ARR(KILN_UINT32, N, val),  VAL(kiln_u32(L)),          VAL(kiln_u32(kind == 0))};
        const char *k = kind < 2 ? "bitonicSortShared" : "bitonicSortShared1";
        void **o = run(x, M_BITONIC, k, D3(B, 1, 1), D3(L / 2, 1, 1), 0, a, kind < 2 ? 6 : 4);
        for (int b = 0; b < B; b++) {
            for (int i = 0; i < L; i++) pair[2 * i] = key[b * L + i], pair[2 * i + 1] = val[b * L + i];
            qsort(pair, L, 2 * sizeof *pair, order_up);
            int up = kind == 0 || (kind == 2 && (b & 1));
            for (int i = 0; i < L; i++) {
                int j = up ? i : L - 1 - i;
                if (((uint32_t *)o[0])[b * L + i] != pair[2 * j] ||
                    ((uint32_t *)o[1])[b * L + i] != pair[2 * j + 1])
                    fail_msg("%s (%d): block %d, element %d out of order", k, kind, b, i);
            }
        }
        free_out(o);
    }
    free(key), free(val), free(pair);
}

/* transpose: the tiled kernels give the transpose; the fine- and
 * coarse-grained ones (partial on purpose) must match fibers. */
static void transposes(void **state) {
    fixture *x = *state;
    enum { W = 128, H = 128 }; /* the sample's kernels assume a square */
    float *in = random_f32("transpose", W * H, -1, 1, 0);
    double *tr = malloc(W * H * sizeof *tr), *cp = malloc(W * H * sizeof *cp);
    for (int y = 0; y < H; y++)
        for (int i = 0; i < W; i++) tr[i * H + y] = in[y * W + i], cp[y * W + i] = in[y * W + i];
    static const char *const names[] = {"copySharedMem", "transposeCoalesced", "transposeNoBankConflicts",
                                        "transposeFineGrained", "transposeCoarseGrained"};
    for (int k = 0; k < 5; k++) {
        karg a[] = {ARR(KILN_FLOAT32, W * H, NULL), ARR(KILN_FLOAT32, W * H, in), VAL(kiln_i32(W)),
                    VAL(kiln_i32(H))};
        void **o = run(x, M_TRANSPOSE, names[k], D3(W / 32, H / 32, 1), D3(32, 16, 1), 0, a, 4);
        if (k < 3) expect_f32(names[k], o[0], k ? tr : cp, W * H, 0);
        free_out(o);
    }
    /* the diagonal reordering is for square matrices */
    karg a[] = {ARR(KILN_FLOAT32, H * H, NULL), ARR(KILN_FLOAT32, H * H, in), VAL(kiln_i32(H)),
                VAL(kiln_i32(H))};
    void **o = run(x, M_TRANSPOSE, "transposeDiagonal", D3(H / 32, H / 32, 1), D3(32, 16, 1), 0, a, 4);
    for (int y = 0; y < H; y++)
        for (int i = 0; i < H; i++) tr[i * H + y] = in[y * H + i];
    expect_f32("transposeDiagonal", o[0], tr, H * H, 0);
    free_out(o);
    free(in), free(tr), free(cp);
}

/* fastWalshTransform: fwtBatch1Kernel on rows of 2^10, whole numbers so
 * that every order of the sums gives the same value. */
static void walsh(void **state) {
    fixture *x = *state;
    enum { LOG = 10, N = 1 << LOG, M = 4 };
    float *in = random_f32("fwt", M * N, -8, 8, 1);
    double *want = malloc(M * N * sizeof *want);
    for (int i = 0; i < M * N; i++) want[i] = in[i];
    for (int m = 0; m < M; m++)
        for (int h = 1; h < N; h <<= 1)
            for (int i = 0; i < N; i += 2 * h)
                for (int j = i; j < i + h; j++) {
                    double a = want[m * N + j], b = want[m * N + j + h];
                    want[m * N + j] = a + b, want[m * N + j + h] = a - b;
                }
    karg a[] = {ARR(KILN_FLOAT32, M * N, NULL), ARR(KILN_FLOAT32, M * N, in), VAL(kiln_i32(LOG))};
    void **o = run(x, M_FWT, "fwtBatch1Kernel", D3(M, 1, 1), D3(N / 4, 1, 1), N * sizeof(float), a, 3);
    expect_f32("fwtBatch1Kernel", o[0], want, M * N, 0);
    free_out(o);
    free(in), free(want);
}

/* dct8x8's second kernels: the orthonormal 8x8 DCT of each block, and back. */
static void dct(void **state) {
    fixture *x = *state;
    enum { W = 64, H = 32 };
    float *img = random_f32("dct", W * H, 0, 255, 0);
    double *want = calloc(W * H, sizeof *want), *back = malloc(W * H * sizeof *back);
    for (int by = 0; by < H; by += 8)
        for (int bx = 0; bx < W; bx += 8)
            for (int u = 0; u < 8; u++)
                for (int v = 0; v < 8; v++) {
                    double s = 0;
                    for (int i = 0; i < 8; i++)
                        for (int j = 0; j < 8; j++)
                            s += img[(by + i) * W + bx + j] * cos((2 * i + 1) * u * M_PI / 16) *
                                 cos((2 * j + 1) * v * M_PI / 16);
                    want[(by + u) * W + bx + v] =
                        s * (u ? 0.5 : 0.5 * M_SQRT1_2) * (v ? 0.5 : 0.5 * M_SQRT1_2);
                }
    for (int i = 0; i < W * H; i++) back[i] = img[i];
    karg a[] = {ARR(KILN_FLOAT32, W * H, NULL), ARR(KILN_FLOAT32, W * H, img), VAL(kiln_i32(W))};
    void **o = run(x, M_DCT, "CUDAkernel2DCT", D3(W / 32, H / 16, 1), D3(8, 4, 2), 0, a, 3);
    expect_f32("CUDAkernel2DCT", o[0], want, W * H, 1e-4);
    karg b[] = {ARR(KILN_FLOAT32, W * H, NULL), ARR(KILN_FLOAT32, W * H, o[0]), VAL(kiln_i32(W))};
    void **p = run(x, M_DCT, "CUDAkernel2IDCT", D3(W / 32, H / 16, 1), D3(8, 4, 2), 0, b, 3);
    expect_f32("CUDAkernel2IDCT", p[0], back, W * H, 1e-4);
    free_out(o), free_out(p);
    free(img), free(want), free(back);
}

/* On the CPU every barrier kernel of these modules takes loop fission. */
static void paths(void **state) {
    (void)state;
    static const char *const fission[M_COUNT][9] = {
        [M_MATMUL] = {"MatrixMulCUDA<16>", "MatrixMulCUDA<32>"},
        [M_REDUCE] = {"reduce0<float>", "reduce1<int>", "reduce2<float>", "reduce3<int>"},
        [M_SCAN] = {"scanExclusiveShared", "scanExclusiveShared2", "uniformUpdate"},
        [M_HIST256] = {"histogram256Kernel", "mergeHistogram256Kernel"},
        [M_HIST64] = {"histogram64Kernel", "mergeHistogram64Kernel"},
        [M_BITONIC] = {"bitonicSortShared", "bitonicSortShared1", "bitonicMergeShared"},
        [M_TRANSPOSE] = {"copySharedMem", "transposeCoalesced", "transposeNoBankConflicts",
                         "transposeDiagonal", "transposeFineGrained", "transposeCoarseGrained"},
        [M_FWT] = {"fwtBatch1Kernel"},
        [M_DCT] = {"CUDAkernel2DCT", "CUDAkernel2IDCT"},
    };
    for (int m = 0; m < M_COUNT; m++) {
        char *src = module_source(m), *log = NULL, options[1200];
        snprintf(options, sizeof options, "-I%s/tests/corpus/cuda-samples/%s", source_dir(),
                 corpus_modules[m].folder);
        TEST_OK(kiln_compile_only("cpu", NULL, src, corpus_modules[m].cuts[0].file, options, &log));
        for (int k = 0; k < 9 && fission[m][k]; k++)
            test_expect_cpu_path(log, fission[m][k], "fission", NULL);
        kiln_free(log);
        free(src);
    }
}

/* The same modules through NVRTC for sm_90, as the GPU run compiles them
 * (skipped where NVRTC is absent). */
static void through_nvrtc(void **state) {
    (void)state;
    for (int m = 0; m < M_COUNT; m++) {
        char *src = module_source(m), *log = NULL, options[1200];
        snprintf(options, sizeof options, "-I%s/tests/corpus/cuda-samples/%s", source_dir(),
                 corpus_modules[m].folder);
        kiln_status s =
            kiln_compile_only("cuda", "sm_90", src, corpus_modules[m].cuts[0].file, options, &log);
        free(src);
        if (s == KILN_ERR_COMPILER_MISSING) {
            kiln_free(log);
            skip();
        }
        if (s != KILN_OK)
            fail_msg("%s: %s: %s", corpus_modules[m].cuts[0].file, kiln_last_error(), log ? log : "");
        kiln_free(log);
    }
}

static int setup(void **state) {
    fixture *x = calloc(1, sizeof *x);
    x->ctx = test_open();
    if (!x->ctx) return -1;
    for (int m = 0; m < M_COUNT; m++) {
        x->mod[m] = build(x->ctx, m, 0);
        if (is_cpu()) x->fibers[m] = build(x->ctx, m, 1);
    }
    kiln_jit_wait(x->ctx);
    *state = x;
    return 0;
}
static int teardown(void **state) {
    fixture *x = *state;
    if (!x) return 0;
    for (int m = 0; m < M_COUNT; m++) {
        kiln_module_release(x->mod[m]);
        kiln_module_release(x->fibers[m]);
    }
    kiln_close(x->ctx);
    free(x);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paths),         cmocka_unit_test(matrix_mul), cmocka_unit_test(reductions),
        cmocka_unit_test(scans),         cmocka_unit_test(histograms), cmocka_unit_test(bitonic),
        cmocka_unit_test(transposes),    cmocka_unit_test(walsh),      cmocka_unit_test(dct),
        cmocka_unit_test(through_nvrtc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
