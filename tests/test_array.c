/* test_array.c: arrays on the backend under test: creation on the device,
 * views, strided copies both ways, and the errors for bad shapes and sizes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h" /* kiln_array_empty_host (internal) */
#include "test_support.h"

static void test_roundtrip_every_dtype(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
        int64_t shape[3] = {3, 5, 7};
        size_t bytes = 105 * kiln_dtype_size((kiln_dtype)t);
        unsigned char *src = malloc(bytes), *dst = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) src[i] = (unsigned char)test_uniform(&r, 0, 256);
        kiln_array *a = NULL;
        TEST_OK(kiln_array_from_host(ctx, (kiln_dtype)t, 3, shape, src, bytes, &a));
        assert_int_equal(kiln_array_size(a), 105);
        assert_int_equal(kiln_array_nbytes(a), bytes);
        assert_true(kiln_array_is_contiguous(a));
        TEST_OK(kiln_array_to_host(a, dst, bytes));
        assert_memory_equal(src, dst, bytes);
        kiln_array_release(a);
        free(src);
        free(dst);
    }
}

static void test_zeros_full_and_fill_values(void **state) {
    kiln_context *ctx = *state;
    int64_t shape[2] = {17, 33};
    kiln_array *z = NULL, *f = NULL, *c = NULL, *i8 = NULL, *h = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, shape, &z));
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT32, 2, shape, 2.5, 0, &f));
    TEST_OK(kiln_array_full(ctx, KILN_COMPLEX128, 2, shape, -1.25, 3.5, &c));
    TEST_OK(kiln_array_full(ctx, KILN_INT8, 2, shape, -7, 0, &i8));
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT16, 2, shape, 1.5, 0, &h));
    double zd[17 * 33];
    float fd[17 * 33];
    double cd[2 * 17 * 33];
    int8_t id[17 * 33];
    uint16_t hd[17 * 33];
    TEST_OK(kiln_array_to_host(z, zd, sizeof zd));
    TEST_OK(kiln_array_to_host(f, fd, sizeof fd));
    TEST_OK(kiln_array_to_host(c, cd, sizeof cd));
    TEST_OK(kiln_array_to_host(i8, id, sizeof id));
    TEST_OK(kiln_array_to_host(h, hd, sizeof hd));
    for (int i = 0; i < 17 * 33; i++) {
        assert_true(zd[i] == 0.0);
        assert_true(fd[i] == 2.5f);
        assert_true(cd[2 * i] == -1.25 && cd[2 * i + 1] == 3.5);
        assert_int_equal(id[i], -7);
        assert_int_equal(hd[i], 0x3e00); /* 1.5 in binary16 */
    }
    kiln_array_release(z);
    kiln_array_release(f);
    kiln_array_release(c);
    kiln_array_release(i8);
    kiln_array_release(h);
}

static void test_arange_linspace_match_numpy(void **state) {
    kiln_context *ctx = *state;
    kiln_array *a = NULL, *l = NULL, *l2 = NULL, *ai = NULL;
    TEST_OK(kiln_array_arange(ctx, KILN_FLOAT64, 0.5, 10.0, 0.75, &a));
    assert_int_equal(kiln_array_size(a), 13); /* ceil(9.5/0.75) */
    double ad[13];
    TEST_OK(kiln_array_to_host(a, ad, sizeof ad));
    for (int i = 0; i < 13; i++) assert_true(fabs(ad[i] - (0.5 + 0.75 * i)) < 1e-12);
    TEST_OK(kiln_array_linspace(ctx, KILN_FLOAT32, -1, 1, 5, 1, &l));
    float ld[5];
    TEST_OK(kiln_array_to_host(l, ld, sizeof ld));
    const float expect[5] = {-1, -0.5f, 0, 0.5f, 1};
    assert_memory_equal(ld, expect, sizeof ld);
    TEST_OK(kiln_array_linspace(ctx, KILN_FLOAT64, 0, 1, 4, 0, &l2));
    double l2d[4];
    TEST_OK(kiln_array_to_host(l2, l2d, sizeof l2d));
    for (int i = 0; i < 4; i++) assert_true(fabs(l2d[i] - 0.25 * i) < 1e-15);
    TEST_OK(kiln_array_arange(ctx, KILN_INT32, 10, 0, -3, &ai));
    int32_t aid[4];
    assert_int_equal(kiln_array_size(ai), 4);
    TEST_OK(kiln_array_to_host(ai, aid, sizeof aid));
    assert_int_equal(aid[0], 10);
    assert_int_equal(aid[3], 1);
    kiln_array *bad = NULL;
    TEST_FAILS_WITH(kiln_array_arange(ctx, KILN_FLOAT32, 0, 1, 0, &bad), KILN_ERR_INVALID_ARGUMENT,
                    "step non-zero");
    kiln_array_release(a);
    kiln_array_release(l);
    kiln_array_release(l2);
    kiln_array_release(ai);
}

