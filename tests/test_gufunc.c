/* test_gufunc.c: generalized ufuncs on the backend under test: the Hermite
 * recurrence in place, "()->(n)" with the size from the call or from an
 * output, batched matmul with broadcast loop dims, fixed dims, several
 * outputs, every float dtype, strided views, scalars, and every user error the
 * issue names. Every kernel kiln generates for these calls is also compiled
 * through NVRTC for sm_90 (skipped where NVRTC is missing), and on a GPU run
 * the results are compared with a CPU context's on the same random inputs. */
#define KILN_EXPERIMENTAL /* kiln_gufunc_source (include/kiln.h) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"
#include "test_support.h"

static const char *herm_body =
    "for (int i = 2; i < out.len; i++) out[i] = out[1] * out[i - 1] - (i - 1) * out[i - 2];\n"
    "float c = 1;\n"
    "for (int i = 2; i < out.len; i++) { c *= i; out[i] /= sqrtf(c); }\n";

/* The seed's foo(X, N) in double: out[:,0] = 1, out[:,1] = X, recurrence, scaling. */
static void foo_reference(const double *x, int64_t rows, int n, double *out) {
    for (int64_t r = 0; r < rows; r++) {
        double *o = out + r * n;
        for (int i = 0; i < n; i++) o[i] = 1.0;
        if (n > 1) o[1] = x[r];
        for (int i = 2; i < n; i++) o[i] = x[r] * o[i - 1] - (i - 1) * o[i - 2];
        double c = 1;
        for (int i = 2; i < n; i++) {
            c *= i;
            o[i] /= sqrt(c);
        }
    }
}

/* Compiles a call's CUDA source through NVRTC for sm_90; returns the kernel
 * name (strategy) for checks, or NULL when NVRTC is missing. */
static char *nvrtc_check(kiln_gufunc *f, const char *dims, const kiln_value *args, int nargs,
                         kiln_array *const *outs) {
    char *src = NULL, *kname = NULL, *log = NULL;
    TEST_OK(kiln_gufunc_source(f, "cuda", dims, args, nargs, outs, &src, &kname));
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "gufunc.cu", NULL, &log);
    if (s == KILN_ERR_COMPILER_MISSING) {
        kiln_free(src);
        kiln_free(log);
        kiln_free(kname);
        return NULL;
    }
    if (s != KILN_OK) fail_msg("%s did not compile through NVRTC: %s\n%s", kname, kiln_last_error(), src);
    kiln_free(log);
    kiln_free(src);
    /* and the CPU form of the same call through the host compiler's syntax */
    TEST_OK(kiln_gufunc_source(f, "cpu", dims, args, nargs, outs, &src, NULL));
    assert_non_null(strstr(src, "cpu_loop"));
    kiln_free(src);
    return kname;
}

static void expect_strategy(kiln_gufunc *f, const char *dims, const kiln_value *args, int nargs,
                            kiln_array *const *outs, const char *strategy) {
    char *k = nvrtc_check(f, dims, args, nargs, outs);
    if (!k) return;
    if (!strstr(k, strategy)) fail_msg("expected strategy %s, got kernel %s", strategy, k);
    kiln_free(k);
}

static void test_hermite_in_place(void **state) {
    kiln_context *ctx = *state;
    kiln_gufunc *h = NULL;
    TEST_OK(kiln_guvectorize(ctx, "herm", "void(f4[:], f4[:]); void(f8[:], f8[:])", "(n)->(n)", "inp, out",
                             herm_body, NULL, &h));
    assert_int_equal(kiln_gufunc_nin(h), 1);
    assert_int_equal(kiln_gufunc_nout(h), 1);
    test_rng rng = test_rng_for(__func__);
    int64_t rows = 10007; /* not a multiple of any block */
    int n = 4;
    float *host = malloc(sizeof(float) * (size_t)(rows * n));
    double *x = malloc(sizeof(double) * (size_t)rows), *ref = malloc(sizeof(double) * (size_t)(rows * n));
    for (int64_t r = 0; r < rows; r++) {
        x[r] = (float)test_uniform(&rng, -3, 3);
        host[r * n] = 1;
        host[r * n + 1] = (float)x[r];
        host[r * n + 2] = host[r * n + 3] = 1;
    }
    foo_reference(x, rows, n, ref);
    int64_t shape[2] = {rows, n};
    kiln_array *X = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, host, sizeof(float) * (size_t)(rows * n), &X));
    expect_strategy(h, NULL, KILN_ARGS(kiln_arr(X), kiln_arr(X)), NULL, "rows_reg");
    TEST_OK(kiln_gufunc_call(h, KILN_ARGS(kiln_arr(X), kiln_arr(X)), NULL, NULL));
    TEST_OK(kiln_array_to_host(X, host, sizeof(float) * (size_t)(rows * n)));
    assert_true(test_max_rel_err_f32(host, ref, (size_t)(rows * n), 1e-5, 1e-5) <= 1.0);
    /* A longer row (n = 9, 36 bytes): shared-memory staging on the GPU. */
    int64_t shape9[2] = {rows, 9};
    kiln_array *Y = NULL;
    double *ref9 = malloc(sizeof(double) * (size_t)(rows * 9));
    float *h9 = malloc(sizeof(float) * (size_t)(rows * 9));
    foo_reference(x, rows, 9, ref9);
    for (int64_t i = 0; i < rows * 9; i++) h9[i] = (float)ref9[i];
    for (int64_t r = 0; r < rows; r++)
        for (int i = 2; i < 9; i++) h9[r * 9 + i] = -7; /* overwritten by the body */
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape9, h9, sizeof(float) * (size_t)(rows * 9), &Y));
    expect_strategy(h, NULL, KILN_ARGS(kiln_arr(Y), kiln_arr(Y)), NULL, "rows_smem");
    TEST_OK(kiln_gufunc_call(h, KILN_ARGS(kiln_arr(Y), kiln_arr(Y)), NULL, NULL));
    TEST_OK(kiln_array_to_host(Y, h9, sizeof(float) * (size_t)(rows * 9)));
    assert_true(test_max_rel_err_f32(h9, ref9, (size_t)(rows * 9), 1e-4, 1e-4) <= 1.0);
    kiln_array_release(X);
    kiln_array_release(Y);
    kiln_gufunc_release(h);
    free(host);
    free(h9);
    free(x);
    free(ref);
    free(ref9);
}

