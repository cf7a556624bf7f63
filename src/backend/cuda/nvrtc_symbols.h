/* nvrtc_symbols.h: every libnvrtc entry point kiln calls, one line each (see
 * cuda_driver_symbols.h). NVRTC exports plain C names, found with dlsym.
 *   KILN_NVRTC_SYMBOL(return type, name, args) */
// clang-format off: it reads `T *x` in a macro argument as a multiplication.
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcVersion, (int *major, int *minor))
KILN_NVRTC_SYMBOL(const char *, nvrtcGetErrorString, (nvrtcResult result))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcCreateProgram,
                  (nvrtcProgram * prog, const char *src, const char *name, int num_headers,
                   const char *const *headers, const char *const *include_names))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram * prog))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcCompileProgram,
                  (nvrtcProgram prog, int num_options, const char *const *options))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcAddNameExpression, (nvrtcProgram prog, const char *name_expression))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcGetLoweredName,
                  (nvrtcProgram prog, const char *name_expression, const char **lowered))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t *size))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char *log))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram prog, size_t *size))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram prog, char *cubin))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcGetLTOIRSize, (nvrtcProgram prog, size_t *size))
KILN_NVRTC_SYMBOL(nvrtcResult, nvrtcGetLTOIR, (nvrtcProgram prog, char *ltoir))
