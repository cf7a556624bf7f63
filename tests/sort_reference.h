/* sort_reference.h: test_sort's host reference: NumPy's order of every
 * sortable dtype by value (long double), a stable qsort argsort, random
 * keys with ties and special values, array upload/download, and the
 * prelude that runs the CUDA provider's kernels on the CPU backend. */
#ifndef KILN_TEST_SORT_REFERENCE_H
#define KILN_TEST_SORT_REFERENCE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

/* ---------------------------------------------------------------- host reference */

static inline float half_to_float(uint16_t h) {
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0    ? ldexpf((float)m, -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : ldexpf((float)(m | 1024), e - 25);
    return sign ? -v : v;
}

/* The value of element i of raw as long double; *nan set for NaN. */
static inline long double value_of(kiln_dtype t, const void *raw, int64_t i, int *nan) {
    *nan = 0;
    const unsigned char *p = (const unsigned char *)raw + i * (int64_t)kiln_dtype_size(t);
    long double v = 0;
    switch (t) {
    case KILN_BOOL: v = *p != 0; break;
    case KILN_INT8: v = *(const int8_t *)p; break;
    case KILN_INT16: v = *(const int16_t *)p; break;
    case KILN_INT32: v = *(const int32_t *)p; break;
    case KILN_INT64: v = (long double)*(const int64_t *)p; break;
    case KILN_UINT8: v = *p; break;
    case KILN_UINT16: v = *(const uint16_t *)p; break;
    case KILN_UINT32: v = *(const uint32_t *)p; break;
    case KILN_UINT64: v = (long double)*(const uint64_t *)p; break;
    case KILN_FLOAT16: v = half_to_float(*(const uint16_t *)p); break;
    case KILN_BFLOAT16: {
        uint32_t b = (uint32_t) * (const uint16_t *)p << 16;
        float f;
        memcpy(&f, &b, 4);
        v = f;
        break;
    }
    case KILN_FLOAT32: v = *(const float *)p; break;
    case KILN_FLOAT64: v = *(const double *)p; break;
    default: break;
    }
    *nan = isnan(v);
    return v;
}

/* NumPy's order of two elements: -1, 0, 1 (NaN after everything, NaNs equal). */
static inline int order(kiln_dtype t, const void *raw, int64_t i, int64_t j) {
    int ni, nj;
    long double a = value_of(t, raw, i, &ni), b = value_of(t, raw, j, &nj);
    if (ni || nj) return ni - nj;
    return a < b ? -1 : a > b;
}

static struct {
    kiln_dtype t;
    const void *raw;
    int desc;
} ref_ctx;

static inline int ref_cmp(const void *x, const void *y) {
    int64_t i = *(const int64_t *)x, j = *(const int64_t *)y;
    int c = order(ref_ctx.t, ref_ctx.raw, i, j);
    if (ref_ctx.desc) c = -c;
    return c ? c : (i > j) - (i < j); /* ties by index: stable */
}

/* perm[0, n): the stable sort of raw[0, n) (indices relative to raw). */
static inline void ref_argsort(kiln_dtype t, const void *raw, int64_t n, int desc, int64_t *perm) {
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    ref_ctx.t = t, ref_ctx.raw = raw, ref_ctx.desc = desc;
    qsort(perm, (size_t)n, sizeof *perm, ref_cmp);
}

/* Random elements with ties, and for floats NaNs of both signs and
 * payloads, infinities, -0.0 and +0.0. */
static inline void fill_random(test_rng *r, kiln_dtype t, void *raw, int64_t n) {
    size_t w = kiln_dtype_size(t);
    unsigned char *p = raw;
    unsigned char pool[16][8];
    for (int k = 0; k < 16; k++)
        for (size_t b = 0; b < 8; b++) pool[k][b] = (unsigned char)(test_uniform(r, 0, 256));
    for (int64_t i = 0; i < n; i++) {
        unsigned char *e = p + i * (int64_t)w;
        double u = test_uniform(r, 0, 1);
        if (u < 0.3)
            memcpy(e, pool[(int)test_uniform(r, 0, 16)], w);
        else
            for (size_t b = 0; b < w; b++) e[b] = (unsigned char)test_uniform(r, 0, 256);
        if (t == KILN_BOOL) *e &= 1;
        if (t == KILN_FLOAT32 && u > 0.9) {
            static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f};
            float f = sp[(int)test_uniform(r, 0, 8)];
            memcpy(e, &f, 4);
        }
        if (t == KILN_FLOAT64 && u > 0.9) {
            static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1.0, -1.0};
            double f = sp[(int)test_uniform(r, 0, 8)];
            memcpy(e, &f, 8);
        }
        if ((t == KILN_FLOAT16 || t == KILN_BFLOAT16) && u > 0.9) {
            static const uint16_t h16[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x3c00, 0xbc00};
            static const uint16_t b16[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x3f80, 0xbf80};
            uint16_t h = (t == KILN_FLOAT16 ? h16 : b16)[(int)test_uniform(r, 0, 8)];
            memcpy(e, &h, 2);
        }
    }
}

static inline kiln_array *upload(kiln_context *ctx, kiln_dtype t, int nd, const int64_t *shape,
                                 const void *raw) {
    kiln_array *a = NULL;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    TEST_OK(kiln_array_from_host(ctx, t, nd, shape, raw, (size_t)n * kiln_dtype_size(t), &a));
    return a;
}

static inline void *download(kiln_array *a) {
    size_t bytes = kiln_array_nbytes(a);
    void *h = malloc(bytes ? bytes : 1);
    assert_non_null(h);
    TEST_OK(kiln_array_to_host(a, h, bytes));
    return h;
}

/* ---------------------------------------------------------------- the CUDA provider on the CPU */

/* __match_any_sync made of shuffles: the prelude under which the CUDA
 * provider's kernels run on the CPU backend in the tests. */
static const char match_any_by_shuffles[] =
    "__device__ inline unsigned kiln_test_match_any(unsigned mask, unsigned v) {\n"
    "    unsigned r = 0;\n"
    "    for (int l = 0; l < 32; l++) r |= (__shfl_sync(mask, v, l) == v ? 1u : 0u) << l;\n"
    "    return r;\n"
    "}\n"
    "#define __match_any_sync kiln_test_match_any\n";

#endif
