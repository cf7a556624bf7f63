/* blas_prof.c: one profiler record per BLAS call. The row name says the
 * operation, dtype and who ran it (so the summary groups like calls); the
 * shapes and the GFLOP of this call go to the trace's arguments, from
 * which the trace's duration gives FLOP/s. */
#include <stdarg.h>
#include <stdio.h>

#include "blas/blas_internal.h"
#include "prof/prof.h"

struct kiln_prof_op *kiln_blas_prof_begin(kiln_context *ctx, kiln_stream *stream, const char *op,
                                          kiln_dtype dtype, const char *provider, double flops,
                                          const char *shape_fmt, ...) {
    if (!KILN_PROF_ON(ctx)) return NULL;
    char name[160], desc[320] = "";
    snprintf(name, sizeof name, "blas %s %s [%s]", op, kiln_dtype_name(dtype), provider);
    if (KILN_PROF_WANTS_ARGS(ctx)) {
        va_list ap;
        va_start(ap, shape_fmt);
        int len = vsnprintf(desc, sizeof desc, shape_fmt, ap);
        va_end(ap);
        if (len >= 0 && (size_t)len < sizeof desc && flops > 0)
            snprintf(desc + len, sizeof desc - (size_t)len, "; %.6g GFLOP", flops * 1e-9);
    }
    return kiln_prof_library_begin(ctx, name, kiln_stream_impl(stream), desc, flops);
}

void kiln_blas_prof_end(kiln_context *ctx, struct kiln_prof_op *op) {
    if (op) kiln_prof_end(ctx, op);
}
