/* test_corpus.c: kernels from NVIDIA's public cuda-samples, each file as
 * upstream has it (licence header kept, tests/corpus/cuda-samples/README.md
 * lists path and commit), run through kiln with the same source and the
 * same options on every backend against a plain C reference on random
 * inputs. One row of `corpus` per kernel: the file, the launch, the
 * arguments (how to fill them, which to compare) and the reference.
 *
 * Also: every corpus module compiles through NVRTC for sm_90, and a second
 * process loads every module from the disk cache without compiling. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

typedef enum elem { F32, F64, I8, I32, U32, I64, U64, BOOL8 } elem;

/* IN: random, passed, checked unchanged; OUT: random or zero (lo == hi ==
 * 0), compared with what the reference leaves there; SKIP: zero, passed,
 * never compared (clock readings); SCALAR: lo is the value; GLOBAL: a
 * module variable of that name (a __constant__ table), not passed: written
 * before the launch like an OUT array, read back and compared after it. */
typedef enum role { IN = 1, OUT, SKIP, SCALAR, GLOBAL } role;

typedef struct corpus_arg {
    role role;
    elem type;
    int64_t count;
    double lo, hi; /* random values in [lo, hi) (integers: floored) */
    const char *global;
} corpus_arg;

#define ARG_IN(t, n, lo, hi)                                                                                 \
    { IN, t, n, lo, hi, NULL }
#define ARG_OUT(t, n)                                                                                        \
    { OUT, t, n, 0, 0, NULL }
#define ARG_INOUT(t, n, lo, hi)                                                                              \
    { OUT, t, n, lo, hi, NULL }
#define ARG_SKIP(t, n)                                                                                       \
    { SKIP, t, n, 0, 0, NULL }
#define ARG_SCALAR(t, v)                                                                                     \
    { SCALAR, t, 1, v, v, NULL }
#define ARG_GLOBAL(name, t, n, lo, hi)                                                                       \
    { GLOBAL, t, n, lo, hi, name }

enum { MAX_ARGS = 8 };

/* a[i]: argument i on the host (array contents, or the scalar in its own
 * type). `prepare` may reshape the random inputs (a permutation, sorted
 * offsets) before they go to the device; `reference` turns a copy of the
 * inputs into the expected state of every array; `got` is what the kernel
 * left, for the references of order-dependent atomics, which check those
 * values themselves and copy them over. */
typedef void (*corpus_prepare)(void *const *a, test_rng *rng);
typedef void (*corpus_reference)(void *const *a, const void *const *got, kiln_dim3 grid, kiln_dim3 block);

typedef struct corpus_kernel {
    const char *file; /* under tests/corpus/ */
    const char *options;
    const char *kernel;
    kiln_dim3 grid, block;
    size_t shared_bytes;
    corpus_arg args[MAX_ARGS];
    corpus_prepare prepare;
    corpus_reference reference;
    double atol, rtol; /* floating-point outputs; integers compare exactly */
} corpus_kernel;

/* argument i of a reference, as its type */
#define F(i) ((float *)a[i])
#define S32(i) ((int32_t *)a[i])
#define U(i) ((uint32_t *)a[i])

/* ------------------------------------------------------------ references */
static void ref_vector_add(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    for (int i = 0; i < S32(3)[0]; i++) F(2)[i] = F(0)[i] + F(1)[i];
}

/* simpleAtomicIntrinsics: the order-free operations exactly; exchange and
 * compare-and-swap depend on the threads' order, so their results are
 * checked for a value some order gives. */
static void ref_atomics(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    int32_t *o = S32(0);
    const int32_t *r = got[0];
    int threads = (int)(g.x * b.x);
    for (int t = 0; t < threads; t++) {
        o[0] += 10;
        o[1] -= 10;
        o[3] = o[3] > t ? o[3] : t;
        o[4] = o[4] < t ? o[4] : t;
        uint32_t inc = (uint32_t)o[5], dec = (uint32_t)o[6];
        o[5] = (int32_t)(inc >= 17 ? 0 : inc + 1);
        o[6] = (int32_t)((dec == 0 || dec > 137) ? 137 : dec - 1);
        o[8] &= 2 * t + 7;
        o[9] |= (int32_t)(1u << t);
        o[10] ^= t;
    }
    if (r[2] < 0 || r[2] >= threads) fail_msg("atomicExch left %d, not a thread id", r[2]);
    o[2] = r[2];
    /* atomicCAS(&x, tid - 1, tid) moves x one step up a chain: it ends at
     * its start or at a thread id above it */
    if (r[7] != o[7] && (r[7] <= o[7] || r[7] >= threads))
        fail_msg("atomicCAS chain from %d ended at %d", o[7], r[7]);
    o[7] = r[7];
}

/* matrixMul: C = A * B, A of hA x wA, B of wA x wB; the launch covers C. */
static void matmul(const float *A_, const float *B_, float *C, int hA, int wA, int wB) {
    for (int i = 0; i < hA; i++)
        for (int j = 0; j < wB; j++) {
            double s = 0;
            for (int k = 0; k < wA; k++) s += (double)A_[i * wA + k] * B_[k * wB + j];
            C[i * wB + j] = (float)s;
        }
}
static void ref_matmul_int(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got;
    matmul(F(1), F(2), F(0), (int)(g.y * b.y), S32(3)[0], S32(4)[0]);
}
static void ref_matmul_size_t(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got;
    matmul(F(1), F(2), F(0), (int)(g.y * b.y), (int)((uint64_t *)a[3])[0], (int)((uint64_t *)a[4])[0]);
}

/* clock: every block takes the minimum of the same 2 * blockDim inputs,
 * and reads clock() before and after, which never runs backwards. */
