/* run.c: one reduction call from operands to result: checks, broadcasting,
 * the output (given or new, written through a contiguous temporary when the
 * given one is strided), the plan, the kernels, the main pass and the fixed
 * second pass over the partials. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "kernel/module.h"
#include "reduce/rd_provider.h"
#include "reduce/reduce.h"

kiln_status rd_device_input(kiln_context *ctx, kiln_array *a, kiln_array **out) {
    if (a->memory != KILN_MEMORY_HOST || kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY)) {
        *out = kiln_array_retain(a);
        return KILN_OK;
    }
    kiln_array *d = NULL;
    kiln_status s = kiln_array_empty(ctx, a->dtype, a->ndim, a->shape, &d);
    if (s == KILN_OK) s = kiln_array_assign(d, a);
    if (s != KILN_OK) {
        kiln_array_release(d);
        return s;
    }
    *out = d;
    return KILN_OK;
}

kiln_status rd_check_out(const char *what, kiln_array *out, kiln_dtype want, int ndim, const int64_t *shape) {
    char a[256], b[256];
    int same = out->ndim == ndim;
    for (int d = 0; d < ndim && same; d++) same = out->shape[d] == shape[d];
    if (!same)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: the output has shape %s but the result has shape %s", what,
                              kiln_shape_format(out->ndim, out->shape, a, sizeof a),
                              kiln_shape_format(ndim, shape, b, sizeof b));
    if (out->dtype != want && !kiln_dtype_can_cast(want, out->dtype))
        return kiln_set_error(KILN_ERR_DTYPE,
                              "%s: the result is %s, which does not cast safely to the output's %s", what,
                              kiln_dtype_name(want), kiln_dtype_name(out->dtype));
    return KILN_OK;
}

kiln_dtype rd_accumulation_dtype(kiln_dtype result, const kiln_array *out) {
    if (!out || out->dtype == result || !kiln_dtype_can_cast(result, out->dtype)) return result;
    /* a real result into a complex out: the imaginary part stays 0, so the
     * real type of out's precision gives the same numbers */
    if (kiln_dtype_kind(result) != 'c' && kiln_dtype_kind(out->dtype) == 'c')
        return out->dtype == KILN_COMPLEX64 ? KILN_FLOAT32 : KILN_FLOAT64;
    return out->dtype;
}

kiln_status rd_destination(kiln_context *ctx, kiln_array *out, kiln_dtype dtype, int ndim,
                           const int64_t *shape, kiln_array **made, kiln_array **tmp, kiln_array **dst) {
    kiln_status s = KILN_OK;
    *dst = out;
    if (!out) {
        s = kiln_array_empty(ctx, dtype, ndim, shape, made);
        *dst = *made;
    } else if (!kiln_array_is_contiguous(out) ||
               (out->memory == KILN_MEMORY_HOST &&
                !kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY))) {
        s = kiln_array_empty(ctx, out->dtype, ndim, shape, tmp);
        *dst = *tmp;
    }
    return s;
}

kiln_status rd_finish(kiln_status s, kiln_array *out, kiln_array *tmp, kiln_array *made,
                      kiln_array **result) {
    if (s == KILN_OK && tmp) s = kiln_array_assign(out, tmp);
    kiln_array_release(tmp);
    if (s != KILN_OK) {
        kiln_array_release(made);
        return s;
    }
    if (result)
        *result = made ? made : kiln_array_retain(out);
    else
        kiln_array_release(made);
    return KILN_OK;
}

/* NumPy broadcasting of the array inputs. */
static kiln_status broadcast(const rd_op *op, kiln_array *const *arr, int *ndim_out, int64_t *shape) {
    int nd = 0;
    char a[256], b[256];
    for (int i = 0; i < op->nin; i++)
        if (arr[i] && arr[i]->ndim > nd) nd = arr[i]->ndim;
    for (int d = 0; d < nd; d++) shape[d] = 1;
    int first = -1;
    for (int i = 0; i < op->nin; i++) {
        const kiln_array *x = arr[i];
        if (!x) continue;
        for (int d = 0; d < x->ndim; d++) {
            int64_t *s = &shape[nd - x->ndim + d];
            if (x->shape[d] == *s || x->shape[d] == 1) continue;
            if (*s != 1)
                return kiln_set_error(KILN_ERR_SHAPE, "%s: cannot broadcast input %d %s with input %d %s",
                                      op->name, first,
                                      kiln_shape_format(arr[first]->ndim, arr[first]->shape, a, sizeof a), i,
                                      kiln_shape_format(x->ndim, x->shape, b, sizeof b));
            *s = x->shape[d];
        }
        if (first < 0) first = i;
    }
    *ndim_out = nd;
    return KILN_OK;
}

