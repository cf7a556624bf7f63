/* prof.c: the recorder behind KILN_PROFILE / KILN_TRACE and kiln_profiler_*.
 *
 * The hooks append fixed-size records to preallocated chunks under one mutex
 * (held for a few dozen instructions; launches may come from many threads).
 * Times: on the CPU backend work runs inside the call, so the host clock read
 * around the call is the work's time. On CUDA, CUPTI's activity records give
 * each operation's device start and end, matched by order on its stream
 * (prof_cupti.h); where CUPTI cannot be
 * had, or KILN_PROFILE_TIMER=events asks for it, two pooled backend events
 * are recorded around each operation on its stream. Device times are read
 * only when chunks are old (their work is long done) or a report is asked for.
 * The public kiln_profiler_* calls are in prof_api.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/cuda/cuda_prof.h"
#include "core/clock.h"
#include "core/error.h"
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

static int env_on(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "off") != 0 && strcmp(v, "no") != 0;
}

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ------------------------------------------------------------------ strings */

static uint64_t hash_string(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

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
static uint32_t intern(kiln_prof *p, const char *s) {
    if (!s) return PROF_NO_ID;
    uint64_t h = hash_string(s);
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
    char *text = dup_string(s);
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

static uint32_t stream_index(kiln_prof *p, kiln_backend_stream *s) {
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
static uint32_t cupti_stream_id(kiln_prof *p, uint32_t index, kiln_backend_stream *stream) {
    prof_dev_stream *d = &p->dev_streams[index];
    unsigned generation = atomic_load_explicit(&kiln_cuda_streams_destroyed, memory_order_acquire);
    if (!d->known || d->generation != generation) {
        d->id = kiln_prof_cupti_stream_id(p->ctx, stream);
        d->generation = generation;
        d->known = 1;
    }
    return d->id;
}

/* ------------------------------------------------------------------ chunks */

static void list_push(prof_chunk_list *l, prof_chunk *c) {
    c->next = NULL;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->length++;
}

static prof_chunk *list_pop(prof_chunk_list *l) {
    prof_chunk *c = l->head;
    if (!c) return NULL;
    l->head = c->next;
    if (!l->head) l->tail = NULL;
    l->length--;
    c->next = NULL;
    return c;
}

static void list_free(prof_chunk_list *l) {
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

/* What r's CUPTI record must show. */
static void cupti_op_of(const kiln_prof *p, const prof_record *r, kiln_cupti_op *q) {
    memset(q, 0, sizeof *q);
    q->cls = r->type == PROF_KERNEL ? KILN_CUPTI_KERNEL : KILN_CUPTI_COPY;
    q->copy_kind = r->copy_kind;
    q->context_id = p->cupti_context_id;
    q->stream_id = r->dev_stream;
    q->host_begin_ms = r->host_begin_ms;
    if (r->type == PROF_KERNEL) {
        q->key = kiln_prof_cupti_dims_key(r->grid, r->block);
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
    double begin_ms = 0, dur_ms = 0;
    if (kiln_prof_cupti_match_locked(&q, cupti_cursor(p, r), 1, &begin_ms, &dur_ms) == KILN_CUPTI_FOUND) {
        r->dev_begin_ms = begin_ms;
        r->dev_ms = dur_ms;
        return 1;
    }
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
        if (s) s->flops += r->flops;
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
        list_push(&p->kept, c);
        return;
    }
    if (p->retain) p->dropped_records += c->count;
    c->count = c->resolved = 0;
    list_push(&p->spare, c);
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
        retire_chunk(p, list_pop(&p->open));
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

/* A zeroed record at the end of the log; NULL when out of memory. Lock held. */
static prof_record *new_record(kiln_prof *p) {
    prof_chunk *c = p->open.tail;
    if (!c || c->count == PROF_CHUNK_RECORDS) {
        c = list_pop(&p->spare);
        if (!c) {
            c = malloc(sizeof *c);
            if (!c) return NULL;
        }
        c->count = c->resolved = 0;
        list_push(&p->open, c);
        kiln_prof_resolve(p, 0);
        if (p->open.tail != c) return NULL; /* cannot happen: c is unresolved and last */
    }
    prof_record *r = &c->rec[c->count++];
    memset(r, 0, sizeof *r);
    r->desc_id = PROF_NO_ID;
    r->host_tid = host_thread_id();
    return r;
}

/* ------------------------------------------------------------------ life */

void kiln_prof_free(kiln_prof *p) {
    if (!p) return;
    if (p->timer == PROF_TIMER_CUPTI) kiln_prof_cupti_release();
    kiln_prof_events_free(p);
    list_free(&p->open);
    list_free(&p->kept);
    list_free(&p->spare);
    for (uint32_t i = 0; i < p->string_count; i++) free(p->strings[i].text);
    free(p->strings);
    free(p->string_table);
    free(p->streams);
    free(p->dev_streams);
    free(p->kernels);
    free(p->summary_path);
    free(p->trace_path);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* KILN_PROFILE_TIMER=events|cupti overrides the choice (auto, the default): CUPTI on kiln's CUDA
 * backend when libcupti loads (cheapest per launch), else events; the CPU
 * backend always times on the host. */
static void choose_timer(kiln_prof *p) {
    const char *want = getenv("KILN_PROFILE_TIMER");
    int want_events = want && strcmp(want, "events") == 0, want_cupti = want && strcmp(want, "cupti") == 0;
    if (want && *want && !want_events && !want_cupti && strcmp(want, "auto") != 0)
        fprintf(stderr,
                "kiln: warning: KILN_PROFILE_TIMER=%s is neither events nor cupti; choosing the timer "
                "automatically\n",
                want);
    p->timer = PROF_TIMER_HOST;
    if (p->ctx->ops->kind == KILN_BACKEND_CPU) {
        if (want_cupti)
            fprintf(stderr, "kiln: warning: KILN_PROFILE_TIMER=cupti: the CPU backend times on the host\n");
        return;
    }
    if (want_events) {
        snprintf(p->timer_note, sizeof p->timer_note, "KILN_PROFILE_TIMER=events");
    } else if (p->ctx->ops != kiln_backend_cuda()) {
        snprintf(p->timer_note, sizeof p->timer_note, "CUPTI times only kiln's CUDA backend");
    } else {
        const char *why = "", *library = "";
        if (kiln_prof_cupti_acquire(&why, &library)) {
            p->timer = PROF_TIMER_CUPTI;
            p->cupti_library = library;
            p->cupti_context_id = kiln_prof_cupti_context_id(p->ctx);
            kiln_prof_cupti_lock();
            p->cupti_start = kiln_prof_cupti_head_locked();
            kiln_prof_cupti_unlock();
            return;
        }
        snprintf(p->timer_note, sizeof p->timer_note, "CUPTI unavailable: %s", why);
    }
    if (want_cupti)
        fprintf(stderr, "kiln: warning: KILN_PROFILE_TIMER=cupti: %s; timing with events\n", p->timer_note);
    kiln_prof_events_start(p);
}

void kiln_prof_set_retain(kiln_prof *p, int retain) {
    p->retain = retain;
    atomic_store_explicit(&p->head.wants_args, retain, memory_order_relaxed);
}

kiln_prof *kiln_prof_create(kiln_context *ctx) {
    kiln_prof *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->ctx = ctx;
    pthread_mutex_init(&p->lock, NULL);
    atomic_init(&p->head.enabled, 1);
    atomic_init(&p->head.wants_args, 0);
    p->t0_ms = kiln_now_ms();
    for (int k = 0; k < PROF_COLLECTIVE_KINDS; k++) p->coll_name[k] = PROF_NO_ID;
    if (stream_index(p, NULL) != 0 || !p->streams || !p->dev_streams) {
        kiln_prof_free(p);
        return NULL;
    }
    choose_timer(p);
    return p;
}

/* 0 (and a warning) when a trace cannot be written to `path`: checked up
 * front so the user learns it at the start of a long run, not at its end. */
static int trace_path_usable(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    const char *why = NULL;
    if (access(dir, W_OK | X_OK) != 0)
        why = strerror(errno);
    else if (access(path, F_OK) == 0 && access(path, W_OK) != 0)
        why = strerror(errno);
    if (!why) return 1;
    fprintf(stderr, "kiln: warning: KILN_TRACE=%s cannot be written (%s); no trace will be written\n", path,
            why);
    return 0;
}

kiln_status kiln_prof_attach(kiln_context *ctx) {
    ctx->prof = NULL;
    int profile = env_on("KILN_PROFILE");
    const char *trace = getenv("KILN_TRACE");
    if (trace && (!*trace || !trace_path_usable(trace))) trace = NULL;
    if (!profile && !trace) return KILN_OK;
    kiln_prof *p = kiln_prof_create(ctx);
    const char *out = getenv("KILN_PROFILE_OUT");
    if (p) {
        p->print_at_exit = profile;
        kiln_prof_set_retain(p, trace != NULL);
        if (trace && !(p->trace_path = dup_string(trace))) kiln_prof_set_retain(p, 0);
        if (out && *out) p->summary_path = dup_string(out);
    }
    if (!p || (trace && !p->trace_path)) {
        /* Profiling is a diagnostic: never fail kiln_open over it. */
        fprintf(stderr, "kiln: warning: out of memory starting the profiler; profiling is off\n");
        kiln_prof_free(p);
        return KILN_OK;
    }
    ctx->prof = p;
    return KILN_OK;
}

static void write_summary_at_exit(kiln_prof *p) {
    char *text = kiln_prof_summary_text(p);
    if (!text) {
        fprintf(stderr, "kiln: warning: out of memory formatting the profile\n");
        return;
    }
    FILE *f = stderr;
    if (p->summary_path) {
        f = fopen(p->summary_path, "a");
        if (!f) {
            fprintf(stderr,
                    "kiln: warning: cannot write the profile to KILN_PROFILE_OUT=%s (%s); printing it here\n",
                    p->summary_path, strerror(errno));
            f = stderr;
        }
    }
    /* A full disk (ENOSPC) or a failing device must not lose the profile
     * silently: say so, and print it here instead. */
    int ok = fputs(text, f) >= 0;
    ok = fflush(f) == 0 && ok && !ferror(f);
    int err = errno;
    if (f != stderr && fclose(f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok && f != stderr) {
        fprintf(stderr,
                "kiln: warning: writing the profile to KILN_PROFILE_OUT=%s failed (%s); printing it here\n",
                p->summary_path, strerror(err));
        fputs(text, stderr);
    }
    free(text);
}

void kiln_prof_detach(kiln_context *ctx) {
    kiln_prof *p = ctx->prof;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    kiln_prof_resolve(p, 1);
    if (p->print_at_exit) write_summary_at_exit(p);
    if (p->trace_path && kiln_prof_trace_write(p, p->trace_path) != KILN_OK) {
        fprintf(stderr, "kiln: warning: %s; the program's results are not affected\n", kiln_last_error());
        kiln_clear_error();
    }
    pthread_mutex_unlock(&p->lock);
    ctx->prof = NULL;
    kiln_prof_free(p);
}

/* ------------------------------------------------------------------ hooks */

/* The common tail of the _begin hooks, outside the lock. */
static prof_record *start_op(kiln_context *ctx, prof_record *r, kiln_backend_stream *stream) {
    if (!r) return NULL;
    r->stream_ptr = stream;
    if (r->ev[0] && ctx->ops->event_record(ctx->state, r->ev[0], stream) != KILN_OK) r->ev_failed = 1;
    r->fail_mark = kiln_cuda_failed_calls;
    r->host_begin_ms = kiln_now_ms();
    return r;
}

/* The begin of every device-timed op: ctx's profiler, locked, with a new record
 * of the type in *r (NULL when none can be had); NULL, not locked, when profiling
 * is off. The caller fills the record, then calls unlock_start_op. */
static kiln_prof *lock_new_record(kiln_context *ctx, prof_type type, prof_record **r) {
    kiln_prof *p = ctx->prof;
    if (!p || !atomic_load_explicit(&p->head.enabled, memory_order_relaxed)) return NULL;
    pthread_mutex_lock(&p->lock);
    *r = new_record(p);
    if (*r) (*r)->type = (uint8_t)type;
    return p;
}

static kiln_prof_op *unlock_start_op(kiln_context *ctx, kiln_prof *p, prof_record *r,
                                     kiln_backend_stream *stream) {
    pthread_mutex_unlock(&p->lock);
    return start_op(ctx, r, stream);
}

/* The id of a kernel's name; the last one is remembered, launches repeat. */
static uint32_t kernel_name_id(kiln_prof *p, const char *name) {
    if (name && name == p->last_name && strcmp(p->strings[p->last_name_id].text, name) == 0)
        return p->last_name_id;
    uint32_t id = intern(p, name);
    if (id != PROF_NO_ID) {
        p->last_name = name;
        p->last_name_id = id;
    }
    return id;
}

kiln_prof_op *kiln_prof_kernel_begin(kiln_context *ctx, const char *name, const kiln_launch_config *cfg,
                                     kiln_backend_stream *stream, const char *args_desc) {
    prof_record *r;
    kiln_prof *p = lock_new_record(ctx, PROF_KERNEL, &r);
    if (!p) return NULL;
    if (r) {
        r->name_id = kernel_name_id(p, name);
        if (p->retain) r->desc_id = intern(p, args_desc); /* only a trace shows it */
        r->stream = stream_index(p, stream);
        if (p->timer == PROF_TIMER_CUPTI) r->dev_stream = cupti_stream_id(p, r->stream, stream);
        if (cfg) {
            memcpy(r->grid, cfg->grid, sizeof r->grid);
            memcpy(r->block, cfg->block, sizeof r->block);
            r->shared_bytes = cfg->shared_bytes;
        }
        if (p->use_events) kiln_prof_events_take(p, r);
    }
    return unlock_start_op(ctx, p, r, stream);
}

kiln_prof_op *kiln_prof_library_begin(kiln_context *ctx, const char *name, kiln_backend_stream *stream,
                                      const char *args_desc, double flops) {
    prof_record *r;
    kiln_prof *p = lock_new_record(ctx, PROF_KERNEL, &r);
    if (!p) return NULL;
    if (r) {
        r->library = 1;
        r->flops = flops;
        r->name_id = kernel_name_id(p, name);
        if (p->retain) r->desc_id = intern(p, args_desc);
        r->stream = stream_index(p, stream);
        if (ctx->ops->kind == KILN_BACKEND_CUDA) kiln_prof_events_take(p, r);
    }
    return unlock_start_op(ctx, p, r, stream);
}

kiln_prof_op *kiln_prof_copy_begin(kiln_context *ctx, kiln_copy_kind kind, size_t bytes, int pinned,
                                   kiln_backend_stream *stream) {
    prof_record *r;
    kiln_prof *p = lock_new_record(ctx, PROF_COPY, &r);
    if (!p) return NULL;
    if (r) {
        r->copy_kind = (uint8_t)kind;
        r->pinned = pinned != 0;
        r->bytes = bytes;
        r->stream = stream_index(p, stream);
        if (p->timer == PROF_TIMER_CUPTI) r->dev_stream = cupti_stream_id(p, r->stream, stream);
        if (p->use_events) kiln_prof_events_take(p, r);
    }
    return unlock_start_op(ctx, p, r, stream);
}

void kiln_prof_end(kiln_context *ctx, kiln_prof_op *op) {
    if (!op) return;
    op->host_end_ms = kiln_now_ms();
    op->no_device = kiln_cuda_failed_calls != op->fail_mark; /* CUPTI: no record will come */
    if (op->ev[1] && ctx->ops->event_record(ctx->state, op->ev[1], op->stream_ptr) != KILN_OK)
        op->ev_failed = 1; /* a pooled event may hold an old time: use host times */
    atomic_store_explicit(&op->done, 1, memory_order_release);
}

kiln_prof_op *kiln_prof_comm_begin(kiln_context *ctx, int coll, const char *name, size_t bytes,
                                   double bus_factor, kiln_backend_stream *stream) {
    prof_record *r;
    kiln_prof *p = lock_new_record(ctx, PROF_COLLECTIVE, &r);
    if (!p) return NULL;
    if (r) {
        r->copy_kind = (uint8_t)coll;
        r->name_id = intern(p, name);
        r->bytes = bytes;
        r->bus_factor = bus_factor;
        r->stream = stream_index(p, stream);
        r->dev_stream = PROF_NO_ID;
        if (p->timer != PROF_TIMER_HOST) kiln_prof_events_take(p, r);
    }
    return unlock_start_op(ctx, p, r, stream);
}

void kiln_prof_comm_end(kiln_context *ctx, kiln_prof_op *op, int coll, const char *name, size_t bytes,
                        double bus_factor) {
    if (!op) return;
    kiln_prof *p = ctx->prof;
    pthread_mutex_lock(&p->lock);
    op->copy_kind = (uint8_t)coll;
    op->name_id = intern(p, name);
    op->bytes = bytes;
    op->bus_factor = bus_factor;
    pthread_mutex_unlock(&p->lock);
    kiln_prof_end(ctx, op);
}

/* "trace.json" -> "trace.rank1.json"; "trace" -> "trace.rank1". */
static char *rank_path(const char *path, int rank) {
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    size_t stem = dot && (!slash || dot > slash) && dot != path ? (size_t)(dot - path) : strlen(path);
    size_t n = strlen(path) + 32;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%.*s.rank%d%s", (int)stem, path, rank, path + stem);
    return out;
}

void kiln_prof_set_rank(kiln_context *ctx, int rank, int nranks, const char *transport) {
    kiln_prof *p = ctx->prof;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    /* A one-rank communicator beside a real one (a check run on the same
     * context) does not make the context's rank 0 of 1. */
    if ((p->rank == rank && p->nranks == nranks) || (nranks == 1 && p->nranks > 1)) {
        pthread_mutex_unlock(&p->lock);
        return;
    }
    if (p->trace_path && nranks > 1 && p->nranks <= 1) {
        char *n = rank_path(p->trace_path, rank);
        if (n) {
            free(p->trace_path);
            p->trace_path = n;
        }
    }
    p->rank = rank;
    p->nranks = nranks;
    snprintf(p->transport, sizeof p->transport, "%s", transport);
    pthread_mutex_unlock(&p->lock);
}

/* Allocations and compiles are timed by the caller on the host. */
static prof_record *host_record(kiln_context *ctx, prof_type type, double ms) {
    kiln_prof *p = ctx->prof;
    if (!p || !atomic_load_explicit(&p->head.enabled, memory_order_relaxed)) return NULL;
    double now = kiln_now_ms();
    prof_record *r = new_record(p);
    if (!r) return NULL;
    r->type = (uint8_t)type;
    r->host_begin_ms = now - ms;
    r->host_end_ms = now;
    r->dev_begin_ms = r->host_begin_ms;
    r->dev_ms = ms;
    return r;
}

void kiln_prof_alloc(kiln_context *ctx, size_t bytes, double host_ms) {
    kiln_prof *p = ctx->prof;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    prof_record *r = host_record(ctx, PROF_ALLOC, host_ms);
    if (r) {
        r->bytes = bytes;
        atomic_store_explicit(&r->done, 1, memory_order_release);
    }
    pthread_mutex_unlock(&p->lock);
}

void kiln_prof_compile(kiln_context *ctx, const char *name, int cache_hit, double compile_ms,
                       double load_ms) {
    kiln_prof *p = ctx->prof;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    prof_record *r = host_record(ctx, PROF_COMPILE, compile_ms + load_ms);
    if (r) {
        r->name_id = intern(p, name ? name : "kernel.cu");
        r->cache_hit = cache_hit != 0;
        r->compile_ms = compile_ms;
        r->load_ms = load_ms;
        atomic_store_explicit(&r->done, 1, memory_order_release);
    }
    pthread_mutex_unlock(&p->lock);
}

void kiln_prof_cache_reject(kiln_context *ctx, const char *name, const char *why) {
    kiln_prof *p = ctx->prof;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->cache_rejects++;
    snprintf(p->last_reject, sizeof p->last_reject, "%s: %s", name ? name : "kernel.cu", why);
    pthread_mutex_unlock(&p->lock);
}

/* kiln_profiler_reset: drops every finished record and the statistics. */
void kiln_prof_forget(kiln_prof *p) {
    kiln_prof_resolve(p, 1);
    /* Finished records are folded; drop them and the statistics. Records
     * still in flight on other threads stay in the open chunks. */
    for (prof_chunk *c; (c = list_pop(&p->kept));) {
        c->count = c->resolved = 0;
        list_push(&p->spare, c);
    }
    p->kept_records = 0;
    p->dropped_records = 0;
    if (p->kernels) memset(p->kernels, 0, p->kernel_cap * sizeof *p->kernels);
    memset(p->copies, 0, sizeof p->copies);
    memset(&p->allocs, 0, sizeof p->allocs);
    memset(&p->compiles, 0, sizeof p->compiles);
    memset(&p->cache_hits, 0, sizeof p->cache_hits);
    memset(p->colls, 0, sizeof p->colls);
    p->cache_rejects = 0;
    p->last_reject[0] = '\0';
    p->load_ms = 0;
    p->reset_ms = kiln_now_ms();
}