/* "()->(n)": the seed's wish. n from the call ("n=4") or from a given output. */
static void test_output_only_dim(void **state) {
    kiln_context *ctx = *state;
    kiln_gufunc *g = NULL;
    TEST_OK(
        kiln_guvectorize(ctx, "herm_x", "void(f4, f4[:]); void(f8, f8[:])", "()->(n)", "x, out",
                         "out[0] = 1;\n"
                         "if (out.len > 1) out[1] = x;\n"
                         "for (int i = 2; i < out.len; i++) out[i] = x * out[i - 1] - (i - 1) * out[i - 2];\n"
                         "double c = 1;\n"
                         "for (int i = 2; i < out.len; i++) { c *= i; out[i] /= sqrt(c); }\n",
                         NULL, &g));
    test_rng rng = test_rng_for(__func__);
    int64_t rows = 3001;
    double *x = malloc(sizeof(double) * (size_t)rows), *ref = malloc(sizeof(double) * (size_t)rows * 6);
    test_fill_f64(&rng, x, (size_t)rows, -2, 2);
    kiln_array *X = NULL, *Y = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &rows, x, sizeof(double) * (size_t)rows, &X));
    expect_strategy(g, "n=4", KILN_ARGS(kiln_arr(X)), (kiln_array *[]){NULL}, "rows_reg");
    TEST_OK(kiln_gufunc_call(g, KILN_ARGS(kiln_arr(X)), &Y, "n=4"));
    assert_int_equal(kiln_array_ndim(Y), 2);
    assert_int_equal(kiln_array_shape(Y)[1], 4);
    assert_int_equal(kiln_array_dtype(Y), KILN_FLOAT64);
    double *got = malloc(sizeof(double) * (size_t)rows * 6);
    TEST_OK(kiln_array_to_host(Y, got, sizeof(double) * (size_t)rows * 4));
    foo_reference(x, rows, 4, ref);
    long double *lref = malloc(sizeof(long double) * (size_t)rows * 6);
    for (int64_t i = 0; i < rows * 4; i++) lref[i] = ref[i];
    assert_true(test_max_rel_err_f64(got, lref, (size_t)rows * 4, 1e-12, 1e-12) <= 1.0);
    kiln_array_release(Y);
    /* n from a given output (6 wide), and the call may repeat it consistently */
    int64_t shape[2] = {rows, 6};
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, shape, &Y));
    TEST_OK(kiln_gufunc_call(g, KILN_ARGS(kiln_arr(X), kiln_arr(Y)), NULL, "n=6"));
    TEST_OK(kiln_array_to_host(Y, got, sizeof(double) * (size_t)rows * 6));
    foo_reference(x, rows, 6, ref);
    for (int64_t i = 0; i < rows * 6; i++) lref[i] = ref[i];
    assert_true(test_max_rel_err_f64(got, lref, (size_t)rows * 6, 1e-12, 1e-12) <= 1.0);
    /* a scalar input: one x for every row of the output's loop dims? No loop
     * dims then: one row. */
    kiln_array *Z = NULL;
    TEST_OK(kiln_gufunc_call(g, KILN_ARGS(kiln_f64(0.5)), &Z, "n=5"));
    assert_int_equal(kiln_array_ndim(Z), 1);
    double z[5];
    TEST_OK(kiln_array_to_host(Z, z, sizeof z));
    double zr[5], half = 0.5;
    foo_reference(&half, 1, 5, zr);
    for (int i = 0; i < 5; i++) assert_true(fabs(z[i] - zr[i]) < 1e-12);
    /* errors: no size anywhere; a size that contradicts the output */
    kiln_array *W = NULL;
    TEST_FAILS_WITH(kiln_gufunc_call(g, KILN_ARGS(kiln_arr(X)), &W, NULL), KILN_ERR_SHAPE,
                    "core dim n of output 1 (out) appears in no input");
    TEST_FAILS_WITH(kiln_gufunc_call(g, KILN_ARGS(kiln_arr(X), kiln_arr(Y)), NULL, "n=4"), KILN_ERR_SHAPE,
                    "core dim n is 6 in output 1 (out) but the call gives n=4");
    TEST_FAILS_WITH(kiln_gufunc_call(g, KILN_ARGS(kiln_arr(X)), &W, "m=4"), KILN_ERR_SIGNATURE,
                    "\"m\" is not a dim");
    assert_null(W);
    kiln_array_release(X);
    kiln_array_release(Y);
    kiln_array_release(Z);
    kiln_gufunc_release(g);
    free(x);
    free(ref);
    free(got);
    free(lref);
}

