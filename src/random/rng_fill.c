/* rng_fill.c: cuRAND's host-generator output computed on the host (rng_fill.h).
 *
 * Work is cut into tiles of TILE logical threads times a run of steps. A
 * tile keeps its threads' states in structure-of-arrays form, so the step
 * loops over the tile's threads are plain arithmetic the compiler vectorises;
 * each step writes TILE * width consecutive outputs. Tiles are shared out
 * to worker threads through an atomic counter. */
#include "random/rng_fill.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "random/rng_engine.h"

#define TILE 256
#define MAX_RAWS 8
#define STEPS_PER_ITEM_MIN 64

uint32_t kiln_rng_threads(kiln_rng_engine_kind engine, int legacy) {
    switch (engine) {
    case KILN_ENGINE_XORWOW: return 4096;
    case KILN_ENGINE_PHILOX: return 65536;
    case KILN_ENGINE_MRG: return legacy ? 4096 : 81920;
    }
    return 4096;
}

static int dist_double(kiln_rng_dist d) {
    return d == KILN_DIST_UNIFORM_F64 || d == KILN_DIST_NORMAL_F64 || d == KILN_DIST_LOGNORMAL_F64;
}
static int dist_normal(kiln_rng_dist d) { return d >= KILN_DIST_NORMAL; }

/* Outputs per step of a logical thread. */
static unsigned step_width(const kiln_rng_fill *f) {
    if (f->engine == KILN_ENGINE_PHILOX) return 4;
    return dist_normal(f->dist) ? 2 : 1;
}

/* Raw draws per step: 32-bit words (XORWOW), combined values (MRG32k3a), or
 * counters (Philox, 4 words each). */
static unsigned step_raws(const kiln_rng_fill *f) {
    int dbl = dist_double(f->dist), normal = dist_normal(f->dist);
    switch (f->engine) {
    case KILN_ENGINE_XORWOW: return normal ? (dbl ? 4 : 2) : (dbl ? 2 : 1);
    case KILN_ENGINE_MRG: return normal ? 2 : 1;
    case KILN_ENGINE_PHILOX: return dbl ? 2 : 1;
    }
    return 1;
}

typedef struct tile {
    unsigned m;          /* threads in this tile */
    uint32_t t0;         /* first logical thread */
    uint64_t step;       /* step the states stand at */
    uint32_t xw_d[TILE]; /* XORWOW: the Weyl words */
    unsigned xw_head;    /* XORWOW: the row of xw_v holding v[0]; the rows form a ring */
    uint32_t xw_v[5][TILE];
    uint32_t s1[3][TILE], s2[3][TILE];
    uint32_t raw[MAX_RAWS * 4][TILE]; /* Philox: 4 words per counter */
} tile;

typedef struct job {
    const kiln_rng_fill *f;
    unsigned width, raws, esize;
    uint64_t first, n; /* outputs wanted */
    uint64_t skip;     /* draws every thread skips first (XORWOW, MRG32k3a) */
    uint32_t rotation; /* threads below it skip one draw more and come last */
    uint64_t offset;   /* Philox: the generator offset */
    uint64_t step_lo, step_hi;
    uint32_t tile_count;
    struct {
        uint32_t t0, m, logical0; /* threads t0 .. t0+m-1 write as logical threads logical0 .. */
    } tiles[81920 / TILE + 2];
    uint64_t steps_per_item, items;
    kiln_gf2_matrix const *xw_powers;
    kiln_mrg_matrix mrg_next1, mrg_next2; /* one subsequence: 2^76 steps */
    char *out;
    atomic_uint_fast64_t next_item;
} job;

/* Sets the tile's states to thread t0.. at `step`. */
/* Draw position of thread t at the fill's first step (XORWOW, MRG32k3a). */
static uint64_t thread_start(const job *j, uint32_t t) {
    if (j->f->positions) return j->f->positions[t];
    return j->skip + (t < j->rotation ? 1 : 0);
}

/* Largest gap between neighbouring threads' positions crossed by stepping
 * rather than by a fresh skip-ahead. */
#define STEP_GAP_MAX 16

