/* mpi_transport.c: libkiln_mpi.so, kiln's MPI transport (comm_mpi_plugin.h):
 * collectives of CPU contexts through MPI, and the bootstrap of NCCL
 * communicators (the unique id, and the argument check) over MPI. libkiln
 * loads it at its first MPI call (comm_mpi.c), so only programs that use MPI
 * load MPI.
 *
 * Every operation is posted non-blocking and completed by polling, so that a
 * peer that stops answering becomes KILN_ERR_COMM after the communicator's
 * timeout instead of a hang. kiln's traffic runs on a duplicate of the
 * user's communicator, with MPI_ERRORS_RETURN, so it never mixes with the
 * program's own messages and an MPI error becomes a status. */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm_check.h"
#include "comm/comm_mpi_plugin.h"
#include "core/clock.h"

#define COMM_P2P_TAG 0x4b49

typedef struct comm_mpi {
    MPI_Comm comm;
    MPI_Op half_ops[4]; /* float16 sum, prod, min, max (MPI has no float16) */
} comm_mpi;

/* libkiln's functions (errors, the argument check, dtypes), set once by
 * kiln_mpi_plugin_open before any other call, then only read. */
static const kiln_mpi_host *host;

/* Written once (pthread_once) and only read afterwards. */
static char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
static pthread_once_t mpi_version_once = PTHREAD_ONCE_INIT;

static void read_version(void) {
    int len = 0;
    if (MPI_Get_library_version(mpi_version, &len) != MPI_SUCCESS) mpi_version[0] = '\0';
    mpi_version[strcspn(mpi_version, ",\n")] = '\0'; /* "Open MPI v4.1.4" */
}

static const char *mpi_library(void) {
    pthread_once(&mpi_version_once, read_version);
    return mpi_version[0] ? mpi_version : "MPI";
}

static kiln_status mpi_error(int rc, const char *what) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
    return host->set_error(KILN_ERR_COMM, "%s failed: %s", what, text);
}

/* ------------------------------------------------------------------ float16 */
/* The host's kiln_half_to_float and kiln_float_to_half (core/dtype.h): the GPU's
 * conversions, round to nearest even. */

#define HALF_OP(name, expr)                                                                                  \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type) {                                  \
        (void)type;                                                                                          \
        const uint16_t *a = in;                                                                              \
        uint16_t *b = inout;                                                                                 \
        for (int i = 0; i < *len; i++) {                                                                     \
            float x = host->half_to_float(a[i]), y = host->half_to_float(b[i]);                              \
            b[i] = host->float_to_half(expr);                                                                \
        }                                                                                                    \
    }
HALF_OP(half_sum, x + y)
HALF_OP(half_prod, x *y)
HALF_OP(half_min, isnan(x) || x < y ? x : y)
HALF_OP(half_max, isnan(x) || x > y ? x : y)

/* ------------------------------------------------------------------ types */

static MPI_Datatype mpi_type(kiln_dtype d) {
    switch (d) {
    case KILN_BOOL:
    case KILN_UINT8: return MPI_UINT8_T;
    case KILN_INT8: return MPI_INT8_T;
    case KILN_INT16: return MPI_INT16_T;
    case KILN_UINT16:
    case KILN_FLOAT16:
    case KILN_BFLOAT16: return MPI_UINT16_T; /* moved only: reductions refuse bfloat16 */
    case KILN_INT32: return MPI_INT32_T;
    case KILN_UINT32: return MPI_UINT32_T;
    case KILN_INT64: return MPI_INT64_T;
    case KILN_UINT64: return MPI_UINT64_T;
    case KILN_FLOAT32: return MPI_FLOAT;
    case KILN_FLOAT64: return MPI_DOUBLE;
    case KILN_COMPLEX64: return MPI_C_FLOAT_COMPLEX;
    case KILN_COMPLEX128: return MPI_C_DOUBLE_COMPLEX;
    default: return MPI_BYTE;
    }
}

