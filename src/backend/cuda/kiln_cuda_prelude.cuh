// kiln_cuda_prelude.cuh: put in front of every kernel NVRTC compiles for kiln,
// before kiln_complex.cuh and kiln_signature.cuh. NVRTC has no standard
// headers; this gives kernels the fixed-width types they expect, laid out as
// glibc does on x86-64/aarch64 so the CPU backend sees the same types.
// Kept tiny on purpose: every line here is parsed on every cold compile.
#define KILN_CUDA 1
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
typedef decltype(sizeof(0)) size_t;
typedef decltype((char *)0 - (char *)0) ptrdiff_t;
#define KILN_SIG_STORAGE __device__
#define KILN_HD __host__ __device__
