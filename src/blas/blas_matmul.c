/* blas_matmul.c: the public gemm calls: kiln_matmul (NumPy's matmul: 1-d
 * promotion, batch broadcasting, dtype promotion, output allocation) and
 * kiln_gemm (alpha, beta, transposes, one dtype), both down to
 * kiln_blas_gemm_core. */
#include <stdio.h>
#include <string.h>

#include "array/array.h"
#include "blas/blas_internal.h"

static const char *shape_str(const kiln_array *a, char *buf, size_t cap) {
    return kiln_shape_format(a->ndim, a->shape, buf, cap);
}

static int is_blas_dtype(kiln_dtype t) {
    return t == KILN_FLOAT16 || t == KILN_BFLOAT16 || t == KILN_FLOAT32 || t == KILN_FLOAT64 ||
           t == KILN_COMPLEX64 || t == KILN_COMPLEX128;
}

/* NumPy's result type restricted to what the libraries compute. */
static kiln_status result_dtype(const kiln_array *a, const kiln_array *b, kiln_dtype *out) {
    kiln_dtype ta = a->dtype, tb = b->dtype;
    if (!is_blas_dtype(ta) && !is_blas_dtype(tb))
        return kiln_set_error(KILN_ERR_DTYPE,
                              "matmul: %s @ %s has no floating type (NumPy would multiply integers; the BLAS "
                              "cannot): convert an operand to float32 or float64",
                              kiln_dtype_name(ta), kiln_dtype_name(tb));
    /* bfloat16 and float16 do not cast to each other: together they give
     * float32, as in ml_dtypes and JAX */
    static const kiln_dtype order[] = {KILN_FLOAT16, KILN_BFLOAT16,  KILN_FLOAT32,
                                       KILN_FLOAT64, KILN_COMPLEX64, KILN_COMPLEX128};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (kiln_dtype_can_cast(ta, order[i]) && kiln_dtype_can_cast(tb, order[i])) {
            *out = order[i];
            return KILN_OK;
        }
    return kiln_set_error(KILN_ERR_DTYPE,
                          "matmul: %s @ %s: no safe common type among float16, bfloat16, float32, float64, "
                          "complex64, complex128 (%s does not convert to any without losing values)",
                          kiln_dtype_name(ta), kiln_dtype_name(tb),
                          is_blas_dtype(ta) ? kiln_dtype_name(tb) : kiln_dtype_name(ta));
}

static int valid_op(kiln_blas_op op) { return op == KILN_BLAS_N || op == KILN_BLAS_T || op == KILN_BLAS_C; }

/* Inserts an extent-1 dim at `pos`. */
static void insert_unit_dim(blas_mat *m, int pos) {
    for (int d = m->ndim; d > pos; d--) {
        m->shape[d] = m->shape[d - 1];
        m->strides[d] = m->strides[d - 1];
    }
    m->shape[pos] = 1;
    m->strides[pos] = 0;
    m->ndim++;
}

static void swap_last(blas_mat *m) {
    int i = m->ndim - 2, j = m->ndim - 1;
    int64_t t = m->shape[i];
    m->shape[i] = m->shape[j];
    m->shape[j] = t;
    t = m->strides[i];
    m->strides[i] = m->strides[j];
    m->strides[j] = t;
}

/* The broadcast batch shape of A and B (matrices last) into shape[0..nb). */
static kiln_status broadcast_batch(const blas_mat *A, const blas_mat *B, const kiln_array *a,
                                   const kiln_array *b, const char *what, int *nb, int64_t *shape) {
    int na = A->ndim - 2, nbb = B->ndim - 2, n = na > nbb ? na : nbb;
    for (int d = 0; d < n; d++) {
        int da = d - (n - na), db = d - (n - nbb);
        int64_t ea = da >= 0 ? A->shape[da] : 1, eb = db >= 0 ? B->shape[db] : 1;
        if (ea != eb && ea != 1 && eb != 1) {
            char sa[128], sb[128];
            return kiln_set_error(
                KILN_ERR_SHAPE,
                "%s: batch dims of a %s and b %s do not broadcast: %lld vs %lld at batch dim %d", what,
                shape_str(a, sa, sizeof sa), shape_str(b, sb, sizeof sb), (long long)ea, (long long)eb, d);
        }
        shape[d] = ea == 1 ? eb : ea;
    }
    *nb = n;
    return KILN_OK;
}

static int overlaps(const kiln_array *x, const kiln_array *y) {
    if (kiln_array_size(x) == 0 || kiln_array_size(y) == 0) return 0;
    char *xl, *xh, *yl, *yh;
    kiln_array_byte_extent(x, &xl, &xh);
    kiln_array_byte_extent(y, &yl, &yh);
    return xl < yh && yl < xh;
}

