/* staging.c: ufunc calls on a CUDA context with host-memory operands.
 *
 * The elements are cut in chunks; chunk k runs on slot k % UF_SLOTS, each
 * slot a stream with its own device buffers (and, for pageable host memory,
 * pinned staging buffers). On a slot's stream: copy the host inputs of the
 * chunk in, run the kernel on the chunk, copy the host outputs out. Slots
 * run concurrently, so copy-in of one chunk overlaps the kernel of another
 * and the copy-out of a third (the copy engines are full duplex). Host
 * memory that is already page-locked is copied from/to in place; pageable
 * memory goes through the slot's pinned buffers with a host memcpy, which
 * the CPU does while the GPU works on the two chunks queued before.
 *
 * Those memcpys are the cost of pageable operands: vectorAdd of 320M f32 with
 * a fresh host result moves 2 x 1.28 GB into the pinned buffers and 1.28 GB
 * out, 3.84 GB, which one thread copies at some 7 GB/s (about 550 ms) while
 * the DMA takes about 50 ms. So each chunk's copies (the outputs of the chunk
 * that last used the slot, and the inputs of the new one, as one batch) are
 * split over the context's copy threads (core/copy_pool.h; 8 by default):
 * at 4 to 5 GB/s per thread on pageable memory, 30+ GB/s together, the
 * 3.84 GB take 100 to 130 ms, overlapped with the DMA of earlier chunks.
 *
 * Applies when every array operand is C-contiguous with the full broadcast
 * shape (scalars are kernel arguments and never matter); anything else
 * stages whole arrays (call.c). Buffers are kept in the ufunc and reused. */
#include "ufunc/staging.h"

#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/copy_pool.h"
#include "core/error.h"
#include "kernel/module.h"
#include "ufunc/launch.h"

#define UF_SLOTS 3
#define UF_CHUNK_BYTES ((size_t)32 << 20) /* of the widest operand, per chunk */
#define UF_CHUNK_MIN_BYTES ((size_t)1 << 20)
#define UF_STAGE_MIN_ELEMENTS 65536 /* below: whole-array staging is as good */

typedef struct uf_slot {
    kiln_stream *stream;
    kiln_event *done;
    int busy;
    void *dev[UF_MAX_OPS];    /* device buffers of host operands */
    void *pinned[UF_MAX_OPS]; /* pinned staging for pageable host operands */
    /* outputs of the chunk in flight waiting to leave the pinned buffers */
    int64_t pending_lo, pending_n;
} uf_slot;

struct uf_staging {
    kiln_context *ctx;
    size_t bytes[UF_MAX_OPS]; /* capacity of each operand's buffers */
    uf_slot slot[UF_SLOTS];
};

static void slot_free_buffers(kiln_context *ctx, uf_slot *s) {
    for (int k = 0; k < UF_MAX_OPS; k++) {
        if (s->dev[k]) ctx->ops->mem_free(ctx->state, s->dev[k], kiln_stream_impl(s->stream));
        if (s->pinned[k]) ctx->ops->host_free(ctx->state, s->pinned[k]);
        s->dev[k] = s->pinned[k] = NULL;
    }
}

void uf_staging_release(kiln_ufunc *f) {
    struct uf_staging *st = f->staging;
    if (!st) return;
    for (int i = 0; i < UF_SLOTS; i++) {
        uf_slot *s = &st->slot[i];
        if (s->stream) (void)kiln_stream_synchronize(s->stream);
        slot_free_buffers(st->ctx, s);
        kiln_event_release(s->done);
        kiln_stream_release(s->stream);
    }
    free(st);
    f->staging = NULL;
}

/* Operand k of the call as the pipeline sees it. */
typedef struct uf_operand {
    kiln_array *array; /* NULL: a fresh host result (result_host) */
    char *host;        /* host memory (NULL: a device operand) */
    char *device;      /* device operand's memory */
    size_t item;
    int pinned;
    int is_output;
} uf_operand;

