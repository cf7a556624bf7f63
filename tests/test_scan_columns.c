/* test_scan_columns.c: scans along an axis whose neighbouring scans lie side
 * by side in memory (cumsum along axis 0 of a matrix, a middle axis of a 3-d
 * array): the same bits as the sequential scan in C (float32 sums carried in
 * float64, as kiln does), on the backend under test; with
 * KILN_TEST_TARGET=cuda these run as CUDA's column scan (chunks of rows
 * chained between blocks), compared bit for bit with the CPU backend and
 * with a second run. Its CUDA source compiles for sm_90 through NVRTC. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/scan.h"
#include "reduce/scan_gpu.h"
#include "test_support.h"

static int on_cuda(kiln_context *ctx) { return kiln_context_backend(ctx) == KILN_BACKEND_CUDA; }

static kiln_array *from_host(kiln_context *ctx, kiln_dtype t, int nd, const int64_t *shape, const void *h,
                             size_t bytes) {
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, nd, shape, h, bytes, &a));
    return a;
}

/* cumsum of float32 along `axis` of a C-contiguous array (outer, L, inner):
 * float64 carries rounded at each store, in order. */
static void ref_cumsum_f32(const float *x, float *out, int64_t outer, int64_t L, int64_t inner, int excl) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = 0;
            for (int64_t l = 0; l < L; l++) {
                int64_t at = (o * L + l) * inner + i;
                if (excl) out[at] = (float)acc;
                acc += (double)x[at];
                if (!excl) out[at] = (float)acc;
            }
        }
}

/* kiln's scan of h (dtype t, shape) along axis, read back; on CUDA also
 * run twice (equal bits) and against the CPU backend (equal bits). */
static void *run_scan(kiln_context *ctx, kiln_scan_op op, kiln_dtype t, int nd, const int64_t *shape,
                      const void *h, size_t bytes, int axis, int excl) {
    kiln_array *a = from_host(ctx, t, nd, shape, h, bytes), *r = NULL;
    TEST_OK(kiln_scan(op, a, axis, excl, NULL, NULL, &r));
    void *got = test_read_array(r);
    size_t rbytes = (size_t)kiln_array_size(r) * kiln_dtype_size(kiln_array_dtype(r));
    if (on_cuda(ctx)) {
        kiln_array *r2 = NULL;
        TEST_OK(kiln_scan(op, a, axis, excl, NULL, NULL, &r2));
        void *again = test_read_array(r2);
        assert_memory_equal(got, again, rbytes);
        free(again);
        kiln_array_release(r2);
        kiln_context *cpu = NULL;
        TEST_OK(kiln_open(&cpu, "cpu"));
        kiln_array *c = from_host(cpu, t, nd, shape, h, bytes), *rc = NULL;
        TEST_OK(kiln_scan(op, c, axis, excl, NULL, NULL, &rc));
        void *want = test_read_array(rc);
        if (memcmp(got, want, rbytes) != 0)
            fail_msg("scan %d along axis %d: CUDA and CPU bits differ", op, axis);
        free(want);
        kiln_array_release(c);
        kiln_array_release(rc);
        kiln_close(cpu);
    }
    kiln_array_release(a);
    kiln_array_release(r);
    return got;
}

/* float32 cumsum along axis 0 (several chunks of rows, a partial last one,
 * a partial last tile of columns) and along the middle axis of a 3-d array,
 * inclusive and exclusive: the sequential scan's bits. */
