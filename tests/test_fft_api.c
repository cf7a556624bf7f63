/* test_fft_api.c: the FFT's edges: each kind of bad input with its message,
 * host arrays, several threads on one context, FFTW's wisdom file, the
 * normalisation kernel through NVRTC for sm_90, the profiler's record of a
 * transform, and `kiln demo fft_convolve` at a small size. */
#define KILN_EXPERIMENTAL /* kiln_ufunc_source, kiln_fft_plan_copies (include/kiln.h) */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"
#include "fft/fft.h"
#include "fft_convolve.h"
#include "test_support.h"

static void test_bad_input(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    const int64_t shape[2] = {8, 6}, half[2] = {8, 4}, wrong[2] = {8, 5}, zero[2] = {0, 6};
    kiln_array *c = NULL, *r = NULL, *ch = NULL, *cw = NULL, *z = NULL, *zo = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, shape, &c));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &r));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, half, &ch));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, wrong, &cw));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, zero, &z));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, zero, &zo));
    kiln_fft_plan *p = NULL;
    /* complex input to an R2C plan */
    TEST_FAILS_WITH(
        kiln_fft_plan_create(KILN_FFT_R2C, KILN_FFT_FORWARD, c, ch, NULL, 0, KILN_FFT_NORM_BACKWARD, &p),
        KILN_ERR_DTYPE, "R2C needs float32 or float64 input, got complex64");
    kiln_array *out = NULL;
    TEST_FAILS_WITH(kiln_rfftn(c, NULL, 0, KILN_FFT_NORM_BACKWARD, &out), KILN_ERR_DTYPE, "got complex64");
    /* real input to C2C */
    TEST_FAILS_WITH(kiln_fftn(r, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &out), KILN_ERR_DTYPE,
                    "kiln_rfftn");
    /* output of the wrong shape */
    TEST_FAILS_WITH(kiln_rfftn(r, NULL, 0, KILN_FFT_NORM_BACKWARD, &cw), KILN_ERR_SHAPE, "(8, 4)");
    TEST_FAILS_WITH(kiln_fftn(c, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &cw), KILN_ERR_SHAPE,
                    "(8, 5)");
    TEST_FAILS_WITH(kiln_irfftn(ch, NULL, 0, 9, KILN_FFT_NORM_BACKWARD, &out), KILN_ERR_SHAPE,
                    "cannot give 9");
    /* zero-length transform axes */
    TEST_FAILS_WITH(kiln_fftn(z, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &zo), KILN_ERR_SHAPE,
                    "axis 0 has length 0");
    /* ... while a zero-length batch is nothing to do */
    const int ax1[1] = {1};
    TEST_OK(kiln_fftn(z, ax1, 1, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &zo));
    /* an array from another context */
    kiln_context *other = NULL;
    TEST_OK(kiln_open(&other, test_target()));
    kiln_array *oc = NULL;
    TEST_OK(kiln_array_zeros(other, KILN_COMPLEX64, 2, shape, &oc));
    TEST_FAILS_WITH(kiln_fftn(c, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &oc),
                    KILN_ERR_INVALID_ARGUMENT, "different contexts");
    TEST_OK(kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, c, c, NULL, 0, KILN_FFT_NORM_BACKWARD, &p));
    TEST_FAILS_WITH(kiln_fft_execute(p, oc, oc, NULL), KILN_ERR_INVALID_ARGUMENT, "another context");
    /* arrays not matching the plan */
    TEST_FAILS_WITH(kiln_fft_execute(p, cw, cw, NULL), KILN_ERR_SHAPE, "plan for input (8, 6)");
    kiln_array *c2 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, shape, &c2));
    TEST_FAILS_WITH(kiln_fft_execute(p, c, c2, NULL), KILN_ERR_INVALID_ARGUMENT, "in place");
    kiln_fft_plan_release(p);
    /* axes, direction, kinds */
    const int dup[2] = {0, -2}, far[1] = {2};
    TEST_FAILS_WITH(kiln_fftn(c, dup, 2, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &c2),
                    KILN_ERR_INVALID_ARGUMENT, "given twice");
    TEST_FAILS_WITH(kiln_fftn(c, far, 1, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &c2),
                    KILN_ERR_INVALID_ARGUMENT, "out of range");
    TEST_FAILS_WITH(kiln_fftn(c, NULL, 0, KILN_FFT_NORM_BACKWARD, (kiln_fft_direction)0, &c2),
                    KILN_ERR_INVALID_ARGUMENT, "direction 0");
    TEST_FAILS_WITH(
        kiln_fft_plan_create(KILN_FFT_R2C, KILN_FFT_INVERSE, r, ch, NULL, 0, KILN_FFT_NORM_BACKWARD, &p),
        KILN_ERR_INVALID_ARGUMENT, "forward only");
    TEST_FAILS_WITH(kiln_fftn(c, NULL, 0, (kiln_fft_norm)7, KILN_FFT_FORWARD, &c2), KILN_ERR_INVALID_ARGUMENT,
                    "normalisation 7");
    kiln_fft_norm nm;
    TEST_OK(kiln_fft_norm_parse("ortho", &nm));
    assert_int_equal(nm, KILN_FFT_NORM_ORTHO);
    TEST_FAILS_WITH(kiln_fft_norm_parse("sideways", &nm), KILN_ERR_INVALID_ARGUMENT, "sideways");
    /* input and output overlapping without being the same array */
    const int64_t tall[2] = {9, 6};
    kiln_array *base = NULL, *top = NULL, *bottom = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, tall, &base));
    TEST_OK(kiln_array_slice(base, 0, 0, 8, 1, &top));
    TEST_OK(kiln_array_slice(base, 0, 1, 9, 1, &bottom));
    TEST_FAILS_WITH(kiln_fftn(top, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &bottom),
                    KILN_ERR_INVALID_ARGUMENT, "overlap");
    kiln_array_release(top);
    kiln_array_release(bottom);
    kiln_array_release(base);

    kiln_array *arrs[] = {c, r, ch, cw, z, zo, oc, c2};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
    kiln_close(other);
    kiln_close(ctx);
}

