/* prof_records.c: the profiler's record log: interned strings, the streams
 * it has seen, chunks of fixed-size records, and resolving finished records
 * (reading their device times from CUPTI or events) into the per-kernel and
 * per-copy statistics. The hooks that append records are in prof.c. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/error.h"
#include "core/hash.h"
#include "prof/prof_cupti.h"
#include "prof/prof_internal.h"

/* ------------------------------------------------------------------ helpers */

static uint32_t host_thread_id(void) {
    /* A per-thread cache of the OS thread id, so the trace's host tracks match
     * what perf, gdb and top show. */
    static _Thread_local uint32_t tid;
    if (!tid) tid = (uint32_t)syscall(SYS_gettid);
    return tid;
}

const char *kiln_prof_copy_kind_name(int kind) {
    switch (kind) {
    case KILN_COPY_HOST_TO_DEVICE: return "HtoD";
    case KILN_COPY_DEVICE_TO_HOST: return "DtoH";
    case KILN_COPY_DEVICE_TO_DEVICE: return "DtoD";
    default: return "HtoH";
    }
}

char *kiln_prof_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ------------------------------------------------------------------ strings */

static int grow_string_table(kiln_prof *p) {
    uint32_t cap = p->string_table_cap ? p->string_table_cap * 2 : 256;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return 0;
    for (uint32_t id = 0; id < p->string_count; id++) {
        uint32_t i = (uint32_t)p->strings[id].hash & (cap - 1);
        while (t[i]) i = (i + 1) & (cap - 1);
        t[i] = id + 1;
    }
    free(p->string_table);
    p->string_table = t;
    p->string_table_cap = cap;
    return 1;
}

/* The id of `s`, added if new; PROF_NO_ID when out of memory. Lock held. */
uint32_t kiln_prof_intern(kiln_prof *p, const char *s) {
    if (!s) return PROF_NO_ID;
    uint64_t h = kiln_fnv1a_str(s);
    if (p->string_table_cap) {
        uint32_t i = (uint32_t)h & (p->string_table_cap - 1);
        for (; p->string_table[i]; i = (i + 1) & (p->string_table_cap - 1)) {
            const prof_string *e = &p->strings[p->string_table[i] - 1];
            if (e->hash == h && strcmp(e->text, s) == 0) return p->string_table[i] - 1;
        }
    }
    if ((p->string_count + 1) * 2 > p->string_table_cap && !grow_string_table(p)) return PROF_NO_ID;
    if (p->string_count == p->string_cap) {
        uint32_t cap = p->string_cap ? p->string_cap * 2 : 64;
        prof_string *n = realloc(p->strings, cap * sizeof *n);
        if (!n) return PROF_NO_ID;
        p->strings = n;
        p->string_cap = cap;
    }
    char *text = kiln_prof_strdup(s);
    if (!text) return PROF_NO_ID;
    uint32_t id = p->string_count++;
    p->strings[id].text = text;
    p->strings[id].hash = h;
    p->strings[id].kernel_hash = kiln_prof_cupti_source_name_hash(text);
    uint32_t i = (uint32_t)h & (p->string_table_cap - 1);
    while (p->string_table[i]) i = (i + 1) & (p->string_table_cap - 1);
    p->string_table[i] = id + 1;
    return id;
}

const char *kiln_prof_string(const kiln_prof *p, uint32_t id) {
    return id < p->string_count ? p->strings[id].text : "?";
}

/* ------------------------------------------------------------------ streams */

uint32_t kiln_prof_stream_index(kiln_prof *p, kiln_backend_stream *s) {
    for (uint32_t i = 0; i < p->stream_count; i++)
        if (p->streams[i] == s) return i;
    if (p->stream_count == p->stream_cap) {
        uint32_t cap = p->stream_cap ? p->stream_cap * 2 : 8;
        kiln_backend_stream **n = realloc(p->streams, cap * sizeof *n);
        if (!n) return 0; /* folded onto the default stream's track */
        p->streams = n;
        prof_dev_stream *d = realloc(p->dev_streams, cap * sizeof *d);
        if (!d) return 0;
        p->dev_streams = d;
        p->stream_cap = cap;
    }
    p->streams[p->stream_count] = s;
    memset(&p->dev_streams[p->stream_count], 0, sizeof *p->dev_streams);
    return p->stream_count++;
}

/* CUPTI: the CUPTI id of the stream at `index`, looked up once per stream
 * (and again after any stream was destroyed: the handle may be reused). */
