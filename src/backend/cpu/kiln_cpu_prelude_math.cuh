// kiln_cpu_prelude_math.cuh: integer min/max and the math functions CUDA has
// and libm lacks, for CUDA C on the CPU (the rest of the Math API is in
// kiln_cpu_math.cuh). Follows kiln_cpu_prelude_atomics.cuh.

// ---------------------------------------------------------------- integer min/max
#define KILN_MINMAX_(T)                                                                                      \
    static inline T min(T a, T b) { return b < a ? b : a; }                                                  \
    static inline T max(T a, T b) { return a < b ? b : a; }
KILN_MINMAX_(int)
KILN_MINMAX_(unsigned int)
KILN_MINMAX_(long)
KILN_MINMAX_(unsigned long)
KILN_MINMAX_(long long)
KILN_MINMAX_(unsigned long long)
#undef KILN_MINMAX_
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
// Mixed operand types take the usual arithmetic conversions, as in CUDA's headers.
template <typename A, typename B> static inline auto min(A a, B b) -> decltype(a + b) {
    typedef decltype(a + b) C;
    return min((C)a, (C)b);
}
template <typename A, typename B> static inline auto max(A a, B b) -> decltype(a + b) {
    typedef decltype(a + b) C;
    return max((C)a, (C)b);
}
static inline unsigned umin(unsigned a, unsigned b) { return min(a, b); }
static inline unsigned umax(unsigned a, unsigned b) { return max(a, b); }
static inline long long llmin(long long a, long long b) { return min(a, b); }
static inline long long llmax(long long a, long long b) { return max(a, b); }
static inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return min(a, b); }
static inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return max(a, b); }

// ---------------------------------------------------------------- math CUDA has and libm lacks
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// One rounding, not two: the reciprocal in a wider type.
static inline double rsqrt(double x) { return (double)(1.0L / sqrtl(x)); }
static inline float rcbrtf(float x) { return (float)(1.0 / cbrt((double)x)); }
static inline double rcbrt(double x) { return (double)(1.0L / cbrtl(x)); }
// x*pi loses x's low bits for large x: reduce to [-1, 1] first (exactly:
// x - 2 round(x/2) is representable), then multiply in long double.
#define KILN_PI_L 3.14159265358979323846264338327950288L
static inline long double kiln_pi_reduce(long double x) { return x - 2 * nearbyintl(x / 2); }
static inline float sinpif(float x) { return (float)sinl(KILN_PI_L * kiln_pi_reduce(x)); }
static inline double sinpi(double x) { return (double)sinl(KILN_PI_L * kiln_pi_reduce(x)); }
static inline float cospif(float x) { return (float)cosl(KILN_PI_L * kiln_pi_reduce(x)); }
static inline double cospi(double x) { return (double)cosl(KILN_PI_L * kiln_pi_reduce(x)); }
static inline void sincospif(float x, float *s, float *c) {
    *s = sinpif(x);
    *c = cospif(x);
}
static inline void sincospi(double x, double *s, double *c) {
    *s = sinpi(x);
    *c = cospi(x);
}
// In long double: erfc's steep tail would turn the rounding of x/sqrt(2)
// into tens of ulp.
static inline double normcdf(double x) {
    return (double)(0.5L * erfcl(-(long double)x * 0.70710678118654752440L));
}
static inline float normcdff(float x) { return (float)normcdf(x); }
static inline double erfcx(double x) {
    // exp(x^2) erfc(x) overflows for large x; the asymptotic series does not
    // (its terms fall by (2n-1)/(2x^2): ten reach double precision at 25).
    if (x < 25.0) {
        double hi = x * x, lo = fma(x, x, -hi); // x^2 exactly: exp's argument keeps every bit
        return exp(hi) * (1.0 + lo) * erfc(x);
    }
    double q = 1.0 / (2.0 * x * x), term = 1.0, sum = 1.0;
    for (int n = 1; n <= 10; n++) sum += (term *= -(2.0 * n - 1.0) * q);
    return sum / (x * 1.7724538509055160273);
}
static inline float erfcxf(float x) { return (float)erfcx(x); }
static inline float fdividef(float a, float b) { return a / b; }
static inline float __fdividef(float a, float b) { return a / b; }
// glibc (with _GNU_SOURCE, which g++ always defines) already exports these
// names with CUDA's meaning: exp10, sincos and the __expf family.
#ifndef __GLIBC__
static inline float exp10f(float x) { return powf(10.0f, x); }
static inline double exp10(double x) { return pow(10.0, x); }
static inline void sincosf(float x, float *s, float *c) {
    *s = sinf(x);
    *c = cosf(x);
}
static inline void sincos(double x, double *s, double *c) {
    *s = sin(x);
    *c = cos(x);
}
static inline float __expf(float x) { return expf(x); }
static inline float __exp10f(float x) { return exp10f(x); }
static inline float __logf(float x) { return logf(x); }
static inline float __log2f(float x) { return log2f(x); }
static inline float __log10f(float x) { return log10f(x); }
static inline float __sinf(float x) { return sinf(x); }
static inline float __cosf(float x) { return cosf(x); }
static inline float __tanf(float x) { return tanf(x); }
static inline void __sincosf(float x, float *s, float *c) { sincosf(x, s, c); }
static inline float __powf(float x, float y) { return powf(x, y); }
#endif
static inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }
static inline int __double2int_rz(double x) { return (int)x; }
static inline long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned x) { return (float)x; }
static inline float __ll2float_rn(long long x) { return (float)x; }
static inline double __int2double_rn(int x) { return (double)x; }
static inline float __double2float_rn(double x) { return (float)x; }
#define KILN_BITCAST_(name, From, To)                                                                        \
    static inline To name(From x) {                                                                          \
        To r;                                                                                                \
        memcpy(&r, &x, sizeof r);                                                                            \
        return r;                                                                                            \
    }
KILN_BITCAST_(__int_as_float, int, float)
KILN_BITCAST_(__float_as_int, float, int)
KILN_BITCAST_(__uint_as_float, unsigned, float)
KILN_BITCAST_(__float_as_uint, float, unsigned)
KILN_BITCAST_(__double_as_longlong, double, long long)
KILN_BITCAST_(__longlong_as_double, long long, double)
#undef KILN_BITCAST_
static inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
static inline int __double2loint(double x) { return (int)__double_as_longlong(x); }
static inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
static inline int __mul24(int a, int b) { return a * b; }
static inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    s &= 31u;
    return s ? (hi << s) | (lo >> (32u - s)) : hi;
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    s &= 31u;
    return s ? (lo >> s) | (hi << (32u - s)) : lo;
}
template <typename T> static inline T __ldg(const T *p) { return *p; }
template <typename T> static inline T __ldcg(const T *p) { return *p; }
template <typename T> static inline T __ldcs(const T *p) { return *p; }
template <typename T> static inline void __stcg(T *p, T v) { *p = v; }
template <typename T> static inline void __stcs(T *p, T v) { *p = v; }
static inline long long clock64() {
#if defined(__x86_64__)
    return (long long)__builtin_ia32_rdtsc();
#else
    return (long long)__builtin_readcyclecounter();
#endif
}
