// kiln_cpu_fission_warp.cuh: warp functions and shared-memory atomics for
// kernels on the CPU backend's fission path (cpu_fission_warp.c writes the
// calls). Comes after kiln_cpu_fission.cuh, before the user's source.
//
// A warp function's statement is split in two thread loops: the first
// stores each thread's operand in its slot of kiln_wx (one per thread of
// the block, declared in the kernel's body), the second reads the slots of
// its warp's lanes. Lanes, widths and out-of-range sources follow the fiber
// path's functions (kiln_cpu_prelude.cuh, kiln_cpu_cg.cuh) step for step, so
// both paths give the same bits.

// The threads' operands, in an array of their size (4, 8 or 16 bytes), so
// that the storing loop and the shuffles' loads are contiguous and
// vectorise. Any trivially copyable value of up to 16 bytes (a uint4
// through tile.shfl); a wider one fails to compile, and the module then
// runs its barrier kernels on fibers. 32 slots of padding at each end (see
// kiln_fis_at).
struct alignas(16) kiln_fis_wslot {
    unsigned char b[16];
};
struct kiln_fis_wx {
    unsigned w4[KILN_CPU_FIS_MAX_THREADS + 64];
    unsigned long long w8[KILN_CPU_FIS_MAX_THREADS + 64];
    kiln_fis_wslot w16[KILN_CPU_FIS_MAX_THREADS + 64];
};
// The state of a kernel with warp functions: the operands, and the last
// vote or reduce computed (its warp's first rank, or -1, and its value).
// The padding is zeroed (what a load there reads is never used).
static inline void kiln_fis_wx_pads(kiln_fis_wx &x) {
    const int end = KILN_CPU_FIS_MAX_THREADS + 32;
    __builtin_memset(x.w4, 0, 32 * sizeof *x.w4);
    __builtin_memset(x.w4 + end, 0, 32 * sizeof *x.w4);
    __builtin_memset(x.w8, 0, 32 * sizeof *x.w8);
    __builtin_memset(x.w8 + end, 0, 32 * sizeof *x.w8);
    __builtin_memset(x.w16, 0, 32 * sizeof *x.w16);
    __builtin_memset(x.w16 + end, 0, 32 * sizeof *x.w16);
}
#define KILN_FIS_WARP_STATE                                                                                  \
    kiln_fis_wx kiln_wx;                                                                                     \
    kiln_fis_wx_pads(kiln_wx);                                                                               \
    int kiln_wc = -1;                                                                                        \
    kiln_fis_wslot kiln_wcv;
template <typename T> static inline KILN_FIS_INLINE void kiln_fis_wput(kiln_fis_wx &x, int t, const T &v) {
    static_assert(sizeof(T) <= sizeof(kiln_fis_wslot), "a warp function's operand of more than 16 bytes");
    if constexpr (sizeof(T) <= 4)
        __builtin_memcpy(&x.w4[t + 32], &v, sizeof(T));
    else if constexpr (sizeof(T) <= 8)
        __builtin_memcpy(&x.w8[t + 32], &v, sizeof(T));
    else
        __builtin_memcpy(&x.w16[t + 32], &v, sizeof(T));
}
template <typename T> static inline KILN_FIS_INLINE T kiln_fis_wget(const kiln_fis_wx &x, int t) {
    T v;
    if constexpr (sizeof(T) <= 4)
        __builtin_memcpy(&v, &x.w4[t + 32], sizeof(T));
    else if constexpr (sizeof(T) <= 8)
        __builtin_memcpy(&v, &x.w8[t + 32], sizeof(T));
    else
        __builtin_memcpy(&v, &x.w16[t + 32], sizeof(T));
    return v;
}
// The operand's type as the fiber path's templates deduce it (by value).
template <typename T> T kiln_fis_wval(const T &);
// A tile's size (thread_block_tile<N>::num_threads_value).
template <typename G> static constexpr int kiln_fis_tile_n(const G &) { return (int)G::num_threads_value; }