/* Several threads planning and transforming on one context at once: the
 * cache's lock and FFTW's planner lock keep them apart. */
typedef struct thread_job {
    kiln_context *ctx;
    int64_t n;
    double err;
    kiln_status status;
} thread_job;

static void *thread_main(void *arg) {
    thread_job *j = arg;
    j->err = 0;
    j->status = KILN_OK;
    for (int round = 0; round < 6 && j->status == KILN_OK; round++) {
        int64_t n = j->n + round % 3; /* new plans and cache hits mixed */
        double *buf = calloc((size_t)(2 * n), sizeof *buf), *back = calloc((size_t)(2 * n), sizeof *back);
        for (int64_t i = 0; i < n; i++) buf[2 * i] = (double)((i * 7 + round) % 11) - 5;
        kiln_array *a = NULL, *f = NULL, *g = NULL;
        kiln_status s =
            kiln_array_from_host(j->ctx, KILN_COMPLEX128, 1, &n, buf, sizeof(double) * 2 * (size_t)n, &a);
        if (s == KILN_OK) s = kiln_fftn(a, NULL, 0, KILN_FFT_NORM_ORTHO, KILN_FFT_FORWARD, &f);
        if (s == KILN_OK) s = kiln_fftn(f, NULL, 0, KILN_FFT_NORM_ORTHO, KILN_FFT_INVERSE, &g);
        if (s == KILN_OK) s = kiln_array_to_host(g, back, sizeof(double) * 2 * (size_t)n);
        for (int64_t i = 0; s == KILN_OK && i < 2 * n; i++)
            j->err = fabs(back[i] - buf[i]) > j->err ? fabs(back[i] - buf[i]) : j->err;
        kiln_array_release(a);
        kiln_array_release(f);
        kiln_array_release(g);
        free(buf);
        free(back);
        j->status = s;
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    enum { THREADS = 4 };
    pthread_t t[THREADS];
    thread_job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (thread_job){ctx, 30 + 17 * i, 0, KILN_OK};
        assert_int_equal(pthread_create(&t[i], NULL, thread_main, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        if (jobs[i].status != KILN_OK) fail_msg("thread %d: %s", i, kiln_status_string(jobs[i].status));
        if (!(jobs[i].err < 1e-12)) fail_msg("thread %d: round trip error %.3g", i, jobs[i].err);
    }
    kiln_close(ctx);
}

/* A measured plan leaves FFTW's wisdom in kiln's cache folder. */
static void test_fftw_wisdom_file(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    if (kiln_context_backend(ctx) != KILN_BACKEND_CPU) {
        kiln_close(ctx);
        skip();
    }
    kiln_cache_info info;
    TEST_OK(kiln_cache_info_get(&info));
    if (!info.usable) fail_msg("cache unusable: %s", info.reason);
    char path[1200];
    snprintf(path, sizeof path, "%s/fftw-wisdom-single", info.path);
    setenv("KILN_FFTW_PLANNER", "measure", 1);
    const int64_t n = 48;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 1, &n, &a));
    TEST_OK(kiln_fftn(a, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &a));
    setenv("KILN_FFTW_PLANNER", "estimate", 1);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("no wisdom file at %s", path);
    char head[64] = "";
    if (!fgets(head, sizeof head, f)) head[0] = '\0';
    fclose(f);
    if (!test_contains(head, "fftwf_wisdom")) fail_msg("%s does not hold FFTW wisdom: %s", path, head);
    kiln_array_release(a);
    kiln_close(ctx);
}

