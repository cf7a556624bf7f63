/* cuda_prof.h: what the profiler's CUPTI timer (src/prof/prof_cupti.c) needs
 * from the CUDA backend to match CUPTI's activity records to kiln's
 * operations without a driver callback per launch: the driver handles behind
 * kiln's stream handles, a way to tell that a stream handle may since name
 * another stream, and which driver calls failed (they queued no work). */
#ifndef KILN_CUDA_PROF_H
#define KILN_CUDA_PROF_H

#include <stdatomic.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_types.h"

/* Streams destroyed in this process so far: a stream handle looked up before
 * a destroy may now be another stream's. */
extern atomic_uint kiln_cuda_streams_destroyed;

/* Driver calls that failed on this thread so far (every kiln_cuda_fail*). An
 * operation during which it moved may have queued nothing on the device. */
extern _Thread_local unsigned kiln_cuda_failed_calls;

/* The driver context and stream behind `s` (NULL: the context's default
 * stream). */
void kiln_cuda_prof_handles(kiln_backend_state *st, kiln_backend_stream *s, CUcontext *context,
                            CUstream *stream);

/* cuStreamGetId: 0 and the stream's process-unique id, or -1 (older driver,
 * or the call failed). */
int kiln_cuda_stream_unique_id(kiln_backend_state *st, kiln_backend_stream *s, unsigned long long *id);

#endif
