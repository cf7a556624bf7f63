/* test_math_api.c: the CUDA Math API on both backends, generated from one
 * table: per function a CUDA C expression of `a` (and `b`), a long double
 * reference, a domain, and the error CUDA's Math API reference documents
 * for it (in ulp, or an absolute bound where the documentation gives one,
 * as for the fast-math intrinsics). One kernel per precision evaluates
 * every row on fresh random inputs; the module must compile, link, load
 * and land within the bound for every row. Rounding-mode forms (_rz, _ru,
 * _rd) must also round the documented way. Integer and SIMD intrinsics
 * are compared with exact C references. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

enum { ROUND_ANY = 0, ROUND_Z, ROUND_U, ROUND_D };

typedef struct math_row {
    const char *expr; /* CUDA C, of a and b */
    long double (*ref)(long double a, long double b);
    double a_lo, a_hi, b_lo, b_hi;
    double ulp;     /* documented maximum error in ulp */
    double abs_err; /* or an absolute bound (0: none) */
    int rounding;   /* ROUND_*: the direction a rounding-mode form must take */
} math_row;

/* ---------------------------------------------------------------- references */
static long double bisect(long double (*f)(long double), long double y, long double lo, long double hi,
                          int rising) {
    for (int i = 0; i < 200; i++) {
        long double mid = 0.5L * (lo + hi);
        if ((f(mid) < y) == rising)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5L * (lo + hi);
}
static long double lref_erfinv(long double y) { return bisect(erfl, y, -7, 7, 1); }
static long double lref_erfcinv(long double y) { return bisect(erfcl, y, -7, 40, 0); }
static long double lref_i0(long double x) {
    long double q = x * x / 4, t = 1, s = 1;
    for (int k = 1; k < 3000 && t > s * 1e-22L; k++) s += (t *= q / ((long double)k * k));
    return s;
}
static long double lref_i1(long double x) {
    long double q = x * x / 4, t = x / 2, s = t;
    for (int k = 1; k < 3000 && fabsl(t) > fabsl(s) * 1e-22L; k++) s += (t *= q / ((long double)k * (k + 1)));
    return s;
}
static long double lref_sinpi(long double x) {
    long double r = x - 2 * nearbyintl(x / 2);
    return sinl(3.14159265358979323846264338327950288L * r);
}
static long double lref_cospi(long double x) {
    long double r = x - 2 * nearbyintl(x / 2);
    return cosl(3.14159265358979323846264338327950288L * r);
}

#define PI_L 3.14159265358979323846264338327950288L
/* X(name, expr, reference, a_lo, a_hi, b_lo, b_hi, ulp, abs, rounding) */
#define FLOAT_ROWS(X)                                                                                        \
    X(sinf, "sinf(a)", sinl(a), -100, 100, 0, 0, 2, 0, 0)                                                    \
    X(cosf, "cosf(a)", cosl(a), -100, 100, 0, 0, 2, 0, 0)                                                    \
    X(tanf, "tanf(a)", tanl(a), -1.5, 1.5, 0, 0, 4, 0, 0)                                                    \
    X(sinpif, "sinpif(a)", lref_sinpi(a), -50, 50, 0, 0, 2, 1e-7, 0)                                         \
    X(cospif, "cospif(a)", lref_cospi(a), -50, 50, 0, 0, 2, 1e-7, 0)                                         \
    X(expf, "expf(a)", expl(a), -80, 80, 0, 0, 2, 0, 0)                                                      \
    X(exp2f, "exp2f(a)", exp2l(a), -120, 120, 0, 0, 2, 0, 0)                                                 \
    X(exp10f, "exp10f(a)", powl(10, a), -30, 30, 0, 0, 2, 0, 0)                                              \
    /* CUDA documents 1 ulp; CUDA 13's expm1f measured 1.02 on an H100 */                                    \
    X(expm1f, "expm1f(a)", expm1l(a), -10, 10, 0, 0, 1.1, 0, 0)                                              \
    X(logf, "logf(a)", logl(a), 1e-3, 1e6, 0, 0, 1, 0, 0)                                                    \
    X(log2f, "log2f(a)", log2l(a), 1e-3, 1e6, 0, 0, 1, 0, 0)                                                 \
    X(log10f, "log10f(a)", log10l(a), 1e-3, 1e6, 0, 0, 2, 0, 0)                                              \
    X(log1pf, "log1pf(a)", log1pl(a), -0.9, 100, 0, 0, 1, 0, 0)                                              \
    X(sinhf, "sinhf(a)", sinhl(a), -20, 20, 0, 0, 3, 0, 0)                                                   \
    X(coshf, "coshf(a)", coshl(a), -20, 20, 0, 0, 2, 0, 0)                                                   \
    X(tanhf, "tanhf(a)", tanhl(a), -10, 10, 0, 0, 2, 0, 0)                                                   \
    X(asinf, "asinf(a)", asinl(a), -1, 1, 0, 0, 2, 0, 0)                                                     \
    X(acosf, "acosf(a)", acosl(a), -1, 1, 0, 0, 2, 0, 0)                                                     \
    X(atanf, "atanf(a)", atanl(a), -100, 100, 0, 0, 2, 0, 0)                                                 \
    X(asinhf, "asinhf(a)", asinhl(a), -100, 100, 0, 0, 3, 0, 0)                                              \
    X(acoshf, "acoshf(a)", acoshl(a), 1, 100, 0, 0, 4, 0, 0)                                                 \
    X(atanhf, "atanhf(a)", atanhl(a), -0.99, 0.99, 0, 0, 3, 0, 0)                                            \
    X(atan2f, "atan2f(a, b)", atan2l(a, b), -10, 10, -10, 10, 3, 0, 0)                                       \
    X(powf, "powf(a, b)", powl(a, b), 0.1, 10, -8, 8, 4, 0, 0)                                               \
    X(hypotf, "hypotf(a, b)", hypotl(a, b), -1e3, 1e3, -1e3, 1e3, 3, 0, 0)                                   \
    X(rhypotf, "rhypotf(a, b)", 1 / hypotl(a, b), 1, 1e3, 1, 1e3, 2, 0, 0)                                   \
    X(sqrtf, "sqrtf(a)", sqrtl(a), 0, 1e6, 0, 0, 0.5, 0, 0)                                                  \
    X(rsqrtf, "rsqrtf(a)", 1 / sqrtl(a), 1e-3, 1e6, 0, 0, 2, 0, 0)                                           \
    X(cbrtf, "cbrtf(a)", cbrtl(a), -1e6, 1e6, 0, 0, 1, 0, 0)                                                 \
    X(rcbrtf, "rcbrtf(a)", 1 / cbrtl(a), 1e-3, 1e6, 0, 0, 1, 0, 0)                                           \
    X(erff, "erff(a)", erfl(a), -4, 4, 0, 0, 2, 0, 0)                                                        \
    X(erfcf, "erfcf(a)", erfcl(a), -4, 9, 0, 0, 4, 0, 0)                                                     \
    X(erfinvf, "erfinvf(a)", lref_erfinv(a), -0.999, 0.999, 0, 0, 2, 0, 0)                                   \
    X(erfcinvf, "erfcinvf(a)", lref_erfcinv(a), 1e-3, 1.999, 0, 0, 4, 0, 0)                                  \
    X(erfcxf, "erfcxf(a)", expl(a *a) * erfcl(a), -3, 80, 0, 0, 4, 0, 0)                                     \
    X(normcdff, "normcdff(a)", erfcl(-a / sqrtl(2)) / 2, -10, 10, 0, 0, 5, 0, 0)                             \
    X(normcdfinvf, "normcdfinvf(a)", -sqrtl(2) * lref_erfcinv(2 * a), 1e-3, 0.999, 0, 0, 5, 0, 0)            \
    X(lgammaf, "lgammaf(a)", lgammal(a), 0.1, 100, 0, 0, 6, 1e-6, 0)                                         \
    X(tgammaf, "tgammaf(a)", tgammal(a), 0.1, 30, 0, 0, 5, 0, 0)                                             \
    X(j0f, "j0f(a)", jnl(0, a), 0, 8, 0, 0, 9, 2.2e-6, 0)                                                    \
    X(j1f, "j1f(a)", jnl(1, a), 0, 8, 0, 0, 9, 2.2e-6, 0)                                                    \
    X(y0f, "y0f(a)", ynl(0, a), 0.5, 8, 0, 0, 9, 2.2e-6, 0)                                                  \
    X(cyl_i0f, "cyl_bessel_i0f(a)", lref_i0(a), -20, 20, 0, 0, 6, 0, 0)                                      \
    X(cyl_i1f, "cyl_bessel_i1f(a)", lref_i1(a), -20, 20, 0, 0, 6, 0, 0)                                      \
    X(fmodf, "fmodf(a, b)", fmodl(a, b), -100, 100, 1, 10, 0.5, 0, 0)                                        \
    X(remainderf, "remainderf(a, b)", remainderl(a, b), -100, 100, 1, 10, 0.5, 0, 0)                         \
    X(fdimf, "fdimf(a, b)", a > b ? a - b : 0, -10, 10, -10, 10, 0.5, 0, 0)                                  \
    X(fmaf, "fmaf(a, b, 1.5f)", a *b + 1.5L, -10, 10, -10, 10, 0.5, 0, 0)                                    \
    X(copysignf, "copysignf(a, b)", copysignl(a, b), -10, 10, -10, 10, 0, 0, 0)                              \
    X(fminf, "fminf(a, b)", a < b ? a : b, -10, 10, -10, 10, 0, 0, 0)                                        \
    X(ldexpf, "ldexpf(a, 5)", ldexpl(a, 5), -10, 10, 0, 0, 0, 0, 0)                                          \
    X(truncf, "truncf(a)", truncl(a), -100, 100, 0, 0, 0, 0, 0)                                              \
    X(roundf, "roundf(a)", roundl(a), -100, 100, 0, 0, 0, 0, 0)                                              \
    X(rintf, "rintf(a)", nearbyintl(a), -100, 100, 0, 0, 0, 0, 0)                                            \
    X(norm3df, "norm3df(a, b, 2.0f)", sqrtl(a *a + b * b + 4), -100, 100, -100, 100, 2, 0, 0)                \
    X(rnorm3df, "rnorm3df(a, b, 2.0f)", 1 / sqrtl(a * a + b * b + 4), -100, 100, -100, 100, 2, 0, 0)         \
    X(norm4df, "norm4df(a, b, 2.0f, 1.0f)", sqrtl(a *a + b * b + 5), -100, 100, -100, 100, 2, 0, 0)          \
    X(fast_expf, "__expf(a)", expl(a), -10, 10, 0, 0, 16, 0, 0)                                              \
    X(fast_exp10f, "__exp10f(a)", powl(10, a), -4, 4, 0, 0, 16, 0, 0)                                        \
    X(fast_logf, "__logf(a)", logl(a), 0.5, 2, 0, 0, 3, 3.7e-7, 0)                                           \
    X(fast_log2f, "__log2f(a)", log2l(a), 0.5, 2, 0, 0, 2, 2.4e-7, 0)                                        \
    X(fast_log10f, "__log10f(a)", log10l(a), 0.5, 2, 0, 0, 3, 2.4e-7, 0)                                     \
    X(fast_sinf, "__sinf(a)", sinl(a), -3.14, 3.14, 0, 0, 2, 3.7e-7, 0)                                      \
    X(fast_cosf, "__cosf(a)", cosl(a), -3.14, 3.14, 0, 0, 2, 3.7e-7, 0)                                      \
    X(fast_tanf, "__tanf(a)", tanl(a), -1, 1, 0, 0, 8, 2e-6, 0)                                              \
    X(fast_powf, "__powf(a, b)", powl(a, b), 0.5, 4, -3, 3, 32, 0, 0)                                        \
    X(fast_sincosf, "kiln_sincos_sum(a)", sinl(a) + cosl(a), -3.14, 3.14, 0, 0, 4, 7.5e-7, 0)                \
    X(fdividef, "__fdividef(a, b)", a / b, -100, 100, 1, 100, 2, 0, 0)                                       \
    X(saturatef, "__saturatef(a)", a<0 ? 0 : a> 1 ? 1 : a, -2, 2, 0, 0, 0, 0, 0)                             \
    X(frsqrt_rn, "__frsqrt_rn(a)", 1 / sqrtl(a), 1e-3, 1e3, 0, 0, 0.5, 0, 0)                                 \
    X(fadd_rn, "__fadd_rn(a, b)", a + b, -10, 10, -1e-3, 1e-3, 0.5, 0, 0)                                    \
    X(fadd_rz, "__fadd_rz(a, b)", a + b, -10, 10, -1e-3, 1e-3, 1, 0, ROUND_Z)                                \
    X(fadd_ru, "__fadd_ru(a, b)", a + b, -10, 10, -1e-3, 1e-3, 1, 0, ROUND_U)                                \
    X(fadd_rd, "__fadd_rd(a, b)", a + b, -10, 10, -1e-3, 1e-3, 1, 0, ROUND_D)                                \
    X(fsub_ru, "__fsub_ru(a, b)", a - b, -10, 10, -1e-3, 1e-3, 1, 0, ROUND_U)                                \
    X(fmul_rz, "__fmul_rz(a, b)", a *b, -10, 10, -10, 10, 1, 0, ROUND_Z)                                     \
    X(fmul_rd, "__fmul_rd(a, b)", a *b, -10, 10, -10, 10, 1, 0, ROUND_D)                                     \
    X(fdiv_ru, "__fdiv_ru(a, b)", a / b, -10, 10, 1, 10, 1, 0, ROUND_U)                                      \
    X(fdiv_rd, "__fdiv_rd(a, b)", a / b, -10, 10, 1, 10, 1, 0, ROUND_D)                                      \
    X(frcp_rz, "__frcp_rz(a)", 1 / a, 0.1, 10, 0, 0, 1, 0, ROUND_Z)                                          \
    X(fsqrt_ru, "__fsqrt_ru(a)", sqrtl(a), 0.1, 100, 0, 0, 1, 0, ROUND_U)                                    \
    X(fmaf_rd, "__fmaf_rd(a, b, 0.1f)", a *b + (long double)0.1f, -10, 10, -10, 10, 1, 0, ROUND_D)           \
    X(double2float_rz, "__double2float_rz((double)a / 3.0)", (long double)(double)((double)a / 3.0), -10,    \
      10, 0, 0, 1, 0, ROUND_Z)

#define DOUBLE_ROWS(X)                                                                                       \
    X(sin, "sin(a)", sinl(a), -100, 100, 0, 0, 2, 0, 0)                                                      \
    X(cos, "cos(a)", cosl(a), -100, 100, 0, 0, 2, 0, 0)                                                      \
    X(tan, "tan(a)", tanl(a), -1.5, 1.5, 0, 0, 2, 0, 0)                                                      \
    X(sinpi, "sinpi(a)", lref_sinpi(a), -50, 50, 0, 0, 2, 2e-16, 0)                                          \
    X(exp, "exp(a)", expl(a), -700, 700, 0, 0, 1, 0, 0)                                                      \
    /* glibc's exp10 and cbrt (the CPU's) are looser than CUDA's 1 ulp */                                    \
    X(exp10, "exp10(a)", powl(10, a), -300, 300, 0, 0, 2, 0, 0)                                              \
    X(log, "log(a)", logl(a), 1e-3, 1e6, 0, 0, 1, 0, 0)                                                      \
    /* CUDA documents 1 ulp; CUDA 13's log1p measured 1.01 on an H100 */                                     \
    X(log1p, "log1p(a)", log1pl(a), -0.9, 100, 0, 0, 1.1, 0, 0)                                              \
    X(atan2, "atan2(a, b)", atan2l(a, b), -10, 10, -10, 10, 2, 0, 0)                                         \
    X(pow, "pow(a, b)", powl(a, b), 0.1, 10, -8, 8, 2, 0, 0)                                                 \
    X(cbrt, "cbrt(a)", cbrtl(a), -1e6, 1e6, 0, 0, 2.5, 0, 0)                                                 \
    X(rcbrt, "rcbrt(a)", 1 / cbrtl(a), 1e-3, 1e6, 0, 0, 1, 0, 0)                                             \
    X(rsqrt, "rsqrt(a)", 1 / sqrtl(a), 1e-3, 1e6, 0, 0, 1, 0, 0)                                             \
    X(erf, "erf(a)", erfl(a), -4, 4, 0, 0, 2, 0, 0)                                                          \
    X(erfc, "erfc(a)", erfcl(a), -4, 25, 0, 0, 5, 0, 0)                                                      \
    X(erfinv, "erfinv(a)", lref_erfinv(a), -0.999, 0.999, 0, 0, 5, 0, 0)                                     \
    X(erfcinv, "erfcinv(a)", lref_erfcinv(a), 1e-3, 1.999, 0, 0, 6, 0, 0)                                    \
    X(erfcx, "erfcx(a)", expl(a *a) * erfcl(a), -3, 80, 0, 0, 4, 0, 0)                                       \
    X(normcdf, "normcdf(a)", erfcl(-a / sqrtl(2)) / 2, -10, 10, 0, 0, 5, 0, 0)                               \
    X(normcdfinv, "normcdfinv(a)", -sqrtl(2) * lref_erfcinv(2 * a), 1e-3, 0.999, 0, 0, 8, 0, 0)              \
    X(lgamma, "lgamma(a)", lgammal(a), 0.1, 100, 0, 0, 4, 1e-15, 0)                                          \
    X(tgamma, "tgamma(a)", tgammal(a), 0.1, 30, 0, 0, 10, 0, 0)                                              \
    X(cyl_i0, "cyl_bessel_i0(a)", lref_i0(a), -20, 20, 0, 0, 6, 0, 0)                                        \
    X(cyl_i1, "cyl_bessel_i1(a)", lref_i1(a), -20, 20, 0, 0, 6, 0, 0)                                        \
    X(norm3d, "norm3d(a, b, 2.0)", sqrtl(a *a + b * b + 4), -100, 100, -100, 100, 2, 0, 0)                   \
    X(rhypot, "rhypot(a, b)", 1 / hypotl(a, b), 1, 1e3, 1, 1e3, 1, 0, 0)                                     \
    X(dadd_rz, "__dadd_rz(a, b)", a + b, -10, 10, -1e-3, 1e-3, 1, 0, ROUND_Z)                                \
    X(dadd_ru, "__dadd_ru(a, b)", a + b, -10, 10, -1e-3, 1e-3, 1, 0, ROUND_U)                                \
    X(dmul_rd, "__dmul_rd(a, b)", a *b, -10, 10, -10, 10, 1, 0, ROUND_D)                                     \
    X(ddiv_ru, "__ddiv_ru(a, b)", a / b, -10, 10, 1, 10, 1, 0, ROUND_U)                                      \
    X(dsqrt_rd, "__dsqrt_rd(a)", sqrtl(a), 0.1, 100, 0, 0, 1, 0, ROUND_D)                                    \
    X(drcp_ru, "__drcp_ru(a)", 1 / a, 0.1, 10, 0, 0, 1, 0, ROUND_U)                                          \
    X(fma_rz, "__fma_rz(a, b, 0.1)", a *b + (long double)0.1, -10, 10, -10, 10, 1, 0, ROUND_Z)

#define REF_FN(name, expr, ref, alo, ahi, blo, bhi, ulp, abs_e, rnd)                                         \
    static long double ref_##name(long double a, long double b) {                                            \
        (void)a;                                                                                             \
        (void)b;                                                                                             \
        return (long double)(ref);                                                                           \
    }
