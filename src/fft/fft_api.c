/* fft_api.c: the public FFT calls: explicit plans, their execution (copies
 * around layouts the library cannot take, normalisation, profiling), and the
 * one-call forms kiln_fftn / kiln_rfftn / kiln_irfftn. */
#include <stdint.h>
#include <string.h>

#include "array/array.h"
#include "core/error.h"
#include "fft/fft.h"
#include "prof/prof.h"

kiln_status kiln_fft_norm_parse(const char *name, kiln_fft_norm *out) {
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_fft_norm_parse: out is NULL");
    if (!name || !*name || strcmp(name, "backward") == 0)
        *out = KILN_FFT_NORM_BACKWARD;
    else if (strcmp(name, "ortho") == 0)
        *out = KILN_FFT_NORM_ORTHO;
    else if (strcmp(name, "forward") == 0)
        *out = KILN_FFT_NORM_FORWARD;
    else
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "unknown FFT normalisation \"%s\"; expected \"backward\", \"ortho\" or \"forward\"", name);
    return KILN_OK;
}

/* FFTW's new-array execution needs the alignment the plan was made for;
 * cuFFT's needs both pointers aligned to its complex type (a real array
 * that starts at an odd element is not), so a plan is made for the offsets. */
static kiln_status set_alignment(const kiln_array *in, const kiln_array *out, kiln_fft_key *key) {
    int dbl = key->dtype_in == KILN_FLOAT64 || key->dtype_in == KILN_COMPLEX128;
    const kiln_fft_provider *prov;
    kiln_status s = kiln_fft_provider_for(in->ctx, &prov);
    if (s != KILN_OK) return s;
    key->in_align = prov->alignment_of(dbl, in->data);
    key->out_align = prov->alignment_of(dbl, out->data);
    return KILN_OK;
}

static kiln_status plan_for(const char *fn, kiln_fft_kind kind, kiln_fft_direction dir, const kiln_array *in,
                            const kiln_array *out, const int *axes, int naxes, kiln_fft_norm norm,
                            kiln_fft_plan **plan) {
    kiln_fft_key key;
    kiln_status s = kiln_fft_key_from(fn, kind, dir, in, out, axes, naxes, norm, &key);
    if (s != KILN_OK) return s;
    s = set_alignment(in, out, &key);
    if (s != KILN_OK) return s;
    return kiln_fft_cache_get(in->ctx, &key, plan);
}

kiln_status kiln_fft_plan_create(kiln_fft_kind kind, kiln_fft_direction direction, const kiln_array *in,
                                 const kiln_array *out, const int *axes, int naxes, kiln_fft_norm norm,
                                 kiln_fft_plan **plan) {
    if (!plan) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_fft_plan_create: plan is NULL");
    return plan_for("kiln_fft_plan_create", kind, direction, in, out, axes, naxes, norm, plan);
}

int kiln_fft_plan_copies(const kiln_fft_plan *plan) { return plan && (plan->copy_in || plan->copy_out); }

