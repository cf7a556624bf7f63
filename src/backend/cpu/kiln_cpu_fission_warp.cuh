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

// One thread's operand: any trivially copyable value of up to 16 bytes (a
// uint4 through tile.shfl). A wider one fails to compile, and the module
// then runs its barrier kernels on fibers.
struct alignas(16) kiln_fis_wslot {
    unsigned char b[16];
};
template <typename T> static inline KILN_FIS_INLINE void kiln_fis_wput(kiln_fis_wslot &s, const T &v) {
    static_assert(sizeof(T) <= sizeof(kiln_fis_wslot), "a warp function's operand of more than 16 bytes");
    __builtin_memcpy(s.b, &v, sizeof(T));
}
template <typename T> static inline KILN_FIS_INLINE T kiln_fis_wget(const kiln_fis_wslot &s) {
    T v;
    __builtin_memcpy(&v, s.b, sizeof(T));
    return v;
}
// The operand's type as the fiber path's templates deduce it (by value).
template <typename T> T kiln_fis_wval(const T &);
// A tile's size (thread_block_tile<N>::num_threads_value).
template <typename G> static constexpr int kiln_fis_tile_n(const G &) { return (int)G::num_threads_value; }

// Thread t reads lane src_lane of its warp: its own value where that lane
// is past the block's last thread.
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_lane(const kiln_fis_wslot *wx, int t, int n, int src_lane) {
    unsigned src = ((unsigned)t & ~31u) + (unsigned)src_lane;
    return kiln_fis_wget<T>(wx[src < (unsigned)n ? (int)src : t]);
}
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_shfl(const kiln_fis_wslot *wx, int t, int n, T *, int width,
                                              int src) {
    int lane = t & 31;
    return kiln_fis_lane<T>(wx, t, n, (lane & ~(width - 1)) + (src & (width - 1)));
}
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_shfl_xor(const kiln_fis_wslot *wx, int t, int n, T *, int width,
                                                  int m) {
    int lane = t & 31, s = lane ^ m;
    return kiln_fis_lane<T>(wx, t, n, (s & ~(width - 1)) == (lane & ~(width - 1)) ? s : lane);
}
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_shfl_down(const kiln_fis_wslot *wx, int t, int n, T *, int width,
                                                   unsigned d) {
    int lane = t & 31, s = lane + (int)d;
    return kiln_fis_lane<T>(wx, t, n, (s & ~(width - 1)) == (lane & ~(width - 1)) ? s : lane);
}
template <typename T>
static inline KILN_FIS_INLINE T kiln_fis_shfl_up(const kiln_fis_wslot *wx, int t, int n, T *, int width,
                                                 unsigned d) {
    int lane = t & 31, s = lane - (int)d;
    return kiln_fis_lane<T>(wx, t, n, s >= (lane & ~(width - 1)) ? s : lane);
}
// The warp's lanes whose int operand is non-zero (zero: `zero`), one bit each.
static inline KILN_FIS_INLINE unsigned kiln_fis_votes(const kiln_fis_wslot *wx, int t, int n, int zero) {
    unsigned base = (unsigned)t & ~31u, r = 0;
    for (unsigned i = base; i < base + 32 && i < (unsigned)n; i++)
        if ((kiln_fis_wget<int>(wx[i]) != 0) != (zero != 0)) r |= 1u << (i - base);
    return r;
}
// __ballot_sync's mask; a tile (tile != 0, width N) sees its own N bits.
static inline KILN_FIS_INLINE unsigned kiln_fis_cut(unsigned warp, int t, int width, unsigned mask,
                                                    int tile) {
    if (!tile) return warp & mask;
    if (width == 32) return warp;
    unsigned shift = (unsigned)(t & 31) & ~((unsigned)width - 1) & 31u;
    return (warp >> shift) & ((1u << width) - 1u);
}
static inline KILN_FIS_INLINE unsigned kiln_fis_ballot(const kiln_fis_wslot *wx, int t, int n, int width,
                                                       unsigned mask, int tile) {
    return kiln_fis_cut(kiln_fis_votes(wx, t, n, 0), t, width, mask, tile);
}
static inline KILN_FIS_INLINE int kiln_fis_any(const kiln_fis_wslot *wx, int t, int n, int width,
                                               unsigned mask, int tile) {
    return kiln_fis_cut(kiln_fis_votes(wx, t, n, 0), t, width, mask, tile) != 0;
}
static inline KILN_FIS_INLINE int kiln_fis_all(const kiln_fis_wslot *wx, int t, int n, int width,
                                               unsigned mask, int tile) {
    return kiln_fis_cut(kiln_fis_votes(wx, t, n, 1), t, width, mask, tile) == 0;
}
// cg::reduce over a tile: op folded over its lanes in rank order.
template <typename T, typename Op>
static inline KILN_FIS_INLINE T kiln_fis_reduce(const kiln_fis_wslot *wx, int t, int n, T *, int width,
                                                Op op) {
    unsigned base = (unsigned)t & ~((unsigned)width - 1);
    T r = kiln_fis_wget<T>(wx[base]);
    for (unsigned i = base + 1; i < base + (unsigned)width && i < (unsigned)n; i++)
        r = op(r, kiln_fis_wget<T>(wx[i]));
    return r;
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
