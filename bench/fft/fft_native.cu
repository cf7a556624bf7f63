// fft_native.cu: cuFFT called directly, the vendor side of kiln_fft_bench
// (see fft_native.h). Built by nvcc -O3 for sm_90 into libkiln_fft_native.so.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "fft_native.h"

#define CK(call)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "fft_native: %s: %s\n", #call, cudaGetErrorString(e_));                          \
            return (int)e_;                                                                                  \
        }                                                                                                    \
    } while (0)
#define CF(call)                                                                                             \
    do {                                                                                                     \
        cufftResult r_ = (call);                                                                             \
        if (r_ != CUFFT_SUCCESS) {                                                                           \
            fprintf(stderr, "fft_native: %s: cufftResult %d\n", #call, (int)r_);                             \
            return 1000 + (int)r_;                                                                           \
        }                                                                                                    \
    } while (0)

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Times `run` (which queues work on `st`) between two events.
template <class F> static int time_it(cudaStream_t st, int repeat, F run, double *median_ms) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<double> ms;
    for (int r = -3; r < repeat; r++) {
        CK(cudaEventRecord(a, st));
        int s = run();
        if (s) return s;
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float t = 0;
        CK(cudaEventElapsedTime(&t, a, b));
        if (r >= 0) ms.push_back(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    *median_ms = median(ms);
    return 0;
}

extern "C" int kfn_time(int kind, int rank, const long long *n, long long batch, int repeat, double *median_ms) {
    long long nn[3] = {1, 1, 1}, points = 1, half = 1;
    for (int i = 0; i < rank; i++) {
        nn[i] = n[i];
        points *= n[i];
        half *= i == rank - 1 ? n[i] / 2 + 1 : n[i];
    }
    size_t in_bytes = (size_t)(kind == 0 ? points * 8 : points * 4) * batch;
    size_t out_bytes = (size_t)(kind == 0 ? points * 8 : half * 8) * batch;
    void *in = nullptr, *out = nullptr;
    CK(cudaMalloc(&in, in_bytes));
    CK(cudaMalloc(&out, out_bytes));
    CK(cudaMemset(in, 0, in_bytes));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cufftHandle plan;
    size_t work = 0;
    CF(cufftCreate(&plan));
    CF(cufftMakePlanMany64(plan, rank, nn, nullptr, 1, kind == 0 ? points : points, nullptr, 1,
                           kind == 0 ? points : half, kind == 0 ? CUFFT_C2C : CUFFT_R2C, batch, &work));
    CF(cufftSetStream(plan, st));
    int s = time_it(
        st, repeat,
        [&]() -> int {
            cufftResult r = kind == 0 ? cufftExecC2C(plan, (cufftComplex *)in, (cufftComplex *)out, CUFFT_FORWARD)
                                      : cufftExecR2C(plan, (cufftReal *)in, (cufftComplex *)out);
            return r == CUFFT_SUCCESS ? 0 : 1000 + (int)r;
        },
        median_ms);
    cufftDestroy(plan);
    cudaStreamDestroy(st);
    cudaFree(in);
    cudaFree(out);
    return s;
}

extern "C" int kfn_host_cost(int n, int calls, double *us_per_call) {
    void *in = nullptr, *out = nullptr;
    CK(cudaMalloc(&in, (size_t)n * 8));
    CK(cudaMalloc(&out, (size_t)n * 8));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cufftHandle plan;
    CF(cufftPlan1d(&plan, n, CUFFT_C2C, 1));
    CF(cufftSetStream(plan, st));
    for (int i = 0; i < 100; i++) CF(cufftExecC2C(plan, (cufftComplex *)in, (cufftComplex *)out, CUFFT_FORWARD));
    CK(cudaStreamSynchronize(st));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; i++) CF(cufftExecC2C(plan, (cufftComplex *)in, (cufftComplex *)out, CUFFT_FORWARD));
    auto t1 = std::chrono::steady_clock::now();
    CK(cudaStreamSynchronize(st));
    *us_per_call = std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
    cufftDestroy(plan);
    cudaStreamDestroy(st);
    cudaFree(in);
    cudaFree(out);
    return 0;
}

__global__ void vmult(cufftComplex *a, const cufftComplex *b, float s, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        cufftComplex x = a[i], y = b[i];
        a[i] = make_cuComplex((x.x * y.x - x.y * y.y) * s, (x.x * y.y + x.y * y.x) * s);
    }
}

extern "C" int kfn_convolve(int p, int repeat, double *median_ms) {
    long long n = (long long)p * p;
    size_t bytes = (size_t)n * sizeof(cufftComplex);
    cufftComplex *img0, *flt0, *img, *flt;
    CK(cudaMalloc(&img0, bytes));
    CK(cudaMalloc(&flt0, bytes));
    CK(cudaMalloc(&img, bytes));
    CK(cudaMalloc(&flt, bytes));
    CK(cudaMemset(img0, 0, bytes));
    CK(cudaMemset(flt0, 0, bytes));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cufftHandle plan;
    CF(cufftPlan2d(&plan, p, p, CUFFT_C2C));
    CF(cufftSetStream(plan, st));
    float s = 1.0f / ((float)p * (float)p);
    int blocks = (int)std::min<long long>((n + 255) / 256, 132 * 16);
    int rc = time_it(
        st, repeat,
        [&]() -> int {
            if (cufftExecC2C(plan, img0, img, CUFFT_FORWARD) != CUFFT_SUCCESS) return 1001;
            if (cufftExecC2C(plan, flt0, flt, CUFFT_FORWARD) != CUFFT_SUCCESS) return 1001;
            vmult<<<blocks, 256, 0, st>>>(img, flt, s, n);
            if (cufftExecC2C(plan, img, img, CUFFT_INVERSE) != CUFFT_SUCCESS) return 1001;
            return (int)cudaGetLastError();
        },
        median_ms);
    cufftDestroy(plan);
    cudaStreamDestroy(st);
    cudaFree(img0);
    cudaFree(flt0);
    cudaFree(img);
    cudaFree(flt);
    return rc;
}
