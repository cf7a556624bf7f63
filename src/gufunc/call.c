/* call.c: what a gufunc call means, before any kernel: operands, core dims
 * bound and the type signature dispatched (bind.c), loop dims broadcast,
 * outputs made, and the loop dims reordered and coalesced into as few as
 * possible (the innermost being the one of smallest stride) to fill a
 * gu_plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "gufunc/bind.h"

/* NumPy broadcasting of the loop dims (the dims before the core dims) of the
 * inputs; outputs must have the broadcast loop shape exactly. */
static kiln_status broadcast_loops(const kiln_gufunc *f, kiln_array *const *arr, int *lnd_out,
                                   int64_t *lshape) {
    const gu_layout *l = &f->layout;
    int lnd = 0, owner[KILN_MAX_DIMS];
    char a_text[256], b_text[256];
    for (int k = 0; k < l->nin + l->nout; k++)
        if (arr[k] && arr[k]->ndim - l->core_nd[k] > lnd) lnd = arr[k]->ndim - l->core_nd[k];
    for (int i = 0; i < lnd; i++) {
        lshape[i] = 1;
        owner[i] = -1;
    }
    for (int k = 0; k < l->nin + l->nout; k++) {
        const kiln_array *a = arr[k];
        if (!a) continue;
        int nd = a->ndim - l->core_nd[k];
        for (int i = 0; i < nd; i++) {
            int pos = lnd - nd + i;
            int64_t v = a->shape[i];
            if (v == lshape[pos] || v == 1) continue;
            /* Outputs take part too, as in NumPy (inputs broadcast to a given
             * output; a gufunc with no inputs loops over its outputs), but an
             * output itself never broadcasts: checked below. */
            if (lshape[pos] == 1) {
                lshape[pos] = v;
                owner[pos] = k;
                continue;
            }
            int o = owner[pos];
            if (k >= l->nin) break; /* reported below */
            const kiln_array *b = arr[o];
            return kiln_set_error(
                KILN_ERR_SHAPE,
                "%s: cannot broadcast the loop dims of input %d (%s) %s and input %d (%s) %s: "
                "loop dim %d is %lld vs %lld",
                f->name, o, f->names[o],
                kiln_shape_format(b->ndim - l->core_nd[o], b->shape, a_text, sizeof a_text), k, f->names[k],
                kiln_shape_format(nd, a->shape, b_text, sizeof b_text), pos, (long long)lshape[pos],
                (long long)v);
        }
    }
    for (int k = l->nin; k < l->nin + l->nout; k++) {
        const kiln_array *a = arr[k];
        if (!a) continue;
        int nd = a->ndim - l->core_nd[k];
        int same = nd == lnd;
        for (int i = 0; i < nd && same; i++) same = a->shape[i] == lshape[i];
        if (!same)
            return kiln_set_error(
                KILN_ERR_SHAPE, "%s: output %d (%s) has loop dims %s but the inputs broadcast to %s", f->name,
                k, f->names[k], kiln_shape_format(nd, a->shape, a_text, sizeof a_text),
                kiln_shape_format(lnd, lshape, b_text, sizeof b_text));
    }
    *lnd_out = lnd;
    return KILN_OK;
}

/* Element strides of operand k: loop strides over the broadcast loop shape
 * (0 where it broadcasts) and core strides. */
static kiln_status element_strides(const kiln_gufunc *f, int k, const kiln_array *a, int lnd,
                                   const int64_t *lshape, int64_t *ls, int64_t *cs) {
    const gu_layout *l = &f->layout;
    int64_t item = (int64_t)kiln_dtype_size(a->dtype);
    int nd = a->ndim - l->core_nd[k];
    for (int i = 0; i < a->ndim; i++)
        if (a->strides[i] % item != 0 && a->shape[i] > 1)
            return kiln_set_error(KILN_ERR_UNSUPPORTED,
                                  "%s: %s %d (%s) has a stride of %lld bytes, not a multiple of its "
                                  "item size %lld; copy it first (kiln_array_copy)",
                                  f->name, gu_arg_kind(l, k), k, f->names[k], (long long)a->strides[i],
                                  (long long)item);
    for (int i = 0; i < lnd; i++) {
        int src = i - (lnd - nd);
        ls[i] = (src < 0 || a->shape[src] == 1 || lshape[i] == 1) ? 0 : a->strides[src] / item;
    }
    int64_t expect = 1;
    for (int j = l->core_nd[k] - 1; j >= 0; j--) {
        int64_t n = a->shape[nd + j];
        cs[j] = n == 1 ? expect : a->strides[nd + j] / item;
        expect *= n;
    }
    return KILN_OK;
}

