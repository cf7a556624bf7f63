/* rng_own_shape.c: how a fill of kiln's own XORWOW or MRG32k3a kernels
 * (kiln_rng_gen.cuh) is cut into GPU threads: each logical thread's steps
 * in chunks of K, a GPU thread per chunk, in blocks of some size, with a
 * register budget. The settings KILN_RNG_MRG_STEPS, _BLOCK and _REGS fix
 * MRG32k3a's (so that one GPU run can sweep them); what they leave is
 * chosen here from the fill's size and the device's SM count. */
#include <math.h>

#include "core/settings.h"
#include "random/rng_own.h"

/* XORWOW: chunks of a power of two steps, about 1024 GPU threads per SM in
 * all, and at least 64 steps so that the skip-ahead (a set of nibble
 * tables per bit of the distance) stays a small part of a chunk's work. */
static uint32_t xorwow_steps(uint64_t max_made, uint32_t T, int sms) {
    uint64_t want = ((uint64_t)sms * 1024 + T - 1) / T;
    unsigned lg = 0;
    while ((1ull << lg) * want < max_made) lg++;
    while ((1ull << lg) < 64 && (1ull << lg) < max_made) lg++;
    return 1u << lg;
}

/* What a chunk after the first pays for its skip-ahead, in steps: its
 * block's product of jump matrices (18 threads, a 3x3 product per set bit
 * of the distance) and its own matrix-vector product per component, about
 * 200 integer operations against 25 for an integer step. (With component
 * 2 in doubles the step is cheaper and the same skip weighs ~33 steps:
 * chunks of 32 steps took 1.8 x the time of chunks of 256.) */
#define MRG_SKIP_STEPS_INT 12.0
/* No chunk shorter (unless the whole fill is). */
#define MRG_MIN_STEPS 32

/* MRG32k3a: the chunk length whose grid fills the last wave of resident
 * threads best, each chunk's share of its skip counted against it. The GPU
 * runs `resident` threads at once; C chunks of K steps put C T threads in
 * C T / resident waves, and the last wave's empty part is lost. */
static uint32_t mrg_steps(uint64_t max_made, uint32_t T, uint64_t resident, double skip_steps) {
    if (max_made <= MRG_MIN_STEPS) return max_made ? (uint32_t)max_made : 1;
    uint64_t cmax = max_made / MRG_MIN_STEPS; /* chunks of at least MRG_MIN_STEPS */
    if (cmax > 4096) cmax = 4096;
    double best = -1;
    uint64_t best_k = max_made;
    for (uint64_t c = 1; c <= cmax; c++) {
        uint64_t k = (max_made + c - 1) / c, chunks = (max_made + k - 1) / k;
        if (chunks != c || k > UINT32_MAX) continue; /* the same K as a smaller c */
        double waves = (double)(chunks * T) / (double)resident;
        double filled = waves / ceil(waves);
        double work = (double)k / ((double)k + skip_steps * (double)(chunks - 1) / (double)chunks);
        if (filled * work > best + 1e-9) {
            best = filled * work;
            best_k = k;
        }
    }
    return (uint32_t)best_k;
}

/* The double step: chunks as long as the work spread over one wave of
 * resident threads (max_made T / resident steps), so the first wave does
 * nearly all of it, in as few skip-aheads as that allows, and what is
 * left is a short tail of short chunks, which start last. Measured on an
 * H200 (10^8 float32, 1221 steps, 1536 threads an SM): chunks of 512
 * steps (3 chunks) 0.169 ms against 0.175 for 256 (5) and 0.222 for
 * 1024 (2: half the GPU idle for the second half). */
static uint32_t mrg_steps_one_wave(uint64_t max_made, uint32_t T, uint64_t resident) {
    if (max_made <= MRG_MIN_STEPS) return max_made ? (uint32_t)max_made : 1;
    uint64_t k = (max_made * T + resident - 1) / resident;
    if (k < MRG_MIN_STEPS) k = MRG_MIN_STEPS;
    if (k > max_made) k = max_made;
    return k > UINT32_MAX ? UINT32_MAX : (uint32_t)k;
}

int kiln_rng_fast_fp64(const kiln_device_info *info) {
    return info->compute_minor == 0 && info->compute_major >= 6 && info->compute_major <= 10;
}

static int power_of_two(long v) { return v > 0 && (v & (v - 1)) == 0; }

void kiln_rng_own_shape_for(kiln_rng_engine_kind engine, kiln_rng_dist dist, uint64_t max_made, uint32_t T,
                            int sms, int fast_fp64, int resident_per_sm, const kiln_rng_own_shape *want,
                            kiln_rng_own_shape *out) {
    kiln_rng_own_shape none = {0, 0, 0, 0};
    if (!want) want = &none;
    if (sms <= 0) sms = 132;
    if (engine == KILN_ENGINE_XORWOW) {
        out->regs = 64;
        out->block = 256;
        out->steps = want->steps ? want->steps : xorwow_steps(max_made, T, sms);
        out->fp64 = 0;
        return;
    }
    /* The step: component 2 on the double pipe unless asked otherwise,
     * unless the GPU's doubles are slow (fast_fp64 0) or the fill's own
     * arithmetic is in doubles (the double normals' logarithm, square root,
     * sine and cosine keep that pipe busy). */
    static const char *const steps_words[] = {"auto", "fp64", "int"};
    int step = kiln_setting_choice("KILN_RNG_MRG_STEP", steps_words, 3, 0);
    int double_math = dist == KILN_DIST_NORMAL_F64 || dist == KILN_DIST_LOGNORMAL_F64;
    out->fp64 = want->fp64 ? want->fp64 == 1 : step ? step == 1 : fast_fp64 && !double_math;
    /* The integer step: 32 registers hold the bits and uniform fills
     * without a spill (ptxas for sm_90 through NVRTC); the normals'
     * Box-Muller takes 38 to 40 (floats), 50 to 64 (doubles). The double
     * step's state takes three more words: 40 registers (1536 threads an
     * SM), which ran its uniform float32 fill 5-15 % faster than the
     * 32-register build's 2048 threads (its few spills sit in the loop). */
    long regs = want->regs ? (long)want->regs : kiln_setting_int("KILN_RNG_MRG_REGS", 32, 64, 0);
    out->regs = regs == 32 || regs == 64 ? (uint32_t)regs : out->fp64 || dist >= KILN_DIST_NORMAL ? 64 : 32;
    long block = want->block ? (long)want->block : kiln_setting_int("KILN_RNG_MRG_BLOCK", 64, 1024, 0);
    out->block = power_of_two(block) && block >= 64 && block <= 1024 ? (uint32_t)block : 256;
    long steps = want->steps ? (long)want->steps : kiln_setting_int("KILN_RNG_MRG_STEPS", 1, 1L << 24, 0);
    int per_sm = resident_per_sm > 0 ? resident_per_sm : out->regs == 32 ? 2048 : 1024;
    uint64_t resident = (uint64_t)sms * (uint64_t)per_sm;
    out->steps = steps > 0   ? (uint32_t)steps
                 : out->fp64 ? mrg_steps_one_wave(max_made, T, resident)
                             : mrg_steps(max_made, T, resident, MRG_SKIP_STEPS_INT);
}
