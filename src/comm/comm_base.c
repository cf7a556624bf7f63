/* comm_base.c: what every part of src/comm/ says about a communicator and
 * a call: the names of operations and reductions, the transport's name,
 * and breaking a communicator (after which every call on it fails). The
 * front (comm.c), the transports and the checks all stand on it. */
#include "comm/comm_base.h"

#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"

static const char *const op_names[COMM_OP_COUNT] = {"allreduce",      "broadcast", "reduce", "allgather",
                                                    "reduce_scatter", "send",      "recv"};
const char *kiln_comm_op_name(comm_op op) { return op < COMM_OP_COUNT ? op_names[op] : "?"; }

const char *kiln_reduce_op_name(kiln_comm_op op) {
    switch (op) {
    case KILN_COMM_SUM: return "sum";
    case KILN_COMM_PROD: return "prod";
    case KILN_COMM_MIN: return "min";
    case KILN_COMM_MAX: return "max";
    case KILN_COMM_AVG: return "avg";
    }
    return "?";
}

kiln_status kiln_comm_break(kiln_comm *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->broken_why, sizeof c->broken_why, fmt, ap);
    va_end(ap);
    c->broken = 1;
    return kiln_set_error(KILN_ERR_COMM, "rank %d of %d: %s", c->rank, c->size, c->broken_why);
}

const char *kiln_comm_transport(const kiln_comm *c) {
    if (!c) return "none";
    return c->transport ? c->transport->id : "none";
}
