/* test_complex.c: the complex API kernels see (kiln_complex.cuh: operators,
 * abs arg conj polar sqrt exp log pow sin cos tan tanh log10 proj, and the
 * cuComplex names) against the host's C99 <complex.h>, on random inputs
 * and on the edges where C99 Annex G fixes the answer (signed zeros,
 * infinities, NaNs, tiny parts), for complex128 and complex64, run on the
 * backend under test and compiled through NVRTC. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#define NF 16 /* results per input pair */

/* The same kernel text for both precisions: T is the complex type, R its
 * real type, S the cuComplex suffix ("" or "f"). */
#define CX_KERNEL(NAME, T, R, CUDIV, CUADD, CUABS, MAKE)                                                     \
    "__global__ void " NAME "(const " T " *z, const " T " *w, " T " *o, int n) {\n"                          \
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"                                                   \
    "    if (i >= n) return;\n"                                                                              \
    "    " T " a = z[i], b = w[i], *r = o + 16 * i;\n"                                                       \
    "    r[0] = a / b; r[1] = a * b; r[2] = sqrt(a); r[3] = exp(a); r[4] = log(a); r[5] = pow(a, b);\n"      \
    "    r[6] = sin(a); r[7] = cos(a); r[8] = " T "(abs(a), arg(a)); r[9] = conj(a);\n"                      \
    "    r[10] = polar(abs(a), arg(a)); r[11] = " CUDIV "(a, b); r[12] = " CUADD "(a, b);\n"                 \
    "    r[13] = " MAKE "(" CUABS "(a), real(a) - imag(b)); r[14] = tan(a); r[15] = log10(a);\n"             \
    "}\n"

static const char *kernels =
    CX_KERNEL("cx128", "kiln_complex128", "double", "cuCdiv", "cuCadd", "cuCabs", "make_cuDoubleComplex")
        CX_KERNEL("cx64", "kiln_complex64", "float", "cuCdivf", "cuCaddf", "cuCabsf", "make_cuFloatComplex");

/* Host references, in long double for the random inputs. */
static void reference(long double complex a, long double complex b, long double complex *r) {
    r[0] = a / b;
    r[1] = a * b;
    r[2] = csqrtl(a);
    r[3] = cexpl(a);
    r[4] = clogl(a);
    r[5] = cpowl(a, b);
    r[6] = csinl(a);
    r[7] = ccosl(a);
    r[8] = cabsl(a) + I * cargl(a);
    r[9] = conjl(a);
    r[10] = cabsl(a) * cexpl(I * cargl(a));
    r[11] = a / b;
    r[12] = a + b;
    r[13] = cabsl(a) + I * (creall(a) - cimagl(b));
    r[14] = ctanl(a);
    r[15] = clogl(a) / logl(10.0L);
}

static kiln_module *module_for(kiln_context *ctx) {
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", kernels, "complex.cu", NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING && s != KILN_OK) fail_msg("NVRTC: %s", kiln_last_error());
    kiln_free(log);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, kernels, "complex.cu", NULL, &m));
    return m;
}

/* Runs kernel `name` on n pairs (as doubles; single precision converts). */
static double *run(kiln_context *ctx, kiln_module *m, int single, const double *z, const double *w, int n) {
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_kernel(m, single ? "cx64" : "cx128", &k));
    kiln_dtype t = single ? KILN_COMPLEX64 : KILN_COMPLEX128;
    size_t item = single ? 8 : 16;
    int64_t nn = n, no = (int64_t)n * NF;
    unsigned char *zb = malloc((size_t)n * item), *wb = malloc((size_t)n * item);
    for (int i = 0; i < 2 * n; i++) {
        if (single) {
            ((float *)zb)[i] = (float)z[i];
            ((float *)wb)[i] = (float)w[i];
        } else {
            ((double *)zb)[i] = z[i];
            ((double *)wb)[i] = w[i];
        }
    }
    kiln_array *za = NULL, *wa = NULL, *oa = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, 1, &nn, zb, (size_t)n * item, &za));
    TEST_OK(kiln_array_from_host(ctx, t, 1, &nn, wb, (size_t)n * item, &wa));
    TEST_OK(kiln_array_zeros(ctx, t, 1, &no, &oa));
    TEST_OK(kiln_launch(k, KILN_DIM((uint32_t)(n + 63) / 64), KILN_DIM(64), 0, NULL,
                        KILN_ARGS(kiln_arr(za), kiln_arr(wa), kiln_arr(oa), kiln_i32(n))));
    unsigned char *ob = malloc((size_t)no * item);
    TEST_OK(kiln_array_to_host(oa, ob, (size_t)no * item));
    double *out = malloc(sizeof(double) * 2 * (size_t)no);
    for (int64_t i = 0; i < 2 * no; i++) out[i] = single ? ((float *)ob)[i] : ((double *)ob)[i];
    kiln_array_release(za);
    kiln_array_release(wa);
    kiln_array_release(oa);
    kiln_kernel_release(k);
    free(zb);
    free(wb);
    free(ob);
    return out;
}

