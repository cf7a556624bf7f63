/* comm_collectives.c: the public collectives: argument checks, the
 * cross-rank check, the profiler's record, and the transport. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "comm/comm_base.h"
#include "comm/comm_check.h"
#include "comm/comm_prof.h"
#include "core/error.h"

static _Thread_local int group_depth;
int kiln_comm_group_depth(void) { return group_depth; }

/* NCCL calls made inside a group wait here until the outermost group ends.
 * For the ranks of one process (kiln_comm_init_all) the cross-rank check of
 * a call can fail only when a later rank makes its call; had the earlier
 * rank's call already gone to NCCL, the group's end would launch it alone
 * and wait forever for a peer that never comes (NCCL connects peers lazily,
 * inside ncclGroupEnd). Held back, the calls of a clique found mismatched
 * are dropped, and the rest go to NCCL in one ncclGroupStart/End. */
typedef struct queued_call {
    kiln_comm *c;
    comm_call call;
} queued_call;
/* A group of up to QUEUE_INLINE calls (one per GPU of a machine, a halo's
 * sends and receives) is held without touching the heap: a small-message
 * group costs microseconds, and a malloc and free per group are part of
 * what kiln adds to NCCL's own cost. */
#define QUEUE_INLINE 32
static _Thread_local queued_call queued_inline[QUEUE_INLINE];
static _Thread_local queued_call *queued_heap; /* NULL: the calls are in queued_inline */
static _Thread_local size_t queued_n, queued_heap_cap;

static queued_call *queued_calls(void) { return queued_heap ? queued_heap : queued_inline; }

static kiln_status queue_call(kiln_comm *c, const comm_call *call) {
    size_t cap = queued_heap ? queued_heap_cap : QUEUE_INLINE;
    if (queued_n == cap) {
        queued_call *grown = malloc(2 * cap * sizeof *grown);
        if (!grown)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_comm_%s: out of host memory for the group",
                                  kiln_comm_op_name(call->op));
        memcpy(grown, queued_calls(), queued_n * sizeof *grown);
        free(queued_heap);
        queued_heap = grown;
        queued_heap_cap = 2 * cap;
    }
    queued_calls()[queued_n].c = c;
    queued_calls()[queued_n].call = *call;
    queued_n++;
    return KILN_OK;
}

static int comm_failed(const kiln_comm *c) { return c->broken || kiln_comm_clique_broken(c->clique); }

/* Issues the held calls of healthy communicators as one NCCL group. The
 * first failure is the one reported; every call is still attempted so no
 * peer is left waiting for a call this thread skipped. */
static kiln_status issue_queued(void) {
    kiln_status first = KILN_OK;
    queued_call *queued = queued_calls();
    size_t live = 0;
    for (size_t i = 0; i < queued_n; i++) live += !comm_failed(queued[i].c);
    /* Only a transport with a group op holds calls (queue_call). */
    const comm_transport *t = queued_n ? queued[0].c->transport : NULL;
    if (live > 0) {
        kiln_status started = first = t->group(1);
        for (size_t i = 0; i < queued_n && started == KILN_OK; i++) {
            if (comm_failed(queued[i].c)) continue;
            kiln_comm *c = queued[i].c;
            kiln_status s = kiln_context_note(c->ctx, c->transport->run(c, &queued[i].call));
            if (s != KILN_OK && first == KILN_OK) first = s;
        }
        kiln_status e = started == KILN_OK ? t->group(0) : KILN_OK;
        if (first == KILN_OK) first = e;
    }
    free(queued_heap);
    queued_heap = NULL;
    queued_n = 0;
    return first;
}

kiln_status kiln_comm_group_start(void) {
    group_depth++;
    return KILN_OK;
}

kiln_status kiln_comm_group_end(void) {
    if (group_depth == 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_comm_group_end without kiln_comm_group_start");
    if (--group_depth > 0) return KILN_OK;
    kiln_status s = issue_queued();
    kiln_status m = kiln_comm_mpi_group_end();
    kiln_comm_prof_group_end();
    return s != KILN_OK ? s : m;
}

/* ------------------------------------------------------------------ checks */

static kiln_status check_array(kiln_comm *c, kiln_array *a, const char *what, const char *role) {
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the %s array is NULL", what, role);
    if (a->ctx != c->ctx)
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "%s: the %s array belongs to another context (%s) than the communicator's rank %d "
            "(%s); use kiln_array_copy_peer to move it first",
            what, role, a->ctx->ops->name, c->rank, c->ctx->ops->name);
    if (!kiln_array_is_contiguous(a))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: the %s array is a strided view; collectives need contiguous arrays "
                              "(kiln_array_copy makes one)",
                              what, role);
    if (c->transport->device_arrays && a->memory != KILN_MEMORY_DEVICE)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: the %s array is host memory; %s needs device arrays", what, role,
                              c->transport->base.name);
    return KILN_OK;
}

