/* test_casting.c: kiln_dtype_can_cast is NumPy's np.can_cast(from, to,
 * "safe") for every pair of kiln dtypes, and ufunc, gufunc and kernel
 * argument dispatch follow it (an int32 array plus an int64 array goes to
 * a float64 signature when there is no int64 one, as in NumPy). */
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

/* np.can_cast(row, column, casting="safe"), written out from NumPy's rules
 * (numpy/_core/src/multiarray/convert_datatype.c, checked by hand against
 * NumPy 1.26 and 2.x which agree on these types):
 *  - bool casts to everything; nothing but bool casts to bool;
 *  - an integer casts to a wider-or-equal integer of its signedness, an
 *    unsigned one also to a strictly wider signed one, never signed to
 *    unsigned;
 *  - int8/uint8 to float16 and up, int16/uint16 to float32 and up, every
 *    wider integer (int64 and uint64 included) to float64, and to the
 *    complex type whose parts take that float;
 *  - a float to a wider-or-equal float and to a complex whose parts are as
 *    wide; complex to a wider-or-equal complex; nothing back.
 * bfloat16 (last column and row) follows ml_dtypes, which registers its safe
 * casts by hand: bool, int8 and uint8 to it; it to float32, float64,
 * complex64, complex128; nothing between it and float16 either way (so
 * bfloat16 + float16 promotes to float32, as in ml_dtypes and JAX). */
static const char *const numpy_safe[KILN_DTYPE_COUNT] = {
    /*            to: b i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 c8 c16 bf16 */
    [KILN_BOOL] = "111111111111111",      [KILN_INT8] = "011110000111111",
    [KILN_INT16] = "001110000011110",     [KILN_INT32] = "000110000001010",
    [KILN_INT64] = "000010000001010",     [KILN_UINT8] = "001111111111111",
    [KILN_UINT16] = "000110111011110",    [KILN_UINT32] = "000010011001010",
    [KILN_UINT64] = "000000001001010",    [KILN_FLOAT16] = "000000000111110",
    [KILN_FLOAT32] = "000000000011110",   [KILN_FLOAT64] = "000000000001010",
    [KILN_COMPLEX64] = "000000000000110", [KILN_COMPLEX128] = "000000000000010",
    [KILN_BFLOAT16] = "000000000011111",
};

static void test_can_cast_is_numpys_table(void **state) {
    (void)state;
    int wrong = 0;
    for (int f = 0; f < KILN_DTYPE_COUNT; f++)
        for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
            int want = numpy_safe[f][t] == '1', got = kiln_dtype_can_cast((kiln_dtype)f, (kiln_dtype)t);
            if (want != got) {
                fprintf(stderr, "can_cast(%s, %s) is %d, NumPy says %d\n", kiln_dtype_name((kiln_dtype)f),
                        kiln_dtype_name((kiln_dtype)t), got, want);
                wrong++;
            }
        }
    assert_int_equal(wrong, 0);
    /* invalid dtypes cast to nothing */
    assert_false(kiln_dtype_can_cast(KILN_DTYPE_COUNT, KILN_FLOAT64));
    assert_false(kiln_dtype_can_cast(KILN_FLOAT64, KILN_DTYPE_COUNT));
}

/* The table is consistent: reflexive and transitive (a safe cast chain is
 * safe), as NumPy's is. */
static void test_table_is_a_partial_order(void **state) {
    (void)state;
    for (int a = 0; a < KILN_DTYPE_COUNT; a++) {
        assert_true(kiln_dtype_can_cast((kiln_dtype)a, (kiln_dtype)a));
        for (int b = 0; b < KILN_DTYPE_COUNT; b++)
            for (int c = 0; c < KILN_DTYPE_COUNT; c++)
                if (kiln_dtype_can_cast((kiln_dtype)a, (kiln_dtype)b) &&
                    kiln_dtype_can_cast((kiln_dtype)b, (kiln_dtype)c))
                    assert_true(kiln_dtype_can_cast((kiln_dtype)a, (kiln_dtype)c));
    }
}

static kiln_array *int_array(kiln_context *ctx, kiln_dtype t, int64_t n, const int64_t *v) {
    kiln_array *a = NULL;
    size_t item = kiln_dtype_size(t);
    unsigned char *buf = malloc((size_t)n * item);
    for (int64_t i = 0; i < n; i++) {
        if (t == KILN_INT32) {
            int32_t x = (int32_t)v[i];
            memcpy(buf + i * 4, &x, 4);
        } else {
            memcpy(buf + i * 8, &v[i], 8);
        }
    }
    TEST_OK(kiln_array_from_host(ctx, t, 1, &n, buf, (size_t)n * item, &a));
    free(buf);
    return a;
}

