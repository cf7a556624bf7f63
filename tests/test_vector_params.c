/* test_vector_params.c: pointer parameters to CUDA vector types (float4 *,
 * double2 *, int2 *, uchar3 *, and plain structs of x, y[, z[, w]] of one
 * type) are checked like scalar pointees: the array's dtype must be the lane
 * type, hold a whole number of vectors and be aligned as the vector is.
 * Before, `float4 *` took an int8 array and the kernel wrote past it.
 * Small structs by value take an unsigned integer of their size. */
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static const char *src =
    "struct my_vec { float x, y, z, w; };\n"
    "struct mixed { float x; int y; };\n"
    "__global__ void vec(float4 *p, double2 *q, int2 *r, uchar3 *u, my_vec *m, mixed *o, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    p[i] = make_float4(4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3);\n"
    "    q[i].x = -i; q[i].y = i + 0.5;\n"
    "    r[i] = make_int2(-i, 2 * i);\n"
    "    u[i] = make_uchar3(i, i + 1, i + 2);\n"
    "    m[i].w = i;\n"
    "}\n";

static void test_vector_pointees_are_described(void **state) {
    kiln_context *ctx = *state;
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "vec", NULL, &k));
    struct {
        kiln_param_class lane;
        int lanes;
        size_t size;
    } want[] = {{KILN_PARAM_FLOAT, 4, 16},
                {KILN_PARAM_FLOAT, 2, 16},
                {KILN_PARAM_SIGNED, 2, 8},
                {KILN_PARAM_UNSIGNED, 3, 3},
                {KILN_PARAM_FLOAT, 4, 16}};
    for (int i = 0; i < 5; i++) {
        kiln_param_info p;
        TEST_OK(kiln_kernel_param(k, i, &p));
        assert_int_equal(p.cls, KILN_PARAM_POINTER);
        assert_int_equal(p.pointee_cls, KILN_PARAM_VECTOR);
        assert_int_equal(p.pointee_lane_cls, want[i].lane);
        assert_int_equal(p.pointee_lanes, want[i].lanes);
        assert_int_equal(p.pointee_size, want[i].size);
    }
    kiln_param_info p;
    TEST_OK(kiln_kernel_param(k, 5, &p)); /* a struct of two types is no vector */
    assert_int_equal(p.pointee_cls, KILN_PARAM_OTHER);
    assert_int_equal(p.pointee_lanes, 0);
    kiln_kernel_release(k);
    /* the same source with its signature records compiles through NVRTC */
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "vec.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING) TEST_OK(s);
    kiln_free(log);
}

static kiln_array *arr(kiln_context *ctx, kiln_dtype t, int64_t n) {
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, t, 1, &n, &a));
    return a;
}

static void test_vector_pointees_are_checked(void **state) {
    kiln_context *ctx = *state;
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "vec", NULL, &k));
    int n = 3;
    kiln_array *p = arr(ctx, KILN_FLOAT32, 12), *q = arr(ctx, KILN_FLOAT64, 6), *r = arr(ctx, KILN_INT32, 6),
               *u = arr(ctx, KILN_UINT8, 9), *m = arr(ctx, KILN_FLOAT32, 12), *o = arr(ctx, KILN_INT8, 1);
    kiln_array *i8 = arr(ctx, KILN_INT8, 48), *u8 = arr(ctx, KILN_UINT8, 48),
               *f10 = arr(ctx, KILN_FLOAT32, 10);
    kiln_array *c128 = arr(ctx, KILN_COMPLEX128, 3), *c64 = arr(ctx, KILN_COMPLEX64, 3), *shifted = NULL;
    kiln_array *base13 = arr(ctx, KILN_FLOAT32, 13);
    TEST_OK(kiln_array_slice(base13, 0, 1, 13, 1, &shifted)); /* 4 bytes past a 16-byte boundary */
    kiln_array_release(base13);
