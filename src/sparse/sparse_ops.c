/* sparse_ops.c: the products (SpMV, SpMM, a @ b): argument checks in
 * SciPy's terms, then what the provider cannot take as it is is made so
 * here: a COO matrix becomes CSR (unless the provider takes it, sorted, for
 * SpMV), a CSC matrix CSR when the provider takes no transposed operand,
 * strided vectors and matrices contiguous copies. */
#include <stdio.h>

#include "core/error.h"
#include "sparse/sparse.h"

static const kiln_provider *const candidates[] = {&kiln_sparse_cusparse_provider.base,
                                                  &kiln_sparse_cpu_provider.base};

kiln_status sparse_provider_for(kiln_context *ctx, const sparse_provider **out, void **state) {
    const kiln_provider *p = NULL;
    kiln_status s = kiln_provider_select(ctx, candidates, sizeof candidates / sizeof candidates[0], &p);
    if (s != KILN_OK) return s;
    *out = (const sparse_provider *)p;
    return kiln_provider_state(ctx, p, state);
}

kiln_status kiln_sparse_provider(kiln_context *ctx, const char **name) {
    if (!ctx || !name)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_provider: NULL argument");
    const kiln_provider *p = NULL;
    kiln_status s = kiln_provider_select(ctx, candidates, sizeof candidates / sizeof candidates[0], &p);
    *name = s == KILN_OK ? kiln_provider_describe(p) : NULL;
    return s;
}

/* The CSR operand for a's product (a CSR matrix or the transpose of one);
 * *hold keeps a converted matrix alive until the caller releases it. */
static kiln_status csr_operand(kiln_sparse *a, int transposed_ok, int sorted_coo_ok, sparse_csr *op,
                               kiln_sparse **hold) {
    *hold = NULL;
    int coo = a->format == KILN_SPARSE_COO && a->sorted && sorted_coo_ok;
    if ((a->format == KILN_SPARSE_COO && !coo) || (a->format == KILN_SPARSE_CSC && !transposed_ok)) {
        kiln_status s = kiln_sparse_tocsr(a, hold);
        if (s != KILN_OK) return s;
        a = *hold;
    }
    int t = a->format == KILN_SPARSE_CSC;
    op->rows = t ? a->cols : a->rows;
    op->cols = t ? a->rows : a->cols;
    op->nnz = a->nnz;
    op->dtype = a->dtype;
    op->index_dtype = a->index_dtype;
    op->indptr = a->major;
    op->indices = a->minor;
    op->data = a->data;
    op->transposed = t;
    op->coo = coo;
    return KILN_OK;
}

static kiln_status check_operand(const char *call, const char *what, kiln_sparse *a, kiln_array *x,
                                 int ndim) {
    if (!x) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, what);
    if (kiln_array_context(x) != kiln_sparse_context(a))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: %s belongs to another context than the matrix",
                              call, what);
    if (kiln_array_ndim(x) != ndim)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: %s must be %d-d, found %d dims", call, what, ndim,
                              kiln_array_ndim(x));
    if (kiln_array_dtype(x) != a->dtype)
        return kiln_set_error(
            KILN_ERR_DTYPE,
            "%s: %s is %s but the matrix is %s: expected one dtype (kiln_sparse_matmul converts)", call, what,
            kiln_dtype_name(kiln_array_dtype(x)), kiln_dtype_name(a->dtype));
    return KILN_OK;
}

/* x as the provider takes it: itself, or a contiguous copy. */
static kiln_status staged_input(kiln_array *x, int takes_strided, kiln_array **out) {
    if (takes_strided || kiln_array_is_contiguous(x)) {
        *out = kiln_array_retain(x);
        return KILN_OK;
    }
    return kiln_array_copy(x, out);
}

/* The product into y: directly, or into a contiguous copy assigned back. */
typedef kiln_status (*product_fn)(kiln_context *ctx, void *state, kiln_stream *stream, const sparse_csr *a,
                                  kiln_blas_scalar alpha, kiln_array *x, kiln_blas_scalar beta,
                                  kiln_array *y);

static kiln_status run_product(kiln_stream *stream, kiln_blas_scalar alpha, kiln_sparse *a, kiln_array *x,
                               kiln_blas_scalar beta, kiln_array *y, int matrix) {
    kiln_context *ctx = kiln_sparse_context(a);
    const sparse_provider *p;
    void *state;
    kiln_status s = sparse_provider_for(ctx, &p, &state);
    if (s != KILN_OK) return s;
    int strided = matrix ? p->takes_strided_matrices : p->takes_strided_vectors;
    product_fn fn = matrix ? p->spmm : p->spmv;
    sparse_csr op;
    kiln_sparse *hold = NULL;
    kiln_array *xs = NULL, *ys = NULL;
    /* SpMM always gets CSR: cuSPARSE's row-major SpMM takes no transposed A */
    s = csr_operand(a, !matrix && p->takes_transposed, !matrix && p->takes_sorted_coo, &op, &hold);
    if (s == KILN_OK) s = staged_input(x, strided, &xs);
    if (s == KILN_OK) s = staged_input(y, strided, &ys);
    if (s == KILN_OK) s = fn(ctx, state, stream, &op, alpha, xs, beta, ys);
    if (s == KILN_OK && ys != y) {
        /* the copy's result goes back into the caller's view, in order */
        if (stream) s = kiln_stream_synchronize(stream);
        if (s == KILN_OK) s = kiln_array_assign(y, ys);
    }
    kiln_array_release(xs);
    kiln_array_release(ys);
    kiln_sparse_release(hold);
    return s;
}

