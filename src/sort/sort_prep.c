/* sort_prep.c: the sorted axis moved last into one contiguous device
 * buffer (the shape every provider sorts: rows of the axis's length), and
 * the results moved back into the caller's layout. */
#include <string.h>

#include "core/error.h"
#include "sort/sort.h"

kiln_status sort_normalize_axis(const char *what, const kiln_array *a, int *axis) {
    if (*axis == KILN_AXIS_FLAT) return KILN_OK;
    int nd = a->ndim;
    if (nd == 0 || *axis < -nd || *axis >= nd)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: axis %d is out of range for an array of %d dim%s (valid: %d..%d, or "
                              "KILN_AXIS_FLAT)",
                              what, *axis, nd, nd == 1 ? "" : "s", -nd, nd - 1);
    if (*axis < 0) *axis += nd;
    return KILN_OK;
}

/* axes[i]: the dim of a that dim i of the axis-last layout is */
static void forward_axes(int nd, int axis, int *axes) {
    for (int i = 0; i < nd; i++) axes[i] = i < axis ? i : i < nd - 1 ? i + 1 : axis;
}

int sort_axis_last_shape(const kiln_array *a, int axis, int64_t *shape) {
    if (axis == KILN_AXIS_FLAT) {
        shape[0] = kiln_array_size(a);
        return 1;
    }
    int axes[KILN_MAX_DIMS];
    forward_axes(a->ndim, axis, axes);
    for (int i = 0; i < a->ndim; i++) shape[i] = a->shape[axes[i]];
    return a->ndim;
}

static int on_device(const kiln_array *a) {
    return kiln_context_backend(a->ctx) != KILN_BACKEND_CUDA || a->memory != KILN_MEMORY_HOST;
}

kiln_status sort_axis_last(kiln_array *a, int axis, kiln_array **out) {
    int64_t shape[KILN_MAX_DIMS];
    int nd = sort_axis_last_shape(a, axis, shape);
    int last = axis == KILN_AXIS_FLAT || axis == a->ndim - 1;
    if (last && on_device(a) && kiln_array_is_contiguous(a)) {
        if (axis != KILN_AXIS_FLAT || a->ndim == 1) {
            *out = kiln_array_retain(a);
            return KILN_OK;
        }
        return kiln_array_reshape(a, 1, shape, out);
    }
    kiln_array *view = NULL, *dst = NULL;
    kiln_status s;
    if (axis == KILN_AXIS_FLAT) {
        /* C order: a contiguous copy in a's shape, then seen as 1-d */
        kiln_array *c = NULL;
        s = kiln_array_empty(a->ctx, a->dtype, a->ndim, a->shape, &c);
        if (s == KILN_OK) s = kiln_array_assign(c, a);
        if (s == KILN_OK) s = kiln_array_reshape(c, 1, shape, out);
        kiln_array_release(c);
        return s;
    }
    int axes[KILN_MAX_DIMS];
    forward_axes(a->ndim, axis, axes);
    s = kiln_array_transpose(a, axes, &view);
    if (s == KILN_OK) s = kiln_array_empty(a->ctx, a->dtype, nd, shape, &dst);
    if (s == KILN_OK) s = kiln_array_assign(dst, view);
    kiln_array_release(view);
    if (s != KILN_OK) {
        kiln_array_release(dst);
        return s;
    }
    *out = dst;
    return KILN_OK;
}

kiln_status sort_axis_back(const char *what, const char *role, kiln_array *src, int axis, kiln_array *out,
                           kiln_array **result) {
    kiln_array *view = NULL;
    kiln_status s = KILN_OK;
    int nd = src->ndim;
    if (axis == KILN_AXIS_FLAT || axis == nd - 1) {
        view = kiln_array_retain(src);
    } else {
        int axes[KILN_MAX_DIMS];
        for (int d = 0; d < nd; d++) axes[d] = d < axis ? d : d == axis ? nd - 1 : d - 1;
        s = kiln_array_transpose(src, axes, &view);
    }
    if (s != KILN_OK) return s;
    if (out) {
        char a[256], b[256];
        int same = out->ndim == view->ndim;
        for (int d = 0; d < view->ndim && same; d++) same = out->shape[d] == view->shape[d];
        if (!same)
            s = kiln_set_error(KILN_ERR_SHAPE, "%s: %s has shape %s but the result has shape %s", what, role,
                               kiln_shape_format(out->ndim, out->shape, a, sizeof a),
                               kiln_shape_format(view->ndim, view->shape, b, sizeof b));
        else if (out->dtype != view->dtype)
            s = kiln_set_error(KILN_ERR_DTYPE, "%s: %s is %s but the result is %s", what, role,
                               kiln_dtype_name(out->dtype), kiln_dtype_name(view->dtype));
        if (s == KILN_OK) s = kiln_array_assign(out, view);
        if (s == KILN_OK && result) *result = kiln_array_retain(out);
        kiln_array_release(view);
        return s;
    }
    if (!result) {
        kiln_array_release(view);
        return KILN_OK;
    }
    if (view == src || kiln_array_is_contiguous(view)) {
        *result = view;
        return KILN_OK;
    }
    s = kiln_array_copy(view, result);
    kiln_array_release(view);
    return s;
}
