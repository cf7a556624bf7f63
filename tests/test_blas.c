/* test_blas.c: kiln_matmul, kiln_gemm and the level 1-2 calls against long
 * double references on random inputs, on the backend under test
 * (KILN_TEST_TARGET): every dtype, transposed / sliced / reversed views,
 * broadcast batches, 1-d operands, alpha/beta, empty dims, kiln's small
 * kernel beside the library, and bad input. On CUDA the results are also
 * compared with the CPU backend's. Levels 1-2 and host arrays are in
 * test_blas_level12.c; the missing-library case is
 * test_blas_missing.c (a library is loaded once per process). */
#define KILN_EXPERIMENTAL /* kiln_ufunc_source, kiln_gufunc_source (include/kiln.h) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas/blas_internal.h"
#include "blas_ref.h"

static int on_cuda(kiln_context *ctx) { return kiln_context_backend(ctx) == KILN_BACKEND_CUDA; }

static const hval ONE = {1, 0}, ZERO = {0, 0};

static void matmul_case(kiln_context *ctx, test_rng *rng, kiln_dtype t, int nda, const int64_t *sa, int ndb,
                        const int64_t *sb, int flags) {
    kiln_array *a = bt_random(ctx, rng, t, nda, sa), *b = bt_random(ctx, rng, t, ndb, sb), *c = NULL;
    TEST_OK(kiln_matmul_ex(NULL, flags, a, b, &c));
    assert_int_equal(kiln_array_dtype(c), t);
    bt_check_product(kiln_dtype_name(t), a, b, c, NULL, ONE, ZERO);
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(c);
}

static void test_matmul_dtypes(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    /* bfloat16 on both (cuBLAS tensor cores; on the CPU through float32), float16 on CUDA only */
    kiln_dtype types[] = {KILN_FLOAT32,    KILN_FLOAT64,  KILN_COMPLEX64,
                          KILN_COMPLEX128, KILN_BFLOAT16, KILN_FLOAT16};
    int ntypes = on_cuda(ctx) ? 6 : 5;
    static const int64_t dims[][3] = {{37, 19, 23}, {1, 1, 1}, {64, 130, 33}, {5, 300, 2}};
    for (int i = 0; i < ntypes; i++)
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
            int64_t sa[2] = {dims[d][0], dims[d][1]}, sb[2] = {dims[d][1], dims[d][2]};
            matmul_case(ctx, &rng, types[i], 2, sa, 2, sb, 0);
        }
}

/* Transposed, sliced and sub-matrix views of A, B and C, each a layout the
 * library takes as it is (flags / leading dims) or one it must copy. */
static void test_matmul_views(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    kiln_dtype types[] = {KILN_FLOAT32, KILN_COMPLEX128};
    for (int ti = 0; ti < 2; ti++) {
        kiln_dtype t = types[ti];
        int64_t big[2] = {50, 60};
        kiln_array *base_a = bt_random(ctx, &rng, t, 2, big), *base_b = bt_random(ctx, &rng, t, 2, big);
        kiln_array *at = NULL, *bs = NULL, *bs2 = NULL, *tmp = NULL, *brev = NULL, *asub = NULL;
        /* a: the transpose of a 30 x 20 block: a 20 x 30 view with unit row stride */
        TEST_OK(kiln_array_slice(base_a, 0, 5, 35, 1, &tmp));
        TEST_OK(kiln_array_slice(tmp, 1, 3, 23, 1, &asub));
        kiln_array_release(tmp);
        TEST_OK(kiln_array_transpose(asub, NULL, &at));
        /* b: a 30 x 17 sub-matrix (ld 60) */
        TEST_OK(kiln_array_slice(base_b, 0, 10, 40, 1, &tmp));
        TEST_OK(kiln_array_slice(tmp, 1, 7, 24, 1, &bs));
        kiln_array_release(tmp);
        /* b with every other column (no unit stride: copied) */
        TEST_OK(kiln_array_slice(base_b, 0, 0, 30, 1, &tmp));
        TEST_OK(kiln_array_slice(tmp, 1, 0, 34, 2, &bs2));
        kiln_array_release(tmp);
        /* b reversed along its rows (negative stride: copied) */
        TEST_OK(kiln_array_slice(base_b, 0, 29, -51, -1, &tmp));
        TEST_OK(kiln_array_slice(tmp, 1, 0, 17, 1, &brev));
        kiln_array_release(tmp);
        kiln_array *bviews[3] = {bs, bs2, brev};
        for (int v = 0; v < 3; v++) {
            kiln_array *c = NULL;
            /* only the layouts without a unit stride are copied, and the profile says so */
            TEST_OK(kiln_profiler_start(ctx));
            TEST_OK(kiln_profiler_reset(ctx));
            TEST_OK(kiln_matmul(at, bviews[v], &c));
            char *text = NULL;
            TEST_OK(kiln_profiler_summary(ctx, &text));
            TEST_OK(kiln_profiler_stop(ctx));
            if (test_contains(text, "blas layout copy") != (v > 0))
                fail_msg("view %d: expected %s copy in the profile:\n%s", v, v ? "a" : "no", text);
            kiln_free(text);
            bt_check_product("view product", at, bviews[v], c, NULL, ONE, ZERO);
            kiln_array_release(c);
            /* A plain and transposed output, and a sub-matrix output */
            int64_t cs[2] = {17, 20}, cb[2] = {40, 40};
            kiln_array *ct_base = NULL, *ct = NULL, *cbig = NULL, *csub = NULL;
            TEST_OK(kiln_array_zeros(ctx, t, 2, cs, &ct_base));
            TEST_OK(kiln_array_transpose(ct_base, NULL, &ct));
            TEST_OK(kiln_profiler_start(ctx));
            TEST_OK(kiln_profiler_reset(ctx));
            TEST_OK(kiln_matmul(at, bviews[v], &ct)); /* C^T's columns are contiguous: C = A B directly */
            TEST_OK(kiln_profiler_summary(ctx, &text));
            TEST_OK(kiln_profiler_stop(ctx));
            if (v == 0 && test_contains(text, "blas layout copy"))
                fail_msg("a transposed output was copied:\n%s", text);
            kiln_free(text);
            bt_check_product("transposed output", at, bviews[v], ct, NULL, ONE, ZERO);
            TEST_OK(kiln_array_zeros(ctx, t, 2, cb, &cbig));
            TEST_OK(kiln_array_slice(cbig, 0, 3, 23, 1, &tmp));
            TEST_OK(kiln_array_slice(tmp, 1, 5, 39, 2, &csub)); /* stride 2: computed aside, assigned */
            kiln_array_release(tmp);
            TEST_OK(kiln_matmul(at, bviews[v], &csub));
            bt_check_product("strided output", at, bviews[v], csub, NULL, ONE, ZERO);
            kiln_array_release(ct_base);
            kiln_array_release(ct);
            kiln_array_release(cbig);
            kiln_array_release(csub);
        }
        kiln_array_release(base_a);
        kiln_array_release(base_b);
        kiln_array_release(asub);
        kiln_array_release(at);
        kiln_array_release(bs);
        kiln_array_release(bs2);
        kiln_array_release(brev);
    }
}