kiln_status kiln_sparse_spmv(kiln_stream *stream, kiln_blas_scalar alpha, kiln_sparse *a, kiln_array *x,
                             kiln_blas_scalar beta, kiln_array *y) {
    static const char *call = "kiln_sparse_spmv";
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the matrix is NULL", call);
    kiln_status s = check_operand(call, "x", a, x, 1);
    if (s == KILN_OK) s = check_operand(call, "y", a, y, 1);
    if (s != KILN_OK) return s;
    if (kiln_array_shape(x)[0] != a->cols || kiln_array_shape(y)[0] != a->rows)
        return kiln_set_error(
            KILN_ERR_SHAPE,
            "%s: matrix (%lld, %lld) times x (%lld,) into y (%lld,): expected x (%lld,) and y (%lld,)", call,
            (long long)a->rows, (long long)a->cols, (long long)kiln_array_shape(x)[0],
            (long long)kiln_array_shape(y)[0], (long long)a->cols, (long long)a->rows);
    if (a->rows == 0) return KILN_OK;
    return run_product(stream, alpha, a, x, beta, y, 0);
}

kiln_status kiln_sparse_spmm(kiln_stream *stream, kiln_blas_scalar alpha, kiln_sparse *a, kiln_array *b,
                             kiln_blas_scalar beta, kiln_array *c) {
    static const char *call = "kiln_sparse_spmm";
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the matrix is NULL", call);
    kiln_status s = check_operand(call, "b", a, b, 2);
    if (s == KILN_OK) s = check_operand(call, "c", a, c, 2);
    if (s != KILN_OK) return s;
    const int64_t *bs = kiln_array_shape(b), *cs = kiln_array_shape(c);
    if (bs[0] != a->cols || cs[0] != a->rows || cs[1] != bs[1])
        return kiln_set_error(
            KILN_ERR_SHAPE,
            "%s: matrix (%lld, %lld) times b (%lld, %lld) into c (%lld, %lld): expected b (%lld, n) "
            "and c (%lld, n)",
            call, (long long)a->rows, (long long)a->cols, (long long)bs[0], (long long)bs[1],
            (long long)cs[0], (long long)cs[1], (long long)a->cols, (long long)a->rows);
    if (a->rows == 0 || bs[1] == 0) return KILN_OK;
    return run_product(stream, alpha, a, b, beta, c, 1);
}

kiln_status kiln_sparse_matmul(kiln_sparse *a, kiln_array *b, kiln_array **out) {
    if (!a || !b || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_sparse_matmul: NULL argument");
    *out = NULL;
    int nd = kiln_array_ndim(b);
    if (nd != 1 && nd != 2)
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_sparse_matmul: b must be 1-d or 2-d, found %d dims", nd);
    if (kiln_array_shape(b)[0] != a->cols)
        return kiln_set_error(
            KILN_ERR_SHAPE,
            "kiln_sparse_matmul: dimension mismatch: matrix (%lld, %lld) @ b with %lld rows: "
            "expected %lld",
            (long long)a->rows, (long long)a->cols, (long long)kiln_array_shape(b)[0], (long long)a->cols);
    kiln_dtype t = sparse_result_dtype(a->dtype, kiln_array_dtype(b));
    if (t == KILN_DTYPE_COUNT)
        return kiln_set_error(KILN_ERR_DTYPE, "kiln_sparse_matmul: no result dtype for %s and %s",
                              kiln_dtype_name(a->dtype), kiln_dtype_name(kiln_array_dtype(b)));
    kiln_sparse *at = NULL;
    kiln_array *bt = NULL, *r = NULL;
    kiln_status s = sparse_astype(a, t, &at);
    if (s == KILN_OK) s = sparse_array_astype(b, t, &bt);
    int64_t shape[2] = {a->rows, nd == 2 ? kiln_array_shape(b)[1] : 1};
    if (s == KILN_OK) s = kiln_array_zeros(kiln_sparse_context(a), t, nd, shape, &r);
    kiln_blas_scalar one = {1, 0}, zero = {0, 0};
    if (s == KILN_OK)
        s = nd == 1 ? kiln_sparse_spmv(NULL, one, at, bt, zero, r)
                    : kiln_sparse_spmm(NULL, one, at, bt, zero, r);
    kiln_sparse_release(at);
    kiln_array_release(bt);
    if (s != KILN_OK) {
        kiln_array_release(r);
        return s;
    }
    *out = r;
    return KILN_OK;
}
