/* test_fft_fuse.c: kiln_fft_convolve's circular mode and the fused product
 * (KILN_FFT_FUSE). Without a GPU: the product callback compiles to LTO-IR
 * through NVRTC for sm_90 (and a broken one fails with the compiler's
 * log), and so does the strip kernel; the circular mode against a direct
 * circular convolution on the host, with the setting auto, off and on (on
 * must fail on the CPU, where FFTW has no callbacks); the strip kernel
 * along columns and rows run on the CPU backend (KILN_FFT_FUSE=columns,
 * rows). On a CUDA context (KILN_TEST_TARGET=cuda) the
 * same cases run fused (KILN_FFT_FUSE=on must succeed) and match the
 * unfused results and the host's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backends.h"
#include "fft/fft.h"
#include "test_support.h"

static const kiln_backend_lto *cuda_lto(void) {
    const kiln_backend_ops *ops = kiln_backend_named("cuda");
    assert_non_null(ops);
    assert_non_null(ops->get_proc_address);
    const kiln_backend_lto *lto = ops->get_proc_address(KILN_BACKEND_PROC_LTO);
    assert_non_null(lto);
    return lto;
}

/* NVRTC's LTO-IR (what nvJitLink takes as LTO input) starts with this
 * container's magic, 0x7f4e43ed little-endian; a cubin would be ELF. */
static int is_lto_ir(const kiln_blob *b) {
    static const unsigned char magic[4] = {0xed, 0x43, 0x4e, 0x7f};
    return b->size > sizeof magic && memcmp(b->data, magic, sizeof magic) == 0;
}

static void test_callback_compiles_for_sm90(void **state) {
    (void)state;
    const kiln_backend_ops *ops = kiln_backend_named("cuda");
    for (int dbl = 0; dbl < 2; dbl++) {
        kiln_blob ir = {0};
        kiln_status s = kiln_fft_product_callback_compile(ops, dbl, "sm_90", &ir);
        if (s == KILN_ERR_COMPILER_MISSING) skip();
        if (s != KILN_OK) fail_msg("%s", kiln_last_error());
        if (!is_lto_ir(&ir))
            fail_msg("%zu bytes starting %02x%02x%02x%02x: not LTO-IR", ir.size, ir.data[0], ir.data[1],
                     ir.data[2], ir.data[3]);
        free(ir.data);
    }
}

/* The strip kernel as the two precisions, both orientations, the
 * spectrum in shared memory or not, and the register counts the geometry
 * picks (16 up to 2048 rows of complex64 in strips of 4 columns, 32 at
 * 4096; 16 for a row a block), with their launch bounds; and short lines
 * (one pass of radix 2 or 8; 16 then 2 or 4), fewer values than a thread
 * holds. */
static void test_strip_compile_for_sm90(void **state) {
    (void)state;
    enum { CASES = 11 };
    static const kiln_fft_strip_shape cases[CASES] = {
        {0, 0, 0, 0, 4, 16, 512, 1, 11}, {0, 0, 0, 0, 4, 32, 512, 1, 12}, {1, 0, 0, 0, 2, 16, 512, 1, 12},
        {0, 1, 1, 0, 1, 16, 256, 3, 12}, {1, 1, 0, 0, 2, 32, 512, 1, 13}, {0, 0, 1, 0, 1, 16, 64, 4, 10},
        {0, 0, 1, 1, 1, 16, 256, 3, 12}, {0, 1, 0, 0, 4, 16, 64, 4, 1},   {1, 0, 1, 1, 2, 16, 64, 4, 5},
        {0, 0, 0, 0, 4, 16, 64, 4, 6},   {0, 1, 0, 0, 1, 16, 64, 4, 3}};
    for (int i = 0; i < CASES; i++) {
        char *src = kiln_fft_strip_source(&cases[i]), *log = NULL;
        assert_non_null(src);
        kiln_status s = kiln_compile_only("cuda", "sm_90", src, "kiln-fft-strip.cu", NULL, &log);
        if (s == KILN_ERR_COMPILER_MISSING) skip();
        if (s != KILN_OK) fail_msg("NVRTC: %s\n%s", kiln_last_error(), log ? log : "");
        free(src);
        kiln_free(log);
    }
}

static void test_lto_errors(void **state) {
    (void)state;
    const kiln_backend_lto *lto = cuda_lto();
    kiln_blob ir = {0};
    char *log = NULL;
    kiln_status s = lto->compile("__device__ float2 f(void *in {", "broken.cu", "sm_90", &ir, &log);
    if (s == KILN_ERR_COMPILER_MISSING) skip();
    assert_int_equal(s, KILN_ERR_COMPILE);
    assert_null(ir.data);
    assert_true(test_contains(kiln_last_error(), "broken.cu"));
    assert_non_null(log);
    free(log);
    TEST_FAILS_WITH(lto->compile("__device__ int g() { return 1; }", "arch.cu", "gfx90a", &ir, NULL),
                    KILN_ERR_INVALID_ARGUMENT, "sm_XX");
}

