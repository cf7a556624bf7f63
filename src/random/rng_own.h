/* rng_own.h: the CUDA provider's own XORWOW and MRG32k3a fills (rng_own.c,
 * kernels in kiln_rng_gen.cuh), private to src/random. */
#ifndef KILN_RANDOM_RNG_OWN_H
#define KILN_RANDOM_RNG_OWN_H

#include <stddef.h>

#include "random/rng_internal.h"

/* What one generator keeps on the device: states, tables, kernels. */
typedef struct kiln_rng_own kiln_rng_own;

/* n values of req (not Poisson) for an XORWOW or MRG32k3a generator into
 * data (device memory), queued on rng's stream: what curandGenerate*
 * writes, continuing from the states the generator's earlier fills left
 * (fresh at rng's offset after a restart). *own is made on first use. */
kiln_status kiln_rng_own_generate(kiln_rng *rng, kiln_rng_own **own, const kiln_rng_request *req, void *data,
                                  size_t n);
/* The same with 2^log2k steps of a logical thread per GPU thread (-1: as
 * kiln_rng_own_generate picks for the device), for tests of the skip-ahead
 * (which also run these kernels on the CPU backend). */
kiln_status kiln_rng_own_generate_chunked(kiln_rng *rng, kiln_rng_own **own, const kiln_rng_request *req,
                                          void *data, size_t n, int log2k);
/* The next fill starts with fresh states at the generator's offset (after
 * a fill that did not move them, such as cuRAND's Poisson). */
void kiln_rng_own_restart(kiln_rng_own *own);
void kiln_rng_own_free(kiln_rng_own *own);
/* The kernels' source (kiln_random.cuh then kiln_rng_gen.cuh): malloc'd,
 * the caller frees it; NULL when out of memory. */
char *kiln_rng_gen_source(void);

#endif
