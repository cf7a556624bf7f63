/* rng_fill.h: kiln's own host implementation of cuRAND's host API output.
 *
 * cuRAND's generators run a fixed number of logical threads ("the
 * ordering"): logical thread t draws from subsequence t of the generator,
 * and each step of a thread produces `width` consecutive outputs. Output g of
 * the infinite sequence (g counts from the generator's offset 0) therefore
 * comes from step (g / width) / threads of thread (g / width) % threads,
 * slot g % width. kiln fills element i of an array with output offset + i
 * of that sequence, which is what curandGenerate* does, measured against
 * libcurand's host generator for every generator, ordering and distribution
 * (tests/test_random.c). Because any g can be computed on its own, odd
 * lengths and odd offsets need no padding. */
#ifndef KILN_RANDOM_RNG_FILL_H
#define KILN_RANDOM_RNG_FILL_H

#include <stddef.h>
#include <stdint.h>

typedef enum kiln_rng_engine_kind {
    KILN_ENGINE_XORWOW,
    KILN_ENGINE_PHILOX,
    KILN_ENGINE_MRG
} kiln_rng_engine_kind;

typedef enum kiln_rng_dist {
    KILN_DIST_BITS,        /* uint32 */
    KILN_DIST_UNIFORM,     /* float, (0, 1] */
    KILN_DIST_UNIFORM_F64, /* double, (0, 1] */
    KILN_DIST_NORMAL,      /* float */
    KILN_DIST_NORMAL_F64,
    KILN_DIST_LOGNORMAL,
    KILN_DIST_LOGNORMAL_F64,
    KILN_DIST_COUNT
} kiln_rng_dist;

typedef struct kiln_rng_fill {
    kiln_rng_engine_kind engine;
    uint64_t seed;
    uint32_t threads; /* logical threads of the ordering */
    kiln_rng_dist dist;
    double mean, stddev; /* normal and log-normal */
    /* XORWOW and MRG32k3a: each thread's draw position (threads entries), as
     * cuRAND's generator holds them after earlier fills; NULL: a generator
     * freshly set to the offset. */
    const uint64_t *positions;
} kiln_rng_fill;

/* Logical threads of cuRAND's host generator for an engine and ordering:
 * XORWOW 4096; Philox 65536; MRG32k3a 81920 (default) or 4096 (legacy). */
uint32_t kiln_rng_threads(kiln_rng_engine_kind engine, int legacy);

/* Writes what curandGenerate* writes for a generator at `offset` (cuRAND's
 * generator offset, in 32-bit outputs) to `out` (n elements of the dist's
 * type, contiguous), on up to `workers` threads. -1 when memory for the
 * XORWOW jump tables or the workers' buffers could not be had. */
int kiln_rng_fill_host(const kiln_rng_fill *f, uint64_t offset, uint64_t n, void *out, int workers);

/* After a fill of n values at `offset` (thread-steps so far): moves each
 * thread's draw position (threads entries; filled from the offset first when
 * f->positions is NULL) by the draws it made, as cuRAND's persisting states
 * move. Nothing for Philox. */
void kiln_rng_advance_positions(const kiln_rng_fill *f, uint64_t offset, uint64_t n, uint64_t *positions);

#endif
