/* comm_nccl.c: collectives of CUDA contexts through NCCL, loaded at run time
 * (libnccl.so.2, from the CUDA toolkit or the libnccl2 package), queued on
 * the kiln stream's CUstream like kiln's own kernels. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm_base.h"
#include "comm/comm_check.h"
#include "comm/nccl_types.h"
#include "core/clock.h"
#include "core/dynlib.h"
#include "core/error.h"

typedef struct nccl_lib {
#define KILN_NCCL_FN(ret, name, args) ret(*name) args;
#include "comm/nccl_symbols.h"
#undef KILN_NCCL_FN
} nccl_lib;

/* Process-wide, as the library itself: filled once under pthread_once. */
static nccl_lib nccl;
static kiln_dynlib nccl_dl;
static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;
static atomic_int nccl_ready;

static void nccl_load_once(void) {
    /* NVLink SHARP (NVLS) multicast stays off unless the user asks for it:
     * it needs fabric-manager support the machines kiln targets do not all
     * have, and a failed NVLS setup aborts communicator creation. Read by
     * NCCL at communicator creation; a value the user set is kept. */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    static const char *const sonames[] = {"libnccl.so.2", "libnccl.so", NULL};
    const kiln_dynlib_spec spec = {"NCCL", sonames,
                                   "install NCCL (the CUDA toolkit's libnccl, or apt-get install libnccl2)",
                                   1, "KILN_NCCL_LIBRARY"};
    const kiln_dynlib_symbol symbols[] = {
#define KILN_NCCL_FN(ret, name, args) {#name, (void **)&nccl.name, 1},
#include "comm/nccl_symbols.h"
#undef KILN_NCCL_FN
    };
    kiln_dynlib_load(&nccl_dl, &spec, symbols, sizeof symbols / sizeof symbols[0]);
    atomic_store(&nccl_ready, nccl_dl.status == KILN_OK);
}

static kiln_status nccl_load(void) {
    pthread_once(&nccl_once, nccl_load_once);
    return kiln_dynlib_check(&nccl_dl);
}

/* An NCCL status as kiln's: bad arguments stay the caller's; anything else
 * (a peer gone, a system or CUDA error) makes the communicator unusable. */
static kiln_status nccl_fail(kiln_comm *c, ncclResult_t r, const char *what) {
    const char *text = nccl.ncclGetErrorString ? nccl.ncclGetErrorString(r) : "?";
    if (r == 4 || r == 5) /* ncclInvalidArgument, ncclInvalidUsage */
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NCCL error %d (%s)", what, (int)r, text);
    if (!c) return kiln_set_error(KILN_ERR_COMM, "%s: NCCL error %d (%s)", what, (int)r, text);
    return kiln_comm_break(c, "%s: NCCL error %d (%s)", what, (int)r, text);
}

static kiln_status make_current(kiln_comm *c, void **stream, kiln_stream *s) {
    void *context = NULL, *native_stream = NULL;
    if (!c->ctx->ops->native_handles)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "NCCL needs CUDA contexts; this one is %s",
                              c->ctx->ops->name);
    kiln_status st =
        c->ctx->ops->native_handles(c->ctx->state, kiln_stream_impl(s), &context, &native_stream);
    if (stream) *stream = native_stream;
    return st;
}

static kiln_status nccl_init_rank(kiln_comm *c) {
    struct {
        int ok;
        ncclUniqueId id;
    } boot;
    memset(&boot, 0, sizeof boot);
    kiln_status s = nccl_load();
    /* Rank 0 broadcasts whether it could make the id, so a failure there
     * fails every rank instead of leaving them waiting in NCCL's init. */
    if (c->rank == 0) boot.ok = s == KILN_OK && nccl.ncclGetUniqueId(&boot.id) == ncclSuccess;
    kiln_status b = kiln_comm_mpi_bcast_bytes(c, &boot, sizeof boot, 0);
    if (s != KILN_OK) return s;
    if (b != KILN_OK) return b;
    if (!boot.ok)
        return kiln_set_error(KILN_ERR_COMM, "rank 0 could not make NCCL's unique id (see rank 0's error)");
    if ((s = make_current(c, NULL, NULL)) != KILN_OK) return s;
    ncclComm_t comm = NULL;
    ncclResult_t r = nccl.ncclCommInitRank(&comm, c->size, boot.id, c->rank);
    if (r != ncclSuccess) return nccl_fail(NULL, r, "ncclCommInitRank");
    c->nccl = comm;
    return KILN_OK;
}

