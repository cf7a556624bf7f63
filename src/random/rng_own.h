/* rng_own.h: the CUDA provider's own XORWOW and MRG32k3a fills (rng_own.c,
 * kernels in kiln_rng_gen.cuh), private to src/random. */
#ifndef KILN_RANDOM_RNG_OWN_H
#define KILN_RANDOM_RNG_OWN_H

#include <stddef.h>
#include <stdint.h>

#include "random/rng_fill.h"
#include "random/rng_internal.h"

/* What one generator keeps on the device: states, tables, kernels. */
typedef struct kiln_rng_own kiln_rng_own;

/* n values of req (not Poisson) for an XORWOW or MRG32k3a generator into
 * data (device memory), queued on rng's stream: what curandGenerate*
 * writes, continuing from the states the generator's earlier fills left
 * (fresh at rng's offset after a restart). *own is made on first use. */
kiln_status kiln_rng_own_generate(kiln_rng *rng, kiln_rng_own **own, const kiln_rng_request *req, void *data,
                                  size_t n);
/* How a fill is cut into GPU threads (rng_own_shape.c). */
typedef struct kiln_rng_own_shape {
    uint32_t steps; /* steps of a logical thread per GPU thread (a chunk) */
    uint32_t block; /* GPU threads per block: a power of two, 64 .. 1024 (XORWOW: 256) */
    uint32_t regs;  /* MRG32k3a: the kernels' register budget, 32 or 64 */
    /* MRG32k3a's step, the same values either way: 1 for the kernels that
     * step component 2 in doubles (`_d`), 0 for the all-integer ones
     * (`_r`); in `want`, 0 leaves it to KILN_RNG_MRG_STEP, 1 asks for `_d`
     * and 2 for `_r` */
    uint32_t fp64;
} kiln_rng_own_shape;

/* The shape of a fill whose busiest logical thread makes max_made steps,
 * T logical threads, on sms SMs that each hold resident_per_sm threads of
 * the kernel (0: as its register budget allows at most): the nonzero
 * fields of `want` (may be NULL) are kept, MRG32k3a's others come from
 * KILN_RNG_MRG_STEPS, _BLOCK, _REGS and _STEP where set, the rest is chosen. */
void kiln_rng_own_shape_for(kiln_rng_engine_kind engine, kiln_rng_dist dist, uint64_t max_made, uint32_t T,
                            int sms, int resident_per_sm, const kiln_rng_own_shape *want,
                            kiln_rng_own_shape *out);

/* kiln_rng_own_generate with the nonzero fields of `want` (NULL: none)
 * fixed, for tests of the skip-ahead and of every kernel variant (which
 * also run these kernels on the CPU backend). */
kiln_status kiln_rng_own_generate_shaped(kiln_rng *rng, kiln_rng_own **own, const kiln_rng_request *req,
                                         void *data, size_t n, const kiln_rng_own_shape *want);
/* The next fill starts with fresh states at the generator's offset (after
 * a fill that did not move them, such as cuRAND's Poisson). */
void kiln_rng_own_restart(kiln_rng_own *own);
void kiln_rng_own_free(kiln_rng_own *own);
/* The kernels' source (kiln_random.cuh then kiln_rng_gen.cuh): malloc'd,
 * the caller frees it; NULL when out of memory. */
char *kiln_rng_gen_source(void);

#endif