static void ref_timed_min(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    const int64_t *timer = got[2];
    for (uint32_t i = 0; i < g.x; i++)
        /* as 32-bit differences: the GPU's clock() is a 32-bit counter that may wrap */
        if ((uint32_t)(timer[g.x + i] - timer[i]) >= 0x80000000u)
            fail_msg("block %u: clock() went from %lld to %lld", i, (long long)timer[i],
                     (long long)timer[g.x + i]);
    float m = F(0)[0];
    for (uint32_t i = 1; i < 2 * b.x; i++) m = F(0)[i] < m ? F(0)[i] : m;
    for (uint32_t i = 0; i < g.x; i++) F(1)[i] = m;
}

static void ref_vote_any(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g;
    for (uint32_t w = 0; w < b.x; w += 32) {
        uint32_t any = 0;
        for (uint32_t t = w; t < w + 32; t++) any |= U(0)[t] != 0;
        for (uint32_t t = w; t < w + 32; t++) U(1)[t] = any;
    }
}
static void ref_vote_all(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g;
    for (uint32_t w = 0; w < b.x; w += 32) {
        uint32_t all = 1;
        for (uint32_t t = w; t < w + 32; t++) all &= U(0)[t] != 0;
        for (uint32_t t = w; t < w + 32; t++) U(1)[t] = all;
    }
}
static void ref_vote_directed(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g;
    uint8_t *info = a[0];
    int ws = S32(1)[0];
    for (uint32_t w = 0; w < b.x; w += 32) {
        int any = 0, all = 1;
        for (uint32_t t = w; t < w + 32; t++) {
            any |= (int)t >= ws * 3 / 2;
            all &= (int)t >= ws * 3 / 2;
        }
        for (uint32_t t = w; t < w + 32; t++) {
            info[3 * t] = (uint8_t)any;
            info[3 * t + 1] = (int)t >= ws * 3 / 2;
            if (all) info[3 * t + 2] = 1;
        }
    }
}

static void ref_thread_migration(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g;
    for (uint32_t t = 0; t < b.x; t++) S32(0)[t] = 32 - (int)t;
}
static void ref_fill_char(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    for (int i = 0; i < S32(1)[0]; i++) ((int8_t *)a[0])[i] = ((int8_t *)a[2])[0];
}
static void ref_thread_ids(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got;
    for (uint32_t t = 0; t < g.x * b.x; t++) S32(0)[t] = (int)t;
}

/* segmentationTreeThrust's graph kernels. */
enum { SEG_V = 500, SEG_E = 1000, SEG_GRID = 4, SEG_BLOCK = 256 };
static void ref_add_scalar(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    for (uint32_t i = 0; i < U(2)[0]; i++) U(0)[i] += (uint32_t)S32(1)[0];
}
static void ref_mark_segments(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    for (uint32_t i = 0; i < U(2)[0]; i++) U(1)[U(0)[i]] = 1;
}
static void prepare_permutation(void *const *a, test_rng *rng) {
    uint32_t *p = a[0];
    for (uint32_t i = 0; i < SEG_V; i++) p[i] = i;
    for (uint32_t i = SEG_V - 1; i > 0; i--) {
        uint32_t j = (uint32_t)test_uniform(rng, 0, i + 1), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}
static void ref_vertices_mapping(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    for (uint32_t i = 0; i < U(3)[0]; i++) U(2)[U(0)[i]] = U(1)[i];
}
/* strictly increasing offsets from 0, at most two edges per vertex */
static void prepare_offsets(void *const *a, test_rng *rng) {
    for (uint32_t i = 0; i < SEG_V; i++) U(0)[i] = 2 * i + (i ? (uint32_t)test_uniform(rng, 0, 2) : 0);
}
static void ref_successors(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    uint32_t n = U(3)[0], e = U(4)[0];
    for (uint32_t i = 0; i < n; i++) U(2)[i] = U(1)[i < n - 1 ? U(0)[i + 1] - 1 : e - 1];
}
/* random successors with some two-cycles, which removeCycles breaks */
static void prepare_two_cycles(void *const *a, test_rng *rng) {
    (void)rng;
    for (uint32_t i = 0; i + 1 < SEG_V; i += 10) {
        U(0)[i] = i + 1;
        U(0)[i + 1] = i;
    }
}
static void ref_remove_cycles(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    uint32_t *s = U(0), n = U(1)[0];
    for (uint32_t i = 0; i < n; i++)
        if (s[s[i]] == i && s[i] != i) {
            uint32_t lo = i < s[i] ? i : s[i];
            s[lo] = lo;
        }
}
/* a forest: every vertex points at itself or a lower one */
static void prepare_forest(void *const *a, test_rng *rng) {
    for (uint32_t i = 0; i < SEG_V; i++) U(0)[i] = (uint32_t)test_uniform(rng, 0, i + 1);
}
static void ref_representatives(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    for (uint32_t i = 0; i < U(2)[0]; i++) {
        uint32_t r = i;
        while (U(0)[r] != r) r = U(0)[r];
        U(1)[i] = r;
    }
}
static void ref_invalidate_loops(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    for (uint32_t i = 0; i < U(3)[0]; i++)
        if (U(1)[U(0)[i]] == U(1)[U(2)[i]]) U(2)[i] = UINT32_MAX;
}
static void prepare_removed_edges(void *const *a, test_rng *rng) {
    (void)rng;
    for (uint32_t i = 0; i < SEG_E; i += 5) U(2)[i] = UINT32_MAX;
}
static void ref_edges_info(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    for (uint32_t i = 0; i < U(6)[0]; i++) {
        int kept = U(2)[i] < UINT32_MAX;
        U(4)[i] = kept ? U(1)[U(0)[i]] : U(7)[0] + U(1)[U(0)[i]];
        U(5)[i] = kept ? i : UINT32_MAX;
    }
}
static void ref_new_edges(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    for (uint32_t i = 0; i < U(6)[0]; i++) {
        U(4)[i] = U(1)[U(2)[U(0)[i]]];
        F(5)[i] = F(3)[U(0)[i]];
    }
}

/* shfl_scan: the integral image's second pass, prefix sums down columns. */
static void ref_column_prefix(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    int w = S32(1)[0], h = S32(2)[0];
    for (int x = 0; x < w; x++)
        for (int y = 1; y < h; y++) U(0)[y * w + x] += U(0)[(y - 1) * w + x];
}

/* BlackScholes: the sample's polynomial normal CDF, in double. */
static double cnd(double d) {
    double k = 1.0 / (1.0 + 0.2316419 * fabs(d));
    double c =
        0.39894228040143267794 * exp(-0.5 * d * d) *
        (k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))));
    return d > 0 ? 1 - c : c;
}
static void ref_black_scholes(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    double r = F(5)[0], v = F(6)[0];
    for (int i = 0; i < S32(7)[0]; i++) {
        double s = F(2)[i], x = F(3)[i], t = F(4)[i], sq = sqrt(t);
        double d1 = (log(s / x) + (r + 0.5 * v * v) * t) / (v * sq), d2 = d1 - v * sq;
        double e = exp(-r * t);
        F(0)[i] = (float)(s * cnd(d1) - x * e * cnd(d2));
        F(1)[i] = (float)(x * e * (1 - cnd(d2)) - s * (1 - cnd(d1)));
    }
}

