/* test_sort.c: kiln's sorting (src/sort) against a stable qsort reference on
 * random inputs of every sortable dtype: NumPy's order (NaN last, -0.0 equal
 * to +0.0, ties in input order), axes of strided views, pairs, segments
 * with empty ones, topk, unique and searchsorted as NumPy documents them,
 * the errors, and the CUDA kernels compiled through NVRTC for sm_90.
 * Runs on the backend of KILN_TEST_TARGET (test_open). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"
#include "sort/sort.h"
#include "sort_reference.h"
#include "test_support.h"

static const kiln_dtype sortable[] = {KILN_BOOL,     KILN_INT8,    KILN_INT16,  KILN_INT32,  KILN_INT64,
                                      KILN_UINT8,    KILN_UINT16,  KILN_UINT32, KILN_UINT64, KILN_FLOAT16,
                                      KILN_BFLOAT16, KILN_FLOAT32, KILN_FLOAT64};
#define NSORTABLE (sizeof sortable / sizeof sortable[0])

/* ---------------------------------------------------------------- sort and argsort */

static void check_one(kiln_context *ctx, kiln_dtype t, int64_t n, int desc, test_rng *r) {
    size_t w = kiln_dtype_size(t);
    unsigned char *raw = malloc(w * (size_t)n + 1);
    int64_t *perm = malloc(sizeof *perm * (size_t)n + 1);
    fill_random(r, t, raw, n);
    ref_argsort(t, raw, n, desc, perm);
    kiln_array *a = upload(ctx, t, 1, &n, raw), *s = NULL, *idx = NULL;
    int flags = desc ? KILN_SORT_DESCENDING : 0;
    TEST_OK(kiln_sort(a, 0, flags, NULL, NULL, &s));
    TEST_OK(kiln_argsort(a, -1, flags, NULL, NULL, &idx));
    assert_int_equal(kiln_array_dtype(idx), KILN_INT64);
    unsigned char *got = download(s);
    int64_t *gi = download(idx);
    for (int64_t i = 0; i < n; i++) {
        if (gi[i] != perm[i])
            fail_msg("%s n=%lld %s: argsort[%lld] = %lld, expected %lld", kiln_dtype_name(t), (long long)n,
                     desc ? "descending" : "ascending", (long long)i, (long long)gi[i], (long long)perm[i]);
        /* the very bits of the input element: -0.0 and NaN payloads kept */
        if (memcmp(got + (size_t)i * w, raw + (size_t)perm[i] * w, w) != 0)
            fail_msg("%s n=%lld %s: sort[%lld] is not input element %lld", kiln_dtype_name(t), (long long)n,
                     desc ? "descending" : "ascending", (long long)i, (long long)perm[i]);
    }
    free(got);
    free(gi);
    free(raw);
    free(perm);
    kiln_array_release(a);
    kiln_array_release(s);
    kiln_array_release(idx);
}

static void test_every_dtype(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for("sort_every_dtype");
    /* 1000: one tile on CUDA, a merge sort on the CPU; 40000: many tiles, the CPU's radix sort */
    for (size_t k = 0; k < NSORTABLE; k++)
        for (int desc = 0; desc < 2; desc++) {
            check_one(ctx, sortable[k], 1000, desc, &r);
            check_one(ctx, sortable[k], 40000, desc, &r);
        }
    check_one(ctx, KILN_FLOAT32, 1 << 20, 0, &r);
    check_one(ctx, KILN_INT64, 300001, 1, &r);
    check_one(ctx, KILN_UINT32, 1, 0, &r);
    check_one(ctx, KILN_UINT32, 0, 0, &r);
}

