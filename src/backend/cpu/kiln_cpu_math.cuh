// kiln_cpu_math.cuh: the rest of the CUDA Math API on the CPU, after
// kiln_cpu_prelude.cuh (which has the common functions): the fast-math
// intrinsics glibc declares but does not export, the rounding-mode forms,
// the inverse error functions, norms, Bessel functions of imaginary
// argument, and integer and SIMD intrinsics. Where CUDA's intrinsic trades
// accuracy for speed, the CPU computes the accurate value, which is within
// every bound CUDA documents for the intrinsic.
#include <fenv.h>

// ---------------------------------------------------------------- fast-math intrinsics
// glibc declares __expf and friends (its internal aliases) in <math.h> but
// its libm does not export them: a module calling one failed to load. The
// definitions here keep glibc's declarations (extern "C", noexcept) and,
// hidden like every function of the module, resolve inside it.
#ifdef __GLIBC__
extern "C" {
inline float __expf(float x) noexcept { return expf(x); }
inline float __exp10f(float x) noexcept { return exp10f(x); }
inline float __logf(float x) noexcept { return logf(x); }
inline float __log2f(float x) noexcept { return log2f(x); }
inline float __log10f(float x) noexcept { return log10f(x); }
inline float __sinf(float x) noexcept { return sinf(x); }
inline float __cosf(float x) noexcept { return cosf(x); }
inline float __tanf(float x) noexcept { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) noexcept { sincosf(x, s, c); }
inline float __powf(float x, float y) noexcept { return powf(x, y); }
}
#endif
static inline float __frsqrt_rn(float x) { return (float)(1.0 / sqrt((double)x)); }

// ---------------------------------------------------------------- rounding-mode forms
// The operation runs under the asked rounding mode: its operands are read
// (volatile) after fesetround and its result stored (volatile) before the
// mode is restored, so the compiler cannot move it out of the window.
#define KILN_RM_(name, T, mode, params, expr)                                                                \
    static inline T name params {                                                                            \
        fesetround(mode);                                                                                    \
        volatile T kiln_r = (expr);                                                                          \
        fesetround(FE_TONEAREST);                                                                            \
        return kiln_r;                                                                                       \
    }
