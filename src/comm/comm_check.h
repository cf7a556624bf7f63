/* comm_check.h: the cross-rank argument check. Every rank reduces its
 * call to a signature (op, reduce op, dtype, count, root); if they differ
 * the call fails on every rank with a message listing each rank's call,
 * instead of hanging or corrupting memory as a mismatched NCCL or MPI call
 * would. */
#ifndef KILN_COMM_CHECK_H
#define KILN_COMM_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm_base.h"

#define COMM_SIG_LEN 5
void kiln_comm_signature(const comm_call *call, int64_t sig[COMM_SIG_LEN]);
/* "allreduce (sum) of 10 float32" */
void kiln_comm_describe(const int64_t sig[COMM_SIG_LEN], char *buf, size_t cap);
/* sigs: n signatures in rank order. KILN_OK when all equal, else
 * KILN_ERR_SHAPE (counts differ), KILN_ERR_DTYPE (dtypes differ) or
 * KILN_ERR_INVALID_ARGUMENT (ops or roots differ), the message listing them. */
kiln_status kiln_comm_compare(const kiln_comm *c, const int64_t *sigs, int n);

/* Ranks of one process (kiln_comm_init_all): compared in host memory as
 * each rank issues its call, so nobody waits. */
struct comm_clique *kiln_comm_clique_create(int n);
void kiln_comm_clique_release(struct comm_clique *q);
kiln_status kiln_comm_clique_check(kiln_comm *c, const comm_call *call);
/* 1 once any rank of the clique found a mismatch. */
int kiln_comm_clique_broken(const struct comm_clique *q);

#endif
