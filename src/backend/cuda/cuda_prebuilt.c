/* cuda_prebuilt.c: a module's blob made from a cubin that kiln's build
 * compiled ahead of time (kiln_prebuilt_image, core/backend.h) instead of
 * from NVRTC: the same cubin format, the same table of names (each
 * kernel's symbol and each variable's "&name", as pack_blob in
 * cuda_compile.c writes them), so that loading, kernel lookup and
 * signatures work as for a compiled module. The image serves a request
 * only when it is the request's own module: built for its arch, from the
 * very text NVRTC would be given, with no options, and naming every kernel
 * and variable the request asks for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_blob.h"
#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

static const char *module_name(const kiln_compile_request *req) {
    return req->name ? req->name : "kernel.cu";
}

static kiln_status refuse(const kiln_compile_request *req, const char *why) {
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "the prebuilt image of %s does not serve this build: %s",
                          module_name(req), why);
}

/* The image's symbol for `name` (a kernel's expression or "&variable"),
 * NULL when it has none. */
static const char *lowered_for(const kiln_prebuilt_image *img, const char *name) {
    for (int i = 0; i < img->count; i++)
        if (strcmp(img->names[i], name) == 0) return img->lowered[i];
    return NULL;
}

/* *same = 1 when the image was compiled from the text NVRTC would be
 * given for req. */
static kiln_status same_text(const kiln_compile_request *req, const kiln_prebuilt_image *img, int *same) {
    char *text = kiln_cuda_module_text(req);
    if (!text)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory packing %s", module_name(req));
    *same = strcmp(text, img->text) == 0;
    free(text);
    return KILN_OK;
}

kiln_status kiln_cuda_pack_prebuilt(const kiln_compile_request *req, kiln_blob *out) {
    const kiln_prebuilt_image *img = req->prebuilt;
    out->data = NULL;
    out->size = 0;
    if (strcmp(img->arch, req->arch ? req->arch : "sm_90") != 0) return refuse(req, "built for another arch");
    /* nvcc -O3 and nothing else (the image's build, cmake/prebuilt.cmake) */
    if (req->define_count || req->include_count || req->debug || req->lineinfo || req->fast_math)
        return refuse(req, "the build has compile options (-D, -I, -G, -lineinfo or --use_fast_math)");
    int same = 0;
    kiln_status s = same_text(req, img, &same);
    if (s != KILN_OK) return s;
    if (!same)
        return refuse(req, "it was compiled from another text than NVRTC would be given "
                           "(another prelude: KILN_CUDA_LIGHT_PRELUDE=0?)");
    int entries = req->kernel_count + req->global_count;
    const char **names = calloc((size_t)entries + 1, sizeof *names);
    const char **lowered = calloc((size_t)entries + 1, sizeof *lowered);
    char **globals = calloc((size_t)req->global_count + 1, sizeof *globals);
    if (!names || !lowered || !globals)
        s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory packing %s", module_name(req));
    for (int i = 0; s == KILN_OK && i < req->kernel_count; i++) {
        names[i] = req->kernel_names[i];
        lowered[i] = lowered_for(img, req->kernel_exprs ? req->kernel_exprs[i] : req->kernel_names[i]);
        if (!lowered[i])
            s = kiln_set_error(KILN_ERR_UNSUPPORTED, "the prebuilt image of %s has no kernel %s",
                               module_name(req),
                               req->kernel_exprs ? req->kernel_exprs[i] : req->kernel_names[i]);
    }
    for (int g = 0; s == KILN_OK && g < req->global_count; g++) {
        size_t n = strlen(req->global_names[g]) + 2;
        if (!(globals[g] = malloc(n))) {
            s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory packing %s", module_name(req));
            break;
        }
        snprintf(globals[g], n, "&%s", req->global_names[g]);
        names[req->kernel_count + g] = globals[g];
        lowered[req->kernel_count + g] = lowered_for(img, globals[g]);
        if (!lowered[req->kernel_count + g])
            s = kiln_set_error(KILN_ERR_UNSUPPORTED, "the prebuilt image of %s has no variable %s",
                               module_name(req), req->global_names[g]);
    }
    if (s == KILN_OK)
        s = kiln_cuda_blob_write(out, img->arch, entries, names, lowered, img->image, img->image_bytes);
    for (int g = 0; globals && g < req->global_count; g++) free(globals[g]);
    free(globals);
    free(names);
    free(lowered);
    return s;
}
