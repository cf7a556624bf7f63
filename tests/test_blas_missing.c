/* test_blas_missing.c: a provider library that cannot be loaded is
 * KILN_ERR_LIBRARY_MISSING naming what to install, and nothing else breaks.
 * Its own process: a library is loaded once per process, so the override
 * (KILN_OPENBLAS_LIB / KILN_CUBLAS_LIB, read at first use) is set here
 * before any BLAS call. */
#include <stdlib.h>

#include "test_support.h"

static void test_missing_provider(void **state) {
    (void)state;
    setenv("KILN_OPENBLAS_LIB", "/nonexistent/libopenblas.so.0", 1);
    setenv("KILN_CUBLAS_LIB", "/nonexistent/libcublas.so.13", 1);
    kiln_context *ctx = test_open();
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    int64_t shape[2] = {4, 4};
    kiln_array *a = NULL, *c = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &a));
    TEST_FAILS_WITH(kiln_matmul(a, a, &c), KILN_ERR_LIBRARY_MISSING, cuda ? "cuBLAS" : "libopenblas0");
    assert_null(c);
    kiln_blas_scalar r;
    int64_t n[1] = {16};
    kiln_array *x = NULL;
    TEST_OK(kiln_array_reshape(a, 1, n, &x));
    TEST_FAILS_WITH(kiln_dot(NULL, x, x, &r), KILN_ERR_LIBRARY_MISSING,
                    cuda ? "KILN_CUBLAS_LIB" : "KILN_OPENBLAS_LIB");
    const char *name = NULL;
    TEST_FAILS_WITH(kiln_blas_provider(ctx, &name), KILN_ERR_LIBRARY_MISSING, cuda ? "cuBLAS" : "OpenBLAS");
    /* the rest of kiln still works */
    float host[16];
    TEST_OK(kiln_array_to_host(a, host, sizeof host));
    kiln_array_release(x);
    kiln_array_release(a);
    kiln_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_provider)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
