/* dtype.h: internal helpers over kiln_dtype. */
#ifndef KILN_CORE_DTYPE_H
#define KILN_CORE_DTYPE_H

#include "kiln.h"

/* The CUDA C type kernels use for the dtype ("float", "kiln_complex64"). */
const char *kiln_dtype_c_type(kiln_dtype t);
/* NumPy's short code ("f4"). */
const char *kiln_dtype_code(kiln_dtype t);
/* 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex, '?' invalid. */
char kiln_dtype_kind(kiln_dtype t);

#include <stdint.h>
/* IEEE binary16 bits of f, rounded to nearest even. */
uint16_t kiln_float_to_half(float f);
/* The float value of IEEE binary16 bits (exact; NaN payloads kept). */
float kiln_half_to_float(uint16_t h);

/* The scalar v as a kernel argument of dtype `to` (C conversion rules: float to
 * integer truncates, complex to real drops the imaginary part). One definition
 * so the reduction and gufunc scalar arguments convert alike. */
kiln_value kiln_value_convert(const kiln_value *v, kiln_dtype to);

#endif
