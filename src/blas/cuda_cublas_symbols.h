/* cuda_cublas_symbols.h: the cuBLAS functions kiln takes, one line each:
 * CUBLAS_FN(name, parameters), all returning cublasStatus_t (int). No cuBLAS
 * headers at build time: handles and streams are void *, enums int, complex
 * scalars float[2] / double[2] (cuComplex's layout), strides long long. */
CUBLAS_FN(cublasCreate_v2, (void **))
CUBLAS_FN(cublasDestroy_v2, (void *))
CUBLAS_FN(cublasSetStream_v2, (void *, void *))
CUBLAS_FN(cublasSetPointerMode_v2, (void *, int))
CUBLAS_FN(cublasSetMathMode, (void *, int))
CUBLAS_FN(cublasSgemm_v2, (void *, int, int, int, int, int, const float *, const void *, int, const void *,
                           int, const float *, void *, int))
CUBLAS_FN(cublasDgemm_v2, (void *, int, int, int, int, int, const double *, const void *, int, const void *,
                           int, const double *, void *, int))
CUBLAS_FN(cublasCgemm_v2, (void *, int, int, int, int, int, const float *, const void *, int, const void *,
                           int, const float *, void *, int))
CUBLAS_FN(cublasZgemm_v2, (void *, int, int, int, int, int, const double *, const void *, int, const void *,
                           int, const double *, void *, int))
CUBLAS_FN(cublasSgemmStridedBatched,
          (void *, int, int, int, int, int, const float *, const void *, int, long long, const void *, int,
           long long, const float *, void *, int, long long, int))
CUBLAS_FN(cublasDgemmStridedBatched,
          (void *, int, int, int, int, int, const double *, const void *, int, long long, const void *, int,
           long long, const double *, void *, int, long long, int))
CUBLAS_FN(cublasCgemmStridedBatched,
          (void *, int, int, int, int, int, const float *, const void *, int, long long, const void *, int,
           long long, const float *, void *, int, long long, int))
CUBLAS_FN(cublasZgemmStridedBatched,
          (void *, int, int, int, int, int, const double *, const void *, int, long long, const void *, int,
           long long, const double *, void *, int, long long, int))
CUBLAS_FN(cublasGemmEx, (void *, int, int, int, int, int, const void *, const void *, int, int, const void *,
                         int, int, const void *, void *, int, int, int, int))
CUBLAS_FN(cublasGemmStridedBatchedEx,
          (void *, int, int, int, int, int, const void *, const void *, int, int, long long, const void *,
           int, int, long long, const void *, void *, int, int, long long, int, int, int))
CUBLAS_FN(cublasSgemv_v2, (void *, int, int, int, const float *, const void *, int, const void *, int,
                           const float *, void *, int))
CUBLAS_FN(cublasDgemv_v2, (void *, int, int, int, const double *, const void *, int, const void *, int,
                           const double *, void *, int))
CUBLAS_FN(cublasCgemv_v2, (void *, int, int, int, const float *, const void *, int, const void *, int,
                           const float *, void *, int))
CUBLAS_FN(cublasZgemv_v2, (void *, int, int, int, const double *, const void *, int, const void *, int,
                           const double *, void *, int))
CUBLAS_FN(cublasSdot_v2, (void *, int, const void *, int, const void *, int, float *))
CUBLAS_FN(cublasDdot_v2, (void *, int, const void *, int, const void *, int, double *))
CUBLAS_FN(cublasCdotu_v2, (void *, int, const void *, int, const void *, int, float *))
CUBLAS_FN(cublasCdotc_v2, (void *, int, const void *, int, const void *, int, float *))
CUBLAS_FN(cublasZdotu_v2, (void *, int, const void *, int, const void *, int, double *))
CUBLAS_FN(cublasZdotc_v2, (void *, int, const void *, int, const void *, int, double *))
CUBLAS_FN(cublasSaxpy_v2, (void *, int, const float *, const void *, int, void *, int))
CUBLAS_FN(cublasDaxpy_v2, (void *, int, const double *, const void *, int, void *, int))
CUBLAS_FN(cublasCaxpy_v2, (void *, int, const float *, const void *, int, void *, int))
CUBLAS_FN(cublasZaxpy_v2, (void *, int, const double *, const void *, int, void *, int))
CUBLAS_FN(cublasSscal_v2, (void *, int, const float *, void *, int))
CUBLAS_FN(cublasDscal_v2, (void *, int, const double *, void *, int))
CUBLAS_FN(cublasCscal_v2, (void *, int, const float *, void *, int))
CUBLAS_FN(cublasZscal_v2, (void *, int, const double *, void *, int))
CUBLAS_FN(cublasSnrm2_v2, (void *, int, const void *, int, float *))
CUBLAS_FN(cublasDnrm2_v2, (void *, int, const void *, int, double *))
CUBLAS_FN(cublasScnrm2_v2, (void *, int, const void *, int, float *))
CUBLAS_FN(cublasDznrm2_v2, (void *, int, const void *, int, double *))
CUBLAS_FN(cublasSgemmBatched, (void *, int, int, int, int, int, const float *, const void *const *, int,
                               const void *const *, int, const float *, void *const *, int, int))
CUBLAS_FN(cublasDgemmBatched, (void *, int, int, int, int, int, const double *, const void *const *, int,
                               const void *const *, int, const double *, void *const *, int, int))
CUBLAS_FN(cublasCgemmBatched, (void *, int, int, int, int, int, const float *, const void *const *, int,
                               const void *const *, int, const float *, void *const *, int, int))
CUBLAS_FN(cublasZgemmBatched, (void *, int, int, int, int, int, const double *, const void *const *, int,
                               const void *const *, int, const double *, void *const *, int, int))
CUBLAS_FN(cublasGemmBatchedEx,
          (void *, int, int, int, int, int, const void *, const void *const *, int, int, const void *const *,
           int, int, const void *, void *const *, int, int, int, int, int))
