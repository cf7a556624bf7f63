/* cuda_driver_symbols.h: every libcuda entry point kiln calls, one line each,
 * in the X-macro style of IREE's dynamic_symbol_tables.h. The including file
 * defines
 *   KILN_CU_REQUIRED(name, version, args)  missing -> the driver is unusable
 *   KILN_CU_OPTIONAL(name, version, args)  missing -> the pointer stays NULL
 * `version` is the CUDA version whose ABI of `name` the arguments below match;
 * cuGetProcAddress_v2 hands back exactly that ABI, so a newer driver that
 * added a _v3 with other arguments can never be called with these. */
// clang-format off: it reads `T *x` in a macro argument as a multiplication.
KILN_CU_REQUIRED(cuInit, 12000, (unsigned int flags))
KILN_CU_REQUIRED(cuDriverGetVersion, 12000, (int *version))
KILN_CU_REQUIRED(cuGetErrorName, 12000, (CUresult error, const char **str))
KILN_CU_REQUIRED(cuGetErrorString, 12000, (CUresult error, const char **str))
KILN_CU_REQUIRED(cuDeviceGetCount, 12000, (int *count))
KILN_CU_REQUIRED(cuDeviceGet, 12000, (CUdevice * device, int ordinal))
KILN_CU_REQUIRED(cuDeviceGetName, 12000, (char *name, int len, CUdevice dev))
KILN_CU_REQUIRED(cuDeviceGetAttribute, 12000, (int *pi, CUdevice_attribute attrib, CUdevice dev))
KILN_CU_REQUIRED(cuDeviceTotalMem, 12000, (size_t * bytes, CUdevice dev))
KILN_CU_REQUIRED(cuDevicePrimaryCtxRetain, 12000, (CUcontext * pctx, CUdevice dev))
KILN_CU_REQUIRED(cuDevicePrimaryCtxRelease, 12000, (CUdevice dev))
KILN_CU_REQUIRED(cuDeviceGetDefaultMemPool, 12000, (CUmemoryPool * pool, CUdevice dev))
KILN_CU_REQUIRED(cuMemPoolSetAttribute, 12000, (CUmemoryPool pool, CUmemPool_attribute attr, void *value))
KILN_CU_REQUIRED(cuMemPoolTrimTo, 12000, (CUmemoryPool pool, size_t min_bytes_to_keep))
KILN_CU_REQUIRED(cuCtxGetCurrent, 12000, (CUcontext * pctx))
KILN_CU_REQUIRED(cuCtxSetCurrent, 12000, (CUcontext ctx))
KILN_CU_REQUIRED(cuCtxSynchronize, 12000, (void))
KILN_CU_REQUIRED(cuMemGetInfo, 12000, (size_t * free_bytes, size_t *total_bytes))
KILN_CU_REQUIRED(cuMemAllocAsync, 12000, (CUdeviceptr * dptr, size_t bytes, CUstream stream))
KILN_CU_REQUIRED(cuMemFreeAsync, 12000, (CUdeviceptr dptr, CUstream stream))
KILN_CU_REQUIRED(cuMemHostAlloc, 12000, (void **pp, size_t bytes, unsigned int flags))
KILN_CU_REQUIRED(cuMemFreeHost, 12000, (void *p))
KILN_CU_REQUIRED(cuPointerGetAttribute, 12000, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr))
KILN_CU_REQUIRED(cuMemcpyHtoDAsync, 12000, (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream))
KILN_CU_REQUIRED(cuMemcpyDtoHAsync, 12000, (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))
KILN_CU_REQUIRED(cuMemcpyDtoDAsync, 12000, (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))
KILN_CU_REQUIRED(cuMemcpyDtoH, 12000, (void *dst, CUdeviceptr src, size_t bytes))
KILN_CU_REQUIRED(cuMemsetD8Async, 12000,
                 (CUdeviceptr dst, unsigned char value, size_t count, CUstream stream))
KILN_CU_REQUIRED(cuStreamCreate, 12000, (CUstream * stream, unsigned int flags))
KILN_CU_REQUIRED(cuStreamSynchronize, 12000, (CUstream stream))
KILN_CU_REQUIRED(cuStreamDestroy, 12000, (CUstream stream))
KILN_CU_REQUIRED(cuEventCreate, 12000, (CUevent * event, unsigned int flags))
KILN_CU_REQUIRED(cuEventRecord, 12000, (CUevent event, CUstream stream))
KILN_CU_REQUIRED(cuEventSynchronize, 12000, (CUevent event))
KILN_CU_REQUIRED(cuEventElapsedTime, 12000, (float *ms, CUevent start, CUevent end))
KILN_CU_REQUIRED(cuEventDestroy, 12000, (CUevent event))
KILN_CU_REQUIRED(cuModuleLoadData, 12000, (CUmodule * module, const void *image))
KILN_CU_REQUIRED(cuModuleUnload, 12000, (CUmodule module))
KILN_CU_REQUIRED(cuModuleGetFunction, 12000, (CUfunction * fn, CUmodule module, const char *name))
KILN_CU_REQUIRED(cuModuleGetGlobal, 12000,
                 (CUdeviceptr * dptr, size_t *bytes, CUmodule module, const char *name))