static void test_meshgrid_xy_and_ij(void **state) {
    kiln_context *ctx = *state;
    kiln_array *x = NULL, *y = NULL, *X = NULL, *Y = NULL;
    TEST_OK(kiln_array_linspace(ctx, KILN_FLOAT64, 29, 31, 7, 1, &x));
    TEST_OK(kiln_array_linspace(ctx, KILN_FLOAT64, 99, 101, 5, 1, &y));
    double xh[7], yh[5], Xh[35], Yh[35];
    TEST_OK(kiln_array_to_host(x, xh, sizeof xh));
    TEST_OK(kiln_array_to_host(y, yh, sizeof yh));
    TEST_OK(kiln_array_meshgrid(x, y, "xy", &X, &Y));
    assert_int_equal(kiln_array_shape(X)[0], 5);
    assert_int_equal(kiln_array_shape(X)[1], 7);
    TEST_OK(kiln_array_to_host(X, Xh, sizeof Xh));
    TEST_OK(kiln_array_to_host(Y, Yh, sizeof Yh));
    for (int j = 0; j < 5; j++)
        for (int i = 0; i < 7; i++) {
            assert_true(Xh[j * 7 + i] == xh[i]);
            assert_true(Yh[j * 7 + i] == yh[j]);
        }
    kiln_array_release(X);
    kiln_array_release(Y);
    TEST_OK(kiln_array_meshgrid(x, y, "ij", &X, &Y));
    assert_int_equal(kiln_array_shape(X)[0], 7);
    TEST_OK(kiln_array_to_host(X, Xh, sizeof Xh));
    TEST_OK(kiln_array_to_host(Y, Yh, sizeof Yh));
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 5; j++) {
            assert_true(Xh[i * 5 + j] == xh[i]);
            assert_true(Yh[i * 5 + j] == yh[j]);
        }
    kiln_array *bad1 = NULL, *bad2 = NULL;
    TEST_FAILS_WITH(kiln_array_meshgrid(x, y, "yx", &bad1, &bad2), KILN_ERR_INVALID_ARGUMENT, "\"yx\"");
    kiln_array_release(X);
    kiln_array_release(Y);
    kiln_array_release(x);
    kiln_array_release(y);
}

/* A view's elements, read through kiln, equal the ones a host loop picks. */
static void test_views_slice_transpose_reshape(void **state) {
    kiln_context *ctx = *state;
    int64_t shape[3] = {4, 6, 5};
    float host[120];
    for (int i = 0; i < 120; i++) host[i] = (float)i;
    kiln_array *a = NULL, *s = NULL, *t = NULL, *r = NULL, *rev = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 3, shape, host, sizeof host, &a));
    TEST_OK(kiln_array_slice(a, 1, 1, 6, 2, &s)); /* a[:, 1:6:2, :] -> (4,3,5) */
    assert_int_equal(kiln_array_shape(s)[1], 3);
    assert_false(kiln_array_is_contiguous(s));
    float sh[60];
    TEST_OK(kiln_array_to_host(s, sh, sizeof sh));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 5; k++)
                assert_true(sh[(i * 3 + j) * 5 + k] == host[(i * 6 + 1 + 2 * j) * 5 + k]);
    TEST_OK(kiln_array_transpose(s, NULL, &t)); /* (5,3,4) */
    float th[60];
    TEST_OK(kiln_array_to_host(t, th, sizeof th));
    for (int k = 0; k < 5; k++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 4; i++) assert_true(th[(k * 3 + j) * 4 + i] == sh[(i * 3 + j) * 5 + k]);
    TEST_OK(kiln_array_slice(a, 0, -1, -5, -1, &rev)); /* a[::-1] */
    float rh[120];
    TEST_OK(kiln_array_to_host(rev, rh, sizeof rh));
    for (int i = 0; i < 4; i++) assert_true(rh[i * 30] == host[(3 - i) * 30]);
    int64_t rs[2] = {-1, 10};
    TEST_OK(kiln_array_reshape(a, 2, rs, &r));
    assert_int_equal(kiln_array_shape(r)[0], 12);
    TEST_FAILS_WITH(kiln_array_reshape(t, 2, rs, &r), KILN_ERR_SHAPE, "non-contiguous");
    int64_t bad[2] = {7, 7};
    kiln_array *r2 = NULL;
    TEST_FAILS_WITH(kiln_array_reshape(a, 2, bad, &r2), KILN_ERR_SHAPE,
                    "cannot reshape array of shape (4, 6, 5)");
    /* The base may go first: views keep it alive. */
    kiln_array_release(a);
    TEST_OK(kiln_array_to_host(s, sh, sizeof sh));
    assert_true(sh[0] == host[5]);
    kiln_array_release(s);
    kiln_array_release(t);
    kiln_array_release(r);
    kiln_array_release(rev);
}