/* ------------------------------------------------------------------ circular mode */

typedef struct host2 {
    int64_t p, q;
    double *re, *im; /* im NULL: real */
} host2;

static kiln_array *upload2(kiln_context *ctx, test_rng *r, kiln_dtype t, int64_t p, int64_t q, host2 *h) {
    size_t n = (size_t)(p * q), item = kiln_dtype_size(t);
    int cx = t == KILN_COMPLEX64 || t == KILN_COMPLEX128, dbl = t == KILN_FLOAT64 || t == KILN_COMPLEX128;
    h->p = p, h->q = q;
    h->re = calloc(n, sizeof(double));
    h->im = cx ? calloc(n, sizeof(double)) : NULL;
    unsigned char *buf = malloc(n * item);
    for (size_t i = 0; i < n; i++) {
        double re = test_uniform(r, -1, 1), im = cx ? test_uniform(r, -1, 1) : 0;
        if (!dbl) re = (float)re, im = (float)im;
        h->re[i] = re;
        if (cx) h->im[i] = im;
        if (dbl)
            ((double *)buf)[cx ? 2 * i : i] = re;
        else
            ((float *)buf)[cx ? 2 * i : i] = (float)re;
        if (cx && dbl) ((double *)buf)[2 * i + 1] = im;
        if (cx && !dbl) ((float *)buf)[2 * i + 1] = (float)im;
    }
    int64_t shape[2] = {p, q};
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, 2, shape, buf, n * item, &a));
    free(buf);
    return a;
}

/* Checks c (p x q) against the direct circular convolution of a and b. */
static void check_circular(kiln_array *c, const host2 *a, const host2 *b, double eps) {
    kiln_dtype t = kiln_array_dtype(c);
    int cx = t == KILN_COMPLEX64 || t == KILN_COMPLEX128, dbl = t == KILN_FLOAT64 || t == KILN_COMPLEX128;
    void *hc = test_read_array(c);
    int64_t p = a->p, q = a->q;
    for (int64_t i = 0; i < p; i++)
        for (int64_t j = 0; j < q; j++) {
            long double re = 0, im = 0, mag = 0;
            for (int64_t k = 0; k < p; k++)
                for (int64_t l = 0; l < q; l++) {
                    size_t x = (size_t)(k * q + l), y = (size_t)(((i - k + p) % p) * q + (j - l + q) % q);
                    long double ar = a->re[x], ai = a->im ? a->im[x] : 0, br = b->re[y],
                                bi = b->im ? b->im[y] : 0;
                    re += ar * br - ai * bi, im += ar * bi + ai * br;
                    mag += (fabsl(ar) + fabsl(ai)) * (fabsl(br) + fabsl(bi));
                }
            size_t o = (size_t)(i * q + j);
            double gr = cx ? (dbl ? ((double *)hc)[2 * o] : ((float *)hc)[2 * o])
                           : (dbl ? ((double *)hc)[o] : ((float *)hc)[o]);
            double gi = cx ? (dbl ? ((double *)hc)[2 * o + 1] : ((float *)hc)[2 * o + 1]) : 0;
            double tol = 50 * eps * (double)(mag + 1);
            if (fabsl(gr - re) > tol || fabsl(gi - im) > tol)
                fail_msg("%s circular %lldx%lld: [%lld, %lld] = (%g, %g), direct (%Lg, %Lg), tol %g",
                         kiln_dtype_name(t), (long long)p, (long long)q, (long long)i, (long long)j, gr, gi,
                         re, im, tol);
        }
    free(hc);
}

/* One case under each setting; on CUDA "on" must fuse, elsewhere it must
 * say why it cannot. */