static void test_nan_and_zeros(void **state) {
    kiln_context *ctx = *state;
    const float x[] = {NAN, 1.0f, -0.0f, 0.0f, -NAN, -INFINITY, -0.0f, 2.0f, INFINITY, 0.0f};
    int64_t n = 10;
    kiln_array *a = upload(ctx, KILN_FLOAT32, 1, &n, x), *s = NULL, *idx = NULL;
    TEST_OK(kiln_sort(a, 0, 0, NULL, NULL, &s));
    TEST_OK(kiln_argsort(a, 0, 0, NULL, NULL, &idx));
    int64_t *gi = download(idx);
    /* np.argsort(x, kind="stable") */
    const int64_t want[] = {5, 2, 3, 6, 9, 1, 7, 8, 0, 4};
    for (int i = 0; i < 10; i++) assert_int_equal(gi[i], want[i]);
    float *g = download(s);
    assert_true(signbit(g[1]) && !signbit(g[2]) && signbit(g[3]) && !signbit(g[4]));
    assert_true(isnan(g[8]) && isnan(g[9]) && !signbit(g[8]) && signbit(g[9]));
    kiln_array_release(idx);
    /* descending: the exact reverse order, ties in input order: NaN first */
    TEST_OK(kiln_argsort(a, 0, KILN_SORT_DESCENDING, NULL, NULL, &idx));
    int64_t *gd = download(idx);
    const int64_t want_desc[] = {0, 4, 8, 7, 1, 2, 3, 6, 9, 5};
    for (int i = 0; i < 10; i++) assert_int_equal(gd[i], want_desc[i]);
    free(gi), free(gd), free(g);
    kiln_array_release(a), kiln_array_release(s), kiln_array_release(idx);
}

/* Every axis of a 3-d array, of a transposed and sliced view, into a new
 * array, a given strided out, and in place. */
static void test_axes_and_views(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for("sort_axes");
    int64_t shape[3] = {6, 7, 40}, n = 6 * 7 * 40;
    double *h = malloc(sizeof *h * (size_t)n);
    for (int64_t i = 0; i < n; i++) h[i] = floor(test_uniform(&r, -20, 20)); /* ties */
    kiln_array *base = upload(ctx, KILN_FLOAT64, 3, shape, h), *t = NULL, *v = NULL;
    const int axes[3] = {2, 0, 1};
    TEST_OK(kiln_array_transpose(base, axes, &t)); /* (40, 6, 7), strided */
    TEST_OK(kiln_array_slice(t, 0, 3, 40, 2, &v)); /* (19, 6, 7) */
    const int64_t vs[3] = {19, 6, 7};
    for (int axis = -1; axis < 3; axis++) {
        int ax = axis < 0 ? 2 : axis;
        kiln_array *s = NULL, *idx = NULL;
        TEST_OK(kiln_sort(v, axis, 0, NULL, NULL, &s));
        TEST_OK(kiln_argsort(v, axis, 0, NULL, NULL, &idx));
        for (int d = 0; d < 3; d++) assert_int_equal(kiln_array_shape(s)[d], vs[d]);
        double *gs = download(s);
        int64_t *gi = download(idx);
        /* every line along ax: gather the view's values, sort on the host */
        int64_t len = vs[ax], lines = 19 * 6 * 7 / len;
        for (int64_t line = 0; line < lines; line++) {
            int64_t c[3], q = line, at[64];
            double vals[64];
            for (int d = 2; d >= 0; d--) {
                if (d == ax) continue;
                c[d] = q % vs[d];
                q /= vs[d];
            }
            for (int64_t j = 0; j < len; j++) {
                c[ax] = j;
                /* view (i0, i1, i2) is base[i1][i2][3 + 2 * i0] */
                vals[j] = h[(c[1] * 7 + c[2]) * 40 + 3 + 2 * c[0]];
                at[j] = (c[0] * 6 + c[1]) * 7 + c[2];
            }
            int64_t perm[64];
            ref_argsort(KILN_FLOAT64, vals, len, 0, perm);
            for (int64_t j = 0; j < len; j++) {
                c[ax] = j;
                int64_t o = (c[0] * 6 + c[1]) * 7 + c[2];
                if (gi[o] != perm[j] || gs[o] != vals[perm[j]])
                    fail_msg("axis %d line %lld place %lld: got index %lld value %g, expected %lld (%g)",
                             axis, (long long)line, (long long)j, (long long)gi[o], gs[o], (long long)perm[j],
                             vals[perm[j]]);
            }
            (void)at;
        }
        /* a given out (strided: a transposed view) and in place give the same */
        kiln_array *o3 = NULL, *ov = NULL, *cp = NULL;
        const int back[3] = {1, 2, 0};
        int64_t os[3] = {vs[1], vs[2], vs[0]};
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT64, 3, os, &o3));
        TEST_OK(kiln_array_transpose(o3, (const int[]){2, 0, 1}, &ov));
        TEST_OK(kiln_sort(v, axis, 0, ov, NULL, NULL));
        TEST_OK(kiln_array_copy(v, &cp));
        TEST_OK(kiln_sort(cp, axis, 0, cp, NULL, NULL));
        double *go = download(ov), *gc = download(cp);
        (void)back;
        kiln_array *ovc = NULL;
        TEST_OK(kiln_array_copy(ov, &ovc));
        double *goc = download(ovc);
        assert_memory_equal(goc, gs, sizeof(double) * 19 * 6 * 7);
        assert_memory_equal(gc, gs, sizeof(double) * 19 * 6 * 7);
        free(go), free(gc), free(goc), free(gs), free(gi);
        kiln_array_release(s), kiln_array_release(idx), kiln_array_release(o3), kiln_array_release(ov);
        kiln_array_release(cp), kiln_array_release(ovc);
    }
    /* the flattened array */
    kiln_array *f = NULL;
    TEST_OK(kiln_sort(v, KILN_AXIS_FLAT, 0, NULL, NULL, &f));
    assert_int_equal(kiln_array_ndim(f), 1);
    assert_int_equal(kiln_array_shape(f)[0], 19 * 6 * 7);
    double *gf = download(f);
    for (int64_t i = 1; i < 19 * 6 * 7; i++) assert_true(gf[i - 1] <= gf[i]);
    free(gf);
    kiln_array_release(f);
    free(h);
    kiln_array_release(base), kiln_array_release(t), kiln_array_release(v);
}

