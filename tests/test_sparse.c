/* test_sparse.c: kiln's sparse matrices against long double dense
 * references on random inputs: every value dtype and both index widths,
 * CSR / CSC / COO, duplicates, empty rows, strided operands, SciPy's shape
 * and dtype rules, and bad input. Runs on the backend of test_open()
 * (KILN_TEST_TARGET=cuda: cuSPARSE). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"
#include "test_support.h"

static const kiln_dtype value_dtypes[4] = {KILN_FLOAT32, KILN_FLOAT64, KILN_COMPLEX64, KILN_COMPLEX128};
static const kiln_dtype index_dtypes[2] = {KILN_INT32, KILN_INT64};

static int is_complex(kiln_dtype t) { return t == KILN_COMPLEX64 || t == KILN_COMPLEX128; }
static int is_single(kiln_dtype t) { return t == KILN_FLOAT32 || t == KILN_COMPLEX64; }

/* (re, im) doubles <-> a host buffer of dtype t */
static void *narrow(const double *v, int64_t n, kiln_dtype t) {
    void *out = malloc((size_t)(n > 0 ? n : 1) * kiln_dtype_size(t));
    for (int64_t i = 0; i < n; i++) switch (t) {
        case KILN_FLOAT32: ((float *)out)[i] = (float)v[2 * i]; break;
        case KILN_FLOAT64: ((double *)out)[i] = v[2 * i]; break;
        case KILN_COMPLEX64:
            ((float *)out)[2 * i] = (float)v[2 * i];
            ((float *)out)[2 * i + 1] = (float)v[2 * i + 1];
            break;
        default: ((double *)out)[2 * i] = v[2 * i]; ((double *)out)[2 * i + 1] = v[2 * i + 1];
        }
    return out;
}

static double *widen_array(kiln_array *a) {
    int64_t n = kiln_array_size(a);
    kiln_dtype t = kiln_array_dtype(a);
    void *raw = malloc((size_t)(n > 0 ? n : 1) * kiln_dtype_size(t));
    TEST_OK(kiln_array_to_host(a, raw, kiln_array_nbytes(a)));
    double *v = calloc(2 * (size_t)(n > 0 ? n : 1), sizeof *v);
    for (int64_t i = 0; i < n; i++) switch (t) {
        case KILN_FLOAT32: v[2 * i] = ((float *)raw)[i]; break;
        case KILN_FLOAT64: v[2 * i] = ((double *)raw)[i]; break;
        case KILN_COMPLEX64:
            v[2 * i] = ((float *)raw)[2 * i];
            v[2 * i + 1] = ((float *)raw)[2 * i + 1];
            break;
        case KILN_COMPLEX128:
            v[2 * i] = ((double *)raw)[2 * i];
            v[2 * i + 1] = ((double *)raw)[2 * i + 1];
            break;
        default: fail_msg("unexpected dtype %s", kiln_dtype_name(t));
        }
    free(raw);
    return v;
}

/* Values rounded to the dtype so the reference sees what kiln stores. */
static void random_values(test_rng *r, double *v, int64_t n, kiln_dtype t) {
    for (int64_t i = 0; i < n; i++) {
        v[2 * i] = test_uniform(r, -1, 1);
        v[2 * i + 1] = is_complex(t) ? test_uniform(r, -1, 1) : 0;
        if (is_single(t)) v[2 * i] = (float)v[2 * i], v[2 * i + 1] = (float)v[2 * i + 1];
    }
}

static kiln_array *index_array(kiln_context *ctx, const int64_t *v, int64_t n, kiln_dtype t) {
    kiln_array *a = NULL;
    if (t == KILN_INT64) {
        TEST_OK(kiln_array_from_host(ctx, KILN_INT64, 1, &n, v, (size_t)n * 8, &a));
    } else {
        int32_t *w = malloc((size_t)(n > 0 ? n : 1) * 4);
        for (int64_t i = 0; i < n; i++) w[i] = (int32_t)v[i];
        TEST_OK(kiln_array_from_host(ctx, KILN_INT32, 1, &n, w, (size_t)n * 4, &a));
        free(w);
    }
    return a;
}

static kiln_array *value_array(kiln_context *ctx, const double *v, int ndim, const int64_t *shape,
                               kiln_dtype t) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    void *raw = narrow(v, n, t);
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, ndim, shape, raw, (size_t)n * kiln_dtype_size(t), &a));
    free(raw);
    return a;
}

static kiln_array *value_array_real(kiln_context *ctx, const double *v, int64_t n) {
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &n, v, (size_t)n * sizeof *v, &a));
    return a;
}