static kiln_status ensure_staging(kiln_ufunc *f, const uf_operand *ops, int nops, size_t chunk_elems) {
    kiln_context *ctx = f->ctx;
    if (!f->staging) {
        f->staging = calloc(1, sizeof *f->staging);
        if (!f->staging) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        f->staging->ctx = ctx;
    }
    struct uf_staging *st = f->staging;
    for (int i = 0; i < UF_SLOTS; i++) {
        uf_slot *s = &st->slot[i];
        kiln_status r = KILN_OK;
        if (!s->stream) r = kiln_stream_create(ctx, &s->stream);
        if (r == KILN_OK && !s->done) r = kiln_event_create(ctx, &s->done);
        if (r != KILN_OK) return r;
    }
    for (int k = 0; k < nops; k++) {
        if (!ops[k].host) continue;
        size_t need = chunk_elems * ops[k].item;
        if (st->bytes[k] >= need && st->slot[0].dev[k] && (ops[k].pinned || st->slot[0].pinned[k])) continue;
        for (int i = 0; i < UF_SLOTS; i++) {
            uf_slot *s = &st->slot[i];
            if (st->bytes[k] < need || !s->dev[k]) {
                if (s->dev[k]) ctx->ops->mem_free(ctx->state, s->dev[k], kiln_stream_impl(s->stream));
                s->dev[k] = NULL;
                kiln_status r =
                    ctx->ops->mem_alloc(ctx->state, need, kiln_stream_impl(s->stream), &s->dev[k]);
                if (r != KILN_OK)
                    return kiln_prefix_error(r, "%s: staging buffer of %zu bytes: ", f->name, need);
            }
            if (!ops[k].pinned && (st->bytes[k] < need || !s->pinned[k])) {
                if (s->pinned[k]) ctx->ops->host_free(ctx->state, s->pinned[k]);
                s->pinned[k] = NULL;
                kiln_status r = ctx->ops->host_alloc(ctx->state, need, &s->pinned[k]);
                if (r != KILN_OK)
                    return kiln_prefix_error(r, "%s: pinned staging buffer of %zu bytes: ", f->name, need);
            }
        }
        st->bytes[k] = need;
    }
    return KILN_OK;
}

/* The pageable outputs of the chunk that last ran on slot s, ready to leave
 * its pinned buffers once the chunk is done: appended to pieces. */
static int slot_outputs(const uf_slot *s, const uf_operand *ops, int nops, kiln_copy_piece *pieces, int n) {
    for (int k = 0; k < nops; k++)
        if (ops[k].is_output && ops[k].host && !ops[k].pinned)
            pieces[n++] = (kiln_copy_piece){ops[k].host + (size_t)s->pending_lo * ops[k].item, s->pinned[k],
                                            (size_t)s->pending_n * ops[k].item};
    return n;
}

/* Waits for the chunk that last ran on slot s (if any) and appends the copies
 * that move its outputs out to pieces (*n of them so far). */
static kiln_status slot_wait(uf_slot *s, const uf_operand *ops, int nops, kiln_copy_piece *pieces, int *n) {
    if (!s->busy) return KILN_OK;
    kiln_status r = kiln_event_synchronize(s->done);
    s->busy = 0;
    if (r == KILN_OK) *n = slot_outputs(s, ops, nops, pieces, *n);
    return r;
}

/* Queues chunk [lo, lo + len) on slot sl: inputs in, the kernel, outputs
 * out, then the slot's event. The pageable inputs are already in sl's pinned
 * buffers. */
static kiln_status slot_enqueue(kiln_ufunc *f, uf_slot *sl, const uf_plan *p, const uf_operand *ops, int nops,
                                int64_t lo, int64_t len) {
    kiln_context *ctx = f->ctx;
    kiln_backend_stream *bs = kiln_stream_impl(sl->stream);
    uf_plan q = *p;
    q.n = len;
    if (len <= INT32_MAX / 2) q.key.idx32 = 1;
    kiln_status s = KILN_OK;
    for (int k = 0; k < nops && s == KILN_OK; k++) {
        size_t off = (size_t)lo * ops[k].item, bytes = (size_t)len * ops[k].item;
        if (ops[k].device) {
            q.data[k] = ops[k].device + off;
            continue;
        }
        q.data[k] = sl->dev[k];
        if (ops[k].is_output) continue;
        const char *src = ops[k].pinned ? ops[k].host + off : (const char *)sl->pinned[k];
        s = kiln_backend_copy(ctx, sl->dev[k], src, bytes, KILN_COPY_HOST_TO_DEVICE, bs, 1);
    }
    if (q.key.layout == UF_VECTOR)
        for (int k = 0; k < nops; k++)
            if ((uintptr_t)q.data[k] % (ops[k].item * q.key.vec)) q.key.layout = UF_CONTIG, q.key.vec = 1;
    if (s == KILN_OK) s = uf_launch_plan(f, ctx, &q, 0, sl->stream);
    for (int k = 0; k < nops && s == KILN_OK; k++) {
        if (!ops[k].is_output || !ops[k].host) continue;
        size_t off = (size_t)lo * ops[k].item, bytes = (size_t)len * ops[k].item;
        void *dst = ops[k].pinned ? (void *)(ops[k].host + off) : sl->pinned[k];
        s = kiln_backend_copy(ctx, dst, sl->dev[k], bytes, KILN_COPY_DEVICE_TO_HOST, bs, 1);
    }
    if (s == KILN_OK) s = kiln_event_record(sl->done, sl->stream);
    sl->busy = s == KILN_OK;
    sl->pending_lo = lo;
    sl->pending_n = len;
    return s;
}

