// kiln_cpu_prelude_atomics.cuh: CUDA's atomic functions on the CPU, as real
// atomics (blocks run on several OS threads). Follows kiln_cpu_prelude_sync.cuh.

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
