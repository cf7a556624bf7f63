/* blas_gemm_core.c: C = alpha A B + beta C over a broadcast batch, for
 * kiln_matmul and kiln_gemm: picks kiln's small-matrix kernel or the
 * library, maps the views onto the library's flags, leading dimensions and
 * batch strides, and copies what it cannot map (once, recorded). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "blas/blas_internal.h"
#include "prof/prof.h"

/* kiln's small-matrix kernel runs batches of at least this many products
 * whose dims are all within its limit for the dtype and backend
 * (blas_small.c): below that, one library call's fixed cost is as small. */
enum { SMALL_MIN_BATCH = 64 };

static int is_zero(kiln_blas_scalar s) { return s.re == 0 && s.im == 0; }
static int is_one(kiln_blas_scalar s) { return s.re == 1 && s.im == 0; }

/* Which of kiln's own kernels takes a batch of small products, if any:
 * SMALL_KERNEL (blas_small.c, every dtype, dims up to 32, one stride a
 * batch; CUDA), SMALL_GUFUNC (a gufunc, float32/float64, alpha 1, beta 0,
 * any shape and batch layout: the CPU's, where a thread per product beats
 * the tiled kernel, and the fallback when kiln's kernel is forced on what
 * the tiled one cannot take), or SMALL_NONE: the library. */
enum { SMALL_NONE, SMALL_KERNEL, SMALL_GUFUNC };
static int small_choice(const blas_provider *prov, const blas_mat *A, const blas_mat *B, const blas_mat *C,
                        int64_t batch, int flags, kiln_blas_scalar alpha, kiln_blas_scalar beta,
                        int64_t strides[3]);

static kiln_status run_small(kiln_context *ctx, kiln_stream *stream, const blas_mat *A, const blas_mat *B,
                             const blas_mat *C, int64_t batch) {
    kiln_gufunc *f;
    kiln_status s = kiln_blas_small_gemm(ctx, C->arr->dtype, &f);
    if (s != KILN_OK) return s;
    kiln_array *va = NULL, *vb = NULL, *vc = NULL;
    s = kiln_blas_view(A->arr, A->ndim, A->shape, A->strides, 0, &va);
    if (s == KILN_OK) s = kiln_blas_view(B->arr, B->ndim, B->shape, B->strides, 0, &vb);
    if (s == KILN_OK) s = kiln_blas_view(C->arr, C->ndim, C->shape, C->strides, 0, &vc);
    int64_t m = C->shape[C->ndim - 2], n = C->shape[C->ndim - 1], k = A->shape[A->ndim - 1];
    struct kiln_prof_op *op =
        s == KILN_OK ? kiln_blas_prof_begin(ctx, stream, "matmul", C->arr->dtype, "kiln gufunc",
                                            2.0 * (double)batch * m * n * k,
                                            "batch %lld of (%lld x %lld) @ (%lld x %lld)", (long long)batch,
                                            (long long)m, (long long)k, (long long)k, (long long)n)
                     : NULL;
    if (s == KILN_OK) {
        const kiln_value args[3] = {kiln_arr(va), kiln_arr(vb), kiln_arr(vc)};
        s = kiln_gufunc_call_ex(f, stream, NULL, args, 3, NULL);
    }
    kiln_blas_prof_end(ctx, op);
    kiln_array_release(va);
    kiln_array_release(vb);
    kiln_array_release(vc);
    return s;
}

/* ------------------------------------------------------------ the library path */

/* The batch dims, merged where all three operands step uniformly, so that
 * each run of merged dims is one strided-batched call. */
typedef struct batch_plan {
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    int64_t stride[3][KILN_MAX_DIMS]; /* elements; A, B, C */
} batch_plan;

static int elem_stride(int64_t bytes, int64_t size, int64_t *out) {
    if (bytes % size != 0) return 0;
    *out = bytes / size;
    return 1;
}

/* A matrix operand's batch stride along C's batch dim d (0 where broadcast). */
static int64_t batch_stride_bytes(const blas_mat *M, int nbatch_c, int d) {
    int off = nbatch_c - (M->ndim - 2); /* M's batch dims are right-aligned with C's */
    if (d < off) return 0;
    int md = d - off;
    return M->shape[md] == 1 ? 0 : M->strides[md];
}

