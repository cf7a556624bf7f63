/* fft_cache.c: the per-context plan cache and the scaling ufunc.
 *
 * A repeated transform must cost no planning (FFTW_MEASURE takes
 * milliseconds to seconds; cuFFT plans allocate a work area), so plans are
 * kept per context, keyed by everything a plan depends on (kind, direction,
 * normalisation, dtypes, shapes, strides, axes, in-place, FFTW's alignment).
 * The cache is small and scanned linearly: a lookup is a few hundred bytes
 * of memcmp per entry, far below the 5 us budget of a cached call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "fft/fft.h"

#define CACHE_CAPACITY 64
/* Fused plans that could not be made (kiln_fft_convolve then multiplies
 * in a pass of its own): remembered, so that the next call does not pay
 * the callback's compile and cuFFT's refusal again. */
#define REFUSED_CAPACITY 16

typedef struct refused_plan {
    kiln_fft_key key;
    char why[256];
} refused_plan;

struct kiln_fft_cache {
    pthread_mutex_t lock;
    kiln_fft_plan *plans[CACHE_CAPACITY]; /* most recently used first */
    int count;
    refused_plan refused[REFUSED_CAPACITY]; /* a ring, under lock */
    int refused_count, refused_next;
    pthread_mutex_t scale_lock; /* compiling the ufunc must not stall plan lookups */
    kiln_ufunc *scale;
    kiln_ufunc *multiply; /* kiln_fft_convolve's spectra product */
};

static void cache_on_close(kiln_context *ctx, void *state);
static void cache_destroy(kiln_context *ctx, void *state);

/* Plans and the scaling ufunc hold the context: released at kiln_close,
 * and cuFFT plans must go before the device does in any case. */
static const kiln_slot_class fft_slot = {
    .name = "FFT plans",
    .close_stage = KILN_SLOT_CLOSE_RELEASE,
    .on_close = cache_on_close,
    .destroy = cache_destroy,
};

static kiln_status cache_create(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    (void)arg;
    kiln_fft_cache *c = calloc(1, sizeof *c);
    if (!c) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->scale_lock, NULL);
    *state = c;
    return KILN_OK;
}

static kiln_status cache_of(kiln_context *ctx, kiln_fft_cache **out) {
    kiln_status open = kiln_context_check_open(ctx, "FFT");
    if (open != KILN_OK) return open;
    void *state = NULL;
    kiln_status s = kiln_slot_get(ctx, &fft_slot, cache_create, NULL, &state);
    if (s != KILN_OK) return s;
    *out = state;
    return KILN_OK;
}

static void plan_unref(kiln_fft_plan *p) {
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) kiln_fft_plan_destroy(p);
}

/* Moves entry i to the front. */
static void touch(kiln_fft_cache *c, int i) {
    kiln_fft_plan *p = c->plans[i];
    memmove(c->plans + 1, c->plans, sizeof c->plans[0] * (size_t)i);
    c->plans[0] = p;
}

static kiln_fft_plan *find_locked(kiln_fft_cache *c, const kiln_fft_key *key) {
    for (int i = 0; i < c->count; i++)
        if (memcmp(&c->plans[i]->key, key, sizeof *key) == 0) {
            kiln_fft_plan *p = c->plans[i];
            if (i > 0) touch(c, i);
            atomic_fetch_add(&p->refs, 1);
            return p;
        }
    return NULL;
}

