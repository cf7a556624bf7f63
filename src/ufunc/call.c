/* call.c: kiln_call: checking the arguments, choosing where the work runs,
 * moving host or device operands where the kernel can reach them, and
 * launching. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernel/module.h"
#include "ufunc/codegen.h"
#include "ufunc/launch.h"
#include "ufunc/staging.h"
#include "ufunc/ufunc.h"
#include "ufunc/variants.h"

/* ---------------------------------------------------------------- checks */

static kiln_status check_args(kiln_ufunc *f, const kiln_value *args, int nargs, kiln_array **outs) {
    if (nargs != f->nin || (nargs > 0 && !args))
        return kiln_set_error(KILN_ERR_ARG_COUNT, "%s takes %d input%s (%s), got %d", f->name, f->nin,
                              f->nin == 1 ? "" : "s", f->sig_list, nargs);
    if (!outs)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: outs is NULL; pass %d output slot%s (NULL slots receive new arrays)",
                              f->name, f->nout, f->nout == 1 ? "" : "s");
    for (int i = 0; i < nargs; i++) {
        const kiln_value *v = &args[i];
        if (v->kind == KILN_VALUE_ARRAY) {
            if (!v->as.array)
                return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: input %d (%s) is a NULL array", f->name,
                                      i, f->in_names[i]);
            if (v->as.array->ctx != f->ctx)
                return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                                      "%s: input %d (%s) belongs to another context", f->name, i,
                                      f->in_names[i]);
        } else if (v->kind == KILN_VALUE_SCALAR) {
            if ((unsigned)v->dtype >= KILN_DTYPE_COUNT)
                return kiln_set_error(KILN_ERR_ARG_TYPE, "%s: input %d (%s) is a scalar of invalid dtype %d",
                                      f->name, i, f->in_names[i], (int)v->dtype);
        } else {
            return kiln_set_error(
                KILN_ERR_ARG_TYPE,
                "%s: input %d (%s) is a raw pointer; ufuncs take arrays (kiln_arr) and scalars", f->name, i,
                f->in_names[i]);
        }
    }
    for (int j = 0; j < f->nout; j++)
        if (outs[j] && outs[j]->ctx != f->ctx)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: output %d belongs to another context",
                                  f->name, j);
    return KILN_OK;
}

static kiln_status check_out_dtypes(const kiln_ufunc *f, int sig, kiln_array *const *outs) {
    const uf_signature *g = &f->sigs[sig];
    for (int j = 0; j < f->nout; j++)
        if (outs[j] && !kiln_dtype_can_cast(g->out[j], outs[j]->dtype))
            return kiln_set_error(
                KILN_ERR_DTYPE,
                "%s: output %d is %s but signature %s produces %s there, which does not cast "
                "safely to %s",
                f->name, j, kiln_dtype_name(outs[j]->dtype), g->text, kiln_dtype_name(g->out[j]),
                kiln_dtype_name(outs[j]->dtype));
    return KILN_OK;
}

/* ---------------------------------------------------------------- routes */

typedef struct uf_temps {
    kiln_array *in[UF_MAX_IN];      /* staged copies of inputs (released at the end) */
    kiln_array *out[UF_MAX_OUT];    /* where the kernel writes output j (released) */
    kiln_array *result[UF_MAX_OUT]; /* what the caller gets for NULL slots */
} uf_temps;

static void temps_release(uf_temps *t, int keep_results) {
    for (int i = 0; i < UF_MAX_IN; i++) kiln_array_release(t->in[i]);
    for (int j = 0; j < UF_MAX_OUT; j++) {
        kiln_array_release(t->out[j]);
        if (!keep_results) kiln_array_release(t->result[j]);
    }
}

