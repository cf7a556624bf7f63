/* cpu_launch_impl.h: what cpu_launch.c (the launch loop, fibers, faults)
 * shares with cpu_coop.c (cooperative launches): the per-participant worker,
 * the launch job, and the pieces both kinds of launch are made of. */
#ifndef KILN_BACKEND_CPU_LAUNCH_IMPL_H
#define KILN_BACKEND_CPU_LAUNCH_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend/cpu/cpu_fault.h"
#include "backend/cpu/cpu_fiber.h"
#include "backend/cpu/cpu_internal.h"

typedef struct launch_job launch_job;

/* A participant's resources, kept across launches. */
typedef struct kiln_cpu_worker {
    kiln_cpu_block_abi abi;
    launch_job *job;
    /* Fibers: stacks are mmap'ed once (a guard page below each) and reused. */
    unsigned char *stacks;
    size_t stacks_bytes;
    unsigned stack_count;
    size_t stack_stride;
    size_t guard_bytes; /* PROT_NONE at the bottom of each stride */
    kiln_fiber home;    /* the worker's own context */
    kiln_fiber *fibers;
    unsigned *next, *prev, *phase;
    unsigned current, live;
    unsigned long long block;
    int counts[3], arrivals[3];
    /* Per phase slot: whether its first arrival came through a warp
     * function's barrier (KILN_CPU_BARRIER_WARP) or a block's. */
    unsigned char warp_kind[3];
    unsigned long long *exchange;
    void *dyn_shared;
    size_t dyn_shared_bytes;
    /* Fault containment (cpu_fault.h): where the worker jumps back to. */
    kiln_cpu_fault fault;
    unsigned long long chunk_first, chunk_end; /* fast path: the chunk being run */
    unsigned grid_phase;                       /* cooperative: the block barrier whose grid wait is done */
} kiln_cpu_worker;

struct launch_job {
    kiln_backend_state *st;
    kiln_backend_function *fn;
    const kiln_launch_config *cfg;
    void **args;
    kiln_cpu_worker *workers;
    unsigned long long blocks, chunk;
    atomic_ullong next_block;
    pthread_mutex_t fault_lock;
    kiln_status fault; /* first device-side failure */
    char fault_message[1024];
    /* The first fault caught on a worker: what, and where when known. */
    int caught;
    char what[600];
    unsigned where[6];                         /* block x,y,z, thread x,y,z */
    int where_known;                           /* 0 none, 1 block only, 2 block and thread */
    int probing;                               /* re-run through fn->probe (find_faulting_thread) */
    unsigned long long chunk_first, chunk_end; /* fast path: the faulting worker's chunk */
    struct grid_barrier *grid;                 /* cooperative launches of more than one block (cpu_coop.c) */
};

/* Block and thread indices of a rank within the launch's block shape. */
void kiln_cpu_block_thread(const kiln_launch_config *cfg, unsigned long long block, unsigned rank,
                           unsigned *where);
/* After the jump out of a fault: records what and where for the launch. */
void kiln_cpu_note_caught(launch_job *job, kiln_cpu_worker *w);
/* The block barrier of the fiber path (the ABI's `barrier`). */
int kiln_cpu_fiber_barrier(void *sched, int predicate, int *arrivals);
/* Fiber stacks and their guards for one launch of fn. */
void kiln_cpu_fiber_stack_sizes(const kiln_backend_state *st, const kiln_backend_function *fn,
                                size_t *stack_bytes, size_t *guard_bytes);
kiln_status kiln_cpu_ensure_fibers(kiln_cpu_worker *w, unsigned threads, size_t stack_bytes,
                                   size_t guard_bytes);
void kiln_cpu_release_stacks(kiln_cpu_worker *w);
/* Runs every thread of `block` as a fiber until all have returned. */
void kiln_cpu_run_block_with_fibers(kiln_cpu_worker *w, unsigned long long block, unsigned threads);
/* Fills the worker's ABI for the job (grid sync: the plain launch's, which faults). */
void kiln_cpu_bind_worker(launch_job *job, kiln_cpu_worker *w);
/* What a launch that ran reports. */
kiln_status kiln_cpu_launch_outcome(const launch_job *job);
/* Frees what a worker holds (not the worker itself). */
void kiln_cpu_worker_free(kiln_cpu_worker *w);

#endif
