/* cpu_launch.c: running a grid on the worker pool.
 *
 * Launches are synchronous: kiln_cpu_launch returns when every block has run,
 * which trivially keeps each stream's order (and every stream's, so streams
 * are only names on the CPU). Participants take chunks of consecutive blocks
 * from a shared counter until none are left.
 *
 * Fast path (no barriers in the source): the module's loop runs each block's
 * threads one after another. Barrier path: each thread of a block is a fiber
 * on the worker; a barrier switches to the next live fiber in rank order, so
 * when the last one arrives the first resumes, having seen every thread
 * arrive. A thread that returns leaves the ring; the block ends when the ring
 * is empty.
 *
 * Cooperative launches of more than one block: cpu_coop.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define KILN_CPU_UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define KILN_CPU_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#include "backend/cpu/cpu_fault.h"
#include "backend/cpu/cpu_fiber.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_launch_impl.h"
#include "core/error.h"

static void record_fault(launch_job *job, kiln_status status, const char *message) {
    pthread_mutex_lock(&job->fault_lock);
    if (job->fault == KILN_OK) {
        job->fault = status;
        snprintf(job->fault_message, sizeof job->fault_message, "%s", message);
    }
    pthread_mutex_unlock(&job->fault_lock);
}

/* A failed device assert or __trap(): ends the thread's part of the launch
 * like a fault (cpu_fault.h). Only if the worker is not armed (it always is
 * in a launch) is the message recorded and the thread let go on. */
static void trap(void *sched, const char *message) {
    kiln_cpu_fault_trap(message);
    kiln_cpu_worker *w = sched;
    record_fault(w->job, KILN_ERR_DEVICE_FAULT, message);
}

/* Block and thread indices of a rank within the launch's block shape. */
void kiln_cpu_block_thread(const kiln_launch_config *cfg, unsigned long long block, unsigned rank,
                           unsigned *where) {
    where[0] = (unsigned)(block % cfg->grid[0]);
    where[1] = (unsigned)(block / cfg->grid[0] % cfg->grid[1]);
    where[2] = (unsigned)(block / cfg->grid[0] / cfg->grid[1]);
    where[3] = rank % cfg->block[0];
    where[4] = rank / cfg->block[0] % cfg->block[1];
    where[5] = rank / cfg->block[0] / cfg->block[1];
}

/* Is addr in the guard pages under a fiber stack, or just below the
 * worker thread's own stack? Then the fault is a stack overflow. */
static int stack_overflow(const kiln_cpu_worker *w, uintptr_t addr, size_t page, const char **which) {
    uintptr_t lo = (uintptr_t)w->stacks, hi = lo + w->stacks_bytes;
    if (w->stacks && addr >= lo && addr < hi && (addr - lo) % w->stack_stride < w->guard_bytes) {
        *which = "fiber";
        return 1;
    }
    pthread_attr_t attr;
    void *base = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &base, &size);
        pthread_attr_destroy(&attr);
        uintptr_t b = (uintptr_t)base;
        if (base && addr < b + page && addr + ((uintptr_t)1 << 20) >= b) {
            *which = "thread";
            return 1;
        }
    }
    return 0;
}

/* A fault in the guard of one of the context's buffers (every buffer has
 * one; checked mode puts it right at the end) is an out-of-bounds access to
 * it: which kernel argument points into it, and at which element. 0 if addr
 * is in no guard. */
