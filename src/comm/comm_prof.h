/* comm_prof.h: collectives in the profiler (src/prof), with the sizes and
 * bandwidths nccl-tests reports. */
#ifndef KILN_COMM_PROF_H
#define KILN_COMM_PROF_H

#include "comm/comm_internal.h"
#include "prof/prof.h"

/* Tells the context's profiler it is rank c->rank of c->size. */
void kiln_comm_prof_attach(kiln_comm *c);
/* NULL when the profiler is off (one branch). */
kiln_prof_op *kiln_comm_prof_begin(kiln_comm *c, const comm_call *call);
void kiln_comm_prof_end(kiln_comm *c, kiln_prof_op *op);
/* nccl-tests' size of a collective (bytes) and its bus-bandwidth factor. */
size_t kiln_comm_bytes(const comm_call *call, int nranks);
double kiln_comm_bus_factor(comm_op op, int nranks);

#endif
