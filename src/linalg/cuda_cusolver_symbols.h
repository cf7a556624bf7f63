/* cuda_cusolver_symbols.h: the cuSOLVER functions kiln takes, one line
 * each: CUSOLVER_FN(name, parameters), all returning cusolverStatus_t
 * (int). No cuSOLVER headers at build time: handles, params and streams are
 * void *, enums (cudaDataType, cublasFillMode_t, cublasOperation_t,
 * cusolverEigMode_t) int. The 64-bit generic API where CUDA 13's
 * cusolverDn.h has it; orgqr/ungqr and the batched Cholesky only exist in
 * the typed 32-bit forms. */
CUSOLVER_FN(cusolverDnCreate, (void **))
CUSOLVER_FN(cusolverDnDestroy, (void *))
CUSOLVER_FN(cusolverDnSetStream, (void *, void *))
CUSOLVER_FN(cusolverDnCreateParams, (void **))
CUSOLVER_FN(cusolverDnDestroyParams, (void *))
CUSOLVER_FN(cusolverDnXgetrf_bufferSize,
            (void *, void *, int64_t, int64_t, int, const void *, int64_t, int, size_t *, size_t *))
CUSOLVER_FN(cusolverDnXgetrf, (void *, void *, int64_t, int64_t, int, void *, int64_t, int64_t *, int, void *,
                               size_t, void *, size_t, int *))
CUSOLVER_FN(cusolverDnXgetrs, (void *, void *, int, int64_t, int64_t, int, const void *, int64_t,
                               const int64_t *, int, void *, int64_t, int *))
CUSOLVER_FN(cusolverDnXpotrf_bufferSize,
            (void *, void *, int, int64_t, int, const void *, int64_t, int, size_t *, size_t *))
CUSOLVER_FN(cusolverDnXpotrf,
            (void *, void *, int, int64_t, int, void *, int64_t, int, void *, size_t, void *, size_t, int *))
CUSOLVER_FN(cusolverDnXgeqrf_bufferSize, (void *, void *, int64_t, int64_t, int, const void *, int64_t, int,
                                          const void *, int, size_t *, size_t *))
CUSOLVER_FN(cusolverDnXgeqrf, (void *, void *, int64_t, int64_t, int, void *, int64_t, int, void *, int,
                               void *, size_t, void *, size_t, int *))
CUSOLVER_FN(cusolverDnXgesvd_bufferSize,
            (void *, void *, signed char, signed char, int64_t, int64_t, int, const void *, int64_t, int,
             const void *, int, const void *, int64_t, int, const void *, int64_t, int, size_t *, size_t *))
CUSOLVER_FN(cusolverDnXgesvd,
            (void *, void *, signed char, signed char, int64_t, int64_t, int, void *, int64_t, int, void *,
             int, void *, int64_t, int, void *, int64_t, int, void *, size_t, void *, size_t, int *))
CUSOLVER_FN(cusolverDnXsyevd_bufferSize, (void *, void *, int, int, int64_t, int, const void *, int64_t, int,
                                          const void *, int, size_t *, size_t *))
CUSOLVER_FN(cusolverDnXsyevd, (void *, void *, int, int, int64_t, int, void *, int64_t, int, void *, int,
                               void *, size_t, void *, size_t, int *))
CUSOLVER_FN(cusolverDnSorgqr_bufferSize, (void *, int, int, int, const void *, int, const void *, int *))
CUSOLVER_FN(cusolverDnDorgqr_bufferSize, (void *, int, int, int, const void *, int, const void *, int *))
CUSOLVER_FN(cusolverDnCungqr_bufferSize, (void *, int, int, int, const void *, int, const void *, int *))
CUSOLVER_FN(cusolverDnZungqr_bufferSize, (void *, int, int, int, const void *, int, const void *, int *))
CUSOLVER_FN(cusolverDnSorgqr, (void *, int, int, int, void *, int, const void *, void *, int, int *))
CUSOLVER_FN(cusolverDnDorgqr, (void *, int, int, int, void *, int, const void *, void *, int, int *))
CUSOLVER_FN(cusolverDnCungqr, (void *, int, int, int, void *, int, const void *, void *, int, int *))
CUSOLVER_FN(cusolverDnZungqr, (void *, int, int, int, void *, int, const void *, void *, int, int *))
CUSOLVER_FN(cusolverDnSpotrfBatched, (void *, int, int, void **, int, int *, int))
CUSOLVER_FN(cusolverDnDpotrfBatched, (void *, int, int, void **, int, int *, int))
CUSOLVER_FN(cusolverDnCpotrfBatched, (void *, int, int, void **, int, int *, int))
CUSOLVER_FN(cusolverDnZpotrfBatched, (void *, int, int, void **, int, int *, int))
