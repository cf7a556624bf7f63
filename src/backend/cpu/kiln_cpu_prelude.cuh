// kiln_cpu_prelude.cuh: put in front of every kernel the CPU backend compiles,
// before kiln_complex.cuh and kiln_signature.cuh, so that CUDA C builds with
// the host C++ compiler (c++17). It gives kernels CUDA's built-in variables,
// qualifiers, atomics, vector types and math, and the runners (at the end)
// that libkiln calls. Only light C headers: this text is parsed on every cold
// compile, so <iostream>, <complex>, <atomic> and friends stay out.
//
// Execution model (cpu_launch.c drives it):
//  - blocks are spread over worker threads; one worker runs one block at a
//    time, so per-block state (blockIdx, __shared__ variables) is thread_local;
//  - kernels without barriers run a block as a plain loop over its threads
//    (kiln_cpu_run_fast), the kernel inlined into the loop;
//  - kernels with barriers run each CUDA thread of a block as a fiber on the
//    worker (kiln_cpu_run_thread); __syncthreads() switches to the next fiber.
//    All fibers of a block share the worker's OS thread, hence its
//    thread_locals, so only threadIdx needs saving around a switch.
#define KILN_CPU 1
// GCC 13 (13.3 is Ubuntu 24.04's c++) miscompiles -O3 loop unswitching on a
// switch (GCC bug 109934): it sent a loop's switch to the wrong case in
// kiln's own tests, and user kernels are full of such loops once
// the CPU backend wraps them in thread loops. Off for GCC 13 only: other
// compilers keep unswitching, which lifts uniform branches out of the loops.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 13
#pragma GCC optimize("no-unswitch-loops")
#endif
#include <assert.h>
#include <float.h>
#include <limits.h>
#ifdef KILN_CPU_LIGHT_MATH
// Sources that include no header and name nothing in std:: get glibc's C
// <math.h> without libstdc++'s <cmath>, whose templates GCC instantiates at
// the end of every translation unit (a quarter of a small module's compile,
// docs/PERF_NOTES.md "Cold first calls"); the C++ overloads that CUDA's
// headers give (sqrt(float) is float) are declared below. cpu_compile.c
// chooses the variant per module.
#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#include <math.h>
#undef _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#else
#include <math.h>
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// CUDA's device clock() (clock_t, as nvcc's and NVRTC's built-ins give it);
// the host's is the process's CPU time, which counts up as a cycle counter does.
#include <time.h>

#ifdef KILN_CPU_LIGHT_MATH
// ---------------------------------------------------------------- overloads <cmath> would give
// float and long double overloads; integers (and mixed operands) computed as
// double, long double when one operand is: libstdc++'s rules.
template <typename T> struct kiln_lm_int {};
#define KILN_LM_INT_(T)                                                                                      \
    template <> struct kiln_lm_int<T> { typedef double type; };
