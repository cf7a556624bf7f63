/* cpu_fission.h: choosing each kernel's CPU path, and loop fission.
 *
 * Paths, fastest first:
 *  - loop: no barrier reachable from the kernel; each block runs as a plain
 *    loop over its threads (kiln_cpu_fast_k);
 *  - fission: barriers only in shapes the transformer handles; the code
 *    between barriers becomes loops over the block's threads, values that
 *    live across a barrier are kept per thread (kiln_cpu_fis_k, same ABI
 *    as the loop path);
 *  - fibers: everything else; one fiber per CUDA thread (kiln_cpu_thread_k).
 * The choice is made per __global__ function, from the call graph of the
 * functions defined in the source. */
#ifndef KILN_BACKEND_CPU_FISSION_H
#define KILN_BACKEND_CPU_FISSION_H

#include "backend/backend.h"
#include "backend/cpu/cpu_ctok.h"
#include "core/text.h"

/* Part of the CPU compiler id: bump when the transformer writes different
 * code for the same source, so that cached modules are rebuilt. */
#define KILN_CPU_FISSION_VERSION 22ull

typedef enum kiln_cpu_path { KILN_CPU_PATH_LOOP, KILN_CPU_PATH_FISSION, KILN_CPU_PATH_FIBERS } kiln_cpu_path;

typedef struct kiln_cpu_kernel_plan {
    kiln_cpu_path path;
    char why[240]; /* one line, for `kiln compile --target cpu` */
} kiln_cpu_kernel_plan;

/* Plans every kernel of req (plans has req->kernel_count entries) for the
 * prepared user source `source`. module_barriers: the backend's whole-module
 * scan found barriers (source, included headers or -D values); fission: 0
 * keeps every barrier kernel on fibers. For kernels on the fission path the
 * transformed body and its entry point are appended to *gen, to be compiled
 * after the user's source. */
void kiln_cpu_plan_kernels(const char *source, const kiln_compile_request *req, int module_barriers,
                           int fission, kiln_cpu_kernel_plan *plans, kiln_text *gen);

/* ---- shared by cpu_kpath.c and cpu_fission.c */

#define KPATH_MACRO_BARRIER 1u /* expands to a barrier or warp primitive */
#define KPATH_MACRO_CONTROL 2u /* expands to return, break, continue or goto */
#define KPATH_MACRO_VARYING 4u /* mentions threadIdx */

typedef struct kpath_macro {
    int start, len; /* the name, in the source text */
    unsigned flags;
} kpath_macro;

typedef struct kpath_fn {
    int name;                           /* token index of the name */
    int lparen, lbrace;                 /* parameter list and body */
    int is_global, is_template, scoped; /* scoped: inside a namespace or class */
    int barrier;                        /* reaches a barrier (directly, by macro or by call) */
    int direct;                         /* uses one itself */
    int via;                            /* token index of the call that reaches one, or -1 */
} kpath_fn;

typedef struct kpath_unit {
    kiln_ctoks tk;
    kpath_macro *macros;
    int macro_count;
    kpath_fn *fns;
    int fn_count;
} kpath_unit;

/* The macro named by token i, or NULL. */
const kpath_macro *kpath_macro_of(const kpath_unit *u, int i);
/* The function defined in the source under the name of token i, or NULL. */
const kpath_fn *kpath_fn_named(const kpath_unit *u, int i);

/* cpu_fission.c: transforms kernel fn into `kiln_fis_body_<name>`, appended
 * to gen with its entry point; `#line` directives name `file` (the user's
 * source as compiled), so that compile errors and assert() messages point
 * at the user's lines. 0 on success, why then "" or what else the path
 * does (a tree reduction kept in registers); else -1 and why says what the
 * transformer could not handle (gen is then left as it was). */
int kiln_cpu_fission(const kpath_unit *u, const kpath_fn *fn, const char *file, kiln_text *gen, char *why,
                     size_t why_size);

#endif
