/* sort_api.c: kiln_sort, kiln_argsort, kiln_sort_pairs and
 * kiln_sort_segments: argument checks, the sort of the contiguous axis-last
 * buffer by the context's provider, the results in the caller's layout. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sort/sort.h"

kiln_status sort_provider_for(kiln_context *ctx, const sort_provider **out) {
    static const kiln_provider *const candidates[] = {&kiln_sort_cuda_provider.base,
                                                      &kiln_sort_cpu_provider.base};
    const kiln_provider *p = NULL;
    kiln_status s = kiln_provider_select(ctx, candidates, sizeof candidates / sizeof candidates[0], &p);
    *out = (const sort_provider *)p;
    return s;
}

/* The segments' bounds on the host, checked against n, and a contiguous
 * device copy for the kernels. */
static kiln_status load_offsets(const char *what, kiln_array *offsets, int64_t n, kiln_array **dev,
                                int64_t **host, int64_t *nseg) {
    if (offsets->dtype != KILN_INT64)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: offsets are %s; they must be int64", what,
                              kiln_dtype_name(offsets->dtype));
    if (offsets->ndim != 1 || offsets->shape[0] < 1)
        return kiln_set_error(
            KILN_ERR_SHAPE,
            "%s: offsets must be 1-d with at least one element (segments + 1); they have %d "
            "dim%s and %lld elements",
            what, offsets->ndim, offsets->ndim == 1 ? "" : "s", (long long)kiln_array_size(offsets));
    int64_t m = offsets->shape[0];
    kiln_status s = sort_axis_last(offsets, 0, dev);
    int64_t *h = malloc(sizeof *h * (size_t)m);
    if (s == KILN_OK && !h) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) s = kiln_array_to_host(*dev, h, sizeof *h * (size_t)m);
    if (s == KILN_OK && h[0] != 0)
        s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: offsets[0] is %lld; the first segment starts at 0",
                           what, (long long)h[0]);
    for (int64_t i = 1; i < m && s == KILN_OK; i++)
        if (h[i] < h[i - 1])
            s = kiln_set_error(
                KILN_ERR_INVALID_ARGUMENT,
                "%s: offsets[%lld] is %lld, below offsets[%lld] = %lld; offsets must not decrease", what,
                (long long)i, (long long)h[i], (long long)(i - 1), (long long)h[i - 1]);
    if (s == KILN_OK && h[m - 1] != n)
        s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                           "%s: the last offset is %lld but the keys have %lld elements; they must be equal",
                           what, (long long)h[m - 1], (long long)n);
    if (s != KILN_OK) {
        free(h);
        kiln_array_release(*dev);
        *dev = NULL;
        return s;
    }
    *host = h;
    *nseg = m - 1;
    return KILN_OK;
}

static kiln_status util_launch(kiln_context *ctx, const sort_provider *p, const char *name, int64_t n,
                               kiln_stream *stream, const kiln_value *args, int nargs) {
    char *src = sort_module_source(KILN_UINT32, 4, NULL, NULL);
    if (!src) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_kernel *k = NULL;
    kiln_status s = sort_kernel(ctx, src, name, &k);
    free(src);
    return s == KILN_OK ? sort_launch_util(ctx, p, k, n, stream, args, nargs) : s;
}