KILN_LM_INT_(bool)
KILN_LM_INT_(char)
KILN_LM_INT_(signed char)
KILN_LM_INT_(unsigned char)
KILN_LM_INT_(short)
KILN_LM_INT_(unsigned short)
KILN_LM_INT_(int)
KILN_LM_INT_(unsigned int)
KILN_LM_INT_(long)
KILN_LM_INT_(unsigned long)
KILN_LM_INT_(long long)
KILN_LM_INT_(unsigned long long)
#undef KILN_LM_INT_
// In the return type, so that a type that is no number drops the template.
template <typename A, typename B> using kiln_lm_2 = decltype((A)0 + (B)0 + 0.0);
#define KILN_LM1F_(N)                                                                                        \
    static inline float N(float x) { return N##f(x); }                                                       \
    static inline long double N(long double x) { return N##l(x); }                                           \
    template <typename T> static inline typename kiln_lm_int<T>::type N(T x) { return N((double)x); }
#define KILN_LM2_(N)                                                                                         \
    static inline float N(float a, float b) { return N##f(a, b); }                                           \
    static inline long double N(long double a, long double b) { return N##l(a, b); }                         \
    template <typename A, typename B> static inline kiln_lm_2<A, B> N(A a, B b) {                            \
        return N((kiln_lm_2<A, B>)a, (kiln_lm_2<A, B>)b);                                                    \
    }
KILN_LM1F_(acos)
KILN_LM1F_(asin) KILN_LM1F_(atan) KILN_LM1F_(cos) KILN_LM1F_(sin) KILN_LM1F_(tan) KILN_LM1F_(acosh)
    KILN_LM1F_(asinh) KILN_LM1F_(atanh) KILN_LM1F_(cosh) KILN_LM1F_(sinh) KILN_LM1F_(tanh) KILN_LM1F_(exp)
        KILN_LM1F_(exp2) KILN_LM1F_(expm1) KILN_LM1F_(log) KILN_LM1F_(log10) KILN_LM1F_(log1p)
            KILN_LM1F_(log2) KILN_LM1F_(logb) KILN_LM1F_(cbrt) KILN_LM1F_(sqrt) KILN_LM1F_(erf)
                KILN_LM1F_(erfc) KILN_LM1F_(lgamma) KILN_LM1F_(tgamma) KILN_LM1F_(ceil) KILN_LM1F_(floor)
                    KILN_LM1F_(nearbyint) KILN_LM1F_(rint) KILN_LM1F_(round) KILN_LM1F_(trunc)
                        KILN_LM1F_(fabs)
#undef KILN_LM1F_
    // The long double overloads of these return their own types.
    static inline int ilogb(float x) {
    return ilogbf(x);
}
static inline long lrint(float x) { return lrintf(x); }
static inline long lround(float x) { return lroundf(x); }
static inline long long llrint(float x) { return llrintf(x); }
static inline long long llround(float x) { return llroundf(x); }
template <typename T, typename kiln_lm_int<T>::type * = nullptr> static inline int ilogb(T x) {
    return ilogb((double)x);
}
template <typename T, typename kiln_lm_int<T>::type * = nullptr> static inline long lrint(T x) {
    return lrint((double)x);
}
template <typename T, typename kiln_lm_int<T>::type * = nullptr> static inline long lround(T x) {
    return lround((double)x);
}
template <typename T, typename kiln_lm_int<T>::type * = nullptr> static inline long long llrint(T x) {
    return llrint((double)x);
}
template <typename T, typename kiln_lm_int<T>::type * = nullptr> static inline long long llround(T x) {
    return llround((double)x);
}
KILN_LM2_(atan2)
KILN_LM2_(pow) KILN_LM2_(fmod) KILN_LM2_(remainder) KILN_LM2_(copysign) KILN_LM2_(nextafter) KILN_LM2_(fdim)
    KILN_LM2_(fmax) KILN_LM2_(fmin) KILN_LM2_(hypot)
#undef KILN_LM2_
        static inline float fma(float a, float b, float c) {
    return fmaf(a, b, c);
}
static inline long double fma(long double a, long double b, long double c) { return fmal(a, b, c); }
static inline float frexp(float x, int *e) { return frexpf(x, e); }
static inline float ldexp(float x, int e) { return ldexpf(x, e); }
static inline float modf(float x, float *i) { return modff(x, i); }
static inline float scalbn(float x, int e) { return scalbnf(x, e); }
static inline float scalbln(float x, long e) { return scalblnf(x, e); }
static inline float remquo(float a, float b, int *q) { return remquof(a, b, q); }
static inline float nexttoward(float x, long double y) { return nexttowardf(x, y); }
#endif

// ---------------------------------------------------------------- qualifiers
// Kernels are always inlined into the runners: the fast path wants the body in
// the thread loop, where the compiler can hoist what does not depend on threadIdx.
#define __global__ inline __attribute__((always_inline))
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
// One worker runs one block at a time and the block's fibers share its OS
// thread, so a thread_local is exactly "one per block".
#define __shared__ static thread_local
#define KILN_SIG_STORAGE __attribute__((__visibility__("default")))
#define KILN_HD
#define KILN_CPU_EXPORT extern "C" __attribute__((__visibility__("default")))

// ---------------------------------------------------------------- ABI with libkiln
// Mirrors kiln_cpu_block_abi in cpu_abi.h; KILN_CPU_ABI_VERSION must match.
#define KILN_CPU_ABI_VERSION 4
#define KILN_CPU_BARRIER_WARP (1 << 30)
struct kiln_cpu_block_abi {
    uint32_t grid[3];
    uint32_t block[3];
    void *const *args;
    void *dyn_shared;
    unsigned long long dyn_shared_bytes;
    unsigned long long *exchange; // one slot per thread, for warp shuffles
    int (*barrier)(void *sched, int predicate, int *arrivals);
    void (*trap)(void *sched, const char *message);
    void *sched;
    void (*grid_sync)(void *sched);
};
KILN_CPU_EXPORT const int kiln_cpu_abi_version = KILN_CPU_ABI_VERSION;

// ---------------------------------------------------------------- built-in variables
struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};
// Launch-wide values are plain globals, set once per launch by
// kiln_cpu_begin before any worker starts (libkiln runs one launch at a time
// per loaded module): a thread_local read in a dlopen'ed module costs a call
// to __tls_get_addr, and kernels read blockDim/gridDim inside their loops.
static thread_local uint3 threadIdx;
static thread_local uint3 blockIdx;
static dim3 blockDim;
static dim3 gridDim;
static thread_local const kiln_cpu_block_abi *kiln_cpu_block;
static constexpr int warpSize = 32;

// `extern __shared__ T name[];` is rewritten by the backend (keeping line
// numbers) into `kiln_dyn_shared<T> name;`: every such array starts at the
// block's dynamic shared buffer, as on the GPU. The proxy converts to any
// pointer type because CUDA code casts the buffer freely.
template <typename T> struct kiln_dyn_shared {
    T *get() const { return (T *)kiln_cpu_block->dyn_shared; }
    operator T *() const { return get(); }
    template <typename U> explicit operator U *() const { return (U *)get(); }
    T &operator[](long long i) const { return get()[i]; }
    T &operator*() const { return *get(); }
    T *operator+(long long i) const { return get() + i; }
    T *operator-(long long i) const { return get() - i; }
};

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

// ---------------------------------------------------------------- atomics
// Real atomics: blocks run on several OS threads. Relaxed order, as CUDA's.
#define KILN_ATOMIC_INT_(T)                                                                                  \
    static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }              \
    static inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }              \
    static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }            \
    static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }              \
    static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }                \
    static inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }              \
    static inline T atomicCAS(T *p, T cmp, T v) {                                                            \
        __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);                  \
        return cmp;                                                                                          \
    }                                                                                                        \
    static inline T atomicMin(T *p, T v) {                                                                   \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                        \
        while (v < old &&                                                                                    \
               !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {         \
        }                                                                                                    \
        return old;                                                                                          \
    }                                                                                                        \
    static inline T atomicMax(T *p, T v) {                                                                   \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                        \
        while (v > old &&                                                                                    \
               !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {         \
        }                                                                                                    \
        return old;                                                                                          \
    }
KILN_ATOMIC_INT_(int)
KILN_ATOMIC_INT_(unsigned int)
KILN_ATOMIC_INT_(unsigned long long)
KILN_ATOMIC_INT_(long long)
#undef KILN_ATOMIC_INT_
// Floating point: compare-and-swap on the bit pattern.
#define KILN_ATOMIC_FLOAT_(T, I)                                                                             \
    static inline T atomicAdd(T *p, T v) {                                                                   \
        I *ip = (I *)p, old = __atomic_load_n(ip, __ATOMIC_RELAXED), want;                                   \
        T f;                                                                                                 \
        do {                                                                                                 \
            memcpy(&f, &old, sizeof f);                                                                      \
            f += v;                                                                                          \
            memcpy(&want, &f, sizeof f);                                                                     \
        } while (!__atomic_compare_exchange_n(ip, &old, want, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));    \
        memcpy(&f, &old, sizeof f);                                                                          \
        return f;                                                                                            \
    }                                                                                                        \
    static inline T atomicSub(T *p, T v) { return atomicAdd(p, -v); }                                        \
    static inline T atomicExch(T *p, T v) {                                                                  \
        I bits;                                                                                              \
        memcpy(&bits, &v, sizeof v);                                                                         \
        bits = __atomic_exchange_n((I *)p, bits, __ATOMIC_RELAXED);                                          \
        memcpy(&v, &bits, sizeof v);                                                                         \
        return v;                                                                                            \
    }
KILN_ATOMIC_FLOAT_(float, unsigned int)
KILN_ATOMIC_FLOAT_(double, unsigned long long)
#undef KILN_ATOMIC_FLOAT_
static inline unsigned atomicInc(unsigned *p, unsigned limit) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, old >= limit ? 0u : old + 1u, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
    return old;
}
static inline unsigned atomicDec(unsigned *p, unsigned limit) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, (old == 0u || old > limit) ? limit : old - 1u, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
// Scope variants: every scope is the whole machine here.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicExch_block atomicExch
#define atomicCAS_block atomicCAS
#define atomicMin_block atomicMin
#define atomicMax_block atomicMax

// ---------------------------------------------------------------- integer min/max
#define KILN_MINMAX_(T)                                                                                      \
    static inline T min(T a, T b) { return b < a ? b : a; }                                                  \
    static inline T max(T a, T b) { return a < b ? b : a; }
KILN_MINMAX_(int)
KILN_MINMAX_(unsigned int)
KILN_MINMAX_(long)
KILN_MINMAX_(unsigned long)
KILN_MINMAX_(long long)
KILN_MINMAX_(unsigned long long)
#undef KILN_MINMAX_
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
// Mixed operand types take the usual arithmetic conversions, as in CUDA's headers.
template <typename A, typename B> static inline auto min(A a, B b) -> decltype(a + b) {
    typedef decltype(a + b) C;
    return min((C)a, (C)b);
}
template <typename A, typename B> static inline auto max(A a, B b) -> decltype(a + b) {
    typedef decltype(a + b) C;
    return max((C)a, (C)b);
}
static inline unsigned umin(unsigned a, unsigned b) { return min(a, b); }
static inline unsigned umax(unsigned a, unsigned b) { return max(a, b); }
static inline long long llmin(long long a, long long b) { return min(a, b); }
static inline long long llmax(long long a, long long b) { return max(a, b); }
static inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return min(a, b); }
static inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return max(a, b); }

