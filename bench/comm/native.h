/* native.h: the collectives called directly through the vendor library, for
 * kiln_comm_bench to time beside kiln on the same sizes in the same run:
 * NCCL over the GPUs of this process (nccl_native.c, built when nccl.h and
 * libnccl are found), MPI over the processes (mpi_native.c, built with MPI). */
#ifndef KILN_BENCH_COMM_NATIVE_H
#define KILN_BENCH_COMM_NATIVE_H

#include <stddef.h>

enum { BENCH_ALLREDUCE = 0, BENCH_ALLGATHER = 1, BENCH_REDUCE_SCATTER = 2 };

/* NCCL, one process driving `n` GPUs (devices 0..n-1), float32 buffers of
 * max_bytes per GPU. 0 on success; else a message in why. */
int nccl_native_open(int n, size_t max_bytes, char *why, size_t why_size);
/* `iters` calls of op over nccl-tests' size `bytes`, each a group over the
 * GPUs, then every stream synchronised; microseconds per call in us[0], and
 * in us[1] the host's share: the calls' issue alone, before the wait. */
int nccl_native_time(int op, size_t bytes, int iters, double us[2]);
void nccl_native_close(void);

/* MPI_COMM_WORLD, float32 host buffers of max_bytes. */
int mpi_native_open(size_t max_bytes);
int mpi_native_time(int op, size_t bytes, int iters, double us[2]);
void mpi_native_close(void);

#endif
