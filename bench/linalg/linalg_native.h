/* linalg_native.h: cuSOLVER called directly (linalg_native.cu, built by nvcc
 * into libkiln_linalg_native.so, which kiln_linalg_bench dlopens), the
 * baseline of the GPU rows. kiln's CUDA backend runs on the device's
 * primary context, which the CUDA runtime shares, so kiln_array_data()
 * pointers are valid here and both sides factor the same matrix. As a C
 * programmer would: the n x n column-major matrix `a` is copied into a
 * work buffer (the routines work in place), then factored and, for solve,
 * one right-hand side solved; each matrix's info is read back (one int).
 * Each call runs `warmups` untimed rounds, then `repeat` rounds each between
 * its own pair of CUDA events, writing milliseconds to times_ms. Returns
 * 0, else a code for linalg_native_error. */
#ifndef KILN_LINALG_NATIVE_H
#define KILN_LINALG_NATIVE_H

#ifdef __cplusplus
extern "C" {
#endif

#define LINALG_NATIVE_ABI 1

enum { LINALG_NATIVE_F32 = 0, LINALG_NATIVE_F64 = 1 };
enum {
    LINALG_NATIVE_SOLVE = 0,    /* Xgetrf + Xgetrs, one right-hand side */
    LINALG_NATIVE_CHOLESKY = 1, /* Xpotrf */
    LINALG_NATIVE_QR = 2,       /* Xgeqrf + <t>orgqr: reduced Q and R */
    LINALG_NATIVE_SVD = 3,      /* Xgesvd, singular values only */
    LINALG_NATIVE_SVD_UV = 4,   /* Xgesvd jobu = jobvt = 'S' */
    LINALG_NATIVE_EIGH = 5      /* Xsyevd with vectors */
};

typedef int (*linalg_native_abi_fn)(void);
typedef const char *(*linalg_native_error_fn)(int code);
/* b: n values (solve only), a: n x n, both device memory of `device`. */
typedef int (*linalg_native_run_fn)(int device, int op, int dtype, int n, const void *a, const void *b,
                                    int warmups, int repeat, float *times_ms);

#ifdef __cplusplus
}
#endif
#endif