static kiln_status check_output(const char *what, kiln_array *out, const kiln_array *a, const kiln_array *b,
                                int ndim, const int64_t *shape, kiln_dtype dtype) {
    char se[128], sg[128];
    if (out->ctx != a->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the output belongs to another context", what);
    int same = out->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = out->shape[d] == shape[d];
    if (!same)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: output has shape %s, expected %s", what,
                              shape_str(out, sg, sizeof sg), kiln_shape_format(ndim, shape, se, sizeof se));
    if (out->dtype != dtype)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: output has dtype %s, expected %s", what,
                              kiln_dtype_name(out->dtype), kiln_dtype_name(dtype));
    for (int d = 0; d < ndim; d++)
        if (out->shape[d] > 1 && out->strides[d] == 0)
            return kiln_set_error(
                KILN_ERR_INVALID_ARGUMENT,
                "%s: the output %s has stride 0 along dim %d: its entries would overwrite each "
                "other",
                what, shape_str(out, sg, sizeof sg), d);
    if (overlaps(out, a) || overlaps(out, b))
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "%s: the output overlaps input %s in memory: the library would read what it has "
            "already written; give a separate output",
            what, overlaps(out, a) ? "a" : "b");
    return KILN_OK;
}

/* A new array of `dtype` holding x's values (kiln's conversion ufunc);
 * shows in the profile as that ufunc's kernel. */
static kiln_status convert(kiln_array *x, kiln_dtype dtype, kiln_stream *stream, kiln_array **out) {
    kiln_ufunc *conv;
    kiln_status s = kiln_blas_converter(x->ctx, dtype, &conv);
    if (s != KILN_OK) return s;
    kiln_array *y = NULL;
    s = kiln_array_empty(x->ctx, dtype, x->ndim, x->shape, &y);
    const kiln_value arg = kiln_arr(x);
    if (s == KILN_OK) s = kiln_call_ex(conv, NULL, stream, &arg, 1, &y);
    if (s != KILN_OK) {
        kiln_array_release(y);
        return kiln_prefix_error(s, "matmul: converting %s to %s: ", kiln_dtype_name(x->dtype),
                                 kiln_dtype_name(dtype));
    }
    *out = y;
    return KILN_OK;
}

kiln_status kiln_matmul_ex(kiln_stream *stream, int flags, kiln_array *a, kiln_array *b, kiln_array **out) {
    if (!a || !b || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_matmul: a, b and out must not be NULL");
    kiln_context *ctx = a->ctx;
    if (b->ctx != ctx || (stream && stream->ctx != ctx))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_matmul: a, b and the stream must share a context");
    char sa[128], sb[128];
    if (a->ndim < 1 || b->ndim < 1)
        return kiln_set_error(KILN_ERR_SHAPE, "matmul: operands must have at least 1 dim; a %s, b %s",
                              shape_str(a, sa, sizeof sa), shape_str(b, sb, sizeof sb));
    kiln_dtype dtype = KILN_FLOAT64;
    kiln_status s = result_dtype(a, b, &dtype);
    if (s != KILN_OK) return s;
    blas_mat A = kiln_blas_mat_whole(a), B = kiln_blas_mat_whole(b);
    if (a->ndim == 1) insert_unit_dim(&A, 0); /* (k) -> (1, k) */
    if (b->ndim == 1) insert_unit_dim(&B, 1); /* (k) -> (k, 1) */
    int64_t k = A.shape[A.ndim - 1];
    if (B.shape[B.ndim - 2] != k)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "matmul: inner dims differ: a %s @ b %s: a's last dim %lld vs b's %s dim %lld",
                              shape_str(a, sa, sizeof sa), shape_str(b, sb, sizeof sb), (long long)k,
                              b->ndim == 1 ? "only" : "second-to-last", (long long)B.shape[B.ndim - 2]);
    int nb;
    int64_t cshape[KILN_MAX_DIMS];
    s = broadcast_batch(&A, &B, a, b, "matmul", &nb, cshape);
    if (s != KILN_OK) return s;
    int64_t m = A.shape[A.ndim - 2], n = B.shape[B.ndim - 1];
    int rank = nb; /* the result's shape: batch, then m and n unless squeezed */
    if (a->ndim > 1) cshape[rank++] = m;
    if (b->ndim > 1) cshape[rank++] = n;
    if (*out) {
        s = check_output("matmul", *out, a, b, rank, cshape, dtype);
        if (s != KILN_OK) return s;
    }
    kiln_blas_state *st;
    s = kiln_blas_state_get(ctx, &st); /* a missing library fails before any allocation */
    if (s != KILN_OK) return s;
    kiln_array *ca = NULL, *cb = NULL, *res = *out;
    if (a->dtype != dtype) s = convert(a, dtype, stream, &ca);
    if (s == KILN_OK && b->dtype != dtype) s = convert(b, dtype, stream, &cb);
    if (s == KILN_OK && !res) s = kiln_array_empty(ctx, dtype, rank, cshape, &res);
    if (s == KILN_OK) {
        if (ca)
            A.arr = ca,
            memcpy(A.strides + (A.ndim - ca->ndim), ca->strides, sizeof(int64_t) * (size_t)ca->ndim);
        if (cb) B.arr = cb, memcpy(B.strides, cb->strides, sizeof(int64_t) * (size_t)cb->ndim);
        if (ca && a->ndim == 1) A.strides[0] = 0;
        blas_mat C = kiln_blas_mat_whole(res);
        if (a->ndim == 1) insert_unit_dim(&C, C.ndim - (b->ndim == 1 ? 0 : 1));
        if (b->ndim == 1) insert_unit_dim(&C, C.ndim);
        s = kiln_blas_gemm_core(ctx, stream, flags, KILN_BLAS_SCALAR(1, 0), A, B, KILN_BLAS_SCALAR(0, 0), C);
    }
    kiln_array_release(ca);
    kiln_array_release(cb);
    if (s != KILN_OK) {
        if (res != *out) kiln_array_release(res);
        return s;
    }
    *out = res;
    return KILN_OK;
}

