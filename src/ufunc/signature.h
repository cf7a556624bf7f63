/* signature.h: parsing a ufunc's type signatures and parameter names (signature.c). */
#ifndef KILN_UFUNC_SIGNATURE_H
#define KILN_UFUNC_SIGNATURE_H

#include "ufunc/ufunc_types.h"

/* Parses "f8(f8,f8); f4(f4,f4)" or "(f8,f8)(f8,f8,f8)" into f->sigs. */
kiln_status uf_parse_signatures(kiln_ufunc *f, const char *text);
/* Parses "a, b, c" or "a, b -> x, y" into f->in_names/out_names. */
kiln_status uf_parse_params(kiln_ufunc *f, const char *text);

#endif
