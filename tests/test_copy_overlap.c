/* test_copy_overlap.c: kiln_array_assign between views of the same memory
 * must give NumPy's answer (`a[:] = a[::-1]` reads every source element
 * before any is written), for every way two views can overlap: reversed,
 * shifted either way, transposed, interleaved, identical, disjoint, over
 * device memory and over wrapped host memory. */
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

/* Base-array element index of element (i, j) of a 2-d view (or (i) of 1-d). */
static int64_t elem_of(const kiln_array *base, const kiln_array *v, int64_t i, int64_t j) {
    const int64_t *st = kiln_array_strides(v);
    ptrdiff_t off = (const char *)kiln_array_data(v) - (const char *)kiln_array_data(base);
    off += (ptrdiff_t)(i * st[0]);
    if (kiln_array_ndim(v) == 2) off += (ptrdiff_t)(j * st[1]);
    return (int64_t)off / (int64_t)sizeof(int32_t);
}

/* Assigns src into dst (views of base, n elements of int32 holding 0..n-1)
 * and checks base against NumPy's semantics computed on the host. */
static void check_assign(kiln_array *base, kiln_array *dst, kiln_array *src, const char *what) {
    int64_t n = kiln_array_size(base);
    int32_t *want = malloc(sizeof(int32_t) * (size_t)n), *got = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *tmp = malloc(sizeof(int32_t) * (size_t)(kiln_array_size(src) + 1));
    TEST_OK(kiln_array_to_host(base, want, sizeof(int32_t) * (size_t)n));
    int two = kiln_array_ndim(src) == 2;
    int64_t rows = kiln_array_shape(src)[0], cols = two ? kiln_array_shape(src)[1] : 1;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) tmp[i * cols + j] = want[elem_of(base, src, i, j)];
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) want[elem_of(base, dst, i, j)] = tmp[i * cols + j];
    TEST_OK(kiln_array_assign(dst, src));
    TEST_OK(kiln_array_to_host(base, got, sizeof(int32_t) * (size_t)n));
    for (int64_t k = 0; k < n; k++)
        if (got[k] != want[k])
            fail_msg("%s: element %lld is %d, NumPy gives %d", what, (long long)k, got[k], want[k]);
    free(want);
    free(got);
    free(tmp);
}

static void fill_iota(kiln_array *base) {
    int64_t n = kiln_array_size(base);
    int32_t *v = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t k = 0; k < n; k++) v[k] = (int32_t)k;
    TEST_OK(kiln_array_from_host_copy(base, v, sizeof(int32_t) * (size_t)n));
    free(v);
}

static kiln_array *slice(kiln_array *a, int axis, int64_t start, int64_t stop, int64_t step) {
    kiln_array *v = NULL;
    TEST_OK(kiln_array_slice(a, axis, start, stop, step, &v));
    return v;
}

/* The issue's own example: a[:] = a[::-1] over 0..7 gives 7 6 5 4 3 2 1 0. */
static void test_reverse_in_place_gives_numpy_answer(void **state) {
    kiln_context *ctx = *state;
    int64_t n = 8;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_empty(ctx, KILN_INT32, 1, &n, &a));
    fill_iota(a);
    kiln_array *all = slice(a, 0, 0, 8, 1), *rev = slice(a, 0, -1, INT64_MIN + 1, -1);
    TEST_OK(kiln_array_assign(all, rev));
    int32_t got[8];
    TEST_OK(kiln_array_to_host(a, got, sizeof got));
    for (int i = 0; i < 8; i++) assert_int_equal(got[i], 7 - i);
    kiln_array_release(all);
    kiln_array_release(rev);
    kiln_array_release(a);
}