/* A random rows x cols COO matrix with about density * rows * cols
 * entries, some repeated, and every fifth row empty; its dense sum in
 * long double (re, im) pairs. */
typedef struct coo_case {
    int64_t rows, cols, nnz;
    int64_t *r, *c;
    double *v;
    long double *dense; /* 2 * rows * cols */
} coo_case;

static coo_case make_coo(test_rng *rng, int64_t rows, int64_t cols, double density, kiln_dtype t,
                         int duplicates) {
    coo_case m = {rows, cols, 0, NULL, NULL, NULL, NULL};
    int64_t cap = (int64_t)(density * (double)(rows * cols)) + 8;
    m.r = malloc(sizeof *m.r * (size_t)cap);
    m.c = malloc(sizeof *m.c * (size_t)cap);
    m.v = malloc(2 * sizeof *m.v * (size_t)cap);
    m.dense = calloc(2 * (size_t)(rows * cols) + 2, sizeof *m.dense);
    for (int64_t k = 0; k < cap - 8; k++) {
        int64_t i = (int64_t)test_uniform(rng, 0, (double)rows),
                j = (int64_t)test_uniform(rng, 0, (double)cols);
        if (i >= rows) i = rows - 1;
        if (j >= cols) j = cols - 1;
        if (i % 5 == 4) continue; /* empty rows */
        m.r[m.nnz] = i, m.c[m.nnz] = j;
        m.nnz++;
    }
    if (duplicates && m.nnz > 2)
        for (int q = 0; q < 3; q++) { /* repeat earlier entries */
            m.r[m.nnz] = m.r[q], m.c[m.nnz] = m.c[q];
            m.nnz++;
        }
    random_values(rng, m.v, m.nnz, t);
    for (int64_t k = 0; k < m.nnz; k++) {
        size_t at = (size_t)(m.r[k] * cols + m.c[k]);
        m.dense[2 * at] += m.v[2 * k];
        m.dense[2 * at + 1] += m.v[2 * k + 1];
    }
    return m;
}

static void free_coo(coo_case *m) { free(m->r), free(m->c), free(m->v), free(m->dense); }

static kiln_sparse *coo_matrix(kiln_context *ctx, const coo_case *m, kiln_dtype t, kiln_dtype it) {
    kiln_array *r = index_array(ctx, m->r, m->nnz, it), *c = index_array(ctx, m->c, m->nnz, it);
    kiln_array *v = value_array(ctx, m->v, 1, &m->nnz, t);
    kiln_sparse *a = NULL;
    TEST_OK(kiln_sparse_coo(m->rows, m->cols, r, c, v, &a));
    kiln_array_release(r), kiln_array_release(c), kiln_array_release(v);
    return a;
}

/* |got - ref| within tol of the sum of the magnitudes that made ref. */
static void expect_close(const double *got, const long double *ref, const long double *mag, int64_t n,
                         kiln_dtype t, const char *what) {
    double tol = is_single(t) ? 2e-6 : 1e-14;
    for (int64_t i = 0; i < n; i++)
        for (int p = 0; p < 2; p++) {
            long double err = fabsl((long double)got[2 * i + p] - ref[2 * i + p]);
            if (err > tol * (mag[i] + 1e-30L) * 8)
                fail_msg("%s %s: element %lld part %d is %.17g, expected %.17Lg (error %Lg, scale %Lg)", what,
                         kiln_dtype_name(t), (long long)i, p, got[2 * i + p], ref[2 * i + p], err, mag[i]);
        }
}

/* y = alpha A x + beta y in long double from the dense form; x and y as
 * (re, im) doubles. mag: the sums of magnitudes. */
static void reference_mv(const coo_case *m, int transpose, const double *x, const double *y0, double ar,
                         double ai, double br, double bi, long double *ref, long double *mag) {
    int64_t rows = transpose ? m->cols : m->rows, cols = transpose ? m->rows : m->cols;
    for (int64_t i = 0; i < rows; i++) {
        long double sr = 0, si = 0, sm = 0;
        for (int64_t j = 0; j < cols; j++) {
            size_t at = transpose ? (size_t)(j * m->cols + i) : (size_t)(i * m->cols + j);
            long double dr = m->dense[2 * at], di = m->dense[2 * at + 1];
            sr += dr * x[2 * j] - di * x[2 * j + 1];
            si += dr * x[2 * j + 1] + di * x[2 * j];
            sm += (fabsl(dr) + fabsl(di)) * (fabs(x[2 * j]) + fabs(x[2 * j + 1]));
        }
        long double yr = y0[2 * i], yi = y0[2 * i + 1];
        ref[2 * i] = ar * sr - ai * si + (br * yr - bi * yi);
        ref[2 * i + 1] = ar * si + ai * sr + (br * yi + bi * yr);
        mag[i] = (fabs(ar) + fabs(ai)) * sm + (fabs(br) + fabs(bi)) * (fabsl(yr) + fabsl(yi));
    }
}