// ---------------------------------------------------------------- math CUDA has and libm lacks
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// One rounding, not two: the reciprocal in a wider type.
static inline double rsqrt(double x) { return (double)(1.0L / sqrtl(x)); }
static inline float rcbrtf(float x) { return (float)(1.0 / cbrt((double)x)); }
static inline double rcbrt(double x) { return (double)(1.0L / cbrtl(x)); }
// x*pi loses x's low bits for large x: reduce to [-1, 1] first (exactly:
// x - 2 round(x/2) is representable), then multiply in long double.
#define KILN_PI_L 3.14159265358979323846264338327950288L
static inline long double kiln_pi_reduce(long double x) { return x - 2 * nearbyintl(x / 2); }
static inline float sinpif(float x) { return (float)sinl(KILN_PI_L * kiln_pi_reduce(x)); }
static inline double sinpi(double x) { return (double)sinl(KILN_PI_L * kiln_pi_reduce(x)); }
static inline float cospif(float x) { return (float)cosl(KILN_PI_L * kiln_pi_reduce(x)); }
static inline double cospi(double x) { return (double)cosl(KILN_PI_L * kiln_pi_reduce(x)); }
static inline void sincospif(float x, float *s, float *c) {
    *s = sinpif(x);
    *c = cospif(x);
}
static inline void sincospi(double x, double *s, double *c) {
    *s = sinpi(x);
    *c = cospi(x);
}
// In long double: erfc's steep tail would turn the rounding of x/sqrt(2)
// into tens of ulp.
static inline double normcdf(double x) {
    return (double)(0.5L * erfcl(-(long double)x * 0.70710678118654752440L));
}
static inline float normcdff(float x) { return (float)normcdf(x); }
static inline double erfcx(double x) {
    // exp(x^2) erfc(x) overflows for large x; the asymptotic series does not
    // (its terms fall by (2n-1)/(2x^2): ten reach double precision at 25).
    if (x < 25.0) {
        double hi = x * x, lo = fma(x, x, -hi); // x^2 exactly: exp's argument keeps every bit
        return exp(hi) * (1.0 + lo) * erfc(x);
    }
    double q = 1.0 / (2.0 * x * x), term = 1.0, sum = 1.0;
    for (int n = 1; n <= 10; n++) sum += (term *= -(2.0 * n - 1.0) * q);
    return sum / (x * 1.7724538509055160273);
}
static inline float erfcxf(float x) { return (float)erfcx(x); }
static inline float fdividef(float a, float b) { return a / b; }
static inline float __fdividef(float a, float b) { return a / b; }
// glibc (with _GNU_SOURCE, which g++ always defines) already exports these
// names with CUDA's meaning: exp10, sincos and the __expf family.
#ifndef __GLIBC__
static inline float exp10f(float x) { return powf(10.0f, x); }
static inline double exp10(double x) { return pow(10.0, x); }
static inline void sincosf(float x, float *s, float *c) {
    *s = sinf(x);
    *c = cosf(x);
}
static inline void sincos(double x, double *s, double *c) {
    *s = sin(x);
    *c = cos(x);
}
static inline float __expf(float x) { return expf(x); }
static inline float __exp10f(float x) { return exp10f(x); }
static inline float __logf(float x) { return logf(x); }
static inline float __log2f(float x) { return log2f(x); }
static inline float __log10f(float x) { return log10f(x); }
static inline float __sinf(float x) { return sinf(x); }
static inline float __cosf(float x) { return cosf(x); }
static inline float __tanf(float x) { return tanf(x); }
static inline void __sincosf(float x, float *s, float *c) { sincosf(x, s, c); }
static inline float __powf(float x, float y) { return powf(x, y); }
#endif
static inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }
static inline int __double2int_rz(double x) { return (int)x; }
static inline long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned x) { return (float)x; }
static inline float __ll2float_rn(long long x) { return (float)x; }
static inline double __int2double_rn(int x) { return (double)x; }
static inline float __double2float_rn(double x) { return (float)x; }
#define KILN_BITCAST_(name, From, To)                                                                        \
    static inline To name(From x) {                                                                          \
        To r;                                                                                                \
        memcpy(&r, &x, sizeof r);                                                                            \
        return r;                                                                                            \
    }
