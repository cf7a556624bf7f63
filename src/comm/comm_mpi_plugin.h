/* comm_mpi_plugin.h: the interface between libkiln and its MPI transport,
 * libkiln_mpi.so, which libkiln loads at the first MPI call.
 *
 * The transport is compiled against one MPI's headers and links that MPI
 * (MPI_Comm, MPI_FLOAT and MPI_COMM_WORLD are implementation-specific types
 * and link-time symbols), but it lives in a module of its own so that libkiln
 * itself does not: a program that never makes an MPI communicator does not
 * load MPI and its eight libraries (2 ms of every process's start on the
 * build machine), and a kiln built with MPI runs on a machine without it.
 *
 * The module and libkiln are built together from one tree; the host table
 * carries the few libkiln functions the transport calls (errors, the
 * cross-rank check, dtype names), because a program linking libkiln
 * statically exports none of them. Both sides check the ABI number and the
 * structure sizes before anything else. */
#ifndef KILN_COMM_MPI_PLUGIN_H
#define KILN_COMM_MPI_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm_base.h"
#include "core/error.h"

#define KILN_MPI_PLUGIN_ABI 1
#define KILN_MPI_PLUGIN_ENTRY "kiln_mpi_plugin_open"
#define KILN_MPI_PLUGIN_NAME "libkiln_mpi.so"

/* libkiln's side: what the transport may call. */
typedef struct kiln_mpi_host {
    int abi;                       /* KILN_MPI_PLUGIN_ABI */
    int version;                   /* KILN_VERSION_NUMBER */
    size_t comm_bytes, call_bytes; /* sizeof(kiln_comm), sizeof(comm_call) */
    kiln_status (*set_error)(kiln_status status, const char *fmt, ...) KILN_PRINTF(2, 3);
    const char *(*last_error)(void);
    kiln_status (*comm_break)(kiln_comm *c, const char *fmt, ...) KILN_PRINTF(2, 3);
    int (*group_depth)(void);
    const char *(*op_name)(comm_op op);
    void (*signature)(const comm_call *call, int64_t *sig);
    kiln_status (*compare)(const kiln_comm *c, const int64_t *sigs, int n);
    const char *(*dtype_name)(kiln_dtype dtype);
    size_t (*dtype_size)(kiln_dtype dtype);
    uint16_t (*float_to_half)(float f);
    float (*half_to_float)(uint16_t h);
} kiln_mpi_host;

/* The transport's side: the operations comm_base.h lists as
 * kiln_comm_mpi_*, with the same contracts. */
typedef struct kiln_mpi_ops {
    const char *(*library)(void);
    kiln_status (*init)(int *initialised_here);
    void (*finalize)(void);
    const void *(*world)(void);
    kiln_status (*attach)(kiln_comm *c, const void *mpi_comm);
    void (*detach)(kiln_comm *c);
    kiln_status (*bcast_bytes)(kiln_comm *c, void *data, size_t bytes, int root);
    kiln_status (*check)(kiln_comm *c, const comm_call *call);
    kiln_status (*run)(kiln_comm *c, const comm_call *call);
    kiln_status (*group_end)(void);
} kiln_mpi_ops;

/* The module's one exported function: its operations, or NULL when `host`
 * is not the libkiln it was built with (a different ABI, version or layout). */
typedef const kiln_mpi_ops *(*kiln_mpi_plugin_open_fn)(const kiln_mpi_host *host);

#endif
