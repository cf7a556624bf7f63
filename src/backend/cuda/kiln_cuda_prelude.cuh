// kiln_cuda_prelude.cuh: put in front of every kernel NVRTC compiles for kiln,
// before kiln_complex.cuh and kiln_signature.cuh. NVRTC has no standard
// headers; this gives kernels the fixed-width types they expect, laid out as
// glibc does on x86-64/aarch64 so the CPU backend sees the same types.
// Kept tiny on purpose: every line here is parsed on every cold compile.
#define KILN_CUDA 1
// A kernel that includes toolkit headers (curand_kernel.h, ...) puts the
// CUDA C++ standard library on the include path, whose <cuda/std/cstdint>
// and <cuda/std/climits> those headers include: then kiln takes its types
// and limits from there (int64_t is long long), so each has one declaration.
#if defined(__has_include)
#if __has_include(<cuda/std/cstdint>)
#define KILN_CUDA_STD_TYPES 1
#endif
#endif
#ifdef KILN_CUDA_STD_TYPES
#include <cuda/std/climits>
#include <cuda/std/cstdint>
#else
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
#endif
typedef decltype(sizeof(0)) size_t;
typedef decltype((char *)0 - (char *)0) ptrdiff_t;
#define KILN_SIG_STORAGE __device__
#define KILN_HD __host__ __device__
// The <math.h>/<float.h>/<limits.h> constants kernels use most; the CPU
// prelude gets the same names from the real headers. NVRTC has no
// __builtin_huge_val/nan, hence the bit patterns (device code only).
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define HUGE_VALF __int_as_float(0x7f800000)
#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)
#define FLT_MAX 3.40282347e+38F
#define FLT_MIN 1.17549435e-38F
#define FLT_EPSILON 1.19209290e-07F
#define DBL_MAX 1.7976931348623157e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-16
#define M_E 2.7182818284590452354
#define M_LN2 0.69314718055994530942
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_SQRT2 1.41421356237309504880
#ifndef INT_MAX
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX 4294967295U
#define LLONG_MAX 9223372036854775807LL
#define LLONG_MIN (-LLONG_MAX - 1LL)
#endif
