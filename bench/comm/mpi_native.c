/* mpi_native.c: the same collectives through MPI directly, on host memory. */
#include <mpi.h>
#include <stdlib.h>

#include "native.h"

static float *sendbuf, *recvbuf;

int mpi_native_open(size_t max_bytes) {
    sendbuf = calloc(1, max_bytes);
    recvbuf = calloc(1, max_bytes);
    return sendbuf && recvbuf ? 0 : 1;
}

int mpi_native_time(int op, size_t bytes, int iters, double us[2]) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int count = (int)(bytes / sizeof(float)), part = count / size;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        int r = op == BENCH_ALLREDUCE
                    ? MPI_Allreduce(sendbuf, recvbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)
                : op == BENCH_ALLGATHER
                    ? MPI_Allgather(sendbuf, part, MPI_FLOAT, recvbuf, part, MPI_FLOAT, MPI_COMM_WORLD)
                    : MPI_Reduce_scatter_block(sendbuf, recvbuf, part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (r != MPI_SUCCESS) return 1;
    }
    double t = (MPI_Wtime() - t0) * 1e6 / iters, worst = t;
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    us[0] = us[1] = worst; /* blocking calls: issue is the whole */
    return 0;
}

void mpi_native_close(void) {
    free(sendbuf);
    free(recvbuf);
}