static const char *matmul_body = "for (int i = 0; i < C.shape[0]; i++)\n"
                                 "    for (int j = 0; j < C.shape[1]; j++) {\n"
                                 "        double acc = 0;\n"
                                 "        for (int k = 0; k < A.shape[1]; k++) acc += A(i, k) * B[k][j];\n"
                                 "        C(i, j) = acc;\n"
                                 "    }\n";

static void matmul_reference(const double *a, const double *b, double *c, int m, int n, int p) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < p; j++) {
            double s = 0;
            for (int k = 0; k < n; k++) s += a[i * n + k] * b[k * p + j];
            c[i * p + j] = s;
        }
}

/* (m,n),(n,p)->(m,p) over loop dims (5,1) and (3): broadcast to (5,3). */
static void test_matmul_broadcast(void **state) {
    kiln_context *ctx = *state;
    kiln_gufunc *mm = NULL;
    TEST_OK(kiln_guvectorize(ctx, "matmul",
                             "void(f8[:,:], f8[:,:], f8[:,:]); void(f4[:,:], f4[:,:], f4[:,:])",
                             "(m,n),(n,p)->(m,p)", "A, B, C", matmul_body, NULL, &mm));
    test_rng rng = test_rng_for(__func__);
    const int m = 3, n = 4, p = 2;
    double a[5 * 3 * 4], b[3 * 4 * 2], c[5 * 3 * 3 * 2];
    test_fill_f64(&rng, a, 60, -1, 1);
    test_fill_f64(&rng, b, 24, -1, 1);
    int64_t sa[4] = {5, 1, m, n}, sb[3] = {3, n, p};
    kiln_array *A = NULL, *B = NULL, *C = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 4, sa, a, sizeof a, &A));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 3, sb, b, sizeof b, &B));
    kiln_free(nvrtc_check(mm, NULL, KILN_ARGS(kiln_arr(A), kiln_arr(B)), (kiln_array *[]){NULL}));
    TEST_OK(kiln_gufunc_call(mm, KILN_ARGS(kiln_arr(A), kiln_arr(B)), &C, NULL));
    assert_int_equal(kiln_array_ndim(C), 4);
    const int64_t *cs = kiln_array_shape(C);
    assert_true(cs[0] == 5 && cs[1] == 3 && cs[2] == m && cs[3] == p);
    TEST_OK(kiln_array_to_host(C, c, sizeof c));
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++) {
            double r[6];
            matmul_reference(a + i * 12, b + j * 8, r, m, n, p);
            for (int e = 0; e < 6; e++) assert_true(fabs(c[(i * 3 + j) * 6 + e] - r[e]) < 1e-12);
        }
    /* core-dim mismatch names the dim and both sizes */
    int64_t sbad[3] = {3, 5, p};
    kiln_array *Bad = NULL, *D = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 3, sbad, &Bad));
    TEST_FAILS_WITH(kiln_gufunc_call(mm, KILN_ARGS(kiln_arr(A), kiln_arr(Bad)), &D, NULL), KILN_ERR_SHAPE,
                    "core dim n is 4 in input 0 (A) but 5 in input 1 (B)");
    /* loop dims that do not broadcast */
    int64_t sb2[3] = {4, n, p};
    kiln_array *B2 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 3, sb2, &B2));
    int64_t sa2[3] = {3, m, n};
    kiln_array *A2 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 3, sa2, &A2));
    TEST_FAILS_WITH(kiln_gufunc_call(mm, KILN_ARGS(kiln_arr(A2), kiln_arr(B2)), &D, NULL), KILN_ERR_SHAPE,
                    "loop dim 0 is 3 vs 4");
    /* too few dims for the core */
    int64_t one = 4;
    kiln_array *V = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &one, &V));
    TEST_FAILS_WITH(kiln_gufunc_call(mm, KILN_ARGS(kiln_arr(V), kiln_arr(B)), &D, NULL), KILN_ERR_SHAPE,
                    "is 1-d but its core dims (m,n)");
    /* dtype with no signature */
    kiln_array *I = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX128, 3, sa2, &I));
    TEST_FAILS_WITH(kiln_gufunc_call(mm, KILN_ARGS(kiln_arr(I), kiln_arr(B)), &D, NULL), KILN_ERR_DTYPE,
                    "no type signature");
    assert_null(D);
    kiln_array_release(A);
    kiln_array_release(B);
    kiln_array_release(C);
    kiln_array_release(Bad);
    kiln_array_release(B2);
    kiln_array_release(A2);
    kiln_array_release(V);
    kiln_array_release(I);
    kiln_gufunc_release(mm);
}

