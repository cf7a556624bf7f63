/* dtype.c: element types, their names and NumPy's safe-casting table. */
#include "core/dtype.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

typedef struct dtype_desc {
    const char *name; /* NumPy name */
    const char *code; /* NumPy short code / Numba signature letter pair */
    const char *c_type;
    size_t size;
    char kind; /* 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex */
} dtype_desc;

static const dtype_desc dtype_table[KILN_DTYPE_COUNT] = {
    [KILN_BOOL] = {"bool", "b1", "bool", 1, 'b'},
    [KILN_INT8] = {"int8", "i1", "int8_t", 1, 'i'},
    [KILN_INT16] = {"int16", "i2", "int16_t", 2, 'i'},
    [KILN_INT32] = {"int32", "i4", "int32_t", 4, 'i'},
    [KILN_INT64] = {"int64", "i8", "int64_t", 8, 'i'},
    [KILN_UINT8] = {"uint8", "u1", "uint8_t", 1, 'u'},
    [KILN_UINT16] = {"uint16", "u2", "uint16_t", 2, 'u'},
    [KILN_UINT32] = {"uint32", "u4", "uint32_t", 4, 'u'},
    [KILN_UINT64] = {"uint64", "u8", "uint64_t", 8, 'u'},
    [KILN_FLOAT16] = {"float16", "f2", "__half", 2, 'f'},
    [KILN_FLOAT32] = {"float32", "f4", "float", 4, 'f'},
    [KILN_FLOAT64] = {"float64", "f8", "double", 8, 'f'},
    [KILN_COMPLEX64] = {"complex64", "c8", "kiln_complex64", 8, 'c'},
    [KILN_COMPLEX128] = {"complex128", "c16", "kiln_complex128", 16, 'c'},
    /* NumPy has no code for it; ml_dtypes calls it "bfloat16", JAX "bf16". */
    [KILN_BFLOAT16] = {"bfloat16", "bf16", "__nv_bfloat16", 2, 'f'},
};

static int dtype_valid(kiln_dtype t) { return (unsigned)t < KILN_DTYPE_COUNT; }

size_t kiln_dtype_size(kiln_dtype t) { return dtype_valid(t) ? dtype_table[t].size : 0; }
const char *kiln_dtype_name(kiln_dtype t) { return dtype_valid(t) ? dtype_table[t].name : "invalid"; }
const char *kiln_dtype_c_type(kiln_dtype t) { return dtype_valid(t) ? dtype_table[t].c_type : "void"; }
const char *kiln_dtype_code(kiln_dtype t) { return dtype_valid(t) ? dtype_table[t].code : "?"; }
char kiln_dtype_kind(kiln_dtype t) { return dtype_valid(t) ? dtype_table[t].kind : '?'; }

static const struct {
    const char *alias;
    kiln_dtype dtype;
} dtype_aliases[] = {
    {"float", KILN_FLOAT32}, {"double", KILN_FLOAT64},  {"int", KILN_INT32},          {"half", KILN_FLOAT16},
    {"f16", KILN_FLOAT16},   {"f32", KILN_FLOAT32},     {"f64", KILN_FLOAT64},        {"i8", KILN_INT64},
    {"c64", KILN_COMPLEX64}, {"c128", KILN_COMPLEX128}, {"complex", KILN_COMPLEX128}, {"bool_", KILN_BOOL},
    {"?", KILN_BOOL},        {"uint", KILN_UINT32},
};

kiln_status kiln_dtype_parse(const char *name, kiln_dtype *out) {
    if (!name || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_dtype_parse: NULL argument");
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
        if (strcmp(name, dtype_table[t].name) == 0 || strcmp(name, dtype_table[t].code) == 0) {
            *out = (kiln_dtype)t;
            return KILN_OK;
        }
    }
    for (size_t i = 0; i < sizeof dtype_aliases / sizeof dtype_aliases[0]; i++) {
        if (strcmp(name, dtype_aliases[i].alias) == 0) {
            *out = dtype_aliases[i].dtype;
            return KILN_OK;
        }
    }
    return kiln_set_error(KILN_ERR_DTYPE,
                          "unknown dtype '%s': expected a NumPy name (float32, int64, complex64, "
                          "bool, ...) or code (f4, i8, c8, u1, b1, ...)",
                          name);
}

