/* blas_ref.c: long double references for the BLAS tests (see blas_ref.h). */
#include "blas_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0) {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    if (exp == 31)
        bits = sign | 0x7f800000u | (man << 13);
    else
        bits = sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

hval bt_get(kiln_dtype t, const void *buf, size_t i) {
    hval v = {0, 0};
    switch (t) {
    case KILN_FLOAT16: v.re = half_to_float(((const uint16_t *)buf)[i]); break;
    case KILN_BFLOAT16: v.re = kiln_bfloat16_to_float(((const uint16_t *)buf)[i]); break;
    case KILN_FLOAT32: v.re = ((const float *)buf)[i]; break;
    case KILN_FLOAT64: v.re = ((const double *)buf)[i]; break;
    case KILN_COMPLEX64:
        v.re = ((const float *)buf)[2 * i];
        v.im = ((const float *)buf)[2 * i + 1];
        break;
    case KILN_COMPLEX128:
        v.re = ((const double *)buf)[2 * i];
        v.im = ((const double *)buf)[2 * i + 1];
        break;
    case KILN_INT32: v.re = ((const int32_t *)buf)[i]; break;
    case KILN_INT8: v.re = ((const int8_t *)buf)[i]; break;
    case KILN_INT64: v.re = (long double)((const int64_t *)buf)[i]; break;
    default: fail_msg("bt_get: dtype %s", kiln_dtype_name(t));
    }
    return v;
}

void bt_set(kiln_dtype t, void *buf, size_t i, double re, double im) {
    switch (t) {
    case KILN_FLOAT16: ((uint16_t *)buf)[i] = kiln_float_to_half((float)re); break;
    case KILN_BFLOAT16: ((uint16_t *)buf)[i] = kiln_float_to_bfloat16((float)re); break;
    case KILN_FLOAT32: ((float *)buf)[i] = (float)re; break;
    case KILN_FLOAT64: ((double *)buf)[i] = re; break;
    case KILN_COMPLEX64:
        ((float *)buf)[2 * i] = (float)re;
        ((float *)buf)[2 * i + 1] = (float)im;
        break;
    case KILN_COMPLEX128:
        ((double *)buf)[2 * i] = re;
        ((double *)buf)[2 * i + 1] = im;
        break;
    case KILN_INT32: ((int32_t *)buf)[i] = (int32_t)lround(re * 8); break;
    case KILN_INT8: ((int8_t *)buf)[i] = (int8_t)lround(re * 8); break;
    case KILN_INT64: ((int64_t *)buf)[i] = (int64_t)lround(re * 8); break;
    default: fail_msg("bt_set: dtype %s", kiln_dtype_name(t));
    }
}

double bt_eps(kiln_dtype t) {
    switch (t) {
    case KILN_FLOAT16: return ldexp(1, -11);
    case KILN_BFLOAT16: return ldexp(1, -8);
    case KILN_FLOAT32:
    case KILN_COMPLEX64: return ldexp(1, -24);
    default: return ldexp(1, -53);
    }
}

kiln_array *bt_random(kiln_context *ctx, test_rng *rng, kiln_dtype t, int ndim, const int64_t *shape) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    size_t bytes = n * kiln_dtype_size(t);
    void *buf = malloc(bytes ? bytes : 1);
    for (size_t i = 0; i < n; i++) bt_set(t, buf, i, test_uniform(rng, -1, 1), test_uniform(rng, -1, 1));
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, t, ndim, shape, buf, bytes, &a));
    free(buf);
    return a;
}

static hval mul(hval x, hval y) { return (hval){x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re}; }
static long double mag(hval x) { return sqrtl(x.re * x.re + x.im * x.im); }

/* Offset of C's batch entry `flat` in an operand with right-aligned batch dims. */
static size_t batch_offset(const bt_gemm_ref *p, int64_t flat, int nbo, const int64_t *bo, int64_t matrix) {
    int64_t idx[KILN_MAX_DIMS];
    for (int d = p->nb - 1; d >= 0; d--) {
        idx[d] = flat % p->batch[d];
        flat /= p->batch[d];
    }
    int64_t off = 0;
    for (int d = 0; d < nbo; d++) {
        int cd = d + (p->nb - nbo);
        off = off * bo[d] + (bo[d] == 1 ? 0 : idx[cd]);
    }
    return (size_t)(off * matrix);
}

