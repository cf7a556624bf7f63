/* plan.c: from the operands of a call to a kernel variant and its arguments:
 * NumPy dispatch and broadcasting, overlap checks, dimension coalescing,
 * layout choice, and the launch geometry. Nothing here allocates. */
#include "ufunc/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "kernel/module.h"

/* ---------------------------------------------------------------- messages */

void uf_describe_args(const kiln_value *args, int nargs, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < nargs && n + 1 < cap; i++) {
        const kiln_value *v = &args[i];
        char shape[160];
        if (v->kind == KILN_VALUE_ARRAY && v->as.array)
            n += (size_t)snprintf(
                buf + n, cap - n, "%s%s array %s", i ? ", " : "", kiln_dtype_code(v->as.array->dtype),
                kiln_shape_format(v->as.array->ndim, v->as.array->shape, shape, sizeof shape));
        else if (v->kind == KILN_VALUE_SCALAR)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s scalar", i ? ", " : "", kiln_dtype_code(v->dtype));
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "",
                                  v->kind == KILN_VALUE_POINTER ? "pointer" : "?");
    }
}

/* ---------------------------------------------------------------- dispatch */

/* Can scalar v be represented in dtype `to`? (NumPy 1.x value-based casting
 * for scalars: an int that fits, a float within range.) */
static int scalar_value_fits(const kiln_value *v, kiln_dtype to) {
    char fk = kiln_dtype_kind(v->dtype), tk = kiln_dtype_kind(to);
    if (kiln_dtype_can_cast(v->dtype, to)) return 1;
    if (fk == 'b') return tk != 'b' ? 1 : 0;
    if (fk == 'i' || fk == 'u') {
        if (tk == 'f' || tk == 'c') return 1;
        if (tk != 'i' && tk != 'u') return 0;
        size_t bits = kiln_dtype_size(to) * 8;
        if (fk == 'u') {
            uint64_t max = tk == 'u' ? (bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1)
                                     : (UINT64_C(1) << (bits - 1)) - 1;
            return v->as.u <= max;
        }
        if (tk == 'u') return v->as.i >= 0 && (bits == 64 || (uint64_t)v->as.i < (UINT64_C(1) << bits));
        if (bits == 64) return 1;
        int64_t lim = INT64_C(1) << (bits - 1);
        return v->as.i >= -lim && v->as.i < lim;
    }
    if (fk == 'f' && (tk == 'f' || tk == 'c')) {
        double x = v->as.c[0], max = to == KILN_FLOAT16                             ? 65504.0
                                     : to == KILN_BFLOAT16                          ? 3.3895313892515355e38
                                     : (to == KILN_FLOAT32 || to == KILN_COMPLEX64) ? 3.4028234663852886e38
                                                                                    : 1.7976931348623157e308;
        return !isfinite(x) || fabs(x) <= max;
    }
    if (fk == 'c' && tk == 'c') {
        double max = to == KILN_COMPLEX64 ? 3.4028234663852886e38 : 1.7976931348623157e308;
        return (!isfinite(v->as.c[0]) || fabs(v->as.c[0]) <= max) &&
               (!isfinite(v->as.c[1]) || fabs(v->as.c[1]) <= max);
    }
    return 0;
}

static kiln_dtype arg_dtype(const kiln_value *v) {
    return v->kind == KILN_VALUE_ARRAY ? v->as.array->dtype : v->dtype;
}

/* Integer scalars are weak, as Python ints are in NumPy 2 (NEP 50): they
 * take the other operands' type when their value fits it (float32 array +
 * kiln_i64(3) stays float32), instead of pulling the call to float64 now
 * that int64 -> float64 is a safe cast. Float scalars are typed. */
static int weak_scalar(const kiln_value *v) {
    char k = kiln_dtype_kind(v->dtype);
    return v->kind == KILN_VALUE_SCALAR && (k == 'i' || k == 'u');
}

