// gufunc_views.cuh: what a guvectorize body sees, on both backends (put after
// the backend's prelude and kiln_complex.cuh, before the user's preamble).
//
//  - kiln_gu_view<S, T, ND>: one core argument of ND >= 1 dims: a pointer to
//    storage S (const for inputs), the lengths and element strides of its core
//    dims. x[i] / x(i) index a 1-d view, A(i, j) or A[i][j] a 2-d one; x.len is
//    shape[0], x.shape[k], x.strides[k] and x.ndim are there too. T is the
//    signature's type: when S differs (an input cast safely, e.g. int32 read by
//    an f8 signature, or float16 computed as float), reads convert.
//  - Scalars of the layout ("()") are plain values (inputs) or references
//    (outputs).
//  - float16 is stored as its IEEE bits (kiln_gu_half) and computed in float:
//    neither backend needs a half type; writes go through kiln_gu_half_ref.
//  - bfloat16 likewise (kiln_gu_bf16, kiln_gu_bf16_ref): float32's upper 16
//    bits, so reads are a shift and writes round to nearest even.
//  - The generated kernel builds views from constants where it can (core sizes
//    and unit strides): after inlining, the compiler sees x.len == 4.
#ifndef KILN_GU_VIEWS
#define KILN_GU_VIEWS 1

#define KILN_GU_FN __device__ __forceinline__

struct kiln_gu_half { unsigned short bits; };

