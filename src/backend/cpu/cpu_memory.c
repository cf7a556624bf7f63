/* cpu_memory.c: "device" memory, copies, streams and events on the CPU.
 *
 * Device memory is host memory, so every copy kind is a memcpy. Work runs
 * synchronously in call order (launches included), so a stream is only a
 * handle and an event only a timestamp taken when it is recorded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

/* Every buffer lives in a mapping of the backend's own, never in the malloc
 * heap, so that a kernel writing past its array can reach only other kiln
 * buffers (as on a GPU), never the heap's bookkeeping or the program's data.
 * Buffers up to kiln_cpu_slab_max_bytes() take a guarded slot of a slab
 * (cpu_slab.c); larger ones get a mapping each, between PROT_NONE guards of
 * KILN_CPU_GUARD_BEFORE and KILN_CPU_GUARD_AFTER bytes (address space only),
 * and end within 63 bytes of the upper guard (their start 64-byte aligned),
 * so an overrun faults and the launch reports it (cpu_launch.c). Freed
 * mappings are kept as spares for the next buffer of the same size: a fresh
 * mapping costs a page fault per page on first touch. Unmapping the rest
 * (rather than freeing into the heap, whose fragments are not given back)
 * keeps memory freed after an out-of-memory error usable again. */
/* Checked mode (KILN_CPU_CHECKED=1), like compute-sanitizer's memcheck for
 * kiln's buffers: every buffer, small ones too, gets its own mapping and ends
 * exactly where the upper guard begins, so the first byte past its end
 * faults (the start stays aligned to the largest power of two dividing the
 * size, hence to the element size). A fault in a guard is reported with the
 * buffer it belongs to (cpu_launch.c). */
/* What a spare mapping holds in memory: its data pages (its guards take
 * address space only). */
static size_t spare_weight(size_t total) { return total - KILN_CPU_GUARD_BEFORE - KILN_CPU_GUARD_AFTER; }

/* A spare mapping of exactly `total` bytes, or NULL. Caller holds big_lock. */
static void *take_spare(kiln_backend_state *st, size_t total) {
    for (size_t i = st->spare_count; i-- > 0;)
        if (st->spare[i].total == total) {
            void *p = st->spare[i].base;
            st->spare_bytes -= spare_weight(total);
            memmove(&st->spare[i], &st->spare[i + 1], (--st->spare_count - i) * sizeof st->spare[0]);
            return p;
        }
    return NULL;
}

/* Unmaps every spare mapping (before an allocation would fail). */
static void drop_spares(kiln_backend_state *st) {
    pthread_mutex_lock(&st->big_lock);
    for (size_t i = 0; i < st->spare_count; i++) munmap(st->spare[i].base, st->spare[i].total);
    st->spare_count = 0;
    st->spare_bytes = 0;
    pthread_mutex_unlock(&st->big_lock);
}

static kiln_status map_big(kiln_backend_state *st, size_t bytes, void **out) {
    size_t rounded = (bytes + 4095) & ~(size_t)4095;
    if (rounded < bytes || rounded > SIZE_MAX - KILN_CPU_GUARD_BEFORE - KILN_CPU_GUARD_AFTER)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
    size_t total = KILN_CPU_GUARD_BEFORE + rounded + KILN_CPU_GUARD_AFTER;
    void *base = NULL;
    if (!st->checked) {
        pthread_mutex_lock(&st->big_lock);
        base = take_spare(st, total);
        pthread_mutex_unlock(&st->big_lock);
    }
    if (!base) {
        /* reserved whole, then the data opened: the guards are never opened */
        base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED && st->spare_count) { /* the spares go first */
            drop_spares(st);
            base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        }
        if (base != MAP_FAILED &&
            mprotect((unsigned char *)base + KILN_CPU_GUARD_BEFORE, rounded, PROT_READ | PROT_WRITE) != 0) {
            munmap(base, total);
            base = MAP_FAILED;
        }
    }
    if (base == MAP_FAILED)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", bytes);
    unsigned char *end = (unsigned char *)base + KILN_CPU_GUARD_BEFORE + rounded;
    void *p = st->checked ? end - bytes : end - ((bytes + 63) & ~(size_t)63);
    pthread_mutex_lock(&st->big_lock);
    if (st->big_count == st->big_cap) {
        size_t cap = st->big_cap ? 2 * st->big_cap : 64;
        kiln_cpu_mapping *grown = realloc(st->big, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&st->big_lock);
            munmap(base, total);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", bytes);
        }
        st->big = grown;
        st->big_cap = cap;
    }
    kiln_cpu_mapping map = {p, bytes, base, total};
    st->big[st->big_count++] = map;
    pthread_mutex_unlock(&st->big_lock);
    *out = p;
    return KILN_OK;
}

