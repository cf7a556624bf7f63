/* cuda_compile.c: CUDA C source -> cubin through NVRTC, packed as a kiln
 * blob (cuda_blob.h). Needs NVRTC only, never the driver, so it serves
 * kiln_compile_only on machines without a GPU too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_blob.h"
#include "backend/cuda/cuda_internal.h"
#include "core/error.h"
#include "core/text.h"

/* NVRTC's command line for a request; every string is malloc'd. */
typedef struct option_list {
    char **items;
    int count;
} option_list;

static void options_free(option_list *o) {
    for (int i = 0; i < o->count; i++) free(o->items[i]);
    free(o->items);
}

static int options_add(option_list *o, const char *a, const char *b) {
    size_t n = strlen(a) + (b ? strlen(b) : 0) + 1;
    char *s = malloc(n);
    if (!s) return 0;
    snprintf(s, n, "%s%s", a, b ? b : "");
    o->items[o->count++] = s;
    return 1;
}

/* -minimal leaves out the texture and surface declarations and the
 * runtime's types (driver_types.h: cudaError_t, which CUB's headers name):
 * a source that names them (tex2D, cudaTextureObject_t, surf2Dwrite...) or
 * includes CUB or Thrust compiles without it, as nvcc would take it. A
 * plain substring test: a false positive only costs the full headers'
 * compile time. */
static int needs_full_headers(const char *source) {
    static const char *const names[] = {"<cub/",
                                        "<thrust/",
                                        "cudaError_t",
                                        "cudaTextureObject_t",
                                        "cudaSurfaceObject_t",
                                        "tex1D",
                                        "tex2D",
                                        "tex3D",
                                        "texCubemap",
                                        "surf1D",
                                        "surf2D",
                                        "surf3D",
                                        "texture<",
                                        "surface<"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strstr(source, names[i])) return 1;
    return 0;
}

static int options_build(const kiln_compile_request *req, const kiln_nvrtc *nv, int resource_report,
                         option_list *o) {
    o->count = 0;
    o->items = calloc((size_t)req->define_count + (size_t)req->include_count + 12, sizeof *o->items);
    if (!o->items) return 0;
    int ok = options_add(o, "-arch=", req->arch ? req->arch : "sm_90") &&
             options_add(o, "-std=c++17", NULL) &&
             /* Unannotated helpers become __device__, as they must be to be
              * called from kernels; the CPU backend compiles the same source. */
             options_add(o, "-default-device", NULL);
    /* 12.4+: skips texture/surface and device-runtime declarations, a good
     * part of a small kernel's cold compile time. */
    if (ok && (nv->major > 12 || (nv->major == 12 && nv->minor >= 4)) && !needs_full_headers(req->source))
        ok = options_add(o, "-minimal", NULL);
    for (int i = 0; ok && i < req->define_count; i++) ok = options_add(o, "-D", req->defines[i]);
    for (int i = 0; ok && i < req->include_count; i++) ok = options_add(o, "-I", req->include_dirs[i]);
    /* The toolkit's headers after the user's folders, as nvcc searches
     * them: <cooperative_groups.h>, <cuda_fp16.h>, <curand_kernel.h>, <cuda/std/...> */
    for (int i = 0; ok && i < nv->include_count; i++) ok = options_add(o, "-I", nv->include_dirs[i]);
    if (ok && req->debug) ok = options_add(o, "-G", NULL);
    if (ok && req->lineinfo) ok = options_add(o, "-lineinfo", NULL);
    if (ok && req->fast_math) ok = options_add(o, "--use_fast_math", NULL);
    /* -Ofast-compile (NVRTC 12.8+): "mid" halved the NVRTC time of a
     * gufunc's any-layout module (2-core build machine: 147-210 ms -> 71-78
     * ms) and cut the bench ufunc's module from 60 to 43 ms; "max" was
     * slower than "mid" there, "min" between. Older NVRTCs compile fully. */
    if (ok && req->fast_compile && (nv->major > 12 || (nv->major == 12 && nv->minor >= 8)))
        ok = options_add(o, "-Ofc=mid", NULL);
    if (ok && resource_report) ok = options_add(o, "--ptxas-options=-v", NULL);
    return ok;
}