/* The arrays must be laid out as the plan's key says. */
static kiln_status check_against(const kiln_fft_plan *p, const kiln_array *in, const kiln_array *out) {
    const kiln_fft_key *k = &p->key;
    const char *fn = "kiln_fft_execute";
    if (!in || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL array", fn);
    if (in->ctx != p->ctx || out->ctx != p->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: the %s array belongs to another context than the plan", fn,
                              in->ctx != p->ctx ? "input" : "output");
    size_t dims = sizeof(int64_t) * (size_t)k->ndim;
    char a[256], b[256];
    if ((int)in->dtype != k->dtype_in || (int)out->dtype != k->dtype_out)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: plan for %s -> %s, arrays are %s -> %s", fn,
                              kiln_dtype_name((kiln_dtype)k->dtype_in),
                              kiln_dtype_name((kiln_dtype)k->dtype_out), kiln_dtype_name(in->dtype),
                              kiln_dtype_name(out->dtype));
    if (in->ndim != k->ndim || memcmp(in->shape, k->in_shape, dims) != 0)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: plan for input %s, got %s", fn,
                              kiln_shape_format(k->ndim, k->in_shape, a, sizeof a),
                              kiln_shape_format(in->ndim, in->shape, b, sizeof b));
    if (out->ndim != k->ndim || memcmp(out->shape, k->out_shape, dims) != 0)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: plan for output %s, got %s", fn,
                              kiln_shape_format(k->ndim, k->out_shape, a, sizeof a),
                              kiln_shape_format(out->ndim, out->shape, b, sizeof b));
    if (memcmp(in->strides, k->in_strides, dims) != 0 || memcmp(out->strides, k->out_strides, dims) != 0)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: the arrays' strides differ from the plan's (%s %s)", fn,
                              kiln_shape_format(k->ndim, k->in_strides, a, sizeof a),
                              kiln_shape_format(k->ndim, k->out_strides, b, sizeof b));
    if ((in->data == out->data) != (k->inplace != 0))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: plan made %s, arrays are %s", fn,
                              k->inplace ? "in place" : "out of place",
                              k->inplace ? "distinct" : "the same memory");
    if (!k->inplace) {
        char *ilo, *ihi, *olo, *ohi;
        kiln_array_byte_extent(in, &ilo, &ihi);
        kiln_array_byte_extent(out, &olo, &ohi);
        if (ilo < ohi && olo < ihi)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: input and output overlap", fn);
    }
    /* A side the plan copies may sit anywhere; the library runs on the
     * others directly. */
    kiln_fft_key probe = *k;
    set_alignment(in, out, &probe);
    if (!p->trivial &&
        ((!p->copy_in && probe.in_align != k->in_align) || (!p->copy_out && probe.out_align != k->out_align)))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: plan made for arrays at alignment offsets %d/%d, these are at %d/%d (%s "
                              "needs the same; make a plan for these arrays)",
                              fn, k->in_align, k->out_align, probe.in_align, probe.out_align,
                              p->provider->base.name);
    return KILN_OK;
}

static kiln_status scale_output(kiln_fft_plan *p, kiln_array *out, kiln_stream *stream) {
    if (p->scale == 1) return KILN_OK;
    kiln_ufunc *f = NULL;
    kiln_status s = kiln_fft_scale_ufunc(p->ctx, &f);
    if (s != KILN_OK) return s;
    int dbl = out->dtype == KILN_COMPLEX128 || out->dtype == KILN_FLOAT64;
    kiln_value args[2] = {kiln_arr(out), dbl ? kiln_f64(p->scale) : kiln_f32((float)p->scale)};
    kiln_array *outs[1] = {out};
    return kiln_call_ex(f, NULL, stream, args, 2, outs);
}

/* The provider's call, recorded by the profiler (device time on CUDA, wall
 * time on the CPU). */
static kiln_status run_provider(kiln_fft_plan *p, void *in, void *out, kiln_stream *stream) {
    kiln_context *ctx = p->ctx;
    /* A CPU library runs at once, not at a graph's launch (kernel/graph.c). */
    if (!p->provider->capturable && kiln_stream_capturing(stream))
        return kiln_set_error(KILN_ERR_CAPTURE, "%s through %s cannot be captured in a graph", p->label,
                              p->provider->base.name);
    kiln_prof_op *op = NULL;
    if (KILN_PROF_ON(ctx))
        op = kiln_prof_kernel_begin(ctx, p->label, NULL, kiln_stream_impl(stream), p->label);
    kiln_status s = KILN_OK;
    for (int i = 0; i < p->nsteps && s == KILN_OK; i++) {
        const kiln_fft_step *st = &p->steps[i];
        void *src = st->read_out ? out : in, *dst = st->write_in ? in : out;
        s = p->provider->execute(ctx, st->impl, &st->layout, src, dst, stream);
    }
    if (op) kiln_prof_end(ctx, op);
    return kiln_context_note(ctx, s);
}

/* Layouts the library cannot take: through packed scratch (batch axes
 * outermost, kiln_fft_scratch_array). The copies
 * run on the default stream, so the caller's stream is drained first and the
 * default stream after: correct, not overlapped (docs/fft.md says so). */