static int plan_batch(const blas_mat *const ops[3], int nb, const int64_t *bshape, int64_t size,
                      batch_plan *p) {
    p->ndim = 0;
    for (int d = 0; d < nb; d++) {
        if (bshape[d] == 1) continue;
        int64_t st[3];
        for (int o = 0; o < 3; o++)
            if (!elem_stride(batch_stride_bytes(ops[o], nb, d), size, &st[o])) return 0;
        int j = p->ndim;
        if (j > 0) {
            int merge = 1;
            for (int o = 0; o < 3; o++) merge &= p->stride[o][j - 1] == st[o] * bshape[d];
            if (merge) {
                p->shape[j - 1] *= bshape[d];
                for (int o = 0; o < 3; o++) p->stride[o][j - 1] = st[o];
                continue;
            }
        }
        p->shape[j] = bshape[d];
        for (int o = 0; o < 3; o++) p->stride[o][j] = st[o];
        p->ndim++;
    }
    return 1;
}

/* 1 when kiln's tiled kernel can take the batch: strides in whole
 * elements, batch dims that step each operand uniformly (*strides). */
static int small_kernel_takes(const blas_mat *A, const blas_mat *B, const blas_mat *C, kiln_blas_scalar alpha,
                              kiln_blas_scalar beta, int64_t strides[3]) {
    kiln_dtype t = C->arr->dtype;
    int64_t m = C->shape[C->ndim - 2], n = C->shape[C->ndim - 1], k = A->shape[A->ndim - 1];
    if (alpha.im != 0 || beta.im != 0 || A->conj || B->conj || !kiln_blas_small_fits(t, m, n, k)) return 0;
    const blas_mat *ops[3] = {A, B, C};
    int64_t size = (int64_t)kiln_dtype_size(t);
    for (int o = 0; o < 3; o++)
        if (ops[o]->strides[ops[o]->ndim - 1] % size || ops[o]->strides[ops[o]->ndim - 2] % size) return 0;
    batch_plan bp;
    if (!plan_batch(ops, C->ndim - 2, C->shape, size, &bp) || bp.ndim > 1) return 0;
    for (int o = 0; o < 3; o++) strides[o] = bp.ndim ? bp.stride[o][0] : 0;
    return 1;
}

static int small_choice(const blas_provider *prov, const blas_mat *A, const blas_mat *B, const blas_mat *C,
                        int64_t batch, int flags, kiln_blas_scalar alpha, kiln_blas_scalar beta,
                        int64_t strides[3]) {
    kiln_dtype t = C->arr->dtype;
    int64_t m = C->shape[C->ndim - 2], n = C->shape[C->ndim - 1], k = A->shape[A->ndim - 1];
    if (flags & KILN_BLAS_FORCE_LIBRARY) return SMALL_NONE;
    /* kiln's kernels take device arrays; the library path stages host ones */
    if (kiln_blas_host_only(A->arr) || kiln_blas_host_only(B->arr) || kiln_blas_host_only(C->arr))
        return SMALL_NONE;
    int gufunc = (t == KILN_FLOAT32 || t == KILN_FLOAT64) && is_one(alpha) && is_zero(beta);
    int64_t dim = kiln_blas_small_max_dim(prov, t);
    int wanted =
        (flags & KILN_BLAS_FORCE_KILN) || (m <= dim && n <= dim && k <= dim && batch >= SMALL_MIN_BATCH);
    if (!wanted) return SMALL_NONE;
    if ((prov->small_tiled || !gufunc) && small_kernel_takes(A, B, C, alpha, beta, strides))
        return SMALL_KERNEL;
    return gufunc ? SMALL_GUFUNC : SMALL_NONE;
}

/* How one operand of the column-major problem is stored: the row-major
 * (rows x cols) matrix with byte strides (sr, sc). */