/* Writes into a strided view (device) from host data, and into a strided host
 * array from the device: both directions of the staged copy. */
static void test_strided_assign_both_ways(void **state) {
    kiln_context *ctx = *state;
    int64_t shape[2] = {8, 8};
    kiln_array *a = NULL, *col = NULL, *hcol = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, shape, &a));
    TEST_OK(kiln_array_slice(a, 1, 3, 4, 1, &col)); /* a[:, 3:4] (8,1) */
    double src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    TEST_OK(kiln_array_from_host_copy(col, src, sizeof src));
    double all[64];
    TEST_OK(kiln_array_to_host(a, all, sizeof all));
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) assert_true(all[i * 8 + j] == (j == 3 ? src[i] : 0.0));
    double host_matrix[8][3] = {{0}};
    int64_t hshape[2] = {8, 1}, hstrides[2] = {3 * sizeof(double), sizeof(double)};
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT64, 2, hshape, hstrides, &host_matrix[0][1], &hcol));
    TEST_OK(kiln_array_assign(hcol, col));
    for (int i = 0; i < 8; i++) {
        assert_true(host_matrix[i][1] == src[i]);
        assert_true(host_matrix[i][0] == 0 && host_matrix[i][2] == 0);
    }
    kiln_array_release(hcol);
    kiln_array_release(col);
    kiln_array_release(a);
}

static void test_errors_do_not_lose_data(void **state) {
    kiln_context *ctx = *state;
    int64_t shape[1] = {10};
    float data[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, out[12];
    kiln_array *a = NULL, *b = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, shape, data, sizeof data, &a));
    TEST_FAILS_WITH(
        kiln_array_to_host(a, out, sizeof out), KILN_ERR_SHAPE,
        "copy size mismatch: the array (10,) of float32 holds 40 bytes, the host buffer is 48 bytes");
    TEST_FAILS_WITH(kiln_array_from_host(ctx, KILN_FLOAT32, 1, shape, data, 8, &b), KILN_ERR_SHAPE,
                    "copy size mismatch");
    int64_t neg[1] = {-3};
    TEST_FAILS_WITH(kiln_array_empty(ctx, KILN_FLOAT32, 1, neg, &b), KILN_ERR_SHAPE, "negative dimension");
    int64_t many[17] = {0};
    TEST_FAILS_WITH(kiln_array_empty(ctx, KILN_FLOAT32, 17, many, &b), KILN_ERR_SHAPE,
                    "ndim 17 out of range");
    int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    TEST_FAILS_WITH(kiln_array_empty(ctx, KILN_FLOAT32, 2, huge, &b), KILN_ERR_SHAPE, "overflows");
    int64_t big[1] = {INT64_C(1) << 50}; /* 4 PiB: the allocation fails cleanly */
    kiln_status s = kiln_array_empty(ctx, KILN_FLOAT32, 1, big, &b);
    assert_int_equal(s, KILN_ERR_OUT_OF_MEMORY);
    assert_true(test_contains(kiln_last_error(), "allocating float32 array"));
    /* After all that, the array still holds its data. */
    TEST_OK(kiln_array_to_host(a, out, sizeof data));
    assert_memory_equal(out, data, sizeof data);
    kiln_array_release(a);
}