kiln_status sort_execute(const sort_request *r, kiln_array **keys, kiln_array **values) {
    *keys = NULL;
    if (values) *values = NULL;
    kiln_context *ctx = r->keys->ctx;
    const sort_provider *p = NULL;
    kiln_status s = sort_provider_for(ctx, &p);
    if (s != KILN_OK) return s;
    kiln_array *kin = NULL, *vin = NULL, *kres = NULL, *vres = NULL, *off = NULL, *scratch = NULL;
    int64_t *off_host = NULL, nseg = 0;
    s = sort_axis_last(r->keys, r->axis, &kin);
    if (s != KILN_OK) return s;
    int64_t n = kiln_array_size(kin), len = kin->ndim ? kin->shape[kin->ndim - 1] : 1;
    if (n > SORT_MAX_ELEMENTS)
        s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                           "%s: %lld elements; kiln sorts at most %lld in one call", r->what, (long long)n,
                           (long long)SORT_MAX_ELEMENTS);
    if (s == KILN_OK && r->offsets) s = load_offsets(r->what, r->offsets, n, &off, &off_host, &nseg);
    if (s == KILN_OK && r->values) s = sort_axis_last(r->values, r->axis, &vin);
    if (s == KILN_OK) s = kiln_array_empty(ctx, kin->dtype, kin->ndim, kin->shape, &kres);
    if (s == KILN_OK && (r->values || r->want_index))
        s = kiln_array_empty(ctx, r->values ? vin->dtype : KILN_INT64, kin->ndim, kin->shape, &vres);
    sort_job job = {.dtype = kin->dtype,
                    .descending = r->descending,
                    .n = n,
                    .rows = len ? n / len : 0,
                    .len = len,
                    .offsets = off,
                    .offsets_host = off_host,
                    .nseg = nseg,
                    .keys_in = kin->data,
                    .keys_out = kres ? kres->data : NULL,
                    .stream = r->stream};
    if (s == KILN_OK && r->values) {
        job.values_in = vin->data;
        job.values_out = vres->data;
        job.value_bytes = sort_value_bytes(vin->dtype);
    }
    if (s == KILN_OK && r->want_index && n > 0) {
        /* positions (32-bit) sorted with the keys, then made indices along the axis */
        int64_t half = (n * 4 + 255) / 256 * 256;
        s = sort_scratch(ctx, 2 * half, r->stream, &scratch);
        if (s == KILN_OK) {
            job.values_in = scratch->data;
            job.values_out = scratch->data + half;
            job.value_bytes = 4;
            kiln_value a[2] = {kiln_ptr(scratch->data, KILN_DTYPE_COUNT), kiln_i64(n)};
            s = util_launch(ctx, p, "kiln_sort_iota", n, r->stream, a, 2);
        }
    }
    if (s == KILN_OK && n > 0) s = p->sort(ctx, p, &job);
    if (s == KILN_OK && r->want_index && n > 0) {
        kiln_value a[4] = {kiln_ptr(job.values_out, KILN_DTYPE_COUNT), kiln_ptr(vres->data, KILN_DTYPE_COUNT),
                           kiln_i64(n), kiln_i64(r->offsets ? n : len)};
        s = util_launch(ctx, p, "kiln_sort_row_index", n, r->stream, a, 4);
    }
    kiln_array_release(scratch);
    kiln_array_release(kin);
    kiln_array_release(vin);
    kiln_array_release(off);
    free(off_host);
    if (s != KILN_OK) {
        kiln_array_release(kres);
        kiln_array_release(vres);
        return s;
    }
    if (r->stream) {
        kiln_array_note_stream(kres, r->stream);
        if (vres) kiln_array_note_stream(vres, r->stream);
    }
    *keys = kres;
    if (values)
        *values = vres;
    else
        kiln_array_release(vres);
    return KILN_OK;
}

/* The checks every sorting call makes of its key array. */
static kiln_status check_keys(const char *what, kiln_array *a, int *axis) {
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL array", what);
    kiln_status s = kiln_context_check(a->ctx);
    if (s == KILN_OK) s = sort_check_dtype(what, "the keys", a->dtype);
    if (s == KILN_OK && axis) s = sort_normalize_axis(what, a, axis);
    return s;
}

static kiln_status check_values(const char *what, kiln_array *keys, kiln_array *values) {
    if (!values) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL values", what);
    char a[256], b[256];
    int same = values->ndim == keys->ndim && values->ctx == keys->ctx;
    for (int d = 0; d < keys->ndim && same; d++) same = values->shape[d] == keys->shape[d];
    if (!same)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: the values have shape %s but the keys %s; they must match",
                              what, kiln_shape_format(values->ndim, values->shape, a, sizeof a),
                              kiln_shape_format(keys->ndim, keys->shape, b, sizeof b));
    if (!sort_value_bytes(values->dtype))
        return kiln_set_error(KILN_ERR_DTYPE, "%s: values of dtype %s cannot move", what,
                              kiln_dtype_name(values->dtype));
    return KILN_OK;
}

static kiln_status need_result(const char *what, const void *out, const void *result) {
    return out || result ? KILN_OK
                         : kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                                          "%s: give an output array or a result pointer", what);
}

