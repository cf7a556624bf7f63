/* nccl_symbols.h: every NCCL function kiln calls, one line each (X-macro,
 * as src/backend/cuda/cuda_driver_symbols.h). The including file defines
 * KILN_NCCL_FN(return_type, name, args). */
// clang-format off: it reads `T *x` in a macro argument as a multiplication.
KILN_NCCL_FN(ncclResult_t, ncclGetVersion, (int *version))
KILN_NCCL_FN(const char *, ncclGetErrorString, (ncclResult_t result))
KILN_NCCL_FN(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * id))
KILN_NCCL_FN(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank))
KILN_NCCL_FN(ncclResult_t, ncclCommInitAll, (ncclComm_t * comms, int ndev, const int *devlist))
KILN_NCCL_FN(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))
KILN_NCCL_FN(ncclResult_t, ncclCommAbort, (ncclComm_t comm))
KILN_NCCL_FN(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *error))
KILN_NCCL_FN(ncclResult_t, ncclAllReduce,
             (const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
              ncclComm_t comm, kiln_nccl_stream stream))
KILN_NCCL_FN(ncclResult_t, ncclBroadcast,
             (const void *send, void *recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
              kiln_nccl_stream stream))
KILN_NCCL_FN(ncclResult_t, ncclReduce,
             (const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
              ncclComm_t comm, kiln_nccl_stream stream))
KILN_NCCL_FN(ncclResult_t, ncclAllGather,
             (const void *send, void *recv, size_t count, ncclDataType_t type, ncclComm_t comm,
              kiln_nccl_stream stream))
KILN_NCCL_FN(ncclResult_t, ncclReduceScatter,
             (const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
              ncclComm_t comm, kiln_nccl_stream stream))
KILN_NCCL_FN(ncclResult_t, ncclSend,
             (const void *send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
              kiln_nccl_stream stream))
KILN_NCCL_FN(ncclResult_t, ncclRecv,
             (void *recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
              kiln_nccl_stream stream))
KILN_NCCL_FN(ncclResult_t, ncclGroupStart, (void))
KILN_NCCL_FN(ncclResult_t, ncclGroupEnd, (void))
