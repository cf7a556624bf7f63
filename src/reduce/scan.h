/* scan.h: scans (cumulative operations) along one axis, private to
 * src/reduce/. A scan operator is C text: a value type, combine(a, b) with
 * a the earlier elements, and an identity; without one (ufunc accumulate,
 * user operators without identity) the value is wrapped with a "has a
 * value" flag so that no identity is needed. */
#ifndef KILN_REDUCE_SCAN_H
#define KILN_REDUCE_SCAN_H

#include "reduce/reduce.h"

typedef struct sc_op {
    char name[RD_NAME_MAX];
    kiln_dtype in_dtype;  /* the operator's dtype (inputs cast safely to it) */
    kiln_dtype out_dtype; /* the result's dtype */
    const char *combine;  /* expression of a and b, of in/out compute type */
    const char *identity; /* NULL: none */
    const char *preamble;
    const char *body_fn; /* optional: a __device__ function text defining the operator's helpers */
    int user;            /* #line snippets as "<name>.op" ... */
    int acc_f64;         /* combine in double (float16/float32 cumsum), store rounded */
} sc_op;

/* Scans a along axis (KILN_AXIS_FLAT: flattened) into out/result. */
kiln_status sc_execute(const sc_op *op, kiln_array *a, int axis, int exclusive, kiln_array *out,
                       kiln_stream *stream, kiln_array **result);
/* Generated source of a scan call on backend (tests compile it through NVRTC). */
kiln_status sc_source_for(const sc_op *op, kiln_backend_kind backend, kiln_array *a, int axis, char **source);

/* The operators of user objects, for tests (NVRTC compiles of their sources). */
const sc_op *sc_kernel_op(const kiln_scan_kernel *k);
const rd_op *rd_kernel_op(const kiln_reduction_kernel *k);
/* A binary ufunc's reduce operator over arrays of dtype `have` (identity
 * NULL: none); u->preamble is malloc'd (the caller frees it). */
typedef struct rd_ufunc_op {
    rd_op op;
    char identity[512], map[128];
    char *preamble;
} rd_ufunc_op;
kiln_status rd_ufunc_reduce_op(kiln_ufunc *f, kiln_dtype have, const char *identity, rd_ufunc_op *u);

#endif
