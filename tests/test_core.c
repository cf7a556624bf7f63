/* test_core.c: dtypes, casting, status names, the kernel scanner and the
 * compile-option parser (no backend needed). */
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel_scanner.h"
#include "kernel/options.h"
#include "test_support.h"

static void test_dtype_sizes_and_names(void **state) {
    (void)state;
    static const struct {
        kiln_dtype t;
        size_t size;
        const char *name;
    } table[] = {
        {KILN_BOOL, 1, "bool"},           {KILN_INT8, 1, "int8"},
        {KILN_INT16, 2, "int16"},         {KILN_INT32, 4, "int32"},
        {KILN_INT64, 8, "int64"},         {KILN_UINT8, 1, "uint8"},
        {KILN_UINT16, 2, "uint16"},       {KILN_UINT32, 4, "uint32"},
        {KILN_UINT64, 8, "uint64"},       {KILN_FLOAT16, 2, "float16"},
        {KILN_FLOAT32, 4, "float32"},     {KILN_FLOAT64, 8, "float64"},
        {KILN_COMPLEX64, 8, "complex64"}, {KILN_COMPLEX128, 16, "complex128"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        assert_int_equal(kiln_dtype_size(table[i].t), table[i].size);
        assert_string_equal(kiln_dtype_name(table[i].t), table[i].name);
        kiln_dtype parsed;
        TEST_OK(kiln_dtype_parse(table[i].name, &parsed));
        assert_int_equal(parsed, table[i].t);
    }
    assert_int_equal(kiln_dtype_size(KILN_DTYPE_COUNT), 0);
}

static void test_dtype_parse_codes(void **state) {
    (void)state;
    static const struct {
        const char *text;
        kiln_dtype t;
    } ok[] = {
        {"f4", KILN_FLOAT32},     {"f8", KILN_FLOAT64}, {"c8", KILN_COMPLEX64}, {"c16", KILN_COMPLEX128},
        {"u1", KILN_UINT8},       {"i8", KILN_INT64},   {"b1", KILN_BOOL},      {"float", KILN_FLOAT32},
        {"double", KILN_FLOAT64}, {"f2", KILN_FLOAT16},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        kiln_dtype t;
        TEST_OK(kiln_dtype_parse(ok[i].text, &t));
        assert_int_equal(t, ok[i].t);
    }
    kiln_dtype t;
    TEST_FAILS_WITH(kiln_dtype_parse("f3", &t), KILN_ERR_DTYPE, "unknown dtype 'f3'");
    TEST_FAILS_WITH(kiln_dtype_parse("", &t), KILN_ERR_DTYPE, "unknown dtype");
}

/* NumPy's np.can_cast(from, to, 'safe') for a representative table (the whole
 * table is in test_casting.c). */
static void test_safe_casting_matches_numpy(void **state) {
    (void)state;
    static const struct {
        kiln_dtype from, to;
        int can;
    } table[] = {
        {KILN_BOOL, KILN_INT8, 1},
        {KILN_INT8, KILN_INT16, 1},
        {KILN_INT16, KILN_INT8, 0},
        {KILN_UINT8, KILN_INT16, 1},
        {KILN_UINT8, KILN_INT8, 0},
        {KILN_INT8, KILN_UINT8, 0},
        {KILN_UINT32, KILN_INT64, 1},
        {KILN_UINT64, KILN_INT64, 0},
        {KILN_INT32, KILN_FLOAT64, 1},
        {KILN_INT32, KILN_FLOAT32, 0},
        {KILN_INT16, KILN_FLOAT32, 1},
        {KILN_INT64, KILN_FLOAT64, 1}, /* NumPy: safe, though it rounds above 2**53 */
        {KILN_UINT64, KILN_FLOAT64, 1},
        {KILN_UINT8, KILN_FLOAT16, 1},
        {KILN_INT8, KILN_FLOAT16, 1},
        {KILN_INT16, KILN_FLOAT16, 0},
        {KILN_FLOAT32, KILN_FLOAT64, 1},
        {KILN_FLOAT64, KILN_FLOAT32, 0},
        {KILN_FLOAT16, KILN_FLOAT32, 1},
        {KILN_FLOAT32, KILN_COMPLEX64, 1},
        {KILN_FLOAT64, KILN_COMPLEX64, 0},
        {KILN_FLOAT64, KILN_COMPLEX128, 1},
        {KILN_COMPLEX64, KILN_COMPLEX128, 1},
        {KILN_COMPLEX128, KILN_COMPLEX64, 0},
        {KILN_COMPLEX64, KILN_FLOAT64, 0},
        {KILN_INT32, KILN_COMPLEX128, 1},
        {KILN_INT32, KILN_COMPLEX64, 0},
        {KILN_FLOAT32, KILN_INT64, 0},
        {KILN_INT64, KILN_BOOL, 0},
        {KILN_UINT16, KILN_UINT32, 1},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (kiln_dtype_can_cast(table[i].from, table[i].to) != table[i].can)
            fail_msg("can_cast(%s, %s) should be %d", kiln_dtype_name(table[i].from),
                     kiln_dtype_name(table[i].to), table[i].can);
    }
}

static void test_status_strings(void **state) {
    (void)state;
    assert_string_equal(kiln_status_string(KILN_OK), "KILN_OK");
    assert_string_equal(kiln_status_string(KILN_ERR_SHAPE), "KILN_ERR_SHAPE");
    assert_string_equal(kiln_status_string(KILN_ERR_DEVICE_FAULT), "KILN_ERR_DEVICE_FAULT");
    assert_string_equal(kiln_status_string((kiln_status)12345), "KILN_ERR_UNKNOWN");
    assert_string_equal(kiln_version_string(), "0.1.0");
    assert_int_equal(kiln_version(), KILN_VERSION_NUMBER);
}

static void expect_kernels(const char *src, int n, const char *const *names) {
    kiln_kernel_list l;
    TEST_OK(kiln_scan_kernels(src, &l));
    if (l.count != n) fail_msg("expected %d kernels, found %d in:\n%s", n, l.count, src);
    for (int i = 0; i < n; i++) assert_string_equal(l.names[i], names[i]);
    kiln_kernel_list_free(&l);
}

static void test_scan_finds_kernels(void **state) {
    (void)state;
    expect_kernels("__global__ void saxpy(float a, float *x) {}", 1, (const char *[]){"saxpy"});
    expect_kernels("extern \"C\" __global__ void __launch_bounds__(256, 2) k1(int n) {}\n"
                   "static __global__ void k2() {}\n__global__ void k1(int n);",
                   2, (const char *[]){"k1", "k2"});
    /* comments, strings and preprocessor lines are not code */
    expect_kernels("// __global__ void fake1() {}\n/* __global__ void fake2() */\n"
                   "#define X __global__ void fake3()\nconst char *s = \"__global__ void fake4()\";\n"
                   "__global__ void real(int *p) { }",
                   1, (const char *[]){"real"});
    /* templates need explicit instantiation: not listed */
    expect_kernels("template <typename T> __global__ void t(T *p) {}\n__global__ void plain() {}", 1,
                   (const char *[]){"plain"});
    expect_kernels("int main() { return 0; }", 0, NULL);
}

static void test_options_parse(void **state) {
    (void)state;
    kiln_options o;
    TEST_OK(
        kiln_options_parse("-DN=4 -D M -I/tmp/inc -G --use_fast_math -lineinfo --fast-compile", NULL, &o));
    assert_int_equal(o.define_count, 2);
    assert_string_equal(o.defines[0], "N=4");
    assert_string_equal(o.defines[1], "M");
    assert_int_equal(o.include_count, 1);
    assert_string_equal(o.include_dirs[0], "/tmp/inc");
    assert_true(o.debug && o.fast_math && o.lineinfo && o.fast_compile);
    kiln_options_free(&o);
    TEST_OK(kiln_options_parse(NULL, "/src/dir", &o));
    assert_int_equal(o.include_count, 1);
    kiln_options_free(&o);
    TEST_FAILS_WITH(kiln_options_parse("-O3", NULL, &o), KILN_ERR_INVALID_ARGUMENT,
                    "unknown compile option '-O3'");
    TEST_FAILS_WITH(kiln_options_parse("-D", NULL, &o), KILN_ERR_INVALID_ARGUMENT, "-D needs a macro name");
}

static void test_last_error_is_per_thread_and_grows(void **state) {
    (void)state;
    char big[10000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    kiln_dtype t;
    (void)kiln_dtype_parse(big, &t);
    assert_true(strlen(kiln_last_error()) > sizeof big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_sizes_and_names),
        cmocka_unit_test(test_dtype_parse_codes),
        cmocka_unit_test(test_safe_casting_matches_numpy),
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_scan_finds_kernels),
        cmocka_unit_test(test_options_parse),
        cmocka_unit_test(test_last_error_is_per_thread_and_grows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