static void test_matmul_batches(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    int64_t a1[4] = {3, 1, 5, 4}, b1[3] = {2, 4, 6};
    matmul_case(ctx, &rng, KILN_FLOAT64, 4, a1, 3, b1, 0);
    int64_t a2[2] = {5, 9}, b2[3] = {7, 9, 3};
    matmul_case(ctx, &rng, KILN_FLOAT32, 2, a2, 3, b2, KILN_BLAS_FORCE_LIBRARY);
    int64_t a3[3] = {6, 12, 10}, b3[3] = {6, 10, 11};
    matmul_case(ctx, &rng, KILN_COMPLEX64, 3, a3, 3, b3, 0);
    /* batches whose strides do not merge into one: the first 4 of 6 along
     * dim 1 (stride 6 x 64 elements outside, 64 inside), with 3 runs (a loop
     * of strided-batched calls) and 10 runs (one call over arrays of matrix
     * addresses); and every other of 6 along dim 1, which does merge */
    static const int64_t runs[3] = {3, 10, 5};
    for (int r = 0; r < 3; r++) {
        int64_t big[4] = {runs[r], 6, 8, 8};
        kiln_array *base = bt_random(ctx, &rng, KILN_FLOAT32, 4, big), *v = NULL, *c = NULL;
        TEST_OK(kiln_array_slice(base, 1, 0, r == 2 ? 6 : 4, r == 2 ? 2 : 1, &v));
        TEST_OK(kiln_profiler_start(ctx));
        TEST_OK(kiln_profiler_reset(ctx));
        TEST_OK(kiln_matmul_ex(NULL, KILN_BLAS_FORCE_LIBRARY, v, v, &c));
        char *text = NULL;
        TEST_OK(kiln_profiler_summary(ctx, &text));
        TEST_OK(kiln_profiler_stop(ctx));
        const char *expect = r == 2         ? (on_cuda(ctx) ? "strided-batched]" : "batch loop]")
                             : runs[r] >= 8 ? "batched, pointer arrays]"
                                            : ", looped]";
        if (!test_contains(text, expect) || test_contains(text, "layout copy"))
            fail_msg("batch of %lld runs: expected \"%s\" and no copy in:\n%s", (long long)runs[r], expect,
                     text);
        kiln_free(text);
        bt_check_product("non-uniform batch", v, v, c, NULL, ONE, ZERO);
        kiln_array_release(c);
        c = NULL;
        TEST_OK(kiln_matmul_ex(NULL, KILN_BLAS_FORCE_KILN, v, v, &c));
        bt_check_product("non-uniform batch, kiln kernel", v, v, c, NULL, ONE, ZERO);
        kiln_array_release(c);
        kiln_array_release(v);
        kiln_array_release(base);
    }
}