/* Fixed dims: cross product (3),(3)->(3); a wrong size is named. */
static void test_fixed_dims(void **state) {
    kiln_context *ctx = *state;
    kiln_gufunc *cr = NULL;
    TEST_OK(kiln_guvectorize(ctx, "cross", "void(f8[:], f8[:], f8[:])", "(3),(3)->(3)", "a, b, c",
                             "c[0] = a[1] * b[2] - a[2] * b[1];\n"
                             "c[1] = a[2] * b[0] - a[0] * b[2];\n"
                             "c[2] = a[0] * b[1] - a[1] * b[0];\n",
                             NULL, &cr));
    test_rng rng = test_rng_for(__func__);
    double a[7 * 3], b[3], c[7 * 3];
    test_fill_f64(&rng, a, 21, -1, 1);
    test_fill_f64(&rng, b, 3, -1, 1);
    int64_t sa[2] = {7, 3}, sb = 3;
    kiln_array *A = NULL, *B = NULL, *C = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 2, sa, a, sizeof a, &A));
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &sb, b, sizeof b, &B)); /* broadcast over the 7 rows */
    expect_strategy(cr, NULL, KILN_ARGS(kiln_arr(A), kiln_arr(B)), (kiln_array *[]){NULL}, "rows_reg");
    TEST_OK(kiln_gufunc_call(cr, KILN_ARGS(kiln_arr(A), kiln_arr(B)), &C, NULL));
    TEST_OK(kiln_array_to_host(C, c, sizeof c));
    for (int r = 0; r < 7; r++) {
        const double *x = a + 3 * r;
        assert_true(fabs(c[3 * r] - (x[1] * b[2] - x[2] * b[1])) < 1e-14);
        assert_true(fabs(c[3 * r + 1] - (x[2] * b[0] - x[0] * b[2])) < 1e-14);
        assert_true(fabs(c[3 * r + 2] - (x[0] * b[1] - x[1] * b[0])) < 1e-14);
    }
    int64_t s4[2] = {7, 4};
    kiln_array *A4 = NULL, *D = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, s4, &A4));
    TEST_FAILS_WITH(kiln_gufunc_call(cr, KILN_ARGS(kiln_arr(A4), kiln_arr(B)), &D, NULL), KILN_ERR_SHAPE,
                    "is fixed to 3 by the layout (3),(3)->(3), got 4");
    kiln_array_release(A);
    kiln_array_release(B);
    kiln_array_release(C);
    kiln_array_release(A4);
    kiln_gufunc_release(cr);
}

/* Two outputs, scalar cores: (n)->(),() sum and max, on a transposed
 * (column) view: the generic path with strides. */
static void test_several_outputs_strided(void **state) {
    kiln_context *ctx = *state;
    kiln_gufunc *g = NULL;
    TEST_OK(kiln_guvectorize(ctx, "summax", "void(f8[:], f8, f8)", "(n)->(),()", "x -> total, top",
                             "double s = 0, m = x[0];\n"
                             "for (int i = 0; i < x.len; i++) { s += x[i]; m = fmax(m, x[i]); }\n"
                             "total = s;\n"
                             "top = m;\n",
                             NULL, &g));
    test_rng rng = test_rng_for(__func__);
    const int R = 50, N = 7;
    double h[50 * 7];
    test_fill_f64(&rng, h, (size_t)(R * N), -5, 5);
    int64_t shape[2] = {N, R}; /* stored (N, R); the call sees its transpose (R, N) */
    kiln_array *X = NULL, *XT = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 2, shape, h, sizeof h, &X));
    TEST_OK(kiln_array_transpose(X, NULL, &XT));
    kiln_array *outs[2] = {NULL, NULL};
    expect_strategy(g, NULL, KILN_ARGS(kiln_arr(XT)), outs, "generic");
    TEST_OK(kiln_gufunc_call(g, KILN_ARGS(kiln_arr(XT)), outs, NULL));
    double tot[50], top[50];
    TEST_OK(kiln_array_to_host(outs[0], tot, sizeof tot));
    TEST_OK(kiln_array_to_host(outs[1], top, sizeof top));
    for (int r = 0; r < R; r++) {
        double s = 0, m = h[r];
        for (int i = 0; i < N; i++) {
            s += h[i * R + r];
            m = fmax(m, h[i * R + r]);
        }
        assert_true(fabs(tot[r] - s) < 1e-12);
        assert_true(top[r] == m);
    }
    /* outputs passed in, one of them a strided view of a bigger array */
    int64_t big = 2 * R;
    kiln_array *Big = NULL, *Every2 = NULL, *T = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &big, &Big));
    TEST_OK(kiln_array_slice(Big, 0, 0, big, 2, &Every2));
    int64_t r64 = R;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &r64, &T));
    kiln_array *given[2] = {Every2, T};
    TEST_OK(kiln_gufunc_call(g, KILN_ARGS(kiln_arr(XT)), given, NULL));
    double b2[100];
    TEST_OK(kiln_array_to_host(Big, b2, sizeof b2));
    for (int r = 0; r < R; r++) {
        assert_true(fabs(b2[2 * r] - tot[r]) < 1e-12);
        assert_true(b2[2 * r + 1] == 0);
    }
    /* an output that partly overlaps an input is refused */
    kiln_array *Alias = NULL;
    TEST_OK(kiln_array_slice(X, 0, 0, 1, 1, &Alias)); /* row 0 of X: shape (1, R) */
    kiln_array *Alias1 = NULL;
    int64_t rs = R;
    TEST_OK(kiln_array_reshape(Alias, 1, &rs, &Alias1));
    kiln_array *bad[2] = {Alias1, T};
    TEST_FAILS_WITH(kiln_gufunc_call(g, KILN_ARGS(kiln_arr(XT)), bad, NULL), KILN_ERR_INVALID_ARGUMENT,
                    "overlaps input 0 (x)");
    kiln_array_release(Alias);
    kiln_array_release(Alias1);
    kiln_array_release(X);
    kiln_array_release(XT);
    kiln_array_release(outs[0]);
    kiln_array_release(outs[1]);
    kiln_array_release(Big);
    kiln_array_release(Every2);
    kiln_array_release(T);
    kiln_gufunc_release(g);
}

