/* test_fft_missing.c: a missing FFT provider library is an error naming the
 * package to install, and the rest of kiln keeps working. The libraries are
 * loaded once per process, so this lives in its own executable: the
 * environment points the loader at a library that is not FFTW / cuFFT (libm:
 * present everywhere, lacking every FFT symbol). */
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static void test_missing_provider(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    const int is_cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    const int64_t shape[2] = {4, 6};
    for (int dbl = 0; dbl < 2; dbl++) {
        kiln_array *c = NULL, *r = NULL, *out = NULL;
        TEST_OK(kiln_array_zeros(ctx, dbl ? KILN_COMPLEX128 : KILN_COMPLEX64, 2, shape, &c));
        TEST_OK(kiln_array_zeros(ctx, dbl ? KILN_FLOAT64 : KILN_FLOAT32, 2, shape, &r));
        const char *package = is_cuda ? "cuFFT (libcufft" : dbl ? "libfftw3-double3" : "libfftw3-single3";
        TEST_FAILS_WITH(kiln_fftn(c, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &out),
                        KILN_ERR_LIBRARY_MISSING, package);
        assert_null(out);
        TEST_FAILS_WITH(kiln_rfftn(r, NULL, 0, KILN_FFT_NORM_BACKWARD, &out), KILN_ERR_LIBRARY_MISSING,
                        "libm");
        assert_null(out);
        kiln_array_release(c);
        kiln_array_release(r);
    }
    /* Nothing else broke: arrays are still made and read back. */
    kiln_array *a = NULL;
    TEST_OK(kiln_array_arange(ctx, KILN_FLOAT64, 0, 5, 1, &a));
    double got[5];
    TEST_OK(kiln_array_to_host(a, got, sizeof got));
    for (int i = 0; i < 5; i++) assert_true(got[i] == i);
    kiln_array_release(a);
    kiln_close(ctx);
}

int main(void) {
    setenv("KILN_FFTW_LIBRARY", "libm.so.6", 1);
    setenv("KILN_FFTWF_LIBRARY", "libm.so.6", 1);
    setenv("KILN_CUFFT_LIBRARY", "libm.so.6", 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_provider)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