static void circular_case(kiln_context *ctx, test_rng *r, kiln_dtype t, int64_t p, int64_t q) {
    host2 ha, hb;
    kiln_array *a = upload2(ctx, r, t, p, q, &ha), *b = upload2(ctx, r, t, p, q, &hb);
    double eps = t == KILN_FLOAT64 || t == KILN_COMPLEX128 ? 1e-15 : 1e-6;
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    static const char *const modes[4] = {"auto", "off", "on", "callback"};
    kiln_array *given = NULL;
    int64_t shape[2] = {p, q};
    TEST_OK(kiln_array_zeros(ctx, t, 2, shape, &given));
    for (int m = 0; m < 4; m++) {
        setenv("KILN_FFT_FUSE", modes[m], 1);
        kiln_array *c = NULL;
        kiln_status s = kiln_fft_convolve(a, b, KILN_CONVOLVE_CIRCULAR, NULL, 0, &c);
        /* on the CPU "on" and "callback" have nothing to fuse with, and
         * say so; on CUDA the strip kernel fuses power-of-two 2-D complex
         * cases and cuFFT's load callback the rest */
        if (m >= 2 && !cuda) {
            assert_int_equal(s, KILN_ERR_UNSUPPORTED);
            assert_true(test_contains(kiln_last_error(), "KILN_FFT_FUSE="));
            assert_null(c);
            continue;
        }
        if (s != KILN_OK) fail_msg("KILN_FFT_FUSE=%s: %s", modes[m], kiln_last_error());
        check_circular(c, &ha, &hb, eps);
        kiln_array_release(c);
        /* into the caller's array: the inverse writes there directly */
        kiln_array *out = given;
        TEST_OK(kiln_fft_convolve(a, b, KILN_CONVOLVE_CIRCULAR, NULL, 0, &out));
        assert_ptr_equal(out, given);
        check_circular(given, &ha, &hb, eps);
    }
    unsetenv("KILN_FFT_FUSE");
    kiln_array_release(given);
    kiln_array_release(a), kiln_array_release(b);
    free(ha.re), free(ha.im), free(hb.re), free(hb.im);
}

static void test_circular(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    circular_case(ctx, &r, KILN_COMPLEX64, 12, 10);
    circular_case(ctx, &r, KILN_COMPLEX128, 7, 9);
    circular_case(ctx, &r, KILN_FLOAT32, 16, 9); /* R2C and C2R: odd real length */
    circular_case(ctx, &r, KILN_FLOAT64, 6, 8);
}

/* The strip kernel (KILN_FFT_FUSE=columns or rows runs it on any
 * backend): the radix-16 passes and each last pass (2, 4, 8), both
 * precisions, partial strips, against the host's circular convolution,
 * and the largest lengths against the unfused path. */
static void strip_case(kiln_context *ctx, test_rng *r, const char *mode, kiln_dtype t, int64_t p, int64_t q,
                       int direct) {
    host2 ha, hb;
    kiln_array *a = upload2(ctx, r, t, p, q, &ha), *b = upload2(ctx, r, t, p, q, &hb), *c = NULL, *u = NULL;
    double eps = t == KILN_COMPLEX128 ? 1e-15 : 1e-6;
    setenv("KILN_FFT_FUSE", mode, 1);
    if (kiln_fft_convolve(a, b, KILN_CONVOLVE_CIRCULAR, NULL, 0, &c) != KILN_OK)
        fail_msg("%s %lldx%lld: %s", mode, (long long)p, (long long)q, kiln_last_error());
    if (direct) {
        check_circular(c, &ha, &hb, eps);
    } else {
        setenv("KILN_FFT_FUSE", "off", 1);
        TEST_OK(kiln_fft_convolve(a, b, KILN_CONVOLVE_CIRCULAR, NULL, 0, &u));
        size_t n = (size_t)(p * q) * 2;
        int dbl = t == KILN_COMPLEX128;
        void *hc = test_read_array(c), *hu = test_read_array(u);
        double big = 0, diff = 0;
        for (size_t i = 0; i < n; i++) {
            double x = dbl ? ((double *)hc)[i] : ((float *)hc)[i],
                   y = dbl ? ((double *)hu)[i] : ((float *)hu)[i];
            big = fmax(big, fabs(y));
            diff = fmax(diff, fabs(x - y));
        }
        if (diff > 1e3 * eps * big)
            fail_msg("%s %lldx%lld: |fused - unfused| %g of %g", mode, (long long)p, (long long)q, diff, big);
        free(hc), free(hu);
        kiln_array_release(u);
    }
    unsetenv("KILN_FFT_FUSE");
    kiln_array_release(c), kiln_array_release(a), kiln_array_release(b);
    free(ha.re), free(ha.im), free(hb.re), free(hb.im);
}

