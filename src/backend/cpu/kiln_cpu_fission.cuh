// kiln_cpu_fission.cuh: what kernels on the CPU backend's fission path need
// (cpu_fission.c writes them), compiled BEFORE the user's source (so no user
// macro reaches it) and only in modules that have such kernels. Comes after
// kiln_cpu_prelude.cuh.
#define KILN_CPU_FIS_MAX_THREADS 1024
// The threads of one region never depend on each other (barriers separate
// every such dependence in a race-free CUDA program): the loop over them
// may be vectorised without the compiler's proof.
#if defined(__clang__)
#define KILN_FIS_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define KILN_FIS_IVDEP _Pragma("GCC ivdep")
#endif
#define KILN_FIS_INLINE __attribute__((always_inline))
// A row check's loop over a row of this many threads (blocks 32 wide) takes
// a copy of constant trip count (cpu_fission_emit.c, put_row_check).
#define KILN_FIS_ROW 32
// A type template argument of a function inlined before fission
// (cpu_fission_inline.c): a name that a declaration and a cast both take.
template <typename T> using kiln_fis_type = T;
// Per-thread storage of a `const T` local is a T array.
template <typename T> struct kiln_fis_rc { typedef T type; };
template <typename T> struct kiln_fis_rc<const T> { typedef T type; };
// The end of the prefix of [0, n) on which p holds (p holds on a prefix:
// the transformer checked the guard's shape). Both ends first: in most
// blocks a bounds check passes everywhere or nowhere; else a binary search.
template <typename P> static inline int kiln_fis_prefix(const P &p, int n) {
    if (n <= 0 || p(n - 1)) return n > 0 ? n : 0;
    if (!p(0)) return 0;
    int lo = 1, hi = n - 1; // p holds below lo, fails from hi on
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (p(mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
template <typename T> struct kiln_fis_integral {
    enum { value = 0 };
};
#define KILN_FIS_INTEGRAL(T)                                                                                 \
    template <> struct kiln_fis_integral<T> {                                                                \
        enum { value = 1 };                                                                                  \
    };
KILN_FIS_INTEGRAL(bool)
KILN_FIS_INTEGRAL(char)
KILN_FIS_INTEGRAL(signed char)
KILN_FIS_INTEGRAL(unsigned char)
KILN_FIS_INTEGRAL(short)
KILN_FIS_INTEGRAL(unsigned short)
KILN_FIS_INTEGRAL(int)
KILN_FIS_INTEGRAL(unsigned)
KILN_FIS_INTEGRAL(long)
KILN_FIS_INTEGRAL(unsigned long)
KILN_FIS_INTEGRAL(long long)
KILN_FIS_INTEGRAL(unsigned long long)
// The end of the prefix of [0, n) on which `(I)x < b` (Le: `<=`) holds,
// where I is the type of threadIdx.x or of the copy of it that a guard
// compares (its value at thread x is x). For integers the comparison's own
// type decides (a negative int bound against an unsigned index is huge), and
// the end is b or b + 1 clamped to [0, n); other types search.
template <typename I, int Le, typename B> static inline int kiln_fis_end(B b, int n) {
    if constexpr (kiln_fis_integral<I>::value && kiln_fis_integral<B>::value) {
        typedef decltype((I)0 + (B)0) C;
        if (n <= 0 || (Le ? !((I)0 <= b) : !((I)0 < b))) return 0;
        if (Le ? (I)(n - 1) <= b : (I)(n - 1) < b) return n;
        return (int)(C)b + Le; // 0 <= b < n - 1 (Le) or 0 < b <= n - 1: fits
    } else
        return kiln_fis_prefix([&](int x) { return Le ? (I)x <= b : (I)x < b; }, n);
}
// A row check (cpu_fission_select.c): did min/max give its first argument
// a, in its own type R? Integers only (a float min may pick either zero).
template <typename R, typename T> static KILN_FIS_INLINE inline int kiln_fis_first(R r, T a) {
    if constexpr (kiln_fis_integral<R>::value)
        return r == (R)a;
    else
        return 0;
}
// A row decided at its two ends (cpu_fission_select.c, fis_site_ends): the
// rising operand of a comparison at thread x, as an integer in its own type
// T and in the type C it is compared in. A type that is not an integer
// records x itself: rounding keeps a float order, and wrapping (what the
// ends are checked for) needs an integer type.
struct kiln_fis_end_value {
    __int128 own, cmp;
};
template <typename C, typename T>
static KILN_FIS_INLINE inline kiln_fis_end_value kiln_fis_at(const T &v, int x) {
    kiln_fis_end_value r = {x, x};
    if constexpr (kiln_fis_integral<T>::value) r.own = (__int128)v;
    if constexpr (kiln_fis_integral<C>::value) r.cmp = (__int128)(C)v;
    return r;
}
// The operand rises by one per thread, so between threads x0 and x0 + d it
// grew by d in both types iff nothing wrapped (a wrap only takes away).
static inline bool kiln_fis_no_wrap(const kiln_fis_end_value &a, const kiln_fis_end_value &b, int d) {
    return b.own - a.own == d && b.cmp - a.cmp == d;
}
// CUDA's built-in indices are unsigned, so `int x = blockIdx.x * TX + tx`
// computes in unsigned arithmetic, which may wrap as far as GCC knows: its
// thread loops then gather (or do not vectorise) where the same sum spelled
// in int is an affine index. In the initialiser of an `int` local, the
// transformer wraps each built-in index in kiln_fis_w: + - * then compute
// modulo 2^32 as before (the same bits, so the same int in the end), but in
// int wherever the value ranges of the kiln_small body prove that nothing
// wraps (the overflow test folds away and the plain signed operation, which
// cannot overflow there, is what is left). Every other use of the value
// (other operators, other operand types, conversions) sees the unsigned
// value it always was.
struct kiln_fis_wi {
    int v;
    template <typename T> KILN_FIS_INLINE operator T() const { return (T)(unsigned)v; }
};
static KILN_FIS_INLINE inline kiln_fis_wi kiln_fis_w(unsigned u) { return kiln_fis_wi{(int)u}; }
#define KILN_FIS_WOP1(op, name, A, B, a_, b_)                                                                \
    static KILN_FIS_INLINE inline kiln_fis_wi operator op(A a, B b) {                                        \
        int r, x = (int)(a_), y = (int)(b_);                                                                 \
        if (__builtin_##name##_overflow(x, y, &r)) return kiln_fis_wi{r};                                    \
        return kiln_fis_wi{x op y};                                                                          \
    }
#define KILN_FIS_WOP(op, name)                                                                               \
    KILN_FIS_WOP1(op, name, kiln_fis_wi, kiln_fis_wi, a.v, b.v)                                              \
    KILN_FIS_WOP1(op, name, kiln_fis_wi, int, a.v, b)                                                        \
    KILN_FIS_WOP1(op, name, int, kiln_fis_wi, a, b.v)                                                        \
    KILN_FIS_WOP1(op, name, kiln_fis_wi, unsigned, a.v, b)                                                   \
    KILN_FIS_WOP1(op, name, unsigned, kiln_fis_wi, a, b.v)                                                   \
    template <typename T> static KILN_FIS_INLINE inline auto operator op(kiln_fis_wi a, T b) {               \
        return (unsigned)a.v op b;                                                                           \
    }                                                                                                        \
    template <typename T> static KILN_FIS_INLINE inline auto operator op(T a, kiln_fis_wi b) {               \
        return a op(unsigned) b.v;                                                                           \
    }
KILN_FIS_WOP(+, add)
KILN_FIS_WOP(-, sub)
KILN_FIS_WOP(*, mul)
#define KILN_FIS_WDECAY(op)                                                                                  \
    static KILN_FIS_INLINE inline auto operator op(kiln_fis_wi a, kiln_fis_wi b) {                           \
        return (unsigned)a.v op(unsigned) b.v;                                                               \
    }                                                                                                        \
    template <typename T> static KILN_FIS_INLINE inline auto operator op(kiln_fis_wi a, T b) {               \
        return (unsigned)a.v op b;                                                                           \
    }                                                                                                        \
    template <typename T> static KILN_FIS_INLINE inline auto operator op(T a, kiln_fis_wi b) {               \
        return a op(unsigned) b.v;                                                                           \
    }
KILN_FIS_WDECAY(/)
KILN_FIS_WDECAY(%)
KILN_FIS_WDECAY(<<)
KILN_FIS_WDECAY(>>)
KILN_FIS_WDECAY(&)
KILN_FIS_WDECAY(|)
KILN_FIS_WDECAY(^)
KILN_FIS_WDECAY(<)
KILN_FIS_WDECAY(>)
KILN_FIS_WDECAY(<=)
KILN_FIS_WDECAY(>=)
KILN_FIS_WDECAY(==)
KILN_FIS_WDECAY(!=)
static KILN_FIS_INLINE inline kiln_fis_wi operator-(kiln_fis_wi a) { return 0 - a; }
static KILN_FIS_INLINE inline kiln_fis_wi operator+(kiln_fis_wi a) { return a; }
static KILN_FIS_INLINE inline unsigned operator~(kiln_fis_wi a) { return ~(unsigned)a.v; }
static KILN_FIS_INLINE inline bool operator!(kiln_fis_wi a) { return !(unsigned)a.v; }
// Launch values as locals: the thread loops then see them as invariant,
// where stores to shared int arrays could alias the globals.
#define KILN_FIS_PROLOGUE                                                                                    \
    const dim3 blockDim = ::blockDim;                                                                        \
    const dim3 gridDim = ::gridDim;                                                                          \
    const uint3 blockIdx = ::blockIdx;                                                                       \
    const int kiln_bx = (int)blockDim.x, kiln_by = (int)blockDim.y, kiln_bz = (int)blockDim.z;               \
    (void)gridDim;                                                                                           \
    (void)blockIdx;

// Fault reports (cpu_launch.c): a launch that faults runs the faulting
// worker's blocks again through the body's kiln_probe = 1 twin, which
// stores block and thread where kiln_cpu_where reads them before each
// thread's part of a region (and block-level code counts as thread 0's).
// The normal body has no such stores: they would keep its thread loops from
// vectorising.
#define KILN_FIS_WHERE(x, y, z)                                                                              \
    if (kiln_probe) kiln_cpu_note_where(blockIdx, (unsigned)(x), (unsigned)(y), (unsigned)(z));

// Blocks [first, end), each one call of the transformed body (which loops
// over the threads itself). Same ABI as the loop path's kiln_cpu_fast_k.
template <auto F, typename... A>
static void kiln_cpu_fis_loop(const kiln_cpu_block_abi *B, unsigned long long first, unsigned long long end,
                              A... a) {
    for (unsigned long long b = first; b < end; b++) {
        kiln_cpu_enter(B, b);
        F(a...);
    }
}
template <auto F, typename... A, unsigned... I>
static inline void kiln_cpu_fis(void (*)(A...), kiln_cpu_seq<I...>, const kiln_cpu_block_abi *B,
                                unsigned long long first, unsigned long long end) {
    kiln_cpu_fis_loop<F, A...>(B, first, end, kiln_cpu_arg<A>(B->args, I)...);
}
// What the compiler may assume about the launch, to keep index arithmetic
// affine. CUDA's blockIdx and threadIdx are unsigned, so in
// `int i = blockIdx.x * 256 + threadIdx.x` the sum may wrap as far as GCC
// knows: the thread loop then loads through gathers (or, for a store, does
// not vectorise at all). Blocks have 1 to 1024 threads (the launch checks),
// and the kiln_small body runs only for grids of at most 2^20 blocks in x
// and 2^16 in y and z (CUDA's own limit there), so such products of a block
// index and a factor up to 2048 (32768 for y and z) provably fit in an int.
#define KILN_FIS_SMALL_GRID_X (1u << 20)
#define KILN_FIS_SMALL_GRID_YZ (1u << 16)
#define KILN_FIS_RANGES                                                                                      \
    if (kiln_bx < 1 || kiln_bx > KILN_CPU_FIS_MAX_THREADS) __builtin_unreachable();                          \
    if (kiln_by < 1 || kiln_by > KILN_CPU_FIS_MAX_THREADS) __builtin_unreachable();                          \
    if (kiln_bz < 1 || kiln_bz > KILN_CPU_FIS_MAX_THREADS) __builtin_unreachable();                          \
    if (kiln_small) {                                                                                        \
        if (blockIdx.x >= KILN_FIS_SMALL_GRID_X) __builtin_unreachable();                                    \
        if (blockIdx.y >= KILN_FIS_SMALL_GRID_YZ) __builtin_unreachable();                                   \
        if (blockIdx.z >= KILN_FIS_SMALL_GRID_YZ) __builtin_unreachable();                                   \
    }
// The same facts for the thread loop's counters, stated where the loop's
// body uses them: GCC's value ranges do not carry the block size's bound to
// a loop counter, and kiln_fis_w's overflow tests need it to fold away.
#define KILN_FIS_THREAD_RANGES                                                                               \
    if ((unsigned)kiln_x >= KILN_CPU_FIS_MAX_THREADS || (unsigned)kiln_y >= KILN_CPU_FIS_MAX_THREADS ||      \
        (unsigned)kiln_z >= KILN_CPU_FIS_MAX_THREADS)                                                        \
        __builtin_unreachable();
#define KILN_FIS_RUN(kiln__k, kiln__probe, kiln__small)                                                      \
    kiln_cpu_fis<&kiln_fis_body_##kiln__k<kiln__probe, kiln__small>>(                                        \
        &kiln_fis_body_##kiln__k<kiln__probe, kiln__small>,                                                  \
        kiln_cpu_arity<decltype(&kiln_fis_body_##kiln__k<kiln__probe, kiln__small>)>::kiln_seq(), kiln__b,   \
        kiln__first, kiln__end)
// The entry takes the kiln_small body when the grid allows it. Otherwise,
// for grids of more than 2^20 blocks in x, it runs the probe twin (correct,
// but its thread loops do not vectorise): a third copy of the body for such
// rare grids would cost every barrier module ~40% more compile time. The
// probe twin is cold (compiled for size): it is there for fault reports.
#define KILN_CPU_EXPORT_FISSION(kiln__k)                                                                     \
    KILN_CPU_EXPORT __attribute__((cold)) void kiln_cpu_probe_##kiln__k(                                     \
        const kiln_cpu_block_abi *kiln__b, unsigned long long kiln__first, unsigned long long kiln__end) {   \
        KILN_FIS_RUN(kiln__k, 1, 0);                                                                         \
    }                                                                                                        \
    KILN_CPU_EXPORT void kiln_cpu_fis_##kiln__k(                                                             \
        const kiln_cpu_block_abi *kiln__b, unsigned long long kiln__first, unsigned long long kiln__end) {   \
        if (kiln__b->grid[0] <= KILN_FIS_SMALL_GRID_X && kiln__b->grid[1] <= KILN_FIS_SMALL_GRID_YZ &&       \
            kiln__b->grid[2] <= KILN_FIS_SMALL_GRID_YZ)                                                      \
            KILN_FIS_RUN(kiln__k, 0, 1);                                                                     \
        else                                                                                                 \
            kiln_cpu_probe_##kiln__k(kiln__b, kiln__first, kiln__end);                                       \
    }
// A template kernel's instantiation: the body is a template on kiln_probe,
// kiln_small and then the kernel's own parameters (cpu_fission_template.c).
#define KILN_FIS_RUN_T(kiln__k, kiln__probe, kiln__small, ...)                                               \
    kiln_cpu_fis<&kiln_fis_body_##kiln__k<kiln__probe, kiln__small, __VA_ARGS__>>(                           \
        &kiln_fis_body_##kiln__k<kiln__probe, kiln__small, __VA_ARGS__>,                                     \
        kiln_cpu_arity<                                                                                      \
            decltype(&kiln_fis_body_##kiln__k<kiln__probe, kiln__small, __VA_ARGS__>)>::kiln_seq(),          \
        kiln__b, kiln__first, kiln__end)
#define KILN_CPU_EXPORT_FISSION_T(kiln__sym, kiln__k, ...)                                                   \
    KILN_CPU_EXPORT __attribute__((cold)) void kiln_cpu_probe_##kiln__sym(                                   \
        const kiln_cpu_block_abi *kiln__b, unsigned long long kiln__first, unsigned long long kiln__end) {   \
        KILN_FIS_RUN_T(kiln__k, 1, 0, __VA_ARGS__);                                                          \
    }                                                                                                        \
    KILN_CPU_EXPORT void kiln_cpu_fis_##kiln__sym(                                                           \
        const kiln_cpu_block_abi *kiln__b, unsigned long long kiln__first, unsigned long long kiln__end) {   \
        if (kiln__b->grid[0] <= KILN_FIS_SMALL_GRID_X && kiln__b->grid[1] <= KILN_FIS_SMALL_GRID_YZ &&       \
            kiln__b->grid[2] <= KILN_FIS_SMALL_GRID_YZ)                                                      \
            KILN_FIS_RUN_T(kiln__k, 0, 1, __VA_ARGS__);                                                      \
        else                                                                                                 \
            kiln_cpu_probe_##kiln__sym(kiln__b, kiln__first, kiln__end);                                     \
    }