uint32_t kiln_prof_stream_cupti_id(kiln_prof *p, uint32_t index, kiln_backend_stream *stream) {
    prof_dev_stream *d = &p->dev_streams[index];
    unsigned generation = p->backend && p->backend->streams_destroyed ? p->backend->streams_destroyed() : 0;
    if (!d->known || d->generation != generation) {
        d->id = kiln_prof_cupti_stream_id(p->ctx, stream);
        d->generation = generation;
        d->known = 1;
    }
    return d->id;
}

/* ------------------------------------------------------------------ chunks */

void kiln_prof_chunks_push(prof_chunk_list *l, prof_chunk *c) {
    c->next = NULL;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->length++;
}

prof_chunk *kiln_prof_chunks_pop(prof_chunk_list *l) {
    prof_chunk *c = l->head;
    if (!c) return NULL;
    l->head = c->next;
    if (!l->head) l->tail = NULL;
    l->length--;
    c->next = NULL;
    return c;
}

void kiln_prof_chunks_free(prof_chunk_list *l) {
    for (prof_chunk *c = l->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    l->head = l->tail = NULL;
    l->length = 0;
}

static void stat_add(prof_stat *s, double ms, uint64_t bytes) {
    if (s->calls == 0 || ms < s->min_ms) s->min_ms = ms;
    if (s->calls == 0 || ms > s->max_ms) s->max_ms = ms;
    s->calls++;
    s->total_ms += ms;
    s->bytes += bytes;
}

static prof_stat *kernel_stat(kiln_prof *p, uint32_t id) {
    if (id == PROF_NO_ID) return NULL;
    if (id >= p->kernel_cap) {
        uint32_t cap = p->string_cap > id ? p->string_cap : id + 64;
        prof_stat *n = realloc(p->kernels, cap * sizeof *n);
        if (!n) return NULL;
        memset(n + p->kernel_cap, 0, (cap - p->kernel_cap) * sizeof *n);
        p->kernels = n;
        p->kernel_cap = cap;
    }
    return &p->kernels[id];
}

static int is_device_op(const prof_record *r) {
    return (r->type == PROF_KERNEL || r->type == PROF_COPY) && !r->no_device && !r->library &&
           !(r->type == PROF_COPY && r->copy_kind == KILN_COPY_HOST_TO_HOST);
}

/* kiln_prof_cupti_dims_key of a kernel record's dims. */
static uint64_t cupti_dims_key(kiln_prof *p, const prof_record *r) {
    if (memcmp(p->cupti_grid, r->grid, sizeof r->grid) != 0 ||
        memcmp(p->cupti_block, r->block, sizeof r->block) != 0) {
        memcpy(p->cupti_grid, r->grid, sizeof r->grid);
        memcpy(p->cupti_block, r->block, sizeof r->block);
        p->cupti_dims_key = kiln_prof_cupti_dims_key(r->grid, r->block);
    }
    return p->cupti_dims_key;
}

/* What r's CUPTI record must show. */
static void cupti_op_of(kiln_prof *p, const prof_record *r, kiln_cupti_op *q) {
    memset(q, 0, sizeof *q);
    q->cls = r->type == PROF_KERNEL ? KILN_CUPTI_KERNEL : KILN_CUPTI_COPY;
    q->copy_kind = r->copy_kind;
    q->context_id = p->cupti_context_id;
    q->stream_id = r->dev_stream;
    q->host_begin_ms = r->host_begin_ms;
    if (r->type == PROF_KERNEL) {
        q->key = cupti_dims_key(p, r);
        q->name_hash = r->name_id < p->string_count ? p->strings[r->name_id].kernel_hash : 0;
    } else {
        q->key = r->bytes;
    }
}

/* Where the search for r's record starts: per stream and kind of work. */
static uint64_t *cupti_cursor(kiln_prof *p, const prof_record *r) {
    prof_dev_stream *d = &p->dev_streams[r->stream];
    if (!d->searched || d->cursor_id != r->dev_stream) {
        /* New, or the handle names another stream now: from the start. */
        d->cursor[0] = d->cursor[1] = p->cupti_start;
        d->cursor_id = r->dev_stream;
        d->searched = 1;
    }
    return &d->cursor[r->type == PROF_KERNEL ? KILN_CUPTI_KERNEL : KILN_CUPTI_COPY];
}

/* 1 when a later operation of r's thread on r's stream, of the same kind,
 * has its record already. One thread's records of one stream arrive in
 * order, so r's will never come (CUPTI dropped it, or the call queued nothing
 * without failing). Looks a few finished operations ahead. */
static int later_op_has_record(kiln_prof *p, prof_chunk *c, uint32_t index, const prof_record *r) {
    enum { LOOK_AHEAD = 8 };
    int looked = 0;
    for (uint32_t i = index + 1; c; c = c->next, i = 0)
        for (; i < c->count; i++) {
            const prof_record *n = &c->rec[i];
            if (!atomic_load_explicit(&n->done, memory_order_acquire)) return 0;
            if (n->stream != r->stream || n->host_tid != r->host_tid || n->type != r->type ||
                !is_device_op(n) || n->dev_stream != r->dev_stream)
                continue;
            if (++looked > LOOK_AHEAD) return 0;
            kiln_cupti_op q;
            cupti_op_of(p, n, &q);
            uint64_t cursor = *cupti_cursor(p, r);
            double begin_ms, dur_ms;
            if (kiln_prof_cupti_match_locked(&q, &cursor, 0, &begin_ms, &dur_ms) == KILN_CUPTI_FOUND)
                return 1;
        }
    return 0;
}

/* CUPTI's times for the finished record c->rec[index]: 0 while they have
 * not arrived and `wait` is 0 (the resolver stops there and comes back
 * later). Host times when the operation queued no device work (a
 * host-to-host copy, a failed call) or its record never comes. Ring lock
 * held. */
static int read_cupti_times(kiln_prof *p, prof_chunk *c, uint32_t index, int wait) {
    prof_record *r = &c->rec[index];
    r->dev_begin_ms = r->host_begin_ms;
    r->dev_ms = r->host_end_ms - r->host_begin_ms;
    if (!is_device_op(r)) return 1;
    kiln_cupti_op q;
    cupti_op_of(p, r, &q);
    /* CUPTI's times straight into r (only when found): through locals they
     * were stored twice, and read back in one load that had to wait. */
    if (kiln_prof_cupti_match_locked(&q, cupti_cursor(p, r), 1, &r->dev_begin_ms, &r->dev_ms) ==
        KILN_CUPTI_FOUND)
        return 1;
    /* With `wait`, CUPTI was flushed after the device went idle: gone. */
    if (!wait && !atomic_load(&p->ctx->dead) && !later_op_has_record(p, c, index, r)) return 0;
    p->cupti_lost++;
    return 1;
}

/* Device times of the finished record c->rec[index]; 0 if they are not
 * available yet. */
static int read_times(kiln_prof *p, prof_chunk *c, uint32_t index, int wait) {
    prof_record *r = &c->rec[index];
    if ((r->library || r->type == PROF_COLLECTIVE) && r->ev[0]) {
        /* Vendor library work (cuBLAS, NCCL, ...) runs kernels that are not
         * kiln's: events around it on the stream time it with any timer. */
        kiln_prof_events_read(p, r, wait);
        return 1;
    }
    if (r->type != PROF_KERNEL && r->type != PROF_COPY) {
        if (r->type == PROF_COLLECTIVE) {
            r->dev_begin_ms = r->host_begin_ms;
            r->dev_ms = r->host_end_ms - r->host_begin_ms;
        }
        return 1;
    }
    switch (p->timer) {
    case PROF_TIMER_CUPTI: return read_cupti_times(p, c, index, wait);
    case PROF_TIMER_EVENTS: kiln_prof_events_read(p, r, wait); return 1;
    case PROF_TIMER_HOST: break;
    }
    r->dev_begin_ms = r->host_begin_ms;
    r->dev_ms = r->host_end_ms - r->host_begin_ms;
    return 1;
}

/* Folds a record whose times read_times has set into the statistics. */
static void fold_record(kiln_prof *p, prof_record *r) {
    kiln_prof_events_give(p, r);
    switch ((prof_type)r->type) {
    case PROF_KERNEL: {
        prof_stat *s = kernel_stat(p, r->name_id);
        if (s) stat_add(s, r->dev_ms, 0);
        if (s && r->library) s->flops += r->flops;
        break;
    }
    case PROF_COPY: stat_add(&p->copies[r->copy_kind & 3][r->pinned ? 1 : 0], r->dev_ms, r->bytes); break;
    case PROF_ALLOC: stat_add(&p->allocs, r->host_end_ms - r->host_begin_ms, r->bytes); break;
    case PROF_COLLECTIVE: {
        int k = r->copy_kind % PROF_COLLECTIVE_KINDS;
        stat_add(&p->colls[k], r->dev_ms, r->bytes);
        p->coll_factor[k] = r->bus_factor;
        p->coll_name[k] = r->name_id;
        break;
    }
    case PROF_COMPILE:
        stat_add(r->cache_hit ? &p->cache_hits : &p->compiles, r->compile_ms, 0);
        p->load_ms += r->load_ms;
        break;
    }
}

/* A fully resolved chunk leaves `open`: kept for the trace or recycled. */
static void retire_chunk(kiln_prof *p, prof_chunk *c) {
    if (p->retain && p->kept_records + c->count <= PROF_TRACE_MAX_RECORDS) {
        p->kept_records += c->count;
        kiln_prof_chunks_push(&p->kept, c);
        return;
    }
    if (p->retain) p->dropped_records += c->count;
    c->count = c->resolved = 0;
    kiln_prof_chunks_push(&p->spare, c);
}

static void resolve_chunks(kiln_prof *p, int wait) {
    /* GPU, while recording: leave the youngest chunks alone; their work may
     * still be queued and reading their times would stall the caller. */
    size_t skip_young = (p->timer != PROF_TIMER_HOST && !wait) ? PROF_UNRESOLVED_CHUNKS : 0;
    while (p->open.head && p->open.length > skip_young) {
        prof_chunk *c = p->open.head;
        while (c->resolved < c->count &&
               atomic_load_explicit(&c->rec[c->resolved].done, memory_order_acquire) &&
               read_times(p, c, c->resolved, wait))
            fold_record(p, &c->rec[c->resolved++]);
        if (c->resolved < c->count || c->count < PROF_CHUNK_RECORDS) return; /* in flight, or being filled */
        retire_chunk(p, kiln_prof_chunks_pop(&p->open));
    }
}

void kiln_prof_resolve(kiln_prof *p, int wait) {
    if (p->timer != PROF_TIMER_CUPTI) {
        resolve_chunks(p, wait);
        return;
    }
    if (wait && !atomic_load(&p->ctx->dead)) {
        /* Every record of finished work, then nothing is "not yet". */
        if (p->ctx->ops->synchronize && p->ctx->ops->synchronize(p->ctx->state) != KILN_OK)
            kiln_clear_error();
        kiln_prof_cupti_flush();
    }
    kiln_prof_cupti_reanchor();
    kiln_prof_cupti_lock();
    resolve_chunks(p, wait);
    kiln_prof_cupti_unlock();
}

/* Faults in the whole pages of [at, at + n) by one call, where the kernel
 * can (Linux 5.14), rather than one fault per page as they are written. */
static void prefault(void *at, size_t n) {
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), begin = ((uintptr_t)at + page - 1) & ~(page - 1),
              end = ((uintptr_t)at + n) & ~(page - 1);
    if (end > begin) (void)madvise((void *)begin, end - begin, MADV_POPULATE_WRITE);
#else
    (void)at, (void)n;
#endif
}