static int map_operand(const char *data, int conj, int64_t rows, int64_t cols, int64_t sr, int64_t sc,
                       int64_t size, blas_operand *out, int *conj_fail) {
    int64_t er, ec;
    if (!elem_stride(sr, size, &er) || !elem_stride(sc, size, &ec)) return 0;
    if (!kiln_blas_matrix_layout(rows, cols, er, ec, &out->trans, &out->ld)) return 0;
    /* The BLAS conjugates only with a transpose (CblasConjTrans,
     * CUBLAS_OP_C): a conjugated operand stored as itself is copied, unless
     * it is a row or column, which reads as stored transposed just as well. */
    if (conj && !out->trans) {
        int64_t min_t = cols > 1 ? cols : 1, l = rows <= 1 ? min_t : er;
        if (!((cols <= 1 || ec == 1) && l >= min_t)) {
            *conj_fail = 1;
            return 0;
        }
        out->trans = 1;
        out->ld = l;
    }
    out->conj = conj;
    out->data = data;
    return 1;
}

static int64_t last(const blas_mat *M, int from_end) { return M->shape[M->ndim - from_end]; }
static int64_t last_stride(const blas_mat *M, int from_end) { return M->strides[M->ndim - from_end]; }

/* Fills the problem's operands for C (rows-major m x n): as C itself
 * (column-major C = A B) when C's columns are contiguous, else as C^T
 * (C^T = B^T A^T) when its rows are. 0: C cannot be expressed; *which
 * says which operand (0 A, 1 B, 2 C) failed. */
static int map_problem(const blas_mat *A, const blas_mat *B, const blas_mat *C, blas_gemm_problem *p,
                       int *which, int *swapped, int *conj_fail) {
    int64_t size = (int64_t)kiln_dtype_size(C->arr->dtype);
    int64_t m = last(C, 2), n = last(C, 1), k = last(A, 1);
    int64_t ecr, ecc;
    int c_trans;
    *which = 2;
    *conj_fail = 0;
    if (!elem_stride(last_stride(C, 2), size, &ecr) || !elem_stride(last_stride(C, 1), size, &ecc) ||
        !kiln_blas_matrix_layout(m, n, ecr, ecc, &c_trans, &p->ldc))
        return 0;
    p->c = C->arr->data;
    *swapped = c_trans;
    if (c_trans) { /* stored C^T (n x m) = B^T (n x k) A^T (k x m) */
        p->m = n;
        p->n = m;
        p->k = k;
        *which = 1;
        if (!map_operand(B->arr->data, B->conj, n, k, last_stride(B, 1), last_stride(B, 2), size, &p->a,
                         conj_fail))
            return 0;
        *which = 0;
        return map_operand(A->arr->data, A->conj, k, m, last_stride(A, 1), last_stride(A, 2), size, &p->b,
                           conj_fail);
    }
    p->m = m;
    p->n = n;
    p->k = k;
    *which = 0;
    if (!map_operand(A->arr->data, A->conj, m, k, last_stride(A, 2), last_stride(A, 1), size, &p->a,
                     conj_fail))
        return 0;
    *which = 1;
    return map_operand(B->arr->data, B->conj, k, n, last_stride(B, 2), last_stride(B, 1), size, &p->b,
                       conj_fail);
}

/* Replaces operand M by a contiguous copy of its matrices (broadcast batch
 * dims stay broadcast: the copy has M's own shape); a conjugated operand
 * by a copy of its conjugate. */
static kiln_status stage_operand(blas_mat *M, kiln_stream *stream, const char *why, kiln_array **keep) {
    kiln_array *view = NULL, *copy = NULL, *dev = NULL;
    kiln_status s = kiln_blas_view(M->arr, M->ndim, M->shape, M->strides, 0, &view);
    if (s == KILN_OK && M->conj) {
        kiln_array *src = view; /* the conjugating kernel reads device memory */
        if (kiln_blas_host_only(view)) {
            s = kiln_blas_stage(view, stream, why, &dev);
            src = dev;
        }
        if (s == KILN_OK) s = kiln_blas_conjugate(src, stream, why, &copy);
    } else if (s == KILN_OK) {
        s = kiln_blas_stage(view, stream, why, &copy);
    }
    kiln_array_release(view);
    kiln_array_release(dev);
    if (s != KILN_OK) return s;
    M->conj = 0;
    M->arr = copy;
    memcpy(M->strides, copy->strides, sizeof M->strides);
    *keep = copy;
    return KILN_OK;
}

static const char *const operand_names[3] = {"a", "b", "c"};