/* Drops size-1 loop dims, orders the rest by the stride of the first output
 * (largest first, so the innermost is the one neighbouring threads should
 * share), and merges dims that are contiguous for every operand. */
static void simplify_loops(gu_plan *p, int nops, int lnd, const int64_t *lshape,
                           int64_t ls_in[][KILN_MAX_DIMS], int ref) {
    int order[KILN_MAX_DIMS], n = 0;
    for (int i = 0; i < lnd; i++)
        if (lshape[i] != 1) order[n++] = i;
    if (ref >= 0)
        for (int i = 1; i < n; i++) { /* stable insertion sort, |stride| descending */
            int v = order[i], j = i;
            int64_t sv = llabs(ls_in[ref][v]);
            while (j > 0 && llabs(ls_in[ref][order[j - 1]]) < sv) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = v;
        }
    int L = 0;
    for (int i = 0; i < n; i++) {
        int d = order[i];
        if (L > 0) {
            int merge = 1;
            for (int k = 0; k < nops && merge; k++)
                merge = p->loop_stride[k][L - 1] == ls_in[k][d] * lshape[d];
            if (merge) {
                p->loop_shape[L - 1] *= lshape[d];
                for (int k = 0; k < nops; k++) p->loop_stride[k][L - 1] = ls_in[k][d];
                continue;
            }
        }
        p->loop_shape[L] = lshape[d];
        for (int k = 0; k < nops; k++) p->loop_stride[k][L] = ls_in[k][d];
        L++;
    }
    if (L == 0) {
        p->loop_shape[0] = 1;
        for (int k = 0; k < nops; k++) p->loop_stride[k][0] = 0;
        L = 1;
        for (int i = 0; i < lnd; i++)
            if (lshape[i] == 0) p->loop_shape[0] = 0;
    }
    p->nloop = L;
    p->total = 1;
    for (int d = 0; d < L; d++) p->total *= p->loop_shape[d];
}

