// ufunc_common.cuh: helpers every generated ufunc kernel starts with, on both
// backends (after the backend's prelude, and the complex types where the
// module uses them: named here as KILN_CX64/KILN_CX128 only, see
// src/backend/common/prelude_needs.c).
//  - KILN_UF_FN: how the user's body is declared (always inlined, so the CPU
//    loop around it vectorises and the GPU loop has no call).
//  - kiln_uf_cv<To>::go(v): the conversions NumPy's safe casting allows when
//    an operand's dtype differs from the signature's (int -> double, c8 ->
//    c16, real -> c8/c16, ...).
//  - float16 is stored as its IEEE bits (uint16_t) and computed in float, so
//    neither backend needs a half type.
//  - kiln_uf_vec<T, N>: N elements moved as one aligned access (16-byte loads
//    and stores on the GPU for contiguous aligned operands).
#ifndef KILN_UF_COMMON
#define KILN_UF_COMMON 1

#if defined(__CUDACC__) || defined(KILN_CUDA)
#define KILN_UF_FN static __device__ __forceinline__
#else
#define KILN_UF_FN static inline __attribute__((always_inline))
#endif

template <class To> struct kiln_uf_cv {
    template <class F> KILN_UF_FN To go(F v) { return (To)v; }
};
#ifdef KILN_CX64
#define KILN_UF_CV_CX_(T, R)                                                                    \
    template <> struct kiln_uf_cv<T> {                                                          \
        KILN_UF_FN T go(KILN_CX64 v) { return T((R)v.x, (R)v.y); }                              \
        KILN_UF_FN T go(KILN_CX128 v) { return T((R)v.x, (R)v.y); }                             \
        template <class F> KILN_UF_FN T go(F v) { return T((R)v); }                             \
    };
KILN_UF_CV_CX_(KILN_CX64, float)
KILN_UF_CV_CX_(KILN_CX128, double)
#undef KILN_UF_CV_CX_
#endif

KILN_UF_FN float kiln_uf_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13); // inf / nan
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else { // subnormal: normalise
        int e = -1;
        do { mant <<= 1; e++; } while (!(mant & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    union { uint32_t u; float f; } c;
    c.u = bits;
    return c.f;
}

KILN_UF_FN uint16_t kiln_uf_f2h(float f) {
    union { float f; uint32_t u; } c;
    c.f = f;
    uint32_t x = c.u, sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); // rounds to inf
    if (ax < 0x38800000u) { // subnormal or zero in half
        if (ax < 0x33000000u) return (uint16_t)sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((ax >> 13) - (112u << 10)), rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}

// bfloat16 is float32's upper half: widening is exact, narrowing rounds to
// nearest even (kiln_float_to_bfloat16 in src/core/dtype.c does the same on
// the host); a NaN stays a NaN with its sign.
KILN_UF_FN float kiln_uf_bf2f(uint16_t b) {
    union { uint32_t u; float f; } c;
    c.u = (uint32_t)b << 16;
    return c.f;
}

KILN_UF_FN uint16_t kiln_uf_f2bf(float f) {
    union { float f; uint32_t u; } c;
    c.f = f;
    uint32_t x = c.u;
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

template <class T, int N> struct alignas(sizeof(T) * N) kiln_uf_vec { T v[N]; };

#endif
