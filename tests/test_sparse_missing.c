/* test_sparse_missing.c: without cuSPARSE a CUDA context's sparse products
 * fail with KILN_ERR_LIBRARY_MISSING naming the package, and the rest of
 * kiln (the matrices themselves included) still works; a CPU context needs
 * no library at all. Its own process: cuSPARSE is loaded once per process,
 * so the override (KILN_CUSPARSE_LIBRARY, read at first use) is set here
 * before any sparse call. */
#include <stdlib.h>

#include "test_support.h"

static void test_missing_cusparse(void **state) {
    (void)state;
    setenv("KILN_CUSPARSE_LIBRARY", "/nonexistent/libcusparse.so.12", 1);
    kiln_context *ctx = test_open();
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    int64_t shape[2] = {3, 3}, n = 3;
    double eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    kiln_array *d = NULL, *x = NULL, *y = NULL, *back = NULL;
    kiln_sparse *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 2, shape, eye, sizeof eye, &d));
    TEST_OK(kiln_sparse_from_dense(d, KILN_SPARSE_CSR, KILN_INT32, &a)); /* host work: no library */
    TEST_OK(kiln_sparse_to_dense(a, &back));
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT64, 1, &n, 2, 0, &x));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &n, &y));
    const char *name = NULL;
    if (cuda) {
        TEST_FAILS_WITH(kiln_sparse_spmv(NULL, KILN_BLAS_SCALAR(1, 0), a, x, KILN_BLAS_SCALAR(0, 0), y),
                        KILN_ERR_LIBRARY_MISSING, "libcusparse");
        TEST_FAILS_WITH(kiln_sparse_provider(ctx, &name), KILN_ERR_LIBRARY_MISSING, "cuSPARSE");
    } else {
        TEST_OK(kiln_sparse_spmv(NULL, KILN_BLAS_SCALAR(1, 0), a, x, KILN_BLAS_SCALAR(0, 0), y));
        double got[3];
        TEST_OK(kiln_array_to_host(y, got, sizeof got));
        assert_true(got[0] == 2 && got[1] == 2 && got[2] == 2);
        TEST_OK(kiln_sparse_provider(ctx, &name));
        assert_string_equal(name, "kiln CSR kernels");
    }
    double host[9];
    TEST_OK(kiln_array_to_host(back, host, sizeof host));
    assert_true(host[0] == 1 && host[1] == 0 && host[8] == 1);
    kiln_sparse_release(a);
    kiln_array_release(d), kiln_array_release(x), kiln_array_release(y), kiln_array_release(back);
    kiln_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_cusparse)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
