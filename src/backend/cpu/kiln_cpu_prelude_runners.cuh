// kiln_cpu_prelude_runners.cuh: the entry points libkiln calls (cpu_launch.c):
// the fast loop over a block's threads, the fiber per thread of a barrier
// kernel, and the fault probe, exported per kernel by KILN_CPU_EXPORT_FAST /
// _THREAD. Last of the prelude's parts (kiln_cpu_prelude.cuh lists them).

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
