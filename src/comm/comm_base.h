/* comm_base.h: what the communicator's files share. Private to src/comm/.
 *
 * The communicator and a call as every part sees them (comm_base.c names
 * them). comm.c makes communicators and gives each a transport, one table
 * each, chosen by kiln_provider_select: MPI on host memory (comm_mpi.c),
 * NCCL on device memory (comm_nccl.c), or "self" for a communicator of one
 * rank (a copy, comm_collectives.c). comm_collectives.c is the front of the
 * calls: argument checks, the cross-rank check, the profiler's record and
 * the transport's run. */
#ifndef KILN_COMM_BASE_H
#define KILN_COMM_BASE_H

#include <stdint.h>

#include "core/context.h"
#include "core/provider.h"
#include "kiln.h"

typedef enum comm_op {
    COMM_ALLREDUCE = 0,
    COMM_BROADCAST,
    COMM_REDUCE,
    COMM_ALLGATHER,
    COMM_REDUCE_SCATTER,
    COMM_SEND,
    COMM_RECV,
    COMM_OP_COUNT
} comm_op;

/* One collective, as a transport runs it. `count` is NCCL's: elements per
 * rank's block (all-gather: of send; reduce-scatter: of recv). */
typedef struct comm_call {
    comm_op op;
    kiln_comm_op red;
    kiln_dtype dtype;
    size_t count;
    const void *send;
    void *recv;
    int root; /* broadcast, reduce: the root; send, recv: the peer */
    kiln_stream *stream;
} comm_call;

struct comm_clique;

/* A transport: one engine behind the front (core/provider.h's shape). */
typedef struct comm_transport {
    kiln_provider base; /* first */
    const char *id;     /* kiln_comm_transport's answer: "nccl", "mpi", "self" */
    int device_arrays;  /* 1: arrays must be in device memory */
    /* Optional: makes c's rank once MPI has given its rank and size (NCCL:
     * rank 0 makes the unique id, MPI carries it). */
    kiln_status (*init_rank)(kiln_comm *c);
    /* Optional: the n ranks of one process, one per context
     * (kiln_comm_init_all); NULL: this transport's ranks are processes. */
    kiln_status (*init_all)(kiln_comm **comms, int n);
    kiln_status (*run)(kiln_comm *c, const comm_call *call);
    /* Optional: calls inside kiln_comm_group_start/end are held and issued
     * between group(1) and group(0); NULL: each runs at once. */
    kiln_status (*group)(int start);
    /* Optional: the host waits for c's calls queued on stream; NULL: they
     * completed inside their calls, the stream is synchronized. */
    kiln_status (*wait)(kiln_comm *c, kiln_stream *stream);
    /* Optional: frees what the transport made for c. */
    void (*destroy)(kiln_comm *c);
} comm_transport;

/* NCCL (comm_nccl.c), MPI (comm_mpi.c), one rank's copies (comm_collectives.c). */
extern const comm_transport kiln_comm_nccl, kiln_comm_mpi, kiln_comm_self;

struct kiln_comm {
    kiln_context *ctx;
    const comm_transport *transport;
    int rank, size;
    int checks;        /* the cross-rank argument check runs */
    double timeout_ms; /* waits longer than this fail with KILN_ERR_COMM */
    int broken;        /* a peer failed or timed out: every call fails */
    char broken_why[256];
    uint64_t seq;               /* collectives issued so far (clique checks) */
    int owns_mpi_env;           /* made by kiln_comm_open_env: finalizes MPI if kiln initialised it */
    void *mpi;                  /* MPI_Comm * (kiln's duplicate), NULL when none */
    void *nccl;                 /* ncclComm_t, NULL when none */
    struct comm_clique *clique; /* kiln_comm_init_all ranks of one process */
    /* The CUstream of the kiln stream the last NCCL call used (held, so the
     * pointer cannot be reused by another stream): a call on the same
     * stream skips the backend's lookup and its context switch. */
    kiln_stream *nccl_stream;
    void *nccl_native_stream;
    int nccl_stream_known;
};

/* ---- comm_base.c */
/* KILN_ERR_COMM with the reason, marking the communicator unusable. */
kiln_status kiln_comm_break(kiln_comm *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const char *kiln_comm_op_name(comm_op op);
const char *kiln_reduce_op_name(kiln_comm_op op);

/* ---- comm.c, comm_collectives.c */
/* Thread's group nesting depth (kiln_comm_group_start). */
int kiln_comm_group_depth(void);
/* KILN_OK when c may run a call named `what`: not NULL, not broken (here or by
 * a mismatch another rank of its clique found), its context healthy. */
kiln_status kiln_comm_usable(kiln_comm *c, const char *what);

/* ---- comm_mpi.c: the MPI transport, loaded from libkiln_mpi.so at the first
 * call (stubs saying "built without MPI" when KILN_HAVE_MPI is unset) */
/* 1 when MPI can be used: built with it, not refused by KILN_NO_MPI, and
 * the transport module loaded (this call loads it). */
int kiln_comm_mpi_built(void);
/* The thread error saying why MPI cannot be used, prefixed by `what`:
 * KILN_ERR_UNSUPPORTED (built without MPI, KILN_NO_MPI) or
 * KILN_ERR_LIBRARY_MISSING (the module or its MPI did not load). */
kiln_status kiln_comm_mpi_unavailable(const char *what);
/* Duplicates *(MPI_Comm *)mpi_comm into c->mpi with errors returned; sets rank and size. */
kiln_status kiln_comm_mpi_attach(kiln_comm *c, const void *mpi_comm);
void kiln_comm_mpi_detach(kiln_comm *c);
/* MPI_Init_thread when MPI is not initialised; *initialised_here says so. */
kiln_status kiln_comm_mpi_init(int *initialised_here);
void kiln_comm_mpi_finalize(void);
/* A pointer to MPI_COMM_WORLD (for kiln_comm_open_env). */
const void *kiln_comm_mpi_world(void);
/* Root's `bytes` at `data` to every rank (the NCCL unique id), blocking. */
kiln_status kiln_comm_mpi_bcast_bytes(kiln_comm *c, void *data, size_t bytes, int root);
/* The cross-rank argument check: every rank gives its call's signature;
 * KILN_ERR_SHAPE / KILN_ERR_DTYPE naming every rank's arguments if they differ. */
kiln_status kiln_comm_mpi_check(kiln_comm *c, const comm_call *call);
/* Completes the sends and receives posted inside the thread's group. */
kiln_status kiln_comm_mpi_group_end(void);

/* ---- comm_nccl.c */
/* What a reduction (all-reduce, reduce, reduce-scatter) of `call` on a
 * communicator of `size` ranks hands NCCL: the datatype and reduction op as
 * nccl.h numbers them, and the element count. Pure, so the CPU tests check it. */
typedef struct comm_nccl_args {
    int type;
    size_t count;
    int op;
} comm_nccl_args;
comm_nccl_args kiln_comm_nccl_args(const comm_call *call, int size);

#endif