/* SpMV of one matrix in one format, x strided (every other element of a
 * longer array), checked against the reference. */
static void check_spmv(kiln_context *ctx, test_rng *rng, const coo_case *m, kiln_sparse *a, int transpose,
                       kiln_dtype t, const char *what) {
    int64_t rows = transpose ? m->cols : m->rows, cols = transpose ? m->rows : m->cols;
    int64_t xlen = 2 * cols;
    double *x = malloc(2 * sizeof *x * (size_t)(xlen + 1)), *y0 = malloc(2 * sizeof *y0 * (size_t)(rows + 1));
    random_values(rng, x, xlen, t);
    random_values(rng, y0, rows, t);
    kiln_array *xb = value_array(ctx, x, 1, &xlen, t), *xs = NULL;
    TEST_OK(kiln_array_slice(xb, 0, 0, xlen, 2, &xs));
    kiln_array *y = value_array(ctx, y0, 1, &rows, t);
    double *xv = malloc(2 * sizeof *xv * (size_t)(cols + 1));
    for (int64_t j = 0; j < cols; j++) xv[2 * j] = x[4 * j], xv[2 * j + 1] = x[4 * j + 1];
    double ar = 1.5, ai = is_complex(t) ? -0.5 : 0, br = -0.75, bi = is_complex(t) ? 0.25 : 0;
    TEST_OK(kiln_sparse_spmv(NULL, KILN_BLAS_SCALAR(ar, ai), a, xs, KILN_BLAS_SCALAR(br, bi), y));
    long double *ref = malloc(2 * sizeof *ref * (size_t)(rows + 1)),
                *mag = malloc(sizeof *mag * (size_t)(rows + 1));
    reference_mv(m, transpose, xv, y0, ar, ai, br, bi, ref, mag);
    double *got = widen_array(y);
    expect_close(got, ref, mag, rows, t, what);
    free(got), free(ref), free(mag), free(x), free(y0), free(xv);
    kiln_array_release(xb), kiln_array_release(xs), kiln_array_release(y);
}

static void test_spmv_every_dtype_and_format(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for("spmv");
    for (int vi = 0; vi < 4; vi++)
        for (int ii = 0; ii < 2; ii++) {
            kiln_dtype t = value_dtypes[vi], it = index_dtypes[ii];
            coo_case m = make_coo(&rng, 67, 45, 0.08, t, 1);
            kiln_sparse *coo = coo_matrix(ctx, &m, t, it), *csr = NULL, *csc = NULL, *tr = NULL;
            assert_int_equal(kiln_sparse_nnz(coo), m.nnz);
            assert_int_equal(kiln_sparse_index_dtype(coo), it);
            TEST_OK(kiln_sparse_tocsr(coo, &csr));
            TEST_OK(kiln_sparse_tocsc(coo, &csc));
            TEST_OK(kiln_sparse_transpose(csr, &tr));
            assert_int_equal(kiln_sparse_format_of(tr), KILN_SPARSE_CSC);
            assert_int_equal(kiln_sparse_rows(tr), 45);
            check_spmv(ctx, &rng, &m, csr, 0, t, "CSR spmv");
            check_spmv(ctx, &rng, &m, csc, 0, t, "CSC spmv");
            check_spmv(ctx, &rng, &m, coo, 0, t, "COO spmv");
            check_spmv(ctx, &rng, &m, tr, 1, t, "transposed CSR spmv");
            kiln_sparse *sorted_coo = NULL; /* row-major COO: cuSPARSE takes it as it is */
            TEST_OK(kiln_sparse_tocoo(csr, &sorted_coo));
            assert_true(kiln_sparse_has_canonical_format(sorted_coo));
            check_spmv(ctx, &rng, &m, sorted_coo, 0, t, "sorted COO spmv");
            kiln_sparse_release(sorted_coo);
            kiln_sparse_release(coo), kiln_sparse_release(csr), kiln_sparse_release(csc),
                kiln_sparse_release(tr);
            free_coo(&m);
        }
}

