/* cpu_openblas_symbols.h: the CBLAS functions kiln takes from OpenBLAS, one
 * line each: OPENBLAS_FN(name, return type, parameters). Declared here (no
 * cblas.h at build time); CBLAS enums are passed as int (same ABI). LP64
 * OpenBLAS (Debian's libopenblas0): blasint is int. */
OPENBLAS_FN(cblas_sgemm, void,
            (int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *,
             int))
OPENBLAS_FN(cblas_dgemm, void,
            (int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *,
             int))
OPENBLAS_FN(cblas_cgemm, void,
            (int, int, int, int, int, int, const void *, const void *, int, const void *, int, const void *,
             void *, int))
OPENBLAS_FN(cblas_zgemm, void,
            (int, int, int, int, int, int, const void *, const void *, int, const void *, int, const void *,
             void *, int))
OPENBLAS_FN(cblas_sgemv, void,
            (int, int, int, int, float, const float *, int, const float *, int, float, float *, int))
OPENBLAS_FN(cblas_dgemv, void,
            (int, int, int, int, double, const double *, int, const double *, int, double, double *, int))
OPENBLAS_FN(cblas_cgemv, void,
            (int, int, int, int, const void *, const void *, int, const void *, int, const void *, void *,
             int))
OPENBLAS_FN(cblas_zgemv, void,
            (int, int, int, int, const void *, const void *, int, const void *, int, const void *, void *,
             int))
OPENBLAS_FN(cblas_sdot, float, (int, const float *, int, const float *, int))
OPENBLAS_FN(cblas_ddot, double, (int, const double *, int, const double *, int))
OPENBLAS_FN(cblas_cdotu_sub, void, (int, const void *, int, const void *, int, void *))
OPENBLAS_FN(cblas_cdotc_sub, void, (int, const void *, int, const void *, int, void *))
OPENBLAS_FN(cblas_zdotu_sub, void, (int, const void *, int, const void *, int, void *))
OPENBLAS_FN(cblas_zdotc_sub, void, (int, const void *, int, const void *, int, void *))
OPENBLAS_FN(cblas_saxpy, void, (int, float, const float *, int, float *, int))
OPENBLAS_FN(cblas_daxpy, void, (int, double, const double *, int, double *, int))
OPENBLAS_FN(cblas_caxpy, void, (int, const void *, const void *, int, void *, int))
OPENBLAS_FN(cblas_zaxpy, void, (int, const void *, const void *, int, void *, int))
OPENBLAS_FN(cblas_sscal, void, (int, float, float *, int))
OPENBLAS_FN(cblas_dscal, void, (int, double, double *, int))
OPENBLAS_FN(cblas_cscal, void, (int, const void *, void *, int))
OPENBLAS_FN(cblas_zscal, void, (int, const void *, void *, int))
OPENBLAS_FN(cblas_snrm2, float, (int, const float *, int))
OPENBLAS_FN(cblas_dnrm2, double, (int, const double *, int))
OPENBLAS_FN(cblas_scnrm2, float, (int, const void *, int))
OPENBLAS_FN(cblas_dznrm2, double, (int, const void *, int))
OPENBLAS_FN(openblas_set_num_threads, void, (int))
OPENBLAS_FN(openblas_get_config, char *, (void))