// A thread's slot is at t + 32 (kiln_fis_wput): loads of t - 31 ... t + 31
// stay inside the array for every thread, and the shuffles by a constant
// distance load lane t + d for all threads (contiguous, so the loop
// vectorises) and select it where that lane exists.
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_at(const kiln_fis_wx &x, int t, int n, unsigned at) {
    return kiln_fis_wget<T>(x, at < (unsigned)n ? (int)at : t);
}
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_shfl(const kiln_fis_wx &x, int t, int n, T *, int width, int src) {
    int lane = t & 31;
    return kiln_fis_at<T>(x, t, n,
                          ((unsigned)t & ~31u) + (unsigned)((lane & ~(width - 1)) + (src & (width - 1))));
}
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_shfl_xor(const kiln_fis_wx &x, int t, int n, T *, int width, int m) {
    int lane = t & 31, s = lane ^ m;
    bool ok = (s & ~(width - 1)) == (lane & ~(width - 1));
    return kiln_fis_at<T>(x, t, n, ((unsigned)t & ~31u) + (unsigned)(ok ? s : lane));
}
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_shfl_down(const kiln_fis_wx &x, int t, int n, T *, int width,
                                                   unsigned d) {
    int lane = t & 31, s = lane + (int)d;
    bool ok = (s & ~(width - 1)) == (lane & ~(width - 1));
    if (d >= 32u) return kiln_fis_at<T>(x, t, n, ((unsigned)t & ~31u) + (unsigned)(ok ? s : lane));
    T own = kiln_fis_wget<T>(x, t), other = kiln_fis_wget<T>(x, t + (int)d);
    return ok && t + (int)d < n ? other : own;
}
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_shfl_up(const kiln_fis_wx &x, int t, int n, T *, int width,
                                                 unsigned d) {
    int lane = t & 31, s = lane - (int)d;
    bool ok = s >= (lane & ~(width - 1));
    if (d >= 32u) return kiln_fis_at<T>(x, t, n, ((unsigned)t & ~31u) + (unsigned)(ok ? s : lane));
    T own = kiln_fis_wget<T>(x, t), other = kiln_fis_wget<T>(x, t - (int)d);
    return ok ? other : own; // t - d < t < n
}
// The warp's lanes whose int operand is non-zero, one bit each, computed
// for the warp's first lane the reading loop reaches and kept (kiln_wc) for
// the others; then __ballot_sync's mask, or a tile's own N bits.
static inline KILN_FIS_INLINE unsigned kiln_fis_votes(const kiln_fis_wx &x, int t, int n, int &wc,
                                                      kiln_fis_wslot &wcv, unsigned *valid) {
    int base = t & ~31;
    unsigned bits = 0, lanes = n - base >= 32 ? 0xffffffffu : (1u << (n - base)) - 1u;
    if (wc == base) {
        __builtin_memcpy(&bits, wcv.b, sizeof bits);
    } else {
        if (n - base >= 32)
            for (int i = 0; i < 32; i++) bits |= (unsigned)(x.w4[base + 32 + i] != 0) << i;
        else
            for (int i = 0; i < n - base; i++) bits |= (unsigned)(x.w4[base + 32 + i] != 0) << i;
        __builtin_memcpy(wcv.b, &bits, sizeof bits);
        wc = base;
    }
    *valid = lanes;
    return bits;
}
static inline KILN_FIS_INLINE unsigned kiln_fis_cut(unsigned warp, int t, int width, unsigned mask,
                                                    int tile) {
    if (!tile) return warp & mask;
    if (width == 32) return warp;
    unsigned shift = (unsigned)(t & 31) & ~((unsigned)width - 1) & 31u;
    return (warp >> shift) & ((1u << width) - 1u);
}
static inline KILN_FIS_INLINE unsigned kiln_fis_ballot(const kiln_fis_wx &x, int t, int n, int &wc,
                                                       kiln_fis_wslot &wcv, int width, unsigned mask,
                                                       int tile) {
    unsigned valid;
    return kiln_fis_cut(kiln_fis_votes(x, t, n, wc, wcv, &valid), t, width, mask, tile);
}
static inline KILN_FIS_INLINE int kiln_fis_any(const kiln_fis_wx &x, int t, int n, int &wc,
                                               kiln_fis_wslot &wcv, int width, unsigned mask, int tile) {
    return kiln_fis_ballot(x, t, n, wc, wcv, width, mask, tile) != 0;
}
// all(p): no lane with !p, as the fiber path's ballot of !p asks.
static inline KILN_FIS_INLINE int kiln_fis_all(const kiln_fis_wx &x, int t, int n, int &wc,
                                               kiln_fis_wslot &wcv, int width, unsigned mask, int tile) {
    unsigned valid, bits = kiln_fis_votes(x, t, n, wc, wcv, &valid);
    return kiln_fis_cut(~bits & valid, t, width, mask, tile) == 0;
}
// cg::reduce over a tile: op folded over its lanes in rank order, once per
// tile (kept in kiln_wcv for its other lanes).
template <typename T, typename Op>
static inline KILN_FIS_INLINE T kiln_fis_reduce(const kiln_fis_wx &x, int t, int n, int &wc,
                                                kiln_fis_wslot &wcv, T *, int width, Op op) {
    int base = t & ~(width - 1);
    T r;
    if (wc == base) {
        __builtin_memcpy(&r, wcv.b, sizeof(T));
        return r;
    }
    r = kiln_fis_wget<T>(x, base);
    for (int i = base + 1; i < base + width && i < n; i++) r = op(r, kiln_fis_wget<T>(x, i));
    __builtin_memcpy(wcv.b, &r, sizeof(T));
    wc = base;
    return r;
}

