// kiln_cpu_fp16.cuh: <cuda_fp16.h> and <cuda_bf16.h> for the CPU backend
// (cpu_headers.c writes both names, each including this text): __half,
// __half2, __nv_bfloat16 and __nv_bfloat162 with CUDA's conversions and
// arithmetic. Values are stored as CUDA stores them (IEEE binary16, and the
// top half of a binary32), so arrays move between backends unchanged.
// Arithmetic is done in double and rounded once to the 16-bit format:
// double has more than twice the bits of either format plus two, so the
// double rounding gives the correctly rounded result, as the GPU's
// instructions do.
#ifndef KILN_CPU_FP16_H
#define KILN_CPU_FP16_H

// ---------------------------------------------------------------- bits <-> float
static inline unsigned short kiln_f2h_bits(float f) {
    unsigned x;
    memcpy(&x, &f, 4);
    unsigned sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
    if (e == 0xff) return (unsigned short)(sign | 0x7c00u | (m ? 0x200u | (m >> 13) : 0));
    int exp = (int)e - 127 + 15;
    if (exp >= 31) return (unsigned short)(sign | 0x7c00u);
    if (exp <= 0) { // subnormal half (or zero): shift the full significand, round to nearest even
        if (exp < -10) return (unsigned short)sign;
        m |= 0x800000u;
        unsigned shift = (unsigned)(14 - exp), h = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (h & 1))) h++;
        return (unsigned short)(sign | h);
    }
    unsigned h = ((unsigned)exp << 10) | (m >> 13), rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++; // may carry into the exponent: still right
    return (unsigned short)(sign | h);
}
static inline float kiln_h2f_bits(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0x1f)
        x = sign | 0x7f800000u | (m << 13);
    else if (e == 0) {
        if (m == 0)
            x = sign;
        else {
            float f = (float)m * 5.9604644775390625e-8f; // m * 2^-24, exact
            return sign ? -f : f;
        }
    } else
        x = sign | ((e + 112u) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}
static inline unsigned short kiln_f2bf_bits(float f) {
    unsigned x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u); // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);                                                 // round to nearest even
    return (unsigned short)(x >> 16);
}
static inline float kiln_bf2f_bits(unsigned short b) {
    unsigned x = (unsigned)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

// ---------------------------------------------------------------- the types
struct __half_raw {
    unsigned short x;
};
struct __align__(2) __half {
    unsigned short __x;
    __half() = default;
    __half(float f) : __x(kiln_f2h_bits(f)) {}
    __half(double d) : __x(kiln_f2h_bits((float)d)) {}
    __half(int i) : __x(kiln_f2h_bits((float)i)) {}
    __half(__half_raw r) : __x(r.x) {}
    operator float() const { return kiln_h2f_bits(__x); }
};
typedef __half half;
struct __align__(4) __half2 {
    __half x, y;
};
typedef __half2 half2;
struct __align__(2) __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) : __x(kiln_f2bf_bits(f)) {}
    __nv_bfloat16(double d) : __x(kiln_f2bf_bits((float)d)) {}
    __nv_bfloat16(int i) : __x(kiln_f2bf_bits((float)i)) {}
    operator float() const { return kiln_bf2f_bits(__x); }
};
typedef __nv_bfloat16 nv_bfloat16;
struct __align__(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
typedef __nv_bfloat162 nv_bfloat162;

// ---------------------------------------------------------------- conversions
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline __half __double2half(double d) { return __half((float)d); }
static inline float __half2float(__half h) { return (float)h; }
static inline __half __int2half_rn(int i) { return __half((float)i); }
static inline int __half2int_rz(__half h) { return (int)(float)h; }
static inline int __half2int_rn(__half h) { return (int)nearbyintf((float)h); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __ushort_as_half(unsigned short u) { return __half(__half_raw{u}); }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
static inline __half2 __float2half2_rn(float a) { return __half2{__half(a), __half(a)}; }
static inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
static inline __half2 __half2half2(__half a) { return __half2{a, a}; }
static inline float2 __half22float2(__half2 h) { return make_float2((float)h.x, (float)h.y); }
static inline __half2 __float22half2_rn(float2 f) { return __floats2half2_rn(f.x, f.y); }
static inline __half __low2half(__half2 h) { return h.x; }
static inline __half __high2half(__half2 h) { return h.y; }
static inline float __low2float(__half2 h) { return (float)h.x; }
static inline float __high2float(__half2 h) { return (float)h.y; }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
static inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
    __nv_bfloat16 b;
    b.__x = u;
    return b;
}
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)};
}
static inline float2 __bfloat1622float2(__nv_bfloat162 h) { return make_float2((float)h.x, (float)h.y); }

