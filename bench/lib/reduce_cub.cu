// reduce_cub.cu: CUB's reductions and scan timed with CUDA events, the
// reference kiln's reduce_bench compares against in the same run. Built by
// nvcc into libkiln_reduce_cub.so, which reduce_bench dlopens (the bench
// itself, like kiln, needs no CUDA at build or link time).
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace {

__global__ void fill(float *x, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned long long s = (unsigned long long)i * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) & 0xffffff) / 16777216.0f - 0.5f;
    }
}


__global__ void col_sums(const float *x, float *out, int side) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= side) return;
    float acc = 0;
    for (int r = 0; r < side; r++) acc += x[(long long)r * side + c];
    out[c] = acc;
}

template <class F> double median_ms(int repeat, F f) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    f();
    std::vector<float> t;
    for (int i = 0; i < repeat; i++) {
        cudaEventRecord(a);
        for (int k = 0; k < 10; k++) f(); // batches of 10, as reduce_bench times kiln
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms / 10);
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t[t.size() / 2];
}

} // namespace

// ms[0] full sum of n, [1] row sums (segmented reduce) of side^2, [2] column
// sums (a thread per column, the hand-written baseline: CUB has no column
// reduction), [3] argmax of n, [4] inclusive scan of n, [5] device copy of n
// floats. Returns 0, or the CUDA error code.
extern "C" int kiln_reduce_cub_bench(long long n, int side, int repeat, double *ms) {
    float *x = nullptr, *y = nullptr, *out = nullptr;
    float *mx = nullptr;
    long long *idx = nullptr;
    long long m = (long long)side * side;
    long long big = n > m ? n : m;
    if (cudaMalloc(&x, big * sizeof(float)) != cudaSuccess) return 1;
    if (cudaMalloc(&y, big * sizeof(float)) != cudaSuccess) return 1;
    cudaMalloc(&out, side * sizeof(float) + 16);
    cudaMalloc(&mx, sizeof *mx);
    cudaMalloc(&idx, sizeof *idx);
    fill<<<1024, 256>>>(x, big);
    int *offsets = nullptr;
    cudaMalloc(&offsets, (side + 1) * sizeof(int));
    std::vector<int> h(side + 1);
    for (int i = 0; i <= side; i++) h[i] = i * side;
    cudaMemcpy(offsets, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice);
    size_t bytes = 0, b2 = 0;
    void *tmp = nullptr;
    cub::DeviceReduce::Sum(nullptr, bytes, x, out, (int)n);
    cub::DeviceSegmentedReduce::Sum(nullptr, b2, x, out, side, offsets, offsets + 1);
    bytes = std::max(bytes, b2);
    cub::DeviceReduce::ArgMax(nullptr, b2, x, mx, idx, (long long)n);
    bytes = std::max(bytes, b2);
    cub::DeviceScan::InclusiveSum(nullptr, b2, x, y, (int)n);
    bytes = std::max(bytes, b2);
    cudaMalloc(&tmp, bytes);
    ms[0] = median_ms(repeat, [&] { cub::DeviceReduce::Sum(tmp, bytes, x, out, (int)n); });
    ms[1] = median_ms(repeat, [&] { cub::DeviceSegmentedReduce::Sum(tmp, bytes, x, out, side, offsets, offsets + 1); });
    ms[2] = median_ms(repeat, [&] { col_sums<<<(side + 255) / 256, 256>>>(x, out, side); });
    ms[3] = median_ms(repeat, [&] { cub::DeviceReduce::ArgMax(tmp, bytes, x, mx, idx, (long long)n); });
    ms[4] = median_ms(repeat, [&] { cub::DeviceScan::InclusiveSum(tmp, bytes, x, y, (int)n); });
    ms[5] = median_ms(repeat, [&] { cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice); });
    cudaError_t e = cudaDeviceSynchronize();
    cudaFree(tmp);
    cudaFree(offsets);
    cudaFree(mx);
    cudaFree(idx);
    cudaFree(out);
    cudaFree(y);
    cudaFree(x);
    return e == cudaSuccess ? 0 : (int)e;
}
