/* cpu_pch.h: the CPU prelude's text, and its precompiled header (cpu_pch.c). */
#ifndef KILN_BACKEND_CPU_PCH_H
#define KILN_BACKEND_CPU_PCH_H

#include <stddef.h>

#include "core/text.h"

#define KILN_CPU_PCH_HEADER "kiln_cpu_prelude_all.h"

/* Appends the prelude every module starts with (kiln_cpu_prelude.cuh,
 * kiln_complex.cuh, kiln_signature.cuh, with #line directives). */
void kiln_cpu_prelude_text(kiln_text *t);

/* base_argv: the compiler command and the flags of the module compile
 * (without -D, -I, inputs and outputs). Returns 1 and the folder in dir when
 * KILN_CPU_PCH_HEADER and its .gch are there (building them now if needed);
 * 0 when the prelude should be compiled inline (no cache, a clang, a build
 * that failed once, KILN_CPU_PCH=0). Never sets an error. */
int kiln_cpu_pch_prepare(char *const *base_argv, int base_argc, char *dir, size_t dir_size);

#endif