// ---------------------------------------------------------------- arithmetic
// One rounding from double (see the top of this file).
#define KILN_H16_OPS_(T, P)                                                                                  \
    static inline T P##add(T a, T b) { return T((float)((double)(float)a + (float)b)); }                     \
    static inline T P##sub(T a, T b) { return T((float)((double)(float)a - (float)b)); }                     \
    static inline T P##mul(T a, T b) { return T((float)((double)(float)a * (float)b)); }                     \
    static inline T P##div(T a, T b) { return T((float)((double)(float)a / (float)b)); }                     \
    static inline T P##fma(T a, T b, T c) { return T((float)fma((double)(float)a, (float)b, (float)c)); }    \
    static inline T P##neg(T a) { return T(-(float)a); }                                                     \
    static inline T P##abs(T a) { return T(fabsf((float)a)); }                                               \
    static inline T P##max(T a, T b) { return (float)a < (float)b ? b : a; }                                 \
    static inline T P##min(T a, T b) { return (float)b < (float)a ? b : a; }                                 \
    static inline bool P##eq(T a, T b) { return (float)a == (float)b; }                                      \
    static inline bool P##ne(T a, T b) { return (float)a != (float)b; }                                      \
    static inline bool P##lt(T a, T b) { return (float)a < (float)b; }                                       \
    static inline bool P##le(T a, T b) { return (float)a <= (float)b; }                                      \
    static inline bool P##gt(T a, T b) { return (float)a > (float)b; }                                       \
    static inline bool P##ge(T a, T b) { return (float)a >= (float)b; }                                      \
    static inline bool P##isnan(T a) { return (float)a != (float)a; }                                        \
    static inline int P##isinf(T a) { return isinf((float)a) ? ((float)a > 0 ? 1 : -1) : 0; }               \
    static inline T operator+(T a, T b) { return P##add(a, b); }                                             \
    static inline T operator-(T a, T b) { return P##sub(a, b); }                                             \
    static inline T operator*(T a, T b) { return P##mul(a, b); }                                             \
    static inline T operator/(T a, T b) { return P##div(a, b); }                                             \
    static inline T operator-(T a) { return P##neg(a); }                                                     \
    static inline T &operator+=(T &a, T b) { return a = P##add(a, b); }                                      \
    static inline T &operator-=(T &a, T b) { return a = P##sub(a, b); }                                      \
    static inline T &operator*=(T &a, T b) { return a = P##mul(a, b); }                                      \
    static inline T &operator/=(T &a, T b) { return a = P##div(a, b); }                                      \
    static inline bool operator==(T a, T b) { return P##eq(a, b); }                                          \
    static inline bool operator!=(T a, T b) { return P##ne(a, b); }                                          \
    static inline bool operator<(T a, T b) { return P##lt(a, b); }                                           \
    static inline bool operator<=(T a, T b) { return P##le(a, b); }                                          \
    static inline bool operator>(T a, T b) { return P##gt(a, b); }                                           \
    static inline bool operator>=(T a, T b) { return P##ge(a, b); }
KILN_H16_OPS_(__half, __h)
KILN_H16_OPS_(__nv_bfloat16, __h)
#undef KILN_H16_OPS_
#define KILN_H16_PAIR_OPS_(T2, T)                                                                            \
    static inline T2 __hadd2(T2 a, T2 b) { return T2{__hadd(a.x, b.x), __hadd(a.y, b.y)}; }                  \
    static inline T2 __hsub2(T2 a, T2 b) { return T2{__hsub(a.x, b.x), __hsub(a.y, b.y)}; }                  \
    static inline T2 __hmul2(T2 a, T2 b) { return T2{__hmul(a.x, b.x), __hmul(a.y, b.y)}; }                  \
    static inline T2 __h2div(T2 a, T2 b) { return T2{__hdiv(a.x, b.x), __hdiv(a.y, b.y)}; }                  \
    static inline T2 __hfma2(T2 a, T2 b, T2 c) { return T2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }  \
    static inline T2 __hneg2(T2 a) { return T2{__hneg(a.x), __hneg(a.y)}; }                                  \
    static inline T2 __habs2(T2 a) { return T2{__habs(a.x), __habs(a.y)}; }                                  \
    static inline T2 __hmax2(T2 a, T2 b) { return T2{__hmax(a.x, b.x), __hmax(a.y, b.y)}; }                  \
    static inline T2 __hmin2(T2 a, T2 b) { return T2{__hmin(a.x, b.x), __hmin(a.y, b.y)}; }                  \
    static inline T2 operator+(T2 a, T2 b) { return __hadd2(a, b); }                                         \
    static inline T2 operator-(T2 a, T2 b) { return __hsub2(a, b); }                                         \
    static inline T2 operator*(T2 a, T2 b) { return __hmul2(a, b); }                                         \
    static inline T2 operator/(T2 a, T2 b) { return __h2div(a, b); }
KILN_H16_PAIR_OPS_(__half2, __half)
KILN_H16_PAIR_OPS_(__nv_bfloat162, __nv_bfloat16)
#undef KILN_H16_PAIR_OPS_

// ---------------------------------------------------------------- math
#define KILN_H16_MATH_(T, name, fn)                                                                          \
    static inline T name(T a) { return T((float)fn((double)(float)a)); }
KILN_H16_MATH_(__half, hsqrt, sqrt)
KILN_H16_MATH_(__half, hexp, exp)
KILN_H16_MATH_(__half, hexp2, exp2)
KILN_H16_MATH_(__half, hexp10, exp10)
KILN_H16_MATH_(__half, hlog, log)
KILN_H16_MATH_(__half, hlog2, log2)
KILN_H16_MATH_(__half, hlog10, log10)
KILN_H16_MATH_(__half, hsin, sin)
KILN_H16_MATH_(__half, hcos, cos)
KILN_H16_MATH_(__half, htanh, tanh)
KILN_H16_MATH_(__half, hfloor, floor)
KILN_H16_MATH_(__half, hceil, ceil)
KILN_H16_MATH_(__half, htrunc, trunc)
KILN_H16_MATH_(__half, hrint, nearbyint)
KILN_H16_MATH_(__half, hrsqrt, 1.0 / sqrt)
KILN_H16_MATH_(__half, hrcp, 1.0 /)
KILN_H16_MATH_(__nv_bfloat16, hsqrt, sqrt)
KILN_H16_MATH_(__nv_bfloat16, hexp, exp)
KILN_H16_MATH_(__nv_bfloat16, hexp2, exp2)
KILN_H16_MATH_(__nv_bfloat16, hexp10, exp10)
KILN_H16_MATH_(__nv_bfloat16, hlog, log)
KILN_H16_MATH_(__nv_bfloat16, hlog2, log2)
KILN_H16_MATH_(__nv_bfloat16, hlog10, log10)
KILN_H16_MATH_(__nv_bfloat16, hsin, sin)
KILN_H16_MATH_(__nv_bfloat16, hcos, cos)
KILN_H16_MATH_(__nv_bfloat16, htanh, tanh)
KILN_H16_MATH_(__nv_bfloat16, hfloor, floor)
KILN_H16_MATH_(__nv_bfloat16, hceil, ceil)
KILN_H16_MATH_(__nv_bfloat16, htrunc, trunc)
KILN_H16_MATH_(__nv_bfloat16, hrint, nearbyint)
KILN_H16_MATH_(__nv_bfloat16, hrsqrt, 1.0 / sqrt)
KILN_H16_MATH_(__nv_bfloat16, hrcp, 1.0 /)
#undef KILN_H16_MATH_

#endif