/* Runs the chunks through the slots. Per chunk, on the host: wait for the
 * chunk that last used the slot, then copy its pageable outputs out and the
 * new chunk's pageable inputs in, as one parallel batch; then queue. */
static kiln_status run_chunks(kiln_ufunc *f, const uf_plan *p, const uf_operand *ops, int nops, int64_t n,
                              int64_t chunk, kiln_copy_pool *pool) {
    struct uf_staging *st = f->staging;
    kiln_copy_piece pieces[2 * UF_MAX_OPS];
    kiln_status s = KILN_OK;
    int64_t c = 0;
    for (int64_t lo = 0; s == KILN_OK && lo < n; lo += chunk, c++) {
        uf_slot *sl = &st->slot[c % UF_SLOTS];
        int64_t len = n - lo < chunk ? n - lo : chunk;
        int np = 0;
        s = slot_wait(sl, ops, nops, pieces, &np);
        if (s != KILN_OK) break;
        for (int k = 0; k < nops; k++)
            if (!ops[k].is_output && ops[k].host && !ops[k].pinned)
                pieces[np++] = (kiln_copy_piece){sl->pinned[k], ops[k].host + (size_t)lo * ops[k].item,
                                                 (size_t)len * ops[k].item};
        kiln_copy_pool_run(pool, pieces, np);
        s = slot_enqueue(f, sl, p, ops, nops, lo, len);
    }
    /* Drain, oldest chunk first. After a failure, still wait for what was
     * queued: copies may target the caller's pinned memory. */
    for (int i = 0; i < UF_SLOTS; i++) {
        uf_slot *sl = &st->slot[(c + i) % UF_SLOTS];
        int np = 0;
        kiln_status r = s == KILN_OK ? slot_wait(sl, ops, nops, pieces, &np) : KILN_OK;
        if (r == KILN_OK) kiln_copy_pool_run(pool, pieces, np);
        if (s == KILN_OK) s = r;
        sl->busy = 0;
    }
    if (s != KILN_OK)
        for (int i = 0; i < UF_SLOTS; i++) (void)kiln_stream_synchronize(st->slot[i].stream);
    return s;
}

