/* cuda_module_text.c: the whole text NVRTC compiles for a request (and
 * nvcc, for the prebuilt modules: cuda_prebuilt.c compares against it):
 * kiln's prelude, the complex types when the source names them, the
 * signature records' templates, the user's source, then one signature
 * record per kernel. */
#include "backend/common/prelude_needs.h"
#include "backend/cuda/cuda_internal.h"
#include "core/settings.h"
#include "core/text.h"

extern const char kiln_embedded_kiln_cuda_prelude[];
extern const char kiln_embedded_kiln_complex[];
extern const char kiln_embedded_kiln_signature[];

/* 1 when kiln_complex.cuh goes in: the source (or a -D) names something
 * complex (backend/common/prelude_needs.c); KILN_CUDA_LIGHT_PRELUDE=0
 * always includes it. */
static int needs_complex(const kiln_compile_request *req) {
    return !kiln_setting_flag("KILN_CUDA_LIGHT_PRELUDE", 1) || kiln_prelude_needs_complex(req);
}

/* Prelude (the complex types only when the source names them), user
 * source (numbered from its own line 1), then one signature record per
 * kernel for function_get to read back after loading. */
char *kiln_cuda_module_text(const kiln_compile_request *req) {
    kiln_text t = {0};
    kiln_text_line_directive(&t, "kiln_cuda_prelude.cuh");
    kiln_text_puts(&t, kiln_embedded_kiln_cuda_prelude);
    if (needs_complex(req)) {
        kiln_text_line_directive(&t, "kiln_complex.cuh");
        kiln_text_puts(&t, kiln_embedded_kiln_complex);
    }
    kiln_text_line_directive(&t, "kiln_signature.cuh");
    kiln_text_puts(&t, kiln_embedded_kiln_signature);
    kiln_text_line_directive(&t, req->name ? req->name : "kernel.cu");
    kiln_text_puts(&t, req->source);
    kiln_text_line_directive(&t, "kiln-kernel-signatures");
    for (int i = 0; i < req->kernel_count; i++) {
        const char *sym = req->kernel_names[i], *expr = req->kernel_exprs ? req->kernel_exprs[i] : sym;
        kiln_text_printf(&t, "KILN_EXPORT_SIGNATURE(%s, %s)\n", sym, expr);
    }
    return kiln_text_take(&t);
}
