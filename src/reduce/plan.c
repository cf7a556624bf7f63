/* plan.c: from the operands of a reduction to an rd_plan: axes checked, the
 * kept and reduced dims merged as far as every operand allows, the layout
 * class, and how the work is cut (threads per output, pieces per output,
 * outputs per CPU block). Nothing here allocates or launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "reduce/rd_provider.h"
#include "reduce/reduce.h"

kiln_status rd_parse_axes(int ndim, const int *axes, int naxes, const char *what, int *red) {
    for (int d = 0; d < ndim; d++) red[d] = axes ? 0 : 1;
    if (!axes) return KILN_OK;
    if (naxes < 0 || naxes > KILN_MAX_DIMS)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: naxes is %d, expected 0..%d", what, naxes,
                              KILN_MAX_DIMS);
    for (int i = 0; i < naxes; i++) {
        int ax = axes[i];
        if (ax < -ndim || ax >= ndim)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                                  "%s: axis %d is out of range for an array of %d dim%s (valid: %d..%d)",
                                  what, ax, ndim, ndim == 1 ? "" : "s", -ndim, ndim - 1);
        if (ax < 0) ax += ndim;
        if (red[ax])
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: axis %d is given twice (as %d)", what, ax,
                                  axes[i]);
        red[ax] = 1;
    }
    return KILN_OK;
}

int rd_result_shape(int ndim, const int64_t *shape, const int *red, int keepdims, int64_t *out) {
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (!red[d])
            out[n++] = shape[d];
        else if (keepdims)
            out[n++] = 1;
    }
    return n;
}

/* Keeps the dims listed in dims[0..n) (in that order), dropping size-1 ones
 * and merging neighbours, into shape_out/st_out; returns the count. */
static int merge_dims(const int *dims, int n, const int64_t *shape, int64_t st[][KILN_MAX_DIMS],
                      const int *use, int nuse, int64_t *shape_out, int64_t st_out[][KILN_MAX_DIMS]) {
    int L = 0;
    for (int i = 0; i < n; i++) {
        int d = dims[i];
        if (shape[d] == 1) continue;
        if (L > 0) {
            int ok = 1;
            for (int k = 0; k < nuse && ok; k++) ok = st_out[use[k]][L - 1] == st[use[k]][d] * shape[d];
            if (ok) {
                shape_out[L - 1] *= shape[d];
                for (int k = 0; k < nuse; k++) st_out[use[k]][L - 1] = st[use[k]][d];
                continue;
            }
        }
        shape_out[L] = shape[d];
        for (int k = 0; k < nuse; k++) st_out[use[k]][L] = st[use[k]][d];
        L++;
    }
    return L;
}

static const rd_provider *const rd_providers[] = {&rd_cuda_provider, &rd_cpu_provider};

const rd_provider *rd_provider_for(kiln_backend_kind target) {
    for (size_t i = 0; i < sizeof rd_providers / sizeof rd_providers[0]; i++)
        if (rd_providers[i]->base.backends & KILN_PROVIDER_ON(target)) return rd_providers[i];
    return NULL;
}

static void cut_work(rd_plan *p, kiln_context *ctx) {
    int units = ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 1;
    p->splits = 1;
    p->per_task = 1;
    p->group = RD_GPU_BLOCK;
    p->prov->cut(p, units);
}