static MPI_Op mpi_op(const comm_mpi *m, kiln_dtype d, kiln_comm_op op) {
    if (d == KILN_FLOAT16) return m->half_ops[op == KILN_COMM_AVG ? KILN_COMM_SUM : op];
    switch (op) {
    case KILN_COMM_PROD: return MPI_PROD;
    case KILN_COMM_MIN: return MPI_MIN;
    case KILN_COMM_MAX: return MPI_MAX;
    default: return MPI_SUM;
    }
}

/* KILN_COMM_AVG: MPI has no average; the sum divided by the ranks, in the
 * element type (float16 through float, as NCCL computes it). */
static void divide(void *data, kiln_dtype d, size_t count, int n) {
    size_t k = d == KILN_COMPLEX64 || d == KILN_COMPLEX128 ? 2 : 1;
    if (d == KILN_FLOAT16) {
        uint16_t *h = data;
        for (size_t i = 0; i < count; i++) h[i] = host->float_to_half(host->half_to_float(h[i]) / (float)n);
    } else if (d == KILN_FLOAT32 || d == KILN_COMPLEX64) {
        float *f = data;
        for (size_t i = 0; i < count * k; i++) f[i] /= (float)n;
    } else {
        double *f = data;
        for (size_t i = 0; i < count * k; i++) f[i] /= (double)n;
    }
}

/* ------------------------------------------------------------------ life */

static kiln_status mpi_init(int *initialised_here) {
    int inited = 0, finalized = 0;
    *initialised_here = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (finalized) return host->set_error(KILN_ERR_COMM, "MPI was already finalized in this process");
    if (inited) return KILN_OK;
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Init_thread");
    *initialised_here = 1;
    return KILN_OK;
}

static void mpi_finalize(void) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

static const void *mpi_world(void) {
    static const MPI_Comm world = MPI_COMM_WORLD;
    return &world;
}

static kiln_status mpi_attach(kiln_comm *c, const void *mpi_comm) {
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return host->set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "kiln_comm_from_mpi: MPI is %s; call MPI_Init first (or use kiln_comm_open_env)",
            finalized ? "finalized" : "not initialised");
    comm_mpi *m = calloc(1, sizeof *m);
    if (!m) return host->set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_comm_from_mpi: out of host memory");
    int rc = MPI_Comm_dup(*(const MPI_Comm *)mpi_comm, &m->comm);
    if (rc != MPI_SUCCESS) {
        free(m);
        return mpi_error(rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &c->rank);
    MPI_Comm_size(m->comm, &c->size);
    MPI_User_function *fns[4] = {half_sum, half_prod, half_min, half_max};
    for (int i = 0; i < 4; i++) MPI_Op_create(fns[i], 1, &m->half_ops[i]);
    c->mpi = m;
    return KILN_OK;
}

static void mpi_detach(kiln_comm *c) {
    comm_mpi *m = c->mpi;
    if (!m) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    /* A communicator with requests a dead peer never completes cannot be
     * freed; it is left to the process's end. */
    if (!finalized && !c->broken) {
        for (int i = 0; i < 4; i++) MPI_Op_free(&m->half_ops[i]);
        MPI_Comm_free(&m->comm);
    }
    free(m);
    c->mpi = NULL;
}

/* ------------------------------------------------------------------ waiting */

/* MPI's non-blocking collectives progress only inside MPI calls, so the
 * first second is spent polling hard (as MPI's blocking calls spin); after
 * that a waiting rank yields, then naps, so a long wait need not burn a core. */
static void pause_briefly(double waited_ms) {
    if (waited_ms < 1000) return;
    if (waited_ms < 5000) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
}

/* Polls until the requests complete, MPI fails, or the timeout passes. An
 * MPI error breaks the communicator, unless `failed_rc` is given: then it
 * receives the error (from the statuses when MPI reports
 * MPI_ERR_IN_STATUS) and the caller decides. */