/* Resolves the inputs of a call into arrays (device-resident) and scalars. */
static kiln_status take_inputs(const rd_op *op, kiln_context *ctx, const kiln_value *args, int nargs,
                               kiln_array **arr, kiln_value *val) {
    if (nargs != op->nin)
        return kiln_set_error(KILN_ERR_ARG_COUNT, "%s takes %d input%s, got %d", op->name, op->nin,
                              op->nin == 1 ? "" : "s", nargs);
    int any = 0;
    for (int i = 0; i < op->nin; i++) {
        arr[i] = NULL;
        const kiln_value *v = &args[i];
        if (v->kind == KILN_VALUE_SCALAR) {
            val[i] = kiln_value_convert(v, op->in_dtype[i]);
            continue;
        }
        if (v->kind != KILN_VALUE_ARRAY || !v->as.array)
            return kiln_set_error(KILN_ERR_ARG_TYPE, "%s: input %d (%s) must be an array or a scalar",
                                  op->name, i, op->in_name[i]);
        kiln_array *a = v->as.array;
        if (a->ctx != ctx)
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: input %d (%s) belongs to another context",
                                  op->name, i, op->in_name[i]);
        if (a->dtype != op->in_dtype[i] && !kiln_dtype_can_cast(a->dtype, op->in_dtype[i]))
            return kiln_set_error(KILN_ERR_DTYPE, "%s: input %d (%s) is %s, which does not cast safely to %s",
                                  op->name, i, op->in_name[i], kiln_dtype_name(a->dtype),
                                  kiln_dtype_name(op->in_dtype[i]));
        int64_t item = (int64_t)kiln_dtype_size(a->dtype);
        for (int d = 0; d < a->ndim; d++)
            if (a->shape[d] > 1 && a->strides[d] % item != 0)
                return kiln_set_error(
                    KILN_ERR_UNSUPPORTED,
                    "%s: input %d has a stride of %lld bytes, not a multiple of its item size %lld; "
                    "copy it first (kiln_array_copy)",
                    op->name, i, (long long)a->strides[d], (long long)item);
        any = 1;
    }
    if (!any)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: at least one input must be an array", op->name);
    for (int i = 0; i < op->nin; i++) {
        if (args[i].kind != KILN_VALUE_ARRAY) continue;
        kiln_status s = rd_device_input(ctx, args[i].as.array, &arr[i]);
        if (s != KILN_OK) {
            for (int j = 0; j < i; j++) kiln_array_release(arr[j]);
            return s;
        }
    }
    return KILN_OK;
}

static kiln_status acc_bytes(kiln_context *ctx, const char *src, const char *name, size_t *out) {
    if ((*out = rd_cache_aux(ctx, src)) != 0) return KILN_OK;
    kiln_kernel *k = NULL;
    kiln_status s = rd_cached_kernel(ctx, src, name, "kiln_rd_acc_bytes", NULL, &k);
    kiln_array *buf = NULL;
    int64_t one = 1;
    long long v = 0;
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_INT64, 1, &one, &buf);
    if (s == KILN_OK) s = kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL, KILN_ARGS(kiln_arr(buf)));
    if (s == KILN_OK) s = kiln_array_to_host(buf, &v, sizeof v);
    kiln_array_release(buf);
    if (s == KILN_OK) {
        *out = (size_t)v;
        rd_cache_set_aux(ctx, src, *out);
    }
    return s;
}

/* Launches the passes of plan p over device memory `dst` (contiguous, the
 * plan's out_store). */
static kiln_status launch(const rd_op *op, kiln_context *ctx, const rd_plan *p, const char *src, void *dst,
                          kiln_stream *stream) {
    char what[160];
    snprintf(what, sizeof what,
             "%s: the reduction did not compile (lines below count from each snippet's first line):\n",
             op->name);
    kiln_kernel *main_k = NULL, *fin = NULL;
    kiln_status s = rd_cached_kernel(ctx, src, op->name, "kiln_rd_main", what, &main_k);
    if (s != KILN_OK) return s;
    if (p->O == 0) return KILN_OK;
    kiln_array *part = NULL;
    if (p->splits > 1) {
        size_t bytes = 0;
        s = acc_bytes(ctx, src, op->name, &bytes);
        int64_t n = (int64_t)(bytes * (size_t)p->splits * (size_t)p->O);
        if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_UINT8, 1, &n, &part);
        if (s != KILN_OK) return s;
        if (stream) kiln_array_note_stream(part, stream);
    }
    kiln_value args[KILN_MAX_PARAMS];
    int nargs = rd_main_args(op, p, dst, part ? part->data : NULL, args, KILN_MAX_PARAMS);
    if (nargs < 0) {
        kiln_array_release(part);
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "%s: too many dims and inputs for one kernel (more than %d parameters)",
                              op->name, KILN_MAX_PARAMS);
    }
    kiln_dim3 grid, block;
    p->prov->main_shape(p, &grid, &block);
    s = kiln_launch(main_k, grid, block, 0, stream, args, nargs);
    if (s == KILN_OK && p->splits > 1) {
        nargs = rd_finish_args(p, dst, part->data, args, KILN_MAX_PARAMS);
        const char *finish = p->prov->finish_shape(p, p->prov->finish_per(p), &grid, &block);
        s = rd_cached_kernel(ctx, src, op->name, finish, what, &fin);
        if (s == KILN_OK) s = kiln_launch(fin, grid, block, 0, stream, args, nargs);
    }
    kiln_array_release(part);
    return s;
}

