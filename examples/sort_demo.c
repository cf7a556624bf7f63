/* sort_demo.c: `kiln demo sort`: 2^24 float32 keys sorted alone and with
 * int32 values (kiln_sort, kiln_sort_pairs), event-timed, and checked
 * element for element against qsort of (key, index) pairs on the host
 * (NumPy's order: NaN last, ties in input order), whose time is shown too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example_util.h"
#include "examples.h"

typedef struct keyed {
    float key;
    int32_t index;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    int nx = isnan(x->key), ny = isnan(y->key);
    if (nx != ny) return nx - ny;
    if (!nx && x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index); /* stable */
}

static int cmp_ms(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ms of `repeat` event-timed sorts (pairs when v); the last results stay. */
static int time_sort(kiln_context *ctx, kiln_array *k, kiln_array *v, int repeat, kiln_array **rk,
                     kiln_array **rv, double *ms) {
    kiln_event *e0 = NULL, *e1 = NULL;
    double t[64];
    EXAMPLE_TRY(kiln_event_create(ctx, &e0));
    EXAMPLE_TRY(kiln_event_create(ctx, &e1));
    for (int i = -1; i < repeat; i++) { /* -1: compile and warm up */
        kiln_array_release(*rk);
        kiln_array_release(*rv);
        *rk = *rv = NULL;
        EXAMPLE_TRY(kiln_event_record(e0, NULL));
        if (v)
            EXAMPLE_TRY(kiln_sort_pairs(k, v, 0, 0, NULL, NULL, NULL, rk, rv));
        else
            EXAMPLE_TRY(kiln_sort(k, 0, 0, NULL, NULL, rk));
        EXAMPLE_TRY(kiln_event_record(e1, NULL));
        EXAMPLE_TRY(kiln_event_synchronize(e1));
        float m = 0;
        EXAMPLE_TRY(kiln_event_elapsed_ms(e0, e1, &m));
        if (i >= 0) t[i] = m;
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp_ms);
    *ms = t[repeat / 2];
    kiln_event_release(e0);
    kiln_event_release(e1);
    return 0;
}

int kiln_example_sort(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    /* host: keys, values, the reference pairs and two results: 28 bytes a key */
    int64_t n = opts->size > 0 ? opts->size : example_fit_items(opts, (int64_t)1 << 24, 28);
    int repeat = opts->repeat > 0 ? opts->repeat : 5;
    if (repeat > 64) repeat = 64;
    float *h = example_alloc(4 * (size_t)n, "keys"), *got = example_alloc(4 * (size_t)n, "sorted keys");
    int32_t *idx = example_alloc(4 * (size_t)n, "values"),
            *gv = example_alloc(4 * (size_t)n, "sorted values");
    keyed *ref = example_alloc(sizeof *ref * (size_t)n, "reference");
    if (!h || !got || !idx || !gv || !ref) return KILN_ERR_OUT_OF_MEMORY;
    example_rng r = {0x5eed5011};
    for (int64_t i = 0; i < n; i++) {
        /* ties (one key in 8 from 1000 values) and a NaN now and then */
        uint64_t u = example_rng_next(&r);
        h[i] = u % 8 == 0 ? (float)(u % 1000) : (float)example_rng_uniform(&r, -1e6, 1e6);
        if (u % 100003 == 7) h[i] = NAN;
        idx[i] = (int32_t)i;
        ref[i] = (keyed){h[i], (int32_t)i};
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    qsort(ref, (size_t)n, sizeof *ref, cmp_keyed);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double qsort_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    kiln_array *k = NULL, *v = NULL, *rk = NULL, *rv = NULL;
    EXAMPLE_TRY(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, h, 4 * (size_t)n, &k));
    EXAMPLE_TRY(kiln_array_from_host(ctx, KILN_INT32, 1, &n, idx, 4 * (size_t)n, &v));
    double ms_keys = 0, ms_pairs = 0;
    int64_t bad_keys = 0, bad_pairs = 0;
    EXAMPLE_TRY(time_sort(ctx, k, NULL, repeat, &rk, &rv, &ms_keys));
    EXAMPLE_TRY(kiln_array_to_host(rk, got, 4 * (size_t)n));
    for (int64_t i = 0; i < n; i++) bad_keys += memcmp(&got[i], &ref[i].key, 4) != 0;
    EXAMPLE_TRY(time_sort(ctx, k, v, repeat, &rk, &rv, &ms_pairs));
    EXAMPLE_TRY(kiln_array_to_host(rk, got, 4 * (size_t)n));
    EXAMPLE_TRY(kiln_array_to_host(rv, gv, 4 * (size_t)n));
    for (int64_t i = 0; i < n; i++)
        bad_pairs += memcmp(&got[i], &ref[i].key, 4) != 0 || gv[i] != ref[i].index;
    if (opts->verbose) {
        printf("  sort       %lld float32           %9.3f ms %8.1f Mkeys/s\n", (long long)n, ms_keys,
               n / ms_keys / 1e3);
        printf("  sort_pairs %lld float32 + int32   %9.3f ms %8.1f Mkeys/s\n", (long long)n, ms_pairs,
               n / ms_pairs / 1e3);
        printf("  qsort of (key, index) on the host: %.1f ms (%.1fx kiln's key sort)\n", qsort_ms,
               qsort_ms / ms_keys);
    }
    res->passed = bad_keys == 0 && bad_pairs == 0;
    res->size = n;
    res->runs = repeat;
    res->ms_median = ms_keys;
    res->ms_min = ms_keys;
    res->bytes = 2.0 * 4 * (double)n;
    snprintf(res->check, sizeof res->check,
             "keys %s, pairs %s vs qsort (%lld + %lld wrong); pairs %.3f ms, qsort %.0f ms",
             bad_keys ? "DIFFER" : "exact", bad_pairs ? "DIFFER" : "exact", (long long)bad_keys,
             (long long)bad_pairs, ms_pairs, qsort_ms);
    free(h), free(got), free(idx), free(gv), free(ref);
    kiln_array_release(k), kiln_array_release(v), kiln_array_release(rk), kiln_array_release(rv);
    return 0;
}