FLOAT_ROWS(REF_FN)
DOUBLE_ROWS(REF_FN)
#define ROW(name, expr, ref, alo, ahi, blo, bhi, ulp, abs_e, rnd)                                            \
    {expr, ref_##name, alo, ahi, blo, bhi, ulp, abs_e, rnd},
static const math_row float_rows[] = {FLOAT_ROWS(ROW)};
static const math_row double_rows[] = {DOUBLE_ROWS(ROW)};
#define NROWS(t) ((int)(sizeof(t) / sizeof *(t)))

enum { SAMPLES = 256 };

/* One kernel evaluating every row: row r reads A[r*n+i], B[r*n+i]. */
static char *kernel_source(const math_row *rows, int count, const char *type) {
    size_t cap = 64 * 1024;
    char *s = malloc(cap);
    size_t n =
        (size_t)snprintf(s, cap,
                         "__device__ float kiln_sincos_sum(float x) { float s, c; __sincosf(x, &s, &c); "
                         "return s + c; }\n"
                         "__global__ void eval(const %s *A, const %s *B, %s *O, int n) {\n"
                         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "    if (i >= n) return;\n",
                         type, type, type);
    for (int r = 0; r < count; r++)
        n += (size_t)snprintf(
            s + n, cap - n,
            "    { const %s a = A[%d * n + i], b = B[%d * n + i]; (void)b; O[%d * n + i] = (%s)(%s); }\n",
            type, r, r, r, type, rows[r].expr);
    snprintf(s + n, cap - n, "}\n");
    return s;
}

static double ulps_off(long double got, long double ref, int is_float) {
    if (isnan(ref) && isnan(got)) return 0;
    if (isinf(ref) || isinf(got)) return got == ref ? 0 : INFINITY;
    long double m = fabsl(ref);
    long double ulp;
    if (is_float) {
        float f = (float)m;
        if (f == 0) f = 1.17549435e-38f * 1.1920929e-7f;
        ulp = (long double)(nextafterf(f, INFINITY) - f);
    } else {
        double d = (double)m;
        if (d == 0) d = 4.9406564584124654e-324;
        ulp = (long double)(nextafter(d, INFINITY) - d);
    }
    return (double)(fabsl(got - ref) / ulp);
}

static void run_table(kiln_context *ctx, const math_row *rows, int count, int is_float) {
    const char *type = is_float ? "float" : "double";
    kiln_dtype dtype = is_float ? KILN_FLOAT32 : KILN_FLOAT64;
    size_t item = is_float ? 4 : 8, total = (size_t)count * SAMPLES;
    double *a = malloc(sizeof(double) * total), *b = malloc(sizeof(double) * total);
    void *ha = malloc(item * total), *hb = malloc(item * total), *ho = malloc(item * total);
    test_rng rng = test_rng_for(type);
    for (int r = 0; r < count; r++)
        for (int i = 0; i < SAMPLES; i++) {
            size_t k = (size_t)r * SAMPLES + (size_t)i;
            a[k] = test_uniform(&rng, rows[r].a_lo, rows[r].a_hi);
            b[k] = test_uniform(&rng, rows[r].b_lo, rows[r].b_hi);
            if (is_float) {
                ((float *)ha)[k] = (float)a[k];
                ((float *)hb)[k] = (float)b[k];
                a[k] = ((float *)ha)[k]; /* the reference sees what the kernel reads */
                b[k] = ((float *)hb)[k];
            } else {
                ((double *)ha)[k] = a[k];
                ((double *)hb)[k] = b[k];
            }
        }
    char *src = kernel_source(rows, count, type);
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "eval", NULL, &k));
    int64_t shape = (int64_t)total;
    kiln_array *A = NULL, *B = NULL, *O = NULL;
    TEST_OK(kiln_array_from_host(ctx, dtype, 1, &shape, ha, item * total, &A));
    TEST_OK(kiln_array_from_host(ctx, dtype, 1, &shape, hb, item * total, &B));
    TEST_OK(kiln_array_empty(ctx, dtype, 1, &shape, &O));
    TEST_OK(kiln_launch(k, KILN_DIM(SAMPLES / 64), KILN_DIM(64), 0, NULL,
                        KILN_ARGS(kiln_arr(A), kiln_arr(B), kiln_arr(O), kiln_i32(SAMPLES))));
    TEST_OK(kiln_array_to_host(O, ho, item * total));
    int failures = 0;
    for (int r = 0; r < count; r++) {
        double worst = 0;
        int bad_direction = 0;
        for (int i = 0; i < SAMPLES; i++) {
            size_t kk = (size_t)r * SAMPLES + (size_t)i;
            long double ref = rows[r].ref(a[kk], b[kk]);
            long double got = is_float ? ((float *)ho)[kk] : ((double *)ho)[kk];
            double off = ulps_off(got, ref, is_float);
            if (rows[r].abs_err > 0 && fabsl(got - ref) <= rows[r].abs_err) off = 0;
            if (off > worst) worst = off;
            switch (rows[r].rounding) {
            case ROUND_Z: bad_direction |= fabsl(got) > fabsl(ref); break;
            case ROUND_U: bad_direction |= got < ref; break;
            case ROUND_D: bad_direction |= got > ref; break;
            default: break;
            }
        }
        if (worst > rows[r].ulp || bad_direction) {
            print_error("%s: %s is off by %.2f ulp (bound %.1f)%s\n", type, rows[r].expr, worst, rows[r].ulp,
                        bad_direction ? ", rounded the wrong way" : "");
            failures++;
        }
    }
    kiln_array_release(A);
    kiln_array_release(B);
    kiln_array_release(O);
    kiln_kernel_release(k);
    free(src);
    free(a);
    free(b);
    free(ha);
    free(hb);
    free(ho);
    assert_int_equal(failures, 0);
}