kiln_status uf_staged_call(kiln_ufunc *f, int sig, const kiln_value *args, kiln_array **outs, int nd,
                           const int64_t *shape, kiln_stream *stream) {
    kiln_context *ctx = f->ctx;
    const uf_signature *g = &f->sigs[sig];
    int64_t n = kiln_shape_size(nd, shape);
    if (n < UF_STAGE_MIN_ELEMENTS) return kiln_set_error(KILN_ERR_UNSUPPORTED, "small: stage whole arrays");
    /* Operands in plan order: outputs, then array inputs. */
    uf_operand ops[UF_MAX_OPS];
    int nops = 0, any_device = 0, any_host_in = 0;
    memset(ops, 0, sizeof ops);
    for (int j = 0; j < f->nout; j++) {
        kiln_array *o = outs[j];
        if (o && (!kiln_array_is_contiguous(o) || kiln_array_size(o) != n))
            return kiln_set_error(KILN_ERR_UNSUPPORTED, "strided output");
        ops[nops].array = o;
        ops[nops].is_output = 1;
        ops[nops].item = kiln_dtype_size(o ? o->dtype : g->out[j]);
        nops++;
    }
    for (int i = 0; i < f->nin; i++) {
        if (args[i].kind != KILN_VALUE_ARRAY) continue;
        kiln_array *a = args[i].as.array;
        if (!kiln_array_is_contiguous(a) || kiln_array_size(a) != n)
            return kiln_set_error(KILN_ERR_UNSUPPORTED, "broadcast or strided input");
        ops[nops].array = a;
        ops[nops].item = kiln_dtype_size(a->dtype);
        if (a->memory == KILN_MEMORY_HOST) any_host_in = 1;
        nops++;
    }
    for (int k = 0; k < nops; k++)
        if (ops[k].array && ops[k].array->memory != KILN_MEMORY_HOST) any_device = 1;
    /* New outputs: host memory when no input is on the device. */
    kiln_array *fresh[UF_MAX_OUT] = {0};
    kiln_status s = KILN_OK;
    for (int j = 0; j < f->nout && s == KILN_OK; j++) {
        if (outs[j]) continue;
        if (any_host_in && !any_device)
            s = kiln_array_empty_host(ctx, g->out[j], nd, shape, &fresh[j]);
        else
            s = kiln_array_empty(ctx, g->out[j], nd, shape, &fresh[j]);
        ops[j].array = fresh[j];
    }
    size_t widest = 1;
    int any_pageable = 0;
    for (int k = 0; k < nops && s == KILN_OK; k++) {
        kiln_array *a = ops[k].array;
        if (a->memory == KILN_MEMORY_HOST) {
            ops[k].host = a->data;
            ops[k].pinned = ctx->ops->host_is_pinned ? ctx->ops->host_is_pinned(ctx->state, a->data) : 0;
            any_pageable |= !ops[k].pinned;
        } else {
            ops[k].device = a->data;
        }
        widest = ops[k].item > widest ? ops[k].item : widest;
    }
    /* Big calls use UF_CHUNK_BYTES; smaller ones are still cut in about 8
     * chunks (not under 1 MiB) so that their copies in and out overlap too. */
    size_t chunk_bytes = f->stage_chunk_bytes;
    if (!chunk_bytes) {
        size_t eighth = (size_t)n * widest / 8;
        chunk_bytes = eighth > UF_CHUNK_BYTES       ? UF_CHUNK_BYTES
                      : eighth < UF_CHUNK_MIN_BYTES ? UF_CHUNK_MIN_BYTES
                                                    : eighth;
    }
    int64_t chunk = (int64_t)(chunk_bytes / widest);
    chunk = chunk < 256 ? 256 : chunk & ~(int64_t)255;
    if (chunk > n) chunk = (n + 255) & ~(int64_t)255;
    /* Calls of this ufunc from other threads wait here: the slots are shared. */
    pthread_mutex_lock(&f->staging_lock);
    if (s == KILN_OK) s = ensure_staging(f, ops, nops, (size_t)chunk);
    /* Device operands may still be written by earlier work on the caller's stream. */
    if (s == KILN_OK && any_device)
        s = stream ? kiln_stream_synchronize(stream)
                   : kiln_context_note(ctx, ctx->ops->stream_synchronize(ctx->state, NULL));

    /* The plan for a full-size contiguous call; per chunk only pointers and n
     * change. Buffers are allocated aligned and chunks start at multiples of
     * 256 elements, so the vector layout holds per chunk iff it does here
     * (device operands at their own addresses). */
    uf_plan p;
    kiln_array *ins[UF_MAX_IN] = {0};
    for (int i = 0; i < f->nin; i++) ins[i] = args[i].kind == KILN_VALUE_ARRAY ? args[i].as.array : NULL;
    kiln_array *kouts[UF_MAX_OUT];
    for (int j = 0; j < f->nout; j++) kouts[j] = ops[j].array;
    if (s == KILN_OK) {
        uf_build_plan(f, UF_CUDA, sig, args, ins, kouts, NULL, nd, shape, &p);
        s = run_chunks(f, &p, ops, nops, n, chunk, any_pageable ? kiln_context_copy_pool(ctx) : NULL);
    }
    /* Device outputs were written on the slots' streams: order them before
     * later work on the caller's stream. */
    struct uf_staging *st = f->staging;
    if (s == KILN_OK && any_device)
        for (int i = 0; i < UF_SLOTS && s == KILN_OK; i++) s = kiln_stream_synchronize(st->slot[i].stream);
    pthread_mutex_unlock(&f->staging_lock);
    if (s != KILN_OK) {
        for (int j = 0; j < f->nout; j++) kiln_array_release(fresh[j]);
        if (s == KILN_ERR_UNSUPPORTED) s = kiln_set_error(KILN_ERR_INTERNAL, "%s: staging failed", f->name);
        return s;
    }
    for (int j = 0; j < f->nout; j++)
        if (!outs[j]) outs[j] = fresh[j];
    return KILN_OK;
}
