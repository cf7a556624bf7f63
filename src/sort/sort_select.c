/* sort_select.c: what is built on a sort: kiln_topk (the first k of a sort
 * along the axis), kiln_unique (runs of equal keys in the sorted array) and
 * kiln_searchsorted (a binary search per element), with the element-wise
 * kernels of sort_util.cuh on the context's provider. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sort/sort.h"

kiln_status kiln_topk(kiln_array *a, int64_t k, int axis, int largest, kiln_array *values_out,
                      kiln_array *indices_out, kiln_stream *stream, kiln_array **values_result,
                      kiln_array **indices_result) {
    const char *what = "kiln_topk";
    if (values_result) *values_result = NULL;
    if (indices_result) *indices_result = NULL;
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL array", what);
    kiln_status s = kiln_context_check(a->ctx);
    if (s == KILN_OK) s = sort_check_dtype(what, "the keys", a->dtype);
    if (s == KILN_OK) s = sort_normalize_axis(what, a, &axis);
    if (s != KILN_OK) return s;
    int64_t len = axis == KILN_AXIS_FLAT ? kiln_array_size(a) : a->shape[axis];
    if (k < 0 || k > len)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: k is %lld but the axis has %lld elements (0 <= k <= %lld)", what,
                              (long long)k, (long long)len, (long long)len);
    sort_request r = {
        .what = what, .keys = a, .axis = axis, .descending = largest != 0, .want_index = 1, .stream = stream};
    kiln_array *sk = NULL, *si = NULL, *vk = NULL, *vi = NULL;
    s = sort_execute(&r, &sk, &si);
    int last = sk ? sk->ndim - 1 : 0;
    if (s == KILN_OK) s = kiln_array_slice(sk, last, 0, k, 1, &vk);
    if (s == KILN_OK) s = kiln_array_slice(si, last, 0, k, 1, &vi);
    kiln_array_release(sk);
    kiln_array_release(si);
    /* the slices are strided: copies in the axis-last layout, then moved back */
    kiln_array *ck = NULL, *ci = NULL;
    if (s == KILN_OK) s = kiln_array_copy(vk, &ck);
    if (s == KILN_OK) s = kiln_array_copy(vi, &ci);
    kiln_array_release(vk);
    kiln_array_release(vi);
    if (s == KILN_OK && (values_out || values_result))
        s = sort_axis_back(what, "values_out", ck, axis, values_out, values_result);
    if (s == KILN_OK && (indices_out || indices_result))
        s = sort_axis_back(what, "indices_out", ci, axis, indices_out, indices_result);
    kiln_array_release(ck);
    kiln_array_release(ci);
    if (s != KILN_OK) {
        if (values_result && *values_result) kiln_array_release(*values_result), *values_result = NULL;
        if (indices_result && *indices_result) kiln_array_release(*indices_result), *indices_result = NULL;
    }
    return s;
}

typedef struct keyed_module {
    kiln_context *ctx;
    const sort_provider *p;
    char *src;
} keyed_module;

static kiln_status keyed_open(kiln_context *ctx, kiln_dtype dtype, keyed_module *m) {
    m->ctx = ctx;
    kiln_status s = sort_provider_for(ctx, &m->p);
    if (s != KILN_OK) return s;
    m->src = sort_module_source(dtype, 0, NULL, NULL);
    return m->src ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
}

static kiln_status keyed_run(keyed_module *m, const char *name, int64_t n, kiln_stream *stream,
                             const kiln_value *args, int nargs) {
    kiln_kernel *k = NULL;
    kiln_status s = sort_kernel(m->ctx, m->src, name, &k);
    return s == KILN_OK ? sort_launch_util(m->ctx, m->p, k, n, stream, args, nargs) : s;
}

static kiln_status new_i64(kiln_context *ctx, int64_t n, kiln_stream *stream, kiln_array **out) {
    kiln_status s = kiln_array_empty(ctx, KILN_INT64, 1, &n, out);
    if (s == KILN_OK && stream) kiln_array_note_stream(*out, stream);
    return s;
}

static void *data_or_null(kiln_array **a) { return a && *a ? (*a)->data : NULL; }