/* Every operand already where exec's kernels can read it. */
static kiln_status run_direct(kiln_ufunc *f, kiln_context *exec, uf_backend be, int parallel, int sig,
                              const kiln_value *args, kiln_array *const *ins, kiln_array *const *kouts,
                              int nd, const int64_t *shape, kiln_stream *stream) {
    uf_plan p;
    uf_build_plan(f, be, sig, args, ins, kouts, NULL, nd, shape, &p);
    return uf_launch_plan(f, exec, &p, parallel, stream);
}

/* cpu / parallel target on a CUDA context: run on the host context over
 * host memory; device operands are copied over and back. */
static kiln_status run_on_host(kiln_ufunc *f, int parallel, int sig, const kiln_value *args,
                               kiln_array **outs, int nd, const int64_t *shape, uf_temps *t) {
    kiln_context *host = NULL;
    kiln_status s = kiln_context_host(f->ctx, &host);
    const uf_signature *g = &f->sigs[sig];
    kiln_array *ins[UF_MAX_IN] = {0}, *kouts[UF_MAX_OUT] = {0};
    for (int i = 0; i < f->nin && s == KILN_OK; i++) {
        if (args[i].kind != KILN_VALUE_ARRAY) continue;
        kiln_array *a = args[i].as.array;
        if (kiln_array_host_accessible(a)) {
            ins[i] = a;
            continue;
        }
        s = kiln_array_empty_host(f->ctx, a->dtype, a->ndim, a->shape, &t->in[i]);
        if (s == KILN_OK) s = kiln_array_assign(t->in[i], a);
        ins[i] = t->in[i];
    }
    for (int j = 0; j < f->nout && s == KILN_OK; j++) {
        if (outs[j] && kiln_array_host_accessible(outs[j])) {
            kouts[j] = outs[j];
        } else if (outs[j]) {
            s = kiln_array_empty_host(f->ctx, outs[j]->dtype, nd, shape, &t->out[j]);
            kouts[j] = t->out[j];
        } else {
            s = kiln_array_empty_host(f->ctx, g->out[j], nd, shape, &t->result[j]);
            kouts[j] = t->result[j];
        }
    }
    if (s == KILN_OK) s = run_direct(f, host, UF_CPU, parallel, sig, args, ins, kouts, nd, shape, NULL);
    if (s == KILN_OK) s = kiln_synchronize(host);
    for (int j = 0; j < f->nout && s == KILN_OK; j++)
        if (t->out[j]) s = kiln_array_assign(outs[j], t->out[j]);
    return s;
}

/* CUDA with host-memory operands, when the pipeline does not apply: whole
 * arrays to the device and back. */
static kiln_status run_staged_whole(kiln_ufunc *f, int sig, const kiln_value *args, kiln_array **outs, int nd,
                                    const int64_t *shape, int host_result, kiln_stream *stream, uf_temps *t) {
    const uf_signature *g = &f->sigs[sig];
    kiln_array *ins[UF_MAX_IN] = {0}, *kouts[UF_MAX_OUT] = {0};
    kiln_status s = KILN_OK;
    for (int i = 0; i < f->nin && s == KILN_OK; i++) {
        if (args[i].kind != KILN_VALUE_ARRAY) continue;
        kiln_array *a = args[i].as.array;
        if (a->memory != KILN_MEMORY_HOST) {
            ins[i] = a;
            continue;
        }
        s = kiln_array_copy(a, &t->in[i]);
        ins[i] = t->in[i];
    }
    for (int j = 0; j < f->nout && s == KILN_OK; j++) {
        if (outs[j] && outs[j]->memory != KILN_MEMORY_HOST) {
            kouts[j] = outs[j];
            continue;
        }
        s = kiln_array_empty(f->ctx, outs[j] ? outs[j]->dtype : g->out[j], nd, shape, &t->out[j]);
        kouts[j] = t->out[j];
        if (s == KILN_OK && !outs[j]) {
            if (host_result)
                s = kiln_array_empty_host(f->ctx, g->out[j], nd, shape, &t->result[j]);
            else
                t->result[j] = kiln_array_retain(t->out[j]);
        }
    }
    if (s == KILN_OK) s = run_direct(f, f->ctx, UF_CUDA, 0, sig, args, ins, kouts, nd, shape, stream);
    for (int j = 0; j < f->nout && s == KILN_OK; j++) {
        kiln_array *dst = outs[j] ? outs[j] : t->result[j];
        if (dst != t->out[j] && dst->memory == KILN_MEMORY_HOST) {
            if (stream) s = kiln_stream_synchronize(stream);
            if (s == KILN_OK) s = kiln_array_assign(dst, t->out[j]);
        }
    }
    return s;
}

