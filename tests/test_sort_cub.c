/* test_sort_cub.c: the CUDA sort through CUB's onesweep kernels
 * (src/sort/sort_cub.c, sort_cub.cuh) and kiln's redo behind it.
 *   - CUB's kernels as kiln instantiates them compile through NVRTC for
 *     sm_90 (a representative set: each key width and kind, each value
 *     width, both orders), and kiln's scanner finds them by the names
 *     sort_cub.c launches them by; kiln's histogram for them compiles too;
 *   - kiln's histogram of floating keys (sort_cub_hist.cuh) counts what
 *     CUB's histogram counts and raises the redo flag exactly when NumPy's
 *     order differs from CUB's, run on the CPU backend;
 *   - kiln's own passes behind CUB's return at once when the flag is clear
 *     and sort when it is set (CPU backend);
 *   - a module that does not build is KILN_ERR_UNSUPPORTED, remembered;
 *   - on a GPU: results of KILN_SORT_GPU=cub and =own against the reference,
 *     with floats that need the redo and floats that do not, and pairs of
 *     more than 2^28 keys (CUB's portions).
 * Runs on the backend of KILN_TEST_TARGET (test_open). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/globals.h"
#include "kernel/kernel_scanner.h"
#include "sort/sort.h"
#include "sort_reference.h"
#include "test_support.h"

/* ---------------------------------------------------------------- compiling CUB's kernels */

extern const char kiln_embedded_sort_cub_hist[];

/* One NVRTC build of CUB's module for sm_90; *skipped when there is no
 * NVRTC. Also: the scanner lists the kernels sort_cub.c asks for, and the
 * policy's global. */
static void compile_cub_module(kiln_dtype dtype, size_t value_bytes, int desc, int *skipped) {
    char *src = sort_cub_module_source(dtype, value_bytes, desc), *log = NULL;
    assert_non_null(src);
    kiln_kernel_list list;
    TEST_OK(kiln_scan_kernels(src, &list));
    for (int i = 0; i < 3; i++)
        if (kiln_kernel_list_find(&list, sort_cub_kernels[i]) < 0)
            fail_msg("kiln's scanner does not find %s in CUB's module", sort_cub_kernels[i]);
    kiln_kernel_list_free(&list);
    kiln_global_list globals;
    TEST_OK(kiln_scan_globals(src, &globals));
    int found = kiln_global_list_find(&globals, "kiln_cub_geometry") >= 0;
    kiln_global_list_free(&globals);
    assert_true(found);
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, "kiln-sort-cub.cu", NULL, &log);
    free(src);
    if (s == KILN_ERR_COMPILER_MISSING) *skipped = 1;
    if (s != KILN_OK && s != KILN_ERR_COMPILER_MISSING)
        fail_msg("CUB's kernels for %s keys, %zu-byte values, %s: %s\n%s", kiln_dtype_name(dtype),
                 value_bytes, desc ? "descending" : "ascending", kiln_last_error(), log ? log : "");
    kiln_free(log);
}

static void test_cub_kernels_compile(void **state) {
    (void)state;
    /* Each CUB module takes seconds in NVRTC, so not all 156 (13 key
     * dtypes x 6 value widths x 2 orders): every key type CUB is given
     * (bool shares unsigned char's), each with one value width, every value
     * width at least once, both orders. The rest differ from these only in
     * template arguments that these already take. */
    const struct {
        kiln_dtype t;
        size_t vb;
        int desc;
    } cases[] = {{KILN_UINT32, 0, 0},   {KILN_FLOAT32, 4, 1}, {KILN_INT64, 8, 0},  {KILN_FLOAT16, 16, 0},
                 {KILN_BFLOAT16, 2, 1}, {KILN_INT8, 1, 0},    {KILN_UINT16, 4, 0}, {KILN_FLOAT64, 0, 1},
                 {KILN_INT32, 4, 0},    {KILN_UINT64, 4, 1},  {KILN_UINT8, 0, 1},  {KILN_INT16, 8, 0}};
    int skipped = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0] && !skipped; c++)
        compile_cub_module(cases[c].t, cases[c].vb, cases[c].desc, &skipped);
    /* kiln's histogram of floating keys, which replaces CUB's for them */
    const kiln_dtype floats[] = {KILN_FLOAT16, KILN_BFLOAT16, KILN_FLOAT32, KILN_FLOAT64};
    for (size_t f = 0; f < 4 && !skipped; f++) {
        char *src = sort_module_source(floats[f], 0, NULL, kiln_embedded_sort_cub_hist), *log = NULL;
        kiln_status st = kiln_compile_only("cuda", "sm_90", src, "kiln-sort.cu", NULL, &log);
        free(src);
        if (st == KILN_ERR_COMPILER_MISSING) skipped = 1;
        if (st != KILN_OK && st != KILN_ERR_COMPILER_MISSING)
            fail_msg("kiln's histogram for CUB, %s keys: %s\n%s", kiln_dtype_name(floats[f]),
                     kiln_last_error(), log ? log : "");
        kiln_free(log);
    }
    if (skipped) skip();
}