static void test_strip(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    /* "columns" runs through transposed row transforms unless asked for
     * the natural layout, which these cases check first */
    setenv("KILN_FFT_STRIP_LAYOUT", "natural", 1);
    strip_case(ctx, &r, "columns", KILN_COMPLEX64, 2, 3, 1);    /* one radix-2 pass */
    strip_case(ctx, &r, "columns", KILN_COMPLEX64, 16, 5, 1);   /* one radix-16 pass, a partial strip */
    strip_case(ctx, &r, "columns", KILN_COMPLEX64, 64, 12, 1);  /* 16 then 4 */
    strip_case(ctx, &r, "columns", KILN_COMPLEX128, 128, 7, 1); /* 16 then 8 */
    strip_case(ctx, &r, "columns", KILN_COMPLEX128, 32, 2, 1);  /* 16 then 2 */
    strip_case(ctx, &r, "columns", KILN_COMPLEX64, 4096, 5,
               0); /* three radix-16 passes, 32 values a thread */
    unsetenv("KILN_FFT_STRIP_LAYOUT");
    strip_case(ctx, &r, "rows", KILN_COMPLEX64, 3, 2, 1);   /* one radix-2 pass */
    strip_case(ctx, &r, "rows", KILN_COMPLEX64, 7, 256, 1); /* two radix-16 passes */
    setenv("KILN_FFT_STRIP_WIDTH", "2", 1);
    strip_case(ctx, &r, "rows", KILN_COMPLEX128, 5, 64, 1); /* 16 then 4, a partial strip of 2 */
    unsetenv("KILN_FFT_STRIP_WIDTH");
    strip_case(ctx, &r, "rows", KILN_COMPLEX64, 3, 8192, 0); /* 16, 16, 16, 2: the longest line */
    /* b transformed along the other axis only, its strip in the kernel */
    setenv("KILN_FFT_STRIP_SPEC", "fft", 1);
    strip_case(ctx, &r, "columns", KILN_COMPLEX64, 64, 12, 1);
    strip_case(ctx, &r, "rows", KILN_COMPLEX128, 5, 32, 1);
    strip_case(ctx, &r, "rows", KILN_COMPLEX64, 6, 512, 1);   /* 16, 16, 2 */
    strip_case(ctx, &r, "rows", KILN_COMPLEX64, 3, 1024, 1);  /* 16, 16, 4 */
    strip_case(ctx, &r, "rows", KILN_COMPLEX128, 2, 2048, 1); /* 16, 16, 8 */
    strip_case(ctx, &r, "rows", KILN_COMPLEX64, 5, 4096, 1);  /* 16, 16, 16 */
    unsetenv("KILN_FFT_STRIP_SPEC");
    /* along columns through transposed row transforms (the default) */
    strip_case(ctx, &r, "columns", KILN_COMPLEX64, 64, 12, 1);
    strip_case(ctx, &r, "columns", KILN_COMPLEX128, 32, 5, 1);
    strip_case(ctx, &r, "columns", KILN_COMPLEX64, 1024, 6, 1);
    /* auto above the callback's 32 MiB of spectra on a GPU: that strip
     * (square), the row strip with b's strip (wide) */
    strip_case(ctx, &r, "auto", KILN_COMPLEX64, 2048, 2048, 0);
    strip_case(ctx, &r, "auto", KILN_COMPLEX64, 1024, 4096, 0);
    /* what it does not take is an error under "columns" and "rows" */
    int64_t s[2] = {12, 6};
    kiln_array *a = NULL, *c = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, s, &a));
    setenv("KILN_FFT_FUSE", "columns", 1);
    TEST_FAILS_WITH(kiln_fft_convolve(a, a, KILN_CONVOLVE_CIRCULAR, NULL, 0, &c), KILN_ERR_UNSUPPORTED,
                    "power of two");
    setenv("KILN_FFT_FUSE", "rows", 1);
    TEST_FAILS_WITH(kiln_fft_convolve(a, a, KILN_CONVOLVE_CIRCULAR, NULL, 0, &c), KILN_ERR_UNSUPPORTED,
                    "axis 1 is a power of two");
    unsetenv("KILN_FFT_FUSE");
    kiln_array_release(a);
}

static void test_circular_errors(void **state) {
    kiln_context *ctx = *state;
    int64_t s1[2] = {8, 8}, s2[2] = {8, 6};
    kiln_array *a = NULL, *b = NULL, *c = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, s1, &a));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, s2, &b));
    TEST_FAILS_WITH(kiln_fft_convolve(a, b, KILN_CONVOLVE_CIRCULAR, NULL, 0, &c), KILN_ERR_SHAPE,
                    "axis 1 is 8 vs 6");
    /* along axis 0 only, axis 1 a batch: lengths 8 and 8 */
    int ax[1] = {0};
    kiln_array *b1 = NULL;
    int64_t s3[2] = {8, 1};
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, s3, &b1));
    TEST_OK(kiln_fft_convolve(a, b1, KILN_CONVOLVE_CIRCULAR, ax, 1, &c)); /* broadcast: not fused */
    assert_int_equal(kiln_array_shape(c)[1], 8);
    kiln_array_release(c);
    kiln_array_release(a), kiln_array_release(b), kiln_array_release(b1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_callback_compiles_for_sm90),
        cmocka_unit_test(test_lto_errors),
        cmocka_unit_test(test_strip_compile_for_sm90),
        cmocka_unit_test(test_circular),
        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_circular_errors),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
