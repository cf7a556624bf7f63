/* cpu_pool.h: the worker threads a CPU context runs blocks on. */
#ifndef KILN_BACKEND_CPU_POOL_H
#define KILN_BACKEND_CPU_POOL_H

#include "kiln.h"

typedef struct kiln_cpu_pool kiln_cpu_pool;
/* Work for one participant, numbered 0 .. participants-1. */
typedef void (*kiln_cpu_job_fn)(void *job, int participant);

/* A pool of `participants` - 1 threads; the thread calling kiln_cpu_pool_run
 * is participant 0, so a run costs no hand-off when there is one participant. */
kiln_status kiln_cpu_pool_create(int participants, kiln_cpu_pool **out);
/* Stops and joins the threads. NULL is a no-op. */
void kiln_cpu_pool_destroy(kiln_cpu_pool *pool);
int kiln_cpu_pool_participants(const kiln_cpu_pool *pool);
/* Calls fn(job, i) once for every participant i, concurrently, and returns
 * when all calls have returned; with `alone`, only fn(job, 0) on the calling
 * thread (work too small to be worth waking anyone). The caller serialises
 * runs. */
void kiln_cpu_pool_run(kiln_cpu_pool *pool, kiln_cpu_job_fn fn, void *job, int alone);

#endif