// cg::inclusive_scan (Incl) and exclusive_scan over a tile: op folded over
// the lanes of the tile up to this one, in rank order; an exclusive scan's
// first lane gets T() (kiln_cpu_cg.cuh's order and values).
template <int Incl, typename T, typename Op>
static inline KILN_FIS_INLINE T kiln_fis_scan(const kiln_fis_wx &x, int t, int n, T *, int width, Op op) {
    (void)n;
    int base = t & ~(width - 1);
    if (Incl) {
        T r = kiln_fis_wget<T>(x, base);
        for (int i = base + 1; i <= t; i++) r = op(r, kiln_fis_wget<T>(x, i));
        return r;
    }
    T r = T();
    for (int i = base; i < t; i++) r = i == base ? kiln_fis_wget<T>(x, i) : op(r, kiln_fis_wget<T>(x, i));
    return r;
}

// __syncthreads_count (Kind 0), _and (1), _or (2): the block's threads
// whose predicate holds, among those still running (not in done, when the
// kernel returns early), as the fiber path's barrier counts arrivals; once
// per block, kept in kiln_wcv for the other threads.
template <int Kind>
static inline KILN_FIS_INLINE int kiln_fis_block_vote(const kiln_fis_wx &x, int t, int n, int &wc,
                                                      kiln_fis_wslot &wcv, const unsigned char *done) {
    (void)t;
    int r[2];
    if (wc == -2) {
        __builtin_memcpy(r, wcv.b, sizeof r);
    } else {
        r[0] = r[1] = 0;
        for (int i = 0; i < n; i++) {
            if (done && done[i]) continue;
            r[0] += x.w4[i + 32] != 0;
            r[1]++;
        }
        __builtin_memcpy(wcv.b, r, sizeof r);
        wc = -2;
    }
    return Kind == 0 ? r[0] : Kind == 1 ? r[0] == r[1] : r[0] != 0;
}

// Atomics on the block's own __shared__ memory (cpu_fission_warp.c finds
// them): a block runs on one worker from start to end and no other block
// sees its shared memory, so nothing else can touch the word between the
// read and the write, and a plain read-modify-write (no lock prefix, no
// fence) gives what the atomic would. Same results, same return values.
template <typename T, typename U> static inline KILN_FIS_INLINE T kiln_fis_block_atomicAdd(T *p, U v) {
    T old = *p;
    *p = old + (T)v;
    return old;
}
template <typename T, typename U> static inline KILN_FIS_INLINE T kiln_fis_block_atomicSub(T *p, U v) {
    T old = *p;
    *p = old - (T)v;
    return old;
}
template <typename T, typename U> static inline KILN_FIS_INLINE T kiln_fis_block_atomicExch(T *p, U v) {
    T old = *p;
    *p = (T)v;
    return old;
}
template <typename T, typename U> static inline KILN_FIS_INLINE T kiln_fis_block_atomicMin(T *p, U v) {
    T old = *p;
    *p = (T)v < old ? (T)v : old;
    return old;
}
template <typename T, typename U> static inline KILN_FIS_INLINE T kiln_fis_block_atomicMax(T *p, U v) {
    T old = *p;
    *p = old < (T)v ? (T)v : old;
    return old;
}
template <typename T, typename U> static inline KILN_FIS_INLINE T kiln_fis_block_atomicAnd(T *p, U v) {
    T old = *p;
    *p = old & (T)v;
    return old;
}
template <typename T, typename U> static inline KILN_FIS_INLINE T kiln_fis_block_atomicOr(T *p, U v) {
    T old = *p;
    *p = old | (T)v;
    return old;
}
template <typename T, typename U> static inline KILN_FIS_INLINE T kiln_fis_block_atomicXor(T *p, U v) {
    T old = *p;
    *p = old ^ (T)v;
    return old;
}
static inline KILN_FIS_INLINE unsigned kiln_fis_block_atomicInc(unsigned *p, unsigned v) {
    unsigned old = *p;
    *p = old >= v ? 0u : old + 1u;
    return old;
}
static inline KILN_FIS_INLINE unsigned kiln_fis_block_atomicDec(unsigned *p, unsigned v) {
    unsigned old = *p;
    *p = (old == 0u || old > v) ? v : old - 1u;
    return old;
}
template <typename T, typename U, typename V>
static inline KILN_FIS_INLINE T kiln_fis_block_atomicCAS(T *p, U compare, V v) {
    T old = *p;
    if (old == (T)compare) *p = (T)v;
    return old;
}