static kiln_status same_layout(kiln_array *a, kiln_array *b, int64_t b_factor, const char *what,
                               const char *a_role, const char *b_role) {
    if (a->dtype != b->dtype)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: %s is %s but %s is %s; they must match", what, a_role,
                              kiln_dtype_name(a->dtype), b_role, kiln_dtype_name(b->dtype));
    if (kiln_array_size(a) != kiln_array_size(b) * b_factor) {
        if (b_factor == 1)
            return kiln_set_error(KILN_ERR_SHAPE, "%s: %s has %lld elements but %s has %lld; they must match",
                                  what, a_role, (long long)kiln_array_size(a), b_role,
                                  (long long)kiln_array_size(b));
        return kiln_set_error(
            KILN_ERR_SHAPE, "%s: %s has %lld elements; expected %lld (%s's %lld times %lld ranks)", what,
            a_role, (long long)kiln_array_size(a), (long long)(kiln_array_size(b) * b_factor), b_role,
            (long long)kiln_array_size(b), (long long)b_factor);
    }
    return KILN_OK;
}

static kiln_status check_reduction(kiln_dtype d, kiln_comm_op op, const char *what) {
    if ((unsigned)op > KILN_COMM_AVG)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: reduce op %d; expected KILN_COMM_SUM, KILN_COMM_PROD, KILN_COMM_MIN, "
                              "KILN_COMM_MAX or KILN_COMM_AVG",
                              what, (int)op);
    switch (d) {
    case KILN_INT8:
    case KILN_UINT8:
    case KILN_INT32:
    case KILN_UINT32:
    case KILN_INT64:
    case KILN_UINT64:
        if (op == KILN_COMM_AVG)
            return kiln_set_error(KILN_ERR_DTYPE,
                                  "%s: KILN_COMM_AVG of %s; averages need float or complex dtypes", what,
                                  kiln_dtype_name(d));
        return KILN_OK;
    case KILN_FLOAT16:
    case KILN_FLOAT32:
    case KILN_FLOAT64: return KILN_OK;
    case KILN_COMPLEX64:
    case KILN_COMPLEX128:
        if (op == KILN_COMM_SUM || op == KILN_COMM_AVG) return KILN_OK;
        return kiln_set_error(KILN_ERR_DTYPE,
                              "%s: KILN_%s of %s: complex numbers have no order and NCCL no "
                              "complex product; only KILN_COMM_SUM and KILN_COMM_AVG",
                              what,
                              op == KILN_COMM_PROD  ? "PROD"
                              : op == KILN_COMM_MIN ? "MIN"
                                                    : "MAX",
                              kiln_dtype_name(d));
    default:
        return kiln_set_error(
            KILN_ERR_DTYPE,
            "%s: %s cannot be reduced: NCCL (and kiln's MPI path, for the same results) reduces "
            "int8, uint8, int32, uint32, int64, uint64, float16, float32, float64 (and complex "
            "for sum and avg); it can still be broadcast, gathered or sent",
            what, kiln_dtype_name(d));
    }
}

static kiln_status check_root(kiln_comm *c, int root, const char *what, const char *role) {
    if (root < 0 || root >= c->size)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: %s %d is not a rank of this communicator (0..%d)", what, role, root,
                              c->size - 1);
    return KILN_OK;
}

/* ------------------------------------------------------------------ running */

static kiln_status run_self(kiln_comm *c, const comm_call *call) {
    if (call->op == COMM_SEND || call->op == COMM_RECV)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_%s: peer %d is this rank and the only one; nothing to exchange",
                              kiln_comm_op_name(call->op), call->root);
    if (call->send == call->recv || !call->recv || !call->send) return KILN_OK;
    size_t bytes = call->count * kiln_dtype_size(call->dtype);
    return kiln_backend_copy(c->ctx, call->recv, call->send, bytes, KILN_COPY_DEVICE_TO_DEVICE,
                             kiln_stream_impl(call->stream), 1);
}

/* One rank: what it sends is what it receives, on either backend. */
const comm_transport kiln_comm_self = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "comm",
             .name = "self",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU) | KILN_PROVIDER_ON(KILN_BACKEND_CUDA)},
    .id = "self",
    .run = run_self,
};

