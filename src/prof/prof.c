/* prof.c: placeholder until the profiler lands: profiling stays off. */
#include "prof/prof.h"

kiln_status kiln_prof_attach(kiln_context *ctx) { ctx->prof = NULL; return KILN_OK; }
void kiln_prof_detach(kiln_context *ctx) { (void)ctx; }
kiln_prof_op *kiln_prof_kernel_begin(kiln_context *ctx, const char *name, const kiln_launch_config *cfg,
                                     kiln_backend_stream *stream, const char *args_desc) {
    (void)ctx; (void)name; (void)cfg; (void)stream; (void)args_desc; return NULL;
}
kiln_prof_op *kiln_prof_copy_begin(kiln_context *ctx, kiln_copy_kind kind, size_t bytes, int pinned,
                                   kiln_backend_stream *stream) {
    (void)ctx; (void)kind; (void)bytes; (void)pinned; (void)stream; return NULL;
}
void kiln_prof_end(kiln_context *ctx, kiln_prof_op *op) { (void)ctx; (void)op; }
void kiln_prof_alloc(kiln_context *ctx, size_t bytes, double host_ms) { (void)ctx; (void)bytes; (void)host_ms; }
void kiln_prof_compile(kiln_context *ctx, const char *name, int hit, double c, double l) {
    (void)ctx; (void)name; (void)hit; (void)c; (void)l;
}