kiln_status uf_dispatch(const kiln_ufunc *f, const kiln_value *args, int *sig_out) {
    /* pass 0: exact; 1: NumPy safe casting; 2: safe casting, scalars by value */
    for (int pass = 0; pass < 3; pass++)
        for (int k = 0; k < f->nsig; k++) {
            const uf_signature *g = &f->sigs[k];
            int ok = 1;
            for (int i = 0; i < f->nin && ok; i++) {
                kiln_dtype dt = arg_dtype(&args[i]);
                if (pass == 0)
                    ok = dt == g->in[i];
                else if (args[i].kind == KILN_VALUE_ARRAY || (pass == 1 && !weak_scalar(&args[i])))
                    ok = kiln_dtype_can_cast(dt, g->in[i]);
                else
                    ok = scalar_value_fits(&args[i], g->in[i]);
            }
            if (ok) {
                *sig_out = k;
                return KILN_OK;
            }
        }
    char desc[1024];
    uf_describe_args(args, f->nin, desc, sizeof desc);
    return kiln_set_error(
        KILN_ERR_DTYPE,
        "%s: no signature matches the arguments (%s); the signatures are %s, and inputs are cast "
        "only where NumPy's safe casting allows",
        f->name, desc, f->sig_list);
}

/* A scalar argument converted to the signature's compute type. */
kiln_value uf_scalar_for(const kiln_value *v, kiln_dtype sig_type) {
    char fk = kiln_dtype_kind(v->dtype);
    double re = fk == 'i' ? (double)v->as.i : (fk == 'u' || fk == 'b') ? (double)v->as.u : v->as.c[0];
    double im = fk == 'c' ? v->as.c[1] : 0.0;
    switch (kiln_dtype_kind(sig_type)) {
    case 'b': return kiln_bool(fk == 'c' ? (re != 0 || im != 0) : fk == 'f' ? re != 0 : v->as.u != 0);
    case 'i':
        return kiln_scalar_i_(sig_type, fk == 'u' || fk == 'b' ? (int64_t)v->as.u
                                        : fk == 'i'            ? v->as.i
                                                               : (int64_t)re);
    case 'u':
        return kiln_scalar_u_(sig_type, fk == 'i'                ? (uint64_t)v->as.i
                                        : fk == 'u' || fk == 'b' ? v->as.u
                                                                 : (uint64_t)re);
    case 'c': return kiln_scalar_f_(sig_type, re, im);
    default:
        if (kiln_dtype_is_half(sig_type)) return kiln_f32((float)re);
        if (sig_type == KILN_FLOAT32) return kiln_f32((float)re);
        /* int64 -> double keeps the integer exactly when it can */
        return kiln_f64(fk == 'i' ? (double)v->as.i : fk == 'u' ? (double)v->as.u : re);
    }
}

/* ---------------------------------------------------------------- shapes */

static const char *shape_text(int nd, const int64_t *shape, char *buf, size_t cap) {
    return kiln_shape_format(nd, shape, buf, cap);
}

/* Broadcasts (nd, shape) with (bnd, bshape) into (nd, shape). 0 on mismatch
 * (*bad_dim gets the dim, counted in the result). */
static int broadcast_into(int *nd, int64_t *shape, int bnd, const int64_t *bshape, int *bad_dim) {
    int rnd = *nd > bnd ? *nd : bnd;
    int64_t r[KILN_MAX_DIMS];
    for (int d = 0; d < rnd; d++) {
        int ia = d - (rnd - *nd), ib = d - (rnd - bnd);
        int64_t a = ia >= 0 ? shape[ia] : 1, b = ib >= 0 ? bshape[ib] : 1;
        if (a == b || b == 1)
            r[d] = a;
        else if (a == 1)
            r[d] = b;
        else {
            *bad_dim = d;
            return 0;
        }
    }
    *nd = rnd;
    memcpy(shape, r, sizeof(int64_t) * (size_t)rnd);
    return 1;
}