/* ---------------------------------------------------------------- pairs and segments */

static void test_pairs(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for("sort_pairs");
    const int64_t sizes[] = {777, 50000};
    for (int z = 0; z < 2; z++) {
        int64_t n = sizes[z];
        int32_t *k = malloc(4 * (size_t)n);
        double *v = malloc(8 * (size_t)n);
        uint8_t *b = malloc((size_t)n);
        for (int64_t i = 0; i < n; i++) {
            k[i] = (int32_t)floor(test_uniform(&r, -50, 50));
            v[i] = (double)i + 0.5;
            b[i] = (uint8_t)i;
        }
        int64_t *perm = malloc(8 * (size_t)n);
        ref_argsort(KILN_INT32, k, n, 1, perm);
        kiln_array *ka = upload(ctx, KILN_INT32, 1, &n, k), *va = upload(ctx, KILN_FLOAT64, 1, &n, v);
        kiln_array *ba = upload(ctx, KILN_UINT8, 1, &n, b), *ks = NULL, *vs = NULL, *bs = NULL;
        TEST_OK(kiln_sort_pairs(ka, va, 0, KILN_SORT_DESCENDING, NULL, NULL, NULL, &ks, &vs));
        int32_t *gk = download(ks);
        double *gv = download(vs);
        for (int64_t i = 0; i < n; i++) {
            assert_int_equal(gk[i], k[perm[i]]);
            assert_true(gv[i] == v[perm[i]]);
        }
        kiln_array_release(ks);
        TEST_OK(kiln_sort_pairs(ka, ba, 0, KILN_SORT_DESCENDING, NULL, NULL, NULL, &ks, &bs));
        uint8_t *gb = download(bs);
        for (int64_t i = 0; i < n; i++) assert_int_equal(gb[i], b[perm[i]]);
        free(k), free(v), free(b), free(perm), free(gk), free(gv), free(gb);
        kiln_array_release(ka), kiln_array_release(va), kiln_array_release(ba);
        kiln_array_release(ks), kiln_array_release(vs), kiln_array_release(bs);
    }
}

static void check_segments(kiln_context *ctx, test_rng *r, const int64_t *off, int64_t m, int desc) {
    int64_t n = off[m - 1];
    float *k = malloc(4 * (size_t)n + 4);
    int64_t *v = malloc(8 * (size_t)n + 8);
    fill_random(r, KILN_FLOAT32, k, n);
    for (int64_t i = 0; i < n; i++) v[i] = i;
    kiln_array *ka = upload(ctx, KILN_FLOAT32, 1, &n, k), *va = upload(ctx, KILN_INT64, 1, &n, v);
    kiln_array *oa = upload(ctx, KILN_INT64, 1, &m, off), *ks = NULL, *vs = NULL;
    TEST_OK(kiln_sort_segments(ka, va, oa, desc ? KILN_SORT_DESCENDING : 0, NULL, NULL, NULL, &ks, &vs));
    float *gk = download(ks);
    int64_t *gv = download(vs), *perm = malloc(8 * (size_t)n + 8);
    for (int64_t s = 0; s + 1 < m; s++) {
        int64_t lo = off[s], len = off[s + 1] - lo;
        ref_argsort(KILN_FLOAT32, k + lo, len, desc, perm);
        for (int64_t j = 0; j < len; j++) {
            if (gv[lo + j] != lo + perm[j] || memcmp(&gk[lo + j], &k[lo + perm[j]], 4) != 0)
                fail_msg("segment %lld [%lld, %lld) place %lld: value %lld, expected %lld", (long long)s,
                         (long long)lo, (long long)(lo + len), (long long)j, (long long)gv[lo + j],
                         (long long)(lo + perm[j]));
        }
    }
    free(k), free(v), free(gk), free(gv), free(perm);
    kiln_array_release(ka), kiln_array_release(va), kiln_array_release(oa);
    kiln_array_release(ks), kiln_array_release(vs);
}