static void float_functions(void **state) { run_table(*state, float_rows, NROWS(float_rows), 1); }
static void double_functions(void **state) { run_table(*state, double_rows, NROWS(double_rows), 0); }

/* ---------------------------------------------------------------- integers, exact */
static unsigned c_brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static unsigned c_byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned char bytes[8];
    for (int i = 0; i < 4; i++) {
        bytes[i] = (unsigned char)(x >> (8 * i));
        bytes[4 + i] = (unsigned char)(y >> (8 * i));
    }
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)bytes[(s >> (4 * i)) & 7] << (8 * i);
    return r;
}
static unsigned c_lanes(unsigned a, unsigned b, int bits, int op) {
    unsigned r = 0, m = (1u << bits) - 1;
    for (int i = 0; i < 32; i += bits) {
        unsigned x = (a >> i) & m, y = (b >> i) & m, v = 0;
        switch (op) {
        case 0: v = x + y; break;
        case 1: v = x - y; break;
        case 2: v = x > y ? x - y : y - x; break;
        case 3: v = (x + y + 1) / 2; break;
        }
        r |= (v & m) << i;
    }
    return r;
}
static unsigned long long c_umul64hi(unsigned long long a, unsigned long long b) {
    unsigned long long al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
    unsigned long long ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    unsigned long long mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}
