/* prelude_needs.h: which of kiln's prelude headers a module needs. */
#ifndef KILN_BACKEND_COMMON_PRELUDE_NEEDS_H
#define KILN_BACKEND_COMMON_PRELUDE_NEEDS_H

#include "core/backend.h"

/* 1 when the request's source or a -D names something complex outside
 * comments and literals (an identifier containing "complex", cuC*,
 * kiln_cx*, polar, proj, conj, real, imag, arg, norm) or includes a header
 * (its text is not read here): then kiln_complex.cuh goes in. Generated
 * ufunc and gufunc helpers name the complex types through KILN_CX64 and
 * KILN_CX128, which that header defines, so they do not pull it in. */
int kiln_prelude_needs_complex(const kiln_compile_request *req);

#endif