void bt_check_gemm(const char *what, const bt_gemm_ref *p, const void *got) {
    int64_t batch = 1;
    for (int d = 0; d < p->nb; d++) batch *= p->batch[d];
    double eps = bt_eps(p->tc);
    /* float16 storage: products accumulate in float32, the result rounds once */
    double acc_eps = p->tc == KILN_FLOAT16 ? ldexp(1, -24) : eps;
    long double worst = 0;
    int64_t worst_at = -1;
    for (int64_t q = 0; q < batch; q++) {
        size_t oa = batch_offset(p, q, p->nba, p->batch_a, p->m * p->k);
        size_t ob = batch_offset(p, q, p->nbb, p->batch_b, p->k * p->n);
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t j = 0; j < p->n; j++) {
                hval sum = {0, 0};
                long double size = 0;
                for (int64_t l = 0; l < p->k; l++) {
                    hval t = mul(bt_get(p->ta, p->a, oa + (size_t)(i * p->k + l)),
                                 bt_get(p->tb, p->b, ob + (size_t)(l * p->n + j)));
                    sum.re += t.re;
                    sum.im += t.im;
                    size += mag(t);
                }
                size_t ci = (size_t)((q * p->m + i) * p->n + j);
                hval ref = mul(p->alpha, sum);
                long double bound_mag = mag(p->alpha) * size;
                if (p->c0) {
                    hval c0 = mul(p->beta, bt_get(p->tc, p->c0, ci));
                    ref.re += c0.re;
                    ref.im += c0.im;
                    bound_mag += mag(c0);
                }
                hval g = bt_get(p->tc, got, ci);
                hval diff = {g.re - ref.re, g.im - ref.im};
                long double bound =
                    ((long double)(p->k + 4) * acc_eps + p->input_rel) * bound_mag + eps * mag(ref) + 1e-30L;
                long double e = mag(diff) / bound;
                if (!(e <= worst)) {
                    worst = e;
                    worst_at = (int64_t)ci;
                }
            }
    }
    if (worst > 1)
        fail_msg("%s: entry %lld off by %.3Lg x the bound (m %lld n %lld k %lld, %s)", what,
                 (long long)worst_at, worst, (long long)p->m, (long long)p->n, (long long)p->k,
                 kiln_dtype_name(p->tc));
}

void bt_check_product(const char *what, kiln_array *a, kiln_array *b, kiln_array *c, const void *c0,
                      hval alpha, hval beta) {
    void *ha = test_read_array(a), *hb = test_read_array(b), *hc = test_read_array(c);
    int nda = kiln_array_ndim(a), ndb = kiln_array_ndim(b);
    const int64_t *sa = kiln_array_shape(a), *sb = kiln_array_shape(b);
    int64_t m = nda == 1 ? 1 : sa[nda - 2], k = sa[nda - 1], n = ndb == 1 ? 1 : sb[ndb - 1];
    bt_gemm_ref p = {.m = m,
                     .n = n,
                     .k = k,
                     .ta = kiln_array_dtype(a),
                     .tb = kiln_array_dtype(b),
                     .tc = kiln_array_dtype(c),
                     .a = ha,
                     .b = hb,
                     .c0 = c0,
                     .alpha = alpha,
                     .beta = beta};
    p.nba = nda > 2 ? nda - 2 : 0;
    p.nbb = ndb > 2 ? ndb - 2 : 0;
    p.batch_a = sa;
    p.batch_b = sb;
    p.nb = p.nba > p.nbb ? p.nba : p.nbb;
    for (int d = 0; d < p.nb; d++) {
        int da = d - (p.nb - p.nba), db = d - (p.nb - p.nbb);
        int64_t ea = da >= 0 ? sa[da] : 1, eb = db >= 0 ? sb[db] : 1;
        p.batch[d] = ea == 1 ? eb : ea;
    }
    bt_check_gemm(what, &p, hc);
    free(ha);
    free(hb);
    free(hc);
}

void bt_expect_close(const char *what, kiln_dtype t, int64_t n, hval got, hval ref, long double size) {
    long double bound = (long double)(n + 4) * bt_eps(t) * size + 1e-30L;
    long double e = sqrtl((got.re - ref.re) * (got.re - ref.re) + (got.im - ref.im) * (got.im - ref.im));
    if (!(e <= bound))
        fail_msg("%s %s n %lld: got %.17Lg%+.17Lgi, expected %.17Lg%+.17Lgi", what, kiln_dtype_name(t),
                 (long long)n, got.re, got.im, ref.re, ref.im);
}
