// kiln_complex.cuh: the complex types kernels use on both backends
// (kiln_complex64 = two floats, kiln_complex128 = two doubles, laid out like
// C99 `float _Complex` and NumPy's complex64/complex128). Plain structs with
// operators, so that NVRTC needs no headers and the CPU build no <complex>.
// Math functions (sqrt/exp/... on reals) come from the backend's prelude.

#ifndef KILN_HD
#define KILN_HD
#endif
// Other headers name the types through these (and test them with #ifdef):
// both backends leave this header out of modules whose text names
// nothing complex (src/backend/common/prelude_needs.c), and kiln's own
// generated code must not count as naming it.
#define KILN_CX64 kiln_complex64
#define KILN_CX128 kiln_complex128

// Annex G division, defined below the types.
template <typename T> static inline KILN_HD T kiln_cx_div(T a, T b);

#define KILN_COMPLEX_TYPE_(T, R)                                                               \
    struct __attribute__((aligned(2 * sizeof(R)))) T {                                         \
        R x, y;                                                                                \
        T() = default;                                                                         \
        KILN_HD constexpr T(R re, R im = 0) : x(re), y(im) {}                                  \
        KILN_HD constexpr R real() const { return x; }                                         \
        KILN_HD constexpr R imag() const { return y; }                                         \
        KILN_HD T &operator+=(T o) { x += o.x; y += o.y; return *this; }                        \
        KILN_HD T &operator-=(T o) { x -= o.x; y -= o.y; return *this; }                        \
        KILN_HD T &operator*=(T o) { R r = x * o.x - y * o.y; y = x * o.y + y * o.x; x = r; return *this; } \
        KILN_HD T &operator/=(T o) { *this = *this / o; return *this; }                         \
        friend KILN_HD constexpr T operator+(T a, T b) { return T(a.x + b.x, a.y + b.y); }     \
        friend KILN_HD constexpr T operator-(T a, T b) { return T(a.x - b.x, a.y - b.y); }     \
        friend KILN_HD constexpr T operator-(T a) { return T(-a.x, -a.y); }                   \
        friend KILN_HD constexpr T operator*(T a, T b) { return T(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); } \
        friend KILN_HD constexpr T operator*(T a, R s) { return T(a.x * s, a.y * s); }         \
        friend KILN_HD constexpr T operator*(R s, T a) { return T(a.x * s, a.y * s); }         \
        friend KILN_HD constexpr T operator+(T a, R s) { return T(a.x + s, a.y); }             \
        friend KILN_HD constexpr T operator+(R s, T a) { return T(a.x + s, a.y); }             \
        friend KILN_HD constexpr T operator-(T a, R s) { return T(a.x - s, a.y); }             \
        friend KILN_HD constexpr T operator-(R s, T a) { return T(s - a.x, -a.y); }            \
        friend KILN_HD T operator/(T a, T b) { return kiln_cx_div(a, b); }                      \
        friend KILN_HD constexpr T operator/(T a, R s) { return T(a.x / s, a.y / s); }         \
        friend KILN_HD constexpr bool operator==(T a, T b) { return a.x == b.x && a.y == b.y; } \
        friend KILN_HD constexpr bool operator!=(T a, T b) { return !(a == b); }              \
    };                                                                                         \
    static inline KILN_HD constexpr R real(T a) { return a.x; }                               \
    static inline KILN_HD constexpr R imag(T a) { return a.y; }                               \
    static inline KILN_HD constexpr T conj(T a) { return T(a.x, -a.y); }                      \
    static inline KILN_HD constexpr R norm(T a) { return a.x * a.x + a.y * a.y; }
KILN_COMPLEX_TYPE_(kiln_complex64, float)
KILN_COMPLEX_TYPE_(kiln_complex128, double)
#undef KILN_COMPLEX_TYPE_

// ---------------------------------------------------------------- functions
// The same names on both backends, for kiln_complex64 and kiln_complex128:
//   real imag conj norm abs arg proj polar exp log log10 sqrt pow sin cos
//   tan sinh cosh tanh, and the operators (+ - * / with complex and real).
// Division, sqrt and exp follow C99 Annex G at the edges (infinities, NaNs,
// signed zeros), as glibc's <complex.h> does: sqrt(-2 - 0i) = 0 - 1.414i,
// (1 + 1i) / 0 = inf + inf i, sqrt(-4 - 1e-300i) keeps its tiny real part.
// Multiplication is the plain formula (as cuComplex's cuCmulf and GCC's
// -fcx-limited-range): an infinite operand may give NaN parts where Annex G
// recovers an infinity; it keeps z * z + c as fast as hand-written code.
template <typename R> struct kiln_cx_of;
template <> struct kiln_cx_of<float> { typedef kiln_complex64 type; };
template <> struct kiln_cx_of<double> { typedef kiln_complex128 type; };