/* Sets the tile's states to threads t0.. at `step` of the fill. */
static void tile_start(const job *j, tile *tl, uint32_t t0, unsigned m, uint64_t step) {
    const kiln_rng_fill *f = j->f;
    tl->t0 = t0;
    tl->m = m;
    tl->step = step;
    uint64_t at = 0; /* position of the state in hand */
    if (f->engine == KILN_ENGINE_XORWOW) {
        kiln_xorwow s;
        tl->xw_head = 0;
        for (unsigned i = 0; i < m; i++) {
            uint64_t want = thread_start(j, t0 + i) + step * j->raws;
            /* Thread t+1 is thread t advanced by 2^67 draws (the jump commutes
             * with skipping), so neighbours cost one matrix each. */
            if (i == 0 || want < at || want - at > STEP_GAP_MAX) {
                kiln_xorwow_init(&s, f->seed, t0 + i, want);
            } else {
                kiln_gf2_apply(&j->xw_powers[67], s.v);
                for (; at < want; at++) kiln_xorwow_next(&s);
            }
            at = want;
            for (int w = 0; w < 5; w++) tl->xw_v[w][i] = s.v[w];
            tl->xw_d[i] = s.d;
        }
    } else if (f->engine == KILN_ENGINE_MRG) {
        kiln_mrg32k3a s;
        for (unsigned i = 0; i < m; i++) {
            uint64_t want = thread_start(j, t0 + i) + step * j->raws;
            if (i == 0 || want < at || want - at > STEP_GAP_MAX) {
                kiln_mrg32k3a_init(&s, f->seed, t0 + i, want);
            } else {
                kiln_mrg32k3a_apply(&j->mrg_next1, &j->mrg_next2, &s);
                for (; at < want; at++) kiln_mrg32k3a_next(&s);
            }
            at = want;
            for (int w = 0; w < 3; w++) {
                tl->s1[w][i] = s.s1[w];
                tl->s2[w][i] = s.s2[w];
            }
        }
    }
}

/* Word `w` of Philox thread t's stream (counter w / 4, subsequence t). */
typedef struct philox_cache {
    uint64_t counter;
    uint32_t words[4];
} philox_cache;
static uint32_t philox_word(const kiln_rng_fill *f, uint64_t t, uint64_t w, philox_cache *c) {
    uint64_t counter = w / 4;
    if (c->counter != counter) {
        uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), (uint32_t)t, (uint32_t)(t >> 32)};
        kiln_philox4x32_10(ctr, (uint32_t)f->seed, (uint32_t)(f->seed >> 32), c->words);
        c->counter = counter;
    }
    return c->words[w % 4];
}

/* Philox: step s of thread t holds outputs g = (s * threads + t) * 4 + q of
 * the whole sequence (cuRAND's offset is a position g). Outputs of one
 * 32-bit word read word k = s * 4 + q of the thread's stream. Outputs of
 * two words (doubles) read words 2j, 2j+1 where j = k - 2 * floor(b / 4)
 * and b is the number of the thread's positions below the offset: cuRAND
 * skips one counter per whole row below the offset, then fills the
 * thread's positions at or above it (measured, tests/test_random.c). */