/* The narrowest float NumPy deems a safe home for an integer of this size:
 * 8-bit ones fit float16, 16-bit ones float32, and every wider one float64
 * (NumPy calls int64 -> float64 safe although it rounds above 2**53). */
static size_t float_size_for_int(size_t int_size) { return int_size == 1 ? 2 : int_size == 2 ? 4 : 8; }

/* NumPy's np.can_cast(from, to, 'safe'); the whole table is written out in
 * tests/test_casting.c. bfloat16 follows ml_dtypes (NumPy's own has none):
 * bool, int8 and uint8 cast to it, it casts to float32, float64, complex64
 * and complex128, and float16 and it are not safe either way. */
int kiln_dtype_can_cast(kiln_dtype from, kiln_dtype to) {
    if (!dtype_valid(from) || !dtype_valid(to)) return 0;
    if (from == to) return 1;
    const dtype_desc *f = &dtype_table[from], *t = &dtype_table[to];
    switch (f->kind) {
    case 'b': return 1;
    case 'u':
        if (t->kind == 'u') return t->size >= f->size;
        if (t->kind == 'i') return t->size > f->size;
        if (t->kind == 'f') return t->size >= float_size_for_int(f->size);
        if (t->kind == 'c') return t->size / 2 >= float_size_for_int(f->size);
        return 0;
    case 'i':
        if (t->kind == 'i') return t->size >= f->size;
        if (t->kind == 'f') return t->size >= float_size_for_int(f->size);
        if (t->kind == 'c') return t->size / 2 >= float_size_for_int(f->size);
        return 0;
    case 'f':
        /* float16 and bfloat16 hold different values (range vs precision):
         * neither casts safely to the other (ml_dtypes registers none). */
        if (t->kind == 'f' && f->size == 2 && t->size == 2) return 0;
        if (t->kind == 'f') return t->size >= f->size;
        if (t->kind == 'c') return t->size / 2 >= f->size;
        return 0;
    case 'c': return t->kind == 'c' && t->size >= f->size;
    default: return 0;
    }
}

/* A float's IEEE bits and back (memcpy: the one aliasing-safe way), shared
 * by the float16 and bfloat16 conversions below. */
static uint32_t float_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float float_of_bits(uint32_t x) {
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

float kiln_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 0x3ff, x;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    if (e == 31)
        x = sign | 0x7f800000u | (m << 13);
    else
        x = sign | ((e - 15 + 127) << 23) | (m << 13);
    return float_of_bits(x);
}

uint16_t kiln_float_to_half(float f) {
    uint32_t x = float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    if (exp == 255) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0)); /* inf / nan */
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u); /* overflow to inf */
    if (e <= 0) {                                   /* subnormal half (or zero) */
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into the exponent: correct */
    return (uint16_t)(sign | h);
}

float kiln_bfloat16_to_float(uint16_t b) {
    return float_of_bits((uint32_t)b << 16); /* exact: bfloat16 is float32's upper half */
}

uint16_t kiln_float_to_bfloat16(float f) {
    uint32_t x = float_bits(f);
    /* NaN: keep sign and the payload's top bits, and make sure it stays a
     * NaN (quiet bit set) rather than truncating to an infinity. */
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u);
    /* round to nearest even; a carry into the exponent is correct (and
     * overflows to infinity from above the largest finite bfloat16) */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

kiln_value kiln_value_convert(const kiln_value *v, kiln_dtype to) {
    char fk = kiln_dtype_kind(v->dtype);
    double re = fk == 'f' || fk == 'c' ? v->as.c[0] : fk == 'u' ? (double)v->as.u : (double)v->as.i;
    double im = fk == 'c' ? v->as.c[1] : 0.0;
    int64_t i = fk == 'f' || fk == 'c' ? (int64_t)re : fk == 'u' ? (int64_t)v->as.u : v->as.i;
    switch (kiln_dtype_kind(to)) {
    case 'b': return kiln_bool(re != 0 || im != 0);
    case 'i': return kiln_scalar_i_(to, i);
    case 'u': return kiln_scalar_u_(to, fk == 'u' ? v->as.u : (uint64_t)i);
    case 'c': return kiln_scalar_f_(to, re, im);
    default: /* float16 and bfloat16 travel as float */
        return to == KILN_FLOAT64 ? kiln_f64(re) : kiln_f32((float)re);
    }
}