/* A chunk, of fresh memory as a trace's are (it keeps every chunk). Its
 * pages are faulted in at once: on a VM a page's fault costs ~1.5 us,
 * ~45 ns of each record's cost when the records fault them one by one,
 * ~18 ns less by one call per chunk. Memory that malloc had faulted in
 * already costs ~4 ns a record more. */
static prof_chunk *new_chunk(void) {
    prof_chunk *c = malloc(sizeof *c);
    if (c) prefault(c, sizeof *c);
    return c;
}

/* A zeroed record at the end of the log; NULL when out of memory. Lock held. */
prof_record *kiln_prof_new_record(kiln_prof *p) {
    prof_chunk *c = p->open.tail;
    if (!c || c->count == PROF_CHUNK_RECORDS) {
        c = kiln_prof_chunks_pop(&p->spare);
        if (!c && !(c = new_chunk())) return NULL;
        c->count = c->resolved = 0;
        kiln_prof_chunks_push(&p->open, c);
        kiln_prof_resolve(p, 0);
        if (p->open.tail != c) return NULL; /* cannot happen: c is unresolved and last */
    }
    /* Copied from a blank record, not memset: the compiler makes a few
     * vector stores of the copy, a `rep stos` (slow to start) of the memset. */
    static const prof_record blank = {.desc_id = PROF_NO_ID};
    prof_record *r = &c->rec[c->count++];
    memcpy(r, &blank, sizeof *r);
    r->host_tid = host_thread_id();
    return r;
}
