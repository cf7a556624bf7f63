/* options.h: the compile-option string kiln accepts on both backends. */
#ifndef KILN_KERNEL_OPTIONS_H
#define KILN_KERNEL_OPTIONS_H

#include "core/backend.h"

#define KILN_MAX_OPTIONS 64

typedef struct kiln_options {
    char *storage; /* one copy of the string, cut into words */
    const char *defines[KILN_MAX_OPTIONS];
    int define_count;
    const char *include_dirs[KILN_MAX_OPTIONS];
    int include_count;
    int debug, lineinfo, fast_math, fast_compile;
} kiln_options;

/* Parses "-DN=4 -I dir --use_fast_math -G --fast-compile"; KILN_ERR_INVALID_ARGUMENT names
 * an unknown option. `extra_include` (may be NULL) is appended to the include
 * directories (the folder of a source file). Free with kiln_options_free. */
kiln_status kiln_options_parse(const char *text, const char *extra_include, kiln_options *out);
void kiln_options_free(kiln_options *o);
/* The options of kiln's own first-call kernels on CUDA (a ufunc's mixed
 * kernels, a gufunc's any-layout kernels), which calls leave for fully
 * optimised ones: "--fast-compile", or NULL with KILN_FAST_COMPILE=0 (for
 * measuring, or should a compiler mishandle it). */
const char *kiln_first_tier_options(void);
/* Points the request's option fields at o's. */
void kiln_options_apply(const kiln_options *o, kiln_compile_request *req);

#endif
