/* test_blas_small.c: kiln's kernel for batches of small products
 * (src/blas/blas_small.c): every dtype it takes against a long double
 * reference over shapes 1..32 (odd ones, padding on every side), batches
 * that broadcast one operand, strided views, alpha and beta, the choice
 * between it, the gufunc and the library, and its CUDA source for sm_90. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas/blas_internal.h"
#include "test_support.h"

extern const char kiln_embedded_blas_small_kernels[];

static int on_cuda(kiln_context *ctx) { return kiln_context_backend(ctx) == KILN_BACKEND_CUDA; }

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
static void get(kiln_dtype t, const void *p, size_t i, long double *re, long double *im) {
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

/* c = alpha a b + beta c0 over the batch (b broadcast when its batch is 1),
 * within rounding of the accumulation and the storage. */
static void check(const char *what, kiln_dtype t, kiln_array *a, kiln_array *b, kiln_array *c0, kiln_array *c,
                  double alpha, double beta) {
    int nd = kiln_array_ndim(c);
    const int64_t *cs = kiln_array_shape(c);
    int64_t batch = cs[0], m = cs[nd - 2], n = cs[nd - 1], k = kiln_array_shape(a)[nd - 1];
    int64_t b_batch = kiln_array_shape(b)[0];
    void *ha = test_read_array(a), *hb = test_read_array(b), *hc = test_read_array(c);
    void *h0 = c0 ? test_read_array(c0) : NULL;
    for (int64_t q = 0; q < batch; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                long double sr = 0, si = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    long double ar, ai, br, bi;
                    get(t, ha, (size_t)((q * m + i) * k + p), &ar, &ai);
                    get(t, hb, (size_t)(((b_batch == 1 ? 0 : q) * k + p) * n + j), &br, &bi);
                    sr += ar * br - ai * bi, si += ar * bi + ai * br;
                    mag += (fabsl(ar) + fabsl(ai)) * (fabsl(br) + fabsl(bi));
                }
                sr *= alpha, si *= alpha, mag *= fabs(alpha);
                if (h0) {
                    long double r0, i0;
                    get(t, h0, (size_t)((q * m + i) * n + j), &r0, &i0);
                    sr += beta * r0, si += beta * i0, mag += fabs(beta) * (fabsl(r0) + fabsl(i0));
                }
                long double gr, gi;
                get(t, hc, (size_t)((q * m + i) * n + j), &gr, &gi);
                double tol = (double)mag * ((double)(k + 2) * acc_eps(t) + 2 * storage_eps(t)) + 1e-300;
                if (fabsl(gr - sr) > tol || fabsl(gi - si) > tol)
                    fail_msg("%s %s %lldx%lldx%lld: C[%lld][%lld][%lld] = (%Lg, %Lg), expected (%Lg, %Lg) "
                             "within %g",
                             what, kiln_dtype_name(t), (long long)m, (long long)n, (long long)k, (long long)q,
                             (long long)i, (long long)j, gr, gi, sr, si, tol);
            }
    free(ha), free(hb), free(hc), free(h0);
}

static int takes(kiln_context *ctx, kiln_dtype t) {
    if (on_cuda(ctx)) return 1;
    /* the CPU's float16 gemm is refused and its bfloat16 goes through float32;
     * its float32/float64 batches take the gufunc: the tiled kernel runs on
     * the CPU for complex dtypes */
    return t == KILN_COMPLEX64 || t == KILN_COMPLEX128;
}

static void test_every_dtype_and_shape(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    static const kiln_dtype types[] = {KILN_FLOAT32,  KILN_FLOAT64,   KILN_FLOAT16,
                                       KILN_BFLOAT16, KILN_COMPLEX64, KILN_COMPLEX128};
    static const int64_t dims[][3] = {{1, 1, 1},  {2, 3, 5},    {4, 4, 4},   {5, 7, 3},    {8, 8, 8},
                                      {13, 6, 9}, {16, 16, 16}, {17, 31, 2}, {24, 20, 28}, {32, 32, 32}};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        kiln_dtype t = types[ti];
        if (!takes(ctx, t)) continue;
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
            int64_t m = dims[di][0], n = dims[di][1], k = dims[di][2];
            if (!kiln_blas_small_fits(t, m, n, k)) continue;
            int64_t sa[3] = {37, m, k}, sb[3] = {di % 2 ? 1 : 37, k, n}, sc[3] = {37, m, n};
            kiln_array *a = random_of(ctx, &rng, t, 3, sa), *b = random_of(ctx, &rng, t, 3, sb);
            kiln_array *c0 = random_of(ctx, &rng, t, 3, sc), *c = NULL, *c2 = NULL;
            TEST_OK(kiln_matmul_ex(NULL, KILN_BLAS_FORCE_KILN, a, b, &c));
            check("matmul", t, a, b, NULL, c, 1, 0);
            /* gemm with alpha and beta into a copy of c0 */
            TEST_OK(kiln_array_copy(c0, &c2));
            kiln_blas_scalar alpha = {0.5, 0}, beta = {-1.25, 0};
            TEST_OK(kiln_gemm(NULL, KILN_BLAS_FORCE_KILN, KILN_BLAS_N, KILN_BLAS_N, alpha, a, b, beta, c2));
            check("gemm", t, a, b, c0, c2, 0.5, -1.25);
            kiln_array_release(a), kiln_array_release(b), kiln_array_release(c0);
            kiln_array_release(c), kiln_array_release(c2);
        }
    }
}

/* Strided operands: every other matrix of a batch, a transposed b. */
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
    size_t n = (size_t)kiln_array_size(c);
    for (size_t i = 0; i < n; i++) {
        long double cr, ci, rr, ri;
        get(t, hc, i, &cr, &ci);
        get(t, hr, i, &rr, &ri);
        if (fabsl(cr - rr) > 1e-4L * (1 + fabsl(rr)) || fabsl(ci - ri) > 1e-4L * (1 + fabsl(ri)))
            fail_msg("strided views: element %zu: kernel (%Lg, %Lg), library (%Lg, %Lg)", i, cr, ci, rr, ri);
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

static void test_cuda_source_for_sm90(void **state) {
    (void)state;
    for (int kind = 0; kind <= 5; kind++) {
        char options[32], *log = NULL;
        snprintf(options, sizeof options, "-DKILN_SG_KIND=%d", kind);
        kiln_status s = kiln_compile_only("cuda", "sm_90", kiln_embedded_blas_small_kernels, "blas_small.cu",
                                          options, &log);
        if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING)
            fail_msg("NVRTC, kind %d: %s", kind, kiln_last_error());
        kiln_free(log);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_dtype_and_shape),
        cmocka_unit_test(test_strided_views),
        cmocka_unit_test(test_choice_in_profile),
        cmocka_unit_test(test_cuda_source_for_sm90),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