kiln_status kiln_fft_cache_get(kiln_context *ctx, const kiln_fft_key *key, kiln_fft_plan **out) {
    kiln_fft_cache *c = NULL;
    kiln_status s = cache_of(ctx, &c);
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&c->lock);
    kiln_fft_plan *p = find_locked(c, key);
    char why[256] = "";
    for (int i = 0; !p && key->fuse && i < c->refused_count; i++)
        if (memcmp(&c->refused[i].key, key, sizeof *key) == 0) memcpy(why, c->refused[i].why, sizeof why);
    pthread_mutex_unlock(&c->lock);
    if (p) {
        *out = p;
        return KILN_OK;
    }
    if (why[0]) return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s", why);
    /* Planning can take long: outside the lock. Two threads planning the
     * same key keep the first plan cached and the other is used once. */
    kiln_fft_plan *made = NULL;
    if ((s = kiln_fft_plan_make(ctx, key, &made)) != KILN_OK) {
        if (s == KILN_ERR_UNSUPPORTED && key->fuse) {
            pthread_mutex_lock(&c->lock);
            refused_plan *r = &c->refused[c->refused_next];
            c->refused_next = (c->refused_next + 1) % REFUSED_CAPACITY;
            if (c->refused_count < REFUSED_CAPACITY) c->refused_count++;
            r->key = *key;
            snprintf(r->why, sizeof r->why, "%s", kiln_last_error());
            pthread_mutex_unlock(&c->lock);
        }
        return s;
    }
    kiln_fft_plan *evicted = NULL;
    pthread_mutex_lock(&c->lock);
    p = find_locked(c, key);
    if (!p) {
        if (c->count == CACHE_CAPACITY) evicted = c->plans[--c->count];
        memmove(c->plans + 1, c->plans, sizeof c->plans[0] * (size_t)c->count);
        c->plans[0] = made;
        c->count++;
        atomic_fetch_add(&made->refs, 1); /* the cache's reference */
        p = made;
        made = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    plan_unref(evicted);
    if (made) plan_unref(made);
    *out = p;
    return KILN_OK;
}

static void cache_destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    kiln_fft_cache *c = state;
    for (int i = 0; i < c->count; i++) {
        /* A plan the user still holds must not reach the closed context
         * later (cuFFT plans belong to its device). */
        if (atomic_load(&c->plans[i]->refs) > 1) kiln_fft_plan_orphan(c->plans[i]);
        plan_unref(c->plans[i]);
    }
    kiln_ufunc_release(c->scale);
    kiln_ufunc_release(c->multiply);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->scale_lock);
    free(c);
}

static void cache_on_close(kiln_context *ctx, void *state) {
    (void)state;
    void *c = kiln_slot_take(ctx, &fft_slot);
    if (c) cache_destroy(ctx, c);
}

/* One elementwise kernel per dtype, compiled once per context (disk-cached):
 * out = x * s with s in the real type, in place on the transform's output. */
kiln_status kiln_fft_scale_ufunc(kiln_context *ctx, kiln_ufunc **out) {
    kiln_fft_cache *c = NULL;
    kiln_status s = cache_of(ctx, &c);
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&c->scale_lock);
    if (!c->scale)
        s = kiln_vectorize(ctx, "kiln_fft_scale", "c8(c8,f4); c16(c16,f8); f4(f4,f4); f8(f8,f8)", "x, s",
                           "return x * s;", NULL, &c->scale);
    kiln_ufunc *f = c->scale;
    pthread_mutex_unlock(&c->scale_lock);
    if (s != KILN_OK) return kiln_prefix_error(s, "compiling the FFT's normalisation kernel: ");
    *out = f;
    return KILN_OK;
}

void kiln_fft_plan_release(kiln_fft_plan *plan) { plan_unref(plan); }

/* out = a * b * s (complex a, b; s in the real type): the product of two
 * spectra with the inverse transform's 1/n folded in. */
kiln_status kiln_fft_multiply_ufunc(kiln_context *ctx, kiln_ufunc **out) {
    kiln_fft_cache *c = NULL;
    kiln_status s = cache_of(ctx, &c);
    if (s != KILN_OK) return s;
    pthread_mutex_lock(&c->scale_lock);
    if (!c->multiply)
        s = kiln_vectorize(ctx, "kiln_fft_multiply", "c8(c8,c8,f4); c16(c16,c16,f8)", "a, b, s",
                           "return a * b * s;", NULL, &c->multiply);
    kiln_ufunc *f = c->multiply;
    pthread_mutex_unlock(&c->scale_lock);
    if (s != KILN_OK) return kiln_prefix_error(s, "compiling the convolution's product kernel: ");
    *out = f;
    return KILN_OK;
}