static void test_random_inputs_match_complex_h(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = module_for(ctx);
    test_rng r = test_rng_for(__func__);
    enum { N = 500 };
    double *z = malloc(sizeof(double) * 2 * N), *w = malloc(sizeof(double) * 2 * N);
    for (int i = 0; i < N; i++) {
        z[2 * i] = test_uniform(&r, -6, 6);
        z[2 * i + 1] = test_uniform(&r, -6, 6);
        w[2 * i] = test_uniform(&r, -2, 2);
        w[2 * i + 1] = test_uniform(&r, -2, 2);
    }
    /* relative to the result's magnitude; pow amplifies log's error by |w| */
    static const double tol64[NF] = {1e-15, 1e-15, 1e-15, 1e-14, 1e-15, 1e-12, 1e-14, 1e-14,
                                     1e-15, 0,     1e-14, 1e-15, 1e-15, 1e-15, 1e-13, 1e-15};
    for (int single = 0; single < 2; single++) {
        double *got = run(ctx, m, single, z, w, N);
        for (int i = 0; i < N; i++) {
            long double complex a = z[2 * i] + I * (long double)z[2 * i + 1];
            long double complex b = w[2 * i] + I * (long double)w[2 * i + 1];
            if (single) { /* the inputs the kernel saw */
                a = (float)z[2 * i] + I * (long double)(float)z[2 * i + 1];
                b = (float)w[2 * i] + I * (long double)(float)w[2 * i + 1];
            }
            long double complex want[NF];
            reference(a, b, want);
            for (int f = 0; f < NF; f++) {
                double gr = got[2 * (i * NF + f)], gi = got[2 * (i * NF + f) + 1];
                long double mag = fmaxl(fabsl(creall(want[f])), fabsl(cimagl(want[f])));
                long double err = fmaxl(fabsl(gr - creall(want[f])), fabsl(gi - cimagl(want[f]))) / mag;
                double tol = single ? (f == 5 ? 2e-4 : 3e-6) : 4 * tol64[f] + 1e-16;
                if (!(err <= tol))
                    fail_msg(
                        "%s function %d of (%g%+gi, %g%+gi): got %.17g%+.17gi, want %.17Lg%+.17Lgi (err %Lg)",
                        single ? "complex64" : "complex128", f, z[2 * i], z[2 * i + 1], w[2 * i],
                        w[2 * i + 1], gr, gi, creall(want[f]), cimagl(want[f]), err);
            }
        }
        free(got);
    }
    free(z);
    free(w);
    kiln_module_release(m);
}

/* The issue's three cases, exactly. */
static void test_annex_g_cases_from_the_issue(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = module_for(ctx);
    double z[6] = {-2, -0.0, 1, 1, -4, -1e-300}, w[6] = {1, 0, 0, 0, 1, 0};
    double *got = run(ctx, m, 0, z, w, 3);
    /* sqrt(-2 - 0i) = 0 - 1.414i */
    double re = got[2 * (0 * NF + 2)], im = got[2 * (0 * NF + 2) + 1];
    assert_true(re == 0 && im == -sqrt(2.0));
    /* (1 + 1i) / (0 + 0i) is an infinity (both parts here, as glibc) */
    re = got[2 * (1 * NF + 0)];
    im = got[2 * (1 * NF + 0) + 1];
    assert_true(isinf(re) && isinf(im) && re > 0 && im > 0);
    assert_true(isinf(got[2 * (1 * NF + 11)])); /* cuCdiv too */
    /* sqrt(-4 - 1e-300i) = 5e-301 - 2i: the tiny real part survives */
    re = got[2 * (2 * NF + 2)];
    im = got[2 * (2 * NF + 2) + 1];
    assert_true(fabs(re - 2.5e-301) <= 1e-15 * 2.5e-301 && im == -2);
    free(got);
    /* the same in single precision (1e-300 is 0 there: sqrt(-4 - 0i) = 0 - 2i) */
    double zf[6] = {-2, -0.0, 1, 1, -4, -1e-40}, wf[6] = {1, 0, 0, 0, 1, 0};
    got = run(ctx, m, 1, zf, wf, 3);
    assert_true(got[2 * 2] == 0 && got[2 * 2 + 1] == (double)-sqrtf(2.0f));
    assert_true(isinf(got[2 * NF]) && isinf(got[2 * NF + 1]));
    assert_true(got[2 * (2 * NF + 2)] > 0 && got[2 * (2 * NF + 2) + 1] == -2); /* subnormal -1e-40 kept */
    free(got);
    kiln_module_release(m);
}

