/* copy_pool.h: a few threads that split large host memcpys between them.
 *
 * A ufunc on a CUDA context over ordinary (pageable) host arrays spends its
 * time copying them into and out of pinned staging buffers. One thread's
 * memcpy moves some 5 to 10 GB/s; the memory system and the PCIe link take
 * several times that, so the copies are cut into contiguous shares, one per
 * thread, the calling thread taking the first. A pool belongs to a context
 * (kiln_context_copy_pool) and needs no backend. */
#ifndef KILN_CORE_COPY_POOL_H
#define KILN_CORE_COPY_POOL_H

#include <stddef.h>

#include "kiln.h"

typedef struct kiln_copy_pool kiln_copy_pool;

/* One memcpy: `bytes` from src to dst (no overlap). */
typedef struct kiln_copy_piece {
    void *dst;
    const void *src;
    size_t bytes;
} kiln_copy_piece;

/* Share boundaries fall on multiples of this many bytes of the whole (so two
 * threads do not write one page, or one cache line, where pieces are aligned). */
#define KILN_COPY_SPLIT_ALIGN ((size_t)4096)
/* Fewer threads are used than would each get less than this. */
#define KILN_COPY_MIN_SHARE ((size_t)256 << 10)

/* A pool of `threads` - 1 threads; the caller of kiln_copy_pool_run is one
 * more participant and takes share 0. Destroy with kiln_copy_pool_destroy. */
kiln_status kiln_copy_pool_create(int threads, kiln_copy_pool **out);
/* Stops and joins the threads. NULL is a no-op. */
void kiln_copy_pool_destroy(kiln_copy_pool *pool);
/* Participants of a run, the caller included; 1 for NULL. */
int kiln_copy_pool_threads(const kiln_copy_pool *pool);

/* Copies every piece and returns when all are done. The bytes of all pieces
 * together are split evenly over the participants. pool NULL, work below two
 * shares, or a run of another thread in progress: the caller copies alone
 * (a copy never waits for someone else's). Thread-safe. */
void kiln_copy_pool_run(kiln_copy_pool *pool, const kiln_copy_piece *pieces, int count);

/* Share `part` of `parts` of `total` bytes: [*lo, *hi). The shares are
 * contiguous, in order, disjoint and cover [0, total); inner boundaries are
 * multiples of KILN_COPY_SPLIT_ALIGN (so a share may be empty). */
void kiln_copy_share(size_t total, int parts, int part, size_t *lo, size_t *hi);
/* Copies bytes [lo, hi) of the pieces taken end to end. */
void kiln_copy_range(const kiln_copy_piece *pieces, int count, size_t lo, size_t hi);

#endif