/* The same body on float16, float32, float64 and complex128 arrays. */
static void test_every_float_dtype(void **state) {
    kiln_context *ctx = *state;
    kiln_gufunc *g = NULL;
    TEST_OK(kiln_guvectorize(
        ctx, "axpy_rev", "void(f2, f2[:], f2[:]); void(f4, f4[:], f4[:]); void(f8, f8[:], f8[:])",
        "(),(n)->(n)", "a, x, y", "for (int i = 0; i < x.len; i++) y[i] = a * x[x.len - 1 - i] + y[i];", NULL,
        &g));
    static const kiln_dtype types[] = {KILN_FLOAT16, KILN_FLOAT32, KILN_FLOAT64};
    const int R = 33, N = 5;
    for (size_t t = 0; t < 3; t++) {
        int64_t shape[2] = {R, N};
        kiln_array *X = NULL, *Y = NULL, *A = NULL;
        TEST_OK(kiln_array_arange(ctx, KILN_FLOAT64, 0, R * N, 1, &A));
        TEST_OK(kiln_array_empty(ctx, types[t], 2, shape, &X));
        kiln_array *A2 = NULL;
        TEST_OK(kiln_array_reshape(A, 2, shape, &A2));
        kiln_gufunc *conv = NULL; /* float64 -> any float, itself a gufunc "()->()" */
        char sigs[96];
        snprintf(sigs, sizeof sigs, "void(f8, %s)", kiln_dtype_name(types[t]));
        TEST_OK(kiln_guvectorize(ctx, "convert", sigs, "()->()", "a, b", "b = a;", NULL, &conv));
        TEST_OK(kiln_gufunc_call(conv, KILN_ARGS(kiln_arr(A2), kiln_arr(X)), NULL, NULL));
        kiln_gufunc_release(conv);
        kiln_array_release(A2);
        TEST_OK(kiln_array_full(ctx, types[t], 2, shape, 1.0, 0, &Y));
        kiln_free(nvrtc_check(g, NULL, KILN_ARGS(kiln_f64(0.5), kiln_arr(X), kiln_arr(Y)), NULL));
        TEST_OK(kiln_gufunc_call(g, KILN_ARGS(kiln_f64(0.5), kiln_arr(X), kiln_arr(Y)), NULL, NULL));
        kiln_array *Y64 = NULL;
        double got[33 * 5];
        if (types[t] == KILN_FLOAT64) {
            TEST_OK(kiln_array_to_host(Y, got, sizeof got));
        } else if (types[t] == KILN_FLOAT32) {
            float g32[33 * 5];
            TEST_OK(kiln_array_to_host(Y, g32, sizeof g32));
            for (int i = 0; i < R * N; i++) got[i] = g32[i];
        } else {
            uint16_t g16[33 * 5];
            TEST_OK(kiln_array_to_host(Y, g16, sizeof g16));
            for (int i = 0; i < R * N; i++) { /* decode IEEE half */
                int e = (g16[i] >> 10) & 31, m = g16[i] & 1023;
                double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
                got[i] = (g16[i] & 0x8000) ? -v : v;
            }
        }
        for (int r = 0; r < R; r++)
            for (int i = 0; i < N; i++) {
                double want = 0.5 * (r * N + (N - 1 - i)) + 1;
                double tol = types[t] == KILN_FLOAT16 ? 0.1 : 1e-6;
                if (fabs(got[r * N + i] - want) > tol)
                    fail_msg("%s: row %d elem %d: %g vs %g", kiln_dtype_name(types[t]), r, i, got[r * N + i],
                             want);
            }
        kiln_array_release(Y64);
        kiln_array_release(A);
        kiln_array_release(X);
        kiln_array_release(Y);
    }
    /* int32 input read through a float64 signature (safe cast) */
    int64_t shape[2] = {4, 3};
    int32_t xi[12];
    for (int i = 0; i < 12; i++) xi[i] = i;
    kiln_array *Xi = NULL, *Y = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 2, shape, xi, sizeof xi, &Xi));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, shape, &Y));
    kiln_free(nvrtc_check(g, NULL, KILN_ARGS(kiln_i32(2), kiln_arr(Xi), kiln_arr(Y)), NULL));
    TEST_OK(kiln_gufunc_call(g, KILN_ARGS(kiln_i32(2), kiln_arr(Xi), kiln_arr(Y)), NULL, NULL));
    double y[12];
    TEST_OK(kiln_array_to_host(Y, y, sizeof y));
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < 3; i++) assert_true(y[r * 3 + i] == 2.0 * (r * 3 + 2 - i));
    kiln_array_release(Xi);
    kiln_array_release(Y);
    kiln_gufunc_release(g);

    /* complex128 rows */
    kiln_gufunc *cz = NULL;
    TEST_OK(kiln_guvectorize(
        ctx, "cscale", "void(c16[:], c16[:])", "(n)->(n)", "z, w",
        "for (int i = 0; i < z.len; i++) w[i] = z[i] * kiln_complex128(0, 1) + conj(z[i]);", NULL, &cz));
    double zin[2 * 6] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    int64_t zs[2] = {3, 2};
    kiln_array *Z = NULL, *W = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_COMPLEX128, 2, zs, zin, sizeof zin, &Z));
    kiln_free(nvrtc_check(cz, NULL, KILN_ARGS(kiln_arr(Z)), (kiln_array *[]){NULL}));
    TEST_OK(kiln_gufunc_call(cz, KILN_ARGS(kiln_arr(Z)), &W, NULL));
    double w[12];
    TEST_OK(kiln_array_to_host(W, w, sizeof w));
    for (int i = 0; i < 6; i++) { /* (a+bi)*i + (a-bi) = (a-b) + (a-b)i */
        double a = zin[2 * i], b = zin[2 * i + 1];
        assert_true(w[2 * i] == a - b && w[2 * i + 1] == a - b);
    }
    kiln_array_release(Z);
    kiln_array_release(W);
    kiln_gufunc_release(cz);
}

