// blas_native.cu: cuBLAS called directly, for kiln_blas_bench (see blas_native.h).
#include <chrono>
#include <cstdio>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "blas_native.h"

namespace {
cublasHandle_t handle = nullptr;
int last_cuda = 0, last_cublas = 0;

int fail_cuda(cudaError_t e) {
    last_cuda = (int)e;
    return 1;
}
int fail_cublas(cublasStatus_t s) {
    last_cublas = (int)s;
    return 2;
}

int ready(int device) {
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) return fail_cuda(e);
    if (!handle) {
        cublasStatus_t s = cublasCreate(&handle);
        if (s != CUBLAS_STATUS_SUCCESS) return fail_cublas(s);
    }
    return 0;
}

cublasStatus_t one_gemm(int dtype, int m, int n, int k, int batch, const void *a, const void *b, void *c) {
    const float f1 = 1, f0 = 0;
    const double d1 = 1, d0 = 0;
    long long sa = (long long)m * k, sb = (long long)k * n, sc = (long long)m * n;
    // row-major C (m x n) = A (m x k) B (k x n)  <=>  column-major C^T = B^T A^T
    if (dtype == BLAS_NATIVE_F32)
        return batch == 1 ? cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &f1, (const float *)b, n,
                                        (const float *)a, k, &f0, (float *)c, n)
                          : cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &f1,
                                                      (const float *)b, n, sb, (const float *)a, k, sa, &f0,
                                                      (float *)c, n, sc, batch);
    if (dtype == BLAS_NATIVE_F64)
        return batch == 1 ? cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &d1, (const double *)b, n,
                                        (const double *)a, k, &d0, (double *)c, n)
                          : cublasDgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &d1,
                                                      (const double *)b, n, sb, (const double *)a, k, sa, &d0,
                                                      (double *)c, n, sc, batch);
    if (dtype == BLAS_NATIVE_C64 || dtype == BLAS_NATIVE_C128) {
        const cuComplex c1 = {1, 0}, c0 = {0, 0};
        const cuDoubleComplex z1 = {1, 0}, z0 = {0, 0};
        if (dtype == BLAS_NATIVE_C64)
            return cublasCgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &c1, (const cuComplex *)b, n,
                                             sb, (const cuComplex *)a, k, sa, &c0, (cuComplex *)c, n, sc, batch);
        return cublasZgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &z1, (const cuDoubleComplex *)b,
                                         n, sb, (const cuDoubleComplex *)a, k, sa, &z0, (cuDoubleComplex *)c, n, sc,
                                         batch);
    }
    // 16-bit storage (A, B and C), float32 accumulation: what kiln asks cuBLAS for
    cudaDataType_t t = dtype == BLAS_NATIVE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    return batch == 1 ? cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &f1, b, t, n, a, t, k, &f0, c, t, n,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                      : cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &f1, b, t, n, sb, a,
                                                   t, k, sa, &f0, c, t, n, sc, batch, CUBLAS_COMPUTE_32F,
                                                   CUBLAS_GEMM_DEFAULT);
}
} // namespace

extern "C" {

int blas_native_abi(void) { return BLAS_NATIVE_ABI; }

const char *blas_native_error(int code) {
    static char buf[160];
    if (code == 1) return cudaGetErrorString((cudaError_t)last_cuda);
    if (code == 2) {
        snprintf(buf, sizeof buf, "cuBLAS status %d (%s)", last_cublas,
                 cublasGetStatusString((cublasStatus_t)last_cublas));
        return buf;
    }
    return "no error";
}

int blas_native_gemm(int device, int dtype, int m, int n, int k, int batch, const void *a, const void *b, void *c,
                     int warmups, int repeat, float *times_ms) {
    int r = ready(device);
    if (r) return r;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int i = -warmups; i < repeat; i++) {
        cudaEventRecord(e0, 0);
        cublasStatus_t s = one_gemm(dtype, m, n, k, batch, a, b, c);
        if (s != CUBLAS_STATUS_SUCCESS) return fail_cublas(s);
        cudaEventRecord(e1, 0);
        cudaError_t e = cudaEventSynchronize(e1);
        if (e != cudaSuccess) return fail_cuda(e);
        if (i >= 0) cudaEventElapsedTime(&times_ms[i], e0, e1);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return 0;
}

int blas_native_call_cost(int device, int m, const void *a, const void *b, void *c, int calls, double *us) {
    int r = ready(device);
    if (r) return r;
    for (int i = 0; i < 100; i++) one_gemm(BLAS_NATIVE_F32, m, m, m, 1, a, b, c); // warm-up
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; i++) {
        cublasStatus_t s = one_gemm(BLAS_NATIVE_F32, m, m, m, 1, a, b, c);
        if (s != CUBLAS_STATUS_SUCCESS) return fail_cublas(s);
    }
    auto t1 = std::chrono::steady_clock::now();
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return fail_cuda(e);
    *us = std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
    return 0;
}

} // extern "C"
