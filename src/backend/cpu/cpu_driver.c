/* cpu_driver.c: the driver layer on the CPU backend. Every operation has
 * finished when its call returns, so events and streams are always done, a
 * stream's wait on an event has nothing left to wait for, and a callback
 * runs at once (in order, since everything before it has run). Occupancy
 * and memory kinds answer with what the emulation does (docs/driver.md). */
#include <stdlib.h>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

/* A block's threads run on one worker, one block per worker at a time. */
#define CPU_SUGGESTED_BLOCK 256

kiln_status kiln_cpu_event_create_flags(kiln_backend_state *st, unsigned flags, kiln_backend_event **out) {
    (void)flags; /* timing costs one clock read: kept */
    return kiln_cpu_event_create(st, out);
}

kiln_status kiln_cpu_event_query(kiln_backend_state *st, kiln_backend_event *ev, int *done) {
    (void)st;
    (void)ev;
    *done = 1;
    return KILN_OK;
}

kiln_status kiln_cpu_stream_wait_event(kiln_backend_state *st, kiln_backend_stream *stream,
                                       kiln_backend_event *ev) {
    (void)st;
    (void)stream;
    (void)ev;
    return KILN_OK;
}

kiln_status kiln_cpu_stream_add_callback(kiln_backend_state *st, kiln_backend_stream *stream,
                                         void (*fn)(void *), void *user) {
    (void)st;
    kiln_status s;
    if (kiln_cpu_capture_callback(stream, fn, user, &s)) return s;
    fn(user);
    return KILN_OK;
}

kiln_status kiln_cpu_stream_query(kiln_backend_state *st, kiln_backend_stream *stream, int *done) {
    (void)st;
    (void)stream;
    *done = 1;
    return KILN_OK;
}

kiln_status kiln_cpu_function_occupancy(kiln_backend_state *st, kiln_backend_function *fn, int block_threads,
                                        size_t dynamic_shared_bytes, int *blocks_per_sm) {
    (void)st;
    (void)fn;
    *blocks_per_sm = block_threads >= 1 && block_threads <= KILN_CPU_MAX_THREADS_PER_BLOCK &&
                             dynamic_shared_bytes <= KILN_CPU_SHARED_BYTES_OPTIN
                         ? 1
                         : 0;
    return KILN_OK;
}

kiln_status kiln_cpu_function_block_size(kiln_backend_state *st, kiln_backend_function *fn,
                                         size_t dynamic_shared_bytes, int block_limit, int *min_grid,
                                         int *block_threads) {
    (void)fn;
    if (dynamic_shared_bytes > KILN_CPU_SHARED_BYTES_OPTIN)
        return kiln_set_error(KILN_ERR_LAUNCH_CONFIG, "%zu bytes of dynamic shared memory: the CPU allows %u",
                              dynamic_shared_bytes, KILN_CPU_SHARED_BYTES_OPTIN);
    int block = CPU_SUGGESTED_BLOCK;
    if (block_limit > 0 && block_limit < block) block = block_limit;
    *block_threads = block;
    *min_grid = st->worker_count;
    return KILN_OK;
}

kiln_status kiln_cpu_function_set_shared(kiln_backend_state *st, kiln_backend_function *fn,
                                         size_t max_dynamic_shared_bytes, int carveout_percent) {
    (void)st;
    (void)fn;
    (void)carveout_percent; /* checked by the core; the CPU has no L1 split */
    if (max_dynamic_shared_bytes > KILN_CPU_SHARED_BYTES_OPTIN)
        return kiln_set_error(KILN_ERR_LAUNCH_CONFIG,
                              "%zu bytes of dynamic shared memory: the CPU backend allows %u",
                              max_dynamic_shared_bytes, KILN_CPU_SHARED_BYTES_OPTIN);
    return KILN_OK;
}

size_t kiln_cpu_function_dynamic_shared_limit(kiln_backend_state *st, kiln_backend_function *fn) {
    (void)st;
    (void)fn;
    return KILN_CPU_SHARED_BYTES_OPTIN;
}

kiln_status kiln_cpu_mem_alloc_kind(kiln_backend_state *st, kiln_memory kind, size_t bytes, void **device,
                                    void **host) {
    (void)kind;
    kiln_status s = kiln_cpu_host_alloc(st, bytes, device);
    if (s == KILN_OK) *host = *device;
    return s;
}

void kiln_cpu_mem_free_kind(kiln_backend_state *st, kiln_memory kind, void *device) {
    (void)kind;
    kiln_cpu_host_free(st, device);
}

kiln_status kiln_cpu_mem_prefetch(kiln_backend_state *st, void *ptr, size_t bytes, int to_device,
                                  kiln_backend_stream *stream) {
    (void)st;
    (void)ptr;
    (void)bytes;
    (void)to_device;
    (void)stream;
    return KILN_OK; /* host and "device" are one memory */
}

kiln_status kiln_cpu_mem_advise(kiln_backend_state *st, void *ptr, size_t bytes, kiln_memory_advice advice) {
    (void)st;
    (void)ptr;
    (void)bytes;
    (void)advice;
    return KILN_OK;
}

kiln_status kiln_cpu_pool_set_release_threshold(kiln_backend_state *st, uint64_t bytes) {
    (void)st;
    (void)bytes; /* large buffers are kept for reuse up to KILN_CPU_SPARE_BYTES whatever this says */
    return KILN_OK;
}

kiln_status kiln_cpu_device_can_access_peer(kiln_backend_state *st, kiln_backend_state *peer, int *can) {
    (void)st;
    (void)peer;
    *can = 1; /* one address space */
    return KILN_OK;
}