// A block's tree reduction in registers (cpu_fission_tree.c finds the loop
// `for (h = H; h > 0; h >>= 1) { if (t < h) s[t] += s[t + h]; __syncthreads(); }`
// with H a literal or blockDim.x / 2 and t threadIdx.x or a copy, and writes
// the code that runs it where these checks pass): on loop fission each level stores its sums to s and
// the next level loads them back, a chain of store, forward and load per
// level that costs more than the additions. The written code loads the 2H
// values into vectors of 16 once, each a variable of its own (so that they
// live in registers), adds the same two elements in the same order as the
// loop at every level (whole vectors down to h = 16, then lanes of the first
// vector), and stores s[0, H) back as the loop leaves it (s[0] alone where
// the kernel reads no other sum afterwards): the same values, bit for bit. The loop's own code stays beside
// it for blocks this does not fit (fewer than H threads a row, more than one row) and other element types.
// GCC only (vector extensions, __builtin_shuffle).
template <typename T> struct kiln_fis_tree_lane {
    enum { ok = 0 };
};
#if defined(__GNUC__) && !defined(__clang__)
#define KILN_FIS_TREE_LANE(T, M)                                                                             \
    template <> struct kiln_fis_tree_lane<T> {                                                               \
        enum { ok = 1 };                                                                                     \
        typedef M mask;                                                                                      \
    };