static void test_matmul_1d(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    int64_t k[1] = {13}, kn[2] = {13, 7}, mk[2] = {9, 13}, bk[3] = {2, 3, 13};
    kiln_dtype t = KILN_FLOAT64;
    struct {
        int nda, ndb;
        const int64_t *sa, *sb;
        int rank;
    } cases[] = {{1, 2, k, kn, 1}, {2, 1, mk, k, 1}, {1, 1, k, k, 0}, {3, 1, bk, k, 2}, {1, 3, k, bk, -1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].rank < 0) { /* (13) @ (2, 3, 13): inner dims 13 vs 3 */
            kiln_array *a = bt_random(ctx, &rng, t, 1, k), *b = bt_random(ctx, &rng, t, 3, bk), *c = NULL;
            TEST_FAILS_WITH(kiln_matmul(a, b, &c), KILN_ERR_SHAPE, "(2, 3, 13)");
            kiln_array_release(a);
            kiln_array_release(b);
            continue;
        }
        kiln_array *a = bt_random(ctx, &rng, t, cases[i].nda, cases[i].sa);
        kiln_array *b = bt_random(ctx, &rng, t, cases[i].ndb, cases[i].sb), *c = NULL;
        TEST_OK(kiln_matmul(a, b, &c));
        assert_int_equal(kiln_array_ndim(c), cases[i].rank);
        bt_check_product("1-d operand", a, b, c, NULL, ONE, ZERO);
        kiln_array_release(a);
        kiln_array_release(b);
        kiln_array_release(c);
    }
    /* a 1-d operand with a stride */
    int64_t long_shape[1] = {39};
    kiln_array *x = bt_random(ctx, &rng, t, 1, long_shape), *xs = NULL, *b = bt_random(ctx, &rng, t, 2, kn),
               *c = NULL;
    TEST_OK(kiln_array_slice(x, 0, 0, 39, 3, &xs));
    TEST_OK(kiln_matmul(xs, b, &c));
    bt_check_product("strided 1-d", xs, b, c, NULL, ONE, ZERO);
    kiln_array_release(x);
    kiln_array_release(xs);
    kiln_array_release(b);
    kiln_array_release(c);
}

static void test_matmul_mixed_dtypes(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    struct {
        kiln_dtype a, b, expect;
    } cases[] = {{KILN_FLOAT32, KILN_FLOAT64, KILN_FLOAT64},
                 {KILN_INT32, KILN_FLOAT32, KILN_FLOAT64},
                 {KILN_FLOAT32, KILN_COMPLEX64, KILN_COMPLEX64},
                 {KILN_FLOAT64, KILN_COMPLEX64, KILN_COMPLEX128},
                 /* bfloat16 and float16 hold different values: float32, as ml_dtypes and JAX */
                 {KILN_BFLOAT16, KILN_FLOAT16, KILN_FLOAT32},
                 {KILN_BFLOAT16, KILN_BFLOAT16, KILN_BFLOAT16},
                 {KILN_BFLOAT16, KILN_FLOAT32, KILN_FLOAT32},
                 {KILN_INT8, KILN_BFLOAT16, KILN_BFLOAT16}};
    int64_t sa[2] = {6, 5}, sb[2] = {5, 4};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiln_array *a = bt_random(ctx, &rng, cases[i].a, 2, sa), *b = bt_random(ctx, &rng, cases[i].b, 2, sb);
        kiln_array *c = NULL;
        TEST_OK(kiln_matmul(a, b, &c));
        assert_int_equal(kiln_array_dtype(c), cases[i].expect);
        bt_check_product("mixed dtypes", a, b, c, NULL, ONE, ZERO);
        kiln_array_release(a);
        kiln_array_release(b);
        kiln_array_release(c);
    }
}

static void test_gemm_alpha_beta(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    kiln_dtype types[] = {KILN_FLOAT32,    KILN_FLOAT64,  KILN_COMPLEX64,
                          KILN_COMPLEX128, KILN_BFLOAT16, KILN_FLOAT16};
    int ntypes = on_cuda(ctx) ? 6 : 5;
    for (int ti = 0; ti < ntypes; ti++)
        for (int ops = 0; ops < 4; ops++) {
            kiln_dtype t = types[ti];
            kiln_blas_op oa = ops & 1 ? KILN_BLAS_T : KILN_BLAS_N, ob = ops & 2 ? KILN_BLAS_T : KILN_BLAS_N;
            int64_t m = 21, n = 18, k = 25, batch = ops == 3 ? 3 : 1;
            int64_t sa[3] = {batch, oa ? k : m, oa ? m : k}, sb[3] = {batch, ob ? n : k, ob ? k : n},
                    sc[3] = {batch, m, n};
            kiln_array *a = bt_random(ctx, &rng, t, 3, sa), *b = bt_random(ctx, &rng, t, 3, sb);
            kiln_array *c = bt_random(ctx, &rng, t, 3, sc);
            void *c0 = test_read_array(c);
            int cx = t == KILN_COMPLEX64 || t == KILN_COMPLEX128;
            kiln_blas_scalar alpha = {0.75, cx ? -0.5 : 0}, beta = {-1.25, cx ? 0.25 : 0};
            TEST_OK(kiln_gemm(NULL, 0, oa, ob, alpha, a, b, beta, c));
            int axes[3] = {0, 2, 1};
            kiln_array *opa = NULL, *opb = NULL;
            TEST_OK(kiln_array_transpose(a, oa ? axes : NULL, &opa));
            TEST_OK(kiln_array_transpose(b, ob ? axes : NULL, &opb));
            if (!oa) { /* NULL axes reverses all: undo for N */
                kiln_array_release(opa);
                opa = kiln_array_retain(a);
            }
            if (!ob) {
                kiln_array_release(opb);
                opb = kiln_array_retain(b);
            }
            bt_check_product("gemm alpha/beta", opa, opb, c, c0, (hval){alpha.re, alpha.im},
                             (hval){beta.re, beta.im});
            free(c0);
            kiln_array_release(opa);
            kiln_array_release(opb);
            kiln_array_release(a);
            kiln_array_release(b);
            kiln_array_release(c);
        }
}

/* op(x) of a 2-d (r x c) array as a new array holding its values (the
 * transpose, conjugated for KILN_BLAS_C on complex dtypes). */