static int describe_out_of_bounds(const launch_job *job, const kiln_cpu_worker *w, char *out, size_t cap) {
    kiln_cpu_mapping map;
    if (!kiln_cpu_memory_guard_hit(job->st, w->fault.address, &map)) return 0;
    const kiln_backend_function *fn = job->fn;
    int arg = -1;
    size_t elem = 1;
    for (int i = 0; i < fn->param_count && i < 128 && arg < 0; i++) {
        if (!fn->pointee_size[i]) continue;
        uintptr_t v;
        memcpy(&v, job->args[i], sizeof v);
        if (v >= (uintptr_t)map.base && v < (uintptr_t)map.base + map.total) {
            arg = i;
            elem = fn->pointee_size[i];
        }
    }
    long long offset = (long long)((intptr_t)w->fault.address - (intptr_t)map.ptr);
    long long index =
        offset >= 0 ? offset / (long long)elem : -((-offset + (long long)elem - 1) / (long long)elem);
    char whose[64];
    if (arg >= 0)
        snprintf(whose, sizeof whose, "argument %d", arg);
    else
        snprintf(whose, sizeof whose, "a buffer");
    snprintf(out, cap,
             "%sout-of-bounds %s of %s (%zu bytes: %zu elements of %zu bytes) at element index %lld, %lld "
             "bytes %s",
             job->st->checked ? "checked mode (KILN_CPU_CHECKED): " : "",
             w->fault.write == 1   ? "write"
             : w->fault.write == 0 ? "read"
                                   : "access",
             whose, map.bytes, map.bytes / elem, elem, index,
             offset >= 0 ? offset - (long long)map.bytes : -offset,
             offset >= 0 ? "past its end" : "before its start");
    return 1;
}

/* After the jump out of a fault: what and where, for the launch's error. */
void kiln_cpu_note_caught(launch_job *job, kiln_cpu_worker *w) {
    char what[600];
    const char *which = NULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (w->fault.signo == SIGSEGV && describe_out_of_bounds(job, w, what, sizeof what)) {
        /* described */
    } else if (w->fault.signo == SIGSEGV && stack_overflow(w, (uintptr_t)w->fault.address, page, &which)) {
        if (which[0] == 'f')
            snprintf(what, sizeof what,
                     "stack overflow: the thread's frames outgrew its fiber stack of %zu KiB (deep recursion "
                     "or large local arrays; KILN_CPU_STACK_KB sets the size)",
                     (w->stack_stride - w->guard_bytes) / 1024);
        else
            snprintf(what, sizeof what, "stack overflow of the worker thread's stack (deep recursion?)");
    } else
        kiln_cpu_fault_describe(&w->fault, what, sizeof what);
    unsigned where[6] = {0};
    int known = 0;
    if (job->fn->thread) { /* fibers: the scheduler knows who was running */
        kiln_cpu_block_thread(job->cfg, w->block, w->current, where);
        known = 2;
    } else if (job->probing && job->fn->one) { /* probe_chunk noted who was running */
        kiln_cpu_block_thread(job->cfg, w->block, w->current, where);
        known = 2;
    } else if (job->fn->module->where && job->probing) {
        /* Only the probe twin keeps the indices in memory (find_faulting_thread). */
        job->fn->module->where(where);
        known = 2;
    }
    pthread_mutex_lock(&job->fault_lock);
    if (!job->caught) {
        job->caught = 1;
        snprintf(job->what, sizeof job->what, "%s", what);
        memcpy(job->where, where, sizeof where);
        job->where_known = known;
        job->chunk_first = w->chunk_first;
        job->chunk_end = w->chunk_end;
    }
    pthread_mutex_unlock(&job->fault_lock);
    /* The launch is over: the other workers stop after their current chunk. */
    atomic_store(&job->next_block, job->blocks);
}

/* ---------------------------------------------------------------- fast path */

/* Reached only if a barrier hid from the source scan (say, behind a macro in
 * a header outside the include path): threads cannot wait here, so the
 * results would be wrong; the launch says so. One-thread blocks are fine. */
static int fast_path_barrier(void *sched, int predicate, int *arrivals) {
    kiln_cpu_worker *w = sched;
    const uint32_t *b = w->abi.block;
    if ((unsigned long long)b[0] * b[1] * b[2] > 1)
        record_fault(w->job, KILN_ERR_UNSUPPORTED,
                     "the kernel reached a barrier (__syncthreads, __syncwarp or a warp shuffle) that "
                     "kiln's source scan did not see, so it ran without fibers and its results are wrong; "
                     "compile it with -DKILN_CPU_FIBERS");
    *arrivals = 1;
    return predicate & ~KILN_CPU_BARRIER_WARP;
}

/* ---------------------------------------------------------------- barrier path */

static void fiber_main(void *arg);

