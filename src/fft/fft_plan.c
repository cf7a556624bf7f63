/* fft_plan.c: from a key to a plan: the layout handed to the provider
 * (directly on the arrays where the library can express it, else on
 * contiguous scratch), the normalisation factor, the profiler's label. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/error.h"
#include "core/settings.h"
#include "fft/fft.h"

static int is_axis(const kiln_fft_key *k, int d) {
    for (int i = 0; i < k->naxes; i++)
        if (k->axes[i] == d) return 1;
    return 0;
}

/* Element strides of a side; 0 when a stride is negative or not a whole
 * number of elements (then the library cannot take it). Length-1 dims never
 * move, so their stride does not matter. */
static int element_strides(int ndim, const int64_t *shape, const int64_t *bytes, size_t item, int64_t *out) {
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) {
            out[d] = 1;
            continue;
        }
        if (bytes[d] <= 0 || bytes[d] % (int64_t)item != 0) return 0;
        out[d] = bytes[d] / (int64_t)item;
    }
    return 1;
}

static int64_t extent(int rank, const int64_t *len, const int64_t *st, int hr, const int64_t *hn,
                      const int64_t *hs) {
    int64_t e = 1;
    for (int i = 0; i < rank; i++) e += (len[i] - 1) * st[i];
    for (int i = 0; i < hr; i++) e += (hn[i] - 1) * hs[i];
    return e;
}

/* Fills l from the key for the given byte strides of each side. 0 when a
 * side's strides cannot be given to a library. */
int kiln_fft_build_layout(const kiln_fft_key *k, const int64_t *in_bytes, const int64_t *out_bytes,
                          kiln_fft_layout *l) {
    size_t in_item = kiln_dtype_size((kiln_dtype)k->dtype_in),
           out_item = kiln_dtype_size((kiln_dtype)k->dtype_out);
    int64_t is[KILN_MAX_DIMS], os[KILN_MAX_DIMS];
    if (!element_strides(k->ndim, k->in_shape, in_bytes, in_item, is) ||
        !element_strides(k->ndim, k->out_shape, out_bytes, out_item, os))
        return 0;
    memset(l, 0, sizeof *l);
    l->kind = (kiln_fft_kind)k->kind;
    l->sign = k->sign;
    l->double_precision = k->dtype_in == KILN_COMPLEX128 || k->dtype_in == KILN_FLOAT64;
    int last = k->axes[k->naxes - 1];
    for (int i = 0; i < k->naxes; i++) {
        int d = k->axes[i];
        int64_t n = k->kind == KILN_FFT_C2R ? k->out_shape[d] : k->in_shape[d];
        /* A length-1 DFT is the identity: a batch dim instead (the halved
         * axis of R2C/C2R stays, it changes the element type). */
        if (n == 1 && (k->kind == KILN_FFT_C2C || d != last)) continue;
        l->n[l->rank] = n;
        l->is[l->rank] = is[d];
        l->os[l->rank] = os[d];
        l->rank++;
    }
    for (int d = 0; d < k->ndim; d++) {
        if (is_axis(k, d) || k->in_shape[d] == 1) continue; /* length-1 axes dropped above */
        l->hn[l->howmany_rank] = k->in_shape[d];
        l->his[l->howmany_rank] = is[d];
        l->hos[l->howmany_rank] = os[d];
        l->howmany_rank++;
    }
    int64_t ilen[KILN_MAX_DIMS], olen[KILN_MAX_DIMS];
    for (int i = 0; i < l->rank; i++) ilen[i] = olen[i] = l->n[i];
    if (l->rank > 0 && k->kind == KILN_FFT_R2C) olen[l->rank - 1] = l->n[l->rank - 1] / 2 + 1;
    if (l->rank > 0 && k->kind == KILN_FFT_C2R) ilen[l->rank - 1] = l->n[l->rank - 1] / 2 + 1;
    l->in_extent = extent(l->rank, ilen, l->is, l->howmany_rank, l->hn, l->his);
    l->out_extent = extent(l->rank, olen, l->os, l->howmany_rank, l->hn, l->hos);
    l->inplace = k->inplace;
    l->fuse = k->fuse;
    l->in_align = k->in_align;
    l->out_align = k->out_align;
    return 1;
}

