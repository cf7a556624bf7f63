/* bind.c: a gufunc call's core dims bound by NumPy's rules (inputs first,
 * then outputs, then the caller's "n=4"), and its type signature
 * dispatched: the first that takes the operands, inputs cast safely. */
#include "gufunc/bind.h"

#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"

/* "(m,n)" for operand k, for messages. */
const char *gu_core_text(const gu_layout *l, int k, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int j = 0; j < l->core_nd[k]; j++) {
        int d = l->core_dim[k][j];
        if (l->dim_fixed[d] >= 0)
            n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%lld", j ? "," : "",
                                  (long long)l->dim_fixed[d]);
        else
            n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", j ? "," : "", l->dim_names[d]);
    }
    snprintf(buf + n, n < cap ? cap - n : 0, ")");
    return buf;
}

const char *gu_arg_kind(const gu_layout *l, int k) { return k < l->nin ? "input" : "output"; }

/* Can a scalar argument take the signature's dtype? Safe casts, plus
 * NumPy's weak scalars: an integer into any float or complex, a float into
 * any float, an integer into a narrower integer when its value fits. */
static int value_fits(const kiln_value *v, kiln_dtype to) {
    if (v->dtype == to || kiln_dtype_can_cast(v->dtype, to)) return 1;
    char fk = kiln_dtype_kind(v->dtype), tk = kiln_dtype_kind(to);
    if (tk == 'c') return fk != '?';
    if (tk == 'f') return fk == 'i' || fk == 'u' || fk == 'f' || fk == 'b';
    if ((tk == 'i' || tk == 'u') && (fk == 'i' || fk == 'u' || fk == 'b')) {
        int bits = (int)kiln_dtype_size(to) * 8;
        if (fk == 'u' && v->as.u > (uint64_t)INT64_MAX) return tk == 'u' && bits == 64;
        int64_t x = fk == 'u' ? (int64_t)v->as.u : v->as.i;
        if (tk == 'u') return x >= 0 && (bits == 64 || x < ((int64_t)1 << bits));
        return bits == 64 || (x >= -((int64_t)1 << (bits - 1)) && x < ((int64_t)1 << (bits - 1)));
    }
    return 0;
}

static void dtype_list(const kiln_gufunc *f, const kiln_value *const *in, kiln_array *const *outs, char *buf,
                       size_t cap) {
    const gu_layout *l = &f->layout;
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int k = 0; k < l->nin + l->nout; k++) {
        if (k == l->nin)
            n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, ") -> (");
        else if (k)
            n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, ", ");
        const char *name = "?";
        if (k < l->nin)
            name = kiln_dtype_name(in[k]->kind == KILN_VALUE_ARRAY ? in[k]->as.array->dtype : in[k]->dtype);
        else if (outs[k - l->nin])
            name = kiln_dtype_name(outs[k - l->nin]->dtype);
        else
            name = "new";
        n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s", name);
    }
    snprintf(buf + n, n < cap ? cap - n : 0, ")");
}

kiln_status gu_dispatch(const kiln_gufunc *f, const kiln_value *const *in, kiln_array *const *outs,
                        int *sig) {
    const gu_layout *l = &f->layout;
    for (int pass = 0; pass < 2; pass++)
        for (int s = 0; s < f->nsig; s++) {
            const gu_typesig *t = &f->sigs[s];
            int ok = 1;
            for (int k = 0; k < l->nin && ok; k++) {
                const kiln_value *v = in[k];
                kiln_dtype have = v->kind == KILN_VALUE_ARRAY ? v->as.array->dtype : v->dtype;
                if (pass == 0)
                    ok = have == t->dtype[k];
                else if (v->kind == KILN_VALUE_ARRAY)
                    ok = kiln_dtype_can_cast(have, t->dtype[k]);
                else
                    ok = value_fits(v, t->dtype[k]);
            }
            for (int k = 0; k < l->nout && ok; k++)
                if (outs[k]) ok = outs[k]->dtype == t->dtype[l->nin + k];
            if (ok) {
                *sig = s;
                return KILN_OK;
            }
        }
    char have[512], sigs[1024];
    dtype_list(f, in, outs, have, sizeof have);
    size_t n = 0;
    sigs[0] = '\0';
    for (int s = 0; s < f->nsig; s++)
        n += (size_t)snprintf(sigs + n, n < sizeof sigs ? sizeof sigs - n : 0, "%s%s", s ? "; " : "",
                              f->sigs[s].text);
    return kiln_set_error(KILN_ERR_DTYPE,
                          "%s: no type signature takes %s (inputs cast safely, outputs must match exactly); "
                          "the signatures are: %s",
                          f->name, have, sigs);
}

