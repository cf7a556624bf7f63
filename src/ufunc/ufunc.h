/* ufunc.h: creating and releasing ufuncs, and their targets (ufunc.c). */
#ifndef KILN_UFUNC_UFUNC_H
#define KILN_UFUNC_UFUNC_H

#include "ufunc/ufunc_types.h"

/* NULL/""/"context", "cpu", "parallel", "cuda". */
kiln_status uf_parse_target(const char *target, uf_target *out);

#endif
