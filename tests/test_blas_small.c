/* test_blas_small.c: kiln's kernel for batches of small products
 * (src/blas/blas_small.c), run on the context's backend (the CPU backend
 * runs the same CUDA C source): every dtype at every square size 1..32 and
 * at non-square shapes against a long double reference, transposed
 * operands, strided and broadcast batches, a C with padding between its
 * rows that must stay untouched, alpha and beta, another register tile and
 * block size (KILN_BLAS_SMALL_TILE, _PER_BLOCK), the choice between it,
 * the gufunc and the library, and its instantiations compiled for sm_90 by
 * NVRTC. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas/blas_internal.h"
#include "test_support.h"

extern const char kiln_embedded_blas_small_kernels[];

static int on_cuda(kiln_context *ctx) { return kiln_context_backend(ctx) == KILN_BACKEND_CUDA; }

static const kiln_dtype all_types[] = {KILN_FLOAT32,  KILN_FLOAT64,   KILN_FLOAT16,
                                       KILN_BFLOAT16, KILN_COMPLEX64, KILN_COMPLEX128};
enum { NTYPES = sizeof all_types / sizeof all_types[0] };

/* half and bfloat16 bits <-> double */
static double half_value(uint16_t h) {
    int e = (h >> 10) & 31, f = h & 1023;
    double v = e ? ldexp(1.0 + f / 1024.0, e - 15) : ldexp(f / 1024.0, -14);
    return (h & 0x8000) ? -v : v;
}
static double bf16_value(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element i of a host copy as (re, im). */
static void get(kiln_dtype t, const void *p, int64_t i, long double *re, long double *im) {
    *im = 0;
    switch (t) {
    case KILN_FLOAT32: *re = ((const float *)p)[i]; break;
    case KILN_FLOAT64: *re = ((const double *)p)[i]; break;
    case KILN_FLOAT16: *re = half_value(((const uint16_t *)p)[i]); break;
    case KILN_BFLOAT16: *re = bf16_value(((const uint16_t *)p)[i]); break;
    case KILN_COMPLEX64: *re = ((const float *)p)[2 * i], *im = ((const float *)p)[2 * i + 1]; break;
    default: *re = ((const double *)p)[2 * i], *im = ((const double *)p)[2 * i + 1]; break;
    }
}

/* Random values of dtype t in [-2, 2] (exact in t), on ctx. */
static kiln_array *random_of(kiln_context *ctx, test_rng *r, kiln_dtype t, int ndim, const int64_t *shape) {
    size_t n = 1, item = kiln_dtype_size(t);
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    unsigned char *h = malloc(n * item + 1);
    for (size_t i = 0; i < n; i++) {
        double v = test_uniform(r, -2, 2), w = test_uniform(r, -2, 2);
        float f = (float)v;
        uint32_t u;
        switch (t) {
        case KILN_FLOAT32: ((float *)h)[i] = f; break;
        case KILN_FLOAT64: ((double *)h)[i] = v; break;
        case KILN_FLOAT16: { /* 0.25 <= |x| < 4, any mantissa */
            uint16_t bits =
                (uint16_t)(((13 + (int)test_uniform(r, 0, 3.999)) << 10) | (int)test_uniform(r, 0, 1023.99));
            ((uint16_t *)h)[i] = (uint16_t)(bits | (v < 0 ? 0x8000 : 0));
            break;
        }
        case KILN_BFLOAT16:
            memcpy(&u, &f, 4);
            ((uint16_t *)h)[i] = (uint16_t)(u >> 16);
            break;
        case KILN_COMPLEX64: ((float *)h)[2 * i] = f, ((float *)h)[2 * i + 1] = (float)w; break;
        default: ((double *)h)[2 * i] = v, ((double *)h)[2 * i + 1] = w; break;
        }
    }
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, ndim, shape, h, n * item, &a));
    free(h);
    return a;
}

/* Unit roundoff of dtype t's storage, and of its accumulation. */
static double storage_eps(kiln_dtype t) {
    return t == KILN_FLOAT16                          ? 0x1p-11
           : t == KILN_BFLOAT16                       ? 0x1p-8
           : t == KILN_FLOAT32 || t == KILN_COMPLEX64 ? 0x1p-24
                                                      : 0x1p-53;
}
static double acc_eps(kiln_dtype t) { return t == KILN_FLOAT64 || t == KILN_COMPLEX128 ? 0x1p-53 : 0x1p-24; }

/* A host copy of an operand and where its elements are: element (r, c) of
 * product q at h[off + q * st[0] + r * st[1] + c * st[2]]. */
typedef struct host_op {
    void *h;
    int64_t off, st[3];
} host_op;

