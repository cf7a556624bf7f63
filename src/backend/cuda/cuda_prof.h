/* cuda_prof.h: the counters behind the CUDA backend's kiln_backend_prof
 * (backend.h), which the profiler's CUPTI timer reaches through
 * get_proc_address: a way to tell that a stream handle may since name
 * another stream, and which driver calls failed (they queued no work).
 * Private to src/backend/cuda. */
#ifndef KILN_CUDA_PROF_H
#define KILN_CUDA_PROF_H

#include <stdatomic.h>

#include "backend/cuda/cuda_types.h"
#include "core/backend.h"

/* Streams destroyed in this process so far: a stream handle looked up before
 * a destroy may now be another stream's. */
extern atomic_uint kiln_cuda_streams_destroyed;

/* Driver calls that failed on this thread so far (every kiln_cuda_fail*). An
 * operation during which it moved may have queued nothing on the device. */
extern _Thread_local unsigned kiln_cuda_failed_calls;

#endif