/* c = alpha A b + beta c, b a strided (transposed) view. */
static void test_spmm_every_dtype(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for("spmm");
    const int64_t ns[2] = {5, 21}; /* below and across kiln's 16-column tile */
    for (int vi = 0; vi < 4; vi++)
        for (int ni = 0; ni < 2; ni++) {
            kiln_dtype t = value_dtypes[vi], it = index_dtypes[(vi + ni) % 2];
            int64_t n = ns[ni];
            coo_case m = make_coo(&rng, 40, 33, 0.1, t, 1);
            kiln_sparse *coo = coo_matrix(ctx, &m, t, it), *csr = NULL;
            TEST_OK(kiln_sparse_tocsr(coo, &csr));
            int64_t bshape[2] = {n, m.cols}, cshape[2] = {m.rows, n};
            double *b = malloc(2 * sizeof *b * (size_t)(n * m.cols)),
                   *c0 = malloc(2 * sizeof *c0 * (size_t)(n * m.rows));
            random_values(&rng, b, n * m.cols, t);
            random_values(&rng, c0, n * m.rows, t);
            kiln_array *bt = value_array(ctx, b, 2, bshape, t), *bv = NULL,
                       *c = value_array(ctx, c0, 2, cshape, t);
            TEST_OK(kiln_array_transpose(bt, NULL, &bv)); /* (cols, n), strided */
            double ar = 0.5, ai = is_complex(t) ? 1 : 0, br = 2, bi = 0;
            TEST_OK(kiln_sparse_spmm(NULL, KILN_BLAS_SCALAR(ar, ai), csr, bv, KILN_BLAS_SCALAR(br, bi), c));
            double *got = widen_array(c);
            long double *ref = malloc(2 * sizeof *ref * (size_t)m.rows),
                        *mag = malloc(sizeof *mag * (size_t)m.rows);
            double *xcol = malloc(2 * sizeof *xcol * (size_t)m.cols),
                   *ycol = malloc(2 * sizeof *ycol * (size_t)m.rows);
            double *gcol = malloc(2 * sizeof *gcol * (size_t)m.rows);
            for (int64_t j = 0; j < n; j++) {
                for (int64_t k = 0; k < m.cols; k++)
                    xcol[2 * k] = b[2 * (j * m.cols + k)], xcol[2 * k + 1] = b[2 * (j * m.cols + k) + 1];
                for (int64_t i = 0; i < m.rows; i++) {
                    ycol[2 * i] = c0[2 * (i * n + j)], ycol[2 * i + 1] = c0[2 * (i * n + j) + 1];
                    gcol[2 * i] = got[2 * (i * n + j)], gcol[2 * i + 1] = got[2 * (i * n + j) + 1];
                }
                reference_mv(&m, 0, xcol, ycol, ar, ai, br, bi, ref, mag);
                expect_close(gcol, ref, mag, m.rows, t, "spmm column");
            }
            free(got), free(ref), free(mag), free(xcol), free(ycol), free(gcol), free(b), free(c0);
            kiln_array_release(bt), kiln_array_release(bv), kiln_array_release(c);
            kiln_sparse_release(coo), kiln_sparse_release(csr);
            free_coo(&m);
        }
}

static void expect_dense(kiln_sparse *a, const coo_case *m, kiln_dtype t, const char *what) {
    kiln_array *d = NULL;
    TEST_OK(kiln_sparse_to_dense(a, &d));
    assert_int_equal(kiln_array_ndim(d), 2);
    assert_int_equal(kiln_array_shape(d)[0], m->rows);
    assert_int_equal(kiln_array_shape(d)[1], m->cols);
    assert_int_equal(kiln_array_dtype(d), t);
    double *got = widen_array(d);
    int64_t n = m->rows * m->cols;
    long double *mag = malloc(sizeof *mag * (size_t)n);
    for (int64_t i = 0; i < n; i++) mag[i] = fabsl(m->dense[2 * i]) + fabsl(m->dense[2 * i + 1]) + 1;
    expect_close(got, m->dense, mag, n, t, what);
    free(got), free(mag);
    kiln_array_release(d);
}