KILN_FIS_TREE_LANE(float, int)
KILN_FIS_TREE_LANE(double, long long)
KILN_FIS_TREE_LANE(int, int)
KILN_FIS_TREE_LANE(unsigned, int)
KILN_FIS_TREE_LANE(long long, long long)
KILN_FIS_TREE_LANE(unsigned long long, long long)
#endif
template <typename A> struct kiln_fis_tree_arr {
    enum { n = 0 };
    typedef int elem;
};
template <typename A> struct kiln_fis_tree_arr<A &> : kiln_fis_tree_arr<A> {};
template <typename T, int N> struct kiln_fis_tree_arr<T[N]> {
    enum { n = N };
    typedef T elem;
};
// `extern __shared__ T s[]` (kiln_dyn_shared, kiln_cpu_prelude.cuh): as long
// as the launch makes it, so the code is written for every h up to the
// largest and the run-time check below asks the launch's size.
template <typename T> struct kiln_fis_tree_arr<kiln_dyn_shared<T>> {
    enum { n = 2 * 512 };
    typedef T elem;
};
// The written code for a first h of `h` works on array type A: its elements
// have vector lanes, h is a power of two from 8 to 512 (vectors of 16, 2h/16
// of them) and A holds 2h elements. Both the code's `if constexpr` and the
// run-time check below ask this.
template <typename A> static constexpr bool kiln_fis_tree_fits(unsigned h) {
#ifdef KILN_CPU_QUICK_BUILD /* the loop: the same bits, without the compile of every size's code */
    return false;
#endif
    typedef kiln_fis_tree_arr<A> arr;
    return kiln_fis_tree_lane<typename arr::elem>::ok && h >= 8 && h <= 512 && (h & (h - 1)) == 0 &&
           2 * h <= (unsigned)arr::n;
}
// At run time: the code fits h, and the block has h threads in one row.
template <typename A> static inline bool kiln_fis_tree_ok(A &, unsigned h, int bx, int by, int bz) {
    return kiln_fis_tree_fits<A &>(h) && (int)h <= bx && by == 1 && bz == 1;
}
// ... and the launch gave the dynamic array the 2h elements (the loop reads
// as many: a launch that gave fewer reads past it either way).
template <typename T>
static inline bool kiln_fis_tree_ok(kiln_dyn_shared<T> &a, unsigned h, int bx, int by, int bz) {
    return kiln_fis_tree_ok<kiln_dyn_shared<T>>(a, h, bx, by, bz) &&
           2ull * h * sizeof(T) <= kiln_cpu_block->dyn_shared_bytes;
}
template <typename V, typename T> static inline KILN_FIS_INLINE V kiln_fis_vload(const T *p) {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}
template <typename V, typename T> static inline KILN_FIS_INLINE void kiln_fis_vstore(T *p, V v) {
    __builtin_memcpy(p, &v, sizeof v);
}
// Lanes t < h of v get v[t + h] added (h < 16).
template <int h, typename T, typename V> static inline KILN_FIS_INLINE V kiln_fis_tree_lanes(V v) {
    typedef typename kiln_fis_tree_lane<T>::mask M __attribute__((vector_size(sizeof(V))));
    M lane;
    for (int i = 0; i < 16; i++) lane[i] = i;
    V up = __builtin_shuffle(v, (lane + h) & 15);
    return lane < h ? v + up : v;
}