static void philox_draw(const job *j, tile *tl) {
    const kiln_rng_fill *f = j->f;
    int two_words = dist_double(f->dist);
    uint64_t rows = j->offset / ((uint64_t)f->threads * 4), rem = j->offset % ((uint64_t)f->threads * 4);
    if (!two_words) {
        /* One counter per step for every thread: the ten rounds over the
         * tile's threads side by side, which the compiler vectorises. */
        uint32_t c0 = (uint32_t)tl->step, c1 = (uint32_t)(tl->step >> 32);
        uint32_t key0 = (uint32_t)f->seed, key1 = (uint32_t)(f->seed >> 32);
        for (unsigned i = 0; i < tl->m; i++) {
            uint64_t t = (uint64_t)tl->t0 + i;
            uint32_t x0 = c0, x1 = c1, x2 = (uint32_t)t, x3 = (uint32_t)(t >> 32), k0 = key0, k1 = key1;
            for (int round = 0; round < 10; round++) {
                uint64_t p0 = (uint64_t)0xD2511F53u * x0, p1 = (uint64_t)0xCD9E8D57u * x2;
                uint32_t y0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0, y2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
                x1 = (uint32_t)p1;
                x3 = (uint32_t)p0;
                x0 = y0;
                x2 = y2;
                k0 += 0x9E3779B9u;
                k1 += 0xBB67AE85u;
            }
            tl->raw[0][i] = x0;
            tl->raw[1][i] = x1;
            tl->raw[2][i] = x2;
            tl->raw[3][i] = x3;
        }
        return;
    }
    for (unsigned i = 0; i < tl->m; i++) {
        uint64_t t = (uint64_t)tl->t0 + i;
        philox_cache c = {UINT64_MAX, {0, 0, 0, 0}};
        uint64_t in_row = rem > 4 * t ? rem - 4 * t : 0;
        uint64_t before = rows * 4 + (in_row > 4 ? 4 : in_row);
        for (unsigned q = 0; q < 4; q++) {
            uint64_t k = tl->step * 4 + q, jj = k - 2 * (before / 4);
            if (f->dist == KILN_DIST_UNIFORM_F64) {
                tl->raw[2 * q][i] = philox_word(f, t, 2 * jj, &c);
                tl->raw[2 * q + 1][i] = philox_word(f, t, 2 * jj + 1, &c);
            }
        }
        if (f->dist != KILN_DIST_UNIFORM_F64) {
            /* normal doubles: pairs of outputs from four words */
            for (unsigned q = 0; q < 4; q += 2) {
                uint64_t k = tl->step * 4 + q, jj = k - 2 * (before / 4);
                for (unsigned r = 0; r < 4; r++) tl->raw[2 * q + r][i] = philox_word(f, t, 2 * jj + r, &c);
            }
        }
    }
}

/* Draws one step's raw values for every thread of the tile. */
static void tile_draw(const job *j, tile *tl) {
    const kiln_rng_fill *f = j->f;
    unsigned m = tl->m;
    if (f->engine == KILN_ENGINE_XORWOW) {
        /* v[0] .. v[4] live in a ring of rows: a step reads v[0] and v[4]
         * and overwrites v[0]'s row with the new v[4], which turns the ring. */
        for (unsigned r = 0; r < j->raws; r++) {
            uint32_t *out = tl->raw[r], *d = tl->xw_d;
            uint32_t *v0 = tl->xw_v[tl->xw_head], *v4 = tl->xw_v[(tl->xw_head + 4) % 5];
            for (unsigned i = 0; i < m; i++) {
                uint32_t t = v0[i] ^ (v0[i] >> 2);
                uint32_t nv = (v4[i] ^ (v4[i] << 4)) ^ (t ^ (t << 1));
                v0[i] = nv;
                d[i] += 362437u;
                out[i] = nv + d[i];
            }
            tl->xw_head = (tl->xw_head + 1) % 5;
        }
    } else if (f->engine == KILN_ENGINE_MRG) {
        for (unsigned r = 0; r < j->raws; r++) {
            uint32_t *out = tl->raw[r];
            for (unsigned i = 0; i < m; i++) {
                uint64_t p1 =
                    (1403580ull * tl->s1[1][i] + 810728ull * (KILN_MRG_M1 - tl->s1[0][i])) % KILN_MRG_M1;
                uint64_t p2 =
                    (527612ull * tl->s2[2][i] + 1370589ull * (KILN_MRG_M2 - tl->s2[0][i])) % KILN_MRG_M2;
                tl->s1[0][i] = tl->s1[1][i];
                tl->s1[1][i] = tl->s1[2][i];
                tl->s1[2][i] = (uint32_t)p1;
                tl->s2[0][i] = tl->s2[1][i];
                tl->s2[1][i] = tl->s2[2][i];
                tl->s2[2][i] = (uint32_t)p2;
                out[i] = p1 > p2 ? (uint32_t)(p1 - p2) : (uint32_t)(p1 + KILN_MRG_M1 - p2);
            }
        }
    } else {
        philox_draw(j, tl);
    }
    tl->step++;
}