static void test_async_copies_on_streams(void **state) {
    kiln_context *ctx = *state;
    int64_t n = 1 << 16;
    float *pinned = NULL, *back = NULL;
    TEST_OK(kiln_host_alloc(ctx, (size_t)n * sizeof(float), (void **)&pinned));
    TEST_OK(kiln_host_alloc(ctx, (size_t)n * sizeof(float), (void **)&back));
    test_rng r = test_rng_for(__func__);
    test_fill_f32(&r, pinned, (size_t)n, -1, 1);
    kiln_stream *st = NULL;
    kiln_event *e0 = NULL, *e1 = NULL;
    kiln_array *a = NULL;
    TEST_OK(kiln_stream_create(ctx, &st));
    TEST_OK(kiln_event_create(ctx, &e0));
    TEST_OK(kiln_event_create(ctx, &e1));
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &a));
    TEST_OK(kiln_event_record(e0, st));
    TEST_OK(kiln_array_from_host_async(a, pinned, (size_t)n * sizeof(float), st));
    TEST_OK(kiln_array_to_host_async(a, back, (size_t)n * sizeof(float), st));
    TEST_OK(kiln_event_record(e1, st));
    TEST_OK(kiln_stream_synchronize(st));
    float ms = -1;
    TEST_OK(kiln_event_elapsed_ms(e0, e1, &ms));
    assert_true(ms >= 0);
    assert_memory_equal(pinned, back, (size_t)n * sizeof(float));
    kiln_array_release(a);
    kiln_event_release(e0);
    kiln_event_release(e1);
    kiln_stream_release(st);
    kiln_host_free(ctx, pinned);
    kiln_host_free(ctx, back);
}

/* kiln_array_empty_host: host memory of the context on every backend, owned
 * by the array (views keep it alive), a source and target of copies both
 * ways, and released without the context (even after it is closed). */
static void test_empty_host_owns_its_memory(void **state) {
    kiln_context *ctx = *state;
    const int64_t sizes[] = {0, 15, ((int64_t)8 << 20) / 8 + 3}; /* the last one asks for huge pages */
    test_rng r = test_rng_for(__func__);
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        int64_t n = sizes[c];
        size_t bytes = (size_t)n * sizeof(double);
        double *src = malloc(bytes + 8), *back = malloc(bytes + 8);
        test_fill_f64(&r, src, (size_t)n, -1, 1);
        kiln_array *h = NULL, *d = NULL, *view = NULL;
        TEST_OK(kiln_array_empty_host(ctx, KILN_FLOAT64, 1, &n, &h));
        assert_int_equal(kiln_array_memory(h), KILN_MEMORY_HOST);
        assert_true(kiln_array_is_contiguous(h));
        assert_ptr_equal(kiln_array_context(h), ctx);
        assert_true((uintptr_t)kiln_array_data(h) % 64 == 0);
        TEST_OK(kiln_array_from_host_copy(h, src, bytes));
        if (n) assert_memory_equal(kiln_array_data(h), src, bytes); /* the host reads it directly */
        TEST_OK(kiln_array_copy(h, &d));                            /* host -> device */
        assert_int_equal(kiln_array_memory(d), KILN_MEMORY_DEVICE);
        memset(kiln_array_data(h), 0, bytes);
        TEST_OK(kiln_array_assign(h, d)); /* device -> host */
        TEST_OK(kiln_array_slice(h, 0, 1, n, 2, &view));
        kiln_array_release(h); /* the view keeps the memory */
        int64_t m = kiln_array_size(view);
        TEST_OK(kiln_array_to_host(view, back, (size_t)m * sizeof(double)));
        for (int64_t i = 0; i < m; i++) assert_true(back[i] == src[1 + 2 * i]);
        kiln_array_release(view);
        kiln_array_release(d);
        free(src);
        free(back);
    }
    int64_t big[1] = {INT64_C(1) << 50};
    kiln_array *b = NULL;
    TEST_FAILS_WITH(kiln_array_empty_host(ctx, KILN_FLOAT32, 1, big, &b), KILN_ERR_OUT_OF_MEMORY,
                    "out of host memory allocating float32 array (1125899906842624,)");
    kiln_context *other = test_open();
    int64_t n = 1000;
    TEST_OK(kiln_array_empty_host(other, KILN_INT32, 1, &n, &b));
    kiln_close(other);
    kiln_array_release(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_dtype),
        cmocka_unit_test(test_zeros_full_and_fill_values),
        cmocka_unit_test(test_arange_linspace_match_numpy),
        cmocka_unit_test(test_meshgrid_xy_and_ij),
        cmocka_unit_test(test_views_slice_transpose_reshape),
        cmocka_unit_test(test_strided_assign_both_ways),
        cmocka_unit_test(test_errors_do_not_lose_data),
        cmocka_unit_test(test_async_copies_on_streams),
        cmocka_unit_test(test_empty_host_owns_its_memory),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