/* SciPy's tocsr: duplicates summed, indices sorted, canonical. */
static void test_coo_duplicates_and_conversions(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for("convert");
    for (int vi = 0; vi < 4; vi++)
        for (int ii = 0; ii < 2; ii++) {
            kiln_dtype t = value_dtypes[vi], it = index_dtypes[ii];
            coo_case m = make_coo(&rng, 23, 31, 0.2, t, 1);
            kiln_sparse *coo = coo_matrix(ctx, &m, t, it), *csr = NULL, *back = NULL, *csc = NULL;
            assert_false(kiln_sparse_has_canonical_format(coo));
            TEST_OK(kiln_sparse_tocsr(coo, &csr));
            assert_true(kiln_sparse_has_canonical_format(csr));
            int64_t unique = 0;
            for (int64_t i = 0; i < m.rows * m.cols; i++) {
                int seen = 0;
                for (int64_t k = 0; k < m.nnz && !seen; k++) seen = m.r[k] * m.cols + m.c[k] == i;
                unique += seen;
            }
            assert_int_equal(kiln_sparse_nnz(csr), unique);
            assert_true(unique < m.nnz);
            kiln_array *indptr = NULL, *indices = NULL;
            TEST_OK(kiln_sparse_arrays(csr, &indptr, &indices, NULL));
            assert_int_equal(kiln_array_size(indptr), m.rows + 1);
            assert_int_equal(kiln_array_dtype(indices), it);
            kiln_array_release(indptr), kiln_array_release(indices);
            TEST_OK(kiln_sparse_tocoo(csr, &back));
            TEST_OK(kiln_sparse_tocsc(back, &csc));
            expect_dense(coo, &m, t, "COO to dense");
            expect_dense(csr, &m, t, "CSR to dense");
            expect_dense(back, &m, t, "CSR to COO to dense");
            expect_dense(csc, &m, t, "CSC to dense");
            /* dense -> sparse in each format and back */
            kiln_array *d = NULL;
            TEST_OK(kiln_sparse_to_dense(csr, &d));
            for (int f = 0; f < 3; f++) {
                kiln_sparse *fd = NULL;
                TEST_OK(kiln_sparse_from_dense(d, (kiln_sparse_format)f, it, &fd));
                assert_int_equal(kiln_sparse_format_of(fd), f);
                assert_int_equal(kiln_sparse_nnz(fd), unique);
                expect_dense(fd, &m, t, "from dense");
                kiln_sparse_release(fd);
            }
            kiln_array_release(d);
            kiln_sparse_release(coo), kiln_sparse_release(csr), kiln_sparse_release(back),
                kiln_sparse_release(csc);
            free_coo(&m);
        }
}

/* a + b: canonical CSR, dtype promoted, cancelled entries gone; a * s. */
static void test_add_and_scale(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for("add");
    coo_case m = make_coo(&rng, 19, 17, 0.2, KILN_FLOAT32, 0);
    kiln_sparse *a = coo_matrix(ctx, &m, KILN_FLOAT32, KILN_INT32), *b = NULL, *sum = NULL, *neg = NULL,
                *zero = NULL;
    TEST_OK(kiln_sparse_scale(a, kiln_f64(-1), &neg));
    assert_int_equal(kiln_sparse_dtype(neg), KILN_FLOAT32);
    TEST_OK(kiln_sparse_add(a, neg, &zero));
    assert_int_equal(kiln_sparse_nnz(zero), 0); /* every entry cancelled and dropped */
    assert_int_equal(kiln_sparse_format_of(zero), KILN_SPARSE_CSR);
    /* float32 + complex128 (int64 indices) -> complex128, int64 */
    coo_case m2 = make_coo(&rng, 19, 17, 0.2, KILN_COMPLEX128, 1);
    b = coo_matrix(ctx, &m2, KILN_COMPLEX128, KILN_INT64);
    TEST_OK(kiln_sparse_add(a, b, &sum));
    assert_int_equal(kiln_sparse_dtype(sum), KILN_COMPLEX128);
    assert_int_equal(kiln_sparse_index_dtype(sum), KILN_INT64);
    assert_true(kiln_sparse_has_canonical_format(sum));
    for (int64_t i = 0; i < 2 * m.rows * m.cols; i++) m2.dense[i] += m.dense[i];
    expect_dense(sum, &m2, KILN_COMPLEX128, "sum");
    /* a complex scalar makes float32 complex64 */
    kiln_sparse *sc = NULL;
    TEST_OK(kiln_sparse_scale(a, kiln_c128(0, 2), &sc));
    assert_int_equal(kiln_sparse_dtype(sc), KILN_COMPLEX64);
    for (int64_t i = 0; i < m.rows * m.cols; i++) m.dense[2 * i + 1] = 2 * m.dense[2 * i], m.dense[2 * i] = 0;
    expect_dense(sc, &m, KILN_COMPLEX64, "scaled");
    kiln_sparse *t1 = NULL, *t2 = NULL, *csc_sum = NULL;
    TEST_OK(kiln_sparse_tocsc(a, &t1));
    TEST_OK(kiln_sparse_tocsc(neg, &t2));
    TEST_OK(kiln_sparse_add(t1, t2, &csc_sum));
    assert_int_equal(kiln_sparse_format_of(csc_sum), KILN_SPARSE_CSC);
    kiln_sparse *bad = NULL, *small = NULL;
    kiln_array *d = NULL;
    int64_t sh[2] = {3, 4};
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 2, sh, &d));
    TEST_OK(kiln_sparse_from_dense(d, KILN_SPARSE_CSR, KILN_INT32, &small));
    TEST_FAILS_WITH(kiln_sparse_add(a, small, &bad), KILN_ERR_SHAPE, "(19, 17) and (3, 4)");
    kiln_array_release(d);
    kiln_sparse_release(small), kiln_sparse_release(t1), kiln_sparse_release(t2),
        kiln_sparse_release(csc_sum);
    kiln_sparse_release(a), kiln_sparse_release(b), kiln_sparse_release(sum), kiln_sparse_release(neg);
    kiln_sparse_release(zero), kiln_sparse_release(sc);
    free_coo(&m), free_coo(&m2);
}

