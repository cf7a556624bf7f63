/* cuda_peer.c: what collectives need from the driver beyond kernels and
 * copies: a non-blocking look at a stream (so a wait can also watch NCCL for
 * a dead peer) and copies between the devices of one process. */
#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

enum { KILN_CUDA_ERROR_NOT_READY = 600 };

kiln_status kiln_cuda_stream_query(kiln_backend_state *st, kiln_backend_stream *stream, int *done) {
    if (!st->cu->cuStreamQuery)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the CUDA driver lacks cuStreamQuery");
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuStreamQuery(kiln_cuda_stream(st, stream));
    if (r == KILN_CUDA_ERROR_NOT_READY) {
        *done = 0;
        return KILN_OK;
    }
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuStreamQuery");
    *done = 1;
    return KILN_OK;
}

/* Peer access lets the copy go over NVLink/PCIe directly instead of through
 * host memory. Asked for once per direction and pair is enough; asking again
 * only returns "already enabled", which is no error. */
static void enable_peer_access(kiln_backend_state *st, kiln_backend_state *src_st) {
    const kiln_cuda_driver *cu = st->cu;
    int can = 0;
    if (!cu->cuDeviceCanAccessPeer || !cu->cuCtxEnablePeerAccess) return;
    if (cu->cuDeviceCanAccessPeer(&can, st->device, src_st->device) != CUDA_SUCCESS || !can) return;
    /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED is the usual answer after the
     * first copy; any other failure only makes the copy slower. */
    (void)cu->cuCtxEnablePeerAccess(src_st->context, 0);
}

kiln_status kiln_cuda_copy_peer(kiln_backend_state *st, void *dst, kiln_backend_state *src_st,
                                const void *src, size_t bytes, kiln_backend_stream *stream) {
    if (!st->cu->cuMemcpyPeerAsync)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the CUDA driver lacks cuMemcpyPeerAsync");
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    if (src_st->device != st->device) enable_peer_access(st, src_st);
    CUresult r =
        st->cu->cuMemcpyPeerAsync((CUdeviceptr)(uintptr_t)dst, st->context, (CUdeviceptr)(uintptr_t)src,
                                  src_st->context, bytes, kiln_cuda_stream(st, stream));
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuMemcpyPeerAsync");
}