static kiln_status nccl_init_all(kiln_comm **comms, int n) {
    kiln_status s = nccl_load();
    if (s != KILN_OK) return s;
    int *devices = calloc((size_t)n, sizeof *devices);
    ncclComm_t *made = calloc((size_t)n, sizeof *made);
    struct comm_clique *q = kiln_comm_clique_create(n);
    if (!devices || !made || !q) {
        free(devices), free(made), kiln_comm_clique_release(q);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_comm_init_all: out of host memory");
    }
    for (int i = 0; i < n; i++) devices[i] = comms[i]->ctx->info.ordinal;
    ncclResult_t r = nccl.ncclCommInitAll(made, n, devices);
    if (r == ncclSuccess)
        for (int i = 0; i < n; i++) {
            comms[i]->nccl = made[i];
            comms[i]->clique = q;
        }
    else
        kiln_comm_clique_release(q), s = nccl_fail(NULL, r, "ncclCommInitAll");
    free(devices);
    free(made);
    return s;
}

static void nccl_destroy(kiln_comm *c) {
    kiln_stream_release(c->nccl_stream);
    c->nccl_stream = NULL;
    c->nccl_stream_known = 0;
    if (c->nccl) {
        if (make_current(c, NULL, NULL) != KILN_OK) kiln_clear_error();
        /* Destroy waits for the communicator's work; after a failure that
         * work never ends, and only Abort returns. */
        if (c->broken || kiln_comm_clique_broken(c->clique))
            nccl.ncclCommAbort(c->nccl);
        else
            nccl.ncclCommDestroy(c->nccl);
        c->nccl = NULL;
    }
    if (c->clique) kiln_comm_clique_release(c->clique);
    c->clique = NULL;
}

static kiln_status nccl_group(int start) {
    if (!atomic_load(&nccl_ready)) return KILN_OK; /* no NCCL communicator exists */
    ncclResult_t r = start ? nccl.ncclGroupStart() : nccl.ncclGroupEnd();
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_fail(NULL, r, start ? "ncclGroupStart" : "ncclGroupEnd");
    return KILN_OK;
}

/* Reductions in the element type; complex sums and averages as pairs of
 * floats (the same numbers).
 *
 * The average over one rank is the value itself, and goes to NCCL as a sum
 * (a copy): for ncclAvg on floats NCCL's one-rank path runs its own
 * pre-multiply kernel, which before NCCL 2.29.7 splits the elements between
 * its blocks with a rounded-down share and leaves the last `count % blocks`
 * of them unwritten (NVIDIA/nccl#1950; a float64 average of 4099 elements
 * over 3 blocks missed element 4098). x * 1 == x, so nothing else changes. */
comm_nccl_args kiln_comm_nccl_args(const comm_call *call, int size) {
    static const int types[KILN_DTYPE_COUNT] = {
        [KILN_INT8] = ncclInt8,         [KILN_UINT8] = ncclUint8,       [KILN_INT32] = ncclInt32,
        [KILN_UINT32] = ncclUint32,     [KILN_INT64] = ncclInt64,       [KILN_UINT64] = ncclUint64,
        [KILN_FLOAT16] = ncclFloat16,   [KILN_FLOAT32] = ncclFloat32,   [KILN_FLOAT64] = ncclFloat64,
        [KILN_COMPLEX64] = ncclFloat32, [KILN_COMPLEX128] = ncclFloat64};
    comm_nccl_args a;
    a.type = types[call->dtype];
    a.count = call->dtype == KILN_COMPLEX64 || call->dtype == KILN_COMPLEX128 ? 2 * call->count : call->count;
    switch (call->red) {
    case KILN_COMM_PROD: a.op = ncclProd; break;
    case KILN_COMM_MIN: a.op = ncclMin; break;
    case KILN_COMM_MAX: a.op = ncclMax; break;
    case KILN_COMM_AVG: a.op = size == 1 ? ncclSum : ncclAvg; break;
    default: a.op = ncclSum; break;
    }
    return a;
}

/* The CUstream of `s`. NCCL makes the communicator's device current itself
 * (kiln's contexts are the devices' primary ones), so a call on the stream
 * the previous call used needs neither the lookup nor a context switch,
 * which in a group over several GPUs would otherwise come with every call. */
static kiln_status native_stream_of(kiln_comm *c, kiln_stream *s, void **stream) {
    if (c->nccl_stream_known && c->nccl_stream == s) {
        *stream = c->nccl_native_stream;
        return KILN_OK;
    }
    kiln_status st = make_current(c, stream, s);
    if (st != KILN_OK) return st;
    kiln_stream_retain(s);
    kiln_stream_release(c->nccl_stream);
    c->nccl_stream = s;
    c->nccl_native_stream = *stream;
    c->nccl_stream_known = 1;
    return KILN_OK;
}