/* ---------------------------------------------------------------- kiln's histogram of floating keys */

/* The bits CUB's onesweep takes digits of, for a key of w bytes (float
 * kinds): twiddled, complemented when descending, and -0.0's pattern then
 * +0.0's (cub/block/radix_rank_sort_operations.cuh, ProcessFloatMinusZero). */
static uint64_t bit_ordered(uint64_t u, size_t w, int desc) {
    uint64_t sign = (uint64_t)1 << (8 * w - 1), all = w == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * w)) - 1;
    u = (u & sign) ? ~u & all : u ^ sign;
    u = desc ? ~u & all : u;
    return u == sign - 1 ? sign : u;
}

/* Runs kiln_sort_cub_histogram over raw (n keys of t), checks its counts
 * against the host's, checks what kiln_sort_cub_suspect makes of them
 * (suspect exactly when an infinity or NaN is among the keys, for these
 * keys, none of which is a float32 of 2^127 or more) and that the flags-only
 * run gated by it raises the same flags, and returns whether it asks for
 * the redo. */
static int run_histogram(kiln_context *ctx, kiln_dtype t, const void *raw, int64_t n, int desc) {
    size_t w = kiln_dtype_size(t);
    char *src = sort_module_source(t, 0, NULL, kiln_embedded_sort_cub_hist);
    kiln_kernel *k = NULL, *suspect = NULL;
    TEST_OK(sort_kernel(ctx, src, "kiln_sort_cub_histogram", &k));
    TEST_OK(sort_kernel(ctx, src, "kiln_sort_cub_suspect", &suspect));
    free(src);
    int passes = (int)w;
    int64_t nbins = 256 * passes, two = 2, one = 1;
    kiln_array *keys = upload(ctx, t, 1, &n, raw), *bins = NULL, *flags = NULL, *nan_bits = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT32, 1, &nbins, &bins));
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT32, 1, &two, &flags));
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT64, 1, &one, &nan_bits));
    TEST_OK(
        kiln_launch(k, KILN_DIM(7), KILN_DIM(256), 0, NULL,
                    KILN_ARGS(kiln_ptr(kiln_array_data(keys), KILN_DTYPE_COUNT), kiln_i64(n),
                              kiln_u64(desc ? ~0ull : 0), kiln_arr(bins), kiln_i32(passes), kiln_arr(flags),
                              kiln_arr(nan_bits), kiln_ptr(NULL, KILN_DTYPE_COUNT), kiln_i32(1))));
    unsigned *got = download(bins), *f = download(flags);
    /* the check on the counts, then the gated flags-only read */
    kiln_array *sus = NULL, *flags2 = NULL, *nan2 = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT32, 1, &one, &sus));
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT32, 1, &two, &flags2));
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT64, 1, &one, &nan2));
    TEST_OK(kiln_launch(suspect, KILN_DIM(1), KILN_DIM(32), 0, NULL,
                        KILN_ARGS(kiln_arr(bins), kiln_i32(passes), kiln_arr(sus))));
    TEST_OK(kiln_launch(k, KILN_DIM(5), KILN_DIM(256), 0, NULL,
                        KILN_ARGS(kiln_ptr(kiln_array_data(keys), KILN_DTYPE_COUNT), kiln_i64(n),
                                  kiln_u64(desc ? ~0ull : 0), kiln_arr(bins), kiln_i32(passes),
                                  kiln_arr(flags2), kiln_arr(nan2), kiln_arr(sus), kiln_i32(0))));
    unsigned *got_s = download(sus), *f2 = download(flags2), *bins_after = download(bins);
    int special = 0; /* an infinity or NaN among the keys */
    for (int64_t i = 0; i < n && !special; i++) {
        uint64_t u = 0, sign = (uint64_t)1 << (8 * w - 1);
        memcpy(&u, (const char *)raw + i * (int64_t)w, w);
        uint64_t expo = t == KILN_FLOAT16 ? 0x7c00 : t == KILN_FLOAT32 ? 0x7f800000u : 0x7ff0000000000000ull;
        special = ((u & ~sign) & expo) == expo;
    }
    if ((int)got_s[0] != special)
        fail_msg("%s: suspect %u, but the keys %s an infinity or NaN", kiln_dtype_name(t), got_s[0],
                 special ? "hold" : "hold no");
    if ((special ? f2[0] : 0u) != (special ? f[0] : 0u) || (!special && f2[0]))
        fail_msg("%s: the gated flags-only read raised %#x where the counting one raised %#x",
                 kiln_dtype_name(t), f2[0], f[0]);
    if (memcmp(got, bins_after, (size_t)nbins * 4) != 0)
        fail_msg("%s: the flags-only read changed the counts", kiln_dtype_name(t));
    free(got_s), free(f2), free(bins_after);
    kiln_array_release(sus), kiln_array_release(flags2), kiln_array_release(nan2);
    unsigned *want = calloc((size_t)nbins, sizeof *want);
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = 0;
        memcpy(&u, (const char *)raw + i * (int64_t)w, w);
        uint64_t b = bit_ordered(u, w, desc);
        for (int p = 0; p < passes; p++) want[p * 256 + ((b >> (8 * p)) & 255)]++;
    }
    for (int64_t i = 0; i < nbins; i++)
        if (got[i] != want[i])
            fail_msg("%s: bin %lld of pass %lld counts %u, CUB's histogram %u", kiln_dtype_name(t),
                     (long long)(i % 256), (long long)(i / 256), got[i], want[i]);
    unsigned flag = f[0];
    int redo = (flag & 4u) != 0; /* KILN_SK_REDO: zeros alone never ask */
    free(got), free(f), free(want);
    kiln_array_release(keys), kiln_array_release(bins), kiln_array_release(flags),
        kiln_array_release(nan_bits);
    return redo;
}