static void test_segments(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for("sort_segments");
    /* empty segments first, between and last; one segment long enough for the radix paths */
    const int64_t a[] = {0, 0, 5, 5, 5, 40, 41, 20041, 20100, 20100};
    check_segments(ctx, &r, a, 10, 0);
    check_segments(ctx, &r, a, 10, 1);
    /* many short segments: the merge sorts (CPU), the segment-number pass (CUDA) */
    int64_t many[302];
    many[0] = 0;
    for (int s = 1; s < 302; s++) many[s] = many[s - 1] + (int64_t)floor(test_uniform(&r, 0, 90));
    check_segments(ctx, &r, many, 302, 0);
    check_segments(ctx, &r, many, 302, 1);
    const int64_t one[] = {0, 1000};
    check_segments(ctx, &r, one, 2, 0);
    const int64_t none[] = {0};
    check_segments(ctx, &r, none, 1, 0);
}

/* ---------------------------------------------------------------- topk, unique, searchsorted */

static void test_topk(void **state) {
    kiln_context *ctx = *state;
    const float x[2][6] = {{3, 1, NAN, 3, -2, 7}, {0, 0, 0, -1, 5, 5}};
    int64_t shape[2] = {2, 6};
    kiln_array *a = upload(ctx, KILN_FLOAT32, 2, shape, x), *v = NULL, *i = NULL;
    TEST_OK(kiln_topk(a, 3, 1, 1, NULL, NULL, NULL, &v, &i));
    assert_int_equal(kiln_array_shape(v)[0], 2);
    assert_int_equal(kiln_array_shape(v)[1], 3);
    float *gv = download(v);
    int64_t *gi = download(i);
    /* largest first, NaN the largest, ties by the lower index */
    const int64_t want_i[2][3] = {{2, 5, 0}, {4, 5, 0}};
    for (int rr = 0; rr < 2; rr++)
        for (int c = 0; c < 3; c++) {
            assert_int_equal(gi[rr * 3 + c], want_i[rr][c]);
            float e = x[rr][want_i[rr][c]];
            assert_true(isnan(e) ? isnan(gv[rr * 3 + c]) : gv[rr * 3 + c] == e);
        }
    free(gv), free(gi);
    kiln_array_release(v), kiln_array_release(i);
    /* the smallest along axis 0 */
    TEST_OK(kiln_topk(a, 1, 0, 0, NULL, NULL, NULL, &v, &i));
    gi = download(i);
    const int64_t want0[6] = {1, 1, 1, 1, 0, 1};
    for (int c = 0; c < 6; c++) assert_int_equal(gi[c], want0[c]);
    free(gi);
    kiln_array_release(v), kiln_array_release(i);
    TEST_OK(kiln_topk(a, 0, 1, 1, NULL, NULL, NULL, &v, &i));
    assert_int_equal(kiln_array_size(v), 0);
    kiln_array_release(v), kiln_array_release(i);
    TEST_FAILS_WITH(kiln_topk(a, 7, 1, 1, NULL, NULL, NULL, &v, &i), KILN_ERR_INVALID_ARGUMENT,
                    "k is 7 but the axis has 6 elements");
    kiln_array_release(a);
}