static kiln_status sort_one(const char *what, kiln_array *a, int axis, int flags, kiln_array *out,
                            kiln_stream *stream, kiln_array **result, int index) {
    if (result) *result = NULL;
    kiln_status s = check_keys(what, a, &axis);
    if (s == KILN_OK) s = need_result(what, out, result);
    if (s != KILN_OK) return s;
    sort_request r = {.what = what,
                      .keys = a,
                      .axis = axis,
                      .descending = (flags & KILN_SORT_DESCENDING) != 0,
                      .want_index = index,
                      .stream = stream};
    kiln_array *k = NULL, *v = NULL;
    s = sort_execute(&r, &k, index ? &v : NULL);
    if (s == KILN_OK) s = sort_axis_back(what, "out", index ? v : k, axis, out, result);
    kiln_array_release(k);
    kiln_array_release(v);
    return s;
}

kiln_status kiln_sort(kiln_array *a, int axis, int flags, kiln_array *out, kiln_stream *stream,
                      kiln_array **result) {
    return sort_one("kiln_sort", a, axis, flags, out, stream, result, 0);
}

kiln_status kiln_argsort(kiln_array *a, int axis, int flags, kiln_array *out, kiln_stream *stream,
                         kiln_array **result) {
    return sort_one("kiln_argsort", a, axis, flags, out, stream, result, 1);
}

static kiln_status sort_two(sort_request *r, kiln_array *keys_out, kiln_array *values_out,
                            kiln_array **keys_result, kiln_array **values_result) {
    kiln_array *k = NULL, *v = NULL;
    kiln_status s = sort_execute(r, &k, &v);
    if (s == KILN_OK) s = sort_axis_back(r->what, "keys_out", k, r->axis, keys_out, keys_result);
    if (s == KILN_OK && v) s = sort_axis_back(r->what, "values_out", v, r->axis, values_out, values_result);
    if (s != KILN_OK) {
        if (keys_result && *keys_result) kiln_array_release(*keys_result), *keys_result = NULL;
        if (values_result && *values_result) kiln_array_release(*values_result), *values_result = NULL;
    }
    kiln_array_release(k);
    kiln_array_release(v);
    return s;
}

kiln_status kiln_sort_pairs(kiln_array *keys, kiln_array *values, int axis, int flags, kiln_array *keys_out,
                            kiln_array *values_out, kiln_stream *stream, kiln_array **keys_result,
                            kiln_array **values_result) {
    const char *what = "kiln_sort_pairs";
    if (keys_result) *keys_result = NULL;
    if (values_result) *values_result = NULL;
    kiln_status s = check_keys(what, keys, &axis);
    if (s == KILN_OK) s = check_values(what, keys, values);
    if (s == KILN_OK) s = need_result(what, keys_out, keys_result);
    if (s == KILN_OK) s = need_result(what, values_out, values_result);
    if (s != KILN_OK) return s;
    sort_request r = {.what = what,
                      .keys = keys,
                      .values = values,
                      .axis = axis,
                      .descending = (flags & KILN_SORT_DESCENDING) != 0,
                      .stream = stream};
    return sort_two(&r, keys_out, values_out, keys_result, values_result);
}

kiln_status kiln_sort_segments(kiln_array *keys, kiln_array *values, kiln_array *offsets, int flags,
                               kiln_array *keys_out, kiln_array *values_out, kiln_stream *stream,
                               kiln_array **keys_result, kiln_array **values_result) {
    const char *what = "kiln_sort_segments";
    if (keys_result) *keys_result = NULL;
    if (values_result) *values_result = NULL;
    kiln_status s = check_keys(what, keys, NULL);
    if (s == KILN_OK && keys->ndim != 1)
        s = kiln_set_error(KILN_ERR_SHAPE, "%s: the keys must be 1-d; they have %d dims", what, keys->ndim);
    if (s == KILN_OK && !offsets) s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL offsets", what);
    if (s == KILN_OK && offsets->ctx != keys->ctx)
        s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the offsets belong to another context", what);
    if (s == KILN_OK && values) s = check_values(what, keys, values);
    if (s == KILN_OK) s = need_result(what, keys_out, keys_result);
    if (s == KILN_OK && values) s = need_result(what, values_out, values_result);
    if (s != KILN_OK) return s;
    sort_request r = {.what = what,
                      .keys = keys,
                      .values = values,
                      .axis = 0,
                      .descending = (flags & KILN_SORT_DESCENDING) != 0,
                      .offsets = offsets,
                      .stream = stream};
    return sort_two(&r, keys_out, values_out, keys_result, values_result);
}
