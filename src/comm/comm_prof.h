/* comm_prof.h: collectives in the profiler (src/prof), with the sizes and
 * bandwidths nccl-tests reports. */
#ifndef KILN_COMM_PROF_H
#define KILN_COMM_PROF_H

#include "comm/comm_base.h"
#include "prof/prof.h"

/* Tells the context's profiler it is rank c->rank of c->size. */
void kiln_comm_prof_attach(kiln_comm *c);
/* NULL when the profiler is off (one branch). */
kiln_prof_op *kiln_comm_prof_begin(kiln_comm *c, const comm_call *call);
void kiln_comm_prof_end(kiln_comm *c, kiln_prof_op *op);

/* Calls inside kiln_comm_group_start/end run at the group's end (NCCL
 * queues them there, MPI completes them there), so each communicator's
 * calls in a group become one record spanning the group: named after the
 * collective when they are all one kind, "sendrecv" when they are sends
 * and receives (a halo exchange), else "group"; bytes summed. */
void kiln_comm_prof_group_add(kiln_comm *c, const comm_call *call);
void kiln_comm_prof_group_end(void);
/* nccl-tests' size of a collective (bytes) and its bus-bandwidth factor. */
size_t kiln_comm_bytes(const comm_call *call, int nranks);
double kiln_comm_bus_factor(comm_op op, int nranks);

#endif