static void test_unique(void **state) {
    kiln_context *ctx = *state;
    const double x[] = {2, NAN, -0.0, 1, 2, 0.0, NAN, 1, 1, -5};
    int64_t n = 10;
    kiln_array *a = upload(ctx, KILN_FLOAT64, 1, &n, x), *v = NULL, *idx = NULL, *inv = NULL, *cnt = NULL;
    TEST_OK(kiln_unique(a, NULL, &v, &idx, &inv, &cnt));
    /* np.unique(x, return_index=True, return_inverse=True, return_counts=True) */
    assert_int_equal(kiln_array_size(v), 5);
    double *gv = download(v);
    int64_t *gx = download(idx), *gn = download(inv), *gc = download(cnt);
    const double want_v[] = {-5, -0.0, 1, 2, NAN};
    const int64_t want_x[] = {9, 2, 3, 0, 1}, want_c[] = {1, 2, 3, 2, 2};
    const int64_t want_n[] = {3, 4, 1, 2, 3, 1, 4, 2, 2, 0};
    for (int i = 0; i < 4; i++) assert_true(gv[i] == want_v[i]);
    assert_true(signbit(gv[1]) && isnan(gv[4]));
    for (int i = 0; i < 5; i++) {
        assert_int_equal(gx[i], want_x[i]);
        assert_int_equal(gc[i], want_c[i]);
    }
    for (int i = 0; i < 10; i++) assert_int_equal(gn[i], want_n[i]);
    free(gv), free(gx), free(gn), free(gc);
    kiln_array_release(v), kiln_array_release(idx), kiln_array_release(inv), kiln_array_release(cnt);
    kiln_array_release(a);
    /* random int16 against a host count, values only */
    test_rng r = test_rng_for("sort_unique");
    int64_t m = 30000;
    int16_t *h = malloc(2 * (size_t)m);
    for (int64_t i = 0; i < m; i++) h[i] = (int16_t)floor(test_uniform(&r, -3000, 3000));
    int64_t seen_n = 0;
    char *seen = calloc(6001, 1);
    for (int64_t i = 0; i < m; i++) seen_n += !seen[h[i] + 3000]++;
    a = upload(ctx, KILN_INT16, 1, &m, h);
    TEST_OK(kiln_unique(a, NULL, &v, NULL, NULL, &cnt));
    assert_int_equal(kiln_array_size(v), seen_n);
    int16_t *g = download(v);
    int64_t *c = download(cnt);
    for (int64_t i = 0, j = 0; i < 6001; i++)
        if (seen[i]) {
            assert_int_equal(g[j], i - 3000);
            assert_int_equal(c[j],
                             (unsigned char)seen[i] ? c[j] : -1); /* counts can pass 255: checked below */
            j++;
        }
    int64_t total = 0;
    for (int64_t j = 0; j < seen_n; j++) total += c[j];
    assert_int_equal(total, m);
    free(g), free(c), free(h), free(seen);
    kiln_array_release(a), kiln_array_release(v), kiln_array_release(cnt);
}

static void test_searchsorted(void **state) {
    kiln_context *ctx = *state;
    const float s[] = {-1, 0, 0, 2, 2, 2, 5, NAN};
    const float q[2][4] = {{2, -3, 0, NAN}, {-0.0f, 9, 5, 1}};
    int64_t n = 8, qs[2] = {2, 4};
    kiln_array *sa = upload(ctx, KILN_FLOAT32, 1, &n, s), *qa = upload(ctx, KILN_FLOAT32, 2, qs, q),
               *res = NULL;
    TEST_OK(kiln_searchsorted(sa, qa, KILN_SIDE_LEFT, 0, NULL, NULL, &res));
    assert_int_equal(kiln_array_ndim(res), 2);
    int64_t *g = download(res);
    const int64_t left[8] = {3, 0, 1, 7, 1, 7, 6, 3}, right[8] = {6, 0, 3, 8, 3, 7, 7, 3};
    for (int i = 0; i < 8; i++) assert_int_equal(g[i], left[i]);
    free(g);
    kiln_array_release(res);
    TEST_OK(kiln_searchsorted(sa, qa, KILN_SIDE_RIGHT, 0, NULL, NULL, &res));
    g = download(res);
    for (int i = 0; i < 8; i++) assert_int_equal(g[i], right[i]);
    free(g);
    kiln_array_release(res);
    /* descending: a sorted descending array; random queries against a linear count */
    test_rng r = test_rng_for("sort_search");
    int64_t m = 5000, nq = 3000;
    int32_t *d = malloc(4 * (size_t)m), *vq = malloc(4 * (size_t)nq);
    for (int64_t i = 0; i < m; i++) d[i] = (int32_t)floor(test_uniform(&r, -1000, 1000));
    for (int64_t i = 0; i < nq; i++) vq[i] = (int32_t)floor(test_uniform(&r, -1100, 1100));
    kiln_array *da = upload(ctx, KILN_INT32, 1, &m, d), *ds = NULL, *va = upload(ctx, KILN_INT32, 1, &nq, vq);
    TEST_OK(kiln_sort(da, 0, KILN_SORT_DESCENDING, NULL, NULL, &ds));
    TEST_OK(kiln_searchsorted(ds, va, KILN_SIDE_LEFT, KILN_SORT_DESCENDING, NULL, NULL, &res));
    g = download(res);
    for (int64_t i = 0; i < nq; i++) {
        int64_t above = 0; /* a descending array: the place after every larger element */
        for (int64_t j = 0; j < m; j++) above += d[j] > vq[i];
        assert_int_equal(g[i], above);
    }
    free(g), free(d), free(vq);
    kiln_array_release(res), kiln_array_release(ds), kiln_array_release(va);
    TEST_FAILS_WITH(kiln_searchsorted(sa, da, KILN_SIDE_LEFT, 0, NULL, NULL, &res), KILN_ERR_DTYPE,
                    "v is int32 but the sorted array is float32");
    kiln_array_release(da), kiln_array_release(sa), kiln_array_release(qa);
}

