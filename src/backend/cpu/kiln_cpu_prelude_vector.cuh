// kiln_cpu_prelude_vector.cuh: CUDA's vector types (float2, int4, dim3, ...)
// on the CPU. Follows kiln_cpu_prelude_math.cuh.

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
