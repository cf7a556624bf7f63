/* native_cpu_ufunc.c: the hand-written C loops kiln_vectorize is measured
 * against on the CPU: vectorAdd as a plain OpenMP loop, and
 * Black-Scholes and haversine as OpenMP loops with vector math.
 *
 * "With vector math" the way a careful C programmer gets it without
 * -ffast-math: glibc's libmvec has SIMD variants of exp, log, pow, sin, cos
 * and atan2 (≤ 4 ULP), but <math.h> only marks them `simd` under
 * __FAST_MATH__, so we declare the attribute ourselves and link -lmvec.
 * sin and cos go through asm-label aliases so that GCC does not fuse them
 * into a scalar sincos before vectorising. Built -O3 -march=native -fopenmp,
 * IEEE semantics kept (no -ffast-math). */
#include <math.h>
#include <stdint.h>

#include "native_api.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
#define NATIVE_SIMD __attribute__((simd("notinbranch"), nothrow, const))
NATIVE_SIMD double exp(double);
NATIVE_SIMD double log(double);
NATIVE_SIMD double pow(double, double);
NATIVE_SIMD double atan2(double, double);
NATIVE_SIMD double native_sin(double) __asm__("sin");
NATIVE_SIMD double native_cos(double) __asm__("cos");
#else
#define native_sin sin
#define native_cos cos
#endif

void kiln_native_cpu_vector_add(float *restrict c, const float *restrict a, const float *restrict b,
                                int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

static inline double cnd(double d) {
    const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937, A4 = -1.821255978, A5 = 1.330274429;
    const double RSQRT2PI = 0.39894228040143267793994605993438;
    double K = 1.0 / (1.0 + 0.2316419 * fabs(d));
    double r = RSQRT2PI * exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
    return d > 0 ? 1.0 - r : r;
}

void kiln_native_cpu_black_scholes(double *restrict call, double *restrict put, const double *restrict S,
                                   const double *restrict X, const double *restrict T, double R, double V,
                                   int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double sqrtT = sqrt(T[i]);
        double d1 = (log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (V * sqrtT);
        double d2 = d1 - V * sqrtT;
        double c1 = cnd(d1), c2 = cnd(d2);
        double e = exp((-1. * R) * T[i]);
        call[i] = S[i] * c1 - X[i] * e * c2;
        put[i] = X[i] * e * (1.0 - c2) - S[i] * (1.0 - c1);
    }
}

void kiln_native_cpu_haversine(double *restrict out, const double *restrict lat1, const double *restrict lon1,
                               double lat2, double lon2, double s, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double a = pow(native_sin(0.008726645 * (lat2 - lat1[i])), 2) +
                   native_cos(0.01745329 * lat1[i]) * native_cos(0.01745329 * lat2) *
                       pow(native_sin(0.008726645 * (lon2 - lon1[i])), 2);
        out[i] = atan2(a, 1 - a) * s;
    }
}
