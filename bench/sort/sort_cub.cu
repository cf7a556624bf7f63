// sort_cub.cu: CUB's DeviceRadixSort timed with CUDA events, the reference
// kiln_sort_bench compares kiln's radix sort against in the same run. Built
// by nvcc into libkiln_sort_cub.so, which the bench dlopens (the bench, like
// kiln, needs no CUDA at build or link time).
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace {

// The keys the kiln side sorts too: the same generator, the same n.
__global__ void fill(unsigned *x, unsigned *v, float *f, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned long long s = (unsigned long long)i * 6364136223846793005ull + 1442695040888963407ull;
        s ^= s >> 29;
        s *= 0xbf58476d1ce4e5b9ull;
        x[i] = (unsigned)(s >> 32);
        v[i] = (unsigned)i;
        f[i] = (float)(x[i] >> 8) * (1.0f / 8388608.0f) - 1.0f; // [-1, 1): no NaN, +0.0 only

    }
}

template <class F> double median_ms(int repeat, F f) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    f();
    std::vector<float> t;
    for (int i = 0; i < repeat; i++) {
        cudaEventRecord(a);
        f();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t[t.size() / 2];
}

} // namespace

// ms[0]: SortKeys of n uint32; ms[1]: SortPairs of n uint32 keys with uint32
// values; ms[2]: a device copy of n uint32 (the bandwidth yardstick); ms[3]:
// SortKeys of n float32 (the generator's keys scaled to [-1, 1).
// Returns 0, or the CUDA error code.
extern "C" int kiln_sort_cub_bench(long long n, int repeat, double *ms) {
    unsigned *k = nullptr, *k2 = nullptr, *v = nullptr, *v2 = nullptr;
    float *f = nullptr, *f2 = nullptr;
    void *tmp = nullptr;
    size_t tmp_bytes = 0, pair_bytes = 0;
    cudaMalloc(&k, n * 4);
    cudaMalloc(&k2, n * 4);
    cudaMalloc(&v, n * 4);
    cudaMalloc(&v2, n * 4);
    cudaMalloc(&f, n * 4);
    cudaMalloc(&f2, n * 4);
    fill<<<1024, 256>>>(k, v, f, n);
    cub::DeviceRadixSort::SortKeys(nullptr, tmp_bytes, k, k2, (int)n);
    cub::DeviceRadixSort::SortPairs(nullptr, pair_bytes, k, k2, v, v2, (int)n);
    cudaMalloc(&tmp, std::max(tmp_bytes, pair_bytes));
    ms[0] = median_ms(repeat, [&] { cub::DeviceRadixSort::SortKeys(tmp, tmp_bytes, k, k2, (int)n); });
    ms[1] = median_ms(repeat, [&] { cub::DeviceRadixSort::SortPairs(tmp, pair_bytes, k, k2, v, v2, (int)n); });
    ms[2] = median_ms(repeat, [&] { cudaMemcpyAsync(k2, k, n * 4, cudaMemcpyDeviceToDevice); });
    size_t float_bytes = 0;
    cub::DeviceRadixSort::SortKeys(nullptr, float_bytes, f, f2, (int)n);
    if (float_bytes > std::max(tmp_bytes, pair_bytes)) {
        cudaFree(tmp);
        cudaMalloc(&tmp, float_bytes);
    }
    ms[3] = median_ms(repeat, [&] { cub::DeviceRadixSort::SortKeys(tmp, float_bytes, f, f2, (int)n); });
    int err = (int)cudaDeviceSynchronize();
    cudaFree(k);
    cudaFree(k2);
    cudaFree(v);
    cudaFree(v2);
    cudaFree(f);
    cudaFree(f2);
    cudaFree(tmp);
    return err;
}