static int popcount64(unsigned long long x) {
    int n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

/* X(name, CUDA expr of unsigned x, y, z, C reference) */
#define INT_ROWS(X)                                                                                          \
    X("__popc(x)", (unsigned)popcount64(x))                                                                  \
    X("__popcll(((unsigned long long)x << 32) | y)",                                                         \
      (unsigned)popcount64(((unsigned long long)x << 32) | y))                                               \
    X("__clz((int)x)", x ? (unsigned)__builtin_clz(x) : 32u)                                                 \
    X("__ffs((int)x)", (unsigned)__builtin_ffs((int)x))                                                      \
    X("__brev(x)", c_brev(x))                                                                                \
    X("(unsigned)(__brevll(((unsigned long long)x << 32) | y) >> 32)", c_brev(y))                            \
    X("__byte_perm(x, y, z)", c_byte_perm(x, y, z))                                                          \
    X("__funnelshift_l(x, y, z)", (unsigned)((((unsigned long long)y << 32 | x) << (z & 31)) >> 32))         \
    X("__funnelshift_r(x, y, z)", (unsigned)(((unsigned long long)y << 32 | x) >> (z & 31)))                 \
    X("__funnelshift_lc(x, y, z % 40)",                                                                      \
      (z % 40) >= 32 ? x : (unsigned)((((unsigned long long)y << 32 | x) << (z % 40)) >> 32))                \
    X("(unsigned)__mulhi((int)x, (int)y)", (unsigned)(int)(((long long)(int)x * (int)y) >> 32))              \
    X("__umulhi(x, y)", (unsigned)(((unsigned long long)x * y) >> 32))                                       \
    X("(unsigned)__umul64hi(((unsigned long long)x << 32) | y, ((unsigned long long)y << 32) | z)",          \
      (unsigned)c_umul64hi(((unsigned long long)x << 32) | y, ((unsigned long long)y << 32) | z))            \
    X("__usad(x, y, z)", z + (x > y ? x - y : y - x))                                                        \
    X("(unsigned)__sad((int)x, (int)y, z)",                                                                  \
      z + (unsigned)((int)x > (int)y ? (long long)(int)x - (int)y : (long long)(int)y - (int)x))             \
    X("(unsigned)__hadd((int)x, (int)y)", (unsigned)(int)(((long long)(int)x + (int)y) >> 1))                \
    X("(unsigned)__rhadd((int)x, (int)y)", (unsigned)(int)(((long long)(int)x + (int)y + 1) >> 1))           \
    X("__uhadd(x, y)", (unsigned)(((unsigned long long)x + y) >> 1))                                         \
    X("__urhadd(x, y)", (unsigned)(((unsigned long long)x + y + 1) >> 1))                                    \
    X("__vadd2(x, y)", c_lanes(x, y, 16, 0))                                                                 \
    X("__vadd4(x, y)", c_lanes(x, y, 8, 0))                                                                  \
    X("__vsub4(x, y)", c_lanes(x, y, 8, 1))                                                                  \
    X("__vabsdiffu4(x, y)", c_lanes(x, y, 8, 2))                                                             \
    X("__vavgu2(x, y)", c_lanes(x, y, 16, 3))

static unsigned next_u32(test_rng *r) { return (unsigned)test_uniform(r, 0, 4294967295.0); }

static void integer_intrinsics(void **state) {
    kiln_context *ctx = *state;
    static const char *exprs[] = {
#define INT_EXPR(expr, ref) expr,
        INT_ROWS(INT_EXPR)};
    int count = (int)(sizeof exprs / sizeof *exprs);
    char *src = malloc(32 * 1024);
    size_t n =
        (size_t)snprintf(src, 32 * 1024,
                         "__global__ void ints(const unsigned *X, const unsigned *Y, const unsigned *Z, "
                         "unsigned *O, int n) {\n"
                         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "    if (i >= n) return;\n"
                         "    unsigned x = X[i], y = Y[i], z = Z[i];\n");
    for (int e = 0; e < count; e++)
        n += (size_t)snprintf(src + n, 32 * 1024 - n, "    O[%d * n + i] = (unsigned)(%s);\n", e, exprs[e]);
    snprintf(src + n, 32 * 1024 - n, "}\n");
    unsigned hx[SAMPLES], hy[SAMPLES], hz[SAMPLES];
    test_rng rng = test_rng_for("ints");
    for (int i = 0; i < SAMPLES; i++) {
        hx[i] = i < 4 ? (unsigned)i : next_u32(&rng);
        hy[i] = next_u32(&rng);
        hz[i] = next_u32(&rng);
    }
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "ints", NULL, &k));
    int64_t len = SAMPLES, olen = (int64_t)count * SAMPLES;
    kiln_array *X = NULL, *Y = NULL, *Z = NULL, *O = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_UINT32, 1, &len, hx, sizeof hx, &X));
    TEST_OK(kiln_array_from_host(ctx, KILN_UINT32, 1, &len, hy, sizeof hy, &Y));
    TEST_OK(kiln_array_from_host(ctx, KILN_UINT32, 1, &len, hz, sizeof hz, &Z));
    TEST_OK(kiln_array_empty(ctx, KILN_UINT32, 1, &olen, &O));
    TEST_OK(kiln_launch(k, KILN_DIM(SAMPLES / 64), KILN_DIM(64), 0, NULL,
                        KILN_ARGS(kiln_arr(X), kiln_arr(Y), kiln_arr(Z), kiln_arr(O), kiln_i32(SAMPLES))));
    unsigned *out = malloc(sizeof(unsigned) * (size_t)olen);
    TEST_OK(kiln_array_to_host(O, out, sizeof(unsigned) * (size_t)olen));
    for (int i = 0; i < SAMPLES; i++) {
        unsigned x = hx[i], y = hy[i], z = hz[i];
        unsigned expect[] = {
#define INT_REF(expr, ref) (ref),
            INT_ROWS(INT_REF)};
        for (int e = 0; e < count; e++)
            if (out[e * SAMPLES + i] != expect[e])
                fail_msg("%s with x=%#x y=%#x z=%#x: got %#x, expected %#x", exprs[e], x, y, z,
                         out[e * SAMPLES + i], expect[e]);
    }
    kiln_array_release(X);
    kiln_array_release(Y);
    kiln_array_release(Z);
    kiln_array_release(O);
    kiln_kernel_release(k);
    free(out);
    free(src);
}

