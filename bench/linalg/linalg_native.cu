// linalg_native.cu: cuSOLVER called directly, for kiln_linalg_bench (see linalg_native.h).
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include "linalg_native.h"

namespace {
cusolverDnHandle_t handle = nullptr;
cusolverDnParams_t params = nullptr;
cudaStream_t stream = nullptr;
int last_cuda = 0, last_cusolver = 0;

int fail_cuda(cudaError_t e) {
    last_cuda = (int)e;
    return 1;
}
int fail_cusolver(cusolverStatus_t s) {
    last_cusolver = (int)s;
    return 2;
}
#define CU(x)                                                                                                  \
    do {                                                                                                       \
        cudaError_t e_ = (x);                                                                                  \
        if (e_ != cudaSuccess) return fail_cuda(e_);                                                           \
    } while (0)
#define CS(x)                                                                                                  \
    do {                                                                                                       \
        cusolverStatus_t s_ = (x);                                                                             \
        if (s_ != CUSOLVER_STATUS_SUCCESS) return fail_cusolver(s_);                                           \
    } while (0)

int ready(int device) {
    CU(cudaSetDevice(device));
    if (!handle) {
        CU(cudaStreamCreate(&stream));
        CS(cusolverDnCreate(&handle));
        CS(cusolverDnCreateParams(&params));
        CS(cusolverDnSetStream(handle, stream));
    }
    return 0;
}

// Buffers of one problem, allocated once per call to run().
struct problem {
    int op, n;
    cudaDataType t, rt;
    size_t elem;
    void *work = nullptr, *x = nullptr, *tau = nullptr, *s = nullptr, *u = nullptr, *vt = nullptr;
    int64_t *ipiv = nullptr;
    int *info = nullptr, *host_info = nullptr;
    void *dev_ws = nullptr, *host_ws = nullptr, *orgqr_ws = nullptr;
    size_t dev_bytes = 0, host_bytes = 0;
    int orgqr_lwork = 0;
};

int orgqr_size(problem &p) {
    int n = p.n;
    if (p.t == CUDA_R_32F)
        CS(cusolverDnSorgqr_bufferSize(handle, n, n, n, (float *)p.work, n, (float *)p.tau, &p.orgqr_lwork));
    else
        CS(cusolverDnDorgqr_bufferSize(handle, n, n, n, (double *)p.work, n, (double *)p.tau, &p.orgqr_lwork));
    CU(cudaMalloc(&p.orgqr_ws, (size_t)p.orgqr_lwork * p.elem + 1));
    return 0;
}

int prepare(problem &p) {
    int64_t n = p.n;
    size_t bytes = (size_t)n * n * p.elem;
    CU(cudaMalloc(&p.work, bytes));
    CU(cudaMalloc(&p.info, sizeof(int)));
    CU(cudaMallocHost(&p.host_info, sizeof(int)));
    switch (p.op) {
    case LINALG_NATIVE_SOLVE:
        CU(cudaMalloc(&p.ipiv, sizeof(int64_t) * n));
        CU(cudaMalloc(&p.x, (size_t)n * p.elem));
        CS(cusolverDnXgetrf_bufferSize(handle, params, n, n, p.t, p.work, n, p.t, &p.dev_bytes, &p.host_bytes));
        break;
    case LINALG_NATIVE_CHOLESKY:
        CS(cusolverDnXpotrf_bufferSize(handle, params, CUBLAS_FILL_MODE_LOWER, n, p.t, p.work, n, p.t, &p.dev_bytes,
                                       &p.host_bytes));
        break;
    case LINALG_NATIVE_QR:
        CU(cudaMalloc(&p.tau, (size_t)n * p.elem));
        CS(cusolverDnXgeqrf_bufferSize(handle, params, n, n, p.t, p.work, n, p.t, p.tau, p.t, &p.dev_bytes,
                                       &p.host_bytes));
        if (int r = orgqr_size(p)) return r;
        break;
    case LINALG_NATIVE_SVD:
    case LINALG_NATIVE_SVD_UV: {
        signed char job = p.op == LINALG_NATIVE_SVD ? 'N' : 'S';
        CU(cudaMalloc(&p.s, (size_t)n * p.elem));
        if (job == 'S') {
            CU(cudaMalloc(&p.u, bytes));
            CU(cudaMalloc(&p.vt, bytes));
        }
        CS(cusolverDnXgesvd_bufferSize(handle, params, job, job, n, n, p.t, p.work, n, p.rt, p.s, p.t, p.u, n, p.t,
                                       p.vt, n, p.t, &p.dev_bytes, &p.host_bytes));
        break;
    }
    default:
        CU(cudaMalloc(&p.s, (size_t)n * p.elem));
        CS(cusolverDnXsyevd_bufferSize(handle, params, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, p.t,
                                       p.work, n, p.rt, p.s, p.t, &p.dev_bytes, &p.host_bytes));
    }
    CU(cudaMalloc(&p.dev_ws, p.dev_bytes + 1));
    p.host_ws = new char[p.host_bytes + 1];
    return 0;
}

// One round: copy, factor (and solve), info back to the host.
int round(problem &p, const void *a, const void *b) {
    int64_t n = p.n;
    CU(cudaMemcpyAsync(p.work, a, (size_t)n * n * p.elem, cudaMemcpyDeviceToDevice, stream));
    switch (p.op) {
    case LINALG_NATIVE_SOLVE:
        CU(cudaMemcpyAsync(p.x, b, (size_t)n * p.elem, cudaMemcpyDeviceToDevice, stream));
        CS(cusolverDnXgetrf(handle, params, n, n, p.t, p.work, n, p.ipiv, p.t, p.dev_ws, p.dev_bytes, p.host_ws,
                            p.host_bytes, p.info));
        CS(cusolverDnXgetrs(handle, params, CUBLAS_OP_N, n, 1, p.t, p.work, n, p.ipiv, p.t, p.x, n, p.info));
        break;
    case LINALG_NATIVE_CHOLESKY:
        CS(cusolverDnXpotrf(handle, params, CUBLAS_FILL_MODE_LOWER, n, p.t, p.work, n, p.t, p.dev_ws, p.dev_bytes,
                            p.host_ws, p.host_bytes, p.info));
        break;
    case LINALG_NATIVE_QR:
        CS(cusolverDnXgeqrf(handle, params, n, n, p.t, p.work, n, p.t, p.tau, p.t, p.dev_ws, p.dev_bytes, p.host_ws,
                            p.host_bytes, p.info));
        if (p.t == CUDA_R_32F)
            CS(cusolverDnSorgqr(handle, (int)n, (int)n, (int)n, (float *)p.work, (int)n, (const float *)p.tau,
                                (float *)p.orgqr_ws, p.orgqr_lwork, p.info));
        else
            CS(cusolverDnDorgqr(handle, (int)n, (int)n, (int)n, (double *)p.work, (int)n, (const double *)p.tau,
                                (double *)p.orgqr_ws, p.orgqr_lwork, p.info));
        break;
    case LINALG_NATIVE_SVD:
    case LINALG_NATIVE_SVD_UV: {
        signed char job = p.op == LINALG_NATIVE_SVD ? 'N' : 'S';
        CS(cusolverDnXgesvd(handle, params, job, job, n, n, p.t, p.work, n, p.rt, p.s, p.t, p.u, n, p.t, p.vt, n, p.t,
                            p.dev_ws, p.dev_bytes, p.host_ws, p.host_bytes, p.info));
        break;
    }
    default:
        CS(cusolverDnXsyevd(handle, params, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, p.t, p.work, n, p.rt,
                            p.s, p.t, p.dev_ws, p.dev_bytes, p.host_ws, p.host_bytes, p.info));
    }
    CU(cudaMemcpyAsync(p.host_info, p.info, sizeof(int), cudaMemcpyDeviceToHost, stream));
    return 0;
}

void release(problem &p) {
    void *bufs[] = {p.work, p.x, p.tau, p.s, p.u, p.vt, p.ipiv, p.info, p.dev_ws, p.orgqr_ws};
    for (void *q : bufs)
        if (q) cudaFree(q);
    if (p.host_info) cudaFreeHost(p.host_info);
    delete[] (char *)p.host_ws;
}
} // namespace