static kiln_status run(kiln_comm *c, const comm_call *call, kiln_array *a, kiln_array *b) {
    kiln_status s = KILN_OK;
    if (c->checks && c->size > 1 && call->op != COMM_SEND && call->op != COMM_RECV) {
        s = c->clique ? kiln_comm_clique_check(c, call) : kiln_comm_mpi_check(c, call);
        if (s != KILN_OK) return s;
    }
    c->seq++;
    if (a) kiln_array_note_stream(a, call->stream);
    if (b && b != a) kiln_array_note_stream(b, call->stream);
    if (call->count == 0) return KILN_OK; /* every rank agrees (checked): nothing moves */
    kiln_prof_op *op = NULL;
    if (group_depth > 0)
        kiln_comm_prof_group_add(c, call);
    else
        op = kiln_comm_prof_begin(c, call);
    if (group_depth > 0 && c->transport->group)
        s = queue_call(c, call);
    else
        s = c->transport->run(c, call);
    kiln_comm_prof_end(c, op);
    return kiln_context_note(c->ctx, s);
}

static comm_call make_call(comm_op op, kiln_comm_op red, kiln_array *like, size_t count, kiln_array *send,
                           kiln_array *recv, int root, kiln_stream *stream) {
    comm_call call;
    memset(&call, 0, sizeof call);
    call.op = op;
    call.red = red;
    call.dtype = like->dtype;
    call.count = count;
    call.send = send ? send->data : NULL;
    call.recv = recv ? recv->data : NULL;
    call.root = root;
    call.stream = stream;
    return call;
}

static kiln_status check_stream(kiln_comm *c, kiln_stream *stream, const char *what) {
    if (stream && stream->ctx != c->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the stream belongs to another context", what);
    return KILN_OK;
}

#define TRY(x)                                                                                               \
    do {                                                                                                     \
        kiln_status try_ = (x);                                                                              \
        if (try_ != KILN_OK) return try_;                                                                    \
    } while (0)

/* The checks of a collective every rank calls with a send and a recv array. */
static kiln_status check_both(kiln_comm *c, kiln_array *send, kiln_array *recv, kiln_stream *stream,
                              const char *what) {
    TRY(kiln_comm_usable(c, what));
    TRY(check_stream(c, stream, what));
    TRY(check_array(c, send, what, "send"));
    return check_array(c, recv, what, "recv");
}

kiln_status kiln_comm_allreduce(kiln_comm *c, kiln_array *send, kiln_array *recv, kiln_comm_op op,
                                kiln_stream *stream) {
    const char *what = "kiln_comm_allreduce";
    TRY(check_both(c, send, recv, stream, what));
    TRY(same_layout(recv, send, 1, what, "recv", "send"));
    TRY(check_reduction(send->dtype, op, what));
    comm_call call =
        make_call(COMM_ALLREDUCE, op, send, (size_t)kiln_array_size(send), send, recv, 0, stream);
    return run(c, &call, send, recv);
}

kiln_status kiln_comm_broadcast(kiln_comm *c, kiln_array *send, kiln_array *recv, int root,
                                kiln_stream *stream) {
    const char *what = "kiln_comm_broadcast";
    TRY(kiln_comm_usable(c, what));
    TRY(check_stream(c, stream, what));
    TRY(check_root(c, root, what, "root"));
    TRY(check_array(c, recv, what, "recv"));
    if (c->rank == root && send) {
        TRY(check_array(c, send, what, "send"));
        TRY(same_layout(recv, send, 1, what, "recv", "send"));
    }
    if (c->rank != root) send = NULL;
    comm_call call = make_call(COMM_BROADCAST, KILN_COMM_SUM, recv, (size_t)kiln_array_size(recv),
                               send ? send : (c->rank == root ? recv : NULL), recv, root, stream);
    return run(c, &call, send, recv);
}

kiln_status kiln_comm_reduce(kiln_comm *c, kiln_array *send, kiln_array *recv, kiln_comm_op op, int root,
                             kiln_stream *stream) {
    const char *what = "kiln_comm_reduce";
    TRY(kiln_comm_usable(c, what));
    TRY(check_stream(c, stream, what));
    TRY(check_root(c, root, what, "root"));
    TRY(check_array(c, send, what, "send"));
    TRY(check_reduction(send->dtype, op, what));
    if (c->rank == root) {
        TRY(check_array(c, recv, what, "recv (on the root)"));
        TRY(same_layout(recv, send, 1, what, "recv", "send"));
    } else {
        recv = NULL;
    }
    comm_call call =
        make_call(COMM_REDUCE, op, send, (size_t)kiln_array_size(send), send, recv, root, stream);
    return run(c, &call, send, recv);
}

kiln_status kiln_comm_allgather(kiln_comm *c, kiln_array *send, kiln_array *recv, kiln_stream *stream) {
    const char *what = "kiln_comm_allgather";
    TRY(check_both(c, send, recv, stream, what));
    TRY(same_layout(recv, send, c->size, what, "recv", "send"));
    comm_call call =
        make_call(COMM_ALLGATHER, KILN_COMM_SUM, send, (size_t)kiln_array_size(send), send, recv, 0, stream);
    return run(c, &call, send, recv);
}

kiln_status kiln_comm_reduce_scatter(kiln_comm *c, kiln_array *send, kiln_array *recv, kiln_comm_op op,
                                     kiln_stream *stream) {
    const char *what = "kiln_comm_reduce_scatter";
    TRY(check_both(c, send, recv, stream, what));
    TRY(same_layout(send, recv, c->size, what, "send", "recv"));
    TRY(check_reduction(send->dtype, op, what));
    comm_call call =
        make_call(COMM_REDUCE_SCATTER, op, recv, (size_t)kiln_array_size(recv), send, recv, 0, stream);
    return run(c, &call, send, recv);
}

static kiln_status point_to_point(kiln_comm *c, comm_op op, kiln_array *a, int peer, kiln_stream *stream) {
    const char *what = op == COMM_SEND ? "kiln_comm_send" : "kiln_comm_recv";
    TRY(kiln_comm_usable(c, what));
    TRY(check_stream(c, stream, what));
    TRY(check_root(c, peer, what, "peer"));
    TRY(check_array(c, a, what, op == COMM_SEND ? "send" : "recv"));
    if (peer == c->rank && group_depth == 0 && c->transport != &kiln_comm_self)
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "%s: peer %d is this rank; a message to itself needs its send and receive in one "
            "kiln_comm_group_start/end",
            what, peer);
    comm_call call = make_call(op, KILN_COMM_SUM, a, (size_t)kiln_array_size(a), op == COMM_SEND ? a : NULL,
                               op == COMM_RECV ? a : NULL, peer, stream);
    return run(c, &call, a, NULL);
}