/* SciPy's a @ b: shapes, and NumPy's result dtype. */
static void test_matmul_rules(void **state) {
    kiln_context *ctx = *state;
    test_rng rng = test_rng_for("matmul");
    coo_case m = make_coo(&rng, 12, 9, 0.3, KILN_FLOAT32, 0);
    kiln_sparse *a = coo_matrix(ctx, &m, KILN_FLOAT32, KILN_INT32);
    struct {
        kiln_dtype x, want;
    } rules[] = {{KILN_FLOAT32, KILN_FLOAT32},      {KILN_INT16, KILN_FLOAT32},
                 {KILN_INT32, KILN_FLOAT64},        {KILN_FLOAT64, KILN_FLOAT64},
                 {KILN_COMPLEX64, KILN_COMPLEX64},  {KILN_UINT64, KILN_FLOAT64},
                 {KILN_COMPLEX128, KILN_COMPLEX128}};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        kiln_array *x = NULL, *y = NULL;
        int64_t n = 9;
        TEST_OK(kiln_array_full(ctx, rules[i].x, 1, &n, 2, 0, &x));
        TEST_OK(kiln_sparse_matmul(a, x, &y));
        assert_int_equal(kiln_array_dtype(y), rules[i].want);
        assert_int_equal(kiln_array_ndim(y), 1);
        assert_int_equal(kiln_array_shape(y)[0], 12);
        double *got = widen_array(y);
        for (int64_t r = 0; r < 12; r++) {
            long double want = 0;
            for (int64_t j = 0; j < 9; j++) want += 2 * m.dense[2 * (r * 9 + j)];
            assert_true(fabsl(got[2 * r] - want) < 1e-5);
        }
        free(got);
        kiln_array_release(x), kiln_array_release(y);
    }
    kiln_array *b2 = NULL, *c2 = NULL, *wrong = NULL, *out = NULL;
    int64_t s2[2] = {9, 4}, sw = 8;
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT32, 2, s2, 1, 0, &b2));
    TEST_OK(kiln_sparse_matmul(a, b2, &c2));
    assert_int_equal(kiln_array_ndim(c2), 2);
    assert_int_equal(kiln_array_shape(c2)[0], 12);
    assert_int_equal(kiln_array_shape(c2)[1], 4);
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &sw, &wrong));
    TEST_FAILS_WITH(kiln_sparse_matmul(a, wrong, &out), KILN_ERR_SHAPE, "dimension mismatch");
    kiln_array *y = NULL;
    int64_t ny = 12;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &ny, &y));
    TEST_FAILS_WITH(kiln_sparse_spmv(NULL, KILN_BLAS_SCALAR(1, 0), a, wrong, KILN_BLAS_SCALAR(0, 0), y),
                    KILN_ERR_DTYPE, "float64");
    kiln_array_release(b2), kiln_array_release(c2), kiln_array_release(wrong), kiln_array_release(y);
    kiln_sparse_release(a);
    free_coo(&m);
}