static kiln_array *host_op(kiln_context *ctx, kiln_array *x, kiln_blas_op op) {
    kiln_dtype t = kiln_array_dtype(x);
    const int64_t *sh = kiln_array_shape(x);
    int64_t r = sh[0], c = sh[1], out_shape[2] = {op ? c : r, op ? r : c};
    void *in = test_read_array(x), *out = malloc((size_t)(r * c) * kiln_dtype_size(t) + 16);
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) {
            hval v = bt_get(t, in, (size_t)(i * c + j));
            if (op == KILN_BLAS_C) v.im = -v.im;
            bt_set(t, out, (size_t)(op ? j * r + i : i * c + j), (double)v.re, (double)v.im);
        }
    kiln_array *y = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, 2, out_shape, out, (size_t)(r * c) * kiln_dtype_size(t), &y));
    free(in);
    free(out);
    return y;
}

/* KILN_BLAS_C: the conjugate transpose, for every pair of ops, into a
 * row-major c (the library conjugates a row-major operand without a copy)
 * and into a transposed c (then op C operands are conjugated copies, and
 * the profile says so); on a real dtype it is the transpose. */
static void test_gemm_conjugate(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    kiln_dtype types[] = {KILN_COMPLEX64, KILN_COMPLEX128, KILN_FLOAT64};
    for (int ti = 0; ti < 3; ti++)
        for (int ops = 0; ops < 9; ops++)
            for (int ct = 0; ct < 2; ct++) {
                kiln_dtype t = types[ti];
                kiln_blas_op oa = (kiln_blas_op)(ops % 3), ob = (kiln_blas_op)(ops / 3);
                int64_t m = 13, n = 11, k = 17;
                int64_t sa[2] = {oa ? k : m, oa ? m : k}, sb[2] = {ob ? n : k, ob ? k : n}, sc[2] = {m, n},
                        sct[2] = {n, m};
                kiln_array *a = bt_random(ctx, &rng, t, 2, sa), *b = bt_random(ctx, &rng, t, 2, sb);
                kiln_array *cbase = bt_random(ctx, &rng, t, 2, ct ? sct : sc), *c = NULL;
                if (ct)
                    TEST_OK(kiln_array_transpose(cbase, NULL, &c));
                else
                    c = kiln_array_retain(cbase);
                void *c0 = test_read_array(c);
                int cx = t != KILN_FLOAT64;
                kiln_blas_scalar alpha = {0.5, cx ? 0.75 : 0}, beta = {-0.25, cx ? -1.5 : 0};
                TEST_OK(kiln_profiler_start(ctx));
                TEST_OK(kiln_profiler_reset(ctx));
                TEST_OK(kiln_gemm(NULL, KILN_BLAS_FORCE_LIBRARY, oa, ob, alpha, a, b, beta, c));
                char *text = NULL;
                TEST_OK(kiln_profiler_summary(ctx, &text));
                TEST_OK(kiln_profiler_stop(ctx));
                /* row-major c: C^T = op(b)^T op(a)^T, where a row-major op-C operand is
                 * stored transposed: no copy; a transposed c needs one per op-C operand */
                int want_copy = cx && ct && (oa == KILN_BLAS_C || ob == KILN_BLAS_C);
                if (test_contains(text, "blas conjugate copy") != want_copy)
                    fail_msg("%s ops %d/%d, c %s: expected %s conjugate copy:\n%s", kiln_dtype_name(t), oa,
                             ob, ct ? "transposed" : "row-major", want_copy ? "a" : "no", text);
                if (test_contains(text, "blas layout copy")) fail_msg("an unexpected layout copy:\n%s", text);
                kiln_free(text);
                kiln_array *opa = host_op(ctx, a, oa), *opb = host_op(ctx, b, ob);
                bt_check_product("gemm conjugate transpose", opa, opb, c, c0, (hval){alpha.re, alpha.im},
                                 (hval){beta.re, beta.im});
                free(c0);
                kiln_array *arrs[] = {a, b, cbase, c, opa, opb};
                for (size_t i = 0; i < 6; i++) kiln_array_release(arrs[i]);
            }
    /* a row-shaped op C operand reads as stored transposed whatever c's layout: no copy */
    {
        int64_t sa1[2] = {9, 1}, sb1[2] = {9, 7}, sc1[2] = {7, 1};
        kiln_array *a1 = bt_random(ctx, &rng, KILN_COMPLEX64, 2, sa1),
                   *b1 = bt_random(ctx, &rng, KILN_COMPLEX64, 2, sb1), *cb1 = NULL, *c1 = NULL;
        TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 2, sc1, &cb1));
        TEST_OK(kiln_array_transpose(cb1, NULL, &c1)); /* (1, 7) */
        TEST_OK(kiln_profiler_start(ctx));
        TEST_OK(kiln_profiler_reset(ctx));
        TEST_OK(kiln_gemm(NULL, KILN_BLAS_FORCE_LIBRARY, KILN_BLAS_C, KILN_BLAS_N, KILN_BLAS_SCALAR(1, 0), a1,
                          b1, KILN_BLAS_SCALAR(0, 0), c1));
        char *text = NULL;
        TEST_OK(kiln_profiler_summary(ctx, &text));
        TEST_OK(kiln_profiler_stop(ctx));
        if (test_contains(text, "copy")) fail_msg("a conjugated row was copied:\n%s", text);
        kiln_free(text);
        kiln_array *opa = host_op(ctx, a1, KILN_BLAS_C);
        bt_check_product("conjugated row", opa, b1, c1, NULL, ONE, ZERO);
        kiln_array *arrs[] = {a1, b1, cb1, c1, opa};
        for (size_t i = 0; i < 5; i++) kiln_array_release(arrs[i]);
    }
    /* a conjugated operand in host memory / a batch */
    int64_t sa[3] = {4, 9, 6}, sb[3] = {4, 9, 5}, sc[3] = {4, 6, 5};
    kiln_array *a = bt_random(ctx, &rng, KILN_COMPLEX128, 3, sa),
               *b = bt_random(ctx, &rng, KILN_COMPLEX128, 3, sb);
    kiln_array *c = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX128, 3, sc, &c));
    TEST_OK(kiln_gemm(NULL, 0, KILN_BLAS_C, KILN_BLAS_N, KILN_BLAS_SCALAR(1, 0), a, b, KILN_BLAS_SCALAR(0, 0),
                      c));
    void *ha = test_read_array(a), *hb = test_read_array(b), *hc = test_read_array(c);
    for (int64_t q = 0; q < 4; q++)
        for (int64_t i = 0; i < 6; i++)
            for (int64_t j = 0; j < 5; j++) {
                hval ref = {0, 0};
                long double size = 0;
                for (int64_t l = 0; l < 9; l++) {
                    hval x = bt_get(KILN_COMPLEX128, ha, (size_t)(q * 54 + l * 6 + i)),
                         y = bt_get(KILN_COMPLEX128, hb, (size_t)(q * 45 + l * 5 + j));
                    ref.re += x.re * y.re + x.im * y.im; /* conj(x) y */
                    ref.im += x.re * y.im - x.im * y.re;
                    size += (fabsl(x.re) + fabsl(x.im)) * (fabsl(y.re) + fabsl(y.im));
                }
                bt_expect_close("batched conjugate", KILN_COMPLEX128, 9,
                                bt_get(KILN_COMPLEX128, hc, (size_t)(q * 30 + i * 5 + j)), ref, size);
            }
    free(ha);
    free(hb);
    free(hc);
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(c);
}