kiln_status kiln_comm_send(kiln_comm *c, kiln_array *a, int peer, kiln_stream *stream) {
    return point_to_point(c, COMM_SEND, a, peer, stream);
}

kiln_status kiln_comm_recv(kiln_comm *c, kiln_array *a, int peer, kiln_stream *stream) {
    return point_to_point(c, COMM_RECV, a, peer, stream);
}

/* ------------------------------------------------------------------ between contexts */

kiln_status kiln_array_copy_peer(kiln_array *dst, kiln_array *src, kiln_stream *stream) {
    const char *what = "kiln_array_copy_peer";
    if (!dst || !src)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what, !dst ? "dst" : "src");
    TRY(kiln_context_check(dst->ctx));
    TRY(kiln_context_check(src->ctx));
    if (stream && stream->ctx != dst->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the stream must belong to dst's context", what);
    TRY(same_layout(dst, src, 1, what, "dst", "src"));
    if (!kiln_array_is_contiguous(dst) || !kiln_array_is_contiguous(src))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: both arrays must be contiguous", what);
    size_t bytes = kiln_array_nbytes(dst);
    kiln_array_note_stream(dst, stream);
    if (bytes == 0) return KILN_OK;
    if (kiln_array_host_accessible(dst) && kiln_array_host_accessible(src)) {
        TRY(kiln_context_note(dst->ctx,
                              dst->ctx->ops->stream_synchronize(dst->ctx->state, kiln_stream_impl(stream))));
        memmove(dst->data, src->data, bytes);
        return KILN_OK;
    }
    if (dst->ctx == src->ctx)
        return kiln_backend_copy(dst->ctx, dst->data, src->data, bytes, KILN_COPY_DEVICE_TO_DEVICE,
                                 kiln_stream_impl(stream), 1);
    if (dst->ctx->ops != src->ctx->ops || !dst->ctx->ops->copy_peer || dst->memory != KILN_MEMORY_DEVICE ||
        src->memory != KILN_MEMORY_DEVICE)
        return kiln_set_error(
            KILN_ERR_UNSUPPORTED,
            "%s: from a %s %s array to a %s %s array: copies between contexts need two CUDA "
            "device arrays or host-accessible memory on both sides",
            what, src->ctx->ops->name, src->memory == KILN_MEMORY_HOST ? "host" : "device",
            dst->ctx->ops->name, dst->memory == KILN_MEMORY_HOST ? "host" : "device");
    kiln_status s = dst->ctx->ops->copy_peer(dst->ctx->state, dst->data, src->ctx->state, src->data, bytes,
                                             kiln_stream_impl(stream));
    return kiln_context_note(dst->ctx, s);
}
