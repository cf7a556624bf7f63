/* cpu_pool.c: a fixed set of threads that each run one call per job.
 *
 * A run bumps a generation counter and wakes the threads; each runs its
 * participant's share and counts itself done. The launching thread takes
 * share 0 itself instead of sleeping through the launch.
 *
 * Both sides spin briefly (tens of microseconds) before sleeping on a
 * condition variable: kernels often come in quick succession, and a futex
 * wake-up costs more than a small kernel. */
#include "backend/cpu/cpu_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"

typedef struct pool_thread {
    kiln_cpu_pool *pool;
    int participant;
    pthread_t thread;
} pool_thread;

struct kiln_cpu_pool {
    int participants;
    int started;          /* threads actually created */
    pool_thread *threads; /* participants - 1 */
    pthread_mutex_t mutex;
    pthread_cond_t wake; /* generation changed or stop */
    pthread_cond_t done; /* remaining reached 0 */
    atomic_ullong generation;
    atomic_int remaining;
    atomic_int stop;
    kiln_cpu_job_fn fn;
    void *job;
};

#define SPIN_ROUNDS 2000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void *pool_thread_main(void *arg) {
    pool_thread *t = arg;
    kiln_cpu_pool *p = t->pool;
    unsigned long long seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN_ROUNDS && atomic_load(&p->generation) == seen && !atomic_load(&p->stop); i++)
            cpu_relax();
        if (atomic_load(&p->generation) == seen) {
            pthread_mutex_lock(&p->mutex);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mutex);
            pthread_mutex_unlock(&p->mutex);
        }
        if (atomic_load(&p->stop)) break;
        /* fn and job were written before the generation's (seq_cst) bump. */
        seen = atomic_load(&p->generation);
        kiln_cpu_job_fn fn = p->fn;
        void *job = p->job;
        fn(job, t->participant);
        if (atomic_fetch_sub(&p->remaining, 1) == 1) {
            pthread_mutex_lock(&p->mutex);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mutex);
        }
    }
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
    atomic_init(&p->generation, 0);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->stop, 0);
    for (int i = 1; i < participants; i++) {
        pool_thread *t = &p->threads[i - 1];
        t->pool = p;
        t->participant = i;
        int rc = pthread_create(&t->thread, NULL, pool_thread_main, t);
        if (rc != 0) {
            kiln_cpu_pool_destroy(p);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                                  "cannot start CPU worker thread %d of %d (error %d); "
                                  "set KILN_NUM_THREADS lower",
                                  i, participants - 1, rc);
        }
        p->started++;
    }
    *out = p;
    return KILN_OK;
}

void kiln_cpu_pool_destroy(kiln_cpu_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mutex);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mutex);
    for (int i = 0; i < p->started; i++) pthread_join(p->threads[i].thread, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mutex);
    free(p->threads);
    free(p);
}

int kiln_cpu_pool_participants(const kiln_cpu_pool *p) { return p->participants; }

void kiln_cpu_pool_run(kiln_cpu_pool *p, kiln_cpu_job_fn fn, void *job, int alone) {
    if (alone) {
        fn(job, 0);
        return;
    }
    if (p->participants > 1) {
        /* Every thread has finished the previous run (remaining was 0), so
         * none reads fn or job while they change. */
        p->fn = fn;
        p->job = job;
        atomic_store(&p->remaining, p->participants - 1);
        pthread_mutex_lock(&p->mutex);
        atomic_fetch_add(&p->generation, 1);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mutex);
    }
    fn(job, 0);
    if (p->participants > 1) {
        for (int i = 0; i < SPIN_ROUNDS && atomic_load(&p->remaining) > 0; i++) cpu_relax();
        if (atomic_load(&p->remaining) > 0) {
            pthread_mutex_lock(&p->mutex);
            while (atomic_load(&p->remaining) > 0) pthread_cond_wait(&p->done, &p->mutex);
            pthread_mutex_unlock(&p->mutex);
        }
    }
}
