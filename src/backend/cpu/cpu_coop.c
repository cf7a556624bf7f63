/* cpu_coop.c: cooperative launches of more than one block on the CPU.
 *
 * this_grid().sync() needs every block resident at once, as
 * cuLaunchCooperativeKernel gives on a GPU: each block gets an OS thread of
 * its own, running its threads as fibers as in an ordinary launch
 * (cpu_launch.c), and a grid sync is a block barrier after which the
 * block's first fiber to resume waits for the other blocks. One OS thread
 * per block rather than every fiber on one worker: __shared__ variables are
 * thread_local (kiln_cpu_prelude.cuh), one set per OS thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_launch_impl.h"
#include "core/error.h"

/* The grid-wide barrier of a cooperative launch, shared by its blocks. */
typedef struct grid_barrier {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned long long blocks, arrived, departed, generation;
    unsigned long long first_departed; /* the first block whose threads all returned */
    int start;                         /* 0 until every OS thread exists; 1 run, -1 give up */
    int abandoned;                     /* a block faulted or left: waiters stop */
    char why[400];
} grid_barrier;

/* Every block resident at once means an OS thread and a set of fiber stacks
 * per block: 1024 blocks keeps the thread count sane, and 16384 threads in
 * all keeps the fiber stacks' guard mappings (two memory areas each) well
 * under Linux's default limit of 65530 areas per process. */
#define KILN_CPU_COOP_MAX_BLOCKS 1024
#define KILN_CPU_COOP_MAX_THREADS 16384

/* Ends the barrier for everyone: the waiters leave the launch with `why`. */
static void abandon_grid_locked(grid_barrier *g, const char *why) {
    if (g->abandoned) return;
    g->abandoned = 1;
    snprintf(g->why, sizeof g->why, "%s", why);
    pthread_cond_broadcast(&g->cond);
}

static void departed_message(const launch_job *job, unsigned long long block, char *out, size_t cap) {
    unsigned where[6];
    kiln_cpu_block_thread(job->cfg, block, 0, where);
    snprintf(out, cap,
             "this_grid().sync(): the threads of block (%u,%u,%u) all returned while other blocks wait at a "
             "grid sync (every block must reach each one; on a GPU this hangs)",
             where[0], where[1], where[2]);
}

/* this_grid().sync(): first a block barrier, so that the whole block has
 * arrived; the block's first fiber to resume then waits for the other
 * blocks while its own fibers stay parked, and the rest of the block find
 * the wait done. The mutex orders every block's writes before the
 * barrier against every read after it, which makes the sync a memory fence
 * across the grid as on the GPU. */
static void grid_sync(void *sched) {
    kiln_cpu_worker *w = sched;
    unsigned me = w->current;
    int arrivals;
    (void)kiln_cpu_fiber_barrier(w, 0, &arrivals);
    if (w->grid_phase == w->phase[me]) return;
    w->grid_phase = w->phase[me];
    launch_job *job = w->job;
    grid_barrier *g = job->grid;
    char why[sizeof g->why];
    pthread_mutex_lock(&g->lock);
    unsigned long long generation = g->generation;
    if (!g->abandoned) {
        if (++g->arrived == g->blocks) {
            g->arrived = 0;
            g->generation++;
            pthread_cond_broadcast(&g->cond);
        } else if (g->arrived + g->departed == g->blocks) {
            departed_message(job, g->first_departed, why, sizeof why);
            abandon_grid_locked(g, why);
        }
        while (generation == g->generation && !g->abandoned) pthread_cond_wait(&g->cond, &g->lock);
    }
    int passed = generation != g->generation;
    snprintf(why, sizeof why, "%s", g->why);
    pthread_mutex_unlock(&g->lock);
    if (!passed) w->abi.trap(w, why);
}

/* A block whose threads all returned never arrives again: if the others
 * are waiting, they would wait for ever. */
