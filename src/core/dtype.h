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

/* bfloat16 bits of f, rounded to nearest even (NaN stays NaN, sign kept). */
uint16_t kiln_float_to_bfloat16(float f);
/* The float value of bfloat16 bits (exact). */
float kiln_bfloat16_to_float(uint16_t b);
/* A 2-byte float (float16 or bfloat16): stored as 16 bits, computed as float. */
static inline int kiln_dtype_is_half(kiln_dtype t) { return t == KILN_FLOAT16 || t == KILN_BFLOAT16; }
/* A float's bits of a 2-byte float dtype, and back (nearest even). */
static inline uint16_t kiln_half_bits_of(kiln_dtype t, float f) {
    return t == KILN_BFLOAT16 ? kiln_float_to_bfloat16(f) : kiln_float_to_half(f);
}
static inline float kiln_half_value_of(kiln_dtype t, uint16_t bits) {
    return t == KILN_BFLOAT16 ? kiln_bfloat16_to_float(bits) : kiln_half_to_float(bits);
}

/* The scalar v as a kernel argument of dtype `to` (C conversion rules: float to
 * integer truncates, complex to real drops the imaginary part). One definition
 * so the reduction and gufunc scalar arguments convert alike. */
kiln_value kiln_value_convert(const kiln_value *v, kiln_dtype to);

#endif