static kiln_status wait_all(kiln_comm *c, MPI_Request *req, int n, MPI_Status *st, const char *what,
                            int *failed_rc) {
    double start = kiln_now_ms(), now = start, deadline = start + c->timeout_ms;
    for (unsigned spin = 0;; spin++) {
        int done = 0;
        int rc = MPI_Testall(n, req, &done, st ? st : MPI_STATUSES_IGNORE);
        if (rc == MPI_ERR_IN_STATUS && st)
            for (int i = 0; i < n; i++)
                if (st[i].MPI_ERROR != MPI_SUCCESS && st[i].MPI_ERROR != MPI_ERR_PENDING) {
                    rc = st[i].MPI_ERROR;
                    break;
                }
        if (rc != MPI_SUCCESS) {
            if (failed_rc) {
                *failed_rc = rc;
                return KILN_ERR_COMM;
            }
            mpi_error(rc, what);
            return host->comm_break(c, "%s", host->last_error());
        }
        if (done) return KILN_OK;
        if ((spin & 63) == 63 && (now = kiln_now_ms()) > deadline)
            return host->comm_break(
                c,
                "%s: no answer from the other ranks after %.0f s (a rank died, hangs, or made "
                "another call; the timeout is KILN_COMM_TIMEOUT or kiln_comm_set_timeout)",
                what, c->timeout_ms / 1e3);
        if ((spin & 63) == 63) pause_briefly(now - start);
    }
}

static kiln_status mpi_bcast_bytes(kiln_comm *c, void *data, size_t bytes, int root) {
    comm_mpi *m = c->mpi;
    MPI_Request req;
    int rc = MPI_Ibcast(data, (int)bytes, MPI_BYTE, root, m->comm, &req);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Ibcast");
    return wait_all(c, &req, 1, NULL, "broadcasting the NCCL unique id", NULL);
}

static kiln_status mpi_check(kiln_comm *c, const comm_call *call) {
    comm_mpi *m = c->mpi;
    if (!m) return KILN_OK;
    int64_t sig[COMM_SIG_LEN], both[2 * COMM_SIG_LEN], out[2 * COMM_SIG_LEN];
    host->signature(call, sig);
    for (int i = 0; i < COMM_SIG_LEN; i++) {
        both[i] = sig[i];
        both[COMM_SIG_LEN + i] = -sig[i];
    }
    MPI_Request req;
    int rc = MPI_Iallreduce(both, out, 2 * COMM_SIG_LEN, MPI_INT64_T, MPI_MAX, m->comm, &req);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Iallreduce (argument check)");
    kiln_status s = wait_all(c, &req, 1, NULL, "checking the ranks' arguments", NULL);
    if (s != KILN_OK) return s;
    int same = 1;
    for (int i = 0; i < COMM_SIG_LEN; i++) same &= out[i] == -out[COMM_SIG_LEN + i];
    if (same) return KILN_OK;
    /* Every rank saw the difference; gather who called what for the message. */
    int64_t *all = malloc((size_t)c->size * sizeof sig);
    if (!all) return host->set_error(KILN_ERR_OUT_OF_MEMORY, "argument check: out of host memory");
    rc = MPI_Iallgather(sig, COMM_SIG_LEN, MPI_INT64_T, all, COMM_SIG_LEN, MPI_INT64_T, m->comm, &req);
    s = rc != MPI_SUCCESS ? mpi_error(rc, "MPI_Iallgather (argument check)")
                          : wait_all(c, &req, 1, NULL, "gathering the ranks' arguments", NULL);
    if (s == KILN_OK) s = host->compare(c, all, c->size);
    free(all);
    return s;
}

/* ------------------------------------------------------------------ groups */

typedef struct pending_p2p {
    kiln_comm *c;
    int recv;
    int peer;
    size_t count;
    kiln_dtype dtype;
} pending_p2p;

static _Thread_local MPI_Request *group_req;
static _Thread_local pending_p2p *group_ops;
static _Thread_local int group_count, group_cap;