kiln_status uf_broadcast(const kiln_ufunc *f, const kiln_value *args, kiln_array *const *outs, int *nd_out,
                         int64_t *shape) {
    int nd = 0;
    int first = -1;
    for (int i = 0; i < f->nin; i++) {
        if (args[i].kind != KILN_VALUE_ARRAY) continue;
        const kiln_array *a = args[i].as.array;
        int save_nd = nd, bad = 0;
        int64_t save[KILN_MAX_DIMS];
        memcpy(save, shape, sizeof save);
        if (!broadcast_into(&nd, shape, a->ndim, a->shape, &bad)) {
            char s1[256], s2[256];
            int rnd = save_nd > a->ndim ? save_nd : a->ndim;
            int ia = bad - (rnd - save_nd), ib = bad - (rnd - a->ndim);
            /* Name the one input the shape so far came from, when it is one. */
            char from[32];
            if (first >= 0 && save_nd == args[first].as.array->ndim &&
                memcmp(save, args[first].as.array->shape, sizeof(int64_t) * (size_t)save_nd) == 0)
                snprintf(from, sizeof from, "input %d", first);
            else
                snprintf(from, sizeof from, "inputs before %d", i);
            return kiln_set_error(
                KILN_ERR_SHAPE,
                "%s: cannot broadcast shapes %s (%s) and %s (input %d): dim %d is %lld vs %lld", f->name,
                shape_text(save_nd, save, s1, sizeof s1), from, shape_text(a->ndim, a->shape, s2, sizeof s2),
                i, bad, (long long)save[ia], (long long)a->shape[ib]);
        }
        if (first < 0) first = i;
    }
    /* Outputs may be larger than the inputs' broadcast (NumPy's out=). */
    for (int j = 0; j < f->nout; j++) {
        const kiln_array *o = outs ? outs[j] : NULL;
        if (!o) continue;
        int tnd = nd, bad = 0;
        int64_t t[KILN_MAX_DIMS];
        memcpy(t, shape, sizeof t);
        if (!broadcast_into(&tnd, t, o->ndim, o->shape, &bad) || tnd != o->ndim ||
            memcmp(t, o->shape, sizeof(int64_t) * (size_t)tnd) != 0) {
            char s1[256], s2[256];
            return kiln_set_error(KILN_ERR_SHAPE, "%s: output %d has shape %s but the inputs broadcast to %s",
                                  f->name, j, shape_text(o->ndim, o->shape, s1, sizeof s1),
                                  shape_text(nd, shape, s2, sizeof s2));
        }
        nd = tnd;
        memcpy(shape, t, sizeof(int64_t) * (size_t)tnd);
    }
    for (int j = 0; j < f->nout; j++) {
        const kiln_array *o = outs ? outs[j] : NULL;
        if (o && (o->ndim != nd || memcmp(o->shape, shape, sizeof(int64_t) * (size_t)nd) != 0)) {
            char s1[256], s2[256];
            return kiln_set_error(
                KILN_ERR_SHAPE, "%s: output %d has shape %s but the other outputs have shape %s", f->name, j,
                shape_text(o->ndim, o->shape, s1, sizeof s1), shape_text(nd, shape, s2, sizeof s2));
        }
    }
    *nd_out = nd;
    return KILN_OK;
}

/* Strides of a broadcast to (nd, shape): 0 along new and size-1 dims. */
static void broadcast_strides(const kiln_array *a, int nd, const int64_t *shape, int64_t *strides) {
    for (int d = 0; d < nd; d++) {
        int ad = d - (nd - a->ndim);
        strides[d] = (ad < 0 || a->shape[ad] == 1 || shape[d] == 1) ? 0 : a->strides[ad];
    }
}