extern "C" {

int linalg_native_abi(void) { return LINALG_NATIVE_ABI; }

const char *linalg_native_error(int code) {
    static char buf[160];
    if (code == 1) return cudaGetErrorString((cudaError_t)last_cuda);
    if (code == 2) {
        snprintf(buf, sizeof buf, "cusolverStatus_t %d", last_cusolver);
        return buf;
    }
    if (code == 3) return "the factorisation's info was not 0";
    return "no error";
}

int linalg_native_run(int device, int op, int dtype, int n, const void *a, const void *b, int warmups, int repeat,
                      float *times_ms) {
    int r = ready(device);
    if (r) return r;
    problem p;
    p.op = op;
    p.n = n;
    p.t = dtype == LINALG_NATIVE_F32 ? CUDA_R_32F : CUDA_R_64F;
    p.rt = p.t;
    p.elem = dtype == LINALG_NATIVE_F32 ? 4 : 8;
    r = prepare(p);
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    if (!r && cudaEventCreate(&e0) != cudaSuccess) r = 1;
    if (!r && cudaEventCreate(&e1) != cudaSuccess) r = 1;
    for (int i = 0; !r && i < warmups + repeat; i++) {
        if (cudaEventRecord(e0, stream) != cudaSuccess) r = 1;
        if (!r) r = round(p, a, b);
        if (!r && cudaEventRecord(e1, stream) != cudaSuccess) r = 1;
        if (!r && cudaEventSynchronize(e1) != cudaSuccess) r = 1;
        if (!r && *p.host_info != 0) r = 3;
        float ms = 0;
        if (!r && cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess) r = 1;
        if (!r && i >= warmups) times_ms[i - warmups] = ms;
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    release(p);
    return r;
}
}