static kiln_status check_received(kiln_comm *c, const MPI_Status *st, const pending_p2p *p) {
    int got = 0;
    MPI_Get_count(st, mpi_type(p->dtype), &got);
    if ((size_t)got == p->count) return KILN_OK;
    return host->set_error(KILN_ERR_SHAPE,
                           "kiln_comm_recv on rank %d: rank %d sent %d elements of %s, this receive has %zu",
                           c->rank, p->peer, got, host->dtype_name(p->dtype), p->count);
}

static kiln_status p2p_error(kiln_comm *c, int rc, const pending_p2p *p) {
    int cls = 0;
    MPI_Error_class(rc, &cls);
    if (cls == MPI_ERR_TRUNCATE)
        return host->set_error(
            KILN_ERR_SHAPE,
            "kiln_comm_recv on rank %d: rank %d sent more than the %zu elements of %s this receive has",
            c->rank, p->peer, p->count, host->dtype_name(p->dtype));
    mpi_error(rc, p->recv ? "MPI_Irecv" : "MPI_Isend");
    return host->comm_break(c, "%s", host->last_error());
}

static kiln_status post_p2p(kiln_comm *c, const comm_call *call, MPI_Request *req) {
    comm_mpi *m = c->mpi;
    int rc = call->op == COMM_SEND ? MPI_Isend(call->send, (int)call->count, mpi_type(call->dtype),
                                               call->root, COMM_P2P_TAG, m->comm, req)
                                   : MPI_Irecv(call->recv, (int)call->count, mpi_type(call->dtype),
                                               call->root, COMM_P2P_TAG, m->comm, req);
    if (rc != MPI_SUCCESS) return mpi_error(rc, call->op == COMM_SEND ? "MPI_Isend" : "MPI_Irecv");
    return KILN_OK;
}

static kiln_status group_add(kiln_comm *c, const comm_call *call) {
    if (group_count == group_cap) {
        int cap = group_cap ? 2 * group_cap : 16;
        MPI_Request *r = realloc(group_req, (size_t)cap * sizeof *r);
        if (r) group_req = r;
        pending_p2p *o = r ? realloc(group_ops, (size_t)cap * sizeof *o) : NULL;
        if (!o) return host->set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_comm_group: out of host memory");
        group_ops = o;
        group_cap = cap;
    }
    kiln_status s = post_p2p(c, call, &group_req[group_count]);
    if (s != KILN_OK) return s;
    group_ops[group_count] = (pending_p2p){c, call->op == COMM_RECV, call->root, call->count, call->dtype};
    group_count++;
    return KILN_OK;
}

static kiln_status mpi_group_end(void) {
    int n = group_count;
    group_count = 0;
    if (n == 0) {
        free(group_req), free(group_ops);
        group_req = NULL, group_ops = NULL, group_cap = 0;
        return KILN_OK;
    }
    MPI_Status *st = calloc((size_t)n, sizeof *st);
    if (!st) return host->set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_comm_group_end: out of host memory");
    /* The first communicator's timeout stands for the group's. */
    int rc = MPI_SUCCESS;
    kiln_status s = wait_all(group_ops[0].c, group_req, n, st, "kiln_comm_group_end", &rc);
    if (s != KILN_OK && rc != MPI_SUCCESS) {
        int which = 0;
        for (int i = 0; i < n; i++)
            if (st[i].MPI_ERROR == rc) which = i;
        s = p2p_error(group_ops[which].c, rc, &group_ops[which]);
        /* The group's other requests may still be pending: wait for them. */
        if (!group_ops[which].c->broken) {
            int ignored = 0;
            (void)wait_all(group_ops[0].c, group_req, n, NULL, "kiln_comm_group_end", &ignored);
        }
    }
    for (int i = 0; s == KILN_OK && i < n; i++)
        if (group_ops[i].recv) s = check_received(group_ops[i].c, &st[i], &group_ops[i]);
    free(st);
    return s;
}

/* ------------------------------------------------------------------ collectives */

