/* comm_check.c: signatures of calls, their comparison across ranks, and the
 * host-side comparison for the ranks of one process. */
#include "comm/comm_check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void kiln_comm_signature(const comm_call *call, int64_t sig[COMM_SIG_LEN]) {
    int reduces = call->op == COMM_ALLREDUCE || call->op == COMM_REDUCE || call->op == COMM_REDUCE_SCATTER;
    int rooted = call->op == COMM_BROADCAST || call->op == COMM_REDUCE;
    sig[0] = call->op;
    sig[1] = reduces ? (int64_t)call->red : -1;
    sig[2] = call->dtype;
    sig[3] = (int64_t)call->count;
    sig[4] = rooted ? call->root : -1;
}

void kiln_comm_describe(const int64_t sig[COMM_SIG_LEN], char *buf, size_t cap) {
    char red[24] = "", root[24] = "";
    if (sig[1] >= 0) snprintf(red, sizeof red, " (%s)", kiln_reduce_op_name((kiln_comm_op)sig[1]));
    if (sig[4] >= 0) snprintf(root, sizeof root, " from root %lld", (long long)sig[4]);
    snprintf(buf, cap, "%s%s of %lld %s%s", kiln_comm_op_name((comm_op)sig[0]), red, (long long)sig[3],
             kiln_dtype_name((kiln_dtype)sig[2]), root);
}

kiln_status kiln_comm_compare(const kiln_comm *c, const int64_t *sigs, int n) {
    int op_differs = 0, dtype_differs = 0, count_differs = 0;
    for (int r = 1; r < n; r++) {
        const int64_t *a = sigs, *b = sigs + (size_t)r * COMM_SIG_LEN;
        op_differs |= a[0] != b[0] || a[1] != b[1] || a[4] != b[4];
        dtype_differs |= a[2] != b[2];
        count_differs |= a[3] != b[3];
    }
    if (!op_differs && !dtype_differs && !count_differs) return KILN_OK;
    kiln_status s = op_differs ? KILN_ERR_INVALID_ARGUMENT : count_differs ? KILN_ERR_SHAPE : KILN_ERR_DTYPE;
    kiln_set_error(s, "rank %d of %d: the ranks called different collectives (nothing was sent):", c->rank,
                   n);
    for (int r = 0; r < n && r < 16; r++) {
        char d[128];
        kiln_comm_describe(sigs + (size_t)r * COMM_SIG_LEN, d, sizeof d);
        kiln_append_error("%s rank %d: %s", r ? ";" : "", r, d);
    }
    return s;
}

/* ------------------------------------------------------------------ clique */

#define CLIQUE_RING 256

struct comm_clique {
    pthread_mutex_t lock;
    atomic_int refs;
    atomic_int broken; /* a mismatch: some rank's call will never be matched */
    int n;
    struct {
        uint64_t seq; /* call number + 1; 0: empty */
        int rank;
        int64_t sig[COMM_SIG_LEN];
    } ring[CLIQUE_RING];
};

struct comm_clique *kiln_comm_clique_create(int n) {
    struct comm_clique *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    pthread_mutex_init(&q->lock, NULL);
    atomic_init(&q->refs, n);
    atomic_init(&q->broken, 0);
    q->n = n;
    return q;
}

int kiln_comm_clique_broken(const struct comm_clique *q) { return q && atomic_load(&q->broken); }

void kiln_comm_clique_release(struct comm_clique *q) {
    if (!q || atomic_fetch_sub(&q->refs, 1) != 1) return;
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* The first rank to reach call number k leaves its signature; the others
 * compare theirs with it. Ranks further apart than CLIQUE_RING calls are not
 * compared (the slot was reused), never wrongly failed. */
kiln_status kiln_comm_clique_check(kiln_comm *c, const comm_call *call) {
    struct comm_clique *q = c->clique;
    int64_t mine[COMM_SIG_LEN], first[2 * COMM_SIG_LEN];
    kiln_comm_signature(call, mine);
    pthread_mutex_lock(&q->lock);
    size_t slot = (size_t)(c->seq % CLIQUE_RING);
    int other = -1;
    if (q->ring[slot].seq == c->seq + 1) {
        other = q->ring[slot].rank;
        memcpy(first, q->ring[slot].sig, sizeof mine);
    } else {
        q->ring[slot].seq = c->seq + 1;
        q->ring[slot].rank = c->rank;
        memcpy(q->ring[slot].sig, mine, sizeof mine);
    }
    pthread_mutex_unlock(&q->lock);
    if (other < 0) return KILN_OK;
    memcpy(first + COMM_SIG_LEN, mine, sizeof mine);
    kiln_status s = kiln_comm_compare(c, first, 2);
    if (s == KILN_OK) return KILN_OK;
    char a[128], b[128];
    kiln_comm_describe(first, a, sizeof a);
    kiln_comm_describe(mine, b, sizeof b);
    /* The other rank's call is already queued in NCCL: it will never be
     * matched, so no rank of the clique can go on (each is aborted, not
     * destroyed, when released). */
    c->broken = 1;
    atomic_store(&q->broken, 1);
    snprintf(c->broken_why, sizeof c->broken_why, "mismatched collective #%llu",
             (unsigned long long)c->seq + 1);
    return kiln_set_error(s,
                          "collective #%llu differs between ranks of this process: rank %d: %s; rank %d: %s "
                          "(NCCL cannot detect this itself; the communicator is now unusable)",
                          (unsigned long long)c->seq + 1, other, a, c->rank, b);
}