/* A plan held past kiln_close fails cleanly and frees on release. */
static void test_plan_outlives_context(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    const int64_t n = 40;
    kiln_array *a = NULL;
    kiln_fft_plan *p = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 1, &n, &a));
    TEST_OK(kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, a, a, NULL, 0, KILN_FFT_NORM_BACKWARD, &p));
    kiln_array_release(a);
    kiln_close(ctx);
    assert_int_equal(kiln_fft_plan_copies(p), 0);
    TEST_FAILS_WITH(kiln_fft_execute(p, NULL, NULL, NULL), KILN_ERR_INVALID_ARGUMENT, "context was closed");
    kiln_fft_plan_release(p);
}

/* A plan is made for its arrays' alignment (FFTW: the SIMD offset; cuFFT:
 * R2C's real input must sit on the complex type's alignment, so a view that
 * starts one float in is copied): another offset is a clear error where the
 * plan runs on the array itself, and any offset runs where it copies. */
static void test_plan_alignment(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    int cuda = strcmp(test_target(), "cuda") == 0;
    const int64_t big = 17, h = 9;
    kiln_array *base = NULL, *aligned = NULL, *shifted = NULL, *out = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &big, &base));
    TEST_OK(kiln_array_slice(base, 0, 0, 16, 1, &aligned));
    TEST_OK(kiln_array_slice(base, 0, 1, 17, 1, &shifted));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 1, &h, &out));
    kiln_fft_plan *p = NULL;
    TEST_OK(kiln_fft_plan_create(KILN_FFT_R2C, KILN_FFT_FORWARD, aligned, out, NULL, 0,
                                 KILN_FFT_NORM_BACKWARD, &p));
    assert_int_equal(kiln_fft_plan_copies(p), 0);
    TEST_OK(kiln_fft_execute(p, aligned, out, NULL));
    TEST_FAILS_WITH(kiln_fft_execute(p, shifted, out, NULL), KILN_ERR_INVALID_ARGUMENT, "alignment offsets");
    kiln_fft_plan_release(p);
    TEST_OK(kiln_fft_plan_create(KILN_FFT_R2C, KILN_FFT_FORWARD, shifted, out, NULL, 0,
                                 KILN_FFT_NORM_BACKWARD, &p));
    assert_int_equal(kiln_fft_plan_copies(p), cuda);
    TEST_OK(kiln_fft_execute(p, shifted, out, NULL));
    if (cuda)
        TEST_OK(kiln_fft_execute(p, aligned, out, NULL));
    else
        TEST_FAILS_WITH(kiln_fft_execute(p, aligned, out, NULL), KILN_ERR_INVALID_ARGUMENT,
                        "FFTW needs the same");
    kiln_fft_plan_release(p);
    kiln_array *arrs[] = {base, aligned, shifted, out};
    for (int i = 0; i < 4; i++) kiln_array_release(arrs[i]);
    kiln_close(ctx);
}

/* Host memory wrapped by the caller: transformed in place by FFTW on the
 * CPU; refused on CUDA (cuFFT works on device arrays) with a message. */
static void test_host_arrays(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    double buf[2 * 12] = {0};
    for (int i = 0; i < 12; i++) buf[2 * i] = i + 1; /* 1..12 real */
    const int64_t shape[1] = {12};
    kiln_array *h = NULL, *out = NULL;
    TEST_OK(kiln_array_wrap_host(ctx, KILN_COMPLEX128, 1, shape, NULL, buf, &h));
    out = h;
    kiln_status s = kiln_fftn(h, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &out);
    if (kiln_context_backend(ctx) == KILN_BACKEND_CUDA) {
        assert_int_equal(s, KILN_ERR_INVALID_ARGUMENT);
        assert_true(test_contains(kiln_last_error(), "host-memory array"));
    } else {
        TEST_OK(s);
        /* X[0] = sum 1..12 = 78; X[6] = sum (-1)^j (j+1) = -6 */
        assert_true(fabs(buf[0] - 78) < 1e-12 && fabs(buf[1]) < 1e-12);
        assert_true(fabs(buf[12] + 6) < 1e-12 && fabs(buf[13]) < 1e-12);
    }
    kiln_array_release(h);
    kiln_close(ctx);
}

