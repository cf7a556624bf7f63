/* copy_pool.c: threads that each copy one share of a run's bytes.
 *
 * A run publishes its pieces under the mutex, bumps a generation and wakes
 * the threads; thread i copies share i, the caller share 0, and the caller
 * waits until every share is done. Runs are a few per megabytes-long chunk,
 * so a condition-variable wake-up (tens of microseconds) is noise next to
 * the copy, and the threads sleep, never spin, between runs. */
#include "core/copy_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct copy_thread {
    kiln_copy_pool *pool;
    int index; /* 1 .. threads-1: the share it copies */
    pthread_t thread;
} copy_thread;

struct kiln_copy_pool {
    int threads; /* participants, the caller included */
    int started; /* threads actually created */
    copy_thread *workers;
    pthread_mutex_t run_lock; /* one run at a time */
    pthread_mutex_t mutex;    /* guards everything below */
    pthread_cond_t wake;      /* generation changed, or stop */
    pthread_cond_t done;      /* remaining reached 0 */
    unsigned long long generation;
    int stop;
    int remaining; /* shares of the run not yet copied by the threads */
    const kiln_copy_piece *pieces;
    int count;
    size_t total;
    int parts;
};

static size_t boundary(size_t total, int parts, int i) {
    if (i <= 0) return 0;
    if (i >= parts) return total;
    size_t p = (size_t)parts, k = (size_t)i;
    /* floor(total * i / parts) without overflow: (total % p) * k < p * p. */
    size_t b = total / p * k + total % p * k / p;
    return b & ~(KILN_COPY_SPLIT_ALIGN - 1);
}

void kiln_copy_share(size_t total, int parts, int part, size_t *lo, size_t *hi) {
    *lo = boundary(total, parts, part);
    *hi = boundary(total, parts, part + 1);
}

void kiln_copy_range(const kiln_copy_piece *pieces, int count, size_t lo, size_t hi) {
    size_t off = 0;
    for (int i = 0; i < count && off < hi; i++) {
        size_t end = off + pieces[i].bytes;
        if (end > lo) {
            size_t a = lo > off ? lo : off, b = hi < end ? hi : end;
            memcpy((char *)pieces[i].dst + (a - off), (const char *)pieces[i].src + (a - off), b - a);
        }
        off = end;
    }
}

static void *copy_thread_main(void *arg) {
    copy_thread *t = arg;
    kiln_copy_pool *p = t->pool;
    unsigned long long seen = 0;
    pthread_mutex_lock(&p->mutex);
    for (;;) {
        while (p->generation == seen && !p->stop) pthread_cond_wait(&p->wake, &p->mutex);
        if (p->stop) break;
        seen = p->generation;
        if (t->index >= p->parts) continue; /* a small run: not needed */
        const kiln_copy_piece *pieces = p->pieces;
        int count = p->count;
        size_t lo, hi;
        kiln_copy_share(p->total, p->parts, t->index, &lo, &hi);
        pthread_mutex_unlock(&p->mutex);
        kiln_copy_range(pieces, count, lo, hi);
        pthread_mutex_lock(&p->mutex);
        if (--p->remaining == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mutex);
    return NULL;
}

kiln_status kiln_copy_pool_create(int threads, kiln_copy_pool **out) {
    if (threads < 1) threads = 1;
    kiln_copy_pool *p = calloc(1, sizeof *p);
    copy_thread *w = calloc((size_t)threads, sizeof *w);
    if (!p || !w) {
        free(p);
        free(w);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for the copy threads");
    }
    p->threads = threads;
    p->workers = w;
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 1; i < threads; i++) {
        copy_thread *t = &w[p->started];
        t->pool = p;
        t->index = i;
        int rc = pthread_create(&t->thread, NULL, copy_thread_main, t);
        if (rc != 0) {
            kiln_copy_pool_destroy(p);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "cannot start copy thread %d of %d (error %d)", i,
                                  threads - 1, rc);
        }
        p->started++;
    }
    *out = p;
    return KILN_OK;
}

void kiln_copy_pool_destroy(kiln_copy_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mutex);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mutex);
    for (int i = 0; i < p->started; i++) pthread_join(p->workers[i].thread, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mutex);
    pthread_mutex_destroy(&p->run_lock);
    free(p->workers);
    free(p);
}

int kiln_copy_pool_threads(const kiln_copy_pool *p) { return p ? p->threads : 1; }

void kiln_copy_pool_run(kiln_copy_pool *p, const kiln_copy_piece *pieces, int count) {
    size_t total = 0;
    for (int i = 0; i < count; i++) total += pieces[i].bytes;
    size_t most = total / KILN_COPY_MIN_SHARE;
    int parts = p ? p->threads : 1;
    if ((size_t)parts > most) parts = most > 1 ? (int)most : 1;
    if (parts <= 1 || pthread_mutex_trylock(&p->run_lock) != 0) {
        kiln_copy_range(pieces, count, 0, total);
        return;
    }
    pthread_mutex_lock(&p->mutex);
    p->pieces = pieces;
    p->count = count;
    p->total = total;
    p->parts = parts;
    p->remaining = parts - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mutex);

    size_t lo, hi;
    kiln_copy_share(total, parts, 0, &lo, &hi);
    kiln_copy_range(pieces, count, lo, hi);

    pthread_mutex_lock(&p->mutex);
    while (p->remaining > 0) pthread_cond_wait(&p->done, &p->mutex);
    p->pieces = NULL;
    pthread_mutex_unlock(&p->mutex);
    pthread_mutex_unlock(&p->run_lock);
}