/* quasirandomGenerator: Sobol-style XOR of the direction numbers in
 * c_Table (3 dimensions of 31), and Moro's inverse normal CDF. */
static void ref_quasirandom(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    uint32_t seed = U(1)[0], n = U(2)[0];
    for (uint32_t d = 0; d < 3; d++)
        for (uint32_t pos = 0; pos < n; pos++) {
            uint32_t result = 0, data = seed + pos;
            for (int bit = 0; bit < 31; bit++, data >>= 1)
                if (data & 1) result ^= U(3)[d * 31 + bit];
            F(0)[d * n + pos] = (float)(result + 1) * (1.0f / (float)0x80000001U);
        }
}
static void ref_inverse_cnd(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    uint32_t n = U(1)[0], distance = 0xffffffffu / (n + 1);
    for (uint32_t pos = 0; pos < n; pos++) {
        uint32_t x = (pos + 1) * distance;
        int negate = x >= 0x80000000u;
        if (negate) x = 0xffffffffu - x;
        double p1 = x * (1.0 / 4294967295.0) + 0.5 / 4294967295.0, p2 = p1 - 0.5, z;
        if (p2 > -0.42) {
            z = p2 * p2;
            z = p2 * (((-25.44106049637 * z + 41.39119773534) * z - 18.61500062529) * z + 2.50662823884) /
                ((((3.13082909833 * z - 21.06224101826) * z + 23.08336743743) * z - 8.4735109309) * z + 1.0);
        } else {
            z = log(-log(p1));
            z = -(0.337475482272615 +
                  z * (0.976169019091719 +
                       z * (0.160797971491821 +
                            z * (2.76438810333863E-02 +
                                 z * (3.8405729373609E-03 +
                                      z * (3.951896511919E-04 +
                                           z * (3.21767881768E-05 +
                                                z * (2.888167364E-07 + z * 3.960315187E-07))))))));
        }
        F(0)[pos] = (float)(negate ? -z : z);
    }
}

/* FDTD3d: an 8th-order stencil (radius 4, weights in the __constant__
 * `stencil`) over the inner dimx x dimy x dimz points of a volume padded by
 * 4 on every side. */
enum { FD_R = 4, FD_X = 32, FD_Y = 16, FD_Z = 8 };
enum { FD_SY = FD_X + 2 * FD_R, FD_SZ = FD_SY * (FD_Y + 2 * FD_R), FD_N = FD_SZ * (FD_Z + 2 * FD_R) };
static void ref_fdtd(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    const float *in = F(1), *w = F(5);
    for (int z = 0; z < FD_Z; z++)
        for (int y = 0; y < FD_Y; y++)
            for (int x = 0; x < FD_X; x++) {
                int c = (z + FD_R) * FD_SZ + (y + FD_R) * FD_SY + x + FD_R;
                double v = (double)w[0] * in[c];
                for (int i = 1; i <= FD_R; i++)
                    v += (double)w[i] * ((double)in[c + i * FD_SZ] + in[c - i * FD_SZ] + in[c - i * FD_SY] +
                                         in[c + i * FD_SY] + in[c - i] + in[c + i]);
                F(0)[c] = (float)v;
            }
}

/* simpleTemplates: each value times the block's thread count. */
static void ref_scale_float(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g;
    for (uint32_t t = 0; t < b.x; t++) F(1)[t] = (float)b.x * F(0)[t];
}
static void ref_scale_int(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g;
    for (uint32_t t = 0; t < b.x; t++) S32(1)[t] = (int32_t)b.x * S32(0)[t];
}

/* scalarProd: one dot product per vector pair. */
static void ref_scalar_prod(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g, (void)b;
    int vn = S32(3)[0], en = S32(4)[0];
    for (int v = 0; v < vn; v++) {
        double s = 0;
        for (int e = 0; e < en; e++) s += (double)F(1)[v * en + e] * F(2)[v * en + e];
        F(0)[v] = (float)s;
    }
}
static void ref_init_value(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got;
    for (uint32_t i = 0; i < g.x * b.x; i++) F(0)[i] = F(1)[0];
}
/* dwtHaar1D: the whole decomposition in Mallat order (od[half + k] holds
 * the details of the level whose approximation has `half` values). */
static void ref_dwt_haar(void *const *a, const void *const *got, kiln_dim3 g, kiln_dim3 b) {
    (void)got, (void)g;
    int len = 2 * (int)b.x;
    double *x = malloc(sizeof(double) * (size_t)len);
    for (int i = 0; i < len; i++) x[i] = F(0)[i];
    const double r = 0.70710678118654752440;
    for (int n = len; n > 1; n /= 2)
        for (int k = 0; k < n / 2; k++) {
            F(1)[n / 2 + k] = (float)((x[2 * k] - x[2 * k + 1]) * r);
            x[k] = (x[2 * k] + x[2 * k + 1]) * r;
        }
    F(2)[0] = (float)x[0];
    free(x);
}

