// kiln_cpu_prelude_sync.cuh: barriers, fences, warp functions and shuffles,
// and device-side assert and trap, for CUDA C on the CPU. Follows
// kiln_cpu_prelude.cuh (the execution model is described there).

// ---------------------------------------------------------------- barriers and fences
// The compiler must not keep shared data in registers across a switch: the
// asm memory clobbers make the switch a full compiler barrier.
static inline int kiln_cpu_barrier(int predicate, int *arrivals) {
    uint3 saved = threadIdx;
    __asm__ __volatile__("" ::: "memory");
    int count = kiln_cpu_block->barrier(kiln_cpu_block->sched, predicate, arrivals);
    __asm__ __volatile__("" ::: "memory");
    threadIdx = saved;
    return count;
}
static inline void __syncthreads() {
    int n;
    (void)kiln_cpu_barrier(0, &n);
}
static inline int __syncthreads_count(int p) {
    int n;
    return kiln_cpu_barrier(p != 0, &n);
}
static inline int __syncthreads_and(int p) {
    int n;
    return kiln_cpu_barrier(p != 0, &n) == n;
}
static inline int __syncthreads_or(int p) {
    int n;
    return kiln_cpu_barrier(p != 0, &n) != 0;
}
// On fibers warps are not modelled: __syncwarp is a full block barrier
// (stronger than CUDA's, so correct code stays correct; a __syncwarp inside a
// branch taken by part of the block is not supported). Kernels on loop
// fission exchange among a warp's lanes instead (kiln_cpu_fission_warp.cuh).
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    (void)mask;
    __syncthreads();
}
// The barriers of warp functions: the whole block's, like __syncthreads,
// but marked, so that a shuffle that only part of the block reaches while
// the rest waits at __syncthreads is reported instead of mismatched.
static inline void kiln_cpu_warp_barrier() {
    int n;
    (void)kiln_cpu_barrier(KILN_CPU_BARRIER_WARP, &n);
}
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned __activemask() { return 0xffffffffu; }

static inline unsigned kiln_cpu_thread_rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
// Warp shuffles through the block's exchange slots: write, barrier, read,
// barrier. Like __syncwarp they synchronise the whole block. A value wider
// than a slot (cooperative groups' tile.shfl takes any trivially copyable
// type, a uint4 say, as CUDA's moves it in pieces) goes 8 bytes at a time.
template <typename T> static inline T kiln_cpu_shfl(T v, int src_lane_in_warp) {
    unsigned rank = kiln_cpu_thread_rank(), base = rank & ~31u;
    unsigned src = base + (unsigned)src_lane_in_warp;
    unsigned n = blockDim.x * blockDim.y * blockDim.z;
    unsigned char in[sizeof(T)], out[sizeof(T)];
    memcpy(in, &v, sizeof(T));
    memcpy(out, in, sizeof(T));
    for (size_t off = 0; off < sizeof(T); off += 8) {
        size_t len = sizeof(T) - off < 8 ? sizeof(T) - off : 8;
        unsigned long long bits = 0;
        memcpy(&bits, in + off, len);
        kiln_cpu_block->exchange[rank] = bits;
        kiln_cpu_warp_barrier();
        if (src < n) {
            bits = kiln_cpu_block->exchange[src];
            memcpy(out + off, &bits, len);
        }
        kiln_cpu_warp_barrier();
    }
    T r = v;
    memcpy(&r, out, sizeof(T));
    return r;
}
static inline int kiln_cpu_lane() { return (int)(kiln_cpu_thread_rank() & 31u); }
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    (void)mask;
    int lane = kiln_cpu_lane();
    return kiln_cpu_shfl(v, (lane & ~(width - 1)) + (src & (width - 1)));
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
    (void)mask;
    int lane = kiln_cpu_lane(), s = lane ^ m;
    return kiln_cpu_shfl(v, (s & ~(width - 1)) == (lane & ~(width - 1)) ? s : lane);
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    (void)mask;
    int lane = kiln_cpu_lane(), s = lane + (int)d;
    return kiln_cpu_shfl(v, (s & ~(width - 1)) == (lane & ~(width - 1)) ? s : lane);
}
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
    (void)mask;
    int lane = kiln_cpu_lane(), s = lane - (int)d;
    return kiln_cpu_shfl(v, s >= (lane & ~(width - 1)) ? s : lane);
}
static inline unsigned __ballot_sync(unsigned mask, int p) {
    unsigned long long bit = p ? 1ull << kiln_cpu_lane() : 0;
    unsigned rank = kiln_cpu_thread_rank(), base = rank & ~31u;
    unsigned n = blockDim.x * blockDim.y * blockDim.z;
    kiln_cpu_block->exchange[rank] = bit;
    kiln_cpu_warp_barrier();
    unsigned r = 0;
    for (unsigned i = base; i < base + 32 && i < n; i++) r |= (unsigned)kiln_cpu_block->exchange[i];
    kiln_cpu_warp_barrier();
    return r & mask;
}
static inline int __any_sync(unsigned mask, int p) { return __ballot_sync(mask, p) != 0; }
static inline int __all_sync(unsigned mask, int p) { return __ballot_sync(mask, !p) == 0; }

// A failed device assert ends the launch with KILN_ERR_DEVICE_FAULT (like
// CUDA) instead of aborting the process: libkiln's trap jumps back to the
// worker (cpu_fault.h). The launch's message adds kernel, block and thread.
static inline void kiln_cpu_trap(const char *file, int line, const char *what) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s:%d: %s", file, line, what);
    kiln_cpu_block->trap(kiln_cpu_block->sched, msg);
}
// <assert.h> included again by the kernel brings glibc's assert back; its
// failure path lands here (hidden: the module's own, not the process's).
extern "C" __attribute__((visibility("hidden"))) void
__assert_fail(const char *e, const char *file, unsigned int line, const char *func) noexcept {
    char what[400];
    snprintf(what, sizeof what, "assertion failed: %s (in %s)", e, func);
    kiln_cpu_trap(file, (int)line, what);
    abort(); // reached only outside a launch
}
#undef assert
#define assert(e) ((e) ? (void)0 : kiln_cpu_trap(__FILE__, __LINE__, "assertion failed: " #e))
#define __trap() kiln_cpu_trap(__FILE__, __LINE__, "__trap() called")
#define __brkpt() ((void)0)