static double norm_scale(const kiln_fft_key *k) {
    double n = 1;
    for (int i = 0; i < k->naxes; i++) {
        int d = k->axes[i];
        n *= (double)(k->kind == KILN_FFT_C2R ? k->out_shape[d] : k->in_shape[d]);
    }
    if (k->norm == KILN_FFT_NORM_ORTHO) return 1 / sqrt(n);
    int forward = k->sign == KILN_FFT_FORWARD;
    if ((k->norm == KILN_FFT_NORM_BACKWARD && !forward) || (k->norm == KILN_FFT_NORM_FORWARD && forward))
        return 1 / n;
    return 1;
}

static void make_label(kiln_fft_plan *p) {
    const kiln_fft_key *k = &p->key;
    const char *kind = k->kind == KILN_FFT_R2C ? "r2c" : k->kind == KILN_FFT_C2R ? "c2r" : "c2c";
    /* From the key: the layout is not built yet when the label is made. */
    const char *prec = k->dtype_in == KILN_FLOAT64 || k->dtype_in == KILN_COMPLEX128 ? "f64" : "f32";
    char shape[200];
    kiln_shape_format(k->ndim, k->kind == KILN_FFT_C2R ? k->out_shape : k->in_shape, shape, sizeof shape);
    snprintf(p->label, sizeof p->label, "fft %s%s %s %s%s", kind,
             k->kind == KILN_FFT_C2C ? (k->sign < 0 ? " fwd" : " inv") : "", prec, shape,
             k->fuse ? " of a product" : "");
}

static const kiln_provider *const fft_providers[] = {&kiln_fft_cufft.base, &kiln_fft_fftw.base};

kiln_status kiln_fft_provider_for(kiln_context *ctx, const kiln_fft_provider **out) {
    const kiln_provider *p = NULL;
    kiln_status s =
        kiln_provider_select(ctx, fft_providers, sizeof fft_providers / sizeof fft_providers[0], &p);
    *out = (const kiln_fft_provider *)p;
    return s;
}

/* KILN_FFT_MAX_RANK (a testing knob: makes FFTW take the multi-pass path
 * cuFFT takes beyond 3 dims) lowers the provider's limit. */
static int max_rank(const kiln_fft_provider *prov) {
    int r = prov->max_rank;
    const char *e = kiln_setting_string("KILN_FFT_MAX_RANK");
    if (e && *e) {
        long v = strtol(e, NULL, 10);
        if (v >= 1 && (r == 0 || v < r)) r = (int)v;
    }
    return r;
}

/* Adds transform dim i of L (outside the pass) as a batch dim of S. */
static void add_batch(kiln_fft_layout *S, int64_t n, int64_t is, int64_t os) {
    S->hn[S->howmany_rank] = n;
    S->his[S->howmany_rank] = is;
    S->hos[S->howmany_rank] = os;
    S->howmany_rank++;
}

/* The pass of L's own kind over transform dims [lo, rank); the others batch. */
static kiln_fft_layout main_pass(const kiln_fft_layout *L, int lo) {
    kiln_fft_layout S = *L;
    S.rank = 0;
    for (int i = lo; i < L->rank; i++) {
        S.n[S.rank] = L->n[i];
        S.is[S.rank] = L->is[i];
        S.os[S.rank] = L->os[i];
        S.rank++;
    }
    for (int i = 0; i < lo; i++) add_batch(&S, L->n[i], L->is[i], L->os[i]);
    return S;
}

/* A C2C pass in place over dims [lo, hi) of one side of L (the output, or
 * for C2R the input), where the last dim has the complex side's length. */