/* A batch that does not merge into one stride, as many runs: one call over
 * arrays of matrix addresses where the provider has one (cuBLAS) and the
 * runs are many, else a loop of strided-batched calls. */
enum { POINTERS_MIN_OUTER = 8 };

static kiln_status run_pointers(kiln_context *ctx, kiln_stream *stream, const blas_provider *prov,
                                const blas_gemm_problem *p, int sa, int sb, const batch_plan *bp,
                                int64_t outer, size_t size) {
    int inner = bp->ndim - 1;
    int64_t count = outer * p->batch;
    const void **ptrs = malloc(3 * (size_t)count * sizeof *ptrs);
    if (!ptrs)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %lld gemm addresses",
                              (long long)count);
    int64_t idx[KILN_MAX_DIMS] = {0}, e = 0;
    for (int64_t q = 0; q < outer; q++) {
        int64_t off[3] = {0, 0, 0}; /* elements, for A, B, C */
        for (int d = 0; d < inner; d++)
            for (int o = 0; o < 3; o++) off[o] += idx[d] * bp->stride[o][d];
        for (int64_t j = 0; j < p->batch; j++, e++) {
            ptrs[e] = p->a.data + (off[sa] + j * p->a.batch_stride) * (int64_t)size;
            ptrs[count + e] = p->b.data + (off[sb] + j * p->b.batch_stride) * (int64_t)size;
            ptrs[2 * count + e] = p->c + (off[2] + j * p->stride_c) * (int64_t)size;
        }
        for (int d = inner - 1; d >= 0; d--) {
            if (++idx[d] < bp->shape[d]) break;
            idx[d] = 0;
        }
    }
    blas_gemm_problem all = *p;
    all.batch = count;
    kiln_status s = prov->gemm_pointers(ctx, stream, &all, ptrs);
    free(ptrs);
    return s;
}

static char op_letter(const blas_operand *o) { return o->conj ? 'C' : o->trans ? 'T' : 'N'; }

static kiln_status run_library(kiln_context *ctx, kiln_stream *stream, const blas_provider *prov,
                               const blas_gemm_problem *base, int swapped, const batch_plan *bp,
                               kiln_dtype dtype) {
    blas_gemm_problem p = *base;
    int sa = swapped ? 1 : 0, sb = swapped ? 0 : 1; /* which of A, B sits in the problem's slots */
    int inner = bp->ndim - 1;                       /* the innermost run: one strided-batched call */
    p.batch = inner >= 0 ? bp->shape[inner] : 1;
    p.a.batch_stride = inner >= 0 ? bp->stride[sa][inner] : 0;
    p.b.batch_stride = inner >= 0 ? bp->stride[sb][inner] : 0;
    p.stride_c = inner >= 0 ? bp->stride[2][inner] : 0;
    int64_t outer = 1;
    for (int d = 0; d < inner; d++) outer *= bp->shape[d];
    kiln_status s = kiln_blas_check_int("batch", p.batch);
    int use_pointers = prov->gemm_pointers && outer >= POINTERS_MIN_OUTER;
    if (use_pointers) s = kiln_blas_check_int("batch", outer * p.batch);
    char label[64] = ""; /* "cuBLAS strided-batched", "OpenBLAS gemm", ... */
    if (KILN_PROF_ON(ctx)) {
        if (use_pointers)
            snprintf(label, sizeof label, "%s batched, pointer arrays", prov->base.name);
        else if (outer > 1 && p.batch > 1)
            snprintf(label, sizeof label, "%s %s, looped", prov->base.name, prov->batch_label);
        else if (outer > 1)
            snprintf(label, sizeof label, "%s looped", prov->base.name);
        else
            snprintf(label, sizeof label, "%s %s", prov->base.name, p.batch > 1 ? prov->batch_label : "gemm");
    }
    int64_t total = outer * p.batch;
    double flops = (dtype == KILN_COMPLEX64 || dtype == KILN_COMPLEX128 ? 8.0 : 2.0) * (double)total *
                   (double)p.m * (double)p.n * (double)p.k;
    struct kiln_prof_op *op =
        s == KILN_OK
            ? kiln_blas_prof_begin(ctx, stream, "gemm", dtype, label, flops,
                                   "batch %lld of column-major m %lld n %lld k %lld, op %c%c, ld %lld "
                                   "%lld %lld",
                                   (long long)total, (long long)p.m, (long long)p.n, (long long)p.k,
                                   op_letter(&p.a), op_letter(&p.b), (long long)p.a.ld, (long long)p.b.ld,
                                   (long long)p.ldc)
            : NULL;
    size_t size = kiln_dtype_size(dtype);
    if (s == KILN_OK && use_pointers) {
        s = run_pointers(ctx, stream, prov, &p, sa, sb, bp, outer, size);
        kiln_blas_prof_end(ctx, op);
        return s == KILN_OK ? KILN_OK : kiln_context_note(ctx, s);
    }
    int64_t idx[KILN_MAX_DIMS] = {0};
    for (int64_t q = 0; q < outer && s == KILN_OK; q++) {
        int64_t off[3] = {0, 0, 0}; /* elements, for A, B, C */
        for (int d = 0; d < inner; d++)
            for (int o = 0; o < 3; o++) off[o] += idx[d] * bp->stride[o][d];
        blas_gemm_problem call = p;
        call.a.data = p.a.data + off[sa] * (int64_t)size;
        call.b.data = p.b.data + off[sb] * (int64_t)size;
        call.c = p.c + off[2] * (int64_t)size;
        s = prov->gemm(ctx, stream, &call);
        for (int d = inner - 1; d >= 0; d--) {
            if (++idx[d] < bp->shape[d]) break;
            idx[d] = 0;
        }
    }
    kiln_blas_prof_end(ctx, op);
    return s == KILN_OK ? KILN_OK : kiln_context_note(ctx, s);
}