static void test_empty_dims(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    static const int64_t dims[][4] = {{0, 4, 5, 2}, {3, 0, 5, 2}, {3, 4, 0, 2}, {3, 4, 5, 0}, {4, 0, 4, 100}};
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
        int64_t sa[3] = {dims[d][3], dims[d][0], dims[d][1]}, sb[3] = {dims[d][3], dims[d][1], dims[d][2]};
        kiln_array *a = bt_random(ctx, &rng, KILN_FLOAT32, 3, sa),
                   *b = bt_random(ctx, &rng, KILN_FLOAT32, 3, sb);
        kiln_array *c = NULL;
        TEST_OK(kiln_matmul(a, b, &c));
        assert_int_equal(kiln_array_shape(c)[0], dims[d][3]);
        assert_int_equal(kiln_array_shape(c)[1], dims[d][0]);
        assert_int_equal(kiln_array_shape(c)[2], dims[d][2]);
        bt_check_product("empty dims", a, b, c, NULL, ONE, ZERO); /* k = 0: all zeros */
        kiln_array_release(a);
        kiln_array_release(b);
        kiln_array_release(c);
    }
}

/* kiln's own kernel for batches of tiny matrices, the library beside it,
 * both recorded in the profile with which one ran; and a copied layout
 * shows there too. */