static void test_cub_histogram(void **state) {
    kiln_context *ctx = *state;
    test_rng r = test_rng_for("sort_cub_histogram");
    const int64_t n = 30011; /* several blocks of 256 on a grid of 7: strides cross blocks */
    float *x = malloc(4 * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)test_uniform(&r, -1e3, 1e3);
    x[17] = 0.0f; /* +0.0 alone: CUB's order is NumPy's */
    assert_int_equal(run_histogram(ctx, KILN_FLOAT32, x, n, 0), 0);
    x[29000] = NAN, x[5] = NAN; /* one NaN pattern, positive */
    assert_int_equal(run_histogram(ctx, KILN_FLOAT32, x, n, 1), 0);
    x[17] = -0.0f; /* -0.0 alone: still one place for it */
    assert_int_equal(run_histogram(ctx, KILN_FLOAT32, x, n, 0), 0);
    x[18000] = 0.0f; /* -0.0 beside +0.0, far apart: one key to CUB too, no redo */
    assert_int_equal(run_histogram(ctx, KILN_FLOAT32, x, n, 0), 0);
    assert_int_equal(run_histogram(ctx, KILN_FLOAT32, x, n, 1), 0);
    x[18000] = 1.0f;
    uint32_t payload = 0x7fc00001u; /* a NaN of other bits, in another block */
    memcpy(&x[20000], &payload, 4);
    assert_int_equal(run_histogram(ctx, KILN_FLOAT32, x, n, 0), 1);
    x[20000] = 2.0f;
    x[100] = -NAN; /* a negative NaN: CUB puts it first */
    assert_int_equal(run_histogram(ctx, KILN_FLOAT32, x, n, 1), 1);
    free(x);
    /* the other widths: float16 (NaN 0x7e00, -0.0 0x8000), float64 */
    uint16_t *h = malloc(2 * (size_t)n);
    for (int64_t i = 0; i < n; i++) h[i] = (uint16_t)(0x3c00 + (i * 7919) % 0x3000);
    h[3] = 0x7e00, h[9000] = 0x7e00, h[12] = 0x8000;
    assert_int_equal(run_histogram(ctx, KILN_FLOAT16, h, n, 0), 0);
    h[25000] = 0x7e01;
    assert_int_equal(run_histogram(ctx, KILN_FLOAT16, h, n, 1), 1);
    free(h);
    double *d = malloc(8 * (size_t)n);
    for (int64_t i = 0; i < n; i++) d[i] = test_uniform(&r, -1, 1);
    assert_int_equal(run_histogram(ctx, KILN_FLOAT64, d, n, 0), 0);
    d[7] = -0.0, d[8] = 0.0;
    assert_int_equal(run_histogram(ctx, KILN_FLOAT64, d, n, 1), 0);
    d[9] = -NAN;
    assert_int_equal(run_histogram(ctx, KILN_FLOAT64, d, n, 1), 1);
    free(d);
}