/* Named shapes over device memory and over wrapped host memory. */
static void named_shapes(kiln_context *ctx, int host) {
    int64_t n = 64, sq[2] = {8, 8};
    int32_t *buf = host ? malloc(sizeof(int32_t) * 64) : NULL;
    for (int shape_case = 0; shape_case < 9; shape_case++) {
        kiln_array *a = NULL, *m = NULL, *d = NULL, *s = NULL;
        if (host)
            TEST_OK(kiln_array_wrap_host(ctx, KILN_INT32, 1, &n, NULL, buf, &a));
        else
            TEST_OK(kiln_array_empty(ctx, KILN_INT32, 1, &n, &a));
        fill_iota(a);
        TEST_OK(kiln_array_reshape(a, 2, sq, &m));
        const char *what = "";
        switch (shape_case) {
        case 0: /* a[:] = a[::-1] */
            what = "a[:] = a[::-1]", d = slice(a, 0, 0, 64, 1), s = slice(a, 0, 63, -65, -1);
            break;
        case 1: /* a[1:] = a[:-1], a forward shift (memmove's hard case) */
            what = "a[1:] = a[:-1]", d = slice(a, 0, 1, 64, 1), s = slice(a, 0, 0, 63, 1);
            break;
        case 2: /* a[:-1] = a[1:] */
            what = "a[:-1] = a[1:]", d = slice(a, 0, 0, 63, 1), s = slice(a, 0, 1, 64, 1);
            break;
        case 3: /* m[:] = m[:, ::-1] */
            what = "m[:] = m[:, ::-1]", d = slice(m, 0, 0, 8, 1), s = slice(m, 1, 7, -9, -1);
            break;
        case 4: /* m[:] = m.T */
            what = "m[:] = m.T", d = slice(m, 0, 0, 8, 1);
            TEST_OK(kiln_array_transpose(m, NULL, &s));
            break;
        case 5: /* a[::2] = a[1::2]: extents overlap, elements do not */
            what = "a[::2] = a[1::2]", d = slice(a, 0, 0, 64, 2), s = slice(a, 0, 1, 64, 2);
            break;
        case 6: /* a[2::3] = a[::3][:-1][::-1]: strided, reversed, partial */
            what = "a[2::3] = a[::3][-2::-1]", d = slice(a, 0, 2, 64, 3);
            {
                kiln_array *t = slice(a, 0, 0, 64, 3);
                s = slice(t, 0, -2, -100, -1);
                kiln_array_release(t);
            }
            break;
        case 7: /* a[:] = a: the same view */
            what = "a[:] = a", d = slice(a, 0, 0, 64, 1), s = slice(a, 0, 0, 64, 1);
            break;
        default: /* a[:32] = a[32:]: disjoint */
            what = "a[:32] = a[32:]", d = slice(a, 0, 0, 32, 1), s = slice(a, 0, 32, 64, 1);
            break;
        }
        check_assign(a, d, s, what);
        kiln_array_release(d);
        kiln_array_release(s);
        kiln_array_release(m);
        kiln_array_release(a);
    }
    free(buf);
}

static void test_named_overlaps_device(void **state) { named_shapes(*state, 0); }
static void test_named_overlaps_host(void **state) { named_shapes(*state, 1); }

/* A random view of the (8, 8) base with the given shape: a random step of
 * either sign per axis, a random start, transposed or not. */
static kiln_array *random_view(test_rng *r, kiln_array *m, int64_t rows, int64_t cols) {
    int transposed = test_uniform(r, 0, 1) < 0.3;
    int64_t want[2] = {transposed ? cols : rows, transposed ? rows : cols};
    kiln_array *v = kiln_array_retain(m);
    for (int axis = 0; axis < 2; axis++) {
        int64_t len = want[axis], max_step = len > 1 ? 7 / (len - 1) : 3;
        if (max_step > 3) max_step = 3;
        int64_t step = 1 + (int64_t)test_uniform(r, 0, (double)max_step);
        int64_t span = (len - 1) * step; /* distance first to last */
        int64_t first = (int64_t)test_uniform(r, 0, (double)(8 - span));
        kiln_array *next;
        if (test_uniform(r, 0, 1) < 0.5)
            next = slice(v, axis, first, first + span + 1, step);
        else /* the same elements, walked backwards */
            next = slice(v, axis, first + span, first - 1 < 0 ? -9 : first - 1, -step);
        assert_int_equal(kiln_array_shape(next)[axis], len);
        kiln_array_release(v);
        v = next;
    }
    if (transposed) {
        kiln_array *t = NULL;
        TEST_OK(kiln_array_transpose(v, NULL, &t));
        kiln_array_release(v);
        v = t;
    }
    return v;
}

static void test_random_overlapping_views(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    int64_t n = 64, sq[2] = {8, 8};
    int32_t buf[64];
    for (int trial = 0; trial < 200; trial++) {
        kiln_array *a = NULL, *m = NULL;
        if (trial % 2)
            TEST_OK(kiln_array_wrap_host(ctx, KILN_INT32, 1, &n, NULL, buf, &a));
        else
            TEST_OK(kiln_array_empty(ctx, KILN_INT32, 1, &n, &a));
        fill_iota(a);
        TEST_OK(kiln_array_reshape(a, 2, sq, &m));
        int64_t rows = 1 + (int64_t)test_uniform(&r, 0, 8), cols = 1 + (int64_t)test_uniform(&r, 0, 8);
        kiln_array *d = random_view(&r, m, rows, cols), *s = random_view(&r, m, rows, cols);
        char what[64];
        snprintf(what, sizeof what, "trial %d (%lldx%lld)", trial, (long long)rows, (long long)cols);
        check_assign(a, d, s, what);
        kiln_array_release(d);
        kiln_array_release(s);
        kiln_array_release(m);
        kiln_array_release(a);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reverse_in_place_gives_numpy_answer),
        cmocka_unit_test(test_named_overlaps_device),
        cmocka_unit_test(test_named_overlaps_host),
        cmocka_unit_test(test_random_overlapping_views),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