static void depart_grid(launch_job *job, unsigned long long block) {
    grid_barrier *g = job->grid;
    pthread_mutex_lock(&g->lock);
    if (g->departed++ == 0) g->first_departed = block;
    if (g->arrived > 0 && g->arrived + g->departed == g->blocks) {
        char why[sizeof g->why];
        departed_message(job, block, why, sizeof why);
        abandon_grid_locked(g, why);
    }
    pthread_mutex_unlock(&g->lock);
}

/* One block of a cooperative launch, on an OS thread of its own. */
static void run_coop_block(launch_job *job, unsigned long long block) {
    kiln_cpu_worker *w = &job->workers[block];
    grid_barrier *g = job->grid;
    const kiln_launch_config *cfg = job->cfg;
    pthread_mutex_lock(&g->lock);
    while (g->start == 0) pthread_cond_wait(&g->cond, &g->lock);
    int run = g->start > 0;
    pthread_mutex_unlock(&g->lock);
    if (!run) return;
    kiln_cpu_bind_worker(job, w);
    w->abi.grid_sync = grid_sync;
    unsigned threads = cfg->block[0] * cfg->block[1] * cfg->block[2];
    if (sigsetjmp(w->fault.jump, 0) != 0) { /* a fault, or a grid sync given up */
        kiln_cpu_fault_disarm();
        kiln_cpu_note_caught(job, w);
        pthread_mutex_lock(&g->lock);
        abandon_grid_locked(g, "this_grid().sync(): another block of the launch faulted");
        pthread_mutex_unlock(&g->lock);
        return;
    }
    kiln_cpu_fault_arm(&w->fault);
    kiln_cpu_run_block_with_fibers(w, block, threads);
    kiln_cpu_fault_disarm();
    depart_grid(job, block);
}

typedef struct coop_seat {
    launch_job *job;
    unsigned long long block;
} coop_seat;

static void *coop_thread(void *arg) {
    coop_seat *seat = arg;
    run_coop_block(seat->job, seat->block);
    return NULL;
}

static void free_coop_workers(kiln_cpu_worker *workers, unsigned long long blocks) {
    for (unsigned long long i = 0; workers && i < blocks; i++) {
        kiln_cpu_worker_free(&workers[i]);
    }
    free(workers);
}

/* A worker per block, with what prepare_workers gives the pool's. */
static kiln_status make_coop_workers(kiln_backend_state *st, const kiln_backend_function *fn,
                                     const kiln_launch_config *cfg, unsigned long long blocks,
                                     kiln_cpu_worker **out) {
    unsigned threads = cfg->block[0] * cfg->block[1] * cfg->block[2];
    size_t stack_bytes, guard_bytes;
    kiln_cpu_fiber_stack_sizes(st, fn, &stack_bytes, &guard_bytes);
    kiln_cpu_worker *workers = calloc(blocks, sizeof *workers);
    if (!workers) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %llu blocks", blocks);
    *out = workers;
    for (unsigned long long i = 0; i < blocks; i++) {
        kiln_cpu_worker *w = &workers[i];
        w->exchange = calloc(threads, sizeof *w->exchange);
        if (cfg->shared_bytes) w->dyn_shared = aligned_alloc(64, (cfg->shared_bytes + 63) & ~(size_t)63);
        if (!w->exchange || (cfg->shared_bytes && !w->dyn_shared))
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for %llu resident blocks",
                                  blocks);
        kiln_status s = kiln_cpu_ensure_fibers(w, threads, stack_bytes, guard_bytes);
        if (s != KILN_OK) return s;
    }
    return KILN_OK;
}

/* Starts an OS thread for each block but the first, which the caller runs;
 * none runs kernel code until all exist, so a thread that cannot be
 * created leaves no block waiting at a grid sync for it. */