/* ---------------------------------------------------------------- kiln's passes behind CUB's */

static void test_redo_only_if(void **state) {
    kiln_context *ctx = *state;
    if (kiln_context_backend(ctx) != KILN_BACKEND_CPU) skip(); /* on a GPU the sorts below check it */
    sort_provider p = kiln_sort_cuda_provider;
    p.base.backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU);
    p.kernel_prelude = match_any_by_shuffles;
    test_rng r = test_rng_for("sort_cub_redo");
    int64_t n = 20000, one = 1;
    float *x = malloc(4 * (size_t)n), *sentinel = malloc(4 * (size_t)n);
    int64_t *perm = malloc(8 * (size_t)n);
    fill_random(&r, KILN_FLOAT32, x, n);
    for (int64_t i = 0; i < n; i++) sentinel[i] = 12345.0f;
    ref_argsort(KILN_FLOAT32, x, n, 1, perm);
    /* flag words (sort_keys.cuh): both zeros seen, no redo (CUB takes them
     * as one key); NaNs CUB would order otherwise, redo */
    const unsigned words[2] = {3u, 4u};
    for (int w = 0; w < 2; w++) {
        kiln_array *k = upload(ctx, KILN_FLOAT32, 1, &n, x),
                   *out = upload(ctx, KILN_FLOAT32, 1, &n, sentinel);
        kiln_array *flag = upload(ctx, KILN_UINT32, 1, &one, &words[w]);
        sort_run run = {.dtype = KILN_FLOAT32,
                        .descending = 1,
                        .passes = 4,
                        .n = n,
                        .kin = kiln_array_data(k),
                        .kout = kiln_array_data(out),
                        .only_if = kiln_array_data(flag)};
        TEST_OK(sort_onesweep_own(ctx, &p, &run, NULL));
        float *got = download(out);
        for (int64_t i = 0; i < n; i++) {
            const void *want = w ? (const void *)&x[perm[i]] : (const void *)&sentinel[i];
            if (memcmp(&got[i], want, 4) != 0)
                fail_msg("flag %u: place %lld is %s", words[w], (long long)i,
                         w ? "not the sorted element" : "written though the flag is clear");
        }
        free(got);
        kiln_array_release(k), kiln_array_release(out), kiln_array_release(flag);
    }
    free(x), free(sentinel), free(perm);
}

/* ---------------------------------------------------------------- a module that does not build */