#define KILN_RM_FAMILY_(base, T, params, expr)                                                               \
    KILN_RM_(base##_rz, T, FE_TOWARDZERO, params, expr)                                                      \
    KILN_RM_(base##_ru, T, FE_UPWARD, params, expr)                                                          \
    KILN_RM_(base##_rd, T, FE_DOWNWARD, params, expr)
#define KILN_V_(x) (*(volatile decltype(x) *)&(x))
KILN_RM_FAMILY_(__fadd, float, (float a, float b), KILN_V_(a) + KILN_V_(b))
KILN_RM_FAMILY_(__fsub, float, (float a, float b), KILN_V_(a) - KILN_V_(b))
KILN_RM_FAMILY_(__fmul, float, (float a, float b), KILN_V_(a) * KILN_V_(b))
KILN_RM_FAMILY_(__fdiv, float, (float a, float b), KILN_V_(a) / KILN_V_(b))
KILN_RM_FAMILY_(__frcp, float, (float a), 1.0f / KILN_V_(a))
KILN_RM_FAMILY_(__fsqrt, float, (float a), sqrtf(KILN_V_(a)))
KILN_RM_FAMILY_(__fmaf, float, (float a, float b, float c), fmaf(KILN_V_(a), KILN_V_(b), KILN_V_(c)))
KILN_RM_FAMILY_(__dadd, double, (double a, double b), KILN_V_(a) + KILN_V_(b))
KILN_RM_FAMILY_(__dsub, double, (double a, double b), KILN_V_(a) - KILN_V_(b))
KILN_RM_FAMILY_(__dmul, double, (double a, double b), KILN_V_(a) * KILN_V_(b))
KILN_RM_FAMILY_(__ddiv, double, (double a, double b), KILN_V_(a) / KILN_V_(b))
KILN_RM_FAMILY_(__drcp, double, (double a), 1.0 / KILN_V_(a))
KILN_RM_FAMILY_(__dsqrt, double, (double a), sqrt(KILN_V_(a)))
KILN_RM_FAMILY_(__fma, double, (double a, double b, double c), fma(KILN_V_(a), KILN_V_(b), KILN_V_(c)))
KILN_RM_FAMILY_(__double2float, float, (double a), (float)KILN_V_(a))
KILN_RM_FAMILY_(__int2float, float, (int a), (float)KILN_V_(a))
KILN_RM_FAMILY_(__uint2float, float, (unsigned a), (float)KILN_V_(a))
KILN_RM_FAMILY_(__ll2float, float, (long long a), (float)KILN_V_(a))
KILN_RM_FAMILY_(__ull2float, float, (unsigned long long a), (float)KILN_V_(a))
KILN_RM_FAMILY_(__ll2double, double, (long long a), (double)KILN_V_(a))
KILN_RM_FAMILY_(__ull2double, double, (unsigned long long a), (double)KILN_V_(a))
#undef KILN_RM_FAMILY_
#undef KILN_RM_
#undef KILN_V_
static inline float __fdiv_rn_ieee(float a, float b) { return a / b; }
static inline float __ull2float_rn(unsigned long long x) { return (float)x; }
static inline double __ll2double_rn(long long x) { return (double)x; }
static inline double __ull2double_rn(unsigned long long x) { return (double)x; }
static inline double __uint2double_rn(unsigned x) { return (double)x; }
static inline double __drcp_rn(double a) { return 1.0 / a; }
static inline double __dsqrt_rn(double a) { return sqrt(a); }

// Float to integer: CUDA saturates out-of-range values and gives 0 for NaN
// (a C cast would be undefined).
#define KILN_F2I_(name, F, I, lo, hi, round)                                                                 \
    static inline I name(F x) {                                                                              \
        F r = round(x);                                                                                      \
        if (r != r) return 0;                                                                                \
        if (r <= (F)(lo)) return (I)(lo);                                                                    \
        if (r >= (F)(hi)) return (I)(hi);                                                                    \
        return (I)r;                                                                                         \
    }
#define KILN_F2I_FAMILY_(prefix, F, I, lo, hi, rn, rz, rd, ru)                                               \
    KILN_F2I_(prefix##_rz, F, I, lo, hi, rz)                                                                 \
    KILN_F2I_(prefix##_rd, F, I, lo, hi, rd) KILN_F2I_(prefix##_ru, F, I, lo, hi, ru)
KILN_F2I_FAMILY_(__float2uint, float, unsigned, 0, 4294967295.0, nearbyintf, truncf, floorf, ceilf)
KILN_F2I_FAMILY_(__float2ll, float, long long, INT64_MIN, INT64_MAX, nearbyintf, truncf, floorf, ceilf)
KILN_F2I_FAMILY_(__float2ull, float, unsigned long long, 0, UINT64_MAX, nearbyintf, truncf, floorf, ceilf)
KILN_F2I_FAMILY_(__double2uint, double, unsigned, 0, 4294967295.0, nearbyint, trunc, floor, ceil)
KILN_F2I_FAMILY_(__double2ll, double, long long, INT64_MIN, INT64_MAX, nearbyint, trunc, floor, ceil)
KILN_F2I_FAMILY_(__double2ull, double, unsigned long long, 0, UINT64_MAX, nearbyint, trunc, floor, ceil)
KILN_F2I_(__float2ull_rn, float, unsigned long long, 0, UINT64_MAX, nearbyintf)
KILN_F2I_(__double2uint_rn, double, unsigned, 0, 4294967295.0, nearbyint)
KILN_F2I_(__double2ull_rn, double, unsigned long long, 0, UINT64_MAX, nearbyint)
KILN_F2I_(__double2int_rd, double, int, INT32_MIN, INT32_MAX, floor)
KILN_F2I_(__double2int_ru, double, int, INT32_MIN, INT32_MAX, ceil)
#undef KILN_F2I_FAMILY_
#undef KILN_F2I_

// ---------------------------------------------------------------- special functions
// erfinv and erfcinv: M. Giles's single-precision approximation ("Approximating
// the erfinv function", GPU Computing Gems, 2011) as the start, then Newton
// steps on erf or erfc in double, which converge to the last bit.
static inline double kiln_erfinv_start(double w, double x) {
    double p;
    if (w < 6.25) {
        w -= 3.125;
        p = -3.6444120640178196996e-21;
        p = -1.685059138182016589e-19 + p * w;
        p = 1.2858480715256400167e-18 + p * w;
        p = 1.115787767802518096e-17 + p * w;
        p = -1.333171662854620906e-16 + p * w;
        p = 2.0972767875968561637e-17 + p * w;
        p = 6.6376381343583238325e-15 + p * w;
        p = -4.0545662729752068639e-14 + p * w;
        p = -8.1519341976054721522e-14 + p * w;
        p = 2.6335093153082322977e-12 + p * w;
        p = -1.2975133253453532498e-11 + p * w;
        p = -5.4154120542946279317e-11 + p * w;
        p = 1.051212273321532285e-09 + p * w;
        p = -4.1126339803469836976e-09 + p * w;
        p = -2.9070369957882005086e-08 + p * w;
        p = 4.2347877827932403518e-07 + p * w;
        p = -1.3654692000834678645e-06 + p * w;
        p = -1.3882523362786468719e-05 + p * w;
        p = 0.0001867342080340571352 + p * w;
        p = -0.00074070253416626697512 + p * w;
        p = -0.0060336708714301490533 + p * w;
        p = 0.24015818242558961693 + p * w;
        p = 1.6536545626831027356 + p * w;
    } else if (w < 16.0) {
        w = sqrt(w) - 3.25;
        p = 2.2137376921775787049e-09;
        p = 9.0756561938885390979e-08 + p * w;
        p = -2.7517406297064545428e-07 + p * w;
        p = 1.8239629214389227755e-08 + p * w;
        p = 1.5027403968909827627e-06 + p * w;
        p = -4.013867526981545969e-06 + p * w;
        p = 2.9234449089955446044e-06 + p * w;
        p = 1.2475304481671778723e-05 + p * w;
        p = -4.7318229009055733981e-05 + p * w;
        p = 6.8284851459573175448e-05 + p * w;
        p = 2.4031110387097893999e-05 + p * w;
        p = -0.0003550375203628474796 + p * w;
        p = 0.00095328937973738049703 + p * w;
        p = -0.0016882755560235047313 + p * w;
        p = 0.0024914420961078508066 + p * w;
        p = -0.0037512085075692412107 + p * w;
        p = 0.005370914553590063617 + p * w;
        p = 1.0052589676941592334 + p * w;
        p = 3.0838856104922207635 + p * w;
    } else {
        w = sqrt(w) - 5.0;
        p = -2.7109920616438573243e-11;
        p = -2.5556418169965252055e-10 + p * w;
        p = 1.5076572693500548083e-09 + p * w;
        p = -3.7894654401267369937e-09 + p * w;
        p = 7.6157012080783393804e-09 + p * w;
        p = -1.4960026627149240478e-08 + p * w;
        p = 2.9147953450901080826e-08 + p * w;
        p = -6.7711997758452339498e-08 + p * w;
        p = 2.2900482228026654717e-07 + p * w;
        p = -9.9298272942317002539e-07 + p * w;
        p = 4.5260625972231537039e-06 + p * w;
        p = -1.9681778105531670567e-05 + p * w;
        p = 7.5995277030017761139e-05 + p * w;
        p = -0.00021503011930044477347 + p * w;
        p = -0.00013871931833623122026 + p * w;
        p = 1.0103004648645343977 + p * w;
        p = 4.8499064014085844221 + p * w;
    }
    return p * x;
}
// Each is solved where it is well conditioned: erfinv on erf for |y| <=
// 1/2, erfcinv on erfc for y < 1/2; the other ranges map onto those
// exactly (1 - y and 2 - y are exact there).
static inline double kiln_erfinv_small(double y) { // |y| <= 1/2
    double x = kiln_erfinv_start(-log((1.0 - y) * (1.0 + y)), y);
    for (int i = 0; i < 2; i++) x -= (erf(x) - y) / (1.1283791670955126 * exp(-x * x));
    return x;
}
static inline double kiln_erfcinv_small(double y) { // 0 < y < 1/2
    double x = kiln_erfinv_start(-log(y * (2.0 - y)), 1.0 - y);
    for (int i = 0; i < 4; i++) {
        double d = -1.1283791670955126 * exp(-x * x);
        if (d == 0) break;
        x -= (erfc(x) - y) / d;
    }
    return x;
}
static inline double erfcinv(double y) {
    if (y != y || y < 0 || y > 2) return NAN;
    if (y == 0) return INFINITY;
    if (y == 2) return -INFINITY;
    if (y < 0.5) return kiln_erfcinv_small(y);
    if (y > 1.5) return -kiln_erfcinv_small(2.0 - y);
    return kiln_erfinv_small(1.0 - y);
}
static inline double erfinv(double y) {
    if (y != y || y < -1 || y > 1) return NAN;
    if (fabs(y) <= 0.5) return kiln_erfinv_small(y);
    return y > 0 ? erfcinv(1.0 - y) : -erfcinv(1.0 + y);
}
static inline float erfinvf(float y) { return (float)erfinv(y); }
static inline float erfcinvf(float y) { return (float)erfcinv(y); }
static inline double normcdfinv(double p) { return -1.4142135623730951 * erfcinv(2.0 * p); }
static inline float normcdfinvf(float p) { return (float)normcdfinv(p); }

// Modified Bessel functions of the first kind: their power series, whose
// terms are all positive (no cancellation), summed in long double so that
// the roundings of a few hundred terms stay below double's last bit.
static inline double cyl_bessel_i0(double x) {
    long double q = 0.25L * x * x, term = 1, sum = 1;
    for (int k = 1; k < 2000 && term > sum * 1e-21L; k++) {
        term *= q / ((long double)k * k);
        sum += term;
    }
    return (double)sum;
}
static inline double cyl_bessel_i1(double x) {
    long double q = 0.25L * x * x, term = 0.5L * x, sum = term;
    for (int k = 1; k < 2000 && fabsl(term) > fabsl(sum) * 1e-21L; k++) {
        term *= q / ((long double)k * (k + 1));
        sum += term;
    }
    return (double)sum;
}
static inline float cyl_bessel_i0f(float x) { return (float)cyl_bessel_i0(x); }
static inline float cyl_bessel_i1f(float x) { return (float)cyl_bessel_i1(x); }

// Norms, in long double so that squares neither overflow nor underflow.
static inline double norm3d(double a, double b, double c) {
    return (double)sqrtl((long double)a * a + (long double)b * b + (long double)c * c);
}
static inline double norm4d(double a, double b, double c, double d) {
    return (double)sqrtl((long double)a * a + (long double)b * b + (long double)c * c + (long double)d * d);
}
static inline double rnorm3d(double a, double b, double c) {
    return (double)(1.0L / (long double)norm3d(a, b, c));
}
static inline double rnorm4d(double a, double b, double c, double d) {
    return (double)(1.0L /
                    sqrtl((long double)a * a + (long double)b * b + (long double)c * c + (long double)d * d));
}
static inline double rhypot(double a, double b) {
    return (double)(1.0L / sqrtl((long double)a * a + (long double)b * b));
}
static inline double norm(int n, const double *v) {
    long double s = 0;
    for (int i = 0; i < n; i++) s += (long double)v[i] * v[i];
    return (double)sqrtl(s);
}
static inline double rnorm(int n, const double *v) { return (double)(1.0L / (long double)norm(n, v)); }
static inline float norm3df(float a, float b, float c) { return (float)norm3d(a, b, c); }
static inline float norm4df(float a, float b, float c, float d) { return (float)norm4d(a, b, c, d); }
static inline float rnorm3df(float a, float b, float c) { return (float)rnorm3d(a, b, c); }
static inline float rnorm4df(float a, float b, float c, float d) { return (float)rnorm4d(a, b, c, d); }
static inline float rhypotf(float a, float b) { return (float)rhypot(a, b); }
static inline float normf(int n, const float *v) {
    long double s = 0;
    for (int i = 0; i < n; i++) s += (long double)v[i] * v[i];
    return (float)sqrtl(s);
}
static inline float rnormf(int n, const float *v) {
    long double s = 0;
    for (int i = 0; i < n; i++) s += (long double)v[i] * v[i];
    return (float)(1.0L / sqrtl(s));
}

// ---------------------------------------------------------------- integer intrinsics
static inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long bytes = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)((bytes >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
static inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
    return s >= 32 ? lo : __funnelshift_l(lo, hi, s);
}
static inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
    return s >= 32 ? hi : __funnelshift_r(lo, hi, s);
}
static inline unsigned __sad(int x, int y, unsigned z) {
    return z + (unsigned)(x > y ? (long long)x - y : (long long)y - x);
}
static inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return z + (x > y ? x - y : y - x); }
static inline int __hadd(int x, int y) { return (int)(((long long)x + y) >> 1); }
static inline int __rhadd(int x, int y) { return (int)(((long long)x + y + 1) >> 1); }
static inline unsigned __uhadd(unsigned x, unsigned y) {
    return (unsigned)(((unsigned long long)x + y) >> 1);
}
static inline unsigned __urhadd(unsigned x, unsigned y) {
    return (unsigned)(((unsigned long long)x + y + 1) >> 1);
}
static inline int __dp4a(int a, int b, int c) {
    for (int i = 0; i < 4; i++) c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
    return c;
}
static inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
    for (int i = 0; i < 4; i++) c += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
    return c;
}
// SIMD within a word: two 16-bit or four 8-bit lanes, each on its own.
#define KILN_SIMD_(name, bits, expr)                                                                         \
    static inline unsigned name(unsigned a, unsigned b) {                                                    \
        unsigned r = 0, m = (1u << bits) - 1u;                                                               \
        for (int i = 0; i < 32; i += bits) {                                                                 \
            unsigned x = (a >> i) & m, y = (b >> i) & m;                                                     \
            r |= ((unsigned)(expr)&m) << i;                                                                  \
        }                                                                                                    \
        return r;                                                                                            \
    }
KILN_SIMD_(__vadd2, 16, x + y)
KILN_SIMD_(__vadd4, 8, x + y)
KILN_SIMD_(__vsub2, 16, x - y)
KILN_SIMD_(__vsub4, 8, x - y)
KILN_SIMD_(__vabsdiffu2, 16, x > y ? x - y : y - x)
KILN_SIMD_(__vabsdiffu4, 8, x > y ? x - y : y - x)
KILN_SIMD_(__vavgu2, 16, (x + y + 1) >> 1)
KILN_SIMD_(__vavgu4, 8, (x + y + 1) >> 1)
KILN_SIMD_(__vmaxu2, 16, x > y ? x : y)
KILN_SIMD_(__vmaxu4, 8, x > y ? x : y)
KILN_SIMD_(__vminu2, 16, x < y ? x : y)
KILN_SIMD_(__vminu4, 8, x < y ? x : y)
KILN_SIMD_(__vcmpeq2, 16, x == y ? m : 0)
KILN_SIMD_(__vcmpeq4, 8, x == y ? m : 0)
KILN_SIMD_(__vcmpgtu2, 16, x > y ? m : 0)
KILN_SIMD_(__vcmpgtu4, 8, x > y ? m : 0)
KILN_SIMD_(__vseteq2, 16, x == y)
KILN_SIMD_(__vseteq4, 8, x == y)
#undef KILN_SIMD_