/* An all-empty matrix: y = beta y, and nothing read from x. */
static void test_empty_matrix(void **state) {
    kiln_context *ctx = *state;
    int64_t ptr[5] = {0, 0, 0, 0, 0}, n0 = 0, four = 4, three = 3;
    kiln_array *indptr = index_array(ctx, ptr, 5, KILN_INT32), *idx = index_array(ctx, ptr, 0, KILN_INT32);
    kiln_array *data = NULL, *x = NULL, *y = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 1, &n0, &data));
    kiln_sparse *a = NULL;
    TEST_OK(kiln_sparse_csr(4, 3, indptr, idx, data, &a));
    assert_true(kiln_sparse_has_canonical_format(a));
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT64, 1, &three, 1, 0, &x));
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT64, 1, &four, 3, 0, &y));
    TEST_OK(kiln_sparse_spmv(NULL, KILN_BLAS_SCALAR(1, 0), a, x, KILN_BLAS_SCALAR(0.5, 0), y));
    double got[4];
    TEST_OK(kiln_array_to_host(y, got, sizeof got));
    for (int i = 0; i < 4; i++) assert_true(got[i] == 1.5);
    kiln_array_release(indptr), kiln_array_release(idx), kiln_array_release(data);
    kiln_array_release(x), kiln_array_release(y);
    kiln_sparse_release(a);
}

/* Components given as strided views and as wrapped host memory are
 * copied into contiguous device arrays; the matrix is the same. */
static void test_strided_and_host_components(void **state) {
    kiln_context *ctx = *state;
    int64_t ptr[3] = {0, 1, 3}, idx[3] = {2, 0, 1}, n6 = 6, n3 = 3;
    double spread[6] = {5, -1, 6, -1, 7, -1}; /* data at even places */
    kiln_array *p = index_array(ctx, ptr, 3, KILN_INT64), *wide = value_array_real(ctx, spread, n6),
               *d = NULL;
    TEST_OK(kiln_array_slice(wide, 0, 0, 6, 2, &d));
    kiln_array *i = NULL;
    TEST_OK(kiln_array_wrap_host(ctx, KILN_INT64, 1, &n3, NULL, idx, &i));
    kiln_sparse *a = NULL;
    kiln_array *dense = NULL;
    TEST_OK(kiln_sparse_csr(2, 3, p, i, d, &a));
    TEST_OK(kiln_sparse_to_dense(a, &dense));
    double got[6];
    TEST_OK(kiln_array_to_host(dense, got, sizeof got));
    const double want[6] = {0, 0, 5, 6, 7, 0};
    for (int k = 0; k < 6; k++) assert_true(got[k] == want[k]);
    assert_true(kiln_sparse_has_sorted_indices(a));
    kiln_array_release(p), kiln_array_release(wide), kiln_array_release(d), kiln_array_release(i);
    kiln_array_release(dense);
    kiln_sparse_release(a);
}

static void test_bad_input(void **state) {
    kiln_context *ctx = *state;
    kiln_sparse *a = NULL;
    int64_t good_ptr[4] = {0, 2, 2, 3}, bad_ptr[4] = {0, 2, 1, 3}, idx[3] = {0, 4, 1}, far[3] = {0, 5, 1};
    double v[6] = {1, 0, 2, 0, 3, 0};
    int64_t three = 3;
    kiln_array *p = index_array(ctx, good_ptr, 4, KILN_INT32), *bp = index_array(ctx, bad_ptr, 4, KILN_INT32);
    kiln_array *i32 = index_array(ctx, idx, 3, KILN_INT32), *i64 = index_array(ctx, idx, 3, KILN_INT64);
    kiln_array *fi = index_array(ctx, far, 3, KILN_INT32), *d = value_array(ctx, v, 1, &three, KILN_FLOAT64);
    kiln_array *p3 = index_array(ctx, good_ptr, 3, KILN_INT32), *di = NULL, *i16 = NULL;
    TEST_OK(kiln_sparse_csr(3, 5, p, i32, d, &a));
    kiln_sparse_release(a);
    TEST_FAILS_WITH(kiln_sparse_csr(3, 5, p, fi, d, &a), KILN_ERR_INVALID_ARGUMENT,
                    "column index 5 in row 0 (entry 1) out of range [0, 5)");
    TEST_FAILS_WITH(kiln_sparse_csr(3, 5, bp, i32, d, &a), KILN_ERR_INVALID_ARGUMENT, "not monotone");
    TEST_FAILS_WITH(kiln_sparse_csr(3, 5, p3, i32, d, &a), KILN_ERR_SHAPE, "expected rows + 1 = 4");
    TEST_FAILS_WITH(kiln_sparse_csr(3, 5, p, i64, d, &a), KILN_ERR_DTYPE, "one index dtype");
    TEST_FAILS_WITH(kiln_sparse_csc(4, 3, p, i32, d, &a), KILN_ERR_INVALID_ARGUMENT,
                    "row index 4 in column 0");
    TEST_FAILS_WITH(kiln_sparse_coo(5, 4, i32, i32, d, &a), KILN_ERR_INVALID_ARGUMENT,
                    "COO column index 4 at entry 1 out of range [0, 4)");
    TEST_FAILS_WITH(kiln_sparse_csr(-1, 5, p, i32, d, &a), KILN_ERR_SHAPE, "must be >= 0");
    TEST_OK(kiln_array_full(ctx, KILN_INT32, 1, &three, 1, 0, &di));
    TEST_FAILS_WITH(kiln_sparse_csr(3, 5, p, i32, di, &a), KILN_ERR_DTYPE, "expected float32, float64");
    TEST_OK(kiln_array_full(ctx, KILN_INT16, 1, &three, 1, 0, &i16));
    TEST_FAILS_WITH(kiln_sparse_coo(3, 5, i16, i16, d, &a), KILN_ERR_DTYPE, "expected int32 or int64");
    TEST_FAILS_WITH(kiln_sparse_csr(3, 5, p, NULL, d, &a), KILN_ERR_INVALID_ARGUMENT, "indices is NULL");
    kiln_array *arrays[] = {p, bp, i32, i64, fi, d, p3, di, i16};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) kiln_array_release(arrays[k]);
}

