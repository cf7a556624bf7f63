/* comm_prof.c: what the profiler records of a collective. Sizes and bus
 * bandwidth follow nccl-tests (doc/PERFORMANCE.md there): the size is the
 * per-rank buffer for all-reduce, broadcast, reduce and send/recv, and the
 * whole gathered (scattered) buffer for all-gather (reduce-scatter); bus
 * bandwidth is algorithm bandwidth times 2(n-1)/n for all-reduce, (n-1)/n
 * for all-gather and reduce-scatter, 1 otherwise. */
#include "comm/comm_prof.h"

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
