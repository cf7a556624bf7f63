/* comm_prof.c: what the profiler records of a collective. Sizes and bus
 * bandwidth follow nccl-tests (doc/PERFORMANCE.md there): the size is the
 * per-rank buffer for all-reduce, broadcast, reduce and send/recv, and the
 * whole gathered (scattered) buffer for all-gather (reduce-scatter); bus
 * bandwidth is algorithm bandwidth times 2(n-1)/n for all-reduce, (n-1)/n
 * for all-gather and reduce-scatter, 1 otherwise. */
#include "comm/comm_prof.h"

#include <string.h>

#define GROUP_MAX_COMMS 16
#define COLL_GROUP_KIND 7 /* the profiler's kind for mixed groups */

typedef struct group_record {
    kiln_comm *c;
    kiln_prof_op *op;
    size_t bytes;
    unsigned kinds; /* bit per comm_op */
    comm_op first;
} group_record;

/* This thread's open group: one record per communicator. */
static _Thread_local group_record group_records[GROUP_MAX_COMMS];
static _Thread_local int group_record_count;

void kiln_comm_prof_attach(kiln_comm *c) {
    kiln_prof_set_rank(c->ctx, c->rank, c->size, kiln_comm_transport(c));
}

size_t kiln_comm_bytes(const comm_call *call, int nranks) {
    size_t bytes = call->count * kiln_dtype_size(call->dtype);
    return call->op == COMM_ALLGATHER || call->op == COMM_REDUCE_SCATTER ? bytes * (size_t)nranks : bytes;
}

double kiln_comm_bus_factor(comm_op op, int nranks) {
    double n = nranks;
    switch (op) {
    case COMM_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COMM_ALLGATHER:
    case COMM_REDUCE_SCATTER: return (n - 1) / n;
    default: return 1.0;
    }
}

kiln_prof_op *kiln_comm_prof_begin(kiln_comm *c, const comm_call *call) {
    if (!KILN_PROF_ON(c->ctx)) return NULL;
    /* The profiler may have started after the communicator was made. */
    kiln_comm_prof_attach(c);
    return kiln_prof_comm_begin(c->ctx, (int)call->op, kiln_comm_op_name(call->op),
                                kiln_comm_bytes(call, c->size), kiln_comm_bus_factor(call->op, c->size),
                                kiln_stream_impl(call->stream));
}

void kiln_comm_prof_end(kiln_comm *c, kiln_prof_op *op) {
    if (op) kiln_prof_end(c->ctx, op);
}

void kiln_comm_prof_group_add(kiln_comm *c, const comm_call *call) {
    if (!KILN_PROF_ON(c->ctx)) return;
    group_record *g = NULL;
    for (int i = 0; i < group_record_count; i++)
        if (group_records[i].c == c) g = &group_records[i];
    if (!g) {
        if (group_record_count == GROUP_MAX_COMMS)
            return; /* more ranks than that in one thread: unrecorded */
        kiln_comm_prof_attach(c);
        g = &group_records[group_record_count++];
        memset(g, 0, sizeof *g);
        g->c = c;
        g->first = call->op;
        /* Begun at the group's first call on this communicator: nothing of
         * the group can run before. */
        g->op = kiln_prof_comm_begin(c->ctx, (int)call->op, kiln_comm_op_name(call->op), 0, 1.0,
                                     kiln_stream_impl(call->stream));
    }
    g->bytes += kiln_comm_bytes(call, c->size);
    g->kinds |= 1u << call->op;
}

void kiln_comm_prof_group_end(void) {
    for (int i = 0; i < group_record_count; i++) {
        group_record *g = &group_records[i];
        unsigned p2p = (1u << COMM_SEND) | (1u << COMM_RECV);
        int single = (g->kinds & (g->kinds - 1)) == 0;
        const char *name = single                   ? kiln_comm_op_name(g->first)
                           : (g->kinds & ~p2p) == 0 ? "sendrecv"
                                                    : "group";
        int kind = single ? (int)g->first : COLL_GROUP_KIND;
        double factor = single ? kiln_comm_bus_factor(g->first, g->c->size) : 1.0;
        kiln_prof_comm_end(g->c->ctx, g->op, kind, name, g->bytes, factor);
    }
    group_record_count = 0;
}