static void test_small_path_and_profile(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    TEST_OK(kiln_profiler_start(ctx));
    TEST_OK(kiln_profiler_reset(ctx));
    int64_t s4[3] = {1000, 4, 4};
    kiln_array *a = bt_random(ctx, &rng, KILN_FLOAT32, 3, s4), *b = bt_random(ctx, &rng, KILN_FLOAT32, 3, s4);
    kiln_array *c1 = NULL, *c2 = NULL, *bt = NULL, *c3 = NULL;
    TEST_OK(kiln_matmul(a, b, &c1));
    TEST_OK(kiln_matmul_ex(NULL, KILN_BLAS_FORCE_LIBRARY, a, b, &c2));
    bt_check_product("kiln small kernel", a, b, c1, NULL, ONE, ZERO);
    bt_check_product("library batch", a, b, c2, NULL, ONE, ZERO);
    int64_t s2[2] = {40, 40};
    kiln_array *big = bt_random(ctx, &rng, KILN_FLOAT64, 2, s2);
    TEST_OK(kiln_array_slice(big, 1, 0, 40, 2, &bt)); /* 40 x 20, column stride 2: copied */
    TEST_OK(kiln_matmul(big, bt, &c3));
    bt_check_product("copied layout", big, bt, c3, NULL, ONE, ZERO);
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    if (!test_contains(text, on_cuda(ctx) ? "blas matmul float32 [kiln small-matrix kernel]"
                                          : "blas matmul float32 [kiln gufunc]") ||
        !test_contains(text, on_cuda(ctx) ? "blas gemm float32 [cuBLAS strided-batched]"
                                          : "blas gemm float32 [OpenBLAS batch loop]") ||
        !test_contains(text, "blas layout copy float64 [kiln]") || !test_contains(text, "GFLOP/s)"))
        fail_msg("profile lacks the BLAS records:\n%s", text);
    kiln_free(text);
    TEST_OK(kiln_profiler_stop(ctx));
    /* the kernels kiln generates for these calls compile for sm_90 too */
    char *src = NULL, *log = NULL;
    kiln_status s = KILN_OK;
    for (int which = 0; which < 2; which++) {
        kiln_dtype t = which ? KILN_FLOAT64 : KILN_FLOAT32;
        kiln_gufunc *f = NULL;
        TEST_OK(kiln_blas_small_gemm(ctx, t, &f));
        kiln_array *x = bt_random(ctx, &rng, t, 3, s4), *z = NULL;
        TEST_OK(kiln_array_empty(ctx, t, 3, s4, &z));
        const kiln_value args[3] = {kiln_arr(x), kiln_arr(x), kiln_arr(z)};
        TEST_OK(kiln_gufunc_source(f, "cuda", NULL, args, 3, NULL, &src, NULL));
        s = kiln_compile_only("cuda", "sm_90", src, "small_gemm.cu", NULL, &log);
        if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING) fail_msg("NVRTC: %s\n%s", kiln_last_error(), src);
        kiln_free(src);
        kiln_free(log);
        kiln_array_release(x);
        kiln_array_release(z);
    }
    /* the conversions (to float64, to bfloat16 from int8, float32 -> bfloat16
     * rounding) and the conjugate copy */
    kiln_ufunc *fns[4] = {NULL, NULL, NULL, NULL};
    TEST_OK(kiln_blas_converter(ctx, KILN_FLOAT64, &fns[0]));
    TEST_OK(kiln_blas_converter(ctx, KILN_BFLOAT16, &fns[1]));
    TEST_OK(kiln_blas_bf16_rounder(ctx, &fns[2]));
    kiln_array *ins[4] = {a, NULL, a, NULL}, *outs4[4] = {NULL, NULL, NULL, NULL};
    ins[1] = bt_random(ctx, &rng, KILN_INT8, 3, s4);
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT64, 3, s4, &outs4[0]));
    TEST_OK(kiln_array_empty(ctx, KILN_BFLOAT16, 3, s4, &outs4[1]));
    TEST_OK(kiln_array_empty(ctx, KILN_BFLOAT16, 3, s4, &outs4[2]));
    ins[3] = bt_random(ctx, &rng, KILN_COMPLEX64, 3, s4);
    kiln_array *conj = NULL;
    TEST_OK(kiln_blas_conjugate(ins[3], NULL, "test", &conj));
    fns[3] = NULL;
    for (int i = 0; i < 3; i++) {
        const kiln_value carg = kiln_arr(ins[i]);
        kiln_array *const outs[1] = {outs4[i]};
        TEST_OK(kiln_ufunc_source(fns[i], "cuda", &carg, 1, outs, &src));
        s = kiln_compile_only("cuda", "sm_90", src, "convert.cu", NULL, &log);
        if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING) fail_msg("NVRTC: %s\n%s", kiln_last_error(), src);
        kiln_free(src);
        kiln_free(log);
    }
    {
        kiln_blas_state *st = NULL;
        TEST_OK(kiln_blas_state_get(ctx, &st));
        const kiln_value carg = kiln_arr(ins[3]);
        kiln_array *const outs[1] = {conj};
        TEST_OK(kiln_ufunc_source(st->conjugate, "cuda", &carg, 1, outs, &src));
        s = kiln_compile_only("cuda", "sm_90", src, "conj.cu", NULL, &log);
        if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING) fail_msg("NVRTC: %s\n%s", kiln_last_error(), src);
        kiln_free(src);
        kiln_free(log);
        /* and it conjugates */
        void *hx = test_read_array(ins[3]), *hy = test_read_array(conj);
        for (size_t i = 0; i < 64; i++) {
            hval x = bt_get(KILN_COMPLEX64, hx, i), y = bt_get(KILN_COMPLEX64, hy, i);
            if (x.re != y.re || x.im != -y.im) fail_msg("conjugate copy: entry %zu", i);
        }
        free(hx);
        free(hy);
    }
    kiln_array_release(conj);
    kiln_array_release(ins[1]);
    kiln_array_release(ins[3]);
    for (int i = 0; i < 3; i++) kiln_array_release(outs4[i]);
    kiln_array *arrs[] = {a, b, c1, c2, big, bt, c3};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
}

/* A kiln stream of its own (a cuBLAS handle of its own on CUDA), and TF32
 * when allowed: within TF32's rounding or truncation of the inputs (2^-10 each), and on
 * the CPU, where the flag changes nothing, within float32's. */
/* The reference of c = a @ b of one dtype over one batch dim (a, b: host
 * copies; sa, sb: their shapes). */
static bt_gemm_ref batched_ref(int64_t batch, int64_t m, int64_t n, int64_t k, kiln_dtype t, const void *a,
                               const void *b, const int64_t *sa, const int64_t *sb) {
    bt_gemm_ref p = {.nb = 1,
                     .batch = {batch},
                     .m = m,
                     .n = n,
                     .k = k,
                     .ta = t,
                     .tb = t,
                     .tc = t,
                     .a = a,
                     .b = b,
                     .nba = 1,
                     .nbb = 1,
                     .batch_a = sa,
                     .batch_b = sb,
                     .alpha = ONE,
                     .beta = ZERO};
    return p;
}

static void test_stream_and_tf32(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    kiln_stream *stream = NULL;
    TEST_OK(kiln_stream_create(ctx, &stream));
    int64_t sa[3] = {3, 70, 90}, sb[3] = {3, 90, 50};
    kiln_array *a = bt_random(ctx, &rng, KILN_FLOAT32, 3, sa), *b = bt_random(ctx, &rng, KILN_FLOAT32, 3, sb);
    kiln_array *c1 = NULL, *c2 = NULL;
    TEST_OK(kiln_matmul_ex(stream, KILN_BLAS_DEFAULT, a, b, &c1));
    TEST_OK(kiln_matmul_ex(stream, KILN_BLAS_ALLOW_TF32, a, b, &c2));
    TEST_OK(kiln_stream_synchronize(stream));
    bt_check_product("on a stream", a, b, c1, NULL, ONE, ZERO);
    void *ha = test_read_array(a), *hb = test_read_array(b), *hc = test_read_array(c2);
    bt_gemm_ref p = batched_ref(3, 70, 50, 90, KILN_FLOAT32, ha, hb, sa, sb);
    p.input_rel = ldexp(1, -9);
    bt_check_gemm("TF32 allowed", &p, hc);
    free(ha);
    free(hb);
    free(hc);
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(c1);
    kiln_array_release(c2);
    kiln_stream_release(stream);
}

