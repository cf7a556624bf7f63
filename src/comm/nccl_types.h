/* nccl_types.h: the few NCCL types kiln uses, declared here so that kiln
 * builds without NCCL's headers; values from nccl.h (2.x), part of its ABI. */
#ifndef KILN_NCCL_TYPES_H
#define KILN_NCCL_TYPES_H

#define KILN_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[KILN_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef struct ncclComm *ncclComm_t;
typedef struct CUstream_st *kiln_nccl_stream; /* cudaStream_t is CUstream */
typedef enum { ncclSuccess = 0, ncclInProgress = 7 } ncclResult_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;
typedef enum {
    ncclInt8 = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclFloat32 = 7,
    ncclFloat64 = 8
} ncclDataType_t;

#endif