static kiln_status check_sizes(const blas_gemm_problem *p) {
    kiln_status s = kiln_blas_check_int("m", p->m);
    if (s == KILN_OK) s = kiln_blas_check_int("n", p->n);
    if (s == KILN_OK) s = kiln_blas_check_int("k", p->k);
    if (s == KILN_OK) s = kiln_blas_check_int("lda", p->a.ld);
    if (s == KILN_OK) s = kiln_blas_check_int("ldb", p->b.ld);
    if (s == KILN_OK) s = kiln_blas_check_int("ldc", p->ldc);
    return s;
}

blas_mat kiln_blas_mat_whole(kiln_array *a) {
    blas_mat m;
    memset(&m, 0, sizeof m);
    m.arr = a;
    m.ndim = a->ndim;
    memcpy(m.shape, a->shape, sizeof m.shape);
    memcpy(m.strides, a->strides, sizeof m.strides);
    return m;
}

/* x (any dtype that casts safely to f's input) through the one-signature
 * ufunc f into a new contiguous array of dtype `to`, on `stream`. */
static kiln_status convert_into_new(kiln_ufunc *f, kiln_stream *stream, kiln_array *x, kiln_dtype to,
                                    kiln_array **out) {
    kiln_status s = kiln_array_empty(x->ctx, to, x->ndim, x->shape, out);
    const kiln_value arg = kiln_arr(x);
    if (s == KILN_OK) s = kiln_call_ex(f, NULL, stream, &arg, 1, out);
    return s;
}

/* bfloat16 on the CPU: Debian 12's OpenBLAS 0.3.21 exports no cblas_sbgemm
 * (nm -D libopenblas.so.0), so the operands are widened to float32 (exact),
 * the product runs as SGEMM (float32 accumulation, as cuBLAS's bfloat16
 * gemm does) and C is rounded back to bfloat16 once (nearest even). The
 * copies show in KILN_PROFILE as "blas via float32, copies in bfloat16
 * [kiln]" and "... copy out ..." rows next to the conversion kernels and
 * the SGEMM's own row. */