/* The same generated sources through NVRTC, here without a GPU (skipped
 * where NVRTC is absent; the GPU run evaluates them). */
static void tables_compile_through_nvrtc(void **state) {
    (void)state;
    char *f = kernel_source(float_rows, NROWS(float_rows), "float");
    char *d = kernel_source(double_rows, NROWS(double_rows), "double");
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", f, "float_table.cu", NULL, &log);
    kiln_free(log);
    if (s != KILN_ERR_COMPILER_MISSING) {
        TEST_OK(s);
        TEST_OK(kiln_compile_only("cuda", "sm_90", d, "double_table.cu", NULL, &log));
        kiln_free(log);
    }
    free(f);
    free(d);
    if (s == KILN_ERR_COMPILER_MISSING) skip();
}

/* A module `kiln compile` accepts must load: on the CPU the compile links
 * the module, so a function declared and never defined fails there. */
static void compile_fails_where_load_would(void **state) {
    (void)state;
    static const char *src = "__device__ float nowhere(float);\n"
                             "__global__ void k(float *o) { o[0] = nowhere(o[0]); }\n";
    char *log = NULL;
    TEST_FAILS_WITH(kiln_compile_only("cpu", NULL, src, "undefined.cu", NULL, &log), KILN_ERR_COMPILE,
                    "nowhere");
    kiln_free(log);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float_functions),
        cmocka_unit_test(double_functions),
        cmocka_unit_test(integer_intrinsics),
        cmocka_unit_test(compile_fails_where_load_would),
        cmocka_unit_test(tables_compile_through_nvrtc),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
