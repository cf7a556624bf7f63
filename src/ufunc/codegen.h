/* codegen.h: CUDA C source for ufunc kernel variants (codegen.c). */
#ifndef KILN_UFUNC_CODEGEN_H
#define KILN_UFUNC_CODEGEN_H

#include "ufunc/ufunc_types.h"

#define UF_KERNEL_NAME_MAX 96
/* One module's source (malloc'd) holding a kernel per key (all of one
 * backend); kernel_names[i] receives the name of keys[i]'s kernel. */
kiln_status uf_generate(const kiln_ufunc *f, const uf_key *keys, int nkeys, char **source,
                        char (*kernel_names)[UF_KERNEL_NAME_MAX]);

#endif