static kiln_status gemm_bf16_via_f32(kiln_context *ctx, kiln_stream *stream, int flags,
                                     kiln_blas_scalar alpha, blas_mat A, blas_mat B, kiln_blas_scalar beta,
                                     blas_mat C) {
    kiln_ufunc *widen = NULL, *narrow = NULL;
    kiln_status s = kiln_blas_converter(ctx, KILN_FLOAT32, &widen);
    if (s == KILN_OK) s = kiln_blas_bf16_rounder(ctx, &narrow);
    kiln_array *va = NULL, *vb = NULL, *vc = NULL, *fa = NULL, *fb = NULL, *fc = NULL;
    if (s == KILN_OK) s = kiln_blas_view(A.arr, A.ndim, A.shape, A.strides, 0, &va);
    if (s == KILN_OK) s = kiln_blas_view(B.arr, B.ndim, B.shape, B.strides, 0, &vb);
    if (s == KILN_OK) s = kiln_blas_view(C.arr, C.ndim, C.shape, C.strides, 0, &vc);
    char sa[96], sb[96], sc[96];
    struct kiln_prof_op *op =
        s == KILN_OK ? kiln_blas_prof_begin(ctx, stream, "via float32, copies in", KILN_BFLOAT16, "kiln", 0,
                                            "a %s, b %s%s: OpenBLAS 0.3.21 has no bfloat16 gemm",
                                            kiln_shape_format(va->ndim, va->shape, sa, sizeof sa),
                                            kiln_shape_format(vb->ndim, vb->shape, sb, sizeof sb),
                                            is_zero(beta) ? "" : ", c (beta != 0)")
                     : NULL;
    if (s == KILN_OK) s = convert_into_new(widen, stream, va, KILN_FLOAT32, &fa);
    if (s == KILN_OK) s = convert_into_new(widen, stream, vb, KILN_FLOAT32, &fb);
    if (s == KILN_OK && !is_zero(beta)) s = convert_into_new(widen, stream, vc, KILN_FLOAT32, &fc);
    if (s == KILN_OK && is_zero(beta)) s = kiln_array_empty(ctx, KILN_FLOAT32, vc->ndim, vc->shape, &fc);
    kiln_blas_prof_end(ctx, op);
    if (s == KILN_OK)
        s = kiln_blas_gemm_core(ctx, stream, flags, alpha, kiln_blas_mat_whole(fa), kiln_blas_mat_whole(fb),
                                beta, kiln_blas_mat_whole(fc));
    op = s == KILN_OK ? kiln_blas_prof_begin(ctx, stream, "via float32, copy out", KILN_BFLOAT16, "kiln", 0,
                                             "c %s rounded to bfloat16",
                                             kiln_shape_format(vc->ndim, vc->shape, sc, sizeof sc))
                      : NULL;
    if (s == KILN_OK) {
        const kiln_value arg = kiln_arr(fc);
        s = kiln_call_ex(narrow, NULL, stream, &arg, 1, &vc);
    }
    kiln_blas_prof_end(ctx, op);
    kiln_array *all[6] = {va, vb, vc, fa, fb, fc};
    for (int i = 0; i < 6; i++) kiln_array_release(all[i]);
    return s == KILN_OK ? KILN_OK : kiln_prefix_error(s, "bfloat16 gemm on the CPU (via float32): ");
}

