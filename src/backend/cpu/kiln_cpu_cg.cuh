// kiln_cpu_cg.cuh: <cooperative_groups.h> for the CPU backend, written into
// the compile's include folder under that name (cpu_headers.c), with
// <cooperative_groups/reduce.h> and <cooperative_groups/scan.h> beside it.
//
// It follows the CPU execution model of kiln_cpu_prelude.cuh: a block's
// threads are fibers of one worker, and warp-level operations synchronise
// the whole block (every thread of the block must reach them, as with
// __syncthreads). A tile of N threads is N consecutive thread ranks, as on
// the GPU; its collectives go through the block's exchange slots. A
// coalesced group is the calling thread alone: CUDA promises nothing about
// which threads are converged at a point, and a group of one is one of the
// answers it allows, which needs no barrier inside divergent code.
#ifndef KILN_CPU_COOPERATIVE_GROUPS_H
#define KILN_CPU_COOPERATIVE_GROUPS_H

namespace cooperative_groups {
namespace kiln_detail {
static inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
template <typename T> static inline void put(unsigned slot, T v) {
    static_assert(sizeof(T) <= 8, "kiln's CPU cooperative groups move values of at most 8 bytes");
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    kiln_cpu_block->exchange[slot] = bits;
}
template <typename T> static inline T get(unsigned slot) {
    T r;
    unsigned long long bits = kiln_cpu_block->exchange[slot];
    memcpy(&r, &bits, sizeof(T));
    return r;
}
} // namespace kiln_detail

// Any group by its size, as a runtime value (tiled_partition(parent, n)).
class thread_group {
  protected:
    unsigned size_;
    unsigned rank_;

