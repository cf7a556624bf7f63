/* compile_only.h: compiling without a context (kiln_compile_only, in
 * kiln.h) and what such a compile would be given. */
#ifndef KILN_KERNEL_COMPILE_ONLY_H
#define KILN_KERNEL_COMPILE_ONLY_H

#include "core/backend.h"
#include "kernel/globals.h"
#include "kernel/kernel_scanner.h"
#include "kernel/options.h"
#include "kiln.h"

/* The request a context of ops's backend on arch (CUDA; NULL: sm_90)
 * would make for the module `name` of source with options (module.c's,
 * without a context), with what it points into. */
typedef struct kiln_standalone_request {
    kiln_kernel_list kernels;
    kiln_options opts;
    char *expanded;
    kiln_global_list *globals;
    kiln_compile_request req;
} kiln_standalone_request;
kiln_status kiln_standalone_request_make(const kiln_backend_ops *ops, const char *arch, const char *source,
                                         const char *name, const char *options, kiln_standalone_request *r);
void kiln_standalone_request_free(kiln_standalone_request *r);

/* For kiln's build of prebuilt images (core/backend.h's
 * kiln_prebuilt_image): the whole text that `target`'s compiler is given
 * for source on arch, as a context's build of the module `name` (no
 * options) would give it (*text), and the names the image's table lists,
 * one a line: the kernels by their expressions, then the module globals
 * as "&name" (*names). Both malloc'd. KILN_ERR_UNSUPPORTED for a backend
 * that does not say (KILN_BACKEND_PROC_MODULE_TEXT). */
kiln_status kiln_module_text_for(const char *target, const char *arch, const char *source, const char *name,
                                 char **text, char **names);

#endif