#define LAUNCH(a0, a1, a2, a3)                                                                               \
    kiln_launch(k, KILN_DIM(1), KILN_DIM(32), 0, NULL,                                                       \
                KILN_ARGS(a0, a1, a2, a3, kiln_arr(m), kiln_arr(o), kiln_i32(n)))
    /* the case: int8 for float4 *, uint8 for double2 * */
    TEST_FAILS_WITH(LAUNCH(kiln_arr(i8), kiln_arr(q), kiln_arr(r), kiln_arr(u)), KILN_ERR_ARG_TYPE, "float4");
    TEST_FAILS_WITH(LAUNCH(kiln_arr(p), kiln_arr(u8), kiln_arr(r), kiln_arr(u)), KILN_ERR_ARG_TYPE,
                    "double2");
    /* lane type of the wrong width or kind */
    TEST_FAILS_WITH(LAUNCH(kiln_arr(q), kiln_arr(q), kiln_arr(r), kiln_arr(u)), KILN_ERR_ARG_TYPE, "float64");
    TEST_FAILS_WITH(LAUNCH(kiln_arr(p), kiln_arr(q), kiln_arr(p), kiln_arr(u)), KILN_ERR_ARG_TYPE, "int32");
    TEST_FAILS_WITH(LAUNCH(kiln_arr(p), kiln_arr(c64), kiln_arr(r), kiln_arr(u)), KILN_ERR_ARG_TYPE,
                    "complex64");
    /* not a whole number of vectors, misaligned */
    TEST_FAILS_WITH(LAUNCH(kiln_arr(f10), kiln_arr(q), kiln_arr(r), kiln_arr(u)), KILN_ERR_ARG_TYPE,
                    "not a whole number of 4-lane vectors");
    TEST_FAILS_WITH(LAUNCH(kiln_arr(shifted), kiln_arr(q), kiln_arr(r), kiln_arr(u)), KILN_ERR_ARG_TYPE,
                    "16-byte alignment");
    /* typed raw pointers are checked too; untyped ones are not */
    TEST_FAILS_WITH(LAUNCH(kiln_ptr(kiln_array_data(i8), KILN_INT8), kiln_arr(q), kiln_arr(r), kiln_arr(u)),
                    KILN_ERR_ARG_TYPE, "float4");
    TEST_OK(LAUNCH(kiln_ptr(kiln_array_data(p), KILN_DTYPE_COUNT), kiln_arr(q), kiln_arr(r), kiln_arr(u)));
    /* the right arrays run, and complex128 is a double2 array */
    TEST_OK(LAUNCH(kiln_arr(p), kiln_arr(q), kiln_arr(r), kiln_arr(u)));
    TEST_OK(LAUNCH(kiln_ptr(kiln_array_data(p), KILN_FLOAT32), kiln_arr(c128), kiln_arr(r), kiln_arr(u)));
#undef LAUNCH
    float pv[12], mv[12];
    double qv[6], cv[6];
    int32_t rv[6];
    uint8_t uv[9];
    TEST_OK(kiln_array_to_host(p, pv, sizeof pv));
    TEST_OK(kiln_array_to_host(q, qv, sizeof qv));
    TEST_OK(kiln_array_to_host(c128, cv, sizeof cv));
    TEST_OK(kiln_array_to_host(r, rv, sizeof rv));
    TEST_OK(kiln_array_to_host(u, uv, sizeof uv));
    TEST_OK(kiln_array_to_host(m, mv, sizeof mv));
    for (int i = 0; i < 12; i++) assert_true(pv[i] == (float)i);
    for (int i = 0; i < 3; i++) {
        assert_true(qv[2 * i] == -i && qv[2 * i + 1] == i + 0.5);
        assert_true(cv[2 * i] == -i && cv[2 * i + 1] == i + 0.5);
        assert_int_equal(rv[2 * i], -i);
        assert_int_equal(rv[2 * i + 1], 2 * i);
        for (int j = 0; j < 3; j++) assert_int_equal(uv[3 * i + j], i + j);
        assert_true(mv[4 * i + 3] == (float)i);
    }
    kiln_array *all[] = {p, q, r, u, m, o, i8, u8, f10, c128, c64, shifted};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_array_release(all[i]);
    kiln_kernel_release(k);
}

/* A small struct by value takes an unsigned integer of its size, as its
 * bytes (CUB's kernels end with an empty decomposer tag, 1 byte); other
 * sizes and kinds are refused. */
static const char *struct_src = "struct tag {};\n"
                                "struct pair16 { unsigned short lo, hi; };\n"
                                "__global__ void by_value(tag t, pair16 p, int *out) {\n"
                                "    (void)t;\n"
                                "    out[0] = p.lo; out[1] = p.hi;\n"
                                "}\n";

static void test_small_structs_by_value(void **state) {
    kiln_context *ctx = *state;
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, struct_src, "by_value", NULL, &k));
    kiln_array *out = NULL;
    int64_t two = 2;
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &two, &out));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL,
                        KILN_ARGS(kiln_u8(0), kiln_u32(0x00070005u), kiln_arr(out))));
    int got[2];
    TEST_OK(kiln_array_to_host(out, got, sizeof got));
    assert_int_equal(got[0], 5); /* little-endian: lo first */
    assert_int_equal(got[1], 7);
    TEST_FAILS_WITH(
        kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL, KILN_ARGS(kiln_u16(0), kiln_u32(1), kiln_arr(out))),
        KILN_ERR_ARG_TYPE, "argument 0");
    TEST_FAILS_WITH(
        kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL, KILN_ARGS(kiln_u8(0), kiln_i32(1), kiln_arr(out))),
        KILN_ERR_ARG_TYPE, "argument 1");
    kiln_array_release(out);
    kiln_kernel_release(k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_pointees_are_described),
        cmocka_unit_test(test_vector_pointees_are_checked),
        cmocka_unit_test(test_small_structs_by_value),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