/* ---------------------------------------------------------------- errors */

static void test_errors(void **state) {
    kiln_context *ctx = *state;
    int64_t n = 10, two[2] = {2, 5}, m = 3;
    kiln_array *a = NULL, *c = NULL, *b = NULL, *o32 = NULL, *o64 = NULL, *r = NULL, *r2 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &a));
    TEST_OK(kiln_array_zeros(ctx, KILN_COMPLEX64, 1, &n, &c));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 2, two, &b));
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &m, &o32));
    const int64_t bad_off[3] = {0, 7, 5};
    o64 = upload(ctx, KILN_INT64, 1, &m, bad_off);
    TEST_FAILS_WITH(kiln_sort(c, 0, 0, NULL, NULL, &r), KILN_ERR_DTYPE, "complex64");
    TEST_FAILS_WITH(kiln_sort(a, 1, 0, NULL, NULL, &r), KILN_ERR_INVALID_ARGUMENT, "axis 1 is out of range");
    TEST_FAILS_WITH(kiln_sort(a, 0, 0, NULL, NULL, NULL), KILN_ERR_INVALID_ARGUMENT, "give an output array");
    TEST_FAILS_WITH(kiln_sort(a, 0, 0, b, NULL, NULL), KILN_ERR_SHAPE, "out has shape (2, 5)");
    TEST_FAILS_WITH(kiln_argsort(a, 0, 0, a, NULL, NULL), KILN_ERR_DTYPE,
                    "out is float32 but the result is int64");
    TEST_FAILS_WITH(kiln_sort_pairs(a, b, 0, 0, NULL, NULL, NULL, &r, &r2), KILN_ERR_SHAPE,
                    "the values have shape (2, 5) but the keys (10,)");
    TEST_FAILS_WITH(kiln_sort_segments(a, NULL, o32, 0, NULL, NULL, NULL, &r, NULL), KILN_ERR_DTYPE,
                    "offsets are int32; they must be int64");
    TEST_FAILS_WITH(kiln_sort_segments(a, NULL, o64, 0, NULL, NULL, NULL, &r, NULL),
                    KILN_ERR_INVALID_ARGUMENT, "offsets[2] is 5, below offsets[1] = 7");
    TEST_FAILS_WITH(kiln_sort_segments(b, NULL, o64, 0, NULL, NULL, NULL, &r, NULL), KILN_ERR_SHAPE,
                    "the keys must be 1-d");
    const int64_t short_off[3] = {0, 2, 9};
    kiln_array *o9 = upload(ctx, KILN_INT64, 1, &m, short_off);
    TEST_FAILS_WITH(kiln_sort_segments(a, NULL, o9, 0, NULL, NULL, NULL, &r, NULL), KILN_ERR_INVALID_ARGUMENT,
                    "the last offset is 9 but the keys have 10 elements");
    TEST_FAILS_WITH(kiln_topk(a, -1, 0, 1, NULL, NULL, NULL, &r, &r2), KILN_ERR_INVALID_ARGUMENT, "k is -1");
    TEST_FAILS_WITH(kiln_unique(c, NULL, &r, NULL, NULL, NULL), KILN_ERR_DTYPE, "complex64");
    TEST_FAILS_WITH(kiln_searchsorted(b, a, KILN_SIDE_LEFT, 0, NULL, NULL, &r), KILN_ERR_SHAPE,
                    "must be 1-d");
    assert_null(r);
    kiln_array_release(a), kiln_array_release(c), kiln_array_release(b), kiln_array_release(o32);
    kiln_array_release(o64), kiln_array_release(o9);
}

/* ---------------------------------------------------------------- the CUDA kernels through NVRTC */