/* Binds the core dims of every array operand; fills size[] and from[]. */
kiln_status gu_bind_dims(const kiln_gufunc *f, kiln_array *const *arr, const char *dims_text, int64_t *size,
                         int *from) {
    const gu_layout *l = &f->layout;
    char ct[128];
    for (int d = 0; d < l->ndims; d++) {
        size[d] = l->dim_fixed[d];
        from[d] = -1;
    }
    for (int k = 0; k < l->nin + l->nout; k++) {
        const kiln_array *a = arr[k];
        if (!a) continue;
        int nd = l->core_nd[k];
        if (a->ndim < nd)
            return kiln_set_error(KILN_ERR_SHAPE,
                                  "%s: %s %d (%s) is %d-d but its core dims %s need at least %d dim%s",
                                  f->name, gu_arg_kind(l, k), k, f->names[k], a->ndim,
                                  gu_core_text(l, k, ct, sizeof ct), nd, nd == 1 ? "" : "s");
        for (int j = 0; j < nd; j++) {
            int d = l->core_dim[k][j];
            int64_t v = a->shape[a->ndim - nd + j];
            if (l->dim_fixed[d] >= 0 && v != l->dim_fixed[d])
                return kiln_set_error(
                    KILN_ERR_SHAPE,
                    "%s: core dim %d of %s %d (%s) is fixed to %lld by the layout %s, got %lld", f->name, j,
                    gu_arg_kind(l, k), k, f->names[k], (long long)l->dim_fixed[d], l->text, (long long)v);
            if (l->dim_fixed[d] >= 0) continue;
            if (from[d] < 0) {
                size[d] = v;
                from[d] = k;
            } else if (size[d] != v) {
                int o = from[d];
                return kiln_set_error(
                    KILN_ERR_SHAPE,
                    "%s: core dim %s is %lld in %s %d (%s) but %lld in %s %d (%s) (layout %s)", f->name,
                    l->dim_names[d], (long long)size[d], gu_arg_kind(l, o), o, f->names[o], (long long)v,
                    gu_arg_kind(l, k), k, f->names[k], l->text);
            }
        }
    }
    int64_t given[GU_MAX_DIMS];
    kiln_status s = gu_parse_dims(l, dims_text, given);
    if (s != KILN_OK) return s;
    for (int d = 0; d < l->ndims; d++) {
        if (given[d] < 0) continue;
        if (from[d] >= 0 && size[d] != given[d])
            return kiln_set_error(KILN_ERR_SHAPE,
                                  "%s: core dim %s is %lld in %s %d (%s) but the call gives %s=%lld", f->name,
                                  l->dim_names[d], (long long)size[d], gu_arg_kind(l, from[d]), from[d],
                                  f->names[from[d]], l->dim_names[d], (long long)given[d]);
        size[d] = given[d];
        from[d] = GU_MAX_OPS; /* the caller */
    }
    for (int k = 0; k < l->nin + l->nout; k++)
        for (int j = 0; j < l->core_nd[k]; j++) {
            int d = l->core_dim[k][j];
            if (size[d] >= 0) continue;
            return kiln_set_error(
                KILN_ERR_SHAPE,
                "%s: core dim %s of %s %d (%s) appears in no input: pass an output array or its size, "
                "e.g. dims \"%s=4\"",
                f->name, l->dim_names[d], gu_arg_kind(l, k), k, f->names[k], l->dim_names[d]);
        }
    return KILN_OK;
}