kiln_status kiln_call_ex(kiln_ufunc *f, const char *target, kiln_stream *stream, const kiln_value *args,
                         int nargs, kiln_array **outs) {
    if (!f) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_call: ufunc is NULL");
    if (!args && nargs > 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_call: args is NULL with nargs %d", nargs);
    kiln_context *ctx = f->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK) s = check_args(f, args, nargs, outs);
    if (s != KILN_OK) return s;
    if (stream && stream->ctx != ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: stream belongs to another context", f->name);
    uf_target tg = f->target;
    if (target) {
        s = uf_parse_target(target, &tg);
        if (s != KILN_OK) return s;
        if (tg == UF_TARGET_CONTEXT) tg = f->target;
    }
    int cuda_ctx = ctx->ops->kind == KILN_BACKEND_CUDA;
    if (tg == UF_TARGET_CONTEXT) tg = cuda_ctx ? UF_TARGET_CUDA : UF_TARGET_PARALLEL;
    if (tg == UF_TARGET_CUDA && !cuda_ctx)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "%s: target \"cuda\" needs a cuda context; this context is %s", f->name,
                              ctx->ops->name);
    int sig = 0;
    s = uf_dispatch(f, args, &sig);
    if (s == KILN_OK) s = check_out_dtypes(f, sig, outs);
    int nd = 0;
    int64_t shape[KILN_MAX_DIMS];
    if (s == KILN_OK) s = uf_broadcast(f, args, outs, &nd, shape);
    if (s == KILN_OK) s = uf_check_overlap(f, args, outs, nd, shape);
    if (s != KILN_OK) return s;

    const uf_signature *g = &f->sigs[sig];
    int parallel = tg != UF_TARGET_CPU;
    int any_host_in = 0, any_device_in = 0, any_host_out = 0;
    for (int i = 0; i < f->nin; i++)
        if (args[i].kind == KILN_VALUE_ARRAY) {
            if (args[i].as.array->memory == KILN_MEMORY_HOST)
                any_host_in = 1;
            else
                any_device_in = 1;
        }
    for (int j = 0; j < f->nout; j++) any_host_out |= outs[j] && outs[j]->memory == KILN_MEMORY_HOST;

    uf_temps t;
    memset(&t, 0, sizeof t);
    if (!cuda_ctx) {
        /* CPU context: every array is host memory the kernels can use. */
        kiln_array *ins[UF_MAX_IN] = {0}, *kouts[UF_MAX_OUT] = {0};
        for (int i = 0; i < f->nin; i++) ins[i] = args[i].kind == KILN_VALUE_ARRAY ? args[i].as.array : NULL;
        /* New outputs are host memory when every array input is (kiln.h's
         * promise, the same on CUDA), so kiln_array_memory tells the truth. */
        int host_result = any_host_in && !any_device_in;
        for (int j = 0; j < f->nout && s == KILN_OK; j++) {
            if (!outs[j])
                s = host_result ? kiln_array_empty_host(ctx, g->out[j], nd, shape, &t.result[j])
                                : kiln_array_empty(ctx, g->out[j], nd, shape, &t.result[j]);
            kouts[j] = outs[j] ? outs[j] : t.result[j];
        }
        if (s == KILN_OK) s = run_direct(f, ctx, UF_CPU, parallel, sig, args, ins, kouts, nd, shape, stream);
        /* Wrapped host memory is the caller's own: fill it before returning. */
        if (s == KILN_OK && (any_host_out || any_host_in))
            s = stream ? kiln_stream_synchronize(stream) : kiln_synchronize(ctx);
    } else if (tg != UF_TARGET_CUDA) {
        s = run_on_host(f, parallel, sig, args, outs, nd, shape, &t);
    } else if (any_host_in || any_host_out) {
        int host_result = any_host_in && !any_device_in;
        s = uf_staged_call(f, sig, args, outs, nd, shape, stream);
        if (s == KILN_OK) return KILN_OK; /* outs written by the pipeline */
        if (s == KILN_ERR_UNSUPPORTED) {
            kiln_clear_error();
            s = run_staged_whole(f, sig, args, outs, nd, shape, host_result, stream, &t);
        }
    } else {
        kiln_array *ins[UF_MAX_IN] = {0}, *kouts[UF_MAX_OUT] = {0};
        for (int i = 0; i < f->nin; i++) ins[i] = args[i].kind == KILN_VALUE_ARRAY ? args[i].as.array : NULL;
        for (int j = 0; j < f->nout && s == KILN_OK; j++) {
            if (!outs[j]) s = kiln_array_empty(ctx, g->out[j], nd, shape, &t.result[j]);
            kouts[j] = outs[j] ? outs[j] : t.result[j];
        }
        if (s == KILN_OK) s = run_direct(f, ctx, UF_CUDA, 0, sig, args, ins, kouts, nd, shape, stream);
    }
    if (s != KILN_OK) {
        temps_release(&t, 0);
        return s;
    }
    for (int j = 0; j < f->nout; j++)
        if (!outs[j]) outs[j] = t.result[j];
    temps_release(&t, 1);
    return KILN_OK;
}

