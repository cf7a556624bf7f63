/* sort_dtype.c: which dtypes sort, how wide their values move, and the
 * scratch memory of a sort. */
#include "core/dtype.h"
#include "core/error.h"
#include "sort/sort.h"

kiln_status sort_check_dtype(const char *what, const char *role, kiln_dtype dtype) {
    if (dtype >= 0 && dtype < KILN_DTYPE_COUNT && dtype != KILN_COMPLEX64 && dtype != KILN_COMPLEX128)
        return KILN_OK;
    if (dtype == KILN_COMPLEX64 || dtype == KILN_COMPLEX128)
        return kiln_set_error(
            KILN_ERR_DTYPE,
            "%s: %s are %s; kiln sorts integer, floating and bool keys (complex numbers have "
            "no order kiln sorts by)",
            what, role, kiln_dtype_name(dtype));
    return kiln_set_error(KILN_ERR_DTYPE, "%s: %s have an invalid dtype (%d)", what, role, (int)dtype);
}

size_t sort_value_bytes(kiln_dtype dtype) {
    size_t b = kiln_dtype_size(dtype);
    return b == 1 || b == 2 || b == 4 || b == 8 || b == 16 ? b : 0;
}

kiln_status sort_scratch(kiln_context *ctx, int64_t bytes, kiln_stream *stream, kiln_array **out) {
    if (bytes < 16) bytes = 16;
    kiln_status s = kiln_array_empty(ctx, KILN_UINT8, 1, &bytes, out);
    if (s == KILN_OK && stream) kiln_array_note_stream(*out, stream);
    return s;
}
