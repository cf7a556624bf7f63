// ufunc_cpu_math.cuh: accurate vector math for generated CPU ufunc loops.
//
// glibc's libmvec has SIMD versions (SSE/AVX/AVX2/AVX-512, at most 4 ULP) of
// the common math functions, but GCC only calls them when the declarations
// carry `simd`, which glibc adds only under -ffast-math. We redeclare the
// functions with the attribute here instead, so the loop vectorises with
// libmvec while the rest of the code keeps IEEE semantics (NaN, Inf, signed
// zeros, no reassociation): nothing here changes a compiler flag.
//
// sin and cos get a twist: GCC merges sin(x) and cos(x) of one x into a
// scalar sincos call before vectorising, which kills the vector loop. Calling
// them through names GCC does not treat as builtins (asm labels bind them to
// the same libm symbols, and so to the same libmvec variants) avoids that.
//
// The variants resolve from libmvec.so.1 at load time: the CPU backend links
// every module with -lmvec (src/backend/cpu/cpu_compile.c).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__) &&      \
    !defined(KILN_UF_NO_VECTOR_MATH)
#if __GLIBC_PREREQ(2, 22)
#define KILN_UF_SIMD __attribute__((simd("notinbranch"), nothrow))
#define KILN_UF_SIMD1(f) KILN_UF_SIMD double f(double) noexcept; KILN_UF_SIMD float f##f(float) noexcept;
#define KILN_UF_SIMD2(f)                                                                            \
    KILN_UF_SIMD double f(double, double) noexcept;                                                 \
    KILN_UF_SIMD float f##f(float, float) noexcept;
extern "C" {
KILN_UF_SIMD1(exp)
KILN_UF_SIMD1(log)
KILN_UF_SIMD2(pow)
#if __GLIBC_PREREQ(2, 35)
KILN_UF_SIMD1(acos) KILN_UF_SIMD1(acosh) KILN_UF_SIMD1(asin) KILN_UF_SIMD1(asinh)
KILN_UF_SIMD1(atan) KILN_UF_SIMD1(atanh) KILN_UF_SIMD1(cbrt) KILN_UF_SIMD1(cosh)
KILN_UF_SIMD1(erf) KILN_UF_SIMD1(erfc) KILN_UF_SIMD1(exp10) KILN_UF_SIMD1(exp2)
KILN_UF_SIMD1(expm1) KILN_UF_SIMD1(log10) KILN_UF_SIMD1(log1p) KILN_UF_SIMD1(log2)
KILN_UF_SIMD1(sinh) KILN_UF_SIMD1(tan) KILN_UF_SIMD1(tanh)
KILN_UF_SIMD2(atan2) KILN_UF_SIMD2(hypot)
#endif
#define KILN_UF_CONST_SIMD __attribute__((simd("notinbranch"), const, nothrow))
KILN_UF_CONST_SIMD double kiln_uf_mv_sin(double) noexcept __asm__("sin");
KILN_UF_CONST_SIMD double kiln_uf_mv_cos(double) noexcept __asm__("cos");
KILN_UF_CONST_SIMD float kiln_uf_mv_sinf(float) noexcept __asm__("sinf");
KILN_UF_CONST_SIMD float kiln_uf_mv_cosf(float) noexcept __asm__("cosf");
}
static inline double kiln_uf_sin(double x) { return kiln_uf_mv_sin(x); }
static inline float kiln_uf_sin(float x) { return kiln_uf_mv_sinf(x); }
template <class T> static inline double kiln_uf_sin(T x) { return kiln_uf_mv_sin((double)x); }
static inline double kiln_uf_cos(double x) { return kiln_uf_mv_cos(x); }
static inline float kiln_uf_cos(float x) { return kiln_uf_mv_cosf(x); }
template <class T> static inline double kiln_uf_cos(T x) { return kiln_uf_mv_cos((double)x); }
#define sin kiln_uf_sin
#define cos kiln_uf_cos
#define sinf kiln_uf_mv_sinf
#define cosf kiln_uf_mv_cosf
#undef KILN_UF_SIMD1
#undef KILN_UF_SIMD2
#define KILN_UF_VECTOR_MATH 1
#endif
#endif