int kiln_cpu_fiber_barrier(void *sched, int predicate, int *arrivals) {
    kiln_cpu_worker *w = sched;
    unsigned me = w->current, k = w->phase[me]++;
    unsigned char warp = (predicate & KILN_CPU_BARRIER_WARP) != 0;
    predicate &= ~KILN_CPU_BARRIER_WARP;
    /* Three slots: the one after k is free, since every thread has read the
     * result of phase k-2 before anyone can arrive at phase k. */
    w->counts[(k + 1) % 3] = 0;
    w->arrivals[(k + 1) % 3] = 0;
    if (w->arrivals[k % 3] == 0)
        w->warp_kind[k % 3] = warp;
    else if (w->warp_kind[k % 3] != warp)
        /* On a GPU a warp function waits for its warp only; here it waits
         * for the block, so threads that went on to __syncthreads instead
         * would be paired with it and read the wrong values. */
        record_fault(w->job, KILN_ERR_UNSUPPORTED,
                     "a warp function (a shuffle, vote, or a tile's reduce or scan) was reached by only "
                     "part of the block while other threads waited at __syncthreads: on the CPU backend "
                     "warp functions wait for the whole block, so every thread of the block that is "
                     "still running must reach each of them (a warp that returns is fine)");
    w->counts[k % 3] += predicate != 0;
    w->arrivals[k % 3]++;
    unsigned to = w->next[me];
    if (to != me) {
        w->current = to;
        kiln_fiber_switch(&w->fibers[me], &w->fibers[to]);
    }
    *arrivals = w->arrivals[k % 3];
    return w->counts[k % 3];
}

/* A fiber runs one thread, leaves the ring and hands over for good. */
static void fiber_main(void *arg) {
    kiln_cpu_worker *w = arg;
    unsigned me = w->current;
    w->job->fn->thread(&w->abi, w->block, me);
    w->live--;
    unsigned to = w->next[me];
    w->prev[to] = w->prev[me];
    w->next[w->prev[me]] = to;
    if (w->live == 0) kiln_fiber_switch(&w->fibers[me], &w->home);
    w->current = to;
    kiln_fiber_switch(&w->fibers[me], &w->fibers[to]);
}

void kiln_cpu_release_stacks(kiln_cpu_worker *w) {
    /* Under AddressSanitizer: a fiber that a fault or a given-up grid sync
     * jumped out of leaves its frames' redzones poisoned, and munmap does
     * not clear them, so a later mapping at the same address would report
     * its first ordinary write as an underflow. */
    if (w->stacks) KILN_CPU_UNPOISON(w->stacks, w->stacks_bytes);
    if (w->stacks) munmap(w->stacks, w->stacks_bytes);
    w->stacks = NULL;
    w->stack_count = 0;
}

/* Stacks of stack_bytes for `threads` fibers, each above a guard at least
 * as large as the module's largest frame (guard_bytes), so that no single
 * frame can step over it into the neighbouring stack: overflow faults, it
 * does not corrupt. */
kiln_status kiln_cpu_ensure_fibers(kiln_cpu_worker *w, unsigned threads, size_t stack_bytes,
                                   size_t guard_bytes) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    guard_bytes = (guard_bytes + page - 1) / page * page;
    size_t stride = ((stack_bytes + page - 1) / page) * page + guard_bytes;
    if (w->stack_count >= threads && w->stack_stride >= stride && w->guard_bytes >= guard_bytes)
        return KILN_OK;
    kiln_cpu_release_stacks(w);
    size_t total = stride * threads;
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                              "cannot map %u fiber stacks of %zu KiB for a block; lower KILN_CPU_STACK_KB",
                              threads, stack_bytes / 1024);
    for (unsigned i = 0; i < threads; i++)
        mprotect((unsigned char *)mem + i * stride, guard_bytes, PROT_NONE);
    w->guard_bytes = guard_bytes;
    w->stacks = mem;
    w->stacks_bytes = total;
    w->stack_stride = stride;
    w->stack_count = threads;
    if (!w->fibers) {
        w->fibers = calloc(KILN_CPU_MAX_THREADS_PER_BLOCK, sizeof *w->fibers);
        w->next = calloc(KILN_CPU_MAX_THREADS_PER_BLOCK, sizeof *w->next);
        w->prev = calloc(KILN_CPU_MAX_THREADS_PER_BLOCK, sizeof *w->prev);
        w->phase = calloc(KILN_CPU_MAX_THREADS_PER_BLOCK, sizeof *w->phase);
        if (!w->fibers || !w->next || !w->prev || !w->phase)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for fibers");
    }
    return KILN_OK;
}