KILN_BITCAST_(__int_as_float, int, float)
KILN_BITCAST_(__float_as_int, float, int)
KILN_BITCAST_(__uint_as_float, unsigned, float)
KILN_BITCAST_(__float_as_uint, float, unsigned)
KILN_BITCAST_(__double_as_longlong, double, long long)
KILN_BITCAST_(__longlong_as_double, long long, double)
#undef KILN_BITCAST_
static inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
static inline int __double2loint(double x) { return (int)__double_as_longlong(x); }
static inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
static inline int __mul24(int a, int b) { return a * b; }
static inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    s &= 31u;
    return s ? (hi << s) | (lo >> (32u - s)) : hi;
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    s &= 31u;
    return s ? (lo >> s) | (hi << (32u - s)) : lo;
}
template <typename T> static inline T __ldg(const T *p) { return *p; }
template <typename T> static inline T __ldcg(const T *p) { return *p; }
template <typename T> static inline T __ldcs(const T *p) { return *p; }
template <typename T> static inline void __stcg(T *p, T v) { *p = v; }
template <typename T> static inline void __stcs(T *p, T v) { *p = v; }
static inline long long clock64() {
#if defined(__x86_64__)
    return (long long)__builtin_ia32_rdtsc();
#else
    return (long long)__builtin_readcyclecounter();
#endif
}

