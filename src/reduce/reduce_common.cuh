// reduce_common.cuh: helpers every generated reduction and scan kernel starts
// with, on both backends (after kiln's prelude and ufunc_common.cuh, whose
// float16 conversions and safe casts the loads use).
//  - KILN_RD_FN: how the operator's pieces are declared (always inlined, so
//    the CPU loops around them vectorise and the GPU loops have no calls).
//  - NaN-aware min/max (NumPy: NaN wins), arg accumulators (value + C-order
//    index, -1 for "none yet", first NaN wins, ties to the smaller index), a
//    mergeable mean/variance accumulator (Chan et al.), and an optional value
//    for operators without an identity (ufunc reduce).
//  The warp shuffles are in reduce_gpu.cuh: the CPU backend must not see
//  their names (a barrier there means fibers).
#ifndef KILN_RD_COMMON
#define KILN_RD_COMMON 1

#if defined(KILN_CUDA)
#define KILN_RD_FN static __device__ __forceinline__
#else
#define KILN_RD_FN static inline __attribute__((always_inline))
#endif

template <class T> KILN_RD_FN bool kiln_rd_isnan(T x) { return x != x; }
KILN_RD_FN bool kiln_rd_isnan(kiln_complex64 x) { return x.x != x.x || x.y != x.y; }
KILN_RD_FN bool kiln_rd_isnan(kiln_complex128 x) { return x.x != x.x || x.y != x.y; }

template <class T> KILN_RD_FN T kiln_rd_min(T a, T b) {
    return kiln_rd_isnan(a) ? a : kiln_rd_isnan(b) ? b : (b < a ? b : a);
}
template <class T> KILN_RD_FN T kiln_rd_max(T a, T b) {
    return kiln_rd_isnan(a) ? a : kiln_rd_isnan(b) ? b : (b > a ? b : a);
}

// var/std's divisor as NumPy takes it, max(n - ddof, 0): a ddof at or past n
// gives inf (or NaN when every value is equal), never a negative variance.
KILN_RD_FN double kiln_rd_ddof_div(double m2, double d) { return m2 / (d > 0.0 ? d : 0.0); }

template <class T> struct kiln_rd_arg {
    T v;
    long long i; // -1: no element yet
};
template <class T> KILN_RD_FN kiln_rd_arg<T> kiln_rd_arg_make(T v, long long i) {
    kiln_rd_arg<T> r;
    r.v = v;
    r.i = i;
    return r;
}
template <class T> KILN_RD_FN kiln_rd_arg<T> kiln_rd_arg_none() {
    kiln_rd_arg<T> r;
    r.v = T();
    r.i = -1;
    return r;
}
// less: the smaller value wins (argmin), else the larger. Commutative and
// associative: the result never depends on the combination order. Written
// as one select, so that CPU loops and GPU warps do not branch per element.
template <class T> KILN_RD_FN kiln_rd_arg<T> kiln_rd_arg_pick(kiln_rd_arg<T> a, kiln_rd_arg<T> b, bool less) {
    const bool an = kiln_rd_isnan(a.v), bn = kiln_rd_isnan(b.v);
    const bool better = less ? (b.v < a.v) : (a.v < b.v);
    const bool tie = !(a.v < b.v) && !(b.v < a.v);
    const bool earlier = b.i < a.i;
    const bool take_b =
        a.i < 0 || (b.i >= 0 && (bn ? (!an || earlier) : (!an && (better || (tie && earlier)))));
    kiln_rd_arg<T> r;
    r.v = take_b ? b.v : a.v;
    r.i = take_b ? b.i : a.i;
    return r;
}

// The element x at index i, larger than every index a has seen (a loop over
// one reduced dim): the same result as kiln_rd_arg_pick(a, make(x, i)) with
// fewer operations (ties keep a; the first NaN wins), which keeps a GPU
// argmax at memory speed.
template <class T> KILN_RD_FN kiln_rd_arg<T> kiln_rd_arg_step(kiln_rd_arg<T> a, T x, long long i, bool less) {
    const bool take = a.i < 0 || (less ? x < a.v : a.v < x) || (kiln_rd_isnan(x) && !kiln_rd_isnan(a.v));
    a.v = take ? x : a.v;
    a.i = take ? i : a.i;
    return a;
}

template <class A> struct kiln_rd_moments {
    double n;
    A mean, m2;
};
template <class A> KILN_RD_FN kiln_rd_moments<A> kiln_rd_moments_make(double n, A mean, A m2) {
    kiln_rd_moments<A> r;
    r.n = n;
    r.mean = mean;
    r.m2 = m2;
    return r;
}
template <class A>
KILN_RD_FN kiln_rd_moments<A> kiln_rd_moments_merge(kiln_rd_moments<A> a, kiln_rd_moments<A> b) {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    double n = a.n + b.n;
    A d = b.mean - a.mean;
    return kiln_rd_moments_make<A>(n, a.mean + d * (A)(b.n / n), a.m2 + b.m2 + d * d * (A)(a.n * b.n / n));
}

template <class T> struct kiln_rd_opt {
    T v;
    int has;
};
template <class T> KILN_RD_FN kiln_rd_opt<T> kiln_rd_opt_make(T v, int has) {
    kiln_rd_opt<T> r;
    r.v = v;
    r.has = has;
    return r;
}


#endif