void kiln_cpu_run_block_with_fibers(kiln_cpu_worker *w, unsigned long long block, unsigned threads) {
    w->block = block;
    for (unsigned i = 0; i < threads; i++) {
        /* Stack tops staggered by a few cache lines: at equal offsets in
         * their pages, the fibers' hot frames would all compete for the same
         * cache sets, and a block switches through all of them per barrier. */
        size_t color = (i % 61) * 64 + (i / 61 % 4) * 4096 / 4;
        kiln_fiber_init(&w->fibers[i], w->stacks + i * w->stack_stride + w->guard_bytes,
                        w->stack_stride - w->guard_bytes - color, fiber_main, w);
        w->next[i] = i + 1 == threads ? 0 : i + 1;
        w->prev[i] = i == 0 ? threads - 1 : i - 1;
        w->phase[i] = 0;
    }
    memset(w->counts, 0, sizeof w->counts);
    memset(w->arrivals, 0, sizeof w->arrivals);
    memset(w->warp_kind, 0, sizeof w->warp_kind);
    w->live = threads;
    w->current = 0;
    kiln_fiber_switch(&w->home, &w->fibers[0]);
}

/* ---------------------------------------------------------------- the launch */

/* The fault probe of a loop-path kernel: its blocks [first, end) thread by
 * thread through the module's one-thread entry, noting each in the worker
 * before it runs, as the fiber scheduler does, so kiln_cpu_note_caught can name it. */
static void probe_chunk(kiln_cpu_worker *w, kiln_cpu_thread_fn one, unsigned threads,
                        unsigned long long first, unsigned long long end) {
    for (unsigned long long b = first; b < end; b++)
        for (unsigned rank = 0; rank < threads; rank++) {
            w->block = b;
            w->current = rank;
            one(&w->abi, b, rank);
        }
}

/* A grid sync in a launch whose blocks run in turn: the other blocks may not
 * have started or may be done, so waiting would hang; the launch says why. */
static void plain_grid_sync(void *sched) {
    trap(sched, "this_grid().sync() across blocks of a plain launch: a grid-wide barrier needs every "
                "block resident at once, which kiln_launch_cooperative arranges; kiln_launch runs the "
                "blocks in turn");
}

/* The worker's view of the launch, before it runs any of its blocks. */
void kiln_cpu_bind_worker(launch_job *job, kiln_cpu_worker *w) {
    const kiln_launch_config *cfg = job->cfg;
    w->job = job;
    memcpy(w->abi.grid, cfg->grid, sizeof w->abi.grid);
    memcpy(w->abi.block, cfg->block, sizeof w->abi.block);
    w->abi.args = job->args;
    w->abi.dyn_shared = w->dyn_shared;
    w->abi.dyn_shared_bytes = cfg->shared_bytes;
    w->abi.exchange = w->exchange;
    w->abi.barrier = job->fn->thread ? kiln_cpu_fiber_barrier : fast_path_barrier;
    w->abi.trap = trap;
    w->abi.sched = w;
    w->abi.grid_sync = plain_grid_sync;
}

