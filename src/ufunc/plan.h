/* plan.h: from a call's operands to a planned kernel variant and its
 * arguments (plan.c). */
#ifndef KILN_UFUNC_PLAN_H
#define KILN_UFUNC_PLAN_H

#include "ufunc/ufunc_types.h"

/* The operands of one call, resolved. */
typedef struct uf_plan {
    uf_key key;
    int nd;                       /* dims after coalescing */
    int64_t shape[KILN_MAX_DIMS]; /* coalesced iteration shape */
    int64_t n;                    /* elements */
    int narr;                     /* array operands: outputs first, then array inputs */
    char *data[UF_MAX_OPS];
    int64_t strides[UF_MAX_OPS][KILN_MAX_DIMS];
    kiln_value scalars[UF_MAX_IN]; /* scalar inputs converted to the signature type */
    int nscalars;
} uf_plan;

/* "f4 array (3, 4), f8 scalar" */
void uf_describe_args(const kiln_value *args, int nargs, char *buf, size_t cap);
/* The first signature matching exactly, else by safe casting, else with
 * scalars cast by value; KILN_ERR_DTYPE naming the signatures otherwise. */
kiln_status uf_dispatch(const kiln_ufunc *f, const kiln_value *args, int *sig_out);
kiln_value uf_scalar_for(const kiln_value *v, kiln_dtype sig_type);
/* The broadcast shape of the array inputs and the given outputs. */
kiln_status uf_broadcast(const kiln_ufunc *f, const kiln_value *args, kiln_array *const *outs, int *nd,
                         int64_t *shape);
/* Outputs may alias inputs only exactly (plain in place). */
kiln_status uf_check_overlap(const kiln_ufunc *f, const kiln_value *args, kiln_array *const *outs, int nd,
                             const int64_t *shape);
/* ins[i]: the array the kernel reads for input i (NULL: scalar args[i]);
 * outs[j] (NULL: a fresh contiguous array of out_dtypes[j], for source-only). */
void uf_build_plan(const kiln_ufunc *f, uf_backend backend, int sig, const kiln_value *args,
                   kiln_array *const *ins, kiln_array *const *outs, const kiln_dtype *out_dtypes, int nd,
                   const int64_t *shape, uf_plan *p);
int uf_plan_param_count(const uf_plan *p, const kiln_ufunc *f);
/* Kernel arguments for elements [0, n) (CPU: in chunks of `chunk`), for
 * the plan's own kernel or (mixed) its signature's mixed kernel. */
int uf_plan_args(const uf_plan *p, const kiln_ufunc *f, int mixed, int64_t n, int64_t chunk,
                 kiln_value *args);
#endif
