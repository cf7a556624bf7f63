/* rng_engine.c: seeding and skip-ahead of cuRAND's generators (see rng_engine.h). */
#include "random/rng_engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- XORWOW */

void kiln_xorwow_seed(kiln_xorwow *s, uint64_t seed) {
    /* curand_init's salt and mixing constants: the seed's halves are xored
     * with fixed words and multiplied by odd constants, then spread over
     * Marsaglia's published initial state. */
    uint32_t s0 = (uint32_t)seed ^ 0xaad26b49u;
    uint32_t s1 = (uint32_t)(seed >> 32) ^ 0xf7dcefddu;
    uint32_t t0 = 1099087573u * s0;
    uint32_t t1 = 2591861531u * s1;
    s->d = 6615241u + t1 + t0;
    s->v[0] = 123456789u + t0;
    s->v[1] = 362436069u ^ t0;
    s->v[2] = 521288629u + t1;
    s->v[3] = 88675123u ^ t1;
    s->v[4] = 5783321u + t0;
}

void kiln_gf2_apply(const kiln_gf2_matrix *m, uint32_t v[5]) {
    uint32_t r[5] = {0, 0, 0, 0, 0};
    for (int w = 0; w < 5; w++) {
        uint32_t bits = v[w];
        while (bits) {
            int b = __builtin_ctz(bits);
            bits &= bits - 1;
            const uint32_t *c = m->col[w * 32 + b];
            r[0] ^= c[0];
            r[1] ^= c[1];
            r[2] ^= c[2];
            r[3] ^= c[3];
            r[4] ^= c[4];
        }
    }
    memcpy(v, r, sizeof r);
}

void kiln_gf2_multiply(const kiln_gf2_matrix *a, const kiln_gf2_matrix *b, kiln_gf2_matrix *c) {
    for (int j = 0; j < 160; j++) {
        memcpy(c->col[j], b->col[j], sizeof c->col[j]);
        kiln_gf2_apply(a, c->col[j]);
    }
}

static kiln_gf2_matrix *xorwow_table;
static pthread_once_t xorwow_once = PTHREAD_ONCE_INIT;

static void xorwow_build(void) {
    kiln_gf2_matrix *t = malloc(sizeof(kiln_gf2_matrix) * KILN_XORWOW_POWERS);
    if (!t) return;
    /* Column j of the one-step matrix: the xorshift applied to basis vector j. */
    for (int j = 0; j < 160; j++) {
        kiln_xorwow s = {0, {0, 0, 0, 0, 0}};
        s.v[j / 32] = 1u << (j % 32);
        kiln_xorwow_next(&s);
        memcpy(t[0].col[j], s.v, sizeof s.v);
    }
    for (int k = 1; k < KILN_XORWOW_POWERS; k++) kiln_gf2_multiply(&t[k - 1], &t[k - 1], &t[k]);
    xorwow_table = t;
}

const kiln_gf2_matrix *kiln_xorwow_powers(void) {
    pthread_once(&xorwow_once, xorwow_build);
    return xorwow_table;
}

int kiln_xorwow_skip(kiln_xorwow *s, uint64_t n) {
    const kiln_gf2_matrix *p = kiln_xorwow_powers();
    if (!p) return -1;
    s->d += 362437u * (uint32_t)n;
    for (int k = 0; k < 64; k++)
        if ((n >> k) & 1) kiln_gf2_apply(&p[k], s->v);
    return 0;
}

int kiln_xorwow_skip_subsequence(kiln_xorwow *s, uint64_t n) {
    const kiln_gf2_matrix *p = kiln_xorwow_powers();
    if (!p) return -1;
    /* 2^67 * n steps: bit k of n is the power 2^(67+k); bits past the table
     * wrap the 2^192-1 period harmlessly but cuRAND stops there too. */
    for (int k = 0; k < 64 && 67 + k < KILN_XORWOW_POWERS; k++)
        if ((n >> k) & 1) kiln_gf2_apply(&p[67 + k], s->v);
    return 0;
}

int kiln_xorwow_init(kiln_xorwow *s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
    kiln_xorwow_seed(s, seed);
    if (kiln_xorwow_skip_subsequence(s, subsequence) != 0) return -1;
    return kiln_xorwow_skip(s, offset);
}