static void test_column_cumsum_f32(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    /* the last: long and many scans, where CUDA's single pass was used before */
    const int64_t shapes[4][3] = {{1000, 333, 1}, {4, 517, 70}, {300, 64, 1}, {4100, 2048, 1}};
    for (int s = 0; s < 4; s++) {
        int64_t outer = shapes[s][2] == 1 ? 1 : shapes[s][0];
        int64_t L = shapes[s][2] == 1 ? shapes[s][0] : shapes[s][1];
        int64_t inner = shapes[s][2] == 1 ? shapes[s][1] : shapes[s][2];
        int nd = shapes[s][2] == 1 ? 2 : 3, axis = nd == 2 ? 0 : 1;
        size_t n = (size_t)(outer * L * inner);
        float *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want);
        test_fill_f32(&r, x, n, -1.0, 1.0);
        for (int excl = 0; excl < 2; excl++) {
            ref_cumsum_f32(x, want, outer, L, inner, excl);
            float *got =
                run_scan(ctx, KILN_SCAN_SUM, KILN_FLOAT32, nd, shapes[s], x, n * sizeof *x, axis, excl);
            for (size_t i = 0; i < n; i++)
                if (memcmp(&got[i], &want[i], sizeof *got))
                    fail_msg("shape %d excl %d: element %zu is %.9g, the sequential scan gives %.9g", s, excl,
                             i, (double)got[i], (double)want[i]);
            free(got);
        }
        if (s == 3) { /* CUDA's plan for it: the column scan */
            const sc_op op = {.name = "cumsum",
                              .in_dtype = KILN_FLOAT32,
                              .out_dtype = KILN_FLOAT32,
                              .combine = "a + b",
                              .identity = "kiln_sc_v()",
                              .acc_f64 = 1};
            kiln_array *a = from_host(ctx, KILN_FLOAT32, nd, shapes[s], x, n * sizeof *x);
            char *src = NULL;
            TEST_OK(sc_source_for(&op, KILN_BACKEND_CUDA, a, 0, &src));
            assert_non_null(strstr(src, "kiln_sc_columns"));
            free(src);
            kiln_array_release(a);
        }
        free(x);
        free(want);
    }
}

/* Other value types through the chain: int32 sums into int64 (inputs and
 * outputs of different sizes: shorter chunks), float64 maxima, and a user
 * operator without identity (a has-a-value wrapper of 16 bytes). */
static void test_column_scans_other_types(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    int64_t shape[2] = {700, 45}, n = shape[0] * shape[1];
    int32_t *xi = malloc(sizeof *xi * (size_t)n);
    double *xd = malloc(sizeof *xd * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        xi[i] = (int32_t)test_uniform(&r, -1e6, 1e6);
        xd[i] = test_uniform(&r, -10, 10);
    }
    int64_t *si = run_scan(ctx, KILN_SCAN_SUM, KILN_INT32, 2, shape, xi, sizeof *xi * (size_t)n, 0, 0);
    double *md = run_scan(ctx, KILN_SCAN_MAX, KILN_FLOAT64, 2, shape, xd, sizeof *xd * (size_t)n, 0, 0);
    for (int64_t c = 0; c < shape[1]; c++) {
        int64_t acc = 0;
        double mx = -1e300;
        for (int64_t l = 0; l < shape[0]; l++) {
            acc += xi[l * shape[1] + c];
            mx = xd[l * shape[1] + c] > mx ? xd[l * shape[1] + c] : mx;
            assert_int_equal(si[l * shape[1] + c], acc);
            assert_true(md[l * shape[1] + c] == mx);
        }
    }
    kiln_scan_kernel *k = NULL;
    TEST_OK(kiln_scan_kernel_create(ctx, "absmax", "f8", "fabs(a) > fabs(b) ? fabs(a) : fabs(b)", NULL, NULL,
                                    &k));
    kiln_array *a = from_host(ctx, KILN_FLOAT64, 2, shape, xd, sizeof *xd * (size_t)n), *res = NULL;
    TEST_OK(kiln_scan_kernel_call(k, a, 0, 0, NULL, &res));
    double *am = test_read_array(res);
    for (int64_t c = 0; c < shape[1]; c++) {
        double m = xd[c];
        for (int64_t l = 0; l < shape[0]; l++) {
            double v = xd[l * shape[1] + c];
            if (l > 0) m = fabs(m) > fabs(v) ? fabs(m) : fabs(v);
            assert_true(am[l * shape[1] + c] == m);
        }
    }
    /* the CUDA source of this call: the column scan, through NVRTC sm_90 */
    char *src = NULL, *log = NULL;
    TEST_OK(sc_source_for(sc_kernel_op(k), KILN_BACKEND_CUDA, a, 0, &src));
    assert_non_null(strstr(src, "kiln_sc_columns"));
    kiln_status cs = kiln_compile_only("cuda", "sm_90", src, "absmax_columns.cu", NULL, &log);
    if (cs != KILN_OK && cs != KILN_ERR_COMPILER_MISSING)
        fail_msg("the column scan does not compile for sm_90: %s\n%s", kiln_last_error(), log ? log : "");
    kiln_free(log);
    free(src);
    free(am);
    kiln_array_release(res);
    kiln_array_release(a);
    kiln_scan_kernel_release(k);
    free(si);
    free(md);
    free(xi);
    free(xd);
}