// ---------------------------------------------------------------- vector types
// Same sizes and alignments as CUDA's vector_types.h.
#define KILN_VEC2_(N, T, A)                                                                                  \
    struct __attribute__((aligned(A))) N##2 {                                                                \
        T x, y;                                                                                              \
    };                                                                                                       \
    static inline N##2 make_##N##2(T x, T y) {                                                               \
        N##2 r;                                                                                              \
        r.x = x;                                                                                             \
        r.y = y;                                                                                             \
        return r;                                                                                            \
    }
#define KILN_VEC3_(N, T)                                                                                     \
    struct N##3 {                                                                                            \
        T x, y, z;                                                                                           \
    };                                                                                                       \
    static inline N##3 make_##N##3(T x, T y, T z) {                                                          \
        N##3 r;                                                                                              \
        r.x = x;                                                                                             \
        r.y = y;                                                                                             \
        r.z = z;                                                                                             \
        return r;                                                                                            \
    }
#define KILN_VEC4_(N, T, A)                                                                                  \
    struct __attribute__((aligned(A))) N##4 {                                                                \
        T x, y, z, w;                                                                                        \
    };                                                                                                       \
    static inline N##4 make_##N##4(T x, T y, T z, T w) {                                                     \
        N##4 r;                                                                                              \
        r.x = x;                                                                                             \
        r.y = y;                                                                                             \
        r.z = z;                                                                                             \
        r.w = w;                                                                                             \
        return r;                                                                                            \
    }