kiln_status kiln_blas_gemm_core(kiln_context *ctx, kiln_stream *stream, int flags, kiln_blas_scalar alpha,
                                blas_mat A, blas_mat B, kiln_blas_scalar beta, blas_mat C) {
    kiln_blas_state *st;
    kiln_status s = kiln_blas_state_get(ctx, &st);
    if (s != KILN_OK) return s;
    kiln_dtype dtype = C.arr->dtype;
    if (dtype == KILN_FLOAT16 && !st->provider->half_gemm)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "float16 matmul runs on CUDA only (cuBLAS tensor cores); %s has no float16 "
                              "gemm: convert to float32",
                              st->provider->base.name);
    if (dtype == KILN_BFLOAT16 && !st->provider->half_gemm) {
        int nbc = C.ndim - 2;
        if (kiln_shape_size(nbc, C.shape) == 0 || C.shape[nbc] == 0 || C.shape[nbc + 1] == 0) return KILN_OK;
        return gemm_bf16_via_f32(ctx, stream, flags, alpha, A, B, beta, C);
    }
    int nb = C.ndim - 2;
    int64_t batch = kiln_shape_size(nb, C.shape);
    int64_t m = C.shape[nb], n = C.shape[nb + 1];
    if (batch == 0 || m == 0 || n == 0) return KILN_OK;
    int64_t small_strides[3];
    switch (small_choice(st->provider, &A, &B, &C, batch, flags, alpha, beta, small_strides)) {
    case SMALL_KERNEL: return kiln_blas_small_run(ctx, stream, &A, &B, &C, batch, small_strides, alpha, beta);
    case SMALL_GUFUNC: return run_small(ctx, stream, &A, &B, &C, batch);
    default: break;
    }

    kiln_array *keep[4] = {NULL, NULL, NULL, NULL}; /* staged copies of A, B, C; C's original */
    int64_t size = (int64_t)kiln_dtype_size(dtype);
    /* Host memory the device cannot read is not the library's to read. */
    if (kiln_blas_host_only(A.arr)) s = stage_operand(&A, stream, "a is in host memory", &keep[0]);
    if (s == KILN_OK && kiln_blas_host_only(B.arr))
        s = stage_operand(&B, stream, "b is in host memory", &keep[1]);
    blas_gemm_problem p;
    memset(&p, 0, sizeof p);
    int which = -1, swapped = 0, ready = 0;
    batch_plan bp;
    memset(&bp, 0, sizeof bp);
    for (int attempt = 0; attempt < 4 && s == KILN_OK; attempt++) {
        const blas_mat *ops[3] = {&A, &B, &C};
        int c_host = kiln_blas_host_only(C.arr);
        int conj_fail = 0;
        int mapped = !c_host && map_problem(&A, &B, &C, &p, &which, &swapped, &conj_fail);
        if (c_host) which = 2;
        int batched = mapped && plan_batch(ops, nb, C.shape, size, &bp);
        if (mapped && !batched) {
            /* a batch stride that is not a whole number of elements */
            which = 0;
            for (int d = 0; d < nb; d++)
                for (int o = 0; o < 3; o++)
                    if (batch_stride_bytes(ops[o], nb, d) % size) which = o;
        }
        if (mapped && batched) {
            ready = 1;
            break;
        }
        if (which < 0 || (which == 2 && keep[3])) break; /* cannot happen: staged copies are contiguous */
        char why[128];
        if (conj_fail)
            snprintf(why, sizeof why,
                     "conj(%s) untransposed in the library's terms: BLAS conjugates only with a transpose",
                     operand_names[which]);
        else
            snprintf(why, sizeof why, "%s's layout has no BLAS leading dimension", operand_names[which]);
        if (which == 2) {
            /* compute into a contiguous C, then assign it back */
            kiln_array *orig = NULL;
            s = kiln_blas_view(C.arr, C.ndim, C.shape, C.strides, 0, &orig);
            if (s == KILN_OK) s = stage_operand(&C, stream, c_host ? "c is in host memory" : why, &keep[2]);
            keep[3] = orig;
        } else {
            blas_mat *M = which == 0 ? &A : &B;
            if (keep[which]) { /* already contiguous: cannot fail twice */
                s = kiln_set_error(KILN_ERR_INTERNAL, "blas: staged %s still not expressible",
                                   operand_names[which]);
                break;
            }
            s = stage_operand(M, stream, why, &keep[which]);
        }
    }
    if (s == KILN_OK && !ready)
        s = kiln_set_error(KILN_ERR_INTERNAL, "blas: no BLAS layout for the operands even after copying %s",
                           which >= 0 ? operand_names[which] : "?");
    if (s == KILN_OK) s = check_sizes(&p);
    if (s == KILN_OK) {
        p.dtype = dtype;
        p.alpha = alpha;
        p.beta = beta;
        p.allow_tf32 = (flags & KILN_BLAS_ALLOW_TF32) != 0;
        s = run_library(ctx, stream, st->provider, &p, swapped, &bp, dtype);
    }
    if (s == KILN_OK && stream) { /* frees of these arrays wait for the library's work */
        kiln_array_note_stream(A.arr, stream);
        kiln_array_note_stream(B.arr, stream);
        kiln_array_note_stream(C.arr, stream);
    }
    if (s == KILN_OK && keep[3]) {
        /* the result back into the caller's C (kiln_array_assign works on the default stream) */
        if (stream) s = ctx->ops->stream_synchronize(ctx->state, kiln_stream_impl(stream));
        if (s == KILN_OK) s = kiln_array_assign(keep[3], keep[2]);
    }
    for (int i = 0; i < 4; i++) kiln_array_release(keep[i]);
    return s;
}
