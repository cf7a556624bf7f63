/* compile_only.c: kiln_compile_only, compiling without a context or device
 * (`kiln compile`, and CI's NVRTC pass over every kernel kiln generates). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernel/globals.h"
#include "kernel/options.h"
#include "kernel/scan.h"

kiln_status kiln_compile_only(const char *target, const char *arch, const char *source, const char *name,
                              const char *options, char **log) {
    if (log) *log = NULL;
    if (!target || !source)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_compile_only: NULL argument");
    int cuda = strcmp(target, "cuda") == 0;
    if (!cuda && strcmp(target, "cpu") != 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_compile_only: target must be \"cpu\" or \"cuda\", got \"%s\"", target);
    kiln_kernel_list kernels;
    kiln_status s = kiln_scan_kernels(source, &kernels);
    if (s != KILN_OK) return s;
    kiln_global_list *globals = calloc(1, sizeof *globals);
    if (!globals) {
        kiln_kernel_list_free(&kernels);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    s = kiln_scan_globals(source, globals);
    kiln_options opts;
    if (s == KILN_OK) s = kiln_options_parse(options, NULL, &opts);
    if (s != KILN_OK) {
        kiln_kernel_list_free(&kernels);
        free(globals);
        return s;
    }
    kiln_compile_request req = {0};
    req.source = source;
    req.name = name ? name : "kernel.cu";
    req.kernel_names = (const char *const *)kernels.symbols;
    req.kernel_exprs = (const char *const *)kernels.names;
    req.kernel_count = kernels.count;
    req.global_names = globals->names;
    req.global_count = globals->count;
    req.arch = cuda ? (arch ? arch : "sm_90") : NULL;
    kiln_options_apply(&opts, &req);
    kiln_blob bin = {0};
    char id[512];
    char *compiler_log = NULL;
    s = cuda ? kiln_backend_cuda_compile_only(&req, &bin, &compiler_log, id, sizeof id)
             : kiln_backend_cpu_compile_only(&req, &bin, &compiler_log, id, sizeof id);
    if (s == KILN_ERR_COMPILE)
        kiln_set_error(s, "%s did not compile for %s%s%s:\n%s", req.name, target, cuda ? " " : "",
                       cuda ? req.arch : "", compiler_log ? compiler_log : "");
    if (log)
        *log = compiler_log;
    else
        free(compiler_log);
    free(bin.data);
    kiln_options_free(&opts);
    kiln_kernel_list_free(&kernels);
    kiln_global_list_free(globals);
    free(globals);
    return s;
}