/* Where CUB's module does not build (on the CPU backend: its host compiler
 * has no CUB), sort_cub_run says so as KILN_ERR_UNSUPPORTED, the status on
 * which the auto path sorts with kiln's kernels, and the next call knows it
 * without compiling again. */
static void test_cub_unusable(void **state) {
    kiln_context *ctx = *state;
    if (kiln_context_backend(ctx) != KILN_BACKEND_CPU) skip();
    int64_t n = 64;
    kiln_array *k = NULL, *o = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT32, 1, &n, &k));
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT32, 1, &n, &o));
    sort_run run = {
        .dtype = KILN_UINT32, .passes = 4, .n = n, .kin = kiln_array_data(k), .kout = kiln_array_data(o)};
    sort_cub_result res;
    TEST_FAILS_WITH(sort_cub_run(ctx, &run, NULL, &res), KILN_ERR_UNSUPPORTED, "not usable here");
    assert_null(res.scratch);
    TEST_FAILS_WITH(sort_cub_run(ctx, &run, NULL, &res), KILN_ERR_UNSUPPORTED,
                    "did not compile on this context");
    run.descending = 1; /* another module: tried on its own */
    TEST_FAILS_WITH(sort_cub_run(ctx, &run, NULL, &res), KILN_ERR_UNSUPPORTED, "not usable here");
    kiln_array_release(k), kiln_array_release(o);
}

/* ---------------------------------------------------------------- results on a GPU */

/* kiln_sort, kiln_argsort and kiln_sort_pairs of raw against the
 * reference, under KILN_SORT_GPU=path. */
static void check_path(kiln_context *ctx, const char *path, kiln_dtype t, const void *raw, int64_t n,
                       int desc) {
    setenv("KILN_SORT_GPU", path, 1);
    size_t w = kiln_dtype_size(t);
    int64_t *perm = malloc(8 * (size_t)n);
    ref_argsort(t, raw, n, desc, perm);
    kiln_array *a = upload(ctx, t, 1, &n, raw), *s = NULL, *idx = NULL, *ks = NULL, *vs = NULL;
    int flags = desc ? KILN_SORT_DESCENDING : 0;
    TEST_OK(kiln_sort(a, 0, flags, NULL, NULL, &s));
    TEST_OK(kiln_argsort(a, 0, flags, NULL, NULL, &idx));
    TEST_OK(kiln_sort_pairs(a, idx, 0, flags, NULL, NULL, NULL, &ks, &vs)); /* values: int64 */
    unsigned char *got = download(s), *gk = download(ks);
    int64_t *gi = download(idx), *gv = download(vs);
    for (int64_t i = 0; i < n; i++) {
        if (gi[i] != perm[i] ||
            memcmp(got + i * (int64_t)w, (const char *)raw + perm[i] * (int64_t)w, w) != 0)
            fail_msg("KILN_SORT_GPU=%s %s n=%lld %s: place %lld is element %lld, expected %lld", path,
                     kiln_dtype_name(t), (long long)n, desc ? "descending" : "ascending", (long long)i,
                     (long long)gi[i], (long long)perm[i]);
        /* pairs: the keys with int64 values (the argsort's, as they lie), moved with their keys */
        if (memcmp(gk + i * (int64_t)w, got + i * (int64_t)w, w) != 0 || gv[i] != gi[perm[i]])
            fail_msg("KILN_SORT_GPU=%s %s pairs: place %lld differs from the sort's", path,
                     kiln_dtype_name(t), (long long)i);
    }
    free(perm), free(got), free(gk), free(gi), free(gv);
    kiln_array_release(a), kiln_array_release(s), kiln_array_release(idx), kiln_array_release(ks),
        kiln_array_release(vs);
    unsetenv("KILN_SORT_GPU");
}