static kiln_status run_coop_grid(launch_job *job) {
    unsigned long long blocks = job->blocks, started = 0;
    pthread_t *ids = calloc(blocks, sizeof *ids);
    coop_seat *seats = calloc(blocks, sizeof *seats);
    kiln_status s = ids && seats ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    /* The kernel's threads run on fiber stacks; the OS thread's own stack
     * holds only the launch loop and the fault report. */
    pthread_attr_setstacksize(&attr, (size_t)256 << 10);
    for (unsigned long long b = 1; s == KILN_OK && b < blocks; b++) {
        seats[b].job = job;
        seats[b].block = b;
        int e = pthread_create(&ids[b], &attr, coop_thread, &seats[b]);
        if (e != 0)
            s = kiln_set_error(
                KILN_ERR_OUT_OF_MEMORY,
                "a cooperative launch of %llu blocks needs an OS thread per block; thread %llu "
                "could not be created (%s)",
                blocks, b + 1, strerror(e));
        else
            started = b;
    }
    pthread_attr_destroy(&attr);
    grid_barrier *g = job->grid;
    pthread_mutex_lock(&g->lock);
    g->start = s == KILN_OK ? 1 : -1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    if (s == KILN_OK) run_coop_block(job, 0);
    for (unsigned long long b = 1; b <= started; b++) pthread_join(ids[b], NULL);
    free(ids);
    free(seats);
    return s;
}

/* One block is the whole grid: the ordinary launch keeps it. More run with
 * every block resident (the header comment); kernels without barriers have
 * no grid sync and run as usual. */
kiln_status kiln_cpu_launch_cooperative(kiln_backend_state *st, kiln_backend_function *fn,
                                        const kiln_launch_config *cfg, kiln_backend_stream *stream,
                                        void **args) {
    unsigned long long blocks = (unsigned long long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
    unsigned long long threads = (unsigned long long)cfg->block[0] * cfg->block[1] * cfg->block[2];
    if (blocks <= 1 || !fn->thread || threads == 0 || threads > KILN_CPU_MAX_THREADS_PER_BLOCK)
        return kiln_cpu_launch(st, fn, cfg, stream, args);
    if (blocks > KILN_CPU_COOP_MAX_BLOCKS || blocks * threads > KILN_CPU_COOP_MAX_THREADS)
        return kiln_set_error(KILN_ERR_LAUNCH_CONFIG,
                              "a cooperative launch of %llu blocks of %llu threads (%llu threads): the CPU "
                              "backend keeps at most %d blocks and %d threads in all resident at once",
                              blocks, threads, blocks * threads, KILN_CPU_COOP_MAX_BLOCKS,
                              KILN_CPU_COOP_MAX_THREADS);
    if (stream && stream->capture)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "a cooperative launch of %llu blocks cannot be captured into a graph on the "
                              "CPU backend (its graphs replay plain launches)",
                              blocks);
    launch_job job;
    memset(&job, 0, sizeof job);
    grid_barrier grid;
    memset(&grid, 0, sizeof grid);
    pthread_mutex_init(&grid.lock, NULL);
    pthread_cond_init(&grid.cond, NULL);
    grid.blocks = blocks;
    job.st = st;
    job.fn = fn;
    job.cfg = cfg;
    job.args = args;
    job.blocks = blocks;
    job.chunk = 1;
    job.grid = &grid;
    atomic_init(&job.next_block, 0);
    pthread_mutex_init(&job.fault_lock, NULL);
    pthread_mutex_lock(&st->launch_lock);
    kiln_status s = kiln_cpu_fault_init();
    if (s == KILN_OK) s = make_coop_workers(st, fn, cfg, blocks, &job.workers);
    if (s == KILN_OK) {
        fn->module->begin(cfg->grid, cfg->block);
        atomic_fetch_add(&fn->module->running, 1);
        s = run_coop_grid(&job);
        atomic_fetch_sub(&fn->module->running, 1);
    }
    pthread_mutex_unlock(&st->launch_lock);
    free_coop_workers(job.workers, blocks);
    pthread_mutex_destroy(&job.fault_lock);
    pthread_cond_destroy(&grid.cond);
    pthread_mutex_destroy(&grid.lock);
    if (s != KILN_OK) return s;
    return kiln_cpu_launch_outcome(&job);
}