static kiln_status run_with_copies(kiln_fft_plan *p, kiln_array *in, kiln_array *out, kiln_stream *stream) {
    kiln_context *ctx = p->ctx;
    const kiln_fft_key *k = &p->key;
    kiln_array *sin = NULL, *sout = NULL;
    kiln_status s = KILN_OK;
    if (stream) s = kiln_stream_synchronize(stream);
    if (s == KILN_OK && p->copy_in) {
        s = kiln_fft_scratch_array(ctx, k, in->dtype, k->in_shape, &sin);
        if (s == KILN_OK) s = kiln_array_assign(sin, in);
    }
    if (s == KILN_OK && p->copy_out) s = kiln_fft_scratch_array(ctx, k, out->dtype, k->out_shape, &sout);
    if (s == KILN_OK) s = run_provider(p, sin ? sin->data : in->data, sout ? sout->data : out->data, NULL);
    if (s == KILN_OK && sout) s = kiln_array_assign(out, sout);
    if (s == KILN_OK && stream) s = kiln_context_note(ctx, ctx->ops->stream_synchronize(ctx->state, NULL));
    kiln_array_release(sin);
    kiln_array_release(sout);
    return s;
}

kiln_status kiln_fft_execute(kiln_fft_plan *plan, kiln_array *in, kiln_array *out, kiln_stream *stream) {
    if (!plan) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_fft_execute: plan is NULL");
    if (!plan->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_fft_execute: the plan's context was closed (%s)", plan->label);
    kiln_status s = kiln_context_check(plan->ctx);
    if (s != KILN_OK) return s;
    if ((s = check_against(plan, in, out)) != KILN_OK) return s;
    if (stream && stream->ctx != plan->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_fft_execute: the stream belongs to another context");
    if (plan->trivial) {
        if (kiln_array_size(in) == 0) return KILN_OK;
        /* The copy runs on the default stream: ordered after the caller's
         * stream and before whatever the caller queues next on it. */
        kiln_context *ctx = plan->ctx;
        if (!plan->key.inplace) {
            if (stream && (s = kiln_stream_synchronize(stream)) != KILN_OK) return s;
            if ((s = kiln_array_assign(out, in)) != KILN_OK) return s;
            if (stream &&
                (s = kiln_context_note(ctx, ctx->ops->stream_synchronize(ctx->state, NULL))) != KILN_OK)
                return s;
        }
        return scale_output(plan, out, stream);
    }
    if (plan->copy_in || plan->copy_out)
        s = run_with_copies(plan, in, out, stream);
    else
        s = run_provider(plan, in->data, out->data, stream);
    if (s != KILN_OK) return s;
    if (stream) {
        kiln_array_note_stream(in, stream);
        kiln_array_note_stream(out, stream);
    }
    return scale_output(plan, out, stream);
}

/* The fused product's plan: keyed apart from the plain inverse (key.fuse),
 * so both stay cached side by side. */
kiln_status kiln_fft_product_plan(kiln_array *in, const int *axes, int naxes, kiln_array *out,
                                  kiln_fft_plan **plan) {
    int c2r = out->dtype == KILN_FLOAT32 || out->dtype == KILN_FLOAT64;
    kiln_fft_key key;
    kiln_status s = kiln_fft_key_from("kiln_fft_convolve", c2r ? KILN_FFT_C2R : KILN_FFT_C2C,
                                      KILN_FFT_INVERSE, in, out, axes, naxes, KILN_FFT_NORM_FORWARD, &key);
    if (s == KILN_OK) s = set_alignment(in, out, &key);
    if (s != KILN_OK) return s;
    key.fuse = KILN_FFT_FUSE_PRODUCT;
    return kiln_fft_cache_get(in->ctx, &key, plan);
}

/* ------------------------------------------------------------------ one-call forms */

/* The last transform axis, checked as the plan will check it. */
static kiln_status last_axis(const char *fn, const kiln_array *in, const int *axes, int naxes, int *out) {
    if (!axes) {
        *out = in->ndim - 1;
        return KILN_OK;
    }
    if (naxes < 1 || naxes > in->ndim)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: naxes is %d; expected 1..%d for a %d-d array",
                              fn, naxes, in->ndim, in->ndim);
    int a = axes[naxes - 1] < 0 ? axes[naxes - 1] + in->ndim : axes[naxes - 1];
    if (a < 0 || a >= in->ndim)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: axis %d is out of range for a %d-d array", fn,
                              axes[naxes - 1], in->ndim);
    *out = a;
    return KILN_OK;
}

