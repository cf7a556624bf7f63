/* blas_native.h: cuBLAS called directly (blas_native.cu, built by nvcc into
 * libkiln_blas_native.so, which kiln_blas_bench dlopens), the baseline of
 * the GPU rows. kiln's CUDA backend runs on the device's primary context,
 * which the CUDA runtime shares, so kiln_array_data() pointers are valid
 * here and both sides multiply the same operands. Row-major C = A B is
 * called as a C programmer would: column-major C^T = B^T A^T, no transposes.
 * Each function runs `warmups` untimed calls, then `repeat` calls each
 * between its own pair of CUDA events, writing milliseconds to times_ms.
 * Returns 0, else a code for blas_native_error. */
#ifndef KILN_BLAS_NATIVE_H
#define KILN_BLAS_NATIVE_H

#ifdef __cplusplus
extern "C" {
#endif

#define BLAS_NATIVE_ABI 3

enum {
    BLAS_NATIVE_F32 = 0,
    BLAS_NATIVE_F64 = 1,
    BLAS_NATIVE_F16 = 2,
    BLAS_NATIVE_BF16 = 3,
    BLAS_NATIVE_C64 = 4,
    BLAS_NATIVE_C128 = 5
};

typedef int (*blas_native_abi_fn)(void);
typedef const char *(*blas_native_error_fn)(int code);
/* batch 1: cublas<t>gemm (f16, bf16: cublasGemmEx, float32 compute); batch > 1:
 * the strided-batched call over packed matrices. */
typedef int (*blas_native_gemm_fn)(int device, int dtype, int m, int n, int k, int batch, const void *a,
                                   const void *b, void *c, int warmups, int repeat, float *times_ms);
/* Host microseconds per cublasSgemm call on m x m matrices, averaged over
 * `calls` calls queued back to back (the device work is waited for after). */
typedef int (*blas_native_call_cost_fn)(int device, int m, const void *a, const void *b, void *c, int calls,
                                        double *us);

#ifdef __cplusplus
}
#endif
#endif