kiln_status rd_build_plan(const rd_op *op, kiln_context *ctx, kiln_backend_kind backend, int ndim,
                          const int64_t *shape, const int *red, kiln_array *const *arr, rd_plan *p) {
    memset(p, 0, sizeof *p);
    p->backend = backend;
    p->prov = rd_provider_for(backend);
    if (!p->prov)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: kiln has no reduction kernels for backend %d",
                              op->name, (int)backend);
    p->nin = op->nin;
    int64_t st[RD_MAX_IN + 1][KILN_MAX_DIMS];
    int use[RD_MAX_IN + 1], nuse = 0;
    memset(st, 0, sizeof st);
    for (int i = 0; i < op->nin; i++) {
        const kiln_array *a = arr[i];
        if (!a) {
            p->scalar[i] = 1;
            continue;
        }
        p->store[i] = a->dtype;
        p->data[i] = a->data;
        int off = ndim - a->ndim;
        for (int d = 0; d < ndim; d++) {
            int src = d - off;
            st[i][d] = (src < 0 || a->shape[src] == 1) ? 0 : a->strides[src];
        }
        use[nuse++] = i;
    }
    int nuse_kept = nuse;
    if (op->uses_index) {
        int64_t w = 1;
        for (int d = ndim - 1; d >= 0; d--)
            if (red[d]) {
                st[RD_IDX][d] = w;
                w *= shape[d];
            }
        use[nuse++] = RD_IDX;
    }
    int kept[KILN_MAX_DIMS] = {0}, rdims[KILN_MAX_DIMS] = {0}, nk = 0, nr = 0;
    for (int d = 0; d < ndim; d++) {
        if (red[d])
            rdims[nr++] = d;
        else
            kept[nk++] = d;
    }
    /* reduced dims: the largest stride of the first array input outermost */
    int ref = use[0];
    for (int i = 1; i < nr; i++) {
        int v = rdims[i], j = i;
        while (j > 0 && llabs(st[ref][rdims[j - 1]]) < llabs(st[ref][v])) {
            rdims[j] = rdims[j - 1];
            j--;
        }
        rdims[j] = v;
    }
    p->ndo = merge_dims(kept, nk, shape, st, use, nuse_kept, p->oshape, p->ostr);
    p->ndr = merge_dims(rdims, nr, shape, st, use, nuse, p->rshape, p->rstr);
    p->O = 1;
    for (int d = 0; d < nk; d++) p->O *= shape[kept[d]];
    p->R = 1;
    for (int d = 0; d < nr; d++) p->R *= shape[rdims[d]];
    if (p->ndr == 0) { /* nothing (or only size-1 dims) reduced: one element */
        p->ndr = 1;
        p->rshape[0] = 1;
        for (int k = 0; k < nuse; k++) p->rstr[use[k]][0] = 0;
    }
    if (p->R <= 1) {
        p->rshape[0] = p->R;
        for (int k = 0; k < nuse_kept; k++) p->rstr[use[k]][0] = (int64_t)kiln_dtype_size(p->store[use[k]]);
        p->rstr[RD_IDX][0] = 1;
        p->ndr = 1;
    }
    int inner = p->ndr == 1, column = p->ndo >= 1;
    for (int k = 0; k < nuse_kept; k++) {
        int64_t item = (int64_t)kiln_dtype_size(p->store[use[k]]);
        if (p->rstr[use[k]][0] != item) inner = 0;
        if (p->ndo >= 1 && p->ostr[use[k]][p->ndo - 1] != item) column = 0;
    }
    if (op->uses_index && p->rstr[RD_IDX][0] != 1) inner = 0;
    p->layout = inner ? RD_INNER : column ? RD_COLUMN : RD_GENERIC;
    p->vec = 1;
    if (p->prov->vector_loads && p->layout == RD_INNER) {
        size_t item = 0;
        int aligned = 1;
        for (int k = 0; k < nuse_kept; k++) {
            size_t s = kiln_dtype_size(p->store[use[k]]);
            if (s > item) item = s;
        }
        int v = item ? (int)(16 / item) : 1;
        for (int k = 0; k < nuse_kept && aligned; k++) {
            int i = use[k];
            if (kiln_dtype_size(p->store[i]) != item || ((uintptr_t)p->data[i] % 16) != 0) aligned = 0;
            for (int d = 0; d < p->ndo && aligned; d++)
                if (p->ostr[i][d] % 16 != 0) aligned = 0;
        }
        if (aligned && v > 1 && p->R >= 4 * v) p->vec = v;
    }
    cut_work(p, ctx);
    return KILN_OK;
}
