/* staging.h: ufunc calls on a CUDA context with host-memory operands
 * (staging.c). */
#ifndef KILN_UFUNC_STAGING_H
#define KILN_UFUNC_STAGING_H

#include "ufunc/ufunc_types.h"

/* Host-memory inputs on a CUDA context: the chunked, overlapped pipeline.
 * KILN_ERR_UNSUPPORTED when the operands do not suit it (then the caller
 * stages whole arrays). */
kiln_status uf_staged_call(kiln_ufunc *f, int sig, const kiln_value *args, kiln_array **outs, int nd,
                           const int64_t *shape, kiln_stream *stream);
/* Frees the pipeline's buffers (kiln_ufunc_release). */
void uf_staging_release(kiln_ufunc *f);

#endif
