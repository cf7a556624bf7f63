/* expand.h: the user's own `#include "..."` files inlined into the source
 * before kiln looks for kernels, so that a kernel defined in an included
 * file is found (and, on the CPU, transformed) like one in the file itself. */
#ifndef KILN_KERNEL_EXPAND_H
#define KILN_KERNEL_EXPAND_H

#include "kernel/kernel_scanner.h"
#include "kernel/options.h"
#include "kiln.h"

/* Inlines every `#include "name"` of source that names a user file: found
 * beside the file that includes it (top_dir for source itself; may be NULL),
 * else in dirs[0, ndirs) in order, as the compilers search. Each inlined
 * file is framed by #line directives, so diagnostics name the file and line
 * they come from (`name` labels source itself). `#include <...>` lines, and
 * quoted names found nowhere, stay for the compiler: system, toolkit and kiln
 * headers hold no user kernels and must not be copied; so are user files
 * that neither mention __global__ nor include one that does (helpers and
 * types compile as they always did). A file with
 * `#pragma once` goes in once; a file that includes itself is left to the
 * compiler past the first level. *out is NULL when nothing was inlined (the
 * source is used as it is), else a malloc'd text. */
kiln_status kiln_expand_includes(const char *source, const char *name, const char *top_dir,
                                 const char *const *dirs, int ndirs, char **out);

/* What a module compiles and the kernels it holds: source with the user's
 * includes inlined (*text: malloc'd, or NULL for source itself), and every
 * __global__ function of that text (kiln_scan_kernels). The same for both
 * backends and for kiln_compile_only. KILN_ERR_NOT_FOUND when there is none. */
kiln_status kiln_discover_kernels(const char *source, const char *name, const char *top_dir,
                                  const kiln_options *opts, char **text, kiln_kernel_list *kernels);

#endif