/* c = alpha a b + beta c0 over the batch, within rounding of the
 * accumulation and the storage; c0 NULL: beta 0. */
static void check(const char *what, kiln_dtype t, int64_t batch, int64_t m, int64_t n, int64_t k, host_op a,
                  host_op b, const host_op *c0, host_op c, double alpha, double beta) {
    for (int64_t q = 0; q < batch; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                long double sr = 0, si = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    long double ar, ai, br, bi;
                    get(t, a.h, a.off + q * a.st[0] + i * a.st[1] + p * a.st[2], &ar, &ai);
                    get(t, b.h, b.off + q * b.st[0] + p * b.st[1] + j * b.st[2], &br, &bi);
                    sr += ar * br - ai * bi, si += ar * bi + ai * br;
                    mag += (fabsl(ar) + fabsl(ai)) * (fabsl(br) + fabsl(bi));
                }
                sr *= alpha, si *= alpha, mag *= fabs(alpha);
                int64_t at = q * c.st[0] + i * c.st[1] + j * c.st[2];
                if (c0) {
                    long double r0, i0;
                    get(t, c0->h, c0->off + at, &r0, &i0);
                    sr += beta * r0, si += beta * i0, mag += fabs(beta) * (fabsl(r0) + fabsl(i0));
                }
                long double gr, gi;
                get(t, c.h, c.off + at, &gr, &gi);
                double tol = (double)mag * ((double)(k + 2) * acc_eps(t) + 2 * storage_eps(t)) + 1e-300;
                if (!(fabsl(gr - sr) <= tol && fabsl(gi - si) <= tol))
                    fail_msg("%s %s %lldx%lldx%lld: C[%lld][%lld][%lld] = (%Lg, %Lg), expected (%Lg, %Lg) "
                             "within %g",
                             what, kiln_dtype_name(t), (long long)m, (long long)n, (long long)k, (long long)q,
                             (long long)i, (long long)j, gr, gi, sr, si, tol);
            }
}

/* An operand seen with its last two dims swapped (a stored transpose). */
static blas_mat transposed(kiln_array *a) {
    blas_mat M = kiln_blas_mat_whole(a);
    int64_t s = M.shape[1], st = M.strides[1];
    M.shape[1] = M.shape[2], M.strides[1] = M.strides[2];
    M.shape[2] = s, M.strides[2] = st;
    return M;
}

/* One run of kiln's kernel on batch products m x k by k x n, checked:
 * trans_a / trans_b store the operand transposed, b_batch 1 broadcasts b,
 * c_pad puts that many elements between C's rows (they must keep their
 * value), alpha and beta. */
typedef struct small_case {
    int64_t batch, m, n, k;
    int trans_a, trans_b, b_batch1, c_pad;
    double alpha, beta;
} small_case;

static void run_case(kiln_context *ctx, test_rng *rng, kiln_dtype t, const char *what, small_case sc) {
    int64_t m = sc.m, n = sc.n, k = sc.k, nb = sc.b_batch1 ? 1 : sc.batch;
    int64_t sa[3] = {sc.batch, sc.trans_a ? k : m, sc.trans_a ? m : k};
    int64_t sb[3] = {nb, sc.trans_b ? n : k, sc.trans_b ? k : n};
    int64_t sc_full[3] = {sc.batch, m, n + sc.c_pad};
    kiln_array *a = random_of(ctx, rng, t, 3, sa), *b = random_of(ctx, rng, t, 3, sb);
    kiln_array *c_full = random_of(ctx, rng, t, 3, sc_full), *c = NULL;
    TEST_OK(kiln_array_slice(c_full, 2, sc.c_pad, n + sc.c_pad, 1, &c));
    void *h0 = test_read_array(c_full);
    blas_mat A = sc.trans_a ? transposed(a) : kiln_blas_mat_whole(a);
    blas_mat B = sc.trans_b ? transposed(b) : kiln_blas_mat_whole(b);
    blas_mat C = kiln_blas_mat_whole(c);
    int64_t strides[3] = {m * k, sc.b_batch1 ? 0 : k * n, m * (n + sc.c_pad)};
    TEST_OK(kiln_blas_small_run(ctx, NULL, &A, &B, &C, sc.batch, strides, KILN_BLAS_SCALAR(sc.alpha, 0),
                                KILN_BLAS_SCALAR(sc.beta, 0)));
    TEST_OK(kiln_synchronize(ctx));
    host_op ha = {test_read_array(a), 0, {m * k, sc.trans_a ? 1 : k, sc.trans_a ? m : 1}};
    host_op hb = {test_read_array(b), 0, {sc.b_batch1 ? 0 : k * n, sc.trans_b ? 1 : n, sc.trans_b ? k : 1}};
    host_op hc = {test_read_array(c_full), sc.c_pad, {m * (n + sc.c_pad), n + sc.c_pad, 1}};
    host_op hc0 = {h0, sc.c_pad, {m * (n + sc.c_pad), n + sc.c_pad, 1}};
    check(what, t, sc.batch, m, n, k, ha, hb, sc.beta != 0 ? &hc0 : NULL, hc, sc.alpha, sc.beta);
    /* the padding between C's rows is not C's */
    size_t item = kiln_dtype_size(t);
    for (int64_t r = 0; r < sc.batch * m; r++)
        if (memcmp((char *)hc.h + (size_t)(r * (n + sc.c_pad)) * item,
                   (char *)h0 + (size_t)(r * (n + sc.c_pad)) * item, (size_t)sc.c_pad * item) != 0)
            fail_msg("%s %s %lldx%lldx%lld: the padding before C's row %lld was written", what,
                     kiln_dtype_name(t), (long long)m, (long long)n, (long long)k, (long long)r);
    free(ha.h), free(hb.h), free(hc.h), free(h0);
    kiln_array_release(a), kiln_array_release(b), kiln_array_release(c_full), kiln_array_release(c);
}

