/* cuda_error.c: CUresult -> kiln_status, with the driver's own name and
 * description of the error in the thread's message. */
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_prof.h"
#include "core/error.h"

_Thread_local unsigned kiln_cuda_failed_calls;

static kiln_status status_of(CUresult r) {
    switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY: return KILN_ERR_OUT_OF_MEMORY;
    /* Sticky errors: the context is unusable afterwards, the core marks it dead. */
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK: return KILN_ERR_DEVICE_FAULT;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: return KILN_ERR_LAUNCH_CONFIG;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_INSUFFICIENT_DRIVER: return KILN_ERR_NO_DEVICE;
    default: return KILN_ERR_DRIVER;
    }
}

static kiln_status fail_as(const kiln_cuda_driver *cu, CUresult r, const char *what, kiln_status status) {
    kiln_cuda_failed_calls++; /* the profiler expects no device record for this call */
    const char *name = NULL, *text = NULL;
    if (cu->cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "unknown CUresult";
    if (cu->cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "no description";
    if (status == KILN_ERR_DEVICE_FAULT)
        return kiln_set_error(status, "%s: %s (%d: %s); the CUDA context is now unusable", what, name, r,
                              text);
    return kiln_set_error(status, "%s: %s (%d: %s)", what, name, r, text);
}

kiln_status kiln_cuda_fail(const kiln_cuda_driver *cu, CUresult r, const char *what) {
    return fail_as(cu, r, what, status_of(r));
}

kiln_status kiln_cuda_fail_launch(const kiln_cuda_driver *cu, CUresult r, const char *what) {
    return fail_as(cu, r, what, r == CUDA_ERROR_INVALID_VALUE ? KILN_ERR_LAUNCH_CONFIG : status_of(r));
}