/* ------------------------------------------------------------ bad input */

static void test_bad_input(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for(__func__);
    int64_t s34[2] = {3, 4}, s56[2] = {5, 6}, s45[2] = {4, 5}, s35[2] = {3, 5}, s33[2] = {3, 3};
    kiln_array *a = bt_random(ctx, &rng, KILN_FLOAT32, 2, s34),
               *b = bt_random(ctx, &rng, KILN_FLOAT32, 2, s56);
    kiln_array *b45 = bt_random(ctx, &rng, KILN_FLOAT32, 2, s45), *c = NULL;
    /* inner dims: both shapes in the message */
    TEST_FAILS_WITH(kiln_matmul(a, b, &c), KILN_ERR_SHAPE, "a (3, 4) @ b (5, 6)");
    assert_null(c);
    /* NumPy's promotion: float32 @ int64 is float64; integers alone have no
     * BLAS type */
    kiln_array *i64 = bt_random(ctx, &rng, KILN_INT64, 2, s45),
               *i32 = bt_random(ctx, &rng, KILN_INT32, 2, s45);
    kiln_array *i32a = bt_random(ctx, &rng, KILN_INT32, 2, s34);
    kiln_array *promoted = NULL;
    TEST_OK(kiln_matmul(a, i64, &promoted));
    assert_int_equal(kiln_array_dtype(promoted), KILN_FLOAT64);
    kiln_array_release(promoted);
    TEST_FAILS_WITH(kiln_matmul(i32a, i32, &c), KILN_ERR_DTYPE, "int32 @ int32");
    /* wrong output shape, wrong output dtype */
    kiln_array *wrong = NULL, *c64 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, s33, &wrong));
    TEST_FAILS_WITH(kiln_matmul(a, b45, &wrong), KILN_ERR_SHAPE, "output has shape (3, 3), expected (3, 5)");
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, s35, &c64));
    TEST_FAILS_WITH(kiln_matmul(a, b45, &c64), KILN_ERR_DTYPE, "expected float32");
    /* output aliasing an input: a 4 x 4 square in place */
    int64_t s44[2] = {4, 4};
    kiln_array *sq = bt_random(ctx, &rng, KILN_FLOAT32, 2, s44), *alias = sq;
    TEST_FAILS_WITH(kiln_matmul(sq, sq, &alias), KILN_ERR_INVALID_ARGUMENT, "overlaps input a");
    kiln_array *half = NULL;
    TEST_OK(kiln_array_slice(b45, 0, 0, 3, 1, &half)); /* 3 x 5 view inside b45 */
    TEST_FAILS_WITH(kiln_matmul(a, b45, &half), KILN_ERR_INVALID_ARGUMENT, "overlaps input b");
    /* an output whose rows all alias one another */
    float row_buf[5] = {0};
    int64_t zero_strides[2] = {0, 4};
    kiln_array *bcast = NULL;
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT32, 2, s35, zero_strides, row_buf, &bcast));
    TEST_FAILS_WITH(kiln_matmul(a, b45, &bcast), KILN_ERR_INVALID_ARGUMENT, "stride 0 along dim 0");
    float one_elem[1] = {0};
    int64_t n3[1] = {3}, zero_stride[1] = {0};
    kiln_array *y0 = NULL, *x3 = bt_random(ctx, &rng, KILN_FLOAT32, 1, n3);
    TEST_OK(kiln_array_wrap_host(ctx, KILN_FLOAT32, 1, n3, zero_stride, one_elem, &y0));
    TEST_FAILS_WITH(kiln_axpy(NULL, KILN_BLAS_SCALAR(1, 0), x3, y0), KILN_ERR_INVALID_ARGUMENT, "stride 0");
    kiln_array_release(y0);
    kiln_array_release(x3);
    kiln_array_release(bcast);
    /* batch dims that do not broadcast */
    int64_t s234[3] = {2, 3, 4}, s345[3] = {3, 4, 5};
    kiln_array *ba = bt_random(ctx, &rng, KILN_FLOAT32, 3, s234),
               *bb = bt_random(ctx, &rng, KILN_FLOAT32, 3, s345);
    TEST_FAILS_WITH(kiln_matmul(ba, bb, &c), KILN_ERR_SHAPE, "2 vs 3");
    /* gemm: one dtype, c of the product's shape */
    kiln_array *c35 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, s35, &c35));
    TEST_FAILS_WITH(kiln_gemm(NULL, 0, KILN_BLAS_N, KILN_BLAS_N, KILN_BLAS_SCALAR(1, 0), a, b45,
                              KILN_BLAS_SCALAR(0, 0), c64),
                    KILN_ERR_DTYPE, "one dtype");
    TEST_FAILS_WITH(kiln_gemm(NULL, 0, KILN_BLAS_T, KILN_BLAS_N, KILN_BLAS_SCALAR(1, 0), a, b45,
                              KILN_BLAS_SCALAR(0, 0), c35),
                    KILN_ERR_SHAPE, "inner dims differ");
    /* level 1: lengths and dtypes */
    int64_t n5[1] = {5}, n6[1] = {6};
    kiln_array *x5 = bt_random(ctx, &rng, KILN_FLOAT32, 1, n5),
               *x6 = bt_random(ctx, &rng, KILN_FLOAT32, 1, n6);
    kiln_array *d5 = bt_random(ctx, &rng, KILN_FLOAT64, 1, n5);
    kiln_blas_scalar r;
    TEST_FAILS_WITH(kiln_dot(NULL, x5, x6, &r), KILN_ERR_SHAPE, "x has 5 elements, y 6");
    TEST_FAILS_WITH(kiln_axpy(NULL, KILN_BLAS_SCALAR(1, 0), x5, d5), KILN_ERR_DTYPE,
                    "x is float32, y is float64");
    TEST_FAILS_WITH(kiln_gemv(NULL, KILN_BLAS_N, KILN_BLAS_SCALAR(1, 0), a, x5, KILN_BLAS_SCALAR(0, 0), x6),
                    KILN_ERR_SHAPE, "x (5,) needs 4 elements");
    /* float16 on the CPU is refused with the reason */
    if (!on_cuda(ctx)) {
        kiln_array *h = bt_random(ctx, &rng, KILN_FLOAT16, 2, s44);
        TEST_FAILS_WITH(kiln_matmul(h, h, &c), KILN_ERR_UNSUPPORTED, "CUDA only");
        kiln_array_release(h);
    }
    kiln_array *arrs[] = {a, b, b45, i64, i32, i32a, wrong, c64, sq, half, ba, bb, c35, x5, x6, d5};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_release(arrs[i]);
}

