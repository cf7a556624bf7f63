/* rng_engine.h: the arithmetic of cuRAND's pseudo-random generators, in plain
 * C with no kiln dependency: per-thread state from (seed, subsequence,
 * offset) exactly as cuRAND's device API sets it up (curand_init), the step
 * functions, skip-ahead, and the conversions from raw 32-bit draws to the
 * distributions cuRAND's host generator produces.
 *
 * XORWOW: Marsaglia's xorshift of 160 bits plus a Weyl sequence d. The
 * xorshift part is linear over GF(2), so skipping n steps applies M^n;
 * kiln computes the powers M^(2^k) itself, once per process.
 * MRG32k3a: L'Ecuyer's combined recursion; skipping applies 3x3 matrix powers
 * mod m1 and m2, computed on demand by squaring.
 * Philox4x32-10: counter based; skipping is counter arithmetic. */
#ifndef KILN_RANDOM_RNG_ENGINE_H
#define KILN_RANDOM_RNG_ENGINE_H

#include <stdint.h>

/* ---- XORWOW ---- */
typedef struct kiln_xorwow {
    uint32_t d;
    uint32_t v[5];
} kiln_xorwow;

/* A 160x160 matrix over GF(2): column j is the image of state bit j. */
typedef struct kiln_gf2_matrix {
    uint32_t col[160][5];
} kiln_gf2_matrix;

/* M^(2^k) for k = 0 .. KILN_XORWOW_POWERS-1 (subsequences are 2^67 steps
 * apart, and curand_init takes 64-bit subsequences and offsets). Built once
 * per process (thread-safe); NULL if the memory could not be had. */
#define KILN_XORWOW_POWERS 131
const kiln_gf2_matrix *kiln_xorwow_powers(void);

void kiln_xorwow_seed(kiln_xorwow *s, uint64_t seed);
/* Advances the xorshift part by the linear map m (the Weyl part untouched). */
void kiln_gf2_apply(const kiln_gf2_matrix *m, uint32_t v[5]);
/* c = a * b (b applied first). c may alias neither. */
void kiln_gf2_multiply(const kiln_gf2_matrix *a, const kiln_gf2_matrix *b, kiln_gf2_matrix *c);
/* curand_init(seed, subsequence, offset) for XORWOW; -1 without the tables. */
int kiln_xorwow_init(kiln_xorwow *s, uint64_t seed, uint64_t subsequence, uint64_t offset);
/* skipahead(n) / skipahead_sequence(n); -1 without the tables. */
int kiln_xorwow_skip(kiln_xorwow *s, uint64_t n);
int kiln_xorwow_skip_subsequence(kiln_xorwow *s, uint64_t n);
/* M^n into out (the identity for n = 0); -1 without the tables. */
int kiln_xorwow_power(uint64_t n, kiln_gf2_matrix *out);

static inline uint32_t kiln_xorwow_next(kiln_xorwow *s) {
    uint32_t t = s->v[0] ^ (s->v[0] >> 2);
    s->v[0] = s->v[1];
    s->v[1] = s->v[2];
    s->v[2] = s->v[3];
    s->v[3] = s->v[4];
    s->v[4] = (s->v[4] ^ (s->v[4] << 4)) ^ (t ^ (t << 1));
    s->d += 362437u;
    return s->v[4] + s->d;
}

/* ---- MRG32k3a ---- */
#define KILN_MRG_M1 4294967087u
#define KILN_MRG_M2 4294944443u
typedef struct kiln_mrg32k3a {
    uint32_t s1[3], s2[3];
} kiln_mrg32k3a;
typedef struct kiln_mrg_matrix {
    uint64_t a[3][3];
} kiln_mrg_matrix;

void kiln_mrg32k3a_seed(kiln_mrg32k3a *s, uint64_t seed);
/* The two component matrices raised to n * 2^log2_unit (log2_unit 0: steps,
 * 76: subsequences, 127: sequences). */
void kiln_mrg32k3a_power(uint64_t n, int log2_unit, kiln_mrg_matrix *p1, kiln_mrg_matrix *p2);
void kiln_mrg32k3a_apply(const kiln_mrg_matrix *p1, const kiln_mrg_matrix *p2, kiln_mrg32k3a *s);
void kiln_mrg32k3a_init(kiln_mrg32k3a *s, uint64_t seed, uint64_t subsequence, uint64_t offset);

/* One step; the combined value in [1, m1] (what curand_MRG32k3a returns as a double). */
static inline uint32_t kiln_mrg32k3a_next(kiln_mrg32k3a *s) {
    uint64_t p1 = (1403580ull * s->s1[1] + 810728ull * (KILN_MRG_M1 - s->s1[0])) % KILN_MRG_M1;
    s->s1[0] = s->s1[1];
    s->s1[1] = s->s1[2];
    s->s1[2] = (uint32_t)p1;
    uint64_t p2 = (527612ull * s->s2[2] + 1370589ull * (KILN_MRG_M2 - s->s2[0])) % KILN_MRG_M2;
    s->s2[0] = s->s2[1];
    s->s2[1] = s->s2[2];
    s->s2[2] = (uint32_t)p2;
    return p1 > p2 ? (uint32_t)(p1 - p2) : (uint32_t)(p1 + KILN_MRG_M1 - p2);
}
/* curand(): the combined value scaled to 32 bits. */
static inline uint32_t kiln_mrg32k3a_bits(uint32_t r) { return (uint32_t)((double)r * 1.000000048662); }
static inline float kiln_mrg32k3a_uniform(uint32_t r) { return (float)((double)r * 2.3283065498378288e-10); }
static inline double kiln_mrg32k3a_uniform_double(uint32_t r) { return (double)r * 2.3283065498378288e-10; }

/* ---- Philox4x32-10 ---- */
static inline void kiln_philox4x32_10(const uint32_t ctr[4], uint32_t key0, uint32_t key1, uint32_t out[4]) {
    uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * x0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * x2;
        uint32_t y0 = (uint32_t)(p1 >> 32) ^ x1 ^ key0;
        uint32_t y2 = (uint32_t)(p0 >> 32) ^ x3 ^ key1;
        x1 = (uint32_t)p1;
        x3 = (uint32_t)p0;
        x0 = y0;
        x2 = y2;
        key0 += 0x9E3779B9u;
        key1 += 0xBB67AE85u;
    }
    out[0] = x0;
    out[1] = x1;
    out[2] = x2;
    out[3] = x3;
}

/* ---- conversions (cuRAND's, bit for bit) ---- */
#define KILN_2POW32_INV 2.3283064e-10f
#define KILN_2POW53_INV_DOUBLE 1.1102230246251565e-16
static inline float kiln_bits_uniform(uint32_t x) {
    return (float)x * KILN_2POW32_INV + KILN_2POW32_INV / 2.0f;
}
static inline double kiln_bits_uniform_double(uint32_t x, uint32_t y) {
    uint64_t z = (uint64_t)x ^ ((uint64_t)y << 21);
    return (double)z * KILN_2POW53_INV_DOUBLE + KILN_2POW53_INV_DOUBLE / 2.0;
}

#endif