static kiln_fft_layout c2c_pass(const kiln_fft_layout *L, int lo, int hi, int on_input) {
    kiln_fft_layout S = *L;
    const int64_t *st = on_input ? L->is : L->os, *hst = on_input ? L->his : L->hos;
    S.kind = KILN_FFT_C2C;
    S.rank = 0;
    S.howmany_rank = 0;
    for (int i = 0; i < L->rank; i++) {
        int64_t n = L->n[i];
        if (i == L->rank - 1 && L->kind != KILN_FFT_C2C) n = n / 2 + 1;
        if (i >= lo && i < hi) {
            S.n[S.rank] = n;
            S.is[S.rank] = S.os[S.rank] = st[i];
            S.rank++;
        } else {
            add_batch(&S, n, st[i], st[i]);
        }
    }
    for (int i = 0; i < L->howmany_rank; i++) add_batch(&S, L->hn[i], hst[i], hst[i]);
    S.inplace = 1;
    S.in_align = S.out_align = on_input ? L->in_align : L->out_align;
    S.in_extent = S.out_extent = on_input ? L->in_extent : L->out_extent;
    return S;
}

static void split(kiln_fft_plan *p, int limit) {
    const kiln_fft_layout *L = &p->layout;
    if (limit <= 0 || L->rank <= limit) {
        p->steps[0].layout = *L;
        p->nsteps = 1;
        return;
    }
    int first = L->rank - limit, n = 0, c2r = L->kind == KILN_FFT_C2R;
    if (!c2r) p->steps[n++].layout = main_pass(L, first);
    for (int lo = 0; lo < first; lo += limit) {
        int hi = lo + limit < first ? lo + limit : first;
        p->steps[n].layout = c2c_pass(L, lo, hi, c2r);
        p->steps[n].read_out = !c2r;
        p->steps[n].write_in = c2r;
        n++;
    }
    if (c2r) p->steps[n++].layout = main_pass(L, first);
    p->nsteps = n;
}

static void destroy_steps(kiln_fft_plan *p) {
    for (int i = 0; i < p->nsteps; i++)
        if (p->steps[i].impl) p->provider->destroy(p->ctx, p->steps[i].impl);
    memset(p->steps, 0, sizeof p->steps);
    p->nsteps = 0;
}

/* Storage order of the scratch: order[j] is the logical axis stored j-th
 * (outermost first): the batch axes, then the transform axes as the key
 * lists them. */
static void scratch_order(const kiln_fft_key *k, int *order) {
    int j = 0;
    for (int d = 0; d < k->ndim; d++)
        if (!is_axis(k, d)) order[j++] = d;
    for (int i = 0; i < k->naxes; i++) order[j++] = k->axes[i];
}

void kiln_fft_scratch_strides(const kiln_fft_key *k, const int64_t *shape, size_t item, int64_t *strides) {
    int order[KILN_MAX_DIMS];
    int64_t stored[KILN_MAX_DIMS], st[KILN_MAX_DIMS];
    scratch_order(k, order);
    for (int j = 0; j < k->ndim; j++) stored[j] = shape[order[j]];
    kiln_contiguous_strides(k->ndim, stored, item, st);
    for (int j = 0; j < k->ndim; j++) strides[order[j]] = st[j];
}

kiln_status kiln_fft_scratch_array(kiln_context *ctx, const kiln_fft_key *k, kiln_dtype t,
                                   const int64_t *shape, kiln_array **out) {
    int order[KILN_MAX_DIMS], back[KILN_MAX_DIMS];
    int64_t stored[KILN_MAX_DIMS];
    scratch_order(k, order);
    for (int j = 0; j < k->ndim; j++) {
        stored[j] = shape[order[j]];
        back[order[j]] = j; /* logical axis d is stored at back[d] */
    }
    kiln_array *base = NULL;
    kiln_status s = kiln_array_empty(ctx, t, k->ndim, stored, &base);
    if (s != KILN_OK) return s;
    s = kiln_array_transpose(base, back, out); /* the view keeps the allocation alive */
    kiln_array_release(base);
    return s;
}