/* ----------------------------------------------------------------- corpus */
#define CS "cuda-samples/"
#define MM_W 64 /* matrixMul: A, B and C are MM_W x MM_W */
#define MM_N (MM_W * MM_W)
#define QRNG CS "quasirandomGenerator_nvrtc/quasirandomGenerator_kernel.cu"
/* dwtHaar1D's constants come as -D options, the same on every backend */
#define DWT_OPTIONS "-DINV_SQRT_2=0.70710678118654752440f -DLOG_NUM_BANKS=4"

/* One row per kernel; kept one row per kernel by hand, the formatter would
 * put every field on a line of its own. */
/* clang-format off */
static const corpus_kernel corpus[] = {
    {CS "vectorAdd_nvrtc/vectorAdd_kernel.cu", NULL, "vectorAdd", {4, 1, 1}, {256, 1, 1}, 0,
     {ARG_IN(F32, 1000, -1, 1), ARG_IN(F32, 1000, -1, 1), ARG_OUT(F32, 1000), ARG_SCALAR(I32, 1000)},
     NULL, ref_vector_add, 0, 0},
    {CS "vectorAddDrv/vectorAdd_kernel.cu", NULL, "VecAdd_kernel", {4, 1, 1}, {256, 1, 1}, 0,
     {ARG_IN(F32, 1000, -1, 1), ARG_IN(F32, 1000, -1, 1), ARG_OUT(F32, 1000), ARG_SCALAR(I32, 1000)},
     NULL, ref_vector_add, 0, 0},
    {CS "simpleDrvRuntime/vectorAdd_kernel.cu", NULL, "VecAdd_kernel", {4, 1, 1}, {256, 1, 1}, 0,
     {ARG_IN(F32, 1000, -1, 1), ARG_IN(F32, 1000, -1, 1), ARG_OUT(F32, 1000), ARG_SCALAR(I32, 1000)},
     NULL, ref_vector_add, 0, 0},
    /* 1 << tid is defined for 32 threads only */
    {CS "simpleAtomicIntrinsics/simpleAtomicIntrinsics_kernel.cuh", NULL, "testKernel", {1, 1, 1}, {32, 1, 1}, 0,
     {ARG_INOUT(I32, 11, 0, 64)},
     NULL, ref_atomics, 0, 0},
    {CS "matrixMul_nvrtc/matrixMul_kernel.cu", NULL, "matrixMulCUDA_block16",
     {MM_W / 16, MM_W / 16, 1}, {16, 16, 1}, 0,
     {ARG_OUT(F32, MM_N), ARG_IN(F32, MM_N, -1, 1), ARG_IN(F32, MM_N, -1, 1), ARG_SCALAR(I32, MM_W),
      ARG_SCALAR(I32, MM_W)},
     NULL, ref_matmul_int, 1e-5, 1e-5},
    {CS "matrixMul_nvrtc/matrixMul_kernel.cu", NULL, "matrixMulCUDA_block32",
     {MM_W / 32, MM_W / 32, 1}, {32, 32, 1}, 0,
     {ARG_OUT(F32, MM_N), ARG_IN(F32, MM_N, -1, 1), ARG_IN(F32, MM_N, -1, 1), ARG_SCALAR(I32, MM_W),
      ARG_SCALAR(I32, MM_W)},
     NULL, ref_matmul_int, 1e-5, 1e-5},
    {CS "matrixMulDrv/matrixMul_kernel.cu", NULL, "matrixMul_bs8_64bit", {MM_W / 8, MM_W / 8, 1}, {8, 8, 1}, 0,
     {ARG_OUT(F32, MM_N), ARG_IN(F32, MM_N, -1, 1), ARG_IN(F32, MM_N, -1, 1), ARG_SCALAR(U64, MM_W),
      ARG_SCALAR(U64, MM_W)},
     NULL, ref_matmul_size_t, 1e-5, 1e-5},
    {CS "matrixMulDrv/matrixMul_kernel.cu", NULL, "matrixMul_bs16_64bit", {MM_W / 16, MM_W / 16, 1}, {16, 16, 1}, 0,
     {ARG_OUT(F32, MM_N), ARG_IN(F32, MM_N, -1, 1), ARG_IN(F32, MM_N, -1, 1), ARG_SCALAR(U64, MM_W),
      ARG_SCALAR(U64, MM_W)},
     NULL, ref_matmul_size_t, 1e-5, 1e-5},
    {CS "matrixMulDrv/matrixMul_kernel.cu", NULL, "matrixMul_bs32_64bit", {MM_W / 32, MM_W / 32, 1}, {32, 32, 1}, 0,
     {ARG_OUT(F32, MM_N), ARG_IN(F32, MM_N, -1, 1), ARG_IN(F32, MM_N, -1, 1), ARG_SCALAR(U64, MM_W),
      ARG_SCALAR(U64, MM_W)},
     NULL, ref_matmul_size_t, 1e-5, 1e-5},
    {CS "clock_nvrtc/clock_kernel.cu", NULL, "timedReduction", {4, 1, 1}, {128, 1, 1}, 2 * 128 * sizeof(float),
     {ARG_IN(F32, 256, -100, 100), ARG_OUT(F32, 4), ARG_SKIP(I64, 8)},
     NULL, ref_timed_min, 0, 0},
    /* about a third of the warps see no nonzero input, and a third all */
    {CS "simpleVoteIntrinsics/simpleVote_kernel.cuh", NULL, "VoteAnyKernel1", {1, 1, 1}, {128, 1, 1}, 0,
     {ARG_IN(U32, 128, 0, 1.03), ARG_OUT(U32, 128), ARG_SCALAR(I32, 128)},
     NULL, ref_vote_any, 0, 0},
    {CS "simpleVoteIntrinsics/simpleVote_kernel.cuh", NULL, "VoteAllKernel2", {1, 1, 1}, {128, 1, 1}, 0,
     {ARG_IN(U32, 128, 0.97, 2), ARG_OUT(U32, 128), ARG_SCALAR(I32, 128)},
     NULL, ref_vote_all, 0, 0},
    {CS "simpleVoteIntrinsics/simpleVote_kernel.cuh", NULL, "VoteAnyKernel3", {1, 1, 1}, {96, 1, 1}, 0,
     {ARG_OUT(BOOL8, 3 * 96), ARG_SCALAR(I32, 32)},
     NULL, ref_vote_directed, 0, 0},
    {CS "simpleVoteIntrinsics_nvrtc/simpleVote_kernel.cuh", NULL, "VoteAnyKernel1", {1, 1, 1}, {128, 1, 1}, 0,
     {ARG_IN(U32, 128, 0, 1.03), ARG_OUT(U32, 128), ARG_SCALAR(I32, 128)},
     NULL, ref_vote_any, 0, 0},
    {CS "simpleVoteIntrinsics_nvrtc/simpleVote_kernel.cuh", NULL, "VoteAllKernel2", {1, 1, 1}, {128, 1, 1}, 0,
     {ARG_IN(U32, 128, 0.97, 2), ARG_OUT(U32, 128), ARG_SCALAR(I32, 128)},
     NULL, ref_vote_all, 0, 0},
    {CS "simpleVoteIntrinsics_nvrtc/simpleVote_kernel.cuh", NULL, "VoteAnyKernel3", {1, 1, 1}, {96, 1, 1}, 0,
     {ARG_OUT(BOOL8, 3 * 96), ARG_SCALAR(I32, 32)},
     NULL, ref_vote_directed, 0, 0},
    {CS "threadMigration/threadMigration_kernel.cu", NULL, "kernelFunction", {1, 1, 1}, {32, 1, 1}, 0,
     {ARG_OUT(I32, 32)},
     NULL, ref_thread_migration, 0, 0},
    /* a grid-stride loop over the first 900 of 1000 bytes */
    {CS "memMapIPCDrv/memMapIpc_kernel.cu", NULL, "memMapIpc_kernel", {2, 1, 1}, {128, 1, 1}, 0,
     {ARG_INOUT(I8, 1000, -128, 128), ARG_SCALAR(I32, 900), ARG_SCALAR(I8, 42)},
     NULL, ref_fill_char, 0, 0},
    {CS "ptxjit/ptxjit_kernel.cu", NULL, "myKernel", {4, 1, 1}, {64, 1, 1}, 0,
     {ARG_OUT(I32, 256)},
     NULL, ref_thread_ids, 0, 0},
    {CS "segmentationTreeThrust/kernels.cuh", NULL, "addScalar", {SEG_GRID, 1, 1}, {SEG_BLOCK, 1, 1}, 0,
     {ARG_INOUT(U32, SEG_E, 0, 1e6), ARG_SCALAR(I32, -7), ARG_SCALAR(U32, 900)},
     NULL, ref_add_scalar, 0, 0},
    {CS "segmentationTreeThrust/kernels.cuh", NULL, "markSegments", {SEG_GRID, 1, 1}, {SEG_BLOCK, 1, 1}, 0,
     {ARG_IN(U32, SEG_V, 0, SEG_E), ARG_OUT(U32, SEG_E), ARG_SCALAR(U32, SEG_V)},
     NULL, ref_mark_segments, 0, 0},
    {CS "segmentationTreeThrust/kernels.cuh", NULL, "getVerticesMapping", {SEG_GRID, 1, 1}, {SEG_BLOCK, 1, 1}, 0,
     {ARG_IN(U32, SEG_V, 0, SEG_V), ARG_IN(U32, SEG_V, 0, 1e6), ARG_OUT(U32, SEG_V), ARG_SCALAR(U32, SEG_V)},
     prepare_permutation, ref_vertices_mapping, 0, 0},
    {CS "segmentationTreeThrust/kernels.cuh", NULL, "getSuccessors", {SEG_GRID, 1, 1}, {SEG_BLOCK, 1, 1}, 0,
     {ARG_IN(U32, SEG_V, 0, 1), ARG_IN(U32, SEG_E, 0, SEG_V), ARG_OUT(U32, SEG_V), ARG_SCALAR(U32, SEG_V),
      ARG_SCALAR(U32, SEG_E)},
     prepare_offsets, ref_successors, 0, 0},
    {CS "segmentationTreeThrust/kernels.cuh", NULL, "removeCycles", {SEG_GRID, 1, 1}, {SEG_BLOCK, 1, 1}, 0,
     {ARG_INOUT(U32, SEG_V, 0, SEG_V), ARG_SCALAR(U32, SEG_V)},
     prepare_two_cycles, ref_remove_cycles, 0, 0},
    {CS "segmentationTreeThrust/kernels.cuh", NULL, "getRepresentatives", {SEG_GRID, 1, 1}, {SEG_BLOCK, 1, 1}, 0,
     {ARG_IN(U32, SEG_V, 0, 1), ARG_OUT(U32, SEG_V), ARG_SCALAR(U32, SEG_V)},
     prepare_forest, ref_representatives, 0, 0},
    {CS "segmentationTreeThrust/kernels.cuh", NULL, "invalidateLoops", {SEG_GRID, 1, 1}, {SEG_BLOCK, 1, 1}, 0,
     {ARG_IN(U32, SEG_E, 0, SEG_V), ARG_IN(U32, SEG_V, 0, 50), ARG_INOUT(U32, SEG_E, 0, SEG_V),
      ARG_SCALAR(U32, SEG_E)},
     NULL, ref_invalidate_loops, 0, 0},
    {CS "segmentationTreeThrust/kernels.cuh", NULL, "calculateEdgesInfo", {SEG_GRID, 1, 1}, {SEG_BLOCK, 1, 1}, 0,
     {ARG_IN(U32, SEG_E, 0, SEG_V), ARG_IN(U32, SEG_V, 0, SEG_V), ARG_IN(U32, SEG_E, 0, SEG_V),
      ARG_IN(F32, SEG_E, 0, 1), ARG_OUT(U32, SEG_E), ARG_OUT(U32, SEG_E), ARG_SCALAR(U32, SEG_E),
      ARG_SCALAR(U32, SEG_V)},
     prepare_removed_edges, ref_edges_info, 0, 0},
    {CS "segmentationTreeThrust/kernels.cuh", NULL, "makeNewEdges", {SEG_GRID, 1, 1}, {SEG_BLOCK, 1, 1}, 0,
     {ARG_IN(U32, SEG_E, 0, SEG_E), ARG_IN(U32, SEG_V, 0, SEG_V), ARG_IN(U32, SEG_E, 0, SEG_V),
      ARG_IN(F32, SEG_E, 0, 1), ARG_OUT(U32, SEG_E), ARG_OUT(F32, SEG_E), ARG_SCALAR(U32, SEG_E)},
     NULL, ref_new_edges, 0, 0},
    /* 135 steps of 8 rows: the sample's 1080-row image */
    {CS "shfl_scan/shfl_integral_image.cuh", NULL, "shfl_vertical_shfl", {2, 1, 1}, {32, 8, 1}, 0,
     {ARG_INOUT(U32, 64 * 1080, 0, 1000), ARG_SCALAR(I32, 64), ARG_SCALAR(I32, 1080)},
     NULL, ref_column_prefix, 0, 0},
    /* the sample's ranges; float2 pairs, so 1000 float2 hold 2000 options */
    {CS "BlackScholes/BlackScholes_kernel.cuh", NULL, "BlackScholesGPU", {8, 1, 1}, {128, 1, 1}, 0,
     {ARG_OUT(F32, 2000), ARG_OUT(F32, 2000), ARG_IN(F32, 2000, 5, 30), ARG_IN(F32, 2000, 1, 100),
      ARG_IN(F32, 2000, 0.25, 10), ARG_SCALAR(F32, 0.02), ARG_SCALAR(F32, 0.30), ARG_SCALAR(I32, 2000)},
     NULL, ref_black_scholes, 2e-4, 1e-4},
    {QRNG, NULL, "quasirandomGeneratorKernel", {2, 1, 1}, {64, 3, 1}, 0,
     {ARG_OUT(F32, 3 * 1000), ARG_SCALAR(U32, 123), ARG_SCALAR(U32, 1000),
      ARG_GLOBAL("c_Table", U32, 3 * 31, 0, 4294967296.0)},
     NULL, ref_quasirandom, 0, 0},
    {QRNG, NULL, "inverseCNDKernel", {2, 1, 1}, {128, 1, 1}, 0,
     {ARG_OUT(F32, 1000), ARG_SCALAR(U32, 1000)},
     NULL, ref_inverse_cnd, 2e-5, 2e-5},
    {CS "BlackScholes_nvrtc/BlackScholes_kernel.cuh", NULL, "BlackScholesGPU", {8, 1, 1}, {128, 1, 1}, 0,
     {ARG_OUT(F32, 2000), ARG_OUT(F32, 2000), ARG_IN(F32, 2000, 5, 30), ARG_IN(F32, 2000, 1, 100),
      ARG_IN(F32, 2000, 0.25, 10), ARG_SCALAR(F32, 0.02), ARG_SCALAR(F32, 0.30), ARG_SCALAR(I32, 2000)},
     NULL, ref_black_scholes, 2e-4, 1e-4},
    {CS "simpleAtomicIntrinsics_nvrtc/simpleAtomicIntrinsics_kernel.cuh", NULL, "testKernel", {1, 1, 1},
     {32, 1, 1}, 0,
     {ARG_INOUT(I32, 11, 0, 64)},
     NULL, ref_atomics, 0, 0},
    {CS "FDTD3d/FDTD3dGPUKernel.cuh", NULL, "FiniteDifferencesKernel", {1, 1, 1}, {FD_X, FD_Y, 1}, 0,
     {ARG_OUT(F32, FD_N), ARG_IN(F32, FD_N, -1, 1), ARG_SCALAR(I32, FD_X), ARG_SCALAR(I32, FD_Y),
      ARG_SCALAR(I32, FD_Z), ARG_GLOBAL("stencil", F32, FD_R + 1, -0.5, 0.5)},
     NULL, ref_fdtd, 1e-5, 1e-5},
    {CS "simpleTemplates_nvrtc/simpleTemplates_kernel.cu", NULL, "testFloat", {1, 1, 1}, {64, 1, 1},
     64 * sizeof(float),
     {ARG_IN(F32, 64, -10, 10), ARG_OUT(F32, 64)},
     NULL, ref_scale_float, 0, 0},
    {CS "simpleTemplates_nvrtc/simpleTemplates_kernel.cu", NULL, "testInt", {1, 1, 1}, {64, 1, 1}, 64 * sizeof(int),
     {ARG_IN(I32, 64, -1000, 1000), ARG_OUT(I32, 64)},
     NULL, ref_scale_int, 0, 0},
    {CS "scalarProd_kernel.cuh", NULL, "scalarProdGPU", {4, 1, 1}, {256, 1, 1}, 0,
     {ARG_OUT(F32, 8), ARG_IN(F32, 8 * 2048, -1, 1), ARG_IN(F32, 8 * 2048, -1, 1), ARG_SCALAR(I32, 8),
      ARG_SCALAR(I32, 2048)},
     NULL, ref_scalar_prod, 1e-4, 1e-4},
    {CS "dwtHaar1D_kernel.cuh", DWT_OPTIONS, "initValue", {2, 1, 1}, {256, 1, 1}, 0,
     {ARG_INOUT(F32, 512, -1, 1), ARG_SCALAR(F32, 0.25)},
     NULL, ref_init_value, 0, 0},
    {CS "dwtHaar1D_kernel.cuh", DWT_OPTIONS, "dwtHaar1D", {1, 1, 1}, {256, 1, 1}, 2 * 512 * sizeof(float),
     {ARG_IN(F32, 512, -1, 1), ARG_OUT(F32, 512), ARG_OUT(F32, 1), ARG_SCALAR(U32, 9), ARG_SCALAR(U32, 256),
      ARG_SCALAR(I32, 256)},
     NULL, ref_dwt_haar, 1e-5, 1e-4},
};
/* clang-format on */
enum { CORPUS_SIZE = sizeof corpus / sizeof corpus[0] };

