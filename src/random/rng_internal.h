/* rng_internal.h: the generator object and its two providers (private to
 * src/random). The front (rng.c) checks arguments and arranges a contiguous
 * destination of the right memory; a provider fills n values there. */
#ifndef KILN_RANDOM_RNG_INTERNAL_H
#define KILN_RANDOM_RNG_INTERNAL_H

#include <stdint.h>

#include "core/context.h"
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
    /* CUDA provider: cuRAND's generator, made on first use, and what it was
     * last told, so that settings are only pushed when they change. */
    void *curand_gen;
    int curand_known;        /* the fields below mirror the generator */
    int curand_offset_known; /* curand_offset is where cuRAND's next fill starts */
    uint64_t curand_seed, curand_offset;
    int curand_ordering;
    void *curand_stream;
    kiln_kernel *philox_f64; /* kiln's own Philox uniform-double kernel, made on first use */
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

/* CPU provider: n values into host memory `data` (contiguous). */
kiln_status kiln_rng_cpu_generate(kiln_rng *rng, const kiln_rng_request *req, void *data, size_t n);
/* CUDA provider: n values into device memory `data` (contiguous), queued on
 * rng's stream. */
kiln_status kiln_rng_cuda_generate(kiln_rng *rng, const kiln_rng_request *req, void *data, size_t n);
void kiln_rng_cuda_release(kiln_rng *rng);
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