static void test_bad_definitions(void **state) {
    kiln_context *ctx = *state;
    kiln_gufunc *g = NULL;
    TEST_FAILS_WITH(kiln_guvectorize(ctx, "f", "void(f4[:], f4[:])", "(n->(n)", "a, b", "", NULL, &g),
                    KILN_ERR_SIGNATURE, "at column 3");
    TEST_FAILS_WITH(kiln_guvectorize(ctx, "f", "void(f4[:], f4[:])", "(n)->(n)x", "a, b", "", NULL, &g),
                    KILN_ERR_SIGNATURE, "  (n)->(n)x\n          ^");
    TEST_FAILS_WITH(kiln_guvectorize(ctx, "f", "void(f4[:])", "(n)->(n)", "a, b", "", NULL, &g),
                    KILN_ERR_SIGNATURE, "has 1 argument but the layout signature \"(n)->(n)\" has 2");
    TEST_FAILS_WITH(kiln_guvectorize(ctx, "f", "void(f4[:], f4[:], f4[:])", "(m,n),(n,p)->(m,p)", "a, b, c",
                                     "", NULL, &g),
                    KILN_ERR_SIGNATURE,
                    "argument 0 is 1-d but the layout signature \"(m,n),(n,p)->(m,p)\" gives it 2");
    TEST_FAILS_WITH(kiln_guvectorize(ctx, "f", "void(f4[:], f4[:])", "(n)->(n)", "a", "", NULL, &g),
                    KILN_ERR_ARG_COUNT, "names 1 argument");
    TEST_FAILS_WITH(kiln_guvectorize(ctx, "no-dash", "void(f4[:], f4[:])", "(n)->(n)", "a, b", "", NULL, &g),
                    KILN_ERR_INVALID_ARGUMENT, "C identifier");
    assert_null(g);
}

/* A gufunc's module is built at kiln_guvectorize (its any-layout kernels)
 * unless this run sets KILN_GUFUNC_ANY_LIMIT=0 (ctest's test_gufunc_exact),
 * when each layout's kernel is built at its first call: where the body's
 * compile errors surface. */
static int builds_at_guvectorize(void) {
    const char *e = getenv("KILN_GUFUNC_ANY_LIMIT");
    return !(e && strcmp(e, "0") == 0);
}

/* Makes a gufunc (void(f4[:], f4[:]), (n)->(n)) whose body does not compile
 * and returns the status of the step where that surfaces. */