/* Every dtype, every square size 1..32 (several blocks, the last one
 * partial), then non-square shapes with alpha and beta. */
static void test_every_dtype_and_size(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    static const int64_t odd[][3] = {{1, 7, 3},   {2, 3, 5},    {5, 7, 3},   {13, 6, 9},
                                     {17, 31, 2}, {24, 20, 28}, {32, 1, 32}, {3, 32, 17}};
    for (int ti = 0; ti < NTYPES; ti++) {
        kiln_dtype t = all_types[ti];
        for (int64_t d = 1; d <= 32; d++) {
            small_case sc = {d <= 16 ? 37 : 11, d, d, d, 0, 0, 0, 0, 1, 0};
            run_case(ctx, &rng, t, "square", sc);
        }
        for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
            small_case sc = {9, odd[i][0], odd[i][1], odd[i][2], 0, 0, 0, 0, 0.5, -1.25};
            run_case(ctx, &rng, t, "gemm", sc);
        }
    }
}

/* Transposed operands (the staging turns them), broadcast b, C rows with
 * padding (scalar stores, no vectors), misaligned starts. */
static void test_layouts(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    static const int64_t dims[][3] = {{16, 16, 16}, {7, 9, 5}, {32, 32, 32}, {12, 20, 3}};
    for (int ti = 0; ti < NTYPES; ti++)
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
            for (int v = 0; v < 4; v++) {
                small_case sc = {
                    13,           dims[i][0], dims[i][1], dims[i][2],         v & 1,
                    (v >> 1) & 1, v == 2,     1 + v,      v == 3 ? 2.0 : 1.0, v == 1 ? 0.5 : 0.0};
                run_case(ctx, &rng, all_types[ti], "layout", sc);
            }
}

/* A register tile other than the default (KILN_BLAS_SMALL_TILE; 2 x 8:
 * unequal sides, vector reads of B wider than 16 bytes) with more products
 * a block than shared memory holds (clamped), then the default tile with 3
 * products a block (KILN_BLAS_SMALL_PER_BLOCK: many blocks, a partial last). */
static void test_other_tiles(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    static const int64_t dims[][3] = {{16, 16, 16}, {5, 11, 7}, {32, 32, 32}, {1, 1, 1}};
    for (int i = 0; i < 2; i++) {
        if (i == 0) setenv("KILN_BLAS_SMALL_TILE", "2x8", 1);
        setenv("KILN_BLAS_SMALL_PER_BLOCK", i == 0 ? "1000" : "3", 1);
        for (size_t j = 0; j < sizeof dims / sizeof dims[0]; j++) {
            small_case sc = {21, dims[j][0], dims[j][1], dims[j][2], (int)j & 1, 0, 0, 0, 1, 0};
            run_case(ctx, &rng, KILN_FLOAT32, i == 0 ? "tile 2x8" : "3 a block", sc);
        }
        unsetenv("KILN_BLAS_SMALL_TILE");
        unsetenv("KILN_BLAS_SMALL_PER_BLOCK");
    }
}

/* The public path: strided operands (every other matrix, a transposed b)
 * through kiln_matmul_ex, kiln's kernel against the library. */
