/* prof_hooks.c: the hooks the rest of kiln calls under KILN_PROF_ON (prof.h):
 * a record per kernel, library call, copy and collective, opened with its
 * start on the operation's stream and closed at kiln_prof_end; allocations
 * and compiles, timed by their caller on the host; the rank of a
 * communicator's context. The recorder itself (prof.c) says how times are
 * read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "prof/prof_cupti.h"
#include "prof/prof_internal.h"

/* The common tail of the _begin hooks, outside the lock. `coarse`: the
 * host call's start is only a lower bound for CUPTI's match (no trace shows
 * it): the coarse clock gives one for less than the precise clock. */
static prof_record *start_op(kiln_context *ctx, kiln_prof *p, prof_record *r, kiln_backend_stream *stream,
                             int coarse) {
    if (!r) return NULL;
    r->stream_ptr = stream;
    if (r->ev[0] && ctx->ops->event_record(ctx->state, r->ev[0], stream) != KILN_OK) r->ev_failed = 1;
    r->fail_mark = kiln_prof_failed_calls(p);
    r->host_begin_ms = coarse ? kiln_now_coarse_ms() : kiln_now_ms();
    return r;
}

/* The begin of every device-timed op: ctx's profiler, locked, with a new record
 * of the type in *r (NULL when none can be had); NULL, not locked, when profiling
 * is off. The caller fills the record, then calls unlock_start_op. */
static kiln_prof *lock_new_record(kiln_context *ctx, prof_type type, prof_record **r) {
    kiln_prof *p = kiln_prof_of(ctx);
    if (!p || !atomic_load_explicit(&p->head.enabled, memory_order_relaxed)) return NULL;
    pthread_mutex_lock(&p->lock);
    *r = kiln_prof_new_record(p);
    if (*r) (*r)->type = (uint8_t)type;
    return p;
}

static kiln_prof_op *unlock_start_op(kiln_context *ctx, kiln_prof *p, prof_record *r,
                                     kiln_backend_stream *stream) {
    pthread_mutex_unlock(&p->lock);
    return start_op(ctx, p, r, stream, 0);
}

/* The id of `s` (NULL: none), the last string looked up through `last`
 * remembered: the hooks are given the same pointer again and again (a
 * kernel's name, a plan's label). Its text is compared too, as the pointer
 * may have been freed and reused for another string. */
static uint32_t intern_cached(kiln_prof *p, prof_last_string *last, const char *s) {
    if (s && s == last->ptr && strcmp(p->strings[last->id].text, s) == 0) return last->id;
    uint32_t id = kiln_prof_intern(p, s);
    if (id != PROF_NO_ID) {
        last->ptr = s;
        last->id = id;
    }
    return id;
}

/* The id of the description of a launch's arguments: from the cache when
 * a launch with the same key came recently, else described and interned. */
static uint32_t launch_desc_id(kiln_prof *p, const kiln_prof_args *args) {
    uint32_t slot = (uint32_t)(args->key ^ (args->key >> 32)) & (PROF_DESC_CACHE - 1);
    if (args->key && p->desc_keys[slot] == args->key) return p->desc_ids[slot];
    char desc[512];
    desc[0] = '\0';
    args->describe(args->data, desc, sizeof desc);
    uint32_t id = kiln_prof_intern(p, desc);
    if (id != PROF_NO_ID && args->key) {
        p->desc_keys[slot] = args->key;
        p->desc_ids[slot] = id;
    }
    return id;
}

/* A kernel's record: args_desc, or args described lazily (a trace shows
 * them; without one neither is looked at). */
static kiln_prof_op *kernel_begin(kiln_context *ctx, const char *name, const kiln_launch_config *cfg,
                                  kiln_backend_stream *stream, const char *args_desc,
                                  const kiln_prof_args *args) {
    prof_record *r;
    kiln_prof *p = lock_new_record(ctx, PROF_KERNEL, &r);
    if (!p) return NULL;
    /* Under CUPTI without a trace the host call's span is not shown, and
     * its start only bounds the match from below (kiln_prof_end reads no
     * clock at all there). */
    int coarse = p->timer == PROF_TIMER_CUPTI && !p->retain;
    if (r) {
        r->name_id = intern_cached(p, &p->last_name, name);
        if (p->retain)
            r->desc_id = args ? launch_desc_id(p, args) : intern_cached(p, &p->last_desc, args_desc);
        r->stream = kiln_prof_stream_index(p, stream);
        if (p->timer == PROF_TIMER_CUPTI) r->dev_stream = kiln_prof_stream_cupti_id(p, r->stream, stream);
        if (cfg) {
            memcpy(r->grid, cfg->grid, sizeof r->grid);
            memcpy(r->block, cfg->block, sizeof r->block);
            r->shared_bytes = cfg->shared_bytes;
        }
        if (p->use_events) kiln_prof_events_take(p, r);
    }
    pthread_mutex_unlock(&p->lock);
    return start_op(ctx, p, r, stream, coarse);
}