kiln_status uf_check_overlap(const kiln_ufunc *f, const kiln_value *args, kiln_array *const *outs, int nd,
                             const int64_t *shape) {
    if (kiln_shape_size(nd, shape) == 0) return KILN_OK;
    for (int j = 0; j < f->nout; j++) {
        const kiln_array *o = outs[j];
        if (!o) continue;
        char *olo, *ohi;
        kiln_array_byte_extent(o, &olo, &ohi);
        for (int k = 0; k < j; k++) {
            const kiln_array *p = outs[k];
            if (!p) continue;
            char *plo, *phi;
            kiln_array_byte_extent(p, &plo, &phi);
            if (plo < ohi && olo < phi)
                return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: outputs %d and %d overlap in memory",
                                      f->name, k, j);
        }
        int64_t os[KILN_MAX_DIMS];
        broadcast_strides(o, nd, shape, os);
        for (int i = 0; i < f->nin; i++) {
            if (args[i].kind != KILN_VALUE_ARRAY) continue;
            const kiln_array *a = args[i].as.array;
            char *alo, *ahi;
            kiln_array_byte_extent(a, &alo, &ahi);
            if (!(alo < ohi && olo < ahi)) continue;
            int64_t as[KILN_MAX_DIMS];
            broadcast_strides(a, nd, shape, as);
            int same = a->data == o->data && kiln_dtype_size(a->dtype) == kiln_dtype_size(o->dtype) &&
                       memcmp(as, os, sizeof(int64_t) * (size_t)nd) == 0;
            if (!same)
                return kiln_set_error(
                    KILN_ERR_INVALID_ARGUMENT,
                    "%s: output %d overlaps input %d (%s) without being the same elements; only "
                    "exact in-place operation (same data, dtype size and strides) is allowed; copy "
                    "the input first",
                    f->name, j, i, f->in_names[i]);
        }
    }
    return KILN_OK;
}

/* ---------------------------------------------------------------- plan */

static int is_aligned(const void *p, size_t bytes) { return ((uintptr_t)p % bytes) == 0; }

void uf_build_plan(const kiln_ufunc *f, uf_backend backend, int sig, const kiln_value *args,
                   kiln_array *const *ins, kiln_array *const *outs, const kiln_dtype *out_dtypes, int nd,
                   const int64_t *shape, uf_plan *p) {
    const uf_signature *g = &f->sigs[sig];
    memset(&p->key, 0, sizeof p->key);
    p->key.backend = (uint8_t)backend;
    p->key.sig = (uint8_t)sig;
    p->key.nin = (uint8_t)f->nin;
    p->key.nout = (uint8_t)f->nout;
    p->n = kiln_shape_size(nd, shape);
    p->narr = 0;
    p->nscalars = 0;
    int64_t st[UF_MAX_OPS][KILN_MAX_DIMS];
    size_t item[UF_MAX_OPS];
    for (int j = 0; j < f->nout; j++) {
        const kiln_array *o = outs[j];
        p->key.out[j] = (uint8_t)(o ? o->dtype : out_dtypes[j]);
        item[p->narr] = kiln_dtype_size((kiln_dtype)p->key.out[j]);
        if (o)
            broadcast_strides(o, nd, shape, st[p->narr]);
        else
            kiln_contiguous_strides(nd, shape, item[p->narr], st[p->narr]);
        p->data[p->narr++] = o ? o->data : NULL;
    }
    for (int i = 0; i < f->nin; i++) {
        if (!ins[i]) {
            /* The kernel takes the signature's compute type whatever the
             * scalar's own dtype (kiln_i64(2) and kiln_f64(2) share one). */
            p->key.in[i] = (uint8_t)(g->in[i] | UF_SCALAR_BIT);
            p->scalars[i] = uf_scalar_for(&args[i], g->in[i]);
            p->nscalars++;
            continue;
        }
        const kiln_array *a = ins[i];
        p->key.in[i] = (uint8_t)a->dtype;
        item[p->narr] = kiln_dtype_size(a->dtype);
        broadcast_strides(a, nd, shape, st[p->narr]);
        p->data[p->narr++] = a->data;
    }
    /* Coalesce: drop size-1 dims, merge dims whose strides chain for every operand. */
    int cnd = 0;
    int64_t cshape[KILN_MAX_DIMS];
    int64_t cst[UF_MAX_OPS][KILN_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 1) continue;
        int merge = cnd > 0;
        for (int k = 0; k < p->narr && merge; k++) merge = cst[k][cnd - 1] == st[k][d] * shape[d];
        if (merge) {
            cshape[cnd - 1] *= shape[d];
            for (int k = 0; k < p->narr; k++) cst[k][cnd - 1] = st[k][d];
        } else {
            cshape[cnd] = shape[d];
            for (int k = 0; k < p->narr; k++) cst[k][cnd] = st[k][d];
            cnd++;
        }
    }
    int contiguous = cnd <= 1;
    for (int k = 0; k < p->narr && contiguous; k++) contiguous = cnd == 0 || cst[k][0] == (int64_t)item[k];
    p->nd = contiguous ? 0 : cnd;
    memcpy(p->shape, cshape, sizeof(int64_t) * (size_t)cnd);
    for (int k = 0; k < p->narr; k++) memcpy(p->strides[k], cst[k], sizeof(int64_t) * (size_t)cnd);

    /* Index width: 32 bits when every index and byte offset fits, with room
     * for the grid-stride step (index + total threads) not to overflow. */
    int idx32 = p->n <= INT32_MAX / 2;
    for (int k = 0; k < p->narr && idx32 && !contiguous; k++) {
        int64_t span = 0;
        for (int d = 0; d < cnd; d++) span += (cshape[d] - 1) * (cst[k][d] < 0 ? -cst[k][d] : cst[k][d]);
        idx32 = span < INT32_MAX;
    }
    p->key.idx32 = (uint8_t)(backend == UF_CUDA && idx32);
    p->key.layout = contiguous ? UF_CONTIG : UF_STRIDED;
    p->key.nd = (uint8_t)p->nd;
    p->key.vec = 1;
    if (contiguous && backend == UF_CUDA && p->narr > 0 && p->n >= f->vector_min_elements) {
        size_t maxitem = 0;
        for (int k = 0; k < p->narr; k++) maxitem = item[k] > maxitem ? item[k] : maxitem;
        int vec = (int)(16 / maxitem);
        int aligned = vec >= 2;
        for (int k = 0; k < p->narr && aligned; k++) aligned = is_aligned(p->data[k], item[k] * (size_t)vec);
        if (aligned) {
            p->key.layout = UF_VECTOR;
            p->key.vec = (uint8_t)vec;
        }
    }
}