/* One part of an edge result against glibc's: NaN where glibc has NaN,
 * the same infinity, and otherwise within tol of the result's magnitude
 * `mag`; a zero's sign must match where the zero is exact (zero_sign), not
 * where it comes from rounding: kernels contract a*b+c into an FMA as NVCC
 * does, which leaves z/z = 1 - 2e-17i where glibc's separate multiply and
 * add give exactly 1 - 0i. */
static int same_edge(double got, double want, double mag, double tol, int zero_sign) {
    if (isnan(want)) return isnan(got);
    if (isnan(got) || !!isinf(got) != !!isinf(want)) return 0;
    if (isinf(want)) return signbit(got) == signbit(want);
    if (want == 0 && got == 0 && zero_sign) return signbit(got) == signbit(want);
    return fabs(got - want) <= tol * mag;
}

/* Division and sqrt over a grid of edge values, against glibc's Annex G
 * results; exp on the edges Annex G fixes. */
static void test_edges_match_complex_h(void **state) {
    kiln_context *ctx = *state;
    kiln_module *m = module_for(ctx);
    static const double e[] = {0.0, -0.0, 1.0, -2.5, INFINITY, -INFINITY, NAN, 1e-310, -1e308, 3e-320};
    enum { E = sizeof e / sizeof e[0], N = E * E * E * E };
    double *z = malloc(sizeof(double) * 2 * N), *w = malloc(sizeof(double) * 2 * N);
    int n = 0;
    for (int a = 0; a < E; a++)
        for (int b = 0; b < E; b++)
            for (int c = 0; c < E; c++)
                for (int d = 0; d < E; d++, n++) {
                    z[2 * n] = e[a];
                    z[2 * n + 1] = e[b];
                    w[2 * n] = e[c];
                    w[2 * n + 1] = e[d];
                }
    double *got = run(ctx, m, 0, z, w, N);
    int bad = 0;
    for (int i = 0; i < N && bad < 10; i++) {
        double complex a = CMPLX(z[2 * i], z[2 * i + 1]), b = CMPLX(w[2 * i], w[2 * i + 1]);
        double complex want[3] = {a / b, csqrt(a), cexp(a)};
        int fn[3] = {0, 2, 3};
        for (int f = 0; f < 3; f++) {
            /* exp(±inf + i inf or NaN): Annex G leaves the signs unspecified */
            if (f == 2 && isinf(creal(a)) && !isfinite(cimag(a))) continue;
            double gr = got[2 * (i * NF + fn[f])], gi = got[2 * (i * NF + fn[f]) + 1];
            /* a zero result is exact (not an underflow) when the dividend is 0 or the
             * divisor infinite, and for sqrt and exp */
            int exact_zero = f != 0 || (creal(a) == 0 && cimag(a) == 0) || isinf(creal(b)) || isinf(cimag(b));
            double mag = fmax(fabs(creal(want[f])), fabs(cimag(want[f])));
            if (!same_edge(gr, creal(want[f]), mag, 1e-13, exact_zero) ||
                !same_edge(gi, cimag(want[f]), mag, 1e-13, exact_zero)) {
                fprintf(stderr, "%s(%g%+gi%s%g%+gi): kiln %g%+gi, glibc %g%+gi\n",
                        f == 0   ? "div"
                        : f == 1 ? "sqrt"
                                 : "exp",
                        creal(a), cimag(a), f == 0 ? ", " : "", f == 0 ? creal(b) : 0.0,
                        f == 0 ? cimag(b) : 0.0, gr, gi, creal(want[f]), cimag(want[f]));
                bad++;
            }
        }
    }
    assert_int_equal(bad, 0);
    free(got);
    free(z);
    free(w);
    kiln_module_release(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_inputs_match_complex_h),
        cmocka_unit_test(test_annex_g_cases_from_the_issue),
        cmocka_unit_test(test_edges_match_complex_h),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