static char *program_log(const kiln_nvrtc *nv, nvrtcProgram prog) {
    size_t n = 0;
    if (nv->nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return NULL;
    char *log = malloc(n);
    if (log && nv->nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    return log;
}

static kiln_status nvrtc_fail(const kiln_nvrtc *nv, nvrtcResult r, const char *what) {
    return kiln_set_error(r == NVRTC_ERROR_COMPILATION ? KILN_ERR_COMPILE : KILN_ERR_INTERNAL, "%s: %s", what,
                          nv->nvrtcGetErrorString(r));
}

/* Adds `&name` for each kernel, then for each module global, so NVRTC
 * tells us its mangled symbol. The blob's table lists the globals under
 * their expressions ("&c_Kernel"), which no kernel name can equal. */
static kiln_status add_name_expressions(const kiln_nvrtc *nv, nvrtcProgram prog,
                                        const kiln_compile_request *req, char **exprs) {
    for (int i = 0; i < req->kernel_count + req->global_count; i++) {
        const char *expr = i >= req->kernel_count ? req->global_names[i - req->kernel_count]
                           : req->kernel_exprs    ? req->kernel_exprs[i]
                                                  : req->kernel_names[i];
        size_t n = strlen(expr) + 2;
        exprs[i] = malloc(n);
        if (!exprs[i])
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory compiling %s", req->name);
        snprintf(exprs[i], n, "&%s", expr);
        nvrtcResult r = nv->nvrtcAddNameExpression(prog, exprs[i]);
        if (r != NVRTC_SUCCESS) return nvrtc_fail(nv, r, "nvrtcAddNameExpression");
    }
    return KILN_OK;
}

/* An entry of the cubin that no kernel of the request lowered to. */
typedef struct unnamed_entries {
    const char **lowered;
    int count;
    kiln_text notes;
} unnamed_entries;

static void note_unnamed(const char *entry, void *ud) {
    unnamed_entries *u = ud;
    for (int i = 0; i < u->count; i++)
        if (u->lowered[i] && strcmp(u->lowered[i], entry) == 0) return;
    kiln_text_printf(
        &u->notes,
        "kiln: note: the compiled code has a kernel %s that kiln found no name for in the source "
        "(a macro of a header kiln does not read, or a form kiln does not parse): "
        "kiln_module_kernel cannot reach it\n",
        entry);
}

static kiln_status pack_blob(const kiln_nvrtc *nv, nvrtcProgram prog, const kiln_compile_request *req,
                             char **exprs, kiln_blob *out, char **log) {
    size_t cubin_size = 0;
    nvrtcResult r = nv->nvrtcGetCUBINSize(prog, &cubin_size);
    if (r != NVRTC_SUCCESS) return nvrtc_fail(nv, r, "nvrtcGetCUBINSize");
    if (cubin_size == 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "NVRTC made no cubin for \"%s\": arch must be a real "
                              "GPU architecture such as sm_90",
                              req->arch ? req->arch : "");
    char *cubin = malloc(cubin_size);
    int entries = req->kernel_count + req->global_count;
    const char **lowered = calloc((size_t)entries + 1, sizeof *lowered);
    const char **names = calloc((size_t)entries + 1, sizeof *names);
    kiln_status s = KILN_OK;
    for (int i = 0; names && i < entries; i++)
        names[i] = i < req->kernel_count ? req->kernel_names[i] : exprs[i];
    if (!cubin || !lowered || !names)
        s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory compiling %s", req->name);
    if (s == KILN_OK && (r = nv->nvrtcGetCUBIN(prog, cubin)) != NVRTC_SUCCESS)
        s = nvrtc_fail(nv, r, "nvrtcGetCUBIN");
    for (int i = 0; s == KILN_OK && i < entries; i++)
        if ((r = nv->nvrtcGetLoweredName(prog, exprs[i], &lowered[i])) != NVRTC_SUCCESS)
            s = nvrtc_fail(nv, r, "nvrtcGetLoweredName");
    if (s == KILN_OK && log) {
        /* kiln names kernels from the source's text (kernel/expand.h); the
         * cubin's entries say whether that found every one */
        unnamed_entries u = {lowered, req->kernel_count, {0}};
        if (kiln_cuda_elf_entries((const unsigned char *)cubin, cubin_size, note_unnamed, &u) > 0 &&
            u.notes.length) {
            kiln_text all = {0};
            if (*log) kiln_text_puts(&all, *log);
            kiln_text_add(&all, u.notes.data, u.notes.length);
            char *joined = kiln_text_take(&all);
            if (joined) {
                free(*log);
                *log = joined;
            }
        }
        kiln_text_free(&u.notes);
    }
    if (s == KILN_OK)
        s = kiln_cuda_blob_write(out, req->arch ? req->arch : "sm_90", entries, names, lowered, cubin,
                                 cubin_size);
    free(cubin);
    free(lowered);
    free(names);
    return s;
}

/* NVRTC has no C or C++ library headers, but device code written for nvcc
 * includes them: <stdio.h> for printf, which NVRTC declares itself, and
 * the headers of the types kiln's prelude (kiln_cuda_prelude.cuh) and
 * NVRTC already give (size_t, int32_t, INT32_MAX). These stand in for them
 * so that such files compile unchanged; the C++ forms add the std:: names. */
static const char *const nvrtc_c_headers[] = {
    "/* printf is NVRTC's built-in */\n", "/* size_t, ptrdiff_t and NULL are NVRTC's built-ins */\n",
    "/* the fixed-width types and their limits come with kiln's prelude */\n",
    "namespace std {\nusing ::size_t;\nusing ::ptrdiff_t;\ntypedef decltype(nullptr) nullptr_t;\n}\n",
    "namespace std {\nusing ::int8_t;\nusing ::int16_t;\nusing ::int32_t;\nusing ::int64_t;\nusing "
    "::uint8_t;\n"
    "using ::uint16_t;\nusing ::uint32_t;\nusing ::uint64_t;\nusing ::intptr_t;\nusing ::uintptr_t;\n}\n"};
static const char *const nvrtc_c_header_names[] = {"stdio.h", "stddef.h", "stdint.h", "cstddef", "cstdint"};

static kiln_status compile_with(const kiln_nvrtc *nv, const kiln_compile_request *req, int resource_report,
                                kiln_blob *out, char **log) {
    char *source = kiln_cuda_module_text(req);
    option_list opts = {0};
    char **exprs = calloc((size_t)req->kernel_count + (size_t)req->global_count + 1, sizeof *exprs);
    nvrtcProgram prog = NULL;
    kiln_status s = KILN_OK;
    if (!source || !exprs || !options_build(req, nv, resource_report, &opts))
        s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory compiling %s", req->name);
    nvrtcResult r;
    if (s == KILN_OK && (r = nv->nvrtcCreateProgram(&prog, source, req->name,
                                                    (int)(sizeof nvrtc_c_headers / sizeof *nvrtc_c_headers),
                                                    nvrtc_c_headers, nvrtc_c_header_names)) != NVRTC_SUCCESS)
        s = nvrtc_fail(nv, r, "nvrtcCreateProgram");
    if (s == KILN_OK) s = add_name_expressions(nv, prog, req, exprs);
    if (s == KILN_OK) {
        r = nv->nvrtcCompileProgram(prog, opts.count, (const char *const *)opts.items);
        *log = program_log(nv, prog);
        if (r != NVRTC_SUCCESS) s = nvrtc_fail(nv, r, "NVRTC");
    }
    if (s == KILN_OK) s = pack_blob(nv, prog, req, exprs, out, resource_report ? log : NULL);
    if (prog) nv->nvrtcDestroyProgram(&prog);
    for (int i = 0; exprs && i < req->kernel_count + req->global_count; i++) free(exprs[i]);
    free(exprs);
    options_free(&opts);
    free(source);
    return s;
}

static kiln_status compile_request(const kiln_compile_request *req, int resource_report, kiln_blob *out,
                                   char **log, char *id, size_t id_size) {
    *log = NULL;
    const char *why = NULL;
    const kiln_nvrtc *nv = kiln_cuda_nvrtc_load(&why);
    if (!nv) return kiln_set_error(KILN_ERR_COMPILER_MISSING, "cannot compile CUDA source: %s", why);
    if (id) snprintf(id, id_size, "nvrtc %d.%d %s", nv->major, nv->minor, req->arch ? req->arch : "sm_90");
    out->data = NULL;
    out->size = 0;
    return compile_with(nv, req, resource_report, out, log);
}

/* A request with a prebuilt image is packed from the image
 * (cuda_prebuilt.c), never compiled: whoever offered the image decides
 * what to do when it does not serve (kernel/module.c compiles instead). */
static kiln_status build_request(const kiln_compile_request *req, int resource_report, kiln_blob *out,
                                 char **log, char *id, size_t id_size) {
    if (!req->prebuilt) return compile_request(req, resource_report, out, log, id, id_size);
    *log = NULL;
    if (id) snprintf(id, id_size, "prebuilt %s", req->prebuilt->arch);
    return kiln_cuda_pack_prebuilt(req, out);
}

kiln_status kiln_cuda_compile(kiln_backend_state *st, const kiln_compile_request *req, kiln_blob *out,
                              char **log) {
    kiln_compile_request r = *req;
    if (!r.arch) r.arch = st->arch;
    return kiln_cuda_compile_plain(&r, out, log);
}

kiln_status kiln_cuda_compile_plain(const kiln_compile_request *req, kiln_blob *out, char **log) {
    return build_request(req, 0, out, log, NULL, 0);
}

kiln_status kiln_cuda_compile_only(const kiln_compile_request *req, kiln_blob *out, char **log, char *id,
                                   size_t id_size) {
    return build_request(req, 1, out, log, id, id_size);
}

/* Without NVRTC the context still opens (memory, copies and modules from the
 * disk cache work); the id then matches no compiler's, and compile() says why. */
kiln_status kiln_cuda_compiler_id(kiln_backend_state *st, const char *arch, char *out, size_t out_size) {
    const kiln_nvrtc *nv = kiln_cuda_nvrtc_load(NULL);
    const char *target = arch ? arch : (st ? st->arch : "sm_90");
    if (nv)
        snprintf(out, out_size, "nvrtc %d.%d %s", nv->major, nv->minor, target);
    else
        snprintf(out, out_size, "nvrtc missing %s", target);
    return KILN_OK;
}