  public:
    thread_group(unsigned size, unsigned rank) : size_(size), rank_(rank) {}
    void sync() const {
        if (size_ > 1) __syncthreads();
    }
    unsigned long long thread_rank() const { return rank_; }
    unsigned long long num_threads() const { return size_; }
    unsigned long long size() const { return size_; }
    bool is_valid() const { return size_ != 0; }
};

class thread_block {
  public:
    static void sync() { __syncthreads(); }
    static unsigned thread_rank() { return kiln_cpu_thread_rank(); }
    static unsigned size() { return kiln_detail::block_threads(); }
    static unsigned num_threads() { return kiln_detail::block_threads(); }
    static dim3 group_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    static dim3 thread_index() { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    static dim3 dim_threads() { return blockDim; }
    static dim3 group_dim() { return blockDim; }
    bool is_valid() const { return true; }
    operator thread_group() const { return thread_group(size(), thread_rank()); }
};

static inline thread_block this_thread_block() { return thread_block(); }
// The scratch space CUDA's tiles of more than 32 threads use: none here (a
// block runs on one worker); kiln's CPU tiles go up to 32 threads.
template <unsigned MaxBlockSize = 1024> struct block_tile_memory { unsigned char unused; };
template <unsigned N> static inline thread_block this_thread_block(block_tile_memory<N> &) {
    return thread_block();
}

class grid_group {
  public:
    static unsigned long long num_blocks() { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    static unsigned long long block_rank() {
        return blockIdx.x +
               (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    }
    static unsigned long long thread_rank() {
        return block_rank() * kiln_detail::block_threads() + kiln_cpu_thread_rank();
    }
    static unsigned long long num_threads() { return num_blocks() * kiln_detail::block_threads(); }
    static unsigned long long size() { return num_threads(); }
    static dim3 group_dim() { return blockDim; }
    static dim3 dim_blocks() { return gridDim; }
    static dim3 block_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    bool is_valid() const { return true; }
    // One block: the grid is the block. More: libkiln waits for every thread
    // of every block, which a cooperative launch makes possible by keeping
    // all blocks resident at once (a plain launch runs them in turn, so there
    // the call ends the launch with a fault naming the reason rather than
    // hanging). As at a barrier, nothing shared may stay in registers
    // across the wait, and threadIdx is this fiber's own.
    static void sync() {
        if (num_blocks() == 1) {
            __syncthreads();
            return;
        }
        uint3 saved = threadIdx;
        __asm__ __volatile__("" ::: "memory");
        kiln_cpu_block->grid_sync(kiln_cpu_block->sched);
        __asm__ __volatile__("" ::: "memory");
        threadIdx = saved;
    }
};

static inline grid_group this_grid() { return grid_group(); }

template <unsigned N, typename Parent = void> class thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tiles are a power of two of at most 32 threads");

  public:
    thread_block_tile() {}
    // the same tile, whichever parent type it was cut from
    template <typename Q> thread_block_tile(const thread_block_tile<N, Q> &) {}
    static constexpr unsigned num_threads_value = N;
    static void sync() { __syncthreads(); }
    static unsigned thread_rank() { return kiln_cpu_thread_rank() & (N - 1); }
    static unsigned num_threads() { return N; }
    static unsigned size() { return N; }
    static unsigned meta_group_rank() { return kiln_cpu_thread_rank() / N; }
    static unsigned meta_group_size() { return (kiln_detail::block_threads() + N - 1) / N; }
    bool is_valid() const { return true; }
    template <typename T> T shfl(T v, int src) const { return __shfl_sync(0xffffffffu, v, src, (int)N); }
    template <typename T> T shfl_down(T v, unsigned d) const {
        return __shfl_down_sync(0xffffffffu, v, d, (int)N);
    }
    template <typename T> T shfl_up(T v, unsigned d) const {
        return __shfl_up_sync(0xffffffffu, v, d, (int)N);
    }
    template <typename T> T shfl_xor(T v, unsigned m) const {
        return __shfl_xor_sync(0xffffffffu, v, (int)m, (int)N);
    }
    unsigned ballot(int p) const {
        unsigned warp = __ballot_sync(0xffffffffu, p);
        unsigned shift = (unsigned)kiln_cpu_lane() & ~(N - 1) & 31u;
        return N == 32 ? warp : (warp >> shift) & ((1u << N) - 1u);
    }
    int any(int p) const { return ballot(p) != 0; }
    int all(int p) const { return ballot(!p) == 0; }
    operator thread_group() const { return thread_group(N, thread_rank()); }
};

template <unsigned N, typename ParentT>
static inline thread_block_tile<N, ParentT> tiled_partition(const ParentT &) {
    return thread_block_tile<N, ParentT>();
}
static inline thread_group tiled_partition(const thread_group &parent, unsigned tile) {
    (void)parent;
    return thread_group(tile, tile ? kiln_cpu_thread_rank() % tile : 0);
}
static inline thread_group tiled_partition(const thread_block &parent, unsigned tile) {
    return tiled_partition((thread_group)parent, tile);
}

// The converged threads: the caller alone (see the top of this file).
class coalesced_group {
  public:
    static void sync() {}
    static unsigned thread_rank() { return 0; }
    static unsigned num_threads() { return 1; }
    static unsigned size() { return 1; }
    static unsigned meta_group_rank() { return 0; }
    static unsigned meta_group_size() { return 1; }
    bool is_valid() const { return true; }
    template <typename T> T shfl(T v, int) const { return v; }
    template <typename T> T shfl_down(T v, unsigned) const { return v; }
    template <typename T> T shfl_up(T v, unsigned) const { return v; }
    template <typename T> T shfl_xor(T v, unsigned) const { return v; }
    unsigned ballot(int p) const { return p ? 1u : 0u; }
    int any(int p) const { return p != 0; }
    int all(int p) const { return p != 0; }
    operator thread_group() const { return thread_group(1, 0); }
};

static inline coalesced_group coalesced_threads() { return coalesced_group(); }

template <typename Group> static inline void sync(const Group &g) { g.sync(); }
template <typename Group> static inline unsigned long long thread_rank(const Group &g) {
    return g.thread_rank();
}
template <typename Group> static inline unsigned long long group_size(const Group &g) {
    return g.num_threads();
}

// ---------------------------------------------------------------- reduce and scan
template <typename T> struct plus {
    T operator()(const T &a, const T &b) const { return a + b; }
};
template <typename T> struct less {
    T operator()(const T &a, const T &b) const { return b < a ? b : a; }
};
template <typename T> struct greater {
    T operator()(const T &a, const T &b) const { return a < b ? b : a; }
};
template <typename T> struct bit_and {
    T operator()(const T &a, const T &b) const { return a & b; }
};
template <typename T> struct bit_or {
    T operator()(const T &a, const T &b) const { return a | b; }
};
template <typename T> struct bit_xor {
    T operator()(const T &a, const T &b) const { return a ^ b; }
};

// Every thread of the tile gets op folded over the tile's values in rank
// order: one exchange, two barriers.
template <unsigned N, typename P, typename T, typename Op>
static inline T reduce(const thread_block_tile<N, P> &, T v, Op op) {
    unsigned rank = kiln_cpu_thread_rank(), base = rank & ~(N - 1), n = kiln_detail::block_threads();
    kiln_detail::put(rank, v);
    kiln_cpu_warp_barrier();
    T r = kiln_detail::get<T>(base);
    for (unsigned i = base + 1; i < base + N && i < n; i++) r = op(r, kiln_detail::get<T>(i));
    kiln_cpu_warp_barrier();
    return r;
}
template <typename T, typename Op> static inline T reduce(const coalesced_group &, T v, Op) { return v; }

template <unsigned N, typename P, typename T, typename Op>
static inline T inclusive_scan(const thread_block_tile<N, P> &, T v, Op op) {
    unsigned rank = kiln_cpu_thread_rank(), base = rank & ~(N - 1);
    kiln_detail::put(rank, v);
    kiln_cpu_warp_barrier();
    T r = kiln_detail::get<T>(base);
    for (unsigned i = base + 1; i <= rank; i++) r = op(r, kiln_detail::get<T>(i));
    kiln_cpu_warp_barrier();
    return r;
}
template <unsigned N, typename P, typename T>
static inline T inclusive_scan(const thread_block_tile<N, P> &g, T v) {
    return inclusive_scan(g, v, plus<T>());
}
// The first thread's result is T() (for plus, 0), as CUDA gives for plus.
template <unsigned N, typename P, typename T, typename Op>
static inline T exclusive_scan(const thread_block_tile<N, P> &, T v, Op op) {
    unsigned rank = kiln_cpu_thread_rank(), base = rank & ~(N - 1);
    kiln_detail::put(rank, v);
    kiln_cpu_warp_barrier();
    T r = T();
    for (unsigned i = base; i < rank; i++)
        r = i == base ? kiln_detail::get<T>(i) : op(r, kiln_detail::get<T>(i));
    kiln_cpu_warp_barrier();
    return r;
}
template <unsigned N, typename P, typename T>
static inline T exclusive_scan(const thread_block_tile<N, P> &g, T v) {
    return exclusive_scan(g, v, plus<T>());
}
template <typename T, typename Op> static inline T inclusive_scan(const coalesced_group &, T v, Op) {
    return v;
}
template <typename T> static inline T inclusive_scan(const coalesced_group &, T v) { return v; }
template <typename T, typename Op> static inline T exclusive_scan(const coalesced_group &, T, Op) {
    return T();
}
template <typename T> static inline T exclusive_scan(const coalesced_group &, T) { return T(); }
} // namespace cooperative_groups

#endif