/* The normalisation kernel compiles for sm_90 through NVRTC (CPU runs too). */
static void test_scale_kernel_compiles_for_cuda(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    kiln_ufunc *f = NULL;
    TEST_OK(kiln_fft_scale_ufunc(ctx, &f));
    const kiln_dtype types[4] = {KILN_COMPLEX64, KILN_COMPLEX128, KILN_FLOAT32, KILN_FLOAT64};
    const int64_t shape[2] = {4, 6};
    for (int i = 0; i < 4; i++) {
        kiln_array *a = NULL, *v = NULL;
        TEST_OK(kiln_array_zeros(ctx, types[i], 2, shape, &a));
        TEST_OK(kiln_array_slice(a, 1, 0, 6, 2, &v));
        kiln_value s =
            types[i] == KILN_COMPLEX64 || types[i] == KILN_FLOAT32 ? kiln_f32(0.5f) : kiln_f64(0.5);
        kiln_array *views[2] = {a, v};
        for (int j = 0; j < 2; j++) {
            kiln_array *outs[1] = {views[j]};
            char *src = NULL, *log = NULL;
            TEST_OK(kiln_ufunc_source(f, "cuda", KILN_ARGS(kiln_arr(views[j]), s), outs, &src));
            kiln_status st = kiln_compile_only("cuda", "sm_90", src, "fft_scale.cu", NULL, &log);
            if (st != KILN_OK && st != KILN_ERR_COMPILER_MISSING) fail_msg("%s\n%s", kiln_last_error(), src);
            kiln_free(src);
            kiln_free(log);
        }
        kiln_array_release(v);
        kiln_array_release(a);
    }
    kiln_close(ctx);
}

/* The profiler records each transform by name. */
static void test_profiled(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    TEST_OK(kiln_profiler_start(ctx));
    const int64_t shape[1] = {64};
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 1, shape, &a));
    TEST_OK(kiln_fftn(a, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &a));
    /* The name says the precision of the transform (it said f32 for f64). */
    kiln_array *x = NULL, *X = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, shape, &x));
    TEST_OK(kiln_rfftn(x, NULL, 0, KILN_FFT_NORM_BACKWARD, &X));
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    if (!test_contains(text, "fft c2c fwd f32 (64,)")) fail_msg("summary lacks the transform:\n%s", text);
    if (!test_contains(text, "fft r2c f64 (64,)")) fail_msg("summary lacks the f64 transform:\n%s", text);
    kiln_free(text);
    kiln_array_release(x);
    kiln_array_release(X);
    kiln_array_release(a);
    kiln_close(ctx);
}

/* kiln demo fft_convolve at a small size: checks itself against the direct
 * convolution and writes its PNG; its multiply compiles for sm_90. */
static void test_convolve_demo(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    char *dir = test_temp_dir("fft_convolve");
    kiln_example_opts opts = {61, 3, 0, dir, 0};
    kiln_example_result r;
    TEST_OK(kiln_example_find("fft_convolve")->run(ctx, &opts, &r));
    print_message("fft_convolve on %s: %s\n", test_target(), r.check);
    if (!r.passed) fail_msg("fft_convolve failed its check: %s", r.check);
    if (!test_contains(r.check, "wrote") && !test_contains(r.check, "without libpng"))
        fail_msg("no picture: %s", r.check);
    float img[64];
    for (int i = 0; i < 64; i++) img[i] = (float)(i % 7);
    kiln_example_fftconv c;
    TEST_OK(kiln_example_fftconv_prepare(ctx, img, 8, &c));
    assert_int_equal(c.p, 12); /* 8 + 4 is 2^2 * 3 already */
    char *src = NULL, *log = NULL;
    kiln_array *outs[1] = {c.image};
    TEST_OK(kiln_ufunc_source(c.vmult, "cuda", KILN_ARGS(kiln_arr(c.image), kiln_arr(c.filter), kiln_f32(1)),
                              outs, &src));
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "vmult.cu", NULL, &log);
    if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING) fail_msg("%s\n%s", kiln_last_error(), src);
    kiln_free(src);
    kiln_free(log);
    kiln_example_fftconv_release(&c);
    free(dir);
    kiln_close(ctx);
}

int main(void) {
    /* Measured planning is the default; the tests plan hundreds of small
     * layouts once each, where FFTW's estimate is just as right. */
    setenv("KILN_FFTW_PLANNER", "estimate", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_input),        cmocka_unit_test(test_plan_outlives_context),
        cmocka_unit_test(test_host_arrays),      cmocka_unit_test(test_threads),
        cmocka_unit_test(test_fftw_wisdom_file), cmocka_unit_test(test_scale_kernel_compiles_for_cuda),
        cmocka_unit_test(test_profiled),         cmocka_unit_test(test_convolve_demo),
        cmocka_unit_test(test_plan_alignment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