/* cuRAND's Box-Muller on two 32-bit words (host form: sinf/cosf). */
static void box_muller(uint32_t x, uint32_t y, float *a, float *b) {
    float u = (float)x * KILN_2POW32_INV + KILN_2POW32_INV / 2.0f;
    float v = (float)y * (2.3283064e-10f * 6.2831855f) + (2.3283064e-10f * 6.2831855f) / 2.0f;
    float s = sqrtf(-2.0f * logf(u));
    *a = sinf(v) * s;
    *b = cosf(v) * s;
}
static void box_muller_double(uint32_t x0, uint32_t x1, uint32_t y0, uint32_t y1, double *a, double *b) {
    uint64_t zx = (uint64_t)x0 ^ ((uint64_t)x1 << 21);
    uint64_t zy = (uint64_t)y0 ^ ((uint64_t)y1 << 21);
    double u = (double)zx * KILN_2POW53_INV_DOUBLE + KILN_2POW53_INV_DOUBLE / 2.0;
    double v = (double)zy * (KILN_2POW53_INV_DOUBLE * 2.0) + KILN_2POW53_INV_DOUBLE;
    double s = sqrt(-2.0 * log(u));
    *a = sin(v * 3.1415926535897932) * s;
    *b = cos(v * 3.1415926535897932) * s;
}
static void box_muller_mrg(uint32_t r0, uint32_t r1, float *a, float *b) {
    float x = kiln_mrg32k3a_uniform(r0);
    float y = kiln_mrg32k3a_uniform(r1) * 6.2831855f;
    float s = sqrtf(-2.0f * logf(x));
    *a = sinf(y) * s;
    *b = cosf(y) * s;
}
static void box_muller_mrg_double(uint32_t r0, uint32_t r1, double *a, double *b) {
    double x = kiln_mrg32k3a_uniform_double(r0);
    double y = kiln_mrg32k3a_uniform_double(r1) * 2.0;
    double s = sqrt(-2.0 * log(x));
    *a = sin(y * 3.1415926535897932) * s;
    *b = cos(y * 3.1415926535897932) * s;
}

/* Turns the tile's raw draws into m * width outputs in `buf`. */
static void tile_convert(const job *j, const tile *tl, void *buf) {
    const kiln_rng_fill *f = j->f;
    unsigned m = tl->m, w = j->width;
    int mrg = f->engine == KILN_ENGINE_MRG;
    /* Philox's four words per counter are the step's slots; the others
     * have one slot per draw (or per pair of draws). */
    switch (f->dist) {
    case KILN_DIST_BITS: {
        uint32_t *o = buf;
        for (unsigned q = 0; q < w; q++)
            for (unsigned i = 0; i < m; i++)
                o[i * w + q] = mrg ? kiln_mrg32k3a_bits(tl->raw[q][i]) : tl->raw[q][i];
        break;
    }
    case KILN_DIST_UNIFORM: {
        float *o = buf;
        for (unsigned q = 0; q < w; q++)
            for (unsigned i = 0; i < m; i++)
                o[i * w + q] = mrg ? kiln_mrg32k3a_uniform(tl->raw[q][i]) : kiln_bits_uniform(tl->raw[q][i]);
        break;
    }
    case KILN_DIST_UNIFORM_F64: {
        double *o = buf;
        for (unsigned q = 0; q < w; q++)
            for (unsigned i = 0; i < m; i++)
                o[i * w + q] = mrg ? kiln_mrg32k3a_uniform_double(tl->raw[q][i])
                                   : kiln_bits_uniform_double(tl->raw[2 * q][i], tl->raw[2 * q + 1][i]);
        break;
    }
    case KILN_DIST_NORMAL:
    case KILN_DIST_LOGNORMAL: {
        float *o = buf;
        float mean = (float)f->mean, sd = (float)f->stddev;
        int lg = f->dist == KILN_DIST_LOGNORMAL;
        for (unsigned q = 0; q < w; q += 2)
            for (unsigned i = 0; i < m; i++) {
                float a, b;
                if (mrg)
                    box_muller_mrg(tl->raw[q][i], tl->raw[q + 1][i], &a, &b);
                else
                    box_muller(tl->raw[q][i], tl->raw[q + 1][i], &a, &b);
                a = a * sd + mean;
                b = b * sd + mean;
                o[i * w + q] = lg ? expf(a) : a;
                o[i * w + q + 1] = lg ? expf(b) : b;
            }
        break;
    }
    case KILN_DIST_NORMAL_F64:
    case KILN_DIST_LOGNORMAL_F64: {
        double *o = buf;
        int lg = f->dist == KILN_DIST_LOGNORMAL_F64;
        for (unsigned q = 0; q < w; q += 2)
            for (unsigned i = 0; i < m; i++) {
                double a, b;
                if (mrg)
                    box_muller_mrg_double(tl->raw[q][i], tl->raw[q + 1][i], &a, &b);
                else
                    box_muller_double(tl->raw[2 * q][i], tl->raw[2 * q + 1][i], tl->raw[2 * q + 2][i],
                                      tl->raw[2 * q + 3][i], &a, &b);
                a = a * f->stddev + f->mean;
                b = b * f->stddev + f->mean;
                o[i * w + q] = lg ? exp(a) : a;
                o[i * w + q + 1] = lg ? exp(b) : b;
            }
        break;
    }
    default: break;
    }
}