static kiln_status make_and_call_broken(kiln_context *ctx, const char *name, const char *body) {
    kiln_gufunc *g = NULL;
    kiln_status s = kiln_guvectorize(ctx, name, "void(f4[:], f4[:])", "(n)->(n)", "x, y", body, NULL, &g);
    if (builds_at_guvectorize()) {
        if (s == KILN_OK) fail_msg("%s: kiln_guvectorize did not report the body's compile error", name);
        assert_null(g);
        return s;
    }
    TEST_OK(s);
    int64_t shape[2] = {4, 3};
    kiln_array *X = NULL, *Y = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &X));
    s = kiln_gufunc_call(g, KILN_ARGS(kiln_arr(X)), &Y, NULL);
    assert_null(Y);
    kiln_array_release(X);
    kiln_gufunc_release(g);
    return s;
}

/* A compile error in the body is reported at the body's own line. */
static void test_body_compile_error_lines(void **state) {
    kiln_context *ctx = *state;
    kiln_status s = make_and_call_broken(ctx, "broken",
                                         "for (int i = 0; i < x.len; i++)\n"
                                         "    y[i] = x[i];\n"
                                         "y[0] = undefined_thing;\n");
    assert_int_equal(s, KILN_ERR_COMPILE);
    if (!test_contains(kiln_last_error(), "broken:3") && !test_contains(kiln_last_error(), "broken(3)"))
        fail_msg("compile error not at the body's line 3: %s", kiln_last_error());
    assert_true(test_contains(kiln_last_error(), "undefined_thing"));
    /* input views are read-only */
    assert_int_equal(make_and_call_broken(ctx, "writes_input", "x[0] = 1; y[0] = 2;"), KILN_ERR_COMPILE);
    /* the host compiler writes file:line, NVRTC file(line) */
    if (!test_contains(kiln_last_error(), "writes_input:1") &&
        !test_contains(kiln_last_error(), "writes_input(1)"))
        fail_msg("writing an input view not reported at the body's line 1: %s", kiln_last_error());
}

static void test_bad_calls(void **state) {
    kiln_context *ctx = *state;
    kiln_gufunc *h = NULL;
    TEST_OK(kiln_guvectorize(ctx, "herm", "void(f4[:], f4[:])", "(n)->(n)", "inp, out", herm_body, NULL, &h));
    int64_t shape[2] = {8, 4};
    kiln_array *X = NULL, *Y = NULL, *Z = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &X));
    TEST_FAILS_WITH(kiln_gufunc_call(h, KILN_ARGS(kiln_arr(X), kiln_arr(X), kiln_arr(X)), NULL, NULL),
                    KILN_ERR_ARG_COUNT, "takes 1 input");
    TEST_FAILS_WITH(kiln_gufunc_call(h, KILN_ARGS(kiln_arr(X)), NULL, NULL), KILN_ERR_INVALID_ARGUMENT,
                    "outs is NULL");
    TEST_FAILS_WITH(kiln_gufunc_call(h, KILN_ARGS(kiln_f32(1)), &Y, NULL), KILN_ERR_ARG_TYPE,
                    "is a scalar but the layout");
    int64_t s5[2] = {8, 5};
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, s5, &Z));
    TEST_FAILS_WITH(kiln_gufunc_call(h, KILN_ARGS(kiln_arr(X), kiln_arr(Z)), NULL, NULL), KILN_ERR_SHAPE,
                    "core dim n is 4 in input 0 (inp) but 5 in output 1 (out)");
    kiln_array_release(Z);
    int64_t s9[2] = {9, 4};
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, s9, &Z));
    TEST_FAILS_WITH(kiln_gufunc_call(h, KILN_ARGS(kiln_arr(X), kiln_arr(Z)), NULL, NULL), KILN_ERR_SHAPE,
                    "output 1 (out) has loop dims (9,) but the inputs broadcast to (8,)");
    kiln_array_release(Z);
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, shape, &Z));
    TEST_FAILS_WITH(kiln_gufunc_call(h, KILN_ARGS(kiln_arr(X), kiln_arr(Z)), NULL, NULL), KILN_ERR_DTYPE,
                    "(float32) -> (float64)");
    kiln_array_release(Z);
    assert_null(Y);
    kiln_array_release(X);
    kiln_gufunc_release(h);
}

/* On a GPU run: the CUDA context and a CPU context agree on random inputs
 * for every strategy (rows in registers, rows in shared memory, generic). */
