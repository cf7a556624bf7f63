/* compile_only.c: kiln_compile_only, compiling without a context or device
 * (`kiln compile`, and CI's NVRTC pass over every kernel kiln generates). */
#include "kernel/compile_only.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backends.h"
#include "core/error.h"
#include "core/text.h"
#include "jit/cache.h"
#include "kernel/absent.h"
#include "kernel/expand.h"
#include "kernel/globals.h"

/* A compile that succeeded keeps its log (diagnostics, the kernel list, the
 * resource report) in the disk cache, keyed like a module but under an id
 * of its own, so that checking the same source again (`kiln compile` after
 * an edit elsewhere, or the test suites' sm_90 checks, which compile the
 * same kernels in every build of a test run) costs a file read instead of
 * an NVRTC front end over the toolkit's headers. The key covers what a
 * module's does (the source, every header it includes, the options, the
 * compiler and its target) and CUDA_CACHE_DISABLE, which decides whether
 * NVRTC's own cache may leave out the resource report. 0: no key (no
 * compiler id, or no usable cache folder). */
static int compile_only_key(const kiln_backend_ops *ops, const kiln_compile_request *req, kiln_cache_dir *dir,
                            unsigned char key[KILN_CACHE_KEY_BYTES]) {
    char id[600], compiler[512];
    if (!ops->compiler_id || ops->compiler_id(NULL, req->arch, compiler, sizeof compiler) != KILN_OK)
        return 0;
    const char *fresh = getenv("CUDA_CACHE_DISABLE");
    snprintf(id, sizeof id, "compile-only log; %s; CUDA_CACHE_DISABLE=%s", compiler, fresh ? fresh : "");
    kiln_cache_dir_resolve(dir);
    if (!dir->usable) return 0;
    kiln_cache_key(req, id, key);
    return 1;
}

/* The cached log of key's compile into *log (malloc'd); 1 on a hit. */
static int cached_log(const kiln_cache_dir *dir, const unsigned char key[KILN_CACHE_KEY_BYTES], char **log) {
    kiln_blob b = {0};
    int rejected = 0;
    if (!kiln_cache_load(dir, key, &b, &rejected)) return 0;
    char *text = malloc(b.size + 1);
    if (text) {
        if (b.size) memcpy(text, b.data, b.size);
        text[b.size] = 0;
    }
    free(b.data);
    *log = text;
    return text != NULL;
}

/* One compile of req (kernels: its list, trimmed of kernels in #if sections
 * that are off when the compiler says so) into *log: the compiler's output,
 * then on CUDA every kernel the module holds. */
static kiln_status compile_listed(const kiln_backend_ops *ops, kiln_compile_request *req,
                                  kiln_kernel_list *kernels, const char *target, int cuda, char **log) {
    kiln_blob bin = {0};
    char id[512];
    char *compiler_log = NULL;
    kiln_status s =
        ops->compile_only
            ? ops->compile_only(req, &bin, &compiler_log, id, sizeof id)
            : kiln_set_error(KILN_ERR_UNSUPPORTED,
                             "kiln_compile_only: the %s backend cannot compile without a device", ops->name);
    unsigned char absent[KILN_MAX_KERNELS_PER_MODULE];
    if (s == KILN_ERR_COMPILE && ops->compile_only &&
        kiln_kernels_absent(compiler_log, kernels, absent) > 0) {
        /* kernels in #if sections that are off (absent.h): the others */
        kiln_kernel_list_drop(kernels, absent);
        req->kernel_count = kernels->count;
        free(compiler_log);
        compiler_log = NULL;
        free(bin.data);
        bin.data = NULL;
        bin.size = 0;
        s = kernels->count == 0
                ? kiln_set_error(KILN_ERR_NOT_FOUND,
                                 "%s defines no __global__ function that the compiler sees (all are in #if "
                                 "sections that are off)",
                                 req->name)
                : ops->compile_only(req, &bin, &compiler_log, id, sizeof id);
    }
    free(bin.data);
    if (s == KILN_ERR_COMPILE)
        kiln_set_error(s, "%s did not compile for %s%s%s:\n%s", req->name, target, cuda ? " " : "",
                       cuda ? req->arch : "", compiler_log ? compiler_log : "");
    if (s == KILN_OK && cuda) {
        /* Every kernel the module holds, by the name kiln_module_kernel
         * takes (the CPU backend's log lists each with its path). */
        kiln_text t = {0};
        if (compiler_log) kiln_text_puts(&t, compiler_log);
        for (int i = 0; i < kernels->count; i++) kiln_text_printf(&t, "kiln: kernel %s\n", kernels->names[i]);
        char *listed = kiln_text_take(&t);
        if (listed) {
            free(compiler_log);
            compiler_log = listed;
        }
    }
    *log = compiler_log;
    return s;
}

