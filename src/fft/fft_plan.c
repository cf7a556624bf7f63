/* fft_plan.c: from a key to a plan: the layout handed to the provider
 * (directly on the arrays where the library can express it, else on
 * contiguous scratch), the normalisation factor, the profiler's label. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/error.h"
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
static int build_layout(const kiln_fft_key *k, const int64_t *in_bytes, const int64_t *out_bytes,
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
    const char *prec = p->layout.double_precision ? "f64" : "f32";
    char shape[200];
    kiln_shape_format(k->ndim, k->kind == KILN_FFT_C2R ? k->out_shape : k->in_shape, shape, sizeof shape);
    snprintf(p->label, sizeof p->label, "fft %s%s %s %s", kind,
             k->kind == KILN_FFT_C2C ? (k->sign < 0 ? " fwd" : " inv") : "", prec, shape);
}

static kiln_status select_provider(kiln_context *ctx, const kiln_fft_provider **out) {
    if (ctx->ops->kind == KILN_BACKEND_CUDA) return kiln_fft_provider_cufft(out);
    return kiln_fft_provider_fftw(out);
}

/* Plans with contiguous scratch on the sides that need it. */
static kiln_status plan_with_copies(kiln_fft_plan *p, int copy_in, int copy_out) {
    const kiln_fft_key *k = &p->key;
    int64_t cin[KILN_MAX_DIMS], cout[KILN_MAX_DIMS];
    kiln_contiguous_strides(k->ndim, k->in_shape, kiln_dtype_size((kiln_dtype)k->dtype_in), cin);
    kiln_contiguous_strides(k->ndim, k->out_shape, kiln_dtype_size((kiln_dtype)k->dtype_out), cout);
    kiln_fft_key sk = *k;
    if (copy_in || copy_out) sk.inplace = 0; /* scratch is separate memory */
    if (copy_in) sk.in_align = 0; /* kiln's allocations are 64-byte aligned */
    if (copy_out) sk.out_align = 0;
    if (!build_layout(&sk, copy_in ? cin : k->in_strides, copy_out ? cout : k->out_strides, &p->layout))
        return KILN_ERR_UNSUPPORTED;
    p->copy_in = copy_in;
    p->copy_out = copy_out;
    return p->provider->plan(p->ctx, &p->layout, &p->impl);
}

kiln_status kiln_fft_plan_make(kiln_context *ctx, const kiln_fft_key *key, kiln_fft_plan **out) {
    kiln_fft_plan *p = calloc(1, sizeof *p);
    if (!p) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    atomic_init(&p->refs, 1);
    p->ctx = ctx;
    p->key = *key;
    p->scale = norm_scale(key);
    kiln_status s = select_provider(ctx, &p->provider);
    if (s != KILN_OK) {
        free(p);
        return s;
    }
    make_label(p);
    kiln_clear_error(); /* an UNSUPPORTED without a message is the provider's "cannot express" */
    int64_t batch = 1;
    for (int d = 0; d < key->ndim; d++) batch *= key->in_shape[d];
    kiln_fft_layout probe;
    int direct = build_layout(key, key->in_strides, key->out_strides, &probe);
    if (batch == 0) {
        p->trivial = 1; /* nothing to transform */
    } else if (direct && probe.rank == 0) {
        p->trivial = 1; /* C2C over length-1 axes only: a copy */
        p->layout = probe;
    } else {
        /* Both libraries overwrite a C2R input: it always reads a copy. */
        int c2r = key->kind == KILN_FFT_C2R;
        s = KILN_ERR_UNSUPPORTED;
        if (direct || c2r) {
            kiln_fft_layout tmp;
            int64_t cin[KILN_MAX_DIMS];
            kiln_contiguous_strides(key->ndim, key->in_shape, kiln_dtype_size((kiln_dtype)key->dtype_in),
                                    cin);
            int out_ok = build_layout(key, c2r ? cin : key->in_strides, key->out_strides, &tmp);
            if (out_ok) s = plan_with_copies(p, c2r, 0);
        }
        if (s == KILN_ERR_UNSUPPORTED) s = plan_with_copies(p, 1, 1);
        if (s != KILN_OK) {
            if (s == KILN_ERR_UNSUPPORTED && kiln_last_error()[0] == '\0')
                kiln_set_error(s, "%s cannot plan %s", p->provider->name, p->label);
            free(p);
            return s;
        }
    }
    kiln_clear_error();
    *out = p;
    return KILN_OK;
}

void kiln_fft_plan_destroy(kiln_fft_plan *p) {
    if (!p) return;
    if (p->impl) p->provider->destroy(p->ctx, p->impl);
    free(p);
}