/* Plans with scratch (kiln_fft_scratch_strides) on the sides that need it. */
static kiln_status plan_with_copies(kiln_fft_plan *p, int copy_in, int copy_out) {
    const kiln_fft_key *k = &p->key;
    int64_t cin[KILN_MAX_DIMS], cout[KILN_MAX_DIMS];
    kiln_fft_scratch_strides(k, k->in_shape, kiln_dtype_size((kiln_dtype)k->dtype_in), cin);
    kiln_fft_scratch_strides(k, k->out_shape, kiln_dtype_size((kiln_dtype)k->dtype_out), cout);
    kiln_fft_key sk = *k;
    if (copy_in || copy_out) sk.inplace = 0; /* scratch is separate memory */
    if (copy_in) sk.in_align = 0;            /* kiln's allocations are 64-byte aligned */
    if (copy_out) sk.out_align = 0;
    if (!kiln_fft_build_layout(&sk, copy_in ? cin : k->in_strides, copy_out ? cout : k->out_strides,
                               &p->layout))
        return KILN_ERR_UNSUPPORTED;
    p->copy_in = copy_in;
    p->copy_out = copy_out;
    split(p, max_rank(p->provider));
    /* The fused product reads its companion beside the input: one library
     * plan on the arrays themselves, or none. */
    if (k->fuse && (p->nsteps != 1 || copy_in || copy_out)) {
        p->nsteps = 0;
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: the fused product needs one %s plan on the arrays",
                              p->label, p->provider->base.name);
    }
    for (int i = 0; i < p->nsteps; i++) {
        kiln_status s = p->provider->plan(p->ctx, &p->steps[i].layout, &p->steps[i].impl);
        if (s != KILN_OK) {
            destroy_steps(p);
            return s;
        }
    }
    return KILN_OK;
}

kiln_status kiln_fft_plan_make(kiln_context *ctx, const kiln_fft_key *key, kiln_fft_plan **out) {
    kiln_fft_plan *p = calloc(1, sizeof *p);
    if (!p) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    atomic_init(&p->refs, 1);
    p->ctx = ctx;
    p->key = *key;
    p->scale = norm_scale(key);
    kiln_status s = kiln_fft_provider_for(ctx, &p->provider);
    if (s != KILN_OK) {
        free(p);
        return s;
    }
    make_label(p);
    int64_t batch = 1;
    for (int d = 0; d < key->ndim; d++) batch *= key->in_shape[d];
    int ones = key->kind == KILN_FFT_C2C;
    for (int i = 0; i < key->naxes; i++) ones = ones && key->in_shape[key->axes[i]] == 1;
    if ((batch == 0 || ones) && key->fuse) {
        free(p); /* a copy cannot fuse the product: the caller multiplies */
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "no transform to fuse the product into");
    }
    if (batch == 0 || ones) {
        p->trivial = 1; /* nothing to transform, or C2C over length-1 axes only: a copy */
    } else {
        /* Fewest copies first: the arrays themselves, then scratch on the
         * input side, the output side, both. Both libraries overwrite a C2R
         * input: it always reads a copy. */
        static const int tries[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
        /* A fused C2R may overwrite its input: it is kiln's scratch. */
        int c2r = key->kind == KILN_FFT_C2R && !key->fuse;
        s = KILN_ERR_UNSUPPORTED;
        int ntries = key->fuse ? p->provider->product_callback != 0 : 4;
        if (!ntries) kiln_set_error(s, "%s cannot fuse the product into a transform", p->provider->base.name);
        for (int t = 0; t < ntries && s == KILN_ERR_UNSUPPORTED; t++) {
            if (c2r && !tries[t][0]) continue;
            /* An UNSUPPORTED without a message is the provider's "cannot
             * express"; a library's refusal leaves its message for the last
             * try. */
            kiln_clear_error();
            s = plan_with_copies(p, tries[t][0], tries[t][1]);
        }
        if (s != KILN_OK) {
            if (s == KILN_ERR_UNSUPPORTED && kiln_last_error()[0] == '\0')
                kiln_set_error(s, "%s cannot plan %s", p->provider->base.name, p->label);
            free(p);
            return s;
        }
    }
    kiln_clear_error();
    *out = p;
    return KILN_OK;
}

void kiln_fft_plan_orphan(kiln_fft_plan *p) {
    destroy_steps(p);
    p->ctx = NULL;
}

void kiln_fft_plan_destroy(kiln_fft_plan *p) {
    if (!p) return;
    destroy_steps(p);
    free(p);
}
