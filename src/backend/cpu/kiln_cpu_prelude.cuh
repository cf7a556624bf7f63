// kiln_cpu_prelude.cuh: put in front of every kernel the CPU backend compiles,
// before kiln_complex.cuh and kiln_signature.cuh, so that CUDA C builds with
// the host C++ compiler (c++17). It gives kernels CUDA's built-in variables,
// qualifiers, atomics, vector types and math, and the runners (at the end)
// that libkiln calls. Only light C headers: this text is parsed on every cold
// compile, so <iostream>, <complex>, <atomic> and friends stay out.
//
// This file holds the headers, qualifiers, the ABI with libkiln and the
// built-in variables; the rest follows in this order, one file per topic,
// each put after the one before by kiln_cpu_prelude_text (cpu_pch.c):
// kiln_cpu_prelude_sync.cuh (barriers, warp functions, assert),
// kiln_cpu_prelude_atomics.cuh, kiln_cpu_prelude_math.cuh (what libm lacks),
// kiln_cpu_prelude_vector.cuh (vector types), kiln_cpu_prelude_runners.cuh.
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