/* The column scan's shapes (KILN_SCAN_COLUMN_WIDTH, _BYTES, _GROUPS) the
 * kernel test runs: the defaults, the first version's one group of 128
 * rows, and odd ones: 3 groups (chunks of 48 rows, a partial last one),
 * 8 groups of 16 rows (the last chunk's last group empty), 128 scans. */
typedef struct col_shape {
    const char *width, *bytes, *groups;
    int block, items, group;
} col_shape;

static const col_shape col_shapes[] = {
    {NULL, NULL, NULL, 256, 64, 4}, {"64", "512", "1", 64, 128, 1}, {"128", "64", "3", 384, 16, 3},
    {"32", "64", "8", 256, 16, 8},  {"96", "128", "2", 192, 32, 2},
};

static void set_or_unset(const char *name, const char *value) {
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

static void col_shape_set(const col_shape *c) {
    set_or_unset("KILN_SCAN_COLUMN_WIDTH", c->width);
    set_or_unset("KILN_SCAN_COLUMN_BYTES", c->bytes);
    set_or_unset("KILN_SCAN_COLUMN_GROUPS", c->groups);
}

/* The generated CUDA column scans of the built-in operators compile for
 * sm_90 (float32 with float64 carries, int32 into int64, a 1-byte value). */
static void test_column_scan_sources_compile(void **state) {
    kiln_context *ctx = *state;
    const sc_op ops[] = {
        {.name = "cumsum",
         .in_dtype = KILN_FLOAT32,
         .out_dtype = KILN_FLOAT32,
         .combine = "a + b",
         .identity = "kiln_sc_v()",
         .acc_f64 = 1},
        {.name = "cumsum",
         .in_dtype = KILN_INT32,
         .out_dtype = KILN_INT64,
         .combine = "a + b",
         .identity = "kiln_sc_v()"},
        {.name = "cummax",
         .in_dtype = KILN_UINT8,
         .out_dtype = KILN_UINT8,
         .combine = "kiln_rd_max(a, b)",
         .identity = "(uint8_t)0"},
    };
    for (size_t k = 0; k < sizeof ops / sizeof *ops * 2; k++) {
        /* each operator in the default shape and in one group of 128 rows */
        size_t i = k / 2;
        col_shape_set(&col_shapes[k % 2]);
        kiln_array *x = NULL;
        TEST_OK(kiln_array_zeros(ctx, ops[i].in_dtype, 2, (int64_t[2]){600, 100}, &x));
        char *src = NULL, *log = NULL;
        TEST_OK(sc_source_for(&ops[i], KILN_BACKEND_CUDA, x, 0, &src));
        if (!strstr(src, "kiln_sc_columns")) fail_msg("%s: no column scan in the source", ops[i].name);
        kiln_status cs = kiln_compile_only("cuda", "sm_90", src, "columns.cu", NULL, &log);
        if (cs == KILN_ERR_COMPILER_MISSING)
            print_message("NVRTC not found: the sm_90 compile is not checked\n");
        else if (cs != KILN_OK)
            fail_msg("%s's column scan does not compile for sm_90: %s\n%s", ops[i].name, kiln_last_error(),
                     log ? log : "");
        kiln_free(log);
        free(src);
        kiln_array_release(x);
    }
    col_shape_set(&col_shapes[0]);
}

/* out = the column scan of a (float32 1000 x 333) in the plan's shape,
 * launched directly, with a fresh workspace. */
static void run_column_kernel(kiln_context *ctx, const sc_plan *p, kiln_kernel *init, kiln_kernel *cols,
                              kiln_array *out, kiln_array *a, int excl) {
    kiln_array *ws = NULL;
    int64_t bytes = sc_columns_workspace_bytes(p);
    TEST_OK(kiln_array_empty(ctx, KILN_UINT8, 1, &bytes, &ws));
    kiln_value args[] = {
        kiln_arr(out),       kiln_arr(a),         kiln_ptr(kiln_array_data(ws), KILN_DTYPE_COUNT),
        kiln_i32(excl),      kiln_i64(p->M),      kiln_i64(p->L),
        kiln_i64(p->sL),     kiln_i64(p->oL),     kiln_i64(p->T),
        kiln_i64(p->tile),   kiln_i64(p->per),    kiln_i64(p->rshape[0]),
        kiln_i64(p->rin[0]), kiln_i64(p->rout[0])};
    int na = (int)(sizeof args / sizeof *args);
    TEST_OK(kiln_launch(init, KILN_DIM(1), KILN_DIM(256), 0, NULL, args, na));
    TEST_OK(kiln_launch(cols, KILN_DIM((uint32_t)(p->T * p->per)), KILN_DIM((uint32_t)p->block), 0, NULL,
                        args, na));
    kiln_array_release(ws);
}

/* The column scan's kernels themselves, launched on the backend under test
 * (the CPU backend too: blocks take their ids in start order, so a block
 * only waits for one that is running or done, even on a small worker pool):
 * a float32 cumsum of 1000 x 333 (several chunks, the last partial; tiles
 * of scans, the last partial) in every shape of col_shapes, inclusive and
 * exclusive, against the sequential scan in C with float64 carries, bit
 * for bit, and twice (the same bits). */
static void test_column_kernel_runs(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for(__func__);
    const sc_op op = {.name = "cumsum",
                      .in_dtype = KILN_FLOAT32,
                      .out_dtype = KILN_FLOAT32,
                      .combine = "a + b",
                      .identity = "kiln_sc_v()",
                      .acc_f64 = 1};
    int64_t shape[2] = {1000, 333};
    size_t n = (size_t)(shape[0] * shape[1]);
    float *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want);
    test_fill_f32(&r, x, n, -1.0, 1.0);
    kiln_array *a = from_host(ctx, KILN_FLOAT32, 2, shape, x, n * sizeof *x), *out = NULL;
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 2, shape, &out));
    for (size_t c = 0; c < sizeof col_shapes / sizeof *col_shapes; c++) {
        col_shape_set(&col_shapes[c]);
        sc_plan p = {.nd = 1, .M = shape[1], .L = shape[0], .sL = 4 * shape[1], .oL = 4 * shape[1]};
        p.rshape[0] = shape[1];
        p.rin[0] = p.rout[0] = 4;
        assert_int_equal(sc_columns_fit(&p, 4, 4), 1);
        assert_int_equal(p.block, col_shapes[c].block);
        assert_int_equal(p.items, col_shapes[c].items);
        assert_int_equal(p.group, col_shapes[c].group);
        char *src = NULL;
        TEST_OK(sc_source_for(&op, KILN_BACKEND_CUDA, a, 0, &src));
        kiln_module *m = NULL;
        kiln_kernel *init = NULL, *cols = NULL;
        TEST_OK(kiln_module_from_source(ctx, src, "columns.cu", NULL, &m));
        TEST_OK(kiln_module_kernel(m, "kiln_sc_colinit", &init));
        TEST_OK(kiln_module_kernel(m, "kiln_sc_columns", &cols));
        for (int excl = 0; excl < 2; excl++) {
            run_column_kernel(ctx, &p, init, cols, out, a, excl);
            float *got = test_read_array(out);
            ref_cumsum_f32(x, want, 1, shape[0], shape[1], excl);
            for (size_t i = 0; i < n; i++)
                if (memcmp(&got[i], &want[i], sizeof *got))
                    fail_msg("shape %zu excl %d: element %zu is %.9g, the sequential scan gives %.9g", c,
                             excl, i, (double)got[i], (double)want[i]);
            run_column_kernel(ctx, &p, init, cols, out, a, excl);
            float *again = test_read_array(out);
            if (memcmp(got, again, n * sizeof *got) != 0)
                fail_msg("shape %zu excl %d: two runs differ", c, excl);
            free(again);
            free(got);
        }
        kiln_kernel_release(init);
        kiln_kernel_release(cols);
        kiln_module_release(m);
        free(src);
    }
    col_shape_set(&col_shapes[0]);
    kiln_array_release(out);
    kiln_array_release(a);
    free(x);
    free(want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_column_cumsum_f32, test_setup_context, test_teardown_context),
        cmocka_unit_test_setup_teardown(test_column_scans_other_types, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test_setup_teardown(test_column_kernel_runs, test_setup_context, test_teardown_context),
        cmocka_unit_test_setup_teardown(test_column_scan_sources_compile, test_setup_context,
                                        test_teardown_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
