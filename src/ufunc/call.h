/* call.h: the steps of a ufunc call (plan.c, call.c, staging.c). */
#ifndef KILN_UFUNC_CALL_H
#define KILN_UFUNC_CALL_H

#include "ufunc/ufunc.h"

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
/* Launches a planned variant on exec (compiling it on first use). */
kiln_status uf_launch_plan(kiln_ufunc *f, kiln_context *exec, const uf_plan *p, int parallel,
                           kiln_stream *stream);

/* Host-memory inputs on a CUDA context: the chunked, overlapped pipeline
 * (staging.c). KILN_ERR_UNSUPPORTED when the operands do not suit it (then
 * the caller stages whole arrays). */
kiln_status uf_staged_call(kiln_ufunc *f, int sig, const kiln_value *args, kiln_array **outs, int nd,
                           const int64_t *shape, kiln_stream *stream);

#endif