static void test_gpu_paths(void **state) {
    kiln_context *ctx = *state;
    if (kiln_context_backend(ctx) != KILN_BACKEND_CUDA) skip();
    test_rng r = test_rng_for("sort_cub_gpu");
    const char *paths[2] = {"cub", "own"};
    const int64_t n = (1 << 20) + 77; /* many tiles of either */
    float *x = malloc(4 * (size_t)n);
    for (int p = 0; p < 2; p++) {
        /* clean floats, one NaN pattern, -0.0 alone: CUB's result stands */
        for (int64_t i = 0; i < n; i++) x[i] = (float)floor(test_uniform(&r, -5000, 5000)) / 8;
        for (int64_t i = 0; i < n; i += 997) x[i] = NAN;
        for (int64_t i = 0; i < n; i++)
            if (x[i] == 0.0f) x[i] = -0.0f;
        check_path(ctx, paths[p], KILN_FLOAT32, x, n, 0);
        check_path(ctx, paths[p], KILN_FLOAT32, x, n, 1);
        /* NaNs of both signs and payloads, -0.0 beside +0.0: the redo */
        fill_random(&r, KILN_FLOAT32, x, n);
        check_path(ctx, paths[p], KILN_FLOAT32, x, n, 0);
        check_path(ctx, paths[p], KILN_FLOAT32, x, n, 1);
        /* every other key dtype, random bits */
        const kiln_dtype more[] = {KILN_INT8,   KILN_UINT16,  KILN_INT32,    KILN_UINT32,  KILN_INT64,
                                   KILN_UINT64, KILN_FLOAT16, KILN_BFLOAT16, KILN_FLOAT64, KILN_BOOL};
        void *raw = malloc(8 * (size_t)n);
        for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) {
            fill_random(&r, more[k], raw, n / 4);
            check_path(ctx, paths[p], more[k], raw, n / 4, (int)(k % 2));
        }
        free(raw);
    }
    free(x);
}

/* Past 2^28 keys CUB's passes go in portions, each carrying the next
 * one's digit starts forward: 2^28 + 4097 uint32 keys of a small range
 * (many ties) with their positions as values, checked sorted, stable and a
 * permutation in one pass over the result. */
static void test_gpu_portions(void **state) {
    kiln_context *ctx = *state;
    if (kiln_context_backend(ctx) != KILN_BACKEND_CUDA) skip();
    const int64_t n = ((int64_t)1 << 28) + 4097;
    uint32_t *k = malloc(4 * (size_t)n), *v = malloc(4 * (size_t)n);
    unsigned char *seen = calloc((size_t)(n / 8 + 1), 1);
    assert_true(k && v && seen);
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull;
        k[i] = (uint32_t)((h >> 32) % 1000003u);
        v[i] = (uint32_t)i;
    }
    kiln_array *ka = upload(ctx, KILN_UINT32, 1, &n, k), *va = upload(ctx, KILN_UINT32, 1, &n, v);
    kiln_array *ks = NULL, *vs = NULL;
    setenv("KILN_SORT_GPU", "cub", 1);
    TEST_OK(kiln_sort_pairs(ka, va, 0, 0, NULL, NULL, NULL, &ks, &vs));
    unsetenv("KILN_SORT_GPU");
    kiln_array_release(ka), kiln_array_release(va);
    uint32_t *gk = download(ks), *gv = download(vs);
    for (int64_t i = 0; i < n; i++) {
        uint32_t at = gv[i];
        if (at >= n || gk[i] != k[at] || (seen[at / 8] >> (at % 8) & 1))
            fail_msg("place %lld: value %u is no unused position of key %u", (long long)i, at, gk[i]);
        seen[at / 8] |= (unsigned char)(1u << (at % 8));
        if (i && (gk[i - 1] > gk[i] || (gk[i - 1] == gk[i] && gv[i - 1] > at)))
            fail_msg("place %lld: (%u, %u) after (%u, %u): not sorted or not stable", (long long)i, gk[i], at,
                     gk[i - 1], gv[i - 1]);
    }
    free(k), free(v), free(seen), free(gk), free(gv);
    kiln_array_release(ks), kiln_array_release(vs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cub_kernels_compile), cmocka_unit_test(test_cub_histogram),
        cmocka_unit_test(test_redo_only_if),        cmocka_unit_test(test_cub_unusable),
        cmocka_unit_test(test_gpu_paths),           cmocka_unit_test(test_gpu_portions),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
