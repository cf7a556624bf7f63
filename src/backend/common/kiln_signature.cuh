// kiln_signature.cuh: appended to every kernel module on both backends.
// It describes each kernel's parameters from the compiled types themselves
// (after the preprocessor, typedefs and all), so that kiln_launch can check
// arguments against what the kernel really takes. Needs no standard headers:
// NVRTC compiles it with none.
//
// For a kernel `k` the module gets `extern "C" const kiln_sig_table<N> kiln_sig_k`
// (a __device__ global on CUDA): record 0 holds {count, 0...}, record i+1
// {class, size lo, size hi, pointee class, pointee size lo, pointee size hi}
// for parameter i. Classes are kiln_param_class letters.

struct kiln_param_record { unsigned char b[6]; };
template <int N> struct kiln_sig_table { kiln_param_record r[N]; };

template <typename T> struct kiln_cls { static constexpr unsigned char c = 'o'; static constexpr unsigned long size = sizeof(T); };
template <typename T> struct kiln_cls<const T> : kiln_cls<T> {};
template <typename T> struct kiln_cls<volatile T> : kiln_cls<T> {};
template <typename T> struct kiln_cls<const volatile T> : kiln_cls<T> {};
template <> struct kiln_cls<void> { static constexpr unsigned char c = 'o'; static constexpr unsigned long size = 0; };
#define KILN_SIG_CLASS_(type, letter) \
    template <> struct kiln_cls<type> { static constexpr unsigned char c = letter; static constexpr unsigned long size = sizeof(type); };
KILN_SIG_CLASS_(bool, 'b')
KILN_SIG_CLASS_(char, ((char)-1 < 0) ? 'i' : 'u')
KILN_SIG_CLASS_(signed char, 'i')
KILN_SIG_CLASS_(unsigned char, 'u')
KILN_SIG_CLASS_(short, 'i')
KILN_SIG_CLASS_(unsigned short, 'u')
KILN_SIG_CLASS_(int, 'i')
KILN_SIG_CLASS_(unsigned int, 'u')
KILN_SIG_CLASS_(long, 'i')
KILN_SIG_CLASS_(unsigned long, 'u')
KILN_SIG_CLASS_(long long, 'i')
KILN_SIG_CLASS_(unsigned long long, 'u')
KILN_SIG_CLASS_(float, 'f')
KILN_SIG_CLASS_(double, 'f')
#ifdef KILN_CX64 // kiln_complex.cuh is in (always on the CPU; on CUDA when used)
KILN_SIG_CLASS_(kiln_complex64, 'c')
KILN_SIG_CLASS_(kiln_complex128, 'c')
#endif
#ifdef KILN_HAVE_HALF
KILN_SIG_CLASS_(__half, 'f')
#endif
#undef KILN_SIG_CLASS_

// Vector pointees (float4 *, double2 *, int2 *, uchar3 *, and any struct of
// 2 to 4 members x, y[, z[, w]] of one arithmetic type with no padding) are
// recorded as {upper-case lane class, lane size, lane count}, so kiln_launch
// checks them against an array's dtype as it checks scalar pointees. Found
// by their members, not their names: CUDA 13 deprecates some of the names.
template <typename T, typename = void> struct kiln_has_y { static constexpr bool v = false; };
template <typename T> struct kiln_has_y<T, decltype(void(((T *)0)->y))> { static constexpr bool v = true; };
template <typename T, typename = void> struct kiln_has_z { static constexpr bool v = false; };
template <typename T> struct kiln_has_z<T, decltype(void(((T *)0)->z))> { static constexpr bool v = true; };
template <typename T, typename = void> struct kiln_has_w { static constexpr bool v = false; };
template <typename T> struct kiln_has_w<T, decltype(void(((T *)0)->w))> { static constexpr bool v = true; };
template <typename A, typename B> struct kiln_same { static constexpr bool v = false; };
template <typename A> struct kiln_same<A, A> { static constexpr bool v = true; };
template <typename T, typename = void> struct kiln_vector_of {
    static constexpr unsigned char c = kiln_cls<T>::c;
    static constexpr unsigned long size = kiln_cls<T>::size;
};
template <typename T> struct kiln_vector_of<T, decltype(void(((T *)0)->x), void(((T *)0)->y))> {
    typedef decltype(((T *)0)->x) kiln_lane;
    static constexpr unsigned long kiln_lanes = kiln_has_z<T>::v ? (kiln_has_w<T>::v ? 4 : 3) : 2;
    static constexpr unsigned char kiln_lane_cls = kiln_cls<kiln_lane>::c;
    static constexpr bool kiln_is_vector =
        kiln_cls<T>::c == 'o' && (kiln_lane_cls == 'i' || kiln_lane_cls == 'u' || kiln_lane_cls == 'f') &&
        kiln_same<decltype(((T *)0)->y), kiln_lane>::v && sizeof(T) == kiln_lanes * sizeof(kiln_lane);
    static constexpr unsigned char c = kiln_is_vector ? (unsigned char)(kiln_lane_cls - 'a' + 'A') : kiln_cls<T>::c;
    static constexpr unsigned long size = kiln_is_vector ? (sizeof(kiln_lane) | kiln_lanes << 8) : kiln_cls<T>::size;
};
template <typename T> struct kiln_unqualified { typedef T type; };
template <typename T> struct kiln_unqualified<const T> { typedef T type; };
template <typename T> struct kiln_unqualified<volatile T> { typedef T type; };
template <typename T> struct kiln_unqualified<const volatile T> { typedef T type; };
template <typename T> struct kiln_pointee : kiln_vector_of<typename kiln_unqualified<T>::type> {};

template <typename T> struct kiln_param_of {
    static constexpr kiln_param_record value = {{kiln_cls<T>::c, (unsigned char)(sizeof(T) & 255),
                                                 (unsigned char)(sizeof(T) >> 8), 0, 0, 0}};
};
template <typename T> struct kiln_param_of<T *> {
    static constexpr kiln_param_record value = {{'p', (unsigned char)sizeof(T *), 0, kiln_pointee<T>::c,
                                                 (unsigned char)(kiln_pointee<T>::size & 255),
                                                 (unsigned char)(kiln_pointee<T>::size >> 8)}};
};
template <typename T> struct kiln_param_of<T *const> : kiln_param_of<T *> {};
template <typename T> struct kiln_param_of<T *__restrict__> : kiln_param_of<T *> {};
template <typename T> struct kiln_param_of<T *const __restrict__> : kiln_param_of<T *> {};

template <typename F> struct kiln_sig;
template <typename... A> struct kiln_sig<void (*)(A...)> {
    static constexpr kiln_sig_table<sizeof...(A) + 1> kiln_table = {
        {{{(unsigned char)sizeof...(A), 0, 0, 0, 0, 0}}, kiln_param_of<A>::value...}};
};

// KILN_SIG_STORAGE is `__device__` under NVRTC and empty on the CPU.
// Expands after the user's source: kiln-prefixed names only (a user's
// `#define table 3` must not reach it).
// kiln__symbol is an identifier; the kernel itself any C++ name for it
// (namespaces, template arguments: commas included, hence variadic).
#define KILN_EXPORT_SIGNATURE(kiln__symbol, ...) \
    extern "C" KILN_SIG_STORAGE const auto kiln_sig_##kiln__symbol = kiln_sig<decltype(&__VA_ARGS__)>::kiln_table;
