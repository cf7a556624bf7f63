// kiln_complex.cuh: the complex types kernels use on both backends
// (kiln_complex64 = two floats, kiln_complex128 = two doubles, laid out like
// C99 `float _Complex` and NumPy's complex64/complex128). Plain structs with
// operators, so that NVRTC needs no headers and the CPU build no <complex>.
// Math functions (sqrt/exp/... on reals) come from the backend's prelude.

#ifndef KILN_HD
#define KILN_HD
#endif

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
        friend KILN_HD T operator/(T a, T b) {                                                 \
            /* Smith's algorithm: no overflow for large |b|. */                                 \
            R ar = b.x < 0 ? -b.x : b.x, ai = b.y < 0 ? -b.y : b.y;                           \
            if (ar >= ai) { R r = b.y / b.x, d = b.x + b.y * r;                                 \
                return T((a.x + a.y * r) / d, (a.y - a.x * r) / d); }                           \
            R r = b.x / b.y, d = b.y + b.x * r;                                                 \
            return T((a.x * r + a.y) / d, (a.y * r - a.x) / d);                                 \
        }                                                                                      \
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

static inline KILN_HD float abs(kiln_complex64 a) { return hypotf(a.x, a.y); }
static inline KILN_HD double abs(kiln_complex128 a) { return hypot(a.x, a.y); }
static inline KILN_HD float arg(kiln_complex64 a) { return atan2f(a.y, a.x); }
static inline KILN_HD double arg(kiln_complex128 a) { return atan2(a.y, a.x); }
static inline KILN_HD kiln_complex64 exp(kiln_complex64 a) { float e = expf(a.x); return kiln_complex64(e * cosf(a.y), e * sinf(a.y)); }
static inline KILN_HD kiln_complex128 exp(kiln_complex128 a) { double e = exp(a.x); return kiln_complex128(e * cos(a.y), e * sin(a.y)); }
static inline KILN_HD kiln_complex64 log(kiln_complex64 a) { return kiln_complex64(logf(abs(a)), arg(a)); }
static inline KILN_HD kiln_complex128 log(kiln_complex128 a) { return kiln_complex128(log(abs(a)), arg(a)); }
static inline KILN_HD kiln_complex64 sqrt(kiln_complex64 a) {
    float m = abs(a), r = sqrtf(0.5f * (m + a.x)), i = sqrtf(0.5f * (m - a.x));
    return kiln_complex64(r, a.y < 0 ? -i : i);
}
static inline KILN_HD kiln_complex128 sqrt(kiln_complex128 a) {
    double m = abs(a), r = sqrt(0.5 * (m + a.x)), i = sqrt(0.5 * (m - a.x));
    return kiln_complex128(r, a.y < 0 ? -i : i);
}
static inline KILN_HD kiln_complex64 make_kiln_complex64(float re, float im) { return kiln_complex64(re, im); }
static inline KILN_HD kiln_complex128 make_kiln_complex128(double re, double im) { return kiln_complex128(re, im); }
