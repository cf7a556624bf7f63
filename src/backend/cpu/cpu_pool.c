/* cpu_pool.c: a fixed set of threads that each run one call per job.
 *
 * A run bumps a generation counter and wakes the threads; each runs its
 * participant's share and counts itself done. The launching thread takes
 * share 0 itself instead of sleeping through the launch. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend/cpu/cpu_pool.h"
#include "core/error.h"

typedef struct pool_thread {
    kiln_cpu_pool *pool;
    int participant;
    pthread_t thread;
} pool_thread;

struct kiln_cpu_pool {
    int participants;
    int started;              /* threads actually created */
    pool_thread *threads;     /* participants - 1 */
    pthread_mutex_t mutex;
    pthread_cond_t wake;      /* generation changed or stop */
    pthread_cond_t done;      /* remaining reached 0 */
    uint64_t generation;
    int remaining;
    int stop;
    kiln_cpu_job_fn fn;
    void *job;
};

static void *pool_thread_main(void *arg) {
    pool_thread *t = arg;
    kiln_cpu_pool *p = t->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mutex);
    for (;;) {
        while (p->generation == seen && !p->stop)
            pthread_cond_wait(&p->wake, &p->mutex);
        if (p->stop) break;
        seen = p->generation;
        kiln_cpu_job_fn fn = p->fn;
        void *job = p->job;
        pthread_mutex_unlock(&p->mutex);
        fn(job, t->participant);
        pthread_mutex_lock(&p->mutex);
        if (--p->remaining == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mutex);
    return NULL;
}

kiln_status kiln_cpu_pool_create(int participants, kiln_cpu_pool **out) {
    if (participants < 1) participants = 1;
    kiln_cpu_pool *p = calloc(1, sizeof *p);
    if (!p) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for the CPU thread pool");
    p->participants = participants;
    p->threads = calloc((size_t)participants, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for the CPU thread pool");
    }
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 1; i < participants; i++) {
        pool_thread *t = &p->threads[i - 1];
        t->pool = p;
        t->participant = i;
        int rc = pthread_create(&t->thread, NULL, pool_thread_main, t);
        if (rc != 0) {
            kiln_cpu_pool_destroy(p);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                                  "cannot start CPU worker thread %d of %d (error %d); "
                                  "set KILN_NUM_THREADS lower", i, participants - 1, rc);
        }
        p->started++;
    }
    *out = p;
    return KILN_OK;
}

void kiln_cpu_pool_destroy(kiln_cpu_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mutex);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mutex);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->threads[i].thread, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mutex);
    free(p->threads);
    free(p);
}

int kiln_cpu_pool_participants(const kiln_cpu_pool *p) { return p->participants; }

void kiln_cpu_pool_run(kiln_cpu_pool *p, kiln_cpu_job_fn fn, void *job) {
    if (p->participants > 1) {
        pthread_mutex_lock(&p->mutex);
        p->fn = fn;
        p->job = job;
        p->remaining = p->participants - 1;
        p->generation++;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mutex);
    }
    fn(job, 0);
    if (p->participants > 1) {
        pthread_mutex_lock(&p->mutex);
        while (p->remaining > 0)
            pthread_cond_wait(&p->done, &p->mutex);
        pthread_mutex_unlock(&p->mutex);
    }
}