kiln_prof_op *kiln_prof_kernel_begin(kiln_context *ctx, const char *name, const kiln_launch_config *cfg,
                                     kiln_backend_stream *stream, const char *args_desc) {
    return kernel_begin(ctx, name, cfg, stream, args_desc, NULL);
}

kiln_prof_op *kiln_prof_launch_begin(kiln_context *ctx, const char *name, const kiln_launch_config *cfg,
                                     kiln_backend_stream *stream, const kiln_prof_args *args) {
    return kernel_begin(ctx, name, cfg, stream, NULL, args);
}

kiln_prof_op *kiln_prof_library_begin(kiln_context *ctx, const char *name, kiln_backend_stream *stream,
                                      const char *args_desc, double flops) {
    prof_record *r;
    kiln_prof *p = lock_new_record(ctx, PROF_KERNEL, &r);
    if (!p) return NULL;
    if (r) {
        r->library = 1;
        r->flops = flops;
        r->name_id = intern_cached(p, &p->last_name, name);
        if (p->retain) r->desc_id = intern_cached(p, &p->last_desc, args_desc);
        r->stream = kiln_prof_stream_index(p, stream);
        if (!kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_EXECUTION)) kiln_prof_events_take(p, r);
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
        r->stream = kiln_prof_stream_index(p, stream);
        if (p->timer == PROF_TIMER_CUPTI) r->dev_stream = kiln_prof_stream_cupti_id(p, r->stream, stream);
        if (p->use_events) kiln_prof_events_take(p, r);
    }
    return unlock_start_op(ctx, p, r, stream);
}

void kiln_prof_end(kiln_context *ctx, kiln_prof_op *op) {
    if (!op) return;
    kiln_prof *p = kiln_prof_of(ctx);
    /* Under CUPTI a kernel's time is CUPTI's, and without a trace nothing
     * shows the host call's span: a launch spares the clock read (a
     * clock_gettime is a tenth of a launch's host cost on some VMs). A
     * launch CUPTI then gives no time for counts with none. */
    int host_span =
        !(p && p->timer == PROF_TIMER_CUPTI && !p->retain && op->type == PROF_KERNEL && !op->library);
    op->host_end_ms = host_span ? kiln_now_ms() : op->host_begin_ms;
    op->no_device = p && kiln_prof_failed_calls(p) != op->fail_mark; /* CUPTI: no record will come */
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
        r->name_id = kiln_prof_intern(p, name);
        r->bytes = bytes;
        r->bus_factor = bus_factor;
        r->stream = kiln_prof_stream_index(p, stream);
        r->dev_stream = PROF_NO_ID;
        if (p->timer != PROF_TIMER_HOST) kiln_prof_events_take(p, r);
    }
    return unlock_start_op(ctx, p, r, stream);
}

void kiln_prof_comm_end(kiln_context *ctx, kiln_prof_op *op, int coll, const char *name, size_t bytes,
                        double bus_factor) {
    if (!op) return;
    kiln_prof *p = kiln_prof_of(ctx);
    pthread_mutex_lock(&p->lock);
    op->copy_kind = (uint8_t)coll;
    op->name_id = kiln_prof_intern(p, name);
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
    kiln_prof *p = kiln_prof_of(ctx);
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
    kiln_prof *p = kiln_prof_of(ctx);
    if (!p || !atomic_load_explicit(&p->head.enabled, memory_order_relaxed)) return NULL;
    double now = kiln_now_ms();
    prof_record *r = kiln_prof_new_record(p);
    if (!r) return NULL;
    r->type = (uint8_t)type;
    r->host_begin_ms = now - ms;
    r->host_end_ms = now;
    r->dev_begin_ms = r->host_begin_ms;
    r->dev_ms = ms;
    return r;
}

void kiln_prof_alloc(kiln_context *ctx, size_t bytes, double host_ms) {
    kiln_prof *p = kiln_prof_of(ctx);
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
    kiln_prof *p = kiln_prof_of(ctx);
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    prof_record *r = host_record(ctx, PROF_COMPILE, compile_ms + load_ms);
    if (r) {
        r->name_id = kiln_prof_intern(p, name ? name : "kernel.cu");
        r->cache_hit = cache_hit != 0;
        r->compile_ms = compile_ms;
        r->load_ms = load_ms;
        atomic_store_explicit(&r->done, 1, memory_order_release);
    }
    pthread_mutex_unlock(&p->lock);
}

void kiln_prof_cache_reject(kiln_context *ctx, const char *name, const char *why) {
    kiln_prof *p = kiln_prof_of(ctx);
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
    for (prof_chunk *c; (c = kiln_prof_chunks_pop(&p->kept));) {
        c->count = c->resolved = 0;
        kiln_prof_chunks_push(&p->spare, c);
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
