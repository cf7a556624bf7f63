// sort_std.cpp: the C++ baselines of kiln_sort_bench: std::sort on one
// thread, and std::sort on every core (the array cut into one part per
// thread, each sorted by std::sort, then merged pairwise in parallel), the
// usual hand-written parallel sort where std::execution::par has no
// parallel backend (libstdc++ without TBB runs it on one thread).
#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

namespace {

template <class T> void parallel_sort(T *x, long long n, int threads) {
    if (threads < 1) threads = 1;
    std::vector<long long> cut(threads + 1);
    for (int t = 0; t <= threads; t++) cut[t] = n * t / threads;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++) pool.emplace_back([=, &cut] { std::sort(x + cut[t], x + cut[t + 1]); });
    for (auto &th : pool) th.join();
    std::vector<T> tmp(x, x + n); // merge rounds ping-pong between x and tmp
    T *src = x, *dst = tmp.data();
    for (int width = 1; width < threads; width *= 2) {
        pool.clear();
        for (int t = 0; t < threads; t += 2 * width) {
            long long lo = cut[t], mid = cut[std::min(t + width, threads)],
                      hi = cut[std::min(t + 2 * width, threads)];
            pool.emplace_back([=] { std::merge(src + lo, src + mid, src + mid, src + hi, dst + lo); });
        }
        for (auto &th : pool) th.join();
        std::swap(src, dst);
    }
    if (src != x) std::copy(src, src + n, x);
}

} // namespace

extern "C" void kiln_bench_std_sort_u32(uint32_t *x, long long n) { std::sort(x, x + n); }
extern "C" void kiln_bench_par_sort_u32(uint32_t *x, long long n) {
    parallel_sort(x, n, (int)std::max(1u, std::thread::hardware_concurrency()));
}
// key-value pairs: the value moves with its key (keys compared only)
extern "C" void kiln_bench_par_sort_pairs_u32(uint64_t *kv, long long n) {
    // a key in the high half: ordering the 64-bit word orders the keys, and
    // equal keys by value (their original order when values are indices)
    parallel_sort(kv, n, (int)std::max(1u, std::thread::hardware_concurrency()));
}