static void test_strided_views(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    kiln_dtype t = on_cuda(ctx) ? KILN_FLOAT32 : KILN_COMPLEX64;
    int64_t sa[3] = {40, 6, 9}, sb[3] = {20, 7, 9};
    kiln_array *a = random_of(ctx, &rng, t, 3, sa), *b = random_of(ctx, &rng, t, 3, sb);
    kiln_array *ev = NULL, *bt = NULL, *c = NULL, *ref = NULL;
    TEST_OK(kiln_array_slice(a, 0, 0, 40, 2, &ev));
    int perm[3] = {0, 2, 1};
    TEST_OK(kiln_array_transpose(b, perm, &bt));
    TEST_OK(kiln_matmul_ex(NULL, KILN_BLAS_FORCE_KILN, ev, bt, &c));
    TEST_OK(kiln_matmul_ex(NULL, KILN_BLAS_FORCE_LIBRARY, ev, bt, &ref));
    void *hc = test_read_array(c), *hr = test_read_array(ref);
    int64_t n = kiln_array_size(c);
    for (int64_t i = 0; i < n; i++) {
        long double cr, ci, rr, ri;
        get(t, hc, i, &cr, &ci);
        get(t, hr, i, &rr, &ri);
        if (fabsl(cr - rr) > 1e-4L * (1 + fabsl(rr)) || fabsl(ci - ri) > 1e-4L * (1 + fabsl(ri)))
            fail_msg("strided views: element %lld: kernel (%Lg, %Lg), library (%Lg, %Lg)", (long long)i, cr,
                     ci, rr, ri);
    }
    free(hc), free(hr);
    kiln_array *all[6] = {a, b, ev, bt, c, ref};
    for (int i = 0; i < 6; i++) kiln_array_release(all[i]);
}

/* Which kernel a default call takes, as the profile names it. */
static void test_choice_in_profile(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    int64_t s12[3] = {200, 12, 12}, s64[3] = {200, 40, 40};
    kiln_array *a = random_of(ctx, &rng, KILN_FLOAT32, 3, s12),
               *big = random_of(ctx, &rng, KILN_FLOAT32, 3, s64);
    kiln_array *c = NULL, *c2 = NULL;
    TEST_OK(kiln_profiler_start(ctx));
    TEST_OK(kiln_profiler_reset(ctx));
    TEST_OK(kiln_matmul(a, a, &c));
    TEST_OK(kiln_matmul(big, big, &c2));
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    TEST_OK(kiln_profiler_stop(ctx));
    /* 12 x 12: kiln's tiled kernel on CUDA (float32's crossover), the
     * library on the CPU (the gufunc wins there only up to 8); 40 x 40:
     * the library everywhere */
    const char *small = on_cuda(ctx) ? "[kiln small-matrix kernel]" : "[OpenBLAS";
    if (!test_contains(text, small) || test_contains(text, on_cuda(ctx) ? "[kiln gufunc]" : "[kiln small"))
        fail_msg("expected %s in:\n%s", small, text);
    kiln_free(text);
    kiln_array_release(a), kiln_array_release(big), kiln_array_release(c), kiln_array_release(c2);
}

/* Every instantiation the library compiles by default (one per dtype, with
 * its launch bounds), and for float32 the extremes of the tile setting:
 * 1 x 1 (1024-thread bounds), 2 x 8 and 8 x 8 (the most registers). The
 * other tiles are the same template; each NVRTC compile costs ~0.5 s. */
static void test_cuda_source_for_sm90(void **state) {
    (void)state;
    static const int cases[][5] = {{0, 4, 4, 256, 3},  {1, 4, 4, 256, 2}, {2, 4, 4, 256, 2},
                                   {3, 4, 4, 256, 2},  {4, 4, 4, 256, 2}, {5, 2, 2, 256, 2},
                                   {0, 1, 1, 1024, 1}, {0, 2, 8, 256, 3}, {0, 8, 8, 256, 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char options[160], *log = NULL;
        snprintf(options, sizeof options,
                 "-DKILN_SG_KIND=%d -DKILN_SG_TM=%d -DKILN_SG_TN=%d -DKILN_SG_MAX_THREADS=%d "
                 "-DKILN_SG_MIN_BLOCKS=%d",
                 cases[i][0], cases[i][1], cases[i][2], cases[i][3], cases[i][4]);
        kiln_status s = kiln_compile_only("cuda", "sm_90", kiln_embedded_blas_small_kernels, "blas_small.cu",
                                          options, &log);
        if (s == KILN_ERR_COMPILER_MISSING) return;
        if (s != KILN_OK) fail_msg("NVRTC, %s: %s", options, kiln_last_error());
        kiln_free(log);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_dtype_and_size), cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_other_tiles),          cmocka_unit_test(test_strided_views),
        cmocka_unit_test(test_choice_in_profile),    cmocka_unit_test(test_cuda_source_for_sm90),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