int uf_plan_param_count(const uf_plan *p, const kiln_ufunc *f) {
    /* (the mixed kernel, 2 per input, runs only contiguous plans: nd = 0) */
    return f->nout + 2 * f->nin + 1 + (p->key.backend == UF_CPU) + p->nd * (1 + p->narr);
}

int uf_plan_args(const uf_plan *p, const kiln_ufunc *f, int mixed, int64_t n, int64_t chunk,
                 kiln_value *args) {
    int c = 0, k = 0;
    int idx32 = p->key.idx32;
#define UF_IDX(v) (idx32 ? kiln_i32((int32_t)(v)) : kiln_i64(v))
    for (int j = 0; j < f->nout; j++) args[c++] = kiln_ptr(p->data[k++], KILN_DTYPE_COUNT);
    for (int i = 0; i < f->nin; i++) {
        int scalar = (p->key.in[i] & UF_SCALAR_BIT) != 0;
        if (mixed) { /* a pointer (NULL for a scalar) and a value (unused for an array) */
            args[c++] = kiln_ptr(scalar ? NULL : p->data[k++], KILN_DTYPE_COUNT);
            const kiln_value zero = kiln_i64(0);
            args[c++] = scalar ? p->scalars[i] : uf_scalar_for(&zero, f->sigs[p->key.sig].in[i]);
        } else if (scalar) {
            args[c++] = p->scalars[i];
        } else {
            args[c++] = kiln_ptr(p->data[k++], KILN_DTYPE_COUNT);
        }
    }
    args[c++] = UF_IDX(n);
    if (p->key.backend == UF_CPU) args[c++] = kiln_i64(chunk);
    for (int d = 0; d < p->nd; d++) args[c++] = UF_IDX(p->shape[d]);
    for (k = 0; k < p->narr; k++)
        for (int d = 0; d < p->nd; d++) args[c++] = UF_IDX(p->strides[k][d]);
#undef UF_IDX
    return c;
}