// Division as GCC's libgcc __divdc3 does it (what <complex.h> code on the
// host runs): Smith's method with scaling against overflow and underflow,
// then C99 Annex G's recovery of infinities and zeros that came out NaN,
// so signed zeros and edge results match the host bit for bit in the edge
// cases and within rounding elsewhere.
template <typename R> struct kiln_cx_lim;
template <> struct kiln_cx_lim<float> {
    static KILN_HD float max() { return 3.40282347e+38F; }
    static KILN_HD float min() { return 1.17549435e-38F; }
    static KILN_HD float eps() { return 1.19209290e-07F; }
};
template <> struct kiln_cx_lim<double> {
    static KILN_HD double max() { return 1.7976931348623157e+308; }
    static KILN_HD double min() { return 2.2250738585072014e-308; }
    static KILN_HD double eps() { return 2.2204460492503131e-16; }
};
template <typename T> static inline KILN_HD T kiln_cx_div(T z, T w) {
    typedef decltype(z.x) R;
    typedef kiln_cx_lim<R> L;
    const R rbig = L::max() / 2, rmin = L::min(), rmin2 = L::eps(), rminscal = 1 / L::eps(),
            rmax2 = rbig * rmin2;
    R a = z.x, b = z.y, c = w.x, d = w.y, x, y, ratio, denom;
    if (fabs(c) < fabs(d)) {
        if (fabs(d) >= rbig) { a /= 2; b /= 2; c /= 2; d /= 2; }
        if (fabs(d) < rmin2 || (((fabs(a) < rmin) && (fabs(b) < rmax2) && (fabs(d) < rmax2)) ||
                                ((fabs(b) < rmin) && (fabs(a) < rmax2) && (fabs(d) < rmax2)))) {
            a *= rminscal; b *= rminscal; c *= rminscal; d *= rminscal;
        }
        ratio = c / d;
        denom = (c * ratio) + d;
        if (fabs(ratio) > rmin) {
            x = ((a * ratio) + b) / denom;
            y = ((b * ratio) - a) / denom;
        } else {
            x = ((c * (a / d)) + b) / denom;
            y = ((c * (b / d)) - a) / denom;
        }
    } else {
        if (fabs(c) >= rbig) { a /= 2; b /= 2; c /= 2; d /= 2; }
        if (fabs(c) < rmin2 || (((fabs(a) < rmin) && (fabs(b) < rmax2) && (fabs(c) < rmax2)) ||
                                ((fabs(b) < rmin) && (fabs(a) < rmax2) && (fabs(c) < rmax2)))) {
            a *= rminscal; b *= rminscal; c *= rminscal; d *= rminscal;
        }
        ratio = d / c;
        denom = (d * ratio) + c;
        if (fabs(ratio) > rmin) {
            x = ((b * ratio) + a) / denom;
            y = (b - (a * ratio)) / denom;
        } else {
            x = (a + (d * (b / c))) / denom;
            y = (b - (d * (a / c))) / denom;
        }
    }
    if (isnan(x) && isnan(y)) {
        if (c == (R)0 && d == (R)0 && (!isnan(a) || !isnan(b))) {
            x = copysign((R)INFINITY, c) * a;
            y = copysign((R)INFINITY, c) * b;
        } else if ((isinf(a) || isinf(b)) && isfinite(c) && isfinite(d)) {
            a = copysign(isinf(a) ? (R)1 : (R)0, a);
            b = copysign(isinf(b) ? (R)1 : (R)0, b);
            x = (R)INFINITY * (a * c + b * d);
            y = (R)INFINITY * (b * c - a * d);
        } else if ((isinf(c) || isinf(d)) && isfinite(a) && isfinite(b)) {
            c = copysign(isinf(c) ? (R)1 : (R)0, c);
            d = copysign(isinf(d) ? (R)1 : (R)0, d);
            x = (R)0 * (a * c + b * d);
            y = (R)0 * (b * c - a * d);
        }
    }
    return T(x, y);
}