static kiln_status one_call(const char *fn, kiln_fft_kind kind, kiln_fft_direction dir, kiln_array *in,
                            const int *axes, int naxes, kiln_fft_norm norm, kiln_dtype out_dtype,
                            const int64_t *out_shape, kiln_array **out) {
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    kiln_array *dst = *out;
    kiln_status s = KILN_OK;
    if (!dst && (s = kiln_array_empty(in->ctx, out_dtype, in->ndim, out_shape, &dst)) != KILN_OK) return s;
    kiln_fft_plan *plan = NULL;
    s = plan_for(fn, kind, dir, in, dst, axes, naxes, norm, &plan);
    if (s == KILN_OK) s = kiln_fft_execute(plan, in, dst, NULL);
    kiln_fft_plan_release(plan);
    if (s != KILN_OK) {
        if (!*out) kiln_array_release(dst);
        return s;
    }
    *out = dst;
    return KILN_OK;
}

kiln_status kiln_fftn(kiln_array *in, const int *axes, int naxes, kiln_fft_norm norm,
                      kiln_fft_direction direction, kiln_array **out) {
    if (!in) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_fftn: input is NULL");
    return one_call("kiln_fftn", KILN_FFT_C2C, direction, in, axes, naxes, norm, in->dtype, in->shape, out);
}

kiln_status kiln_rfftn(kiln_array *in, const int *axes, int naxes, kiln_fft_norm norm, kiln_array **out) {
    const char *fn = "kiln_rfftn";
    if (!in) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: input is NULL", fn);
    if (in->dtype != KILN_FLOAT32 && in->dtype != KILN_FLOAT64)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: R2C needs float32 or float64 input, got %s", fn,
                              kiln_dtype_name(in->dtype));
    int last = 0;
    kiln_status s = last_axis(fn, in, axes, naxes, &last);
    if (s != KILN_OK) return s;
    int64_t shape[KILN_MAX_DIMS];
    memcpy(shape, in->shape, sizeof(int64_t) * (size_t)in->ndim);
    shape[last] = in->shape[last] / 2 + 1;
    return one_call(fn, KILN_FFT_R2C, KILN_FFT_FORWARD, in, axes, naxes, norm, kiln_fft_complex_of(in->dtype),
                    shape, out);
}

kiln_status kiln_irfftn(kiln_array *in, const int *axes, int naxes, int64_t last_n, kiln_fft_norm norm,
                        kiln_array **out) {
    const char *fn = "kiln_irfftn";
    if (!in) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: input is NULL", fn);
    if (in->dtype != KILN_COMPLEX64 && in->dtype != KILN_COMPLEX128)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: C2R needs complex64 or complex128 input, got %s", fn,
                              kiln_dtype_name(in->dtype));
    int last = 0;
    kiln_status s = last_axis(fn, in, axes, naxes, &last);
    if (s != KILN_OK) return s;
    int64_t m = in->shape[last];
    if (last_n < 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: last_n is %lld", fn, (long long)last_n);
    if (last_n == 0) last_n = 2 * (m - 1);
    if (last_n < 1 || last_n / 2 + 1 != m)
        return kiln_set_error(KILN_ERR_SHAPE,
                              "%s: %lld complex inputs along axis %d cannot give %lld reals (needs %lld)", fn,
                              (long long)m, last, (long long)last_n, (long long)(last_n / 2 + 1));
    int64_t shape[KILN_MAX_DIMS];
    memcpy(shape, in->shape, sizeof(int64_t) * (size_t)in->ndim);
    shape[last] = last_n;
    return one_call(fn, KILN_FFT_C2R, KILN_FFT_INVERSE, in, axes, naxes, norm, kiln_fft_real_of(in->dtype),
                    shape, out);
}