/* Runs one work item: a tile of threads over a run of steps. */
static void run_item(job *j, tile *tl, void *buf, uint64_t item) {
    const kiln_rng_fill *f = j->f;
    uint32_t tile_index = (uint32_t)(item % j->tile_count);
    uint64_t s_lo = j->step_lo + (item / j->tile_count) * j->steps_per_item;
    uint64_t s_hi = s_lo + j->steps_per_item;
    if (s_hi > j->step_hi) s_hi = j->step_hi;
    uint32_t t0 = j->tiles[tile_index].t0, logical0 = j->tiles[tile_index].logical0;
    unsigned m = j->tiles[tile_index].m;
    uint64_t end = j->first + j->n;
    int started = 0;
    for (uint64_t s = s_lo; s < s_hi; s++) {
        uint64_t lo = (s * f->threads + logical0) * j->width, hi = lo + (uint64_t)m * j->width;
        if (hi <= j->first || lo >= end)
            continue; /* only at the ends: nothing of this tile is wanted in this step */
        if (!started || tl->step != s) {
            tile_start(j, tl, t0, m, s);
            started = 1;
        }
        tile_draw(j, tl);
        tile_convert(j, tl, buf);
        uint64_t a = lo > j->first ? lo : j->first, b = hi < end ? hi : end;
        memcpy(j->out + (a - j->first) * j->esize, (char *)buf + (a - lo) * j->esize, (b - a) * j->esize);
    }
}

typedef struct worker_arg {
    job *j;
    int failed;
} worker_arg;

static void *worker(void *p) {
    worker_arg *wa = p;
    job *j = wa->j;
    tile *tl = malloc(sizeof *tl);
    void *buf = malloc((size_t)TILE * 4 * sizeof(double));
    if (!tl || !buf) {
        wa->failed = 1;
    } else {
        for (;;) {
            uint64_t item = atomic_fetch_add(&j->next_item, 1);
            if (item >= j->items) break;
            run_item(j, tl, buf, item);
        }
    }
    free(tl);
    free(buf);
    return NULL;
}