int kiln_xorwow_power(uint64_t n, kiln_gf2_matrix *out) {
    const kiln_gf2_matrix *p = kiln_xorwow_powers();
    if (!p) return -1;
    memset(out, 0, sizeof *out);
    for (int j = 0; j < 160; j++) out->col[j][j / 32] = 1u << (j % 32);
    kiln_gf2_matrix tmp;
    for (int k = 0; k < 64; k++) {
        if ((n >> k) & 1) {
            kiln_gf2_multiply(&p[k], out, &tmp);
            *out = tmp;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- MRG32k3a */

static const uint64_t mrg_a1[3][3] = {{0, 1, 0}, {0, 0, 1}, {KILN_MRG_M1 - 810728u, 1403580u, 0}};
static const uint64_t mrg_a2[3][3] = {{0, 1, 0}, {0, 0, 1}, {KILN_MRG_M2 - 1370589u, 0, 527612u}};

static void mrg_mul(const kiln_mrg_matrix *a, const kiln_mrg_matrix *b, uint64_t m, kiln_mrg_matrix *c) {
    kiln_mrg_matrix r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            uint64_t acc = 0;
            for (int k = 0; k < 3; k++) acc = (acc + a->a[i][k] * b->a[k][j] % m) % m;
            r.a[i][j] = acc;
        }
    *c = r;
}

static void mrg_identity(kiln_mrg_matrix *m) {
    memset(m, 0, sizeof *m);
    for (int i = 0; i < 3; i++) m->a[i][i] = 1;
}

void kiln_mrg32k3a_power(uint64_t n, int log2_unit, kiln_mrg_matrix *p1, kiln_mrg_matrix *p2) {
    kiln_mrg_matrix b1, b2;
    memcpy(b1.a, mrg_a1, sizeof b1.a);
    memcpy(b2.a, mrg_a2, sizeof b2.a);
    for (int k = 0; k < log2_unit; k++) {
        mrg_mul(&b1, &b1, KILN_MRG_M1, &b1);
        mrg_mul(&b2, &b2, KILN_MRG_M2, &b2);
    }
    mrg_identity(p1);
    mrg_identity(p2);
    while (n) {
        if (n & 1) {
            mrg_mul(&b1, p1, KILN_MRG_M1, p1);
            mrg_mul(&b2, p2, KILN_MRG_M2, p2);
        }
        n >>= 1;
        if (n) {
            mrg_mul(&b1, &b1, KILN_MRG_M1, &b1);
            mrg_mul(&b2, &b2, KILN_MRG_M2, &b2);
        }
    }
}

void kiln_mrg32k3a_apply(const kiln_mrg_matrix *p1, const kiln_mrg_matrix *p2, kiln_mrg32k3a *s) {
    uint64_t r1[3], r2[3];
    for (int i = 0; i < 3; i++) {
        r1[i] = 0;
        r2[i] = 0;
        for (int k = 0; k < 3; k++) {
            r1[i] = (r1[i] + p1->a[i][k] * s->s1[k] % KILN_MRG_M1) % KILN_MRG_M1;
            r2[i] = (r2[i] + p2->a[i][k] * s->s2[k] % KILN_MRG_M2) % KILN_MRG_M2;
        }
    }
    for (int i = 0; i < 3; i++) {
        s->s1[i] = (uint32_t)r1[i];
        s->s2[i] = (uint32_t)r2[i];
    }
}

void kiln_mrg32k3a_seed(kiln_mrg32k3a *s, uint64_t seed) {
    for (int i = 0; i < 3; i++) {
        s->s1[i] = 12345u;
        s->s2[i] = 12345u;
    }
    if (seed == 0) return;
    uint64_t x1 = (uint32_t)seed ^ 0x55555555u;
    uint64_t x2 = (uint32_t)((seed >> 32) ^ 0xAAAAAAAAu);
    s->s1[0] = (uint32_t)(x1 * s->s1[0] % KILN_MRG_M1);
    s->s1[1] = (uint32_t)(x2 * s->s1[1] % KILN_MRG_M1);
    s->s1[2] = (uint32_t)(x1 * s->s1[2] % KILN_MRG_M1);
    s->s2[0] = (uint32_t)(x2 * s->s2[0] % KILN_MRG_M2);
    s->s2[1] = (uint32_t)(x1 * s->s2[1] % KILN_MRG_M2);
    s->s2[2] = (uint32_t)(x2 * s->s2[2] % KILN_MRG_M2);
}

void kiln_mrg32k3a_init(kiln_mrg32k3a *s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
    kiln_mrg_matrix p1, p2;
    kiln_mrg32k3a_seed(s, seed);
    if (subsequence) {
        kiln_mrg32k3a_power(subsequence, 76, &p1, &p2);
        kiln_mrg32k3a_apply(&p1, &p2, s);
    }
    if (offset) {
        kiln_mrg32k3a_power(offset, 0, &p1, &p2);
        kiln_mrg32k3a_apply(&p1, &p2, s);
    }
}
