/* rng_internal.h: the generator object and its providers' table (private
 * to src/random). The front (rng.c) checks arguments and arranges a
 * contiguous destination of the right memory; a provider fills n values
 * there. */
#ifndef KILN_RANDOM_RNG_INTERNAL_H
#define KILN_RANDOM_RNG_INTERNAL_H

#include <stdint.h>

#include "core/context.h"
#include "core/provider.h"
#include "kiln.h"
#include "random/rng_fill.h"

struct kiln_rng {
    kiln_context *ctx;
    kiln_rng_type type;
    kiln_rng_ordering ordering;
    uint64_t seed;
    uint64_t offset;     /* in 32-bit outputs, as cuRAND counts it */
    kiln_stream *stream; /* NULL: the default stream (not retained: see kiln_rng_set_stream) */
    /* CPU provider, XORWOW and MRG32k3a: every logical thread's draw
     * position after the fills since the offset was last set (cuRAND's
     * states persist across calls); positions_valid 0: fresh at offset. */
    uint64_t *positions;
    size_t positions_count;
    int positions_valid;
    /* Bumped by kiln_rng_set_seed/_offset/_ordering: the sequence restarts
     * with fresh states at the offset; a provider that mirrors the
     * generator elsewhere (cuRAND's, in its per-context state) compares it
     * with the count it last saw. */
    uint64_t restarts;
    const struct kiln_rng_provider *provider; /* chosen at create for the context's backend */
};

/* A fill: a distribution and its parameters. Poisson is not a dist of
 * rng_fill.h (not bit-matched), so it has its own flag. */
typedef struct kiln_rng_request {
    kiln_rng_dist dist;
    int poisson;
    double mean, stddev, lambda;
    const char *name; /* for the profiler: "kiln_rng_uniform" ... */
} kiln_rng_request;

/* The engine and logical thread count for rng's type and ordering. */
void kiln_rng_fill_params(const kiln_rng *rng, const kiln_rng_request *req, kiln_rng_fill *f);

/* A provider: who fills a contiguous destination with n values for a
 * generator, chosen by kiln_provider_select at kiln_rng_create. */
typedef struct kiln_rng_provider {
    kiln_provider base; /* first (core/provider.h) */
    /* 1 when generate may write into `out` (contiguous) itself; 0: the
     * front fills a contiguous temporary and copies it into out. */
    int (*fills_in_place)(const kiln_array *out);
    /* n values into `data` (contiguous, memory of the context's backend),
     * queued on rng's stream, recorded by the profiler. */
    kiln_status (*generate)(kiln_rng *rng, const kiln_rng_request *req, void *data, size_t n);
    /* Optional: drops what the provider keeps for rng (kiln_rng_release). */
    void (*forget)(kiln_rng *rng);
} kiln_rng_provider;

/* The CUDA provider: cuRAND's device generator (rng_cuda.c). */
extern const kiln_rng_provider kiln_rng_curand;
/* The CPU provider: kiln's own generator code (rng_cpu.c). */
extern const kiln_rng_provider kiln_rng_host;

/* The source of the CUDA provider's Philox uniform-double kernel
 * (kiln_philox_uniform_f64): the device API (kiln_random.cuh, whose Philox
 * rounds and double it uses) followed by kiln_philox_f64.cuh. malloc'd, the
 * caller frees it; NULL when out of memory. */
char *kiln_rng_philox_f64_source(void);

/* kiln's Poisson sampler (CPU): element i reads Philox4x32-10 keyed by the
 * seed at counter (offset + i, round): inversion of the CDF below lambda
 * 64, Hormann's PTRS transformed rejection above. */
void kiln_rng_poisson_host(uint64_t seed, uint64_t offset, double lambda, uint32_t *out, size_t n,
                           int workers);

#endif