kiln_status kiln_call(kiln_ufunc *f, const kiln_value *args, int nargs, kiln_array **outs) {
    return kiln_call_ex(f, NULL, NULL, args, nargs, outs);
}

kiln_status kiln_ufunc_source(kiln_ufunc *f, const char *target, const kiln_value *args, int nargs,
                              kiln_array *const *outs, char **source) {
    if (!f || !target || !source)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_ufunc_source: NULL argument");
    kiln_array *none[UF_MAX_OUT] = {0};
    if (!outs) outs = none;
    uf_backend be;
    if (strcmp(target, "cuda") == 0)
        be = UF_CUDA;
    else if (strcmp(target, "cpu") == 0 || strcmp(target, "parallel") == 0)
        be = UF_CPU;
    else
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_ufunc_source: target must be \"cuda\" or \"cpu\", got \"%s\"", target);
    kiln_status s = check_args(f, args, nargs, (kiln_array **)outs);
    int sig = 0, nd = 0;
    int64_t shape[KILN_MAX_DIMS];
    if (s == KILN_OK) s = uf_dispatch(f, args, &sig);
    if (s == KILN_OK) s = check_out_dtypes(f, sig, outs);
    if (s == KILN_OK) s = uf_broadcast(f, args, outs, &nd, shape);
    if (s != KILN_OK) return s;
    kiln_array *ins[UF_MAX_IN] = {0};
    for (int i = 0; i < f->nin; i++) ins[i] = args[i].kind == KILN_VALUE_ARRAY ? args[i].as.array : NULL;
    uf_plan p;
    uf_build_plan(f, be, sig, args, ins, outs, f->sigs[sig].out, nd, shape, &p);
    p.key.cover = (uint8_t)UF_ASSUMED_COVER(f, &p.key);
    /* The kernel a first call would run: its signature's mixed one for
     * contiguous operands (uf_launch_plan; on CUDA later calls move to the
     * exact one, which KILN_UFUNC_MIXED_LIMIT=0 shows). */
    uf_key run = p.key;
    if (uf_mixed_key(f, &p.key, &run)) run.cover = (uint8_t)UF_ASSUMED_COVER(f, &run);
    char name[1][UF_KERNEL_NAME_MAX];
    return uf_generate(f, &run, 1, source, name);
}