// Kahan's square root: exact signs of zero, no cancellation (the small part
// is |y| / 2t, never a difference), no overflow for huge parts.
template <typename T> static inline KILN_HD T kiln_cx_sqrt(T z) {
    typedef decltype(z.x) R;
    R x = z.x, y = z.y;
    if (x == (R)0 && y == (R)0) return T((R)0, y);
    if (isinf(y)) return T((R)INFINITY, y);
    if (isnan(x)) return T(x, x);
    if (isinf(x)) {
        if (x > (R)0) return T(x, isnan(y) ? y : copysign((R)0, y));
        return T(isnan(y) ? fabs(y - y) : (R)0, copysign((R)INFINITY, y));
    }
    if (isnan(y)) return T(y, y);
    R ax = fabs(x), ay = fabs(y), scale = 1;
    const R big = (R)(sizeof(R) == 4 ? 1e37 : 1e307);
    if (ax > big || ay > big) { // |x| + hypot would overflow: sqrt(z/4) * 2
        ax *= (R)0.25;
        ay *= (R)0.25;
        scale = 2;
    } else if (ax < (R)1 && ay < (R)1) { // keep subnormal parts exact: sqrt(z*2^(2k)) / 2^k
        const int k = sizeof(R) == 4 ? 24 : 54;
        ax = scalbn(ax, 2 * k);
        ay = scalbn(ay, 2 * k);
        scale = scalbn((R)1, -k);
    }
    R t = sqrt((ax + hypot(ax, ay)) * (R)0.5);
    R big_part = t * scale, small_part = ay / (2 * t) * scale;
    return x >= (R)0 ? T(big_part, copysign(small_part, y)) : T(small_part, copysign(big_part, y));
}

template <typename T> static inline KILN_HD T kiln_cx_exp(T z) {
    typedef decltype(z.x) R;
    R x = z.x, y = z.y;
    if (y == (R)0) return T(exp(x), y); // exp(x + 0i) = exp(x) + 0i exactly (NaN + 0i too)
    if (isinf(x) && !isfinite(y)) {
        if (x < (R)0) return T((R)0, (R)0);
        return T(x, y - y); // +inf + NaN i
    }
    R e = exp(x);
    return T(e * cos(y), e * sin(y));
}

template <typename T> static inline KILN_HD T kiln_cx_log(T z) {
    typedef decltype(z.x) R;
    return T(log(hypot(z.x, z.y)), atan2(z.y, z.x));
}

#define KILN_COMPLEX_FUNCTIONS_(T, R)                                                           \
    static inline KILN_HD R abs(T a) { return hypot(a.x, a.y); }                               \
    static inline KILN_HD R arg(T a) { return atan2(a.y, a.x); }                               \
    static inline KILN_HD T proj(T a) {                                                        \
        return isinf(a.x) || isinf(a.y) ? T((R)INFINITY, copysign((R)0, a.y)) : a;             \
    }                                                                                          \
    static inline KILN_HD T polar(R r, R theta = 0) { return T(r * cos(theta), r * sin(theta)); } \
    static inline KILN_HD T sqrt(T a) { return kiln_cx_sqrt(a); }                              \
    static inline KILN_HD T exp(T a) { return kiln_cx_exp(a); }                                \
    static inline KILN_HD T log(T a) { return kiln_cx_log(a); }                                \
    static inline KILN_HD T log10(T a) { return kiln_cx_log(a) * (R)0.43429448190325182765; }  \
    static inline KILN_HD T pow(T a, T b) {                                                    \
        return a.x == (R)0 && a.y == (R)0 && b.y == (R)0 && b.x > (R)0 ? T((R)0, (R)0)           \
                                                                      : kiln_cx_exp(b * kiln_cx_log(a)); \
    }                                                                                          \
    static inline KILN_HD T pow(T a, R b) { return pow(a, T(b, (R)0)); }                      \
    static inline KILN_HD T pow(R a, T b) { return pow(T(a, (R)0), b); }                      \
    static inline KILN_HD T sinh(T a) { return T(sinh(a.x) * cos(a.y), cosh(a.x) * sin(a.y)); } \
    static inline KILN_HD T cosh(T a) { return T(cosh(a.x) * cos(a.y), sinh(a.x) * sin(a.y)); } \
    static inline KILN_HD T sin(T a) { return T(sin(a.x) * cosh(a.y), cos(a.x) * sinh(a.y)); } \
    static inline KILN_HD T cos(T a) { return T(cos(a.x) * cosh(a.y), -(sin(a.x) * sinh(a.y))); } \
    static inline KILN_HD T tanh(T a) { return sinh(a) / cosh(a); }                           \
    static inline KILN_HD T tan(T a) { return sin(a) / cos(a); }
