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

#define BIG_ALLOCATION (1u << 20)

struct kiln_backend_stream {
    int unused; /* a distinct address per stream */
};

struct kiln_backend_event {
    double ms; /* CLOCK_MONOTONIC when recorded */
    int recorded;
};

/* Buffers of BIG_ALLOCATION or more are mapped directly and unmapped when
 * freed: through malloc, glibc raises its mmap threshold after the first
 * such free and serves later ones from the heap, whose fragments are not
 * given back, so after an out-of-memory error the memory freed was not all
 * usable again. The state remembers each mapping's size for munmap. */
static kiln_status map_big(kiln_backend_state *st, size_t bytes, void **out) {
    size_t rounded = (bytes + 4095) & ~(size_t)4095;
    if (rounded < bytes) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
    void *p = mmap(NULL, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", bytes);
    pthread_mutex_lock(&st->big_lock);
    if (st->big_count == st->big_cap) {
        size_t cap = st->big_cap ? 2 * st->big_cap : 64;
        kiln_cpu_mapping *grown = realloc(st->big, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&st->big_lock);
            munmap(p, rounded);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", bytes);
        }
        st->big = grown;
        st->big_cap = cap;
    }
    st->big[st->big_count].ptr = p;
    st->big[st->big_count++].bytes = rounded;
    pthread_mutex_unlock(&st->big_lock);
    *out = p;
    return KILN_OK;
}

/* 1 if p was mapped by map_big (and is now unmapped). */
static int unmap_big(kiln_backend_state *st, void *p) {
    if (((uintptr_t)p & 4095) != 0) return 0; /* mappings are page-aligned */
    pthread_mutex_lock(&st->big_lock);
    for (size_t i = st->big_count; i-- > 0;)
        if (st->big[i].ptr == p) {
            size_t bytes = st->big[i].bytes;
            st->big[i] = st->big[--st->big_count];
            pthread_mutex_unlock(&st->big_lock);
            munmap(p, bytes);
            return 1;
        }
    pthread_mutex_unlock(&st->big_lock);
    return 0;
}

void kiln_cpu_memory_release(kiln_backend_state *st) {
    for (size_t i = 0; i < st->big_count; i++) munmap(st->big[i].ptr, st->big[i].bytes);
    free(st->big);
    st->big = NULL;
    st->big_count = st->big_cap = 0;
}

static kiln_status aligned(kiln_backend_state *st, size_t bytes, void **out) {
    if (bytes >= BIG_ALLOCATION) return map_big(st, bytes, out);
    if (bytes == 0) bytes = 1;
    /* 64 bytes: a cache line and a full AVX-512 vector. */
    size_t align = 64;
    if (bytes > SIZE_MAX - align)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
    size_t rounded = (bytes + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, rounded);
    if (!p) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", bytes);
    *out = p;
    return KILN_OK;
}

kiln_status kiln_cpu_mem_alloc(kiln_backend_state *st, size_t bytes, kiln_backend_stream *stream,
                               void **out) {
    (void)stream;
    return aligned(st, bytes, out);
}

void kiln_cpu_mem_free(kiln_backend_state *st, void *ptr, kiln_backend_stream *stream) {
    (void)stream;
    if (ptr && !unmap_big(st, ptr)) free(ptr);
}

kiln_status kiln_cpu_host_alloc(kiln_backend_state *st, size_t bytes, void **out) {
    return aligned(st, bytes, out);
}

void kiln_cpu_host_free(kiln_backend_state *st, void *ptr) {
    if (ptr && !unmap_big(st, ptr)) free(ptr);
}

kiln_status kiln_cpu_copy(kiln_backend_state *st, void *dst, const void *src, size_t bytes,
                          kiln_copy_kind kind, kiln_backend_stream *stream, int async) {
    (void)st;
    (void)kind;
    (void)stream;
    (void)async;
    if (bytes && (!dst || !src))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "copy of %zu bytes with a NULL %s", bytes,
                              dst ? "source" : "destination");
    if (bytes) memmove(dst, src, bytes);
    return KILN_OK;
}

kiln_status kiln_cpu_memset(kiln_backend_state *st, void *dst, int value, size_t bytes,
                            kiln_backend_stream *stream) {
    (void)st;
    (void)stream;
    if (bytes && !dst) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "memset of %zu bytes at NULL", bytes);
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
    (void)st;
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
    (void)stream;
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