extern const char kiln_embedded_sort_gpu[];

/* One NVRTC build of the CUDA provider's module for keys of dtype with
 * values of value_bytes; *skipped when there is no NVRTC here. */
static void compile_sort_module(kiln_dtype dtype, size_t value_bytes, int status64, int *skipped) {
    char defines[96];
    size_t kb = kiln_dtype_size(dtype), x = kb > value_bytes ? kb : value_bytes;
    int base = status64 ? 32 : 16, items = x <= 4 ? base : x == 8 ? base / 2 : base / 4;
    /* the default tile, and KILN_SORT_TILE_ITEMS's largest */
    snprintf(defines, sizeof defines, "#define KILN_SG_ITEMS %d\n#define KILN_SG_STATUS64 %d\n", items,
             status64);
    char *src = sort_module_source(dtype, value_bytes, defines, kiln_embedded_sort_gpu), *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "kiln-sort.cu", NULL, &log);
    free(src);
    if (s == KILN_ERR_COMPILER_MISSING) *skipped = 1;
    if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING)
        fail_msg("%s keys, %zu-byte values: %s\n%s", kiln_dtype_name(dtype), value_bytes, kiln_last_error(),
                 log ? log : "");
    kiln_free(log);
}

static void test_cuda_kernels_compile(void **state) {
    (void)state;
    /* every key width and kind, with and without values, both look-back word sizes */
    const kiln_dtype keys[] = {KILN_UINT8,   KILN_INT16, KILN_FLOAT16, KILN_BFLOAT16,
                               KILN_FLOAT32, KILN_INT64, KILN_FLOAT64};
    const size_t values[] = {0, 4, 16};
    int skipped = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !skipped; k++)
        for (size_t v = 0; v < 3 && !skipped; v++)
            compile_sort_module(keys[k], values[v], (int)(k % 2), &skipped);
    /* the other dtypes (their own width and kind pairs), each with one of
     * the value widths not above: every module a sort call can ask for is
     * one of these up to the tile size */
    const kiln_dtype more[] = {KILN_INT8, KILN_UINT16, KILN_INT32, KILN_UINT32, KILN_UINT64, KILN_BOOL};
    const size_t more_values[] = {1, 2, 8, 1, 2, 8};
    for (size_t k = 0; k < sizeof more / sizeof more[0] && !skipped; k++)
        compile_sort_module(more[k], more_values[k], (int)(k % 2), &skipped);
    if (skipped) skip();
}

/* The CUDA provider's kernels (onesweep passes, look-back, the many-sequence
 * path) run on the CPU backend, so that their logic is checked where there
 * is no GPU: a copy of the provider serving the CPU, with __match_any_sync
 * made of shuffles (sort_reference.h). Blocks there run on worker threads at
 * once, so a tile's look-back finds the tiles before it running or done, as
 * on a GPU. */