#define KILN_VEC_(N, T, A2, A4) KILN_VEC2_(N, T, A2) KILN_VEC3_(N, T) KILN_VEC4_(N, T, A4)
KILN_VEC_(char, signed char, 2, 4)
KILN_VEC_(uchar, unsigned char, 2, 4)
KILN_VEC_(short, short, 4, 8)
KILN_VEC_(ushort, unsigned short, 4, 8)
KILN_VEC_(int, int, 8, 16)
KILN_VEC2_(uint, unsigned int, 8)
KILN_VEC4_(uint, unsigned int, 16)
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) {
    uint3 r;
    r.x = x;
    r.y = y;
    r.z = z;
    return r;
}
KILN_VEC_(long, long, 16, 16)
KILN_VEC_(ulong, unsigned long, 16, 16)
KILN_VEC_(longlong, long long, 16, 16)
KILN_VEC_(ulonglong, unsigned long long, 16, 16)
KILN_VEC_(float, float, 8, 16)
KILN_VEC_(double, double, 16, 16)
#undef KILN_VEC_
#undef KILN_VEC2_
#undef KILN_VEC3_
#undef KILN_VEC4_
static inline dim3 make_dim3(unsigned x, unsigned y, unsigned z) { return dim3(x, y, z); }

// ---------------------------------------------------------------- runners
// Parameters are read with memcpy: libkiln's argument slots need not carry
// the alignment of a by-value struct parameter.
template <typename T> static inline T kiln_cpu_arg(void *const *args, unsigned i) {
    T v;
    memcpy((void *)&v, args[i], sizeof(T));
    return v;
}
template <unsigned... I> struct kiln_cpu_seq {};
template <unsigned N, unsigned... I> struct kiln_cpu_make_seq : kiln_cpu_make_seq<N - 1, N - 1, I...> {};
template <unsigned... I> struct kiln_cpu_make_seq<0, I...> { typedef kiln_cpu_seq<I...> type; };

// Fault reports (cpu_launch.c): the fast loop's probe twin (below) records
// block and thread before each thread runs, for finding the faulting thread
// by a re-run. A copy of its own: were blockIdx and threadIdx read outside
// kernel code, the compiler would have to store them at every thread of
// the normal loop, which costs it its vectorisation (3x on saxpy).
static thread_local unsigned kiln_cpu_probe_where[6];
KILN_CPU_EXPORT void kiln_cpu_where(unsigned *w) {
    memcpy(w, kiln_cpu_probe_where, sizeof kiln_cpu_probe_where);
}
KILN_CPU_EXPORT void kiln_cpu_begin(const unsigned *grid, const unsigned *block) {
    gridDim = dim3(grid[0], grid[1], grid[2]);
    blockDim = dim3(block[0], block[1], block[2]);
}
static inline void kiln_cpu_enter(const kiln_cpu_block_abi *B, unsigned long long block) {
    kiln_cpu_block = B;
    blockIdx.x = (unsigned)(block % B->grid[0]);
    blockIdx.y = (unsigned)(block / B->grid[0] % B->grid[1]);
    blockIdx.z = (unsigned)(block / B->grid[0] / B->grid[1]);
}
// The probe twins' record (fast loop, probe loop, fission bodies): block
// and thread, through volatile so each store happens where it is written.
static inline void kiln_cpu_note_where(const uint3 &b, unsigned x, unsigned y, unsigned z) {
    volatile unsigned *w = kiln_cpu_probe_where;
    w[0] = b.x;
    w[1] = b.y;
    w[2] = b.z;
    w[3] = x;
    w[4] = y;
    w[5] = z;
}

