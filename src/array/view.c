/* view.c: slices, reshapes and transposes that share memory with their base. */
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/error.h"

kiln_status kiln_array_view_header(kiln_array *a, kiln_array **out) {
    kiln_array *v = calloc(1, sizeof *v);
    if (!v) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    *v = *a;
    atomic_init(&v->refs, 1);
    atomic_init(&v->last_stream, NULL);
    v->allocation = NULL;
    v->keeper = NULL; /* the base holds the keeper */
    v->keeper_release = NULL;
    v->keeper_write_check = NULL;
    kiln_context_retain(v->ctx);
    /* Host wraps own nothing, so a view needs no base to keep them alive. */
    v->base =
        (a->base || a->allocation || a->keeper_release) ? kiln_array_retain(a->base ? a->base : a) : NULL;
    *out = v;
    return KILN_OK;
}

kiln_status kiln_array_slice(kiln_array *a, int axis, int64_t start, int64_t stop, int64_t step,
                             kiln_array **out) {
    if (!a || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_slice: NULL argument");
    if (axis < 0) axis += a->ndim;
    if (axis < 0 || axis >= a->ndim)
        return kiln_set_error(KILN_ERR_SHAPE, "slice axis %d out of range for a %d-d array", axis, a->ndim);
    if (step == 0) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_slice: step must not be 0");
    if (step == INT64_MIN) /* -step, used below for negative steps, would overflow */
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_array_slice: step %lld cannot be negated; use a step of at least "
                              "-9223372036854775807 (-INT64_MAX)",
                              (long long)step);
    int64_t n = a->shape[axis];
    /* Python's slice.indices(): clamp, counting negatives from the end. */
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
    start = start < lo ? lo : start > hi ? hi : start;
    stop = stop < lo ? lo : stop > hi ? hi : stop;
    /* ceil(distance / |step|), written so that no step near INT64_MAX overflows */
    int64_t count = step > 0 ? (stop > start ? (stop - start - 1) / step + 1 : 0)
                             : (start > stop ? (start - stop - 1) / -step + 1 : 0);
    kiln_array *v = NULL;
    kiln_status s = kiln_array_view_header(a, &v);
    if (s != KILN_OK) return s;
    if (count > 0) v->data = a->data + start * a->strides[axis];
    v->shape[axis] = count;
    /* With two or more elements |step| < n, so the product cannot overflow;
     * a view of at most one element never uses its stride. */
    v->strides[axis] = count > 1 ? a->strides[axis] * step : a->strides[axis];
    *out = v;
    return KILN_OK;
}

kiln_status kiln_array_reshape(kiln_array *a, int ndim, const int64_t *shape, kiln_array **out) {
    if (!a || !out || (ndim > 0 && !shape))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_reshape: NULL argument");
    if (ndim < 0 || ndim > KILN_MAX_DIMS)
        return kiln_set_error(KILN_ERR_SHAPE, "ndim %d out of range (0 to %d)", ndim, KILN_MAX_DIMS);
    int64_t new_shape[KILN_MAX_DIMS], known = 1, total = kiln_array_size(a);
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        new_shape[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) return kiln_set_error(KILN_ERR_SHAPE, "reshape: only one dimension may be -1");
            infer = i;
        } else if (shape[i] < 0) {
            return kiln_set_error(KILN_ERR_SHAPE, "reshape: negative dimension %lld", (long long)shape[i]);
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) new_shape[infer] = known ? total / known : 0;
    char from[256], to[256];
    if (kiln_shape_size(ndim, new_shape) != total)
        return kiln_set_error(KILN_ERR_SHAPE, "cannot reshape array of shape %s (%lld elements) into %s",
                              kiln_shape_format(a->ndim, a->shape, from, sizeof from), (long long)total,
                              kiln_shape_format(ndim, shape, to, sizeof to));
    if (!kiln_array_is_contiguous(a))
        return kiln_set_error(KILN_ERR_SHAPE,
                              "cannot reshape a non-contiguous array of shape %s without a copy; "
                              "kiln_array_copy it first",
                              kiln_shape_format(a->ndim, a->shape, from, sizeof from));
    kiln_array *v = NULL;
    kiln_status s = kiln_array_view_header(a, &v);
    if (s != KILN_OK) return s;
    v->ndim = ndim;
    memcpy(v->shape, new_shape, sizeof(int64_t) * (size_t)ndim);
    kiln_contiguous_strides(ndim, v->shape, kiln_dtype_size(a->dtype), v->strides);
    *out = v;
    return KILN_OK;
}

kiln_status kiln_array_transpose(kiln_array *a, const int *axes, kiln_array **out) {
    if (!a || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_transpose: NULL argument");
    int perm[KILN_MAX_DIMS], seen[KILN_MAX_DIMS] = {0};
    for (int i = 0; i < a->ndim; i++) {
        perm[i] = axes ? axes[i] : a->ndim - 1 - i;
        if (perm[i] < 0) perm[i] += a->ndim;
        if (perm[i] < 0 || perm[i] >= a->ndim || seen[perm[i]]++)
            return kiln_set_error(KILN_ERR_SHAPE,
                                  "transpose: axes are not a permutation of 0..%d (entry %d is %d)",
                                  a->ndim - 1, i, axes ? axes[i] : perm[i]);
    }
    kiln_array *v = NULL;
    kiln_status s = kiln_array_view_header(a, &v);
    if (s != KILN_OK) return s;
    for (int i = 0; i < a->ndim; i++) {
        v->shape[i] = a->shape[perm[i]];
        v->strides[i] = a->strides[perm[i]];
    }
    *out = v;
    return KILN_OK;
}
