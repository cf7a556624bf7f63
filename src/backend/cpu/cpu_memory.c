/* cpu_memory.c: "device" memory, copies, streams and events on the CPU.
 *
 * Device memory is host memory, so every copy kind is a memcpy. Work runs
 * synchronously in call order (launches included), so a stream is only a
 * handle and an event only a timestamp taken when it is recorded. */
#include <stdlib.h>
#include <string.h>
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

static kiln_status aligned(size_t bytes, void **out) {
    if (bytes == 0) bytes = 1;
    /* 64 bytes: a cache line and a full AVX-512 vector. Large buffers get
     * whole pages, which keeps their start off pages shared with others. */
    size_t align = bytes >= BIG_ALLOCATION ? 4096 : 64;
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
    (void)st;
    (void)stream;
    return aligned(bytes, out);
}

void kiln_cpu_mem_free(kiln_backend_state *st, void *ptr, kiln_backend_stream *stream) {
    (void)st;
    (void)stream;
    free(ptr);
}

kiln_status kiln_cpu_host_alloc(kiln_backend_state *st, size_t bytes, void **out) {
    (void)st;
    return aligned(bytes, out);
}

void kiln_cpu_host_free(kiln_backend_state *st, void *ptr) {
    (void)st;
    free(ptr);
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
