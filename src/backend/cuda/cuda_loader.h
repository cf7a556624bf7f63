/* cuda_loader.h: libcuda and libnvrtc, opened with dlopen once per process.
 *
 * These two tables are the only process-wide state of the CUDA backend (the
 * loaded libraries cannot be per context). Each is filled once under
 * pthread_once and read-only afterwards, so any thread may use it freely. */
#ifndef KILN_CUDA_LOADER_H
#define KILN_CUDA_LOADER_H

#include "backend/cuda/cuda_types.h"
#include "kiln.h"

typedef struct kiln_cuda_driver {
#define KILN_CU_REQUIRED(name, version, args) CUresult(*name) args;
#define KILN_CU_OPTIONAL(name, version, args) CUresult(*name) args;
#include "backend/cuda/cuda_driver_symbols.h"
#undef KILN_CU_REQUIRED
#undef KILN_CU_OPTIONAL
    int driver_version; /* 13000 for CUDA 13.0 */
} kiln_cuda_driver;

typedef struct kiln_nvrtc {
#define KILN_NVRTC_SYMBOL(ret, name, args) ret(*name) args;
#include "backend/cuda/nvrtc_symbols.h"
#undef KILN_NVRTC_SYMBOL
    int major, minor;
    /* The toolkit's header folders beside the library that loaded
     * (<toolkit>/include and its cccl/), given to every compile as nvcc
     * would see them; include_count 0 where none was found. */
    char include_dirs[2][1024];
    int include_count;
} kiln_nvrtc;

/* The initialised driver, or NULL with *status (KILN_ERR_NO_DEVICE or
 * KILN_ERR_DRIVER) and a static *why ("libcuda.so.1 not found (no NVIDIA
 * driver)", ...). Sets no thread error. */
const kiln_cuda_driver *kiln_cuda_driver_load(kiln_status *status, const char **why);
/* NVRTC, or NULL with a static *why (KILN_ERR_COMPILER_MISSING). */
const kiln_nvrtc *kiln_cuda_nvrtc_load(const char **why);

#endif
