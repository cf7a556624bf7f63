/* cpu_abi.h: the C interface between libkiln and a compiled CPU module.
 *
 * The module side is written in kiln_cpu_prelude.cuh (struct
 * kiln_cpu_block_abi there must stay identical to this one; both carry
 * KILN_CPU_ABI_VERSION, which the module exports as kiln_cpu_abi_version and
 * module_load checks). Per kernel `k` a module exports
 *   kiln_sig_k                 parameter records (common/kiln_signature.cuh)
 *   kiln_cpu_fast_k(B, first, end)     kernels without barriers: runs blocks
 *                                      [first, end) as loops over their threads
 *   kiln_cpu_thread_k(B, block, rank)  kernels with barriers: runs one thread
 *                                      of one block, on a fiber
 * and once per module kiln_cpu_begin(grid, block), called before each launch.
 * Blocks are numbered x fastest; ranks likewise within a block. */
#ifndef KILN_BACKEND_CPU_ABI_H
#define KILN_BACKEND_CPU_ABI_H

#include <stdint.h>

#define KILN_CPU_ABI_VERSION 4

#define KILN_CPU_BARRIER_WARP (1 << 30)

/* One per worker and launch: launch geometry plus the worker's resources. */
typedef struct kiln_cpu_block_abi {
    uint32_t grid[3];
    uint32_t block[3];
    void *const *args;                   /* args[i] points to parameter i's value */
    void *dyn_shared;                    /* the block's dynamic shared memory */
    unsigned long long dyn_shared_bytes; /* as much as the launch asked for */
    unsigned long long *exchange;        /* one slot per thread, for warp shuffles */
    /* Called by each thread at a barrier; returns how many threads passed a
     * non-zero predicate and stores how many arrived. The barriers inside a
     * warp function (shuffles, votes, a tile's reduce or scan) add
     * KILN_CPU_BARRIER_WARP to the predicate, so that libkiln can tell them
     * from __syncthreads when threads of one block meet at different ones. */
    int (*barrier)(void *sched, int predicate, int *arrivals);
    /* Records a device-side failure (assert, __trap). */
    void (*trap)(void *sched, const char *message);
    void *sched;
    /* Called by each thread at this_grid().sync() in a grid of more than one
     * block: returns once every thread of every block has arrived. */
    void (*grid_sync)(void *sched);
} kiln_cpu_block_abi;

typedef void (*kiln_cpu_fast_fn)(const kiln_cpu_block_abi *b, unsigned long long first,
                                 unsigned long long end);
typedef void (*kiln_cpu_thread_fn)(const kiln_cpu_block_abi *b, unsigned long long block, unsigned rank);
typedef void (*kiln_cpu_begin_fn)(const unsigned *grid, const unsigned *block);

#endif