/* 1 if p was mapped by map_big (and is now unmapped). */
static int unmap_big(kiln_backend_state *st, void *p) {
    pthread_mutex_lock(&st->big_lock);
    for (size_t i = st->big_count; i-- > 0;)
        if (st->big[i].ptr == p) {
            kiln_cpu_mapping map = st->big[i];
            st->big[i] = st->big[--st->big_count];
            /* Kept for the next allocation of this size: a fresh mapping
             * costs a page fault per page on first touch. The oldest spares
             * make room, so that a program whose sizes change keeps the
             * recent ones rather than the first ones it freed. */
            size_t cap = sizeof st->spare / sizeof st->spare[0], weight = spare_weight(map.total);
            int keep = !st->checked && weight <= KILN_CPU_SPARE_BYTES;
            while (keep && st->spare_count &&
                   (st->spare_count == cap || st->spare_bytes + weight > KILN_CPU_SPARE_BYTES)) {
                munmap(st->spare[0].base, st->spare[0].total);
                st->spare_bytes -= spare_weight(st->spare[0].total);
                memmove(&st->spare[0], &st->spare[1], --st->spare_count * sizeof st->spare[0]);
            }
            if (keep) {
                st->spare[st->spare_count++] = map;
                st->spare_bytes += weight;
            }
            pthread_mutex_unlock(&st->big_lock);
            if (!keep) munmap(map.base, map.total);
            return 1;
        }
    pthread_mutex_unlock(&st->big_lock);
    return 0;
}

int kiln_cpu_memory_guard_hit(kiln_backend_state *st, const void *addr, kiln_cpu_mapping *out) {
    if (kiln_cpu_slab_guard_hit(st, addr, out)) return 1;
    uintptr_t a = (uintptr_t)addr;
    int hit = 0;
    pthread_mutex_lock(&st->big_lock);
    for (size_t i = 0; i < st->big_count && !hit; i++) {
        uintptr_t lo = (uintptr_t)st->big[i].base, hi = lo + st->big[i].total;
        uintptr_t data = (uintptr_t)st->big[i].ptr;
        if (a >= lo && a < hi && (a < data || a >= data + st->big[i].bytes)) {
            *out = st->big[i];
            hit = 1;
        }
    }
    pthread_mutex_unlock(&st->big_lock);
    return hit;
}

void kiln_cpu_memory_release(kiln_backend_state *st) {
    kiln_cpu_slab_release(st);
    drop_spares(st);
    for (size_t i = 0; i < st->big_count; i++) munmap(st->big[i].base, st->big[i].total);
    free(st->big);
    st->big = NULL;
    st->big_count = st->big_cap = 0;
}

static kiln_status allocate(kiln_backend_state *st, size_t bytes, void **out) {
    if (bytes == 0) bytes = 1;
    if (!st->checked && bytes <= kiln_cpu_slab_max_bytes()) return kiln_cpu_slab_alloc(st, bytes, out);
    return map_big(st, bytes, out);
}

/* Every pointer given out is in a slab or a mapping: one found in neither
 * was not kiln's (or was freed already) and is left alone. */
static void release(kiln_backend_state *st, void *ptr) {
    if (ptr && !kiln_cpu_slab_free(st, ptr)) unmap_big(st, ptr);
}

