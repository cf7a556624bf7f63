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
 * the kernel (0: as its register budget allows at most), fast_fp64 1 on a
 * GPU whose doubles run at half its float rate (kiln_rng_fast_fp64): the nonzero
 * fields of `want` (may be NULL) are kept, MRG32k3a's others come from
 * KILN_RNG_MRG_STEPS, _BLOCK, _REGS and _STEP where set, the rest is chosen. */
void kiln_rng_own_shape_for(kiln_rng_engine_kind engine, kiln_rng_dist dist, uint64_t max_made, uint32_t T,
                            int sms, int fast_fp64, int resident_per_sm, const kiln_rng_own_shape *want,
                            kiln_rng_own_shape *out);

/* 1 on a GPU whose doubles run at half its float rate: compute capability
 * 6.0, 7.0, 8.0, 9.0 and 10.0 (P100, V100, A100, H100/H200, B200), not
 * the others (their doubles run at 1/32 or 1/64 of it). */
int kiln_rng_fast_fp64(const kiln_device_info *info);

/* kiln_rng_own_generate with the nonzero fields of `want` (NULL: none)
 * fixed, for tests of the skip-ahead and of every kernel variant (which
 * also run these kernels on the CPU backend). */
kiln_status kiln_rng_own_generate_shaped(kiln_rng *rng, kiln_rng_own **own, const kiln_rng_request *req,
                                         void *data, size_t n, const kiln_rng_own_shape *want);
/* The next fill starts with fresh states at the generator's offset (after
 * a fill that did not move them, such as cuRAND's Poisson). */
void kiln_rng_own_restart(kiln_rng_own *own);
void kiln_rng_own_free(kiln_rng_own *own);
/* The parts of kiln_rng_gen.cuh, one module each: the fresh-state and
 * copy kernels, or one set of fill kernels (XORWOW's; MRG32k3a's integer
 * step at 64 and 32 registers, its double step at 64 and 32), or none
 * (the device functions alone). */
enum {
    KILN_RNG_GEN_NONE = -2,
    KILN_RNG_GEN_SETUP = -1,
    KILN_RNG_GEN_XORWOW = 0,
    KILN_RNG_GEN_MRG_R64 = 1,
    KILN_RNG_GEN_MRG_R32 = 2,
    KILN_RNG_GEN_MRG_D64 = 3,
    KILN_RNG_GEN_MRG_D32 = 4
};
/* One part's source (kiln_random.cuh then kiln_rng_gen.cuh): malloc'd,
 * the caller frees it; NULL when out of memory. */
char *kiln_rng_gen_source(int part);

#endif