static void test_cuda_kernels_on_cpu(void **state) {
    kiln_context *ctx = *state;
    if (kiln_context_backend(ctx) != KILN_BACKEND_CPU) skip(); /* on a GPU the suite runs them for real */
    sort_provider p = kiln_sort_cuda_provider;
    p.base.backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU);
    p.kernel_prelude = match_any_by_shuffles;
    test_rng r = test_rng_for("sort_cuda_on_cpu");
    /* (dtype, value bytes, n, rows): tiles of 4096, 2048 and 1024 keys; one
     * sequence, a few, many (the sequence-number pass) */
    const struct {
        kiln_dtype t;
        size_t vb;
        int64_t n, rows;
    } cases[] = {{KILN_FLOAT32, 4, 50001, 1}, {KILN_INT64, 8, 30000, 1},   {KILN_FLOAT16, 16, 9000, 1},
                 {KILN_INT8, 0, 5000, 1},     {KILN_FLOAT64, 4, 24000, 3}, {KILN_UINT16, 4, 30000, 300}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t n = cases[c].n, rows = cases[c].rows, len = n / rows;
        size_t w = kiln_dtype_size(cases[c].t), vb = cases[c].vb;
        int64_t vs = vb ? (int64_t)vb : 1; /* each value: its index's bytes, repeated */
        unsigned char *raw = malloc(w * (size_t)n), *val = malloc((size_t)(vs * n));
        fill_random(&r, cases[c].t, raw, n);
        for (int64_t i = 0; i < n; i++)
            for (int64_t b = 0; b < vs; b++) val[i * vs + b] = (unsigned char)(i >> (8 * (b % 4)));
        kiln_array *k = upload(ctx, cases[c].t, 1, &n, raw), *ko = NULL, *v = NULL, *vo = NULL;
        int64_t vbytes = n * vs;
        v = upload(ctx, KILN_UINT8, 1, &vbytes, val);
        TEST_OK(kiln_array_empty(ctx, cases[c].t, 1, &n, &ko));
        TEST_OK(kiln_array_empty(ctx, KILN_UINT8, 1, &vbytes, &vo));
        int desc = (int)(c % 2);
        sort_job j = {.dtype = cases[c].t,
                      .descending = desc,
                      .n = n,
                      .rows = rows,
                      .len = len,
                      .keys_in = kiln_array_data(k),
                      .keys_out = kiln_array_data(ko),
                      .values_in = kiln_array_data(v),
                      .values_out = kiln_array_data(vo),
                      .value_bytes = vb};
        TEST_OK(p.sort(ctx, &p, &j));
        unsigned char *gk = download(ko), *gv = download(vo);
        int64_t *perm = malloc(8 * (size_t)len);
        for (int64_t row = 0; row < rows; row++) {
            ref_argsort(cases[c].t, raw + row * len * (int64_t)w, len, desc, perm);
            for (int64_t i = 0; i < len; i++) {
                int64_t at = row * len + i, from = row * len + perm[i];
                if (memcmp(gk + at * (int64_t)w, raw + from * (int64_t)w, w) != 0 ||
                    (vb && memcmp(gv + at * vs, val + from * vs, vb) != 0))
                    fail_msg("%s, %zu-byte values, n %lld, %lld rows: place %lld is not element %lld",
                             kiln_dtype_name(cases[c].t), vb, (long long)n, (long long)rows, (long long)at,
                             (long long)from);
            }
        }
        free(raw), free(val), free(gk), free(gv), free(perm);
        kiln_array_release(k), kiln_array_release(ko), kiln_array_release(v), kiln_array_release(vo);
    }
    /* segments by offsets, empty ones among them: the sequence numbers by binary search */
    int64_t off[41], m = 41;
    off[0] = 0;
    for (int q = 1; q < 41; q++)
        off[q] = off[q - 1] + (q % 5 == 0 ? 0 : (int64_t)floor(test_uniform(&r, 0, 300)));
    int64_t n = off[40];
    float *k = malloc(4 * (size_t)n + 4);
    int64_t *perm = malloc(8 * (size_t)n + 8);
    fill_random(&r, KILN_FLOAT32, k, n);
    kiln_array *ka = upload(ctx, KILN_FLOAT32, 1, &n, k), *oa = upload(ctx, KILN_INT64, 1, &m, off),
               *ko = NULL;
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &ko));
    sort_job j = {.dtype = KILN_FLOAT32,
                  .n = n,
                  .offsets = oa,
                  .offsets_host = off,
                  .nseg = 40,
                  .keys_in = kiln_array_data(ka),
                  .keys_out = kiln_array_data(ko)};
    TEST_OK(p.sort(ctx, &p, &j));
    float *g = download(ko);
    for (int q = 0; q < 40; q++) {
        ref_argsort(KILN_FLOAT32, k + off[q], off[q + 1] - off[q], 0, perm);
        for (int64_t e = 0; e < off[q + 1] - off[q]; e++)
            if (memcmp(&g[off[q] + e], &k[off[q] + perm[e]], 4) != 0)
                fail_msg("segment %d place %lld is not element %lld", q, (long long)e, (long long)perm[e]);
    }
    free(k), free(perm), free(g);
    kiln_array_release(ka), kiln_array_release(oa), kiln_array_release(ko);
}

/* `kiln demo sort` at a small size: checked against qsort. */
static void test_demo(void **state) {
    kiln_example_opts opts = {.size = 20011, .repeat = 3};
    kiln_example_result r;
    memset(&r, 0, sizeof r);
    TEST_OK((kiln_status)kiln_example_find("sort")->run(*state, &opts, &r));
    if (!r.passed) fail_msg("kiln demo sort: %s", r.check);
    assert_int_equal(r.size, 20011);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_dtype),
        cmocka_unit_test(test_nan_and_zeros),
        cmocka_unit_test(test_axes_and_views),
        cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_segments),
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_unique),
        cmocka_unit_test(test_searchsorted),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cuda_kernels_compile),
        cmocka_unit_test(test_cuda_kernels_on_cpu),
        cmocka_unit_test(test_demo),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