/* The CPU kernels are CUDA C: they compile through NVRTC for sm_90 too. */
extern const char kiln_embedded_sparse_csr[];
static void test_kernels_compile_for_sm90(void **state) {
    (void)state;
    static const char *types[4] = {"float", "double", "kiln_complex64", "kiln_complex128"};
    static const char *index[2] = {"int32_t", "int64_t"};
    size_t size = strlen(kiln_embedded_sparse_csr) + 8192;
    char *src = malloc(size);
    int len = snprintf(src, size, "%s\n", kiln_embedded_sparse_csr);
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 2; i++)
            len += snprintf(
                src + len, size - (size_t)len,
                "template __global__ void kiln_csr_spmv<%s, %s>(const %s *, const %s *, const %s *, long "
                "long, long long, const %s *, long long, %s *, long long, double, double, double, double);\n"
                "template __global__ void kiln_csr_spmm<%s, %s>(const %s *, const %s *, const %s *, long "
                "long, long long, long long, const %s *, long long, long long, %s *, long long, long long, "
                "double, double, double, double);\n",
                types[t], index[i], index[i], index[i], types[t], types[t], types[t], types[t], index[i],
                index[i], index[i], types[t], types[t], types[t]);
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "sparse_csr.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING && s != KILN_OK) fail_msg("sparse kernels: %s", kiln_last_error());
    if (s == KILN_ERR_COMPILER_MISSING) printf("NVRTC not here: the sm_90 build is skipped\n");
    kiln_free(log);
    TEST_OK(kiln_compile_only("cpu", NULL, src, "sparse_csr.cu", NULL, &log));
    kiln_free(log);
    free(src);
}

/* `kiln demo sparse` at a small grid: SpMV checked, CG converged. */
static void test_demo_small_grid(void **state) {
    kiln_context *ctx = *state;
    const kiln_example *ex = kiln_example_find("sparse");
    assert_non_null(ex);
    kiln_example_opts opts = {24, 3, 0, NULL, 0};
    kiln_example_result r;
    memset(&r, 0, sizeof r);
    TEST_OK((kiln_status)ex->run(ctx, &opts, &r));
    if (!r.passed) fail_msg("demo sparse failed its check: %s", r.check);
    assert_int_equal(r.size, 24);
    assert_non_null(strstr(r.check, "CG"));
}

static void test_provider_named(void **state) {
    kiln_context *ctx = *state;
    const char *name = NULL;
    TEST_OK(kiln_sparse_provider(ctx, &name));
    assert_non_null(strstr(name, kiln_context_backend(ctx) == KILN_BACKEND_CUDA ? "cuSPARSE" : "kiln"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spmv_every_dtype_and_format),
        cmocka_unit_test(test_spmm_every_dtype),
        cmocka_unit_test(test_coo_duplicates_and_conversions),
        cmocka_unit_test(test_add_and_scale),
        cmocka_unit_test(test_matmul_rules),
        cmocka_unit_test(test_empty_matrix),
        cmocka_unit_test(test_strided_and_host_components),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_kernels_compile_for_sm90),
        cmocka_unit_test(test_demo_small_grid),
        cmocka_unit_test(test_provider_named),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