/* cuBLAS's symbol table resolves wherever the library is installed (a
 * misspelt name would fail only on the GPU machine otherwise). */
kiln_status kiln_blas_cublas_load(void);
static void test_cublas_symbols(void **state) {
    (void)state;
    kiln_status s = kiln_blas_cublas_load();
    if (s == KILN_ERR_LIBRARY_MISSING && test_contains(kiln_last_error(), "not found")) skip();
    TEST_OK(s);
}

/* On CUDA: the same products on the CPU backend agree within the bound. */
static void test_cpu_vs_cuda(void **state) {
    kiln_context *gpu = *state;
    if (!on_cuda(gpu)) skip();
    kiln_context *cpu = NULL;
    TEST_OK(kiln_open(&cpu, "cpu"));
    test_rng rng = test_rng_for(__func__);
    kiln_dtype types[] = {KILN_FLOAT32, KILN_FLOAT64, KILN_COMPLEX64, KILN_COMPLEX128, KILN_BFLOAT16};
    for (int ti = 0; ti < 5; ti++) {
        kiln_dtype t = types[ti];
        int64_t sa[3] = {7, 33, 45}, sb[3] = {7, 45, 29}, sc[3] = {7, 33, 29};
        kiln_array *a = bt_random(gpu, &rng, t, 3, sa), *b = bt_random(gpu, &rng, t, 3, sb), *cg = NULL;
        void *ha = test_read_array(a), *hb = test_read_array(b);
        kiln_array *ac = NULL, *bc = NULL, *cc = NULL;
        TEST_OK(kiln_array_from_host(cpu, t, 3, sa, ha, kiln_array_nbytes(a), &ac));
        TEST_OK(kiln_array_from_host(cpu, t, 3, sb, hb, kiln_array_nbytes(b), &bc));
        TEST_OK(kiln_matmul(a, b, &cg));
        TEST_OK(kiln_matmul(ac, bc, &cc));
        void *g = test_read_array(cg), *h = test_read_array(cc);
        /* both within the bound of the exact product, so within twice it of each other */
        bt_gemm_ref p = batched_ref(7, 33, 29, 45, t, ha, hb, sa, sb);
        bt_check_gemm("cuda", &p, g);
        bt_check_gemm("cpu", &p, h);
        long double worst = 0;
        for (int64_t i = 0; i < sc[0] * sc[1] * sc[2]; i++) {
            hval x = bt_get(t, g, (size_t)i), y = bt_get(t, h, (size_t)i);
            long double e = fabsl(x.re - y.re) + fabsl(x.im - y.im);
            if (e > worst) worst = e;
        }
        if (worst > 2 * 49 * bt_eps(t) * 45 * 2)
            fail_msg("cpu vs cuda %s: %Lg apart", kiln_dtype_name(t), worst);
        free(ha);
        free(hb);
        free(g);
        free(h);
        kiln_array *arrs[] = {a, b, cg, ac, bc, cc};
        for (size_t i = 0; i < 6; i++) kiln_array_release(arrs[i]);
    }
    kiln_close(cpu);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_dtypes),       cmocka_unit_test(test_matmul_views),
        cmocka_unit_test(test_matmul_batches),      cmocka_unit_test(test_matmul_1d),
        cmocka_unit_test(test_matmul_mixed_dtypes), cmocka_unit_test(test_gemm_alpha_beta),
        cmocka_unit_test(test_empty_dims),          cmocka_unit_test(test_small_path_and_profile),
        cmocka_unit_test(test_gemm_conjugate),      cmocka_unit_test(test_stream_and_tf32),
        cmocka_unit_test(test_bad_input),           cmocka_unit_test(test_cublas_symbols),
        cmocka_unit_test(test_cpu_vs_cuda),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