/* Everything the generated text depends on (not sizes, strides or pointers). */
static void plan_key(const rd_op *op, const rd_plan *p, uint64_t key[2]) {
    key[0] = 1469598103934665603ull;
    key[1] = 0x6a09e667f3bcc908ull;
    rd_key_str(key, "reduce");
    rd_key_str(key, op->name);
    rd_key_str(key, op->acc_type);
    rd_key_str(key, op->identity);
    rd_key_str(key, op->map);
    rd_key_str(key, op->reduce);
    rd_key_str(key, op->post);
    rd_key_str(key, op->preamble);
    rd_key_str(key, op->step);
    int ints[] = {
        op->nin,         (int)op->out_dtype, op->user, op->has_identity, op->uses_index, op->gpu_acc_f64,
        (int)p->backend, (int)p->out_store,  p->ndo,   p->ndr,           (int)p->layout, p->vec,
        p->group,        op->uses_ddof,      op->ddof};
    rd_key_add(key, ints, sizeof ints);
    for (int i = 0; i < op->nin; i++) {
        int in[] = {(int)op->in_dtype[i], p->scalar[i], (int)p->store[i]};
        rd_key_add(key, in, sizeof in);
        rd_key_str(key, op->in_name[i]);
    }
}

kiln_status rd_execute(const rd_op *op, kiln_context *ctx, const kiln_value *args, int nargs, const int *axes,
                       int naxes, int keepdims, kiln_array *out, kiln_stream *stream, kiln_array **result) {
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!result && !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: give an output array or a result pointer",
                              op->name);
    if (out && out->ctx != ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the output belongs to another context",
                              op->name);
    kiln_array *arr[RD_MAX_IN];
    kiln_value val[RD_MAX_IN];
    s = take_inputs(op, ctx, args, nargs, arr, val);
    if (s != KILN_OK) return s;
    int ndim = 0, red[KILN_MAX_DIMS];
    int64_t shape[KILN_MAX_DIMS], rshape[KILN_MAX_DIMS];
    kiln_array *tmp = NULL, *made = NULL;
    s = broadcast(op, arr, &ndim, shape);
    if (s == KILN_OK) s = rd_parse_axes(ndim, axes, naxes, op->name, red);
    int rnd = rd_result_shape(ndim, shape, red, keepdims, rshape);
    int64_t O = 1, R = 1;
    for (int d = 0; d < ndim; d++) {
        if (red[d])
            R *= shape[d];
        else
            O *= shape[d];
    }
    if (s == KILN_OK && R == 0 && O > 0 && !op->has_identity) {
        char sh[256];
        s = kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "%s: zero-size reduction of an array of shape %s over an empty axis: the operation has no "
            "identity",
            op->name, kiln_shape_format(ndim, shape, sh, sizeof sh));
    }
    if (s == KILN_OK && out) s = rd_check_out(op->name, out, op->out_dtype, rnd, rshape);
    kiln_array *dst = out;
    if (s == KILN_OK) s = rd_destination(ctx, out, op->out_dtype, rnd, rshape, &made, &tmp, &dst);
    rd_plan p;
    char *src = NULL;
    if (s == KILN_OK) s = rd_build_plan(op, ctx, ctx->ops->kind, ndim, shape, red, arr, &p);
    if (s == KILN_OK) {
        for (int i = 0; i < op->nin; i++) p.value[i] = val[i];
        p.out_store = dst->dtype;
        /* a repeated call finds its module by key, without generating text */
        uint64_t key[2];
        plan_key(op, &p, key);
        const char *text = rd_cache_source_for_key(ctx, key);
        if (!text) {
            text = src = rd_generate(op, &p);
            if (!src)
                s = kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: too many dims and inputs for one kernel",
                                   op->name);
        }
        if (s == KILN_OK) s = launch(op, ctx, &p, text, dst->data, stream);
        if (s == KILN_OK && src) rd_cache_set_key(ctx, src, key);
    }
    s = rd_finish(s, out, tmp, made, result);
    free(src);
    for (int i = 0; i < op->nin; i++) kiln_array_release(arr[i]);
    return s;
}

kiln_status rd_source_for(const rd_op *op, kiln_backend_kind backend, kiln_array *a, const int *axes,
                          int naxes, char **source) {
    int red[KILN_MAX_DIMS];
    kiln_status s = rd_parse_axes(a->ndim, axes, naxes, op->name, red);
    if (s != KILN_OK) return s;
    kiln_array *arr[RD_MAX_IN] = {a};
    rd_plan p;
    s = rd_build_plan(op, a->ctx, backend, a->ndim, a->shape, red, arr, &p);
    if (s != KILN_OK) return s;
    p.out_store = op->out_dtype;
    *source = rd_generate(op, &p);
    return *source ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
}