/* ------------------------------------------------------------------ runner */
static size_t elem_size(elem t) {
    switch (t) {
    case I8:
    case BOOL8: return 1;
    case F32:
    case I32:
    case U32: return 4;
    default: return 8;
    }
}
static kiln_dtype elem_dtype(elem t) {
    static const kiln_dtype d[] = {KILN_FLOAT32, KILN_FLOAT64, KILN_INT8,   KILN_INT32,
                                   KILN_UINT32,  KILN_INT64,   KILN_UINT64, KILN_BOOL};
    return d[t];
}
static double elem_get(const void *p, elem t, int64_t i) {
    switch (t) {
    case F32: return ((const float *)p)[i];
    case F64: return ((const double *)p)[i];
    case I8: return ((const int8_t *)p)[i];
    case I32: return ((const int32_t *)p)[i];
    case U32: return ((const uint32_t *)p)[i];
    case I64: return (double)((const int64_t *)p)[i];
    case U64: return (double)((const uint64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}
static void elem_set(void *p, elem t, int64_t i, double v) {
    switch (t) {
    case F32: ((float *)p)[i] = (float)v; break;
    case F64: ((double *)p)[i] = v; break;
    case I8: ((int8_t *)p)[i] = (int8_t)floor(v); break;
    case I32: ((int32_t *)p)[i] = (int32_t)floor(v); break;
    case U32: ((uint32_t *)p)[i] = (uint32_t)floor(v); break;
    case I64: ((int64_t *)p)[i] = (int64_t)floor(v); break;
    case U64: ((uint64_t *)p)[i] = (uint64_t)floor(v); break;
    default: ((uint8_t *)p)[i] = v != 0; break;
    }
}
static kiln_value scalar_value(elem t, const void *p) {
    switch (t) {
    case F32: return kiln_f32(*(const float *)p);
    case F64: return kiln_f64(*(const double *)p);
    case I8: return kiln_i8(*(const int8_t *)p);
    case I32: return kiln_i32(*(const int32_t *)p);
    case U32: return kiln_u32(*(const uint32_t *)p);
    case I64: return kiln_i64(*(const int64_t *)p);
    case U64: return kiln_u64(*(const uint64_t *)p);
    default: return kiln_bool(*(const uint8_t *)p);
    }
}

static const char *source_dir(void) {
    const char *root = getenv("KILN_SOURCE_DIR");
    if (!root) fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    return root;
}

/* Every module is compiled once per process: the rows share it. */
static struct {
    const char *file, *options;
    kiln_module *module;
} loaded[CORPUS_SIZE];

static int same_options(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }
static kiln_module *corpus_module(kiln_context *ctx, const char *file, const char *options) {
    int i = 0;
    for (; i < CORPUS_SIZE && loaded[i].file; i++)
        if (strcmp(loaded[i].file, file) == 0 && same_options(loaded[i].options, options))
            return loaded[i].module;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/corpus/%s", source_dir(), file);
    kiln_module *m = NULL;
    kiln_status s = kiln_module_from_file(ctx, path, options, &m);
    if (s != KILN_OK) fail_msg("%s: %s: %s", file, kiln_status_string(s), kiln_last_error());
    loaded[i].file = file;
    loaded[i].options = options;
    loaded[i].module = m;
    return m;
}

static void compare(const corpus_kernel *k, int arg, const void *got, const void *expect) {
    const corpus_arg *c = &k->args[arg];
    for (int64_t i = 0; i < c->count; i++) {
        double g = elem_get(got, c->type, i), e = elem_get(expect, c->type, i);
        int floating = c->type == F32 || c->type == F64;
        int ok = floating ? fabs(g - e) <= k->atol + k->rtol * fabs(e) || (g != g && e != e) : g == e;
        if (!ok)
            fail_msg("%s in %s: argument %d, element %lld: got %.9g, expected %.9g", k->kernel, k->file, arg,
                     (long long)i, g, e);
    }
}

static void run_row(kiln_context *ctx, const corpus_kernel *k) {
    kiln_module *m = corpus_module(ctx, k->file, k->options);
    char seed[512];
    snprintf(seed, sizeof seed, "%s:%s", k->file, k->kernel);
    test_rng rng = test_rng_for(seed);
    void *host[MAX_ARGS] = {0}, *expect[MAX_ARGS] = {0}, *got[MAX_ARGS] = {0};
    kiln_array *arrays[MAX_ARGS] = {0};
    kiln_value values[MAX_ARGS];
    int nargs = 0, n = 0;
    while (n < MAX_ARGS && k->args[n].role) n++;
    for (int i = 0; i < n; i++) {
        const corpus_arg *c = &k->args[i];
        size_t bytes = elem_size(c->type) * (size_t)c->count;
        host[i] = calloc(1, bytes);
        for (int64_t j = 0; j < c->count; j++)
            elem_set(host[i], c->type, j,
                     c->role == SKIP     ? 0
                     : c->role == SCALAR ? c->lo
                                         : test_uniform(&rng, c->lo, c->hi));
    }
    if (k->prepare) k->prepare(host, &rng);
    for (int i = 0; i < n; i++) {
        const corpus_arg *c = &k->args[i];
        size_t bytes = elem_size(c->type) * (size_t)c->count;
        expect[i] = malloc(bytes);
        memcpy(expect[i], host[i], bytes);
        if (c->role == SCALAR) {
            values[nargs++] = scalar_value(c->type, host[i]);
        } else if (c->role == GLOBAL) {
            TEST_OK(kiln_module_global(m, c->global, &arrays[i]));
            TEST_OK(kiln_array_from_host_copy(arrays[i], host[i], bytes));
        } else {
            TEST_OK(kiln_array_from_host(ctx, elem_dtype(c->type), 1, &c->count, host[i], bytes, &arrays[i]));
            values[nargs++] = kiln_arr(arrays[i]);
        }
    }
    kiln_kernel *kernel = NULL;
    TEST_OK(kiln_module_kernel(m, k->kernel, &kernel));
    kiln_status s = kiln_launch(kernel, k->grid, k->block, k->shared_bytes, NULL, values, nargs);
    if (s != KILN_OK) fail_msg("%s: %s: %s", k->kernel, kiln_status_string(s), kiln_last_error());
    for (int i = 0; i < n; i++) {
        if (!arrays[i]) continue;
        got[i] = malloc(elem_size(k->args[i].type) * (size_t)k->args[i].count);
        TEST_OK(kiln_array_to_host(arrays[i], got[i], elem_size(k->args[i].type) * (size_t)k->args[i].count));
    }
    k->reference(expect, (const void *const *)got, k->grid, k->block);
    for (int i = 0; i < n; i++)
        if (got[i] && k->args[i].role != SKIP) compare(k, i, got[i], expect[i]);
    kiln_kernel_release(kernel);
    for (int i = 0; i < n; i++) {
        kiln_array_release(arrays[i]);
        free(host[i]);
        free(expect[i]);
        free(got[i]);
    }
}

static void corpus_kernels(void **state) {
    kiln_context *ctx = *state;
    for (int i = 0; i < CORPUS_SIZE; i++) run_row(ctx, &corpus[i]);
}

/* The files as the GPU run compiles them: through NVRTC for sm_90, with
 * the file's folder given for its includes (kiln_module_from_file finds
 * them there by itself). Skipped where NVRTC is absent. */
static void corpus_through_nvrtc(void **state) {
    (void)state;
    for (int i = 0; i < CORPUS_SIZE; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= strcmp(corpus[j].file, corpus[i].file) == 0 &&
                    same_options(corpus[j].options, corpus[i].options);
        if (seen) continue;
        char path[1024], options[2048];
        snprintf(path, sizeof path, "%s/tests/corpus/%s", source_dir(), corpus[i].file);
        char *text = test_read_file(path);
        assert_non_null(text);
        *strrchr(path, '/') = 0;
        snprintf(options, sizeof options, "%s -I%s", corpus[i].options ? corpus[i].options : "", path);
        char *log = NULL;
        kiln_status s = kiln_compile_only("cuda", "sm_90", text, corpus[i].file, options, &log);
        free(text);
        if (s == KILN_ERR_COMPILER_MISSING) {
            kiln_free(log);
            skip();
        }
        if (s != KILN_OK) fail_msg("%s: %s: %s", corpus[i].file, kiln_last_error(), log ? log : "");
        kiln_free(log);
    }
}

/* The child: loads every module of the corpus (which the parent has built
 * into the same cache) and prints the context's counters. */
static int load_every_module(void) {
    kiln_context *ctx = NULL;
    if (kiln_open(&ctx, test_target()) != KILN_OK) {
        printf("kiln_open: %s\n", kiln_last_error());
        return 1;
    }
    int modules = 0;
    for (int i = 0; i < CORPUS_SIZE; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= strcmp(corpus[j].file, corpus[i].file) == 0 &&
                    same_options(corpus[j].options, corpus[i].options);
        if (seen) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/corpus/%s", getenv("KILN_SOURCE_DIR"), corpus[i].file);
        kiln_module *m = NULL;
        TEST_CHILD_CHECK(kiln_module_from_file(ctx, path, corpus[i].options, &m) == KILN_OK, "%s: %s",
                         corpus[i].file, kiln_last_error());
        kiln_module_release(m);
        modules++;
    }
    kiln_jit_wait(ctx);
    kiln_jit_stats st;
    TEST_CHILD_CHECK(kiln_jit_stats_get(ctx, &st) == KILN_OK, "%s", kiln_last_error());
    printf("modules=%d compiles=%lld hits=%lld rejects=%lld\n", modules, (long long)st.compiles,
           (long long)st.cache_hits, (long long)st.cache_rejects);
    kiln_close(ctx);
    return 0;
}

/* After corpus_kernels built every module in this test's cache, a second
 * process finds them all there: no compile, no reject. */
static void second_process_loads_from_cache(void **state) {
    kiln_context *ctx = *state;
    for (int i = 0; i < CORPUS_SIZE; i++) corpus_module(ctx, corpus[i].file, corpus[i].options);
    kiln_jit_wait(ctx);
    int modules = 0;
    while (modules < CORPUS_SIZE && loaded[modules].file) modules++;
    char *out = NULL;
    assert_int_equal(test_spawn_child("cached", NULL, &out), 0);
    char expect[128];
    snprintf(expect, sizeof expect, "modules=%d compiles=0 hits=%d rejects=0", modules, modules);
    if (!test_contains(out, expect)) fail_msg("second process: %s (expected %s)", out, expect);
    free(out);
}

static int setup(void **state) {
    *state = test_open();
    return *state ? 0 : -1;
}
static int teardown(void **state) {
    for (int i = 0; i < CORPUS_SIZE && loaded[i].file; i++) kiln_module_release(loaded[i].module);
    kiln_close(*state);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "cached") == 0)
        return load_every_module();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(corpus_kernels),
        cmocka_unit_test(corpus_through_nvrtc),
        cmocka_unit_test(second_process_loads_from_cache),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