void kiln_standalone_request_free(kiln_standalone_request *r) {
    kiln_options_free(&r->opts);
    kiln_kernel_list_free(&r->kernels);
    free(r->expanded);
    if (r->globals) kiln_global_list_free(r->globals);
    free(r->globals);
}

kiln_status kiln_standalone_request_make(const kiln_backend_ops *ops, const char *arch, const char *source,
                                         const char *name, const char *options, kiln_standalone_request *r) {
    memset(r, 0, sizeof *r);
    kiln_status s = kiln_options_parse(options, NULL, &r->opts);
    if (s != KILN_OK) return s;
    s = kiln_discover_kernels(source, name, NULL, &r->opts, &r->expanded, &r->kernels);
    if (s != KILN_OK) {
        kiln_options_free(&r->opts);
        return s;
    }
    r->globals = calloc(1, sizeof *r->globals);
    s = r->globals ? kiln_scan_globals(r->expanded ? r->expanded : source, r->globals)
                   : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s != KILN_OK) {
        free(r->globals);
        r->globals = NULL;
        kiln_standalone_request_free(r);
        return s;
    }
    kiln_compile_request *req = &r->req;
    req->source = r->expanded ? r->expanded : source;
    req->name = name ? name : "kernel.cu";
    req->kernel_names = (const char *const *)r->kernels.symbols;
    req->kernel_exprs = (const char *const *)r->kernels.names;
    req->kernel_count = r->kernels.count;
    req->global_names = r->globals->names;
    req->global_count = r->globals->count;
    req->arch = ops->kind == KILN_BACKEND_CUDA ? (arch ? arch : "sm_90") : NULL;
    kiln_options_apply(&r->opts, req);
    return KILN_OK;
}

kiln_status kiln_compile_only(const char *target, const char *arch, const char *source, const char *name,
                              const char *options, char **log) {
    if (log) *log = NULL;
    if (!target || !source)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_compile_only: NULL argument");
    const kiln_backend_ops *ops = kiln_backend_named(target);
    if (!ops)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_compile_only: target must be \"cpu\" or \"cuda\", got \"%s\"", target);
    int cuda = ops->kind == KILN_BACKEND_CUDA;
    kiln_standalone_request r;
    kiln_status s = kiln_standalone_request_make(ops, arch, source, name, options, &r);
    if (s != KILN_OK) return s;
    char *compiler_log = NULL;
    kiln_cache_dir dir;
    unsigned char key[KILN_CACHE_KEY_BYTES];
    int keyed = compile_only_key(ops, &r.req, &dir, key), hit = keyed && cached_log(&dir, key, &compiler_log);
    s = hit ? KILN_OK : compile_listed(ops, &r.req, &r.kernels, target, cuda, &compiler_log);
    if (s == KILN_OK && keyed && !hit) {
        kiln_blob text = {(unsigned char *)(compiler_log ? compiler_log : ""),
                          compiler_log ? strlen(compiler_log) : 0};
        kiln_cache_store(&dir, key, &text);
    }
    if (log)
        *log = compiler_log;
    else
        free(compiler_log);
    kiln_standalone_request_free(&r);
    return s;
}

kiln_status kiln_module_text_for(const char *target, const char *arch, const char *source, const char *name,
                                 char **text, char **names) {
    *text = *names = NULL;
    const kiln_backend_ops *ops = kiln_backend_named(target);
    const kiln_backend_module_text *mt =
        ops && ops->get_proc_address ? ops->get_proc_address(KILN_BACKEND_PROC_MODULE_TEXT) : NULL;
    if (!mt)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the %s backend does not say what its compiler is given",
                              target);
    kiln_standalone_request r;
    kiln_status s = kiln_standalone_request_make(ops, arch, source, name, NULL, &r);
    if (s != KILN_OK) return s;
    kiln_text t = {0};
    for (int i = 0; i < r.req.kernel_count; i++) kiln_text_printf(&t, "%s\n", r.req.kernel_exprs[i]);
    for (int i = 0; i < r.req.global_count; i++) kiln_text_printf(&t, "&%s\n", r.req.global_names[i]);
    *names = kiln_text_take(&t);
    *text = mt->text(&r.req);
    kiln_standalone_request_free(&r);
    if (*text && *names) return KILN_OK;
    free(*text);
    free(*names);
    *text = *names = NULL;
    return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
}