static void run_participant(void *arg, int participant) {
    launch_job *job = arg;
    kiln_cpu_worker *w = &job->workers[participant];
    const kiln_launch_config *cfg = job->cfg;
    kiln_cpu_bind_worker(job, w);
    unsigned threads = cfg->block[0] * cfg->block[1] * cfg->block[2];
    if (sigsetjmp(w->fault.jump, 0) != 0) { /* a fault in the kernel jumped here */
        kiln_cpu_fault_disarm();
        kiln_cpu_note_caught(job, w);
        return;
    }
    kiln_cpu_fault_arm(&w->fault);
    for (;;) {
        unsigned long long first = atomic_fetch_add(&job->next_block, job->chunk);
        if (first >= job->blocks) break;
        unsigned long long end = first + job->chunk < job->blocks ? first + job->chunk : job->blocks;
        if (job->fn->fast) {
            w->chunk_first = first;
            w->chunk_end = end;
            if (job->probing && job->fn->one)
                probe_chunk(w, job->fn->one, threads, first, end);
            else
                (job->probing ? job->fn->probe : job->fn->fast)(&w->abi, first, end);
        } else
            for (unsigned long long b = first; b < end; b++) kiln_cpu_run_block_with_fibers(w, b, threads);
    }
    kiln_cpu_fault_disarm();
}

/* The fast loop does not keep blockIdx and threadIdx in memory (that would
 * cost the vectorised loops their speed), so after a fault there the
 * faulting worker's chunk of blocks runs again alone through the kernel's
 * probe twin, which stores them; if the fault recurs, block and thread are
 * known. The context is dead either way, so running those blocks again
 * changes nothing that counts. */
static void find_faulting_thread(launch_job *job) {
    kiln_backend_function *fn = job->fn;
    if (fn->thread || (!fn->probe && !fn->one) || job->where_known != 0 || job->chunk_end <= job->chunk_first)
        return;
    launch_job again = *job;
    pthread_mutex_init(&again.fault_lock, NULL);
    again.caught = 0;
    again.blocks = job->chunk_end;
    again.chunk = job->chunk_end - job->chunk_first;
    again.probing = 1;
    atomic_init(&again.next_block, job->chunk_first);
    run_participant(&again, 0);
    pthread_mutex_destroy(&again.fault_lock);
    if (again.caught && again.where_known == 2) {
        memcpy(job->where, again.where, sizeof job->where);
        job->where_known = 2;
    }
}

/* Fiber stacks from the kernel's own frames (the compiler's report):
 * room for twice the largest frame plus the runners', at least
 * KILN_CPU_STACK_KB; `float local[40000]` then just works. */
void kiln_cpu_fiber_stack_sizes(const kiln_backend_state *st, const kiln_backend_function *fn,
                                size_t *stack_bytes, size_t *guard_bytes) {
    size_t frame = fn->module->frame_bytes;
    *stack_bytes = st->stack_bytes;
    if (frame && 2 * frame + (16u << 10) > *stack_bytes) *stack_bytes = 2 * frame + (16u << 10);
    *guard_bytes = frame > 4096 ? frame : 4096;
}

/* Gives every participant what this launch needs before any starts. */
static kiln_status prepare_workers(kiln_backend_state *st, const kiln_launch_config *cfg,
                                   const kiln_backend_function *fn) {
    unsigned threads = cfg->block[0] * cfg->block[1] * cfg->block[2];
    int fibers = fn->thread != NULL;
    size_t stack_bytes, guard_bytes;
    kiln_cpu_fiber_stack_sizes(st, fn, &stack_bytes, &guard_bytes);
    for (int i = 0; i < st->worker_count; i++) {
        kiln_cpu_worker *w = &st->workers[i];
        if (cfg->shared_bytes > w->dyn_shared_bytes) {
            size_t bytes = (cfg->shared_bytes + 63) & ~(size_t)63;
            void *p = aligned_alloc(64, bytes);
            if (!p)
                return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                                      "out of host memory for %zu bytes of shared memory", cfg->shared_bytes);
            free(w->dyn_shared);
            w->dyn_shared = p;
            w->dyn_shared_bytes = bytes;
        }
        if (fibers) {
            kiln_status s = kiln_cpu_ensure_fibers(w, threads, stack_bytes, guard_bytes);
            if (s != KILN_OK) return s;
        }
    }
    return KILN_OK;
}