kiln_status kiln_unique(kiln_array *a, kiln_stream *stream, kiln_array **values, kiln_array **index,
                        kiln_array **inverse, kiln_array **counts) {
    const char *what = "kiln_unique";
    kiln_array **outs[4] = {values, index, inverse, counts};
    for (int i = 0; i < 4; i++)
        if (outs[i]) *outs[i] = NULL;
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL array", what);
    if (!values) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL values pointer", what);
    kiln_status s = kiln_context_check(a->ctx);
    if (s == KILN_OK) s = sort_check_dtype(what, "the elements", a->dtype);
    if (s != KILN_OK) return s;
    kiln_context *ctx = a->ctx;
    sort_request r = {.what = what, .keys = a, .axis = KILN_AXIS_FLAT, .want_index = 1, .stream = stream};
    kiln_array *sorted = NULL, *perm = NULL, *flags = NULL, *group = NULL, *first = NULL;
    keyed_module m = {0};
    s = sort_execute(&r, &sorted, &perm);
    int64_t n = sorted ? kiln_array_size(sorted) : 0, runs = 0;
    if (s == KILN_OK) s = keyed_open(ctx, a->dtype, &m);
    if (s == KILN_OK) s = new_i64(ctx, n, stream, &flags);
    if (s == KILN_OK && n > 0) {
        kiln_value args[3] = {kiln_ptr(sorted->data, KILN_DTYPE_COUNT), kiln_i64(n),
                              kiln_ptr(flags->data, KILN_DTYPE_COUNT)};
        s = keyed_run(&m, "kiln_sort_run_starts", n, stream, args, 3);
        if (s == KILN_OK) s = kiln_scan(KILN_SCAN_SUM, flags, 0, 0, NULL, stream, &group);
        kiln_array *tail = NULL;
        if (s == KILN_OK) s = kiln_array_slice(group, 0, n - 1, n, 1, &tail);
        if (s == KILN_OK) s = kiln_array_to_host(tail, &runs, sizeof runs); /* waits for the sort */
        kiln_array_release(tail);
    }
    if (s == KILN_OK) s = kiln_array_empty(ctx, a->dtype, 1, &runs, values);
    if (s == KILN_OK) s = new_i64(ctx, runs, stream, &first);
    if (s == KILN_OK && index) s = new_i64(ctx, runs, stream, index);
    if (s == KILN_OK && inverse) s = new_i64(ctx, n, stream, inverse);
    if (s == KILN_OK && counts) s = new_i64(ctx, runs, stream, counts);
    if (s == KILN_OK && n > 0) {
        kiln_value args[8] = {kiln_ptr(sorted->data, KILN_DTYPE_COUNT),
                              kiln_ptr(perm->data, KILN_DTYPE_COUNT),
                              kiln_ptr(group->data, KILN_DTYPE_COUNT),
                              kiln_i64(n),
                              kiln_ptr((*values)->data, KILN_DTYPE_COUNT),
                              kiln_ptr(first->data, KILN_DTYPE_COUNT),
                              kiln_ptr(data_or_null(index), KILN_DTYPE_COUNT),
                              kiln_ptr(data_or_null(inverse), KILN_DTYPE_COUNT)};
        s = keyed_run(&m, "kiln_sort_unique_scatter", n, stream, args, 8);
    }
    if (s == KILN_OK && counts && runs > 0) {
        kiln_value args[4] = {kiln_ptr(first->data, KILN_DTYPE_COUNT), kiln_i64(runs), kiln_i64(n),
                              kiln_ptr((*counts)->data, KILN_DTYPE_COUNT)};
        s = keyed_run(&m, "kiln_sort_run_counts", runs, stream, args, 4);
    }
    if (s == KILN_OK && stream) kiln_array_note_stream(*values, stream);
    free(m.src);
    kiln_array_release(sorted);
    kiln_array_release(perm);
    kiln_array_release(flags);
    kiln_array_release(group);
    kiln_array_release(first);
    if (s != KILN_OK)
        for (int i = 0; i < 4; i++)
            if (outs[i] && *outs[i]) kiln_array_release(*outs[i]), *outs[i] = NULL;
    return s;
}

kiln_status kiln_searchsorted(kiln_array *sorted, kiln_array *v, kiln_side side, int flags, kiln_array *out,
                              kiln_stream *stream, kiln_array **result) {
    const char *what = "kiln_searchsorted";
    if (result) *result = NULL;
    if (!sorted || !v) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL array", what);
    kiln_status s = kiln_context_check(sorted->ctx);
    if (s == KILN_OK) s = sort_check_dtype(what, "the sorted elements", sorted->dtype);
    if (s != KILN_OK) return s;
    if (sorted->ndim != 1)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: the sorted array must be 1-d; it has %d dims", what,
                              sorted->ndim);
    if (v->dtype != sorted->dtype)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: v is %s but the sorted array is %s; they must match", what,
                              kiln_dtype_name(v->dtype), kiln_dtype_name(sorted->dtype));
    if (side != KILN_SIDE_LEFT && side != KILN_SIDE_RIGHT)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: side is %d; KILN_SIDE_LEFT or KILN_SIDE_RIGHT",
                              what, (int)side);
    if (!out && !result)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: give an output array or a result pointer",
                              what);
    kiln_context *ctx = sorted->ctx;
    kiln_array *s1 = NULL, *v1 = NULL, *res = NULL;
    keyed_module m = {0};
    s = sort_axis_last(sorted, 0, &s1);
    if (s == KILN_OK) s = sort_axis_last(v, KILN_AXIS_FLAT, &v1);
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_INT64, v->ndim, v->shape, &res);
    if (s == KILN_OK && stream) kiln_array_note_stream(res, stream);
    if (s == KILN_OK) s = keyed_open(ctx, sorted->dtype, &m);
    int64_t m_count = kiln_array_size(v);
    if (s == KILN_OK && m_count > 0) {
        kiln_value args[7] = {kiln_ptr(s1->data, KILN_DTYPE_COUNT),
                              kiln_i64(s1->shape[0]),
                              kiln_ptr(v1->data, KILN_DTYPE_COUNT),
                              kiln_i64(m_count),
                              kiln_ptr(res->data, KILN_DTYPE_COUNT),
                              kiln_i32(side == KILN_SIDE_RIGHT),
                              kiln_u64(flags & KILN_SORT_DESCENDING ? ~0ull : 0)};
        s = keyed_run(&m, "kiln_sort_search", m_count, stream, args, 7);
    }
    free(m.src);
    kiln_array_release(s1);
    kiln_array_release(v1);
    if (s == KILN_OK) s = sort_axis_back(what, "out", res, KILN_AXIS_FLAT, out, result);
    kiln_array_release(res);
    return s;
}
