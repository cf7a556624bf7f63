/* nccl_native.c: what a CUDA programmer writes without kiln: NCCL called
 * directly (ncclCommInitAll, one stream per GPU, group calls from one
 * thread), as nccl-tests does. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "native.h"

#define MAX_GPUS 16

static ncclComm_t comms[MAX_GPUS];
static cudaStream_t streams[MAX_GPUS];
static float *sendbuf[MAX_GPUS], *recvbuf[MAX_GPUS];
static int gpus;

int nccl_native_open(int n, size_t max_bytes, char *why, size_t why_size) {
    int devlist[MAX_GPUS];
    if (n < 1 || n > MAX_GPUS) {
        snprintf(why, why_size, "%d GPUs: 1..%d", n, MAX_GPUS);
        return 1;
    }
    gpus = n;
    for (int i = 0; i < n; i++) {
        devlist[i] = i;
        if (cudaSetDevice(i) != cudaSuccess || cudaMalloc((void **)&sendbuf[i], max_bytes) != cudaSuccess ||
            cudaMalloc((void **)&recvbuf[i], max_bytes) != cudaSuccess ||
            cudaMemset(sendbuf[i], 0, max_bytes) != cudaSuccess ||
            cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking) != cudaSuccess) {
            snprintf(why, why_size, "CUDA setup of GPU %d failed: %s", i,
                     cudaGetErrorString(cudaGetLastError()));
            return 1;
        }
    }
    ncclResult_t r = ncclCommInitAll(comms, n, devlist);
    if (r != ncclSuccess) {
        snprintf(why, why_size, "ncclCommInitAll: %s", ncclGetErrorString(r));
        return 1;
    }
    return 0;
}

int nccl_native_time(int op, size_t bytes, int iters, double us[2]) {
    size_t count = bytes / sizeof(float), part = count / (size_t)gpus;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int it = 0; it < iters; it++) {
        ncclGroupStart();
        for (int i = 0; i < gpus; i++) {
            ncclResult_t r = ncclSuccess;
            if (op == BENCH_ALLREDUCE)
                r = ncclAllReduce(sendbuf[i], recvbuf[i], count, ncclFloat, ncclSum, comms[i], streams[i]);
            else if (op == BENCH_ALLGATHER)
                r = ncclAllGather(sendbuf[i], recvbuf[i], part, ncclFloat, comms[i], streams[i]);
            else
                r = ncclReduceScatter(sendbuf[i], recvbuf[i], part, ncclFloat, ncclSum, comms[i], streams[i]);
            if (r != ncclSuccess) return 1;
        }
        if (ncclGroupEnd() != ncclSuccess) return 1;
    }
    struct timespec issued;
    clock_gettime(CLOCK_MONOTONIC, &issued);
    for (int i = 0; i < gpus; i++) {
        cudaSetDevice(i);
        if (cudaStreamSynchronize(streams[i]) != cudaSuccess) return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    us[0] = ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-3) / iters;
    us[1] =
        ((double)(issued.tv_sec - t0.tv_sec) * 1e6 + (double)(issued.tv_nsec - t0.tv_nsec) * 1e-3) / iters;
    return 0;
}

void nccl_native_close(void) {
    for (int i = 0; i < gpus; i++) {
        ncclCommDestroy(comms[i]);
        cudaSetDevice(i);
        cudaStreamDestroy(streams[i]);
        cudaFree(sendbuf[i]);
        cudaFree(recvbuf[i]);
    }
    gpus = 0;
}