static int ranges_overlap(const kiln_array *a, const kiln_array *b) {
    if (kiln_array_size(a) == 0 || kiln_array_size(b) == 0) return 0;
    char *alo, *ahi, *blo, *bhi;
    kiln_array_byte_extent(a, &alo, &ahi);
    kiln_array_byte_extent(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

static int same_view(const gu_plan *p, const gu_layout *l, int a, int b) {
    if (p->data[a] != p->data[b] || p->key.dtype[a] != p->key.dtype[b] || l->core_nd[a] != l->core_nd[b])
        return 0;
    for (int d = 0; d < p->nloop; d++)
        if (p->loop_stride[a][d] != p->loop_stride[b][d]) return 0;
    for (int j = 0; j < l->core_nd[a]; j++)
        if (p->core_stride[a][j] != p->core_stride[b][j] ||
            p->dims[l->core_dim[a][j]] != p->dims[l->core_dim[b][j]])
            return 0;
    return 1;
}

/* Output aliasing: exactly an input (in place, staged once) or disjoint. */
static kiln_status check_aliasing(const kiln_gufunc *f, gu_call *c) {
    const gu_layout *l = &f->layout;
    gu_plan *p = &c->plan;
    for (int k = l->nin; k < c->nops; k++) {
        p->key.alias[k] = (uint8_t)k;
        if (!c->arr[k]) continue;
        for (int j = 0; j < l->nin; j++)
            if (c->arr[j] && p->key.kind[j] != GU_OP_VALUE && same_view(p, l, k, j)) {
                p->key.alias[k] = (uint8_t)j;
                break;
            }
        for (int o = 0; o < c->nops; o++) {
            if (o == k || !c->arr[o] || p->key.alias[k] == o) continue;
            if (ranges_overlap(c->arr[k], c->arr[o]) && !(o < l->nin && same_view(p, l, k, o)))
                return kiln_set_error(
                    KILN_ERR_INVALID_ARGUMENT,
                    "%s: output %d (%s) overlaps %s %d (%s) without being the same view of it; "
                    "pass the very same array to update in place, or separate memory",
                    f->name, k, f->names[k], gu_arg_kind(l, o), o, f->names[o]);
        }
    }
    for (int k = 0; k < l->nin; k++) p->key.alias[k] = (uint8_t)k;
    return KILN_OK;
}

/* NumPy's optional dims ("(m?,n),(n,p?)->(m?,p?)", NEP 20): an operand with
 * fewer dims than its core dims drops its optional ones, left to right,
 * until it fits; a dropped dim is dropped from every operand that has it.
 * (numpy/_core/src/umath/ufunc_object.c, _get_core_num_dims.) */
static kiln_status find_missing_dims(const kiln_gufunc *f, kiln_array *const *arr, unsigned char *missing) {
    const gu_layout *l = &f->layout;
    int nops = l->nin + l->nout, need[GU_MAX_OPS];
    char ct[128];
    memset(missing, 0, GU_MAX_DIMS);
    for (int k = 0; k < nops; k++) need[k] = l->core_nd[k];
    for (int k = 0; k < nops; k++) {
        if (!arr[k] || arr[k]->ndim >= need[k]) continue;
        for (int j = 0; j < l->core_nd[k] && arr[k]->ndim < need[k]; j++) {
            int d = l->core_dim[k][j];
            if (!l->dim_optional[d] || missing[d]) continue;
            missing[d] = 1;
            for (int o = 0; o < nops; o++)
                for (int i = 0; i < l->core_nd[o]; i++) need[o] -= l->core_dim[o][i] == d;
        }
        if (arr[k]->ndim < need[k])
            return kiln_set_error(KILN_ERR_SHAPE,
                                  "%s: %s %d (%s) is %d-d but its core dims %s need at least %d dim%s",
                                  f->name, gu_arg_kind(l, k), k, f->names[k], arr[k]->ndim,
                                  gu_core_text(l, k, ct, sizeof ct), need[k], need[k] == 1 ? "" : "s");
    }
    return KILN_OK;
}

/* A view of a with a size-1 dim at each missing core position of operand k,
 * so that the kernel sees the full core shape (NumPy gives missing dims
 * size 1 inside the loop). */
static kiln_status with_unit_dims(const gu_layout *l, int k, const unsigned char *missing, kiln_array *a,
                                  kiln_array **out) {
    int present = 0;
    for (int j = 0; j < l->core_nd[k]; j++) present += !missing[l->core_dim[k][j]];
    int loops = a->ndim - present, nd = loops + l->core_nd[k];
    if (nd > KILN_MAX_DIMS) return kiln_set_error(KILN_ERR_SHAPE, "more than %d dims", KILN_MAX_DIMS);
    kiln_array *v = NULL;
    kiln_status s =
        a->ndim > 0 ? kiln_array_slice(a, 0, 0, INT64_MAX, 1, &v) : kiln_array_reshape(a, 0, NULL, &v);
    if (s != KILN_OK) return s;
    int64_t shape[KILN_MAX_DIMS], strides[KILN_MAX_DIMS];
    for (int i = 0; i < loops; i++) {
        shape[i] = a->shape[i];
        strides[i] = a->strides[i];
    }
    for (int j = 0, from = loops; j < l->core_nd[k]; j++) {
        int gone = missing[l->core_dim[k][j]];
        shape[loops + j] = gone ? 1 : a->shape[from];
        strides[loops + j] = gone ? 0 : a->strides[from];
        from += !gone;
    }
    v->ndim = nd;
    memcpy(v->shape, shape, sizeof(int64_t) * (size_t)nd);
    memcpy(v->strides, strides, sizeof(int64_t) * (size_t)nd);
    *out = v;
    return KILN_OK;
}

void gu_call_cleanup(gu_call *c, int keep_made) {
    for (int k = 0; k < GU_MAX_OPS; k++) {
        kiln_array_release(c->unit[k]);
        c->unit[k] = NULL;
        kiln_array_release(c->staged[k]);
        c->staged[k] = NULL;
        if (!keep_made) kiln_array_release(c->made[k]);
        c->made[k] = NULL;
    }
}

/* CUDA context, host-memory operand: a device copy (one per distinct array). */
static kiln_status stage_host(gu_call *c, int k) {
    for (int o = 0; o < k; o++)
        if (c->staged[o] && c->arr[o] == c->arr[k]) {
            c->staged[k] = kiln_array_retain(c->staged[o]);
            return KILN_OK;
        }
    return kiln_array_copy(c->arr[k], &c->staged[k]);
}

kiln_status gu_resolve(kiln_gufunc *f, kiln_backend_kind backend, int dry, const char *dims_text,
                       const kiln_value *args, int nargs, kiln_array *const *outs, gu_call *c) {
    const gu_layout *l = &f->layout;
    int nin = l->nin, nout = l->nout, nops = nin + nout;
    memset(c, 0, sizeof *c);
    c->nops = nops;
    if (nargs != nin && nargs != nops)
        return kiln_set_error(
            KILN_ERR_ARG_COUNT,
            "%s takes %d input%s (layout %s), or %d arguments with the outputs at the end; got %d", f->name,
            nin, nin == 1 ? "" : "s", l->text, nops, nargs);
    if (nargs && !args) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: args is NULL", f->name);
    const kiln_value *in[GU_MAX_OPS];
    kiln_array *out_arr[GU_MAX_OPS] = {0};
    char ct[128];
    for (int k = 0; k < nin; k++) {
        in[k] = &args[k];
        if (args[k].kind == KILN_VALUE_ARRAY) {
            if (!args[k].as.array)
                return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: input %d (%s) is a NULL array", f->name,
                                      k, f->names[k]);
            c->arr[k] = args[k].as.array;
        } else if (args[k].kind == KILN_VALUE_SCALAR) {
            if (l->core_nd[k] > 0)
                return kiln_set_error(KILN_ERR_ARG_TYPE,
                                      "%s: input %d (%s) is a scalar but the layout gives it core dims %s",
                                      f->name, k, f->names[k], gu_core_text(l, k, ct, sizeof ct));
        } else {
            return kiln_set_error(KILN_ERR_ARG_TYPE,
                                  "%s: input %d (%s) is a raw pointer; pass an array or a scalar", f->name, k,
                                  f->names[k]);
        }
    }
    for (int k = 0; k < nout; k++) {
        if (nargs == nops) {
            if (args[nin + k].kind != KILN_VALUE_ARRAY || !args[nin + k].as.array)
                return kiln_set_error(KILN_ERR_ARG_TYPE, "%s: output %d (%s) must be an array", f->name,
                                      nin + k, f->names[nin + k]);
            out_arr[k] = args[nin + k].as.array;
        } else if (outs) {
            out_arr[k] = outs[k];
        }
        c->arr[nin + k] = out_arr[k];
    }
    for (int k = 0; k < nops; k++)
        if (c->arr[k] && c->arr[k]->ctx != f->ctx)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: %s %d (%s) belongs to another context",
                                  f->name, gu_arg_kind(l, k), k, f->names[k]);

    unsigned char missing[GU_MAX_DIMS];
    kiln_status s = find_missing_dims(f, c->arr, missing);
    int any_missing = 0;
    for (int d = 0; d < l->ndims; d++) any_missing |= missing[d];
    for (int k = 0; any_missing && k < nops && s == KILN_OK; k++)
        if (c->arr[k]) {
            s = with_unit_dims(l, k, missing, c->arr[k], &c->unit[k]);
            if (s == KILN_OK) c->arr[k] = c->unit[k];
        }
    if (s != KILN_OK) {
        gu_call_cleanup(c, 0);
        return s;
    }
    for (int k = 0; k < nout; k++)
        if (out_arr[k]) out_arr[k] = c->arr[nin + k];

    int from[GU_MAX_DIMS];
    gu_plan *p = &c->plan;
    p->nops = nops;
    s = gu_bind_dims(f, c->arr, dims_text, p->dims, from);
    int lnd = 0;
    int64_t lshape[KILN_MAX_DIMS];
    if (s == KILN_OK) s = broadcast_loops(f, c->arr, &lnd, lshape);
    int sig = 0;
    if (s == KILN_OK) s = gu_dispatch(f, in, out_arr, &sig);
    if (s != KILN_OK) return s;
    const gu_typesig *t = &f->sigs[sig];

    /* Outputs not given are made: loop shape + core shape, the signature's dtype. */
    for (int k = nin; k < nops; k++) {
        if (c->arr[k] || dry) continue;
        int64_t shape[KILN_MAX_DIMS];
        int nd = lnd + l->core_nd[k];
        if (nd > KILN_MAX_DIMS)
            return kiln_set_error(KILN_ERR_SHAPE, "%s: output %d (%s) would have %d dims, more than %d",
                                  f->name, k, f->names[k], nd, KILN_MAX_DIMS);
        memcpy(shape, lshape, sizeof(int64_t) * (size_t)lnd);
        for (int j = 0; j < l->core_nd[k]; j++) shape[lnd + j] = p->dims[l->core_dim[k][j]];
        s = kiln_array_empty(f->ctx, t->dtype[k], nd, shape, &c->made[k]);
        if (s == KILN_OK && any_missing) {
            /* the kernel writes the full core shape; the caller gets it
             * without the missing dims, as NumPy returns it */
            int64_t kept[KILN_MAX_DIMS];
            int nk = lnd;
            memcpy(kept, lshape, sizeof(int64_t) * (size_t)lnd);
            for (int j = 0; j < l->core_nd[k]; j++)
                if (!missing[l->core_dim[k][j]]) kept[nk++] = shape[lnd + j];
            c->unit[k] = c->made[k];
            c->made[k] = NULL;
            s = kiln_array_reshape(c->unit[k], nk, kept, &c->made[k]);
            c->arr[k] = c->unit[k];
        } else {
            c->arr[k] = c->made[k];
        }
        if (s != KILN_OK) {
            gu_call_cleanup(c, 0);
            return s;
        }
    }
    if (!dry && backend == KILN_BACKEND_CUDA && f->ctx->ops->kind == KILN_BACKEND_CUDA)
        for (int k = 0; k < nops; k++)
            if (c->arr[k] && c->arr[k]->memory == KILN_MEMORY_HOST && (s = stage_host(c, k)) != KILN_OK) {
                gu_call_cleanup(c, 0);
                return s;
            }

    /* Strides, kinds and the loop dims. */
    gu_key *key = &p->key;
    memset(key, 0, sizeof *key);
    key->backend = (uint8_t)backend;
    key->sig = (uint8_t)sig;
    key->nops = (uint8_t)nops;
    key->nin = (uint8_t)nin;
    int64_t(*ls)[KILN_MAX_DIMS] = calloc(GU_MAX_OPS, sizeof *ls);
    if (!ls) {
        gu_call_cleanup(c, 0);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    int ref = -1;
    for (int k = 0; k < nops && s == KILN_OK; k++) {
        if (k < nin && !c->arr[k]) {
            key->kind[k] = GU_OP_VALUE;
            key->dtype[k] = (uint8_t)t->dtype[k];
            p->value[k] = kiln_value_convert(in[k], t->dtype[k]);
            continue;
        }
        const kiln_array *a = c->staged[k] ? c->staged[k] : c->arr[k];
        kiln_array fake;
        if (!a) { /* dry run, output not made: C order, no memory */
            memset(&fake, 0, sizeof fake);
            fake.dtype = t->dtype[k];
            fake.ndim = lnd + l->core_nd[k];
            memcpy(fake.shape, lshape, sizeof(int64_t) * (size_t)lnd);
            for (int j = 0; j < l->core_nd[k]; j++) fake.shape[lnd + j] = p->dims[l->core_dim[k][j]];
            kiln_contiguous_strides(fake.ndim, fake.shape, kiln_dtype_size(fake.dtype), fake.strides);
            a = &fake;
        }
        key->dtype[k] = (uint8_t)a->dtype;
        p->data[k] = a->data;
        s = element_strides(f, k, a, lnd, lshape, ls[k], p->core_stride[k]);
        if (k >= nin && ref < 0) ref = k;
    }
    if (s == KILN_OK) simplify_loops(p, nops, lnd, lshape, ls, ref);
    free(ls);
    if (s != KILN_OK) {
        gu_call_cleanup(c, 0);
        return s;
    }
    key->nloop = (uint8_t)p->nloop;
    key->baked = 1;
    for (int d = 0; d < l->ndims; d++)
        if (p->dims[d] > GU_BAKE_LIMIT) key->baked = 0;
    if (key->baked) memcpy(key->dims, p->dims, sizeof key->dims);
    for (int k = 0; k < nops; k++) {
        if (key->kind[k] == GU_OP_VALUE) continue;
        int contig = 1, bcast = 1;
        int64_t expect = 1, ne = 1;
        for (int j = l->core_nd[k] - 1; j >= 0; j--) {
            if (p->core_stride[k][j] != expect) contig = 0;
            expect *= p->dims[l->core_dim[k][j]];
        }
        ne = expect;
        for (int d = 0; d < p->nloop; d++)
            if (p->loop_stride[k][d] != 0) bcast = 0;
        key->bcast[k] = (uint8_t)(bcast && p->total > 1);
        if (!contig)
            key->kind[k] = GU_OP_ARRAY;
        else if (!key->bcast[k] && ne > 0 && p->loop_stride[k][p->nloop - 1] == ne)
            key->kind[k] = GU_OP_PACKED;
        else
            key->kind[k] = GU_OP_CONTIG;
    }
    s = check_aliasing(f, c);
    if (s != KILN_OK) {
        gu_call_cleanup(c, 0);
        return s;
    }
    for (int k = nin; k < nops; k++) key->load[k] = (uint8_t)(c->arr[k] && !c->made[k] && key->alias[k] == k);
    return KILN_OK;
}