kiln_status kiln_matmul(kiln_array *a, kiln_array *b, kiln_array **out) {
    return kiln_matmul_ex(NULL, KILN_BLAS_DEFAULT, a, b, out);
}

kiln_status kiln_gemm(kiln_stream *stream, int flags, kiln_blas_op op_a, kiln_blas_op op_b,
                      kiln_blas_scalar alpha, kiln_array *a, kiln_array *b, kiln_blas_scalar beta,
                      kiln_array *c) {
    if (!a || !b || !c)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_gemm: a, b and c must not be NULL");
    kiln_context *ctx = a->ctx;
    if (b->ctx != ctx || c->ctx != ctx || (stream && stream->ctx != ctx))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_gemm: a, b, c and the stream must share a context");
    char sa[128], sb[128], sc[128];
    if (a->ndim < 2 || b->ndim < 2 || c->ndim < 2)
        return kiln_set_error(KILN_ERR_SHAPE, "gemm: a %s, b %s and c %s must have at least 2 dims",
                              shape_str(a, sa, sizeof sa), shape_str(b, sb, sizeof sb),
                              shape_str(c, sc, sizeof sc));
    if (!valid_op(op_a) || !valid_op(op_b))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "gemm: op_a %d / op_b %d: expected KILN_BLAS_N, KILN_BLAS_T or KILN_BLAS_C",
                              (int)op_a, (int)op_b);
    if (a->dtype != b->dtype || a->dtype != c->dtype || !is_blas_dtype(a->dtype))
        return kiln_set_error(
            KILN_ERR_DTYPE,
            "gemm: a %s, b %s, c %s: expected one dtype of float16 (CUDA), bfloat16, float32, "
            "float64, complex64, complex128 for all three (kiln_matmul converts)",
            kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype), kiln_dtype_name(c->dtype));
    blas_mat A = kiln_blas_mat_whole(a), B = kiln_blas_mat_whole(b), C = kiln_blas_mat_whole(c);
    if (op_a != KILN_BLAS_N) swap_last(&A);
    if (op_b != KILN_BLAS_N) swap_last(&B);
    /* KILN_BLAS_C on a real dtype is KILN_BLAS_T, as in the BLAS */
    int complex = a->dtype == KILN_COMPLEX64 || a->dtype == KILN_COMPLEX128;
    A.conj = complex && op_a == KILN_BLAS_C;
    B.conj = complex && op_b == KILN_BLAS_C;
    int64_t k = A.shape[A.ndim - 1];
    if (B.shape[B.ndim - 2] != k)
        return kiln_set_error(
            KILN_ERR_SHAPE,
            "gemm: inner dims differ: op(a) of a %s has %lld columns, op(b) of b %s has %lld rows",
            shape_str(a, sa, sizeof sa), (long long)k, shape_str(b, sb, sizeof sb),
            (long long)B.shape[B.ndim - 2]);
    int nb;
    int64_t shape[KILN_MAX_DIMS];
    kiln_status s = broadcast_batch(&A, &B, a, b, "gemm", &nb, shape);
    if (s != KILN_OK) return s;
    shape[nb] = A.shape[A.ndim - 2];
    shape[nb + 1] = B.shape[B.ndim - 1];
    s = check_output("gemm", c, a, b, nb + 2, shape, a->dtype);
    if (s != KILN_OK) return s;
    return kiln_blas_gemm_core(ctx, stream, flags, alpha, A, B, beta, C);
}

kiln_status kiln_blas_provider(kiln_context *ctx, const char **name) {
    if (!ctx || !name)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_blas_provider: ctx and name must not be NULL");
    kiln_blas_state *st;
    kiln_status s = kiln_blas_state_get(ctx, &st);
    if (s != KILN_OK) return s;
    *name = kiln_provider_describe(&st->provider->base);
    return KILN_OK;
}