static kiln_status mpi_run(kiln_comm *c, const comm_call *call) {
    comm_mpi *m = c->mpi;
    MPI_Datatype t = mpi_type(call->dtype);
    MPI_Op op = mpi_op(m, call->dtype, call->red);
    size_t total = call->op == COMM_ALLGATHER || call->op == COMM_REDUCE_SCATTER
                       ? call->count * (size_t)c->size
                       : call->count;
    if (total > INT_MAX)
        return host->set_error(
            KILN_ERR_UNSUPPORTED,
            "kiln_%s on MPI: %zu elements; MPI counts stop at %d per call (split the array)",
            host->op_name(call->op), total, INT_MAX);
    int n = (int)call->count, rc = MPI_SUCCESS;
    const void *in_place = call->send == call->recv ? MPI_IN_PLACE : call->send;
    MPI_Request req;
    MPI_Status st;
    switch (call->op) {
    case COMM_ALLREDUCE: rc = MPI_Iallreduce(in_place, call->recv, n, t, op, m->comm, &req); break;
    case COMM_BROADCAST:
        if (c->rank == call->root && call->send != call->recv)
            memcpy(call->recv, call->send, call->count * host->dtype_size(call->dtype));
        rc = MPI_Ibcast(call->recv, n, t, call->root, m->comm, &req);
        break;
    case COMM_REDUCE:
        rc = MPI_Ireduce(c->rank == call->root ? in_place : call->send, call->recv, n, t, op, call->root,
                         m->comm, &req);
        break;
    case COMM_ALLGATHER: rc = MPI_Iallgather(call->send, n, t, call->recv, n, t, m->comm, &req); break;
    case COMM_REDUCE_SCATTER:
        rc = MPI_Ireduce_scatter_block(call->send, call->recv, n, t, op, m->comm, &req);
        break;
    case COMM_SEND:
    case COMM_RECV: {
        if (host->group_depth() > 0) return group_add(c, call);
        pending_p2p p = {c, call->op == COMM_RECV, call->root, call->count, call->dtype};
        int failed = MPI_SUCCESS;
        kiln_status s = post_p2p(c, call, &req);
        if (s == KILN_OK)
            s = wait_all(c, &req, 1, &st, call->op == COMM_SEND ? "kiln_comm_send" : "kiln_comm_recv",
                         &failed);
        if (s != KILN_OK && failed != MPI_SUCCESS) s = p2p_error(c, failed, &p);
        if (s == KILN_OK && p.recv) s = check_received(c, &st, &p);
        return s;
    }
    default: return host->set_error(KILN_ERR_INTERNAL, "unknown collective %d", (int)call->op);
    }
    if (rc != MPI_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "MPI %s", host->op_name(call->op));
        return mpi_error(rc, what);
    }
    kiln_status s = wait_all(c, &req, 1, NULL, host->op_name(call->op), NULL);
    if (s != KILN_OK) return s;
    if (call->red == KILN_COMM_AVG && (call->op == COMM_ALLREDUCE || call->op == COMM_REDUCE_SCATTER ||
                                       (call->op == COMM_REDUCE && c->rank == call->root)))
        divide(call->recv, call->dtype, call->count, c->size);
    return KILN_OK;
}

/* ------------------------------------------------------------------ entry */

__attribute__((visibility("default"))) const kiln_mpi_ops *kiln_mpi_plugin_open(const kiln_mpi_host *h) {
    static const kiln_mpi_ops ops = {
        .library = mpi_library,
        .init = mpi_init,
        .finalize = mpi_finalize,
        .world = mpi_world,
        .attach = mpi_attach,
        .detach = mpi_detach,
        .bcast_bytes = mpi_bcast_bytes,
        .check = mpi_check,
        .run = mpi_run,
        .group_end = mpi_group_end,
    };
    if (!h || h->abi != KILN_MPI_PLUGIN_ABI || h->version != KILN_VERSION_NUMBER ||
        h->comm_bytes != sizeof(kiln_comm) || h->call_bytes != sizeof(comm_call))
        return NULL;
    host = h;
    return &ops;
}