static void test_cpu_gpu_agree(void **state) {
    kiln_context *gpu = *state;
    if (kiln_context_backend(gpu) != KILN_BACKEND_CUDA) skip();
    kiln_context *cpu = NULL;
    TEST_OK(kiln_open(&cpu, "cpu"));
    kiln_context *ctxs[2] = {gpu, cpu};
    kiln_gufunc *mm[2], *h[2];
    for (int c = 0; c < 2; c++) {
        TEST_OK(kiln_guvectorize(ctxs[c], "matmul", "void(f4[:,:], f4[:,:], f4[:,:])", "(m,n),(n,p)->(m,p)",
                                 "A, B, C", matmul_body, NULL, &mm[c]));
        TEST_OK(kiln_guvectorize(ctxs[c], "herm", "void(f4[:], f4[:])", "(n)->(n)", "inp, out", herm_body,
                                 NULL, &h[c]));
    }
    test_rng rng = test_rng_for(__func__);
    static const int dims[][3] = {{2, 2, 2}, {3, 3, 3}, {4, 8, 4}, {70, 3, 70}};
    for (size_t d = 0; d < sizeof dims / sizeof *dims; d++) {
        int m = dims[d][0], n = dims[d][1], p = dims[d][2];
        int64_t batch = 1000;
        size_t na = (size_t)(batch * m * n), nb = (size_t)(batch * n * p), nc = (size_t)(batch * m * p);
        float *a = malloc(na * 4), *b = malloc(nb * 4), *r[2] = {malloc(nc * 4), malloc(nc * 4)};
        test_fill_f32(&rng, a, na, -1, 1);
        test_fill_f32(&rng, b, nb, -1, 1);
        for (int c = 0; c < 2; c++) {
            int64_t sa[3] = {batch, m, n}, sb[3] = {batch, n, p};
            kiln_array *A = NULL, *B = NULL, *C = NULL;
            TEST_OK(kiln_array_from_host(ctxs[c], KILN_FLOAT32, 3, sa, a, na * 4, &A));
            TEST_OK(kiln_array_from_host(ctxs[c], KILN_FLOAT32, 3, sb, b, nb * 4, &B));
            TEST_OK(kiln_gufunc_call(mm[c], KILN_ARGS(kiln_arr(A), kiln_arr(B)), &C, NULL));
            TEST_OK(kiln_array_to_host(C, r[c], nc * 4));
            kiln_array_release(A);
            kiln_array_release(B);
            kiln_array_release(C);
        }
        for (size_t i = 0; i < nc; i++)
            if (fabsf(r[0][i] - r[1][i]) > 1e-4f * (1 + fabsf(r[1][i])))
                fail_msg("matmul %dx%dx%d: element %zu: gpu %g cpu %g", m, n, p, i, r[0][i], r[1][i]);
        free(a);
        free(b);
        free(r[0]);
        free(r[1]);
    }
    for (int n = 1; n <= 12; n++) {
        int64_t rows = 100003, shape[2] = {rows, n};
        size_t ne = (size_t)(rows * n);
        float *x = malloc(ne * 4), *r[2] = {malloc(ne * 4), malloc(ne * 4)};
        test_fill_f32(&rng, x, ne, -2, 2);
        for (int c = 0; c < 2; c++) {
            kiln_array *X = NULL;
            TEST_OK(kiln_array_from_host(ctxs[c], KILN_FLOAT32, 2, shape, x, ne * 4, &X));
            TEST_OK(kiln_gufunc_call(h[c], KILN_ARGS(kiln_arr(X), kiln_arr(X)), NULL, NULL));
            TEST_OK(kiln_array_to_host(X, r[c], ne * 4));
            kiln_array_release(X);
        }
        for (size_t i = 0; i < ne; i++)
            if (fabsf(r[0][i] - r[1][i]) > 1e-4f * (1 + fabsf(r[1][i])))
                fail_msg("hermite n=%d: element %zu: gpu %g cpu %g", n, i, r[0][i], r[1][i]);
        free(x);
        free(r[0]);
        free(r[1]);
    }
    for (int c = 0; c < 2; c++) {
        kiln_gufunc_release(mm[c]);
        kiln_gufunc_release(h[c]);
    }
    kiln_close(cpu);
}

/* The seed-002 example workloads (examples/gufunc_examples.c), small sizes. */
int kiln_example_gufunc_hermite(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_gufunc_batched_matmul(kiln_context *ctx, const kiln_example_opts *opts,
                                       kiln_example_result *res);

static void test_examples(void **state) {
    kiln_context *ctx = *state;
    kiln_example_opts opts = {.size = 50000, .repeat = 3};
    kiln_example_result res;
    TEST_OK(kiln_example_gufunc_hermite(ctx, &opts, &res));
    if (!res.passed) fail_msg("hermite: %s", res.check);
    opts.size = 20000;
    TEST_OK(kiln_example_gufunc_batched_matmul(ctx, &opts, &res));
    if (!res.passed) fail_msg("batched_matmul: %s", res.check);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hermite_in_place),
        cmocka_unit_test(test_output_only_dim),
        cmocka_unit_test(test_matmul_broadcast),
        cmocka_unit_test(test_fixed_dims),
        cmocka_unit_test(test_several_outputs_strided),
        cmocka_unit_test(test_every_float_dtype),
        cmocka_unit_test(test_bad_definitions),
        cmocka_unit_test(test_body_compile_error_lines),
        cmocka_unit_test(test_bad_calls),
        cmocka_unit_test(test_cpu_gpu_agree),
        cmocka_unit_test(test_examples),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