kiln_status kiln_cpu_mem_alloc(kiln_backend_state *st, size_t bytes, kiln_backend_stream *stream,
                               void **out) {
    kiln_status s = allocate(st, bytes, out);
    if (s == KILN_OK && !kiln_cpu_capture_alloc(stream, *out)) {
        release(st, *out);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                              "out of host memory recording an allocation in a graph");
    }
    return s;
}

void kiln_cpu_mem_free(kiln_backend_state *st, void *ptr, kiln_backend_stream *stream) {
    if (kiln_cpu_capture_owns(stream, ptr)) return; /* the graph frees it */
    release(st, ptr);
}

kiln_status kiln_cpu_host_alloc(kiln_backend_state *st, size_t bytes, void **out) {
    return allocate(st, bytes, out);
}

void kiln_cpu_host_free(kiln_backend_state *st, void *ptr) { release(st, ptr); }

kiln_status kiln_cpu_copy(kiln_backend_state *st, void *dst, const void *src, size_t bytes,
                          kiln_copy_kind kind, kiln_backend_stream *stream, int async) {
    (void)st;
    (void)kind;
    if (bytes && (!dst || !src))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "copy of %zu bytes with a NULL %s", bytes,
                              dst ? "source" : "destination");
    kiln_status s;
    if (kiln_cpu_capture_copy(stream, dst, src, bytes, async, &s)) return s;
    if (bytes) memmove(dst, src, bytes);
    return KILN_OK;
}

kiln_status kiln_cpu_memset(kiln_backend_state *st, void *dst, int value, size_t bytes,
                            kiln_backend_stream *stream) {
    (void)st;
    if (bytes && !dst) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "memset of %zu bytes at NULL", bytes);
    kiln_status s;
    if (kiln_cpu_capture_memset(stream, dst, value, bytes, &s)) return s;
    if (bytes) memset(dst, value, bytes);
    return KILN_OK;
}

kiln_status kiln_cpu_stream_create(kiln_backend_state *st, kiln_backend_stream **out) {
    (void)st;
    kiln_backend_stream *s = calloc(1, sizeof *s);
    if (!s) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    *out = s;
    return KILN_OK;
}

kiln_status kiln_cpu_stream_synchronize(kiln_backend_state *st, kiln_backend_stream *stream) {
    (void)st;
    (void)stream;
    return KILN_OK;
}

void kiln_cpu_stream_destroy(kiln_backend_state *st, kiln_backend_stream *stream) {
    kiln_cpu_capture_discard(st, stream);
    free(stream);
}

kiln_status kiln_cpu_synchronize(kiln_backend_state *st) {
    (void)st;
    return KILN_OK;
}

kiln_status kiln_cpu_event_create(kiln_backend_state *st, kiln_backend_event **out) {
    (void)st;
    kiln_backend_event *e = calloc(1, sizeof *e);
    if (!e) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    *out = e;
    return KILN_OK;
}

kiln_status kiln_cpu_event_record(kiln_backend_state *st, kiln_backend_event *ev,
                                  kiln_backend_stream *stream) {
    (void)st;
    kiln_status s;
    if (kiln_cpu_capture_event(stream, ev, &s)) return s;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ev->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    ev->recorded = 1;
    return KILN_OK;
}

kiln_status kiln_cpu_event_synchronize(kiln_backend_state *st, kiln_backend_event *ev) {
    (void)st;
    (void)ev;
    return KILN_OK;
}

kiln_status kiln_cpu_event_elapsed_ms(kiln_backend_state *st, kiln_backend_event *start,
                                      kiln_backend_event *end, float *ms) {
    (void)st;
    if (!start->recorded || !end->recorded)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "elapsed time between events: the %s event was never recorded",
                              start->recorded ? "end" : "start");
    *ms = (float)(end->ms - start->ms);
    return KILN_OK;
}

void kiln_cpu_event_destroy(kiln_backend_state *st, kiln_backend_event *ev) {
    (void)st;
    free(ev);
}