int kiln_rng_fill_host(const kiln_rng_fill *f, uint64_t offset, uint64_t n, void *out, int workers) {
    if (n == 0) return 0;
    job j;
    memset(&j, 0, sizeof j);
    j.f = f;
    j.width = step_width(f);
    j.raws = step_raws(f);
    j.esize = f->dist == KILN_DIST_BITS || f->dist == KILN_DIST_UNIFORM || f->dist == KILN_DIST_NORMAL ||
                      f->dist == KILN_DIST_LOGNORMAL
                  ? 4
                  : 8;
    /* cuRAND's offset counts 32-bit outputs. XORWOW and MRG32k3a: each
     * thread skips the draws it would have made for the first `offset`
     * 32-bit outputs (offset / threads, one more for the threads below
     * offset % threads), and the thread at offset % threads fills element 0,
     * the others following in thread order, wrapping around. Philox: the
     * outputs are positions offset, offset + 1, ... of the whole sequence. */
    uint64_t first = 0;
    uint32_t rot = 0;
    if (f->engine == KILN_ENGINE_PHILOX) {
        first = offset;
        j.offset = offset;
    } else {
        j.skip = offset / f->threads;
        rot = (uint32_t)(offset % f->threads);
        /* with explicit positions the offset is the count of thread-steps
         * made so far, and only its rotation matters */
    }
    j.rotation = rot;
    j.tile_count = 0;
    for (int part = 0; part < 2; part++) {
        uint32_t lo = part == 0 ? rot : 0, hi = part == 0 ? f->threads : rot;
        for (uint32_t t = lo; t < hi; t += TILE) {
            uint32_t m = hi - t < TILE ? hi - t : TILE;
            j.tiles[j.tile_count].t0 = t;
            j.tiles[j.tile_count].m = m;
            j.tiles[j.tile_count].logical0 = part == 0 ? t - rot : f->threads - rot + t;
            j.tile_count++;
        }
    }
    j.first = first;
    j.n = n;
    j.out = out;
    uint64_t per_step = (uint64_t)f->threads * j.width;
    j.step_lo = first / per_step;
    j.step_hi = (first + n - 1) / per_step + 1;
    if (f->engine == KILN_ENGINE_XORWOW) {
        j.xw_powers = kiln_xorwow_powers();
        if (!j.xw_powers) return -1;
    }
    if (f->engine == KILN_ENGINE_MRG) kiln_mrg32k3a_power(1, 76, &j.mrg_next1, &j.mrg_next2);
    /* Enough items to keep every worker busy, but long runs of steps so
     * that restarting a tile's states stays rare. */
    uint64_t steps = j.step_hi - j.step_lo;
    uint64_t want_chunks = ((uint64_t)workers * 4 + j.tile_count - 1) / j.tile_count;
    j.steps_per_item = (steps + want_chunks - 1) / want_chunks;
    if (j.steps_per_item < STEPS_PER_ITEM_MIN) j.steps_per_item = STEPS_PER_ITEM_MIN;
    j.items = j.tile_count * ((steps + j.steps_per_item - 1) / j.steps_per_item);
    atomic_init(&j.next_item, 0);
    if (workers > 1 && n < (1u << 16)) workers = 1;
    if ((uint64_t)workers > j.items) workers = (int)j.items;
    if (workers < 1) workers = 1;
    pthread_t tids[256];
    worker_arg args[256];
    if (workers > 256) workers = 256;
    int started = 0;
    for (int w = 1; w < workers; w++) {
        args[w].j = &j;
        args[w].failed = 0;
        if (pthread_create(&tids[w], NULL, worker, &args[w]) != 0) break;
        started = w;
    }
    args[0].j = &j;
    args[0].failed = 0;
    worker(&args[0]);
    /* The calling thread takes items until none is left, so the fill is
     * complete whenever it had its buffers, whatever the helpers managed. */
    for (int w = 1; w <= started; w++) pthread_join(tids[w], NULL);
    return args[0].failed ? -1 : 0;
}

void kiln_rng_advance_positions(const kiln_rng_fill *f, uint64_t offset, uint64_t n, uint64_t *positions) {
    if (f->engine == KILN_ENGINE_PHILOX) return;
    uint64_t T = f->threads, rot = offset % T;
    if (!f->positions)
        for (uint64_t t = 0; t < T; t++) positions[t] = offset / T + (t < rot ? 1 : 0);
    uint64_t w = step_width(f), r = step_raws(f), steps = (n + w - 1) / w;
    for (uint64_t t = 0; t < T; t++) {
        uint64_t logical = (t + T - rot) % T;
        uint64_t made = logical < steps ? (steps - logical + T - 1) / T : 0;
        positions[t] += made * r;
    }
}