KILN_CU_REQUIRED(cuFuncGetAttribute, 12000, (int *pi, CUfunction_attribute attrib, CUfunction fn))
KILN_CU_REQUIRED(cuFuncSetAttribute, 12000, (CUfunction fn, CUfunction_attribute attrib, int value))
KILN_CU_OPTIONAL(cuLaunchCooperativeKernel, 12000,
                 (CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                  unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream,
                  void **params))
KILN_CU_REQUIRED(cuLaunchKernel, 12000,
                 (CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                  unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream, void **params,
                  void **extra))
/* The stream's process-unique id (CUDA 12.0+): the profiler's CUPTI timer
 * falls back on it when libcupti cannot name a stream. */
KILN_CU_OPTIONAL(cuStreamGetId, 12000, (CUstream stream, unsigned long long *id))
/* 12.4+: lets function_get cross-check the signature record's count. */
KILN_CU_OPTIONAL(cuFuncGetParamInfo, 12040, (CUfunction fn, size_t index, size_t *offset, size_t *size))
/* Collectives (src/comm/): kiln_comm_wait polls a stream while it watches
 * NCCL for errors, and copies between the devices of one process. */
KILN_CU_OPTIONAL(cuStreamQuery, 12000, (CUstream stream))
KILN_CU_OPTIONAL(cuMemcpyPeerAsync, 12000,
                 (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                  CUstream stream))
KILN_CU_OPTIONAL(cuDeviceCanAccessPeer, 12000, (int *can, CUdevice dev, CUdevice peer))
KILN_CU_OPTIONAL(cuCtxEnablePeerAccess, 12000, (CUcontext peer, unsigned int flags))
/* The driver layer (cuda_driver.c, cuda_graph.c): missing ones make their
 * kiln call KILN_ERR_UNSUPPORTED naming the symbol. */
KILN_CU_OPTIONAL(cuEventQuery, 12000, (CUevent event))
KILN_CU_OPTIONAL(cuStreamWaitEvent, 12000, (CUstream stream, CUevent event, unsigned int flags))
KILN_CU_OPTIONAL(cuLaunchHostFunc, 12000, (CUstream stream, CUhostFn fn, void *user))
KILN_CU_OPTIONAL(cuOccupancyMaxActiveBlocksPerMultiprocessor, 12000,
                 (int *blocks, CUfunction fn, int block_size, size_t dynamic_shared_bytes))
KILN_CU_OPTIONAL(cuOccupancyMaxPotentialBlockSize, 12000,
                 (int *min_grid, int *block_size, CUfunction fn, CUoccupancyB2DSize to_shared,
                  size_t dynamic_shared_bytes, int block_limit))
KILN_CU_OPTIONAL(cuMemAllocManaged, 12000, (CUdeviceptr * dptr, size_t bytes, unsigned int flags))
KILN_CU_OPTIONAL(cuMemFree, 12000, (CUdeviceptr dptr))
KILN_CU_OPTIONAL(cuMemHostGetDevicePointer, 12000, (CUdeviceptr * dptr, void *p, unsigned int flags))
/* 12.2 ABIs: a location (device or host) in place of a device ordinal. */
KILN_CU_OPTIONAL(cuMemPrefetchAsync, 12020,
                 (CUdeviceptr dptr, size_t bytes, CUmemLocation location, unsigned int flags,
                  CUstream stream))
KILN_CU_OPTIONAL(cuMemAdvise, 12020, (CUdeviceptr dptr, size_t bytes, int advice, CUmemLocation location))
KILN_CU_OPTIONAL(cuStreamBeginCapture, 12000, (CUstream stream, int mode))
KILN_CU_OPTIONAL(cuStreamEndCapture, 12000, (CUstream stream, CUgraph *graph))
KILN_CU_OPTIONAL(cuGraphInstantiateWithFlags, 12000,
                 (CUgraphExec * exec, CUgraph graph, unsigned long long flags))
KILN_CU_OPTIONAL(cuGraphLaunch, 12000, (CUgraphExec exec, CUstream stream))
KILN_CU_OPTIONAL(cuGraphExecUpdate, 12000,
                 (CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info))
KILN_CU_OPTIONAL(cuGraphGetNodes, 12000, (CUgraph graph, CUgraphNode *nodes, size_t *count))
KILN_CU_OPTIONAL(cuGraphExecDestroy, 12000, (CUgraphExec exec))
KILN_CU_OPTIONAL(cuGraphDestroy, 12000, (CUgraph graph))