// Fast path: blocks [first, end) (x fastest), each a loop over its threads.
// The arguments are copied to locals once, so the compiler sees them as
// loop-invariant values rather than memory the kernel might overwrite.
template <auto F, bool Probe, typename... A>
static void kiln_cpu_fast_loop(const kiln_cpu_block_abi *B, unsigned long long first, unsigned long long end,
                               A... a) {
    const unsigned bx = B->block[0], by = B->block[1], bz = B->block[2];
    for (unsigned long long b = first; b < end; b++) {
        kiln_cpu_enter(B, b);
        for (unsigned z = 0; z < bz; z++)
            for (unsigned y = 0; y < by; y++)
                for (unsigned x = 0; x < bx; x++) {
                    threadIdx.x = x;
                    threadIdx.y = y;
                    threadIdx.z = z;
                    if (Probe) kiln_cpu_note_where(blockIdx, x, y, z);
                    F(a...);
                }
    }
}
template <auto F, bool Probe, typename... A, unsigned... I>
static inline void kiln_cpu_fast(void (*)(A...), kiln_cpu_seq<I...>, const kiln_cpu_block_abi *B,
                                 unsigned long long first, unsigned long long end) {
    kiln_cpu_fast_loop<F, Probe, A...>(B, first, end, kiln_cpu_arg<A>(B->args, I)...);
}
// The fault probe (cpu_launch.c, find_faulting_thread) runs only after a
// launch has faulted: libkiln then loops over the faulting chunk's blocks
// and threads itself, noting each before it runs, and calls this entry once
// per thread. The kernel is called through a pointer the compiler cannot see
// through, so it is not inlined into a second copy; and the loop nest lives
// in libkiln, not in every module: a templated probe loop here cost a third
// of a small module's compile (56M of 264M instructions in cc1plus for saxpy,
// docs/PERF_NOTES.md, cold calls).
// Enters block `block` as its thread `rank` (x fastest).
static inline void kiln_cpu_enter_thread(const kiln_cpu_block_abi *B, unsigned long long block,
                                         unsigned rank) {
    kiln_cpu_enter(B, block);
    threadIdx.x = rank % B->block[0];
    threadIdx.y = rank / B->block[0] % B->block[1];
    threadIdx.z = rank / B->block[0] / B->block[1];
}
template <typename... A, unsigned... I>
static inline void kiln_cpu_one(void (*f)(A...), kiln_cpu_seq<I...>, const kiln_cpu_block_abi *B,
                                unsigned long long block, unsigned rank) {
    kiln_cpu_enter_thread(B, block, rank);
    f(kiln_cpu_arg<A>(B->args, I)...);
}
// Barrier path: one CUDA thread of one block, run on its own fiber.
template <auto F, typename... A, unsigned... I>
static inline void kiln_cpu_thread(void (*)(A...), kiln_cpu_seq<I...>, const kiln_cpu_block_abi *B,
                                   unsigned long long block, unsigned rank) {
    kiln_cpu_enter_thread(B, block, rank);
    F(kiln_cpu_arg<A>(B->args, I)...);
}
template <typename F> struct kiln_cpu_arity;
template <typename... A> struct kiln_cpu_arity<void (*)(A...)> {
    typedef typename kiln_cpu_make_seq<sizeof...(A)>::type kiln_seq;
};
// These expand after the user's source, so every name in them is
// kiln-prefixed: a user's `#define B 16` or `#define end 0` must not reach them.
// kiln_cpu_one_ is the fault-reporting entry (cpu_launch.c): a launch that
// faults is run again through it, thread by thread, to name the block and thread.
#define KILN_CPU_EXPORT_FAST(kiln__sym, ...)                                                                 \
    KILN_CPU_EXPORT void kiln_cpu_fast_##kiln__sym(                                                          \
        const kiln_cpu_block_abi *kiln__b, unsigned long long kiln__first, unsigned long long kiln__end) {   \
        kiln_cpu_fast<&__VA_ARGS__, false>(&__VA_ARGS__, kiln_cpu_arity<decltype(&__VA_ARGS__)>::kiln_seq(), \
                                           kiln__b, kiln__first, kiln__end);                                 \
    }                                                                                                        \
    KILN_CPU_EXPORT __attribute__((__cold__)) void kiln_cpu_one_##kiln__sym(                                 \
        const kiln_cpu_block_abi *kiln__b, unsigned long long kiln__block, unsigned kiln__rank) {            \
        decltype(&__VA_ARGS__) volatile kiln__f = &__VA_ARGS__;                                              \
        kiln_cpu_one(kiln__f, kiln_cpu_arity<decltype(&__VA_ARGS__)>::kiln_seq(), kiln__b, kiln__block,      \
                     kiln__rank);                                                                            \
    }
#define KILN_CPU_EXPORT_THREAD(kiln__sym, ...)                                                               \
    KILN_CPU_EXPORT void kiln_cpu_thread_##kiln__sym(const kiln_cpu_block_abi *kiln__b,                      \
                                                     unsigned long long kiln__block, unsigned kiln__rank) {  \
        kiln_cpu_thread<&__VA_ARGS__>(&__VA_ARGS__, kiln_cpu_arity<decltype(&__VA_ARGS__)>::kiln_seq(),      \
                                      kiln__b, kiln__block, kiln__rank);                                     \
    }