/* The example: i4(i4,i4); f8(f8,f8) over an int32 and an int64
 * array takes the f8 loop (NumPy's type resolution), exactly. */
static void test_ufunc_dispatch_int64_to_float64(void **state) {
    kiln_context *ctx = *state;
    kiln_ufunc *add = NULL;
    TEST_OK(kiln_vectorize(ctx, "add", "i4(i4,i4); f8(f8,f8)", "a, b", "return a + b;", NULL, &add));
    test_rng r = test_rng_for(__func__);
    int64_t n = 257, av[257], bv[257];
    for (int i = 0; i < n; i++) {
        av[i] = (int64_t)test_uniform(&r, -1e9, 1e9);
        bv[i] = (int64_t)test_uniform(&r, -4e15, 4e15); /* exact in a double */
    }
    kiln_array *a = int_array(ctx, KILN_INT32, n, av), *b = int_array(ctx, KILN_INT64, n, bv), *out = NULL;
    TEST_OK(kiln_call(add, KILN_ARGS(kiln_arr(a), kiln_arr(b)), &out));
    assert_int_equal(kiln_array_dtype(out), KILN_FLOAT64);
    double got[257];
    TEST_OK(kiln_array_to_host(out, got, sizeof got));
    for (int i = 0; i < n; i++) assert_true(got[i] == (double)av[i] + (double)bv[i]);
    kiln_array_release(out);
    /* uint64 with int64 also resolves to float64, as in NumPy */
    kiln_array *u = int_array(ctx, KILN_UINT64, n, av);
    kiln_ufunc *mul = NULL;
    TEST_OK(kiln_vectorize(ctx, "mul", "i8(i8,i8); f8(f8,f8); c16(c16,c16)", "a, b", "return a * b;", NULL,
                           &mul));
    out = NULL;
    TEST_OK(kiln_call(mul, KILN_ARGS(kiln_arr(u), kiln_arr(b)), &out));
    assert_int_equal(kiln_array_dtype(out), KILN_FLOAT64);
    kiln_array_release(out);
    /* int64 to complex128 is safe too; int64 to float32 is not */
    kiln_ufunc *neg = NULL;
    TEST_OK(kiln_vectorize(ctx, "neg", "f4(f4); c16(c16)", "a", "return -a;", NULL, &neg));
    out = NULL;
    TEST_OK(kiln_call(neg, KILN_ARGS(kiln_arr(b)), &out));
    assert_int_equal(kiln_array_dtype(out), KILN_COMPLEX128);
    double cv[2 * 257];
    TEST_OK(kiln_array_to_host(out, cv, sizeof cv));
    for (int i = 0; i < n; i++) assert_true(cv[2 * i] == -(double)bv[i] && cv[2 * i + 1] == 0);
    kiln_array_release(out);
    kiln_ufunc *half = NULL;
    TEST_OK(kiln_vectorize(ctx, "half", "f4(f4)", "a", "return a / 2;", NULL, &half));
    out = NULL;
    TEST_FAILS_WITH(kiln_call(half, KILN_ARGS(kiln_arr(b)), &out), KILN_ERR_DTYPE, "no signature matches");
    kiln_ufunc_release(add);
    kiln_ufunc_release(mul);
    kiln_ufunc_release(neg);
    kiln_ufunc_release(half);
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(u);
}

/* A raw kernel's scalar parameters: an int64 value goes to a double
 * parameter by the table (NumPy's safe cast, rounding above 2**53 as NumPy
 * does), while a float parameter still takes only integers it holds exactly. */
static void test_kernel_scalar_params_follow_the_table(void **state) {
    kiln_context *ctx = *state;
    static const char *src = "__global__ void put(double v, float w, double *out) { out[0] = v + w; }\n";
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "put", NULL, &k));
    int64_t one = 1;
    kiln_array *out = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &one, &out));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL,
                        KILN_ARGS(kiln_i64((INT64_C(1) << 53) + 1), kiln_i16(3), kiln_arr(out))));
    double got = 0;
    TEST_OK(kiln_array_to_host(out, &got, sizeof got));
    assert_true(got == (double)((INT64_C(1) << 53) + 1) + 3.0);
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL,
                        KILN_ARGS(kiln_u64(UINT64_MAX), kiln_u8(1), kiln_arr(out))));
    TEST_FAILS_WITH(kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL,
                                KILN_ARGS(kiln_f64(1), kiln_i64((INT64_C(1) << 40) + 1), kiln_arr(out))),
                    KILN_ERR_ARG_TYPE, "argument 1");
    kiln_array_release(out);
    kiln_kernel_release(k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_can_cast_is_numpys_table),
        cmocka_unit_test(test_table_is_a_partial_order),
        cmocka_unit_test(test_ufunc_dispatch_int64_to_float64),
        cmocka_unit_test(test_kernel_scalar_params_follow_the_table),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
