/* example_util.h: small helpers the example files share (not public):
 * a seeded random stream for inputs, host allocation that reports, and the
 * bookkeeping of a kiln_example_launch. */
#ifndef KILN_EXAMPLE_UTIL_H
#define KILN_EXAMPLE_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "examples.h"

/* Returns the status of a failed kiln call, leaving kiln_last_error() for
 * the caller to report (KILN_CHECK would print it a second time). */
#define EXAMPLE_TRY(call)                                                                                    \
    do {                                                                                                     \
        kiln_status example_try_status_ = (call);                                                            \
        if (example_try_status_ != KILN_OK) return (int)example_try_status_;                                 \
    } while (0)

/* splitmix64: fresh but reproducible inputs (one fixed seed per example), so
 * a failing check can be rerun on the same data. */
typedef struct example_rng {
    uint64_t s;
} example_rng;

static inline uint64_t example_rng_next(example_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* Uniform in [lo, hi), 53 random bits. */
static inline double example_rng_uniform(example_rng *r, double lo, double hi) {
    return lo + (hi - lo) * (double)(example_rng_next(r) >> 11) * 0x1.0p-53;
}
static inline void example_fill_f32(example_rng *r, float *x, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = (float)example_rng_uniform(r, lo, hi);
}

/* malloc that says what it failed to allocate on stderr: the examples
 * cannot set kiln_last_error(), so a bare KILN_ERR_OUT_OF_MEMORY would
 * leave the caller with a stale message. */
static inline void *example_alloc(size_t bytes, const char *what) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) fprintf(stderr, "kiln example: cannot allocate %zu bytes for %s\n", bytes, what);
    return p;
}

/* The default item count `n` of a workload that takes `bytes_per_item` of
 * host memory per item, scaled down to fit opts->memory_bytes (a multiple
 * of 2^20 items, at least 2^20); `n` when it fits or there is no limit. */
static inline int64_t example_fit_items(const kiln_example_opts *opts, int64_t n, double bytes_per_item) {
    if (!opts || opts->memory_bytes <= 0 || (double)n * bytes_per_item <= (double)opts->memory_bytes)
        return n;
    int64_t unit = (int64_t)1 << 20,
            fit = (int64_t)((double)opts->memory_bytes / bytes_per_item) / unit * unit;
    return fit > unit ? fit : unit;
}

/* Keeps `a` in the launch (released with it) and returns it as an argument. */
static inline kiln_value example_keep(kiln_example_launch *l, kiln_array *a) {
    for (int i = 0; i < KILN_EXAMPLE_MAX_BUFFERS; i++)
        if (!l->arrays[i]) {
            l->arrays[i] = a;
            break;
        }
    return kiln_arr(a);
}

/* Appends an argument; the argument list is fixed per example, so the bound
 * is a programming error caught in every run, not a user error. */
static inline void example_arg(kiln_example_launch *l, kiln_value v) {
    if (l->nargs < KILN_EXAMPLE_MAX_ARGS) l->args[l->nargs++] = v;
}

#endif
