/* rd_provider.h: who writes and launches a reduction's kernels for a
 * target, private to src/reduce/. kiln owns these kernels on every backend
 * (the numbers must not depend on timing), so the providers are kiln's own
 * code in core/provider.h's shape, one per target: the CPU's pairwise,
 * vectorised loops (cpu_provider.c) and CUDA's blocks of 256 threads
 * (cuda_provider.c). The front (plan.c, codegen.c, run.c) asks the plan's
 * provider for everything that differs between them. */
#ifndef KILN_REDUCE_RD_PROVIDER_H
#define KILN_REDUCE_RD_PROVIDER_H

#include "core/provider.h"
#include "core/text.h"
#include "reduce/reduce.h"

struct rd_param; /* codegen.h */

typedef struct rd_provider {
    kiln_provider base;        /* first */
    const char *target;        /* "cpu", "cuda": named in the module's first line */
    const char *device_source; /* after the common headers (CUDA's warp helpers); NULL: none */
    int wide_acc;              /* op->gpu_acc_f64 accumulators widen to double */
    int vector_loads;          /* RD_INNER plans may load 16 bytes at a time (p->vec) */
    /* Cuts the work of a plan whose layout is set: splits, rchunk, group,
     * per_task, for `units` multiprocessors or cores. */
    void (*cut)(rd_plan *p, int units);
    /* The module's main and finish kernels, after the operator. */
    void (*emit)(kiln_text *t, const rd_op *op, const rd_plan *p, const struct rd_param *pp, int np);
    /* The main kernel's grid and block. */
    void (*main_shape)(const rd_plan *p, kiln_dim3 *grid, kiln_dim3 *block);
    /* Outputs per task of the finish pass (its last argument). */
    int64_t (*finish_per)(const rd_plan *p);
    /* The finish kernel's name, grid and block for `per` outputs a task. */
    const char *(*finish_shape)(const rd_plan *p, int64_t per, kiln_dim3 *grid, kiln_dim3 *block);
} rd_provider;

extern const rd_provider rd_cuda_provider, rd_cpu_provider;

/* The provider writing kernels for `target`, or NULL when none does. */
const rd_provider *rd_provider_for(kiln_backend_kind target);

#endif
