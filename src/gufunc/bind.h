/* bind.h: binding a gufunc call's core dims and dispatching its type
 * signature (bind.c), and the operand words the call's messages share. */
#ifndef KILN_GUFUNC_BIND_H
#define KILN_GUFUNC_BIND_H

#include "gufunc/gufunc.h"

/* "(m,n)" for operand k, for messages. */
const char *gu_core_text(const gu_layout *l, int k, char *buf, size_t cap);
/* "input" or "output", for messages. */
const char *gu_arg_kind(const gu_layout *l, int k);
/* The first type signature that takes the operands (inputs cast safely,
 * scalars by value, outputs exactly) in *sig; KILN_ERR_DTYPE naming them
 * all otherwise. */
kiln_status gu_dispatch(const kiln_gufunc *f, const kiln_value *const *in, kiln_array *const *outs, int *sig);
/* Binds the core dims of every array operand; fills size[] and from[]. */
kiln_status gu_bind_dims(const kiln_gufunc *f, kiln_array *const *arr, const char *dims_text, int64_t *size,
                         int *from);

#endif