KILN_COMPLEX_FUNCTIONS_(kiln_complex64, float)
KILN_COMPLEX_FUNCTIONS_(kiln_complex128, double)
#undef KILN_COMPLEX_FUNCTIONS_
static inline KILN_HD kiln_complex64 make_kiln_complex64(float re, float im) { return kiln_complex64(re, im); }
static inline KILN_HD kiln_complex128 make_kiln_complex128(double re, double im) { return kiln_complex128(re, im); }

// ---------------------------------------------------------------- cuComplex names
// CUDA's <cuComplex.h> API over the same types (arithmetic here is Annex G's,
// stricter than cuComplex's at the edges). CU_COMPLEX_H_ is defined so that
// a kernel's own `#include <cuComplex.h>` adds nothing that would clash.
#ifndef CU_COMPLEX_H_
#define CU_COMPLEX_H_
typedef kiln_complex64 cuFloatComplex;
typedef kiln_complex128 cuDoubleComplex;
typedef kiln_complex64 cuComplex;
static inline KILN_HD float cuCrealf(cuFloatComplex a) { return a.x; }
static inline KILN_HD float cuCimagf(cuFloatComplex a) { return a.y; }
static inline KILN_HD cuFloatComplex make_cuFloatComplex(float r, float i) { return cuFloatComplex(r, i); }
static inline KILN_HD cuFloatComplex cuConjf(cuFloatComplex a) { return conj(a); }
static inline KILN_HD cuFloatComplex cuCaddf(cuFloatComplex a, cuFloatComplex b) { return a + b; }
static inline KILN_HD cuFloatComplex cuCsubf(cuFloatComplex a, cuFloatComplex b) { return a - b; }
static inline KILN_HD cuFloatComplex cuCmulf(cuFloatComplex a, cuFloatComplex b) { return a * b; }
static inline KILN_HD cuFloatComplex cuCdivf(cuFloatComplex a, cuFloatComplex b) { return a / b; }
static inline KILN_HD float cuCabsf(cuFloatComplex a) { return abs(a); }
static inline KILN_HD double cuCreal(cuDoubleComplex a) { return a.x; }
static inline KILN_HD double cuCimag(cuDoubleComplex a) { return a.y; }
static inline KILN_HD cuDoubleComplex make_cuDoubleComplex(double r, double i) { return cuDoubleComplex(r, i); }
static inline KILN_HD cuDoubleComplex cuConj(cuDoubleComplex a) { return conj(a); }
static inline KILN_HD cuDoubleComplex cuCadd(cuDoubleComplex a, cuDoubleComplex b) { return a + b; }
static inline KILN_HD cuDoubleComplex cuCsub(cuDoubleComplex a, cuDoubleComplex b) { return a - b; }
static inline KILN_HD cuDoubleComplex cuCmul(cuDoubleComplex a, cuDoubleComplex b) { return a * b; }
static inline KILN_HD cuDoubleComplex cuCdiv(cuDoubleComplex a, cuDoubleComplex b) { return a / b; }
static inline KILN_HD double cuCabs(cuDoubleComplex a) { return abs(a); }
static inline KILN_HD cuComplex make_cuComplex(float r, float i) { return cuComplex(r, i); }
static inline KILN_HD cuDoubleComplex cuComplexFloatToDouble(cuFloatComplex a) { return cuDoubleComplex(a.x, a.y); }
static inline KILN_HD cuFloatComplex cuComplexDoubleToFloat(cuDoubleComplex a) { return cuFloatComplex((float)a.x, (float)a.y); }
static inline KILN_HD cuFloatComplex cuCfmaf(cuFloatComplex x, cuFloatComplex y, cuFloatComplex d) { return x * y + d; }
static inline KILN_HD cuDoubleComplex cuCfma(cuDoubleComplex x, cuDoubleComplex y, cuDoubleComplex d) { return x * y + d; }
#endif