kiln_status kiln_cpu_launch(kiln_backend_state *st, kiln_backend_function *fn, const kiln_launch_config *cfg,
                            kiln_backend_stream *stream, void **args) {
    /* Synchronous: every stream is in order by construction. */
    unsigned long long threads = (unsigned long long)cfg->block[0] * cfg->block[1] * cfg->block[2];
    if (threads == 0 || threads > KILN_CPU_MAX_THREADS_PER_BLOCK)
        return kiln_set_error(KILN_ERR_LAUNCH_CONFIG, "block of %llu threads: expected 1 to %d", threads,
                              KILN_CPU_MAX_THREADS_PER_BLOCK);
    kiln_status recorded;
    if (kiln_cpu_capture_launch(stream, fn, cfg, args, &recorded)) return recorded;
    launch_job job;
    memset(&job, 0, sizeof job);
    job.st = st;
    job.fn = fn;
    job.cfg = cfg;
    job.args = args;
    job.workers = st->workers;
    job.blocks = (unsigned long long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
    if (job.blocks == 0) return KILN_OK;
    /* Small chunks balance uneven blocks; enough of them per participant
     * that the shared counter stays cold. */
    unsigned long long per = job.blocks / ((unsigned long long)st->worker_count * 16);
    job.chunk = per > 0 ? per : 1;
    atomic_init(&job.next_block, 0);
    pthread_mutex_init(&job.fault_lock, NULL);

    pthread_mutex_lock(&st->launch_lock);
    kiln_status s = kiln_cpu_fault_init();
    if (s == KILN_OK) s = prepare_workers(st, cfg, fn);
    if (s == KILN_OK) {
        fn->module->begin(cfg->grid, cfg->block);
        atomic_fetch_add(&fn->module->running, 1);
        /* One block has one taker; waking a sleeping worker for it would
         * cost more than most single-block kernels. */
        kiln_cpu_pool_run(st->pool, run_participant, &job, job.blocks == 1);
        atomic_fetch_sub(&fn->module->running, 1);
    }
    if (s == KILN_OK && job.caught) find_faulting_thread(&job);
    pthread_mutex_unlock(&st->launch_lock);
    pthread_mutex_destroy(&job.fault_lock);
    if (s != KILN_OK) return s;
    return kiln_cpu_launch_outcome(&job);
}

/* What a launch that ran reports: its first fault, else its first recorded
 * failure, else success. */
kiln_status kiln_cpu_launch_outcome(const launch_job *j) {
    const kiln_backend_function *fn = j->fn;
    if (j->caught) {
        const unsigned *b = j->where;
        char where[160];
        if (j->where_known == 2)
            snprintf(where, sizeof where, "block (%u,%u,%u), thread (%u,%u,%u)", b[0], b[1], b[2], b[3], b[4],
                     b[5]);
        else
            snprintf(where, sizeof where,
                     "blocks %llu to %llu (x fastest; the fault did not recur when they ran again)",
                     j->chunk_first, j->chunk_end ? j->chunk_end - 1 : 0);
        return kiln_set_error(KILN_ERR_DEVICE_FAULT,
                              "kernel %s faulted on the CPU in %s: %s; the context is now dead, as after a "
                              "device fault on a GPU (release its objects and open a new context)",
                              fn->name, where, j->what);
    }
    if (j->fault != KILN_OK) return kiln_set_error(j->fault, "%s", j->fault_message);
    return KILN_OK;
}

void kiln_cpu_worker_free(kiln_cpu_worker *w) {
    kiln_cpu_release_stacks(w);
    free(w->fibers);
    free(w->next);
    free(w->prev);
    free(w->phase);
    free(w->exchange);
    free(w->dyn_shared);
}

kiln_status kiln_cpu_workers_create(kiln_backend_state *st) {
    int n = kiln_cpu_pool_participants(st->pool);
    st->workers = calloc((size_t)n, sizeof *st->workers);
    if (!st->workers) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    st->worker_count = n;
    for (int i = 0; i < n; i++) {
        st->workers[i].exchange = calloc(KILN_CPU_MAX_THREADS_PER_BLOCK, sizeof *st->workers[i].exchange);
        if (!st->workers[i].exchange) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    return KILN_OK;
}

void kiln_cpu_workers_destroy(kiln_backend_state *st) {
    for (int i = 0; st->workers && i < st->worker_count; i++) {
        kiln_cpu_worker_free(&st->workers[i]);
    }
    free(st->workers);
    st->workers = NULL;
}