static kiln_status nccl_run(kiln_comm *c, const comm_call *call) {
    void *stream = NULL;
    kiln_status s = native_stream_of(c, call->stream, &stream);
    if (s != KILN_OK) return s;
    ncclComm_t comm = c->nccl;
    kiln_nccl_stream st = stream;
    comm_nccl_args red = kiln_comm_nccl_args(call, c->size);
    ncclDataType_t t = (ncclDataType_t)red.type;
    size_t n = red.count;
    /* Data that is only moved goes as bytes: every dtype, NCCL's or not. */
    size_t bytes = call->count * kiln_dtype_size(call->dtype);
    ncclRedOp_t op = (ncclRedOp_t)red.op;
    ncclResult_t r;
    switch (call->op) {
    case COMM_ALLREDUCE: r = nccl.ncclAllReduce(call->send, call->recv, n, t, op, comm, st); break;
    case COMM_BROADCAST:
        r = nccl.ncclBroadcast(call->send ? call->send : call->recv, call->recv, bytes, ncclUint8, call->root,
                               comm, st);
        break;
    case COMM_REDUCE: r = nccl.ncclReduce(call->send, call->recv, n, t, op, call->root, comm, st); break;
    case COMM_ALLGATHER: r = nccl.ncclAllGather(call->send, call->recv, bytes, ncclUint8, comm, st); break;
    case COMM_REDUCE_SCATTER: r = nccl.ncclReduceScatter(call->send, call->recv, n, t, op, comm, st); break;
    case COMM_SEND: r = nccl.ncclSend(call->send, bytes, ncclUint8, call->root, comm, st); break;
    case COMM_RECV: r = nccl.ncclRecv(call->recv, bytes, ncclUint8, call->root, comm, st); break;
    default: return kiln_set_error(KILN_ERR_INTERNAL, "unknown collective %d", (int)call->op);
    }
    if (r == ncclSuccess || r == ncclInProgress) return KILN_OK;
    char what[64];
    snprintf(what, sizeof what, "NCCL %s", kiln_comm_op_name(call->op));
    return nccl_fail(c, r, what);
}

/* After a peer's failure or the timeout: NCCL's kernels on the stream would
 * wait for that peer forever; aborting the communicator ends them. */
static kiln_status abort_comm(kiln_comm *c, kiln_status s) {
    if (c->nccl) {
        if (make_current(c, NULL, NULL) != KILN_OK) kiln_clear_error();
        nccl.ncclCommAbort(c->nccl);
        c->nccl = NULL;
    }
    return s;
}

static kiln_status nccl_wait(kiln_comm *c, kiln_stream *stream) {
    const kiln_backend_ops *ops = c->ctx->ops;
    if (!ops->stream_query)
        return kiln_context_note(c->ctx, ops->stream_synchronize(c->ctx->state, kiln_stream_impl(stream)));
    double start = kiln_now_ms(), now = start, deadline = start + c->timeout_ms;
    for (unsigned spin = 0;; spin++) {
        int done = 0;
        kiln_status s = ops->stream_query(c->ctx->state, kiln_stream_impl(stream), &done);
        if (s != KILN_OK) return kiln_context_note(c->ctx, s);
        ncclResult_t e = ncclSuccess;
        ncclResult_t r = nccl.ncclCommGetAsyncError(c->nccl, &e);
        if (r != ncclSuccess) e = r;
        if (e != ncclSuccess && e != ncclInProgress) {
            nccl_fail(
                c, e,
                "NCCL reported an asynchronous error (a peer died or a link failed); communicator aborted");
            return abort_comm(c, KILN_ERR_COMM);
        }
        if (done) return KILN_OK;
        if ((spin & 63) == 63 && (now = kiln_now_ms()) > deadline)
            return abort_comm(c,
                              kiln_comm_break(c,
                                              "the communicator's work did not finish within %.0f s (a peer "
                                              "died, hangs, or made another call); NCCL communicator aborted",
                                              c->timeout_ms / 1e3));
        /* Yield while the work is young (a collective takes microseconds to
         * milliseconds), nap once it is old, so a long wait spares a core. */
        if (now - start < 200) {
            sched_yield();
        } else {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

const comm_transport kiln_comm_nccl = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "comm",
             .name = "NCCL",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CUDA),
             .load = nccl_load},
    .id = "nccl",
    .device_arrays = 1,
    .init_rank = nccl_init_rank,
    .init_all = nccl_init_all,
    .run = nccl_run,
    .group = nccl_group,
    .wait = nccl_wait,
    .destroy = nccl_destroy,
};
