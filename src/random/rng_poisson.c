/* rng_poisson.c: kiln's Poisson sampler for the CPU provider.
 *
 * cuRAND's host generator builds Poisson samples from a histogram method
 * whose tables it does not document, so kiln does not claim its samples;
 * it draws its own, reproducibly: element i of a fill at generator offset o
 * depends only on (seed, o + i, lambda), whatever the thread count.
 * Uniforms come from Philox4x32-10 keyed by the seed, counter
 * (o + i, round, 'Pois'), two doubles per round. */
#include <math.h>
#include <pthread.h>

#include "random/rng_engine.h"
#include "random/rng_internal.h"

#define POISSON_TAG 0x506f6973u /* "Pois" */

typedef struct uniform_source {
    uint32_t key0, key1;
    uint64_t element;
    uint32_t round;
    uint32_t words[4];
    int left; /* doubles left in words */
} uniform_source;

/* A double in [0, 1) with 53 random bits. */
static double next_uniform(uniform_source *s) {
    if (s->left == 0) {
        uint32_t ctr[4] = {(uint32_t)s->element, (uint32_t)(s->element >> 32), s->round++, POISSON_TAG};
        kiln_philox4x32_10(ctr, s->key0, s->key1, s->words);
        s->left = 2;
    }
    const uint32_t *w = s->words + (2 - s->left) * 2;
    s->left--;
    return ((double)(w[0] >> 5) * 67108864.0 + (double)(w[1] >> 6)) * (1.0 / 9007199254740992.0);
}

/* Inversion: the smallest k with P(X <= k) > u. */
static uint32_t poisson_inversion(double lambda, uniform_source *s) {
    double u = next_uniform(s);
    double p = exp(-lambda), cdf = p;
    uint32_t k = 0;
    while (cdf <= u && k < 10000) {
        k++;
        p *= lambda / k;
        cdf += p;
        if (p == 0.0) break; /* u beyond what double precision can resolve: the tail's end */
    }
    return k;
}

/* Hormann (1993), "The transformed rejection method for generating Poisson
 * random variables" (PTRS), valid for lambda >= 10. */
static uint32_t poisson_ptrs(double lambda, uniform_source *s) {
    double slam = sqrt(lambda), loglam = log(lambda);
    double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
        double u = next_uniform(s) - 0.5, v = next_uniform(s);
        double us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + lambda + 0.43);
        if (us >= 0.07 && v <= vr) return (uint32_t)k;
        if (k < 0 || (us < 0.013 && v > us)) continue;
        int sign;
        if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -lambda + k * loglam - lgamma_r(k + 1, &sign))
            return (uint32_t)k;
    }
}

typedef struct poisson_job {
    uint64_t seed, offset;
    double lambda;
    uint32_t *out;
    size_t begin, end;
} poisson_job;

static void *poisson_run(void *p) {
    poisson_job *j = p;
    uniform_source s = {(uint32_t)j->seed, (uint32_t)(j->seed >> 32) ^ POISSON_TAG, 0, 0, {0, 0, 0, 0}, 0};
    for (size_t i = j->begin; i < j->end; i++) {
        s.element = j->offset + i;
        s.round = 0;
        s.left = 0;
        j->out[i] = j->lambda < 64 ? poisson_inversion(j->lambda, &s) : poisson_ptrs(j->lambda, &s);
    }
    return NULL;
}

void kiln_rng_poisson_host(uint64_t seed, uint64_t offset, double lambda, uint32_t *out, size_t n,
                           int workers) {
    if (workers > 64) workers = 64;
    if (n < 65536 || workers < 1) workers = 1;
    poisson_job jobs[64];
    pthread_t tids[64];
    int started[64] = {0};
    for (int w = 0; w < workers; w++) {
        jobs[w] = (poisson_job){seed,
                                offset,
                                lambda,
                                out,
                                n * (size_t)w / (size_t)workers,
                                n * (size_t)(w + 1) / (size_t)workers};
        if (w > 0) started[w] = pthread_create(&tids[w], NULL, poisson_run, &jobs[w]) == 0;
    }
    poisson_run(&jobs[0]);
    /* A helper that could not start: its share runs here. */
    for (int w = 1; w < workers; w++) {
        if (started[w])
            pthread_join(tids[w], NULL);
        else
            poisson_run(&jobs[w]);
    }
}
