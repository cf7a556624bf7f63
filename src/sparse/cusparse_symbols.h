/* cusparse_symbols.h: the cuSPARSE functions kiln takes, one line each:
 * CUSPARSE_FN(name, parameters), all returning cusparseStatus_t (int). No
 * cuSPARSE headers at build time: handles, descriptors and streams are
 * void *, enums int (values from CUDA 13's cusparse.h and library_types.h). */
CUSPARSE_FN(cusparseCreate, (void **))
CUSPARSE_FN(cusparseDestroy, (void *))
CUSPARSE_FN(cusparseGetVersion, (void *, int *))
CUSPARSE_FN(cusparseSetStream, (void *, void *))
CUSPARSE_FN(cusparseCreateCsr,
            (void **, int64_t, int64_t, int64_t, void *, void *, void *, int, int, int, int))
CUSPARSE_FN(cusparseCreateCoo, (void **, int64_t, int64_t, int64_t, void *, void *, void *, int, int, int))
CUSPARSE_FN(cusparseDestroySpMat, (void *))
CUSPARSE_FN(cusparseCreateDnVec, (void **, int64_t, void *, int))
CUSPARSE_FN(cusparseDestroyDnVec, (void *))
CUSPARSE_FN(cusparseCreateDnMat, (void **, int64_t, int64_t, int64_t, void *, int, int))
CUSPARSE_FN(cusparseDestroyDnMat, (void *))
CUSPARSE_FN(cusparseSpMV_bufferSize,
            (void *, int, const void *, void *, void *, const void *, void *, int, int, size_t *))
CUSPARSE_FN(cusparseSpMV, (void *, int, const void *, void *, void *, const void *, void *, int, int, void *))
CUSPARSE_FN(cusparseSpMM_bufferSize,
            (void *, int, int, const void *, void *, void *, const void *, void *, int, int, size_t *))
CUSPARSE_FN(cusparseSpMM,
            (void *, int, int, const void *, void *, void *, const void *, void *, int, int, void *))