static KILN_GU_FN float kiln_gu_h2f(unsigned short h) {
#if defined(KILN_CUDA)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#else
    unsigned int sign = (unsigned int)(h & 0x8000u) << 16, ex = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
    if (ex == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (ex != 0) {
        bits = sign | ((ex + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {
        int e = -1;
        do { mant <<= 1; e++; } while (!(mant & 0x400u));
        bits = sign | ((unsigned int)(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
#endif
}

static KILN_GU_FN unsigned short kiln_gu_f2h(float f) {
#if defined(KILN_CUDA)
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    unsigned int x;
    memcpy(&x, &f, 4);
    unsigned int sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (unsigned short)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        if (ax < 0x33000000u) return (unsigned short)sign;
        unsigned int e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
        unsigned int r = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (unsigned short)(sign | r);
    }
    unsigned int r = ((ax >> 13) - (112u << 10)), rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (unsigned short)(sign | r);
#endif
}

// A writable float16 element: reads give float, writes round to nearest even.
struct kiln_gu_half_ref {
    kiln_gu_half *p;
    KILN_GU_FN operator float() const { return kiln_gu_h2f(p->bits); }
    KILN_GU_FN const kiln_gu_half_ref &operator=(float v) const { p->bits = kiln_gu_f2h(v); return *this; }
    KILN_GU_FN const kiln_gu_half_ref &operator=(const kiln_gu_half_ref &o) const { p->bits = o.p->bits; return *this; }
    KILN_GU_FN const kiln_gu_half_ref &operator+=(float v) const { return *this = (float)*this + v; }
    KILN_GU_FN const kiln_gu_half_ref &operator-=(float v) const { return *this = (float)*this - v; }
    KILN_GU_FN const kiln_gu_half_ref &operator*=(float v) const { return *this = (float)*this * v; }
    KILN_GU_FN const kiln_gu_half_ref &operator/=(float v) const { return *this = (float)*this / v; }
};

struct kiln_gu_bf16 { unsigned short bits; };

// Plain bit arithmetic on both backends (no bf16 instructions before sm_80);
// the same rounding as kiln_float_to_bfloat16 on the host.
static KILN_GU_FN float kiln_gu_bf2f(unsigned short b) {
    unsigned int x = (unsigned int)b << 16;
#if defined(KILN_CUDA)
    return __uint_as_float(x);
#else
    float f;
    memcpy(&f, &x, 4);
    return f;
#endif
}

static KILN_GU_FN unsigned short kiln_gu_f2bf(float f) {
#if defined(KILN_CUDA)
    unsigned int x = __float_as_uint(f);
#else
    unsigned int x;
    memcpy(&x, &f, 4);
#endif
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x0040u); // NaN stays NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return (unsigned short)(x >> 16);
}

// A writable bfloat16 element, as kiln_gu_half_ref.
struct kiln_gu_bf16_ref {
    kiln_gu_bf16 *p;
    KILN_GU_FN operator float() const { return kiln_gu_bf2f(p->bits); }
    KILN_GU_FN const kiln_gu_bf16_ref &operator=(float v) const { p->bits = kiln_gu_f2bf(v); return *this; }
    KILN_GU_FN const kiln_gu_bf16_ref &operator=(const kiln_gu_bf16_ref &o) const { p->bits = o.p->bits; return *this; }
    KILN_GU_FN const kiln_gu_bf16_ref &operator+=(float v) const { return *this = (float)*this + v; }
    KILN_GU_FN const kiln_gu_bf16_ref &operator-=(float v) const { return *this = (float)*this - v; }
    KILN_GU_FN const kiln_gu_bf16_ref &operator*=(float v) const { return *this = (float)*this * v; }
    KILN_GU_FN const kiln_gu_bf16_ref &operator/=(float v) const { return *this = (float)*this / v; }
};

// Value conversions NumPy's safe casting allows (reads of cast inputs).
template <class To> struct kiln_gu_cv {
    template <class F> static KILN_GU_FN To go(F v) { return (To)v; }
    static KILN_GU_FN To go(kiln_gu_half v) { return (To)kiln_gu_h2f(v.bits); }
    static KILN_GU_FN To go(kiln_gu_bf16 v) { return (To)kiln_gu_bf2f(v.bits); }
};
// (The complex types by their KILN_CX names, and only where the module has
// them: see ufunc_common.cuh.)
#ifdef KILN_CX64
#define KILN_GU_CV_CX_(C, R)                                                         \
    template <> struct kiln_gu_cv<C> {                                                \
        static KILN_GU_FN C go(KILN_CX64 v) { return C((R)v.x, (R)v.y); }            \
        static KILN_GU_FN C go(KILN_CX128 v) { return C((R)v.x, (R)v.y); }           \
        static KILN_GU_FN C go(kiln_gu_half v) { return C((R)kiln_gu_h2f(v.bits)); } \
        static KILN_GU_FN C go(kiln_gu_bf16 v) { return C((R)kiln_gu_bf2f(v.bits)); } \
        template <class F> static KILN_GU_FN C go(F v) { return C((R)v); }           \
    };
KILN_GU_CV_CX_(KILN_CX64, float)
KILN_GU_CV_CX_(KILN_CX128, double)
#undef KILN_GU_CV_CX_
#endif

// How an element of storage S is accessed as T: a plain reference when they
// agree, a float16 proxy, or (read-only inputs of another dtype) a value.
template <class S, class T> struct kiln_gu_access {
    typedef T kiln_ref;
    static KILN_GU_FN T at(S *p) { return kiln_gu_cv<T>::go(*p); }
};
template <class T> struct kiln_gu_access<T, T> {
    typedef T &kiln_ref;
    static KILN_GU_FN T &at(T *p) { return *p; }
};
template <class T> struct kiln_gu_access<const T, T> {
    typedef const T &kiln_ref;
    static KILN_GU_FN const T &at(const T *p) { return *p; }
};
template <> struct kiln_gu_access<kiln_gu_half, float> {
    typedef kiln_gu_half_ref kiln_ref;
    static KILN_GU_FN kiln_gu_half_ref at(kiln_gu_half *p) { kiln_gu_half_ref r = {p}; return r; }
};
template <> struct kiln_gu_access<const kiln_gu_half, float> {
    typedef float kiln_ref;
    static KILN_GU_FN float at(const kiln_gu_half *p) { return kiln_gu_h2f(p->bits); }
};
template <> struct kiln_gu_access<kiln_gu_bf16, float> {
    typedef kiln_gu_bf16_ref kiln_ref;
    static KILN_GU_FN kiln_gu_bf16_ref at(kiln_gu_bf16 *p) { kiln_gu_bf16_ref r = {p}; return r; }
};
template <> struct kiln_gu_access<const kiln_gu_bf16, float> {
    typedef float kiln_ref;
    static KILN_GU_FN float at(const kiln_gu_bf16 *p) { return kiln_gu_bf2f(p->bits); }
};

// Reads an input scalar ("()" in the layout).
template <class T, class S> static KILN_GU_FN T kiln_gu_get(const S *p) { return kiln_gu_cv<T>::go(*p); }

template <class S, class T, int ND> struct kiln_gu_view {
    typedef typename kiln_gu_access<S, T>::kiln_ref kiln_ref;
    static constexpr int ndim = ND;
    S *data;
    long long len; // shape[0]
    long long shape[ND];
    long long strides[ND]; // in elements
    template <class... I> KILN_GU_FN kiln_ref operator()(I... idx) const {
        static_assert(sizeof...(I) == ND, "a view is indexed with one index per core dim");
        long long ix[ND] = {(long long)idx...}, off = 0;
        for (int k = 0; k < ND; k++) off += ix[k] * strides[k];
        return kiln_gu_access<S, T>::at(data + off);
    }
    // A[i] of an n-d view: the (n-1)-d view of row i.
    KILN_GU_FN kiln_gu_view<S, T, ND - 1> operator[](long long i) const {
        kiln_gu_view<S, T, ND - 1> v;
        v.data = data + i * strides[0];
        for (int k = 1; k < ND; k++) {
            v.shape[k - 1] = shape[k];
            v.strides[k - 1] = strides[k];
        }
        v.len = v.shape[0];
        return v;
    }
    KILN_GU_FN long long size() const {
        long long n = 1;
        for (int k = 0; k < ND; k++) n *= shape[k];
        return n;
    }
};
template <class S, class T> struct kiln_gu_view<S, T, 1> {
    typedef typename kiln_gu_access<S, T>::kiln_ref kiln_ref;
    static constexpr int ndim = 1;
    S *data;
    long long len;
    long long shape[1];
    long long strides[1];
    KILN_GU_FN kiln_ref operator[](long long i) const { return kiln_gu_access<S, T>::at(data + i * strides[0]); }
    KILN_GU_FN kiln_ref operator()(long long i) const { return kiln_gu_access<S, T>::at(data + i * strides[0]); }
    KILN_GU_FN long long size() const { return shape[0]; }
};

#if defined(KILN_CUDA)
// Vector types for the GPU fast paths' tile and row copies.
template <int W> struct kiln_gu_vec;
template <> struct kiln_gu_vec<16> { typedef uint4 type; };
template <> struct kiln_gu_vec<8> { typedef uint2 type; };
template <> struct kiln_gu_vec<4> { typedef unsigned int type; };
template <> struct kiln_gu_vec<2> { typedef unsigned short type; };
template <> struct kiln_gu_vec<1> { typedef unsigned char type; };

// Block-cooperative copy of nbytes: neighbouring threads move neighbouring
// W-byte words (coalesced), then the bytes left over. dst and src are
// W-aligned; used for both global->shared and shared->global.
template <int W>
static __device__ __forceinline__ void kiln_gu_copy_tile(unsigned char *dst, const unsigned char *src, int nbytes) {
    typedef typename kiln_gu_vec<W>::type V;
    int nv = nbytes / W;
    for (int j = threadIdx.x; j < nv; j += blockDim.x) ((V *)dst)[j] = ((const V *)src)[j];
    for (int j = nv * W + threadIdx.x; j < nbytes; j += blockDim.x) dst[j] = src[j];
}
#endif

#endif
