/* prof_cupti.h: the profiler's CUPTI timer (prof_cupti.c), used on the CUDA
 * backend instead of events when libcupti can be loaded.
 *
 * Why: two cuEventRecord per launch cost ~1.4 us each and break the driver's
 * launch batching, more than doubling launch overhead. CUPTI's Activity API
 * timestamps kernels and copies inside the driver and hands the records over
 * in buffers on its own thread; the launch path only pays a driver callback
 * that stores the launch's correlation id in kiln's record.
 *
 * How a kiln record meets its CUPTI record: kiln_prof_*_begin sets
 * kiln_prof_cupti_pending on the calling thread; the API-exit callback of the
 * next traced driver call on that thread (cuLaunchKernel, cuMemcpy*Async)
 * writes that call's correlation id into the record if the call succeeded.
 * CUPTI's kernel and memcpy records carry the same id; their start and end go
 * into a process-wide table indexed by the id, where the resolver looks them
 * up. Records of work kiln did not profile land in the table too and are
 * simply overwritten later, so the table never grows.
 *
 * CUPTI is process-wide (one subscriber, global buffers): tracing is on while
 * at least one profiler uses it and off, at no cost to launches, otherwise. */
#ifndef KILN_PROF_CUPTI_H
#define KILN_PROF_CUPTI_H

#include <stdint.h>

#include "prof/prof_internal.h"

/* The record the next traced driver call on this thread belongs to. */
extern _Thread_local prof_record *kiln_prof_cupti_pending;

/* Starts tracing for one more profiler: 1, or 0 and a static reason
 * ("libcupti.so.13/.12 not found ...", "cuptiSubscribe failed: ...").
 * *library names the loaded library for the summary. */
int kiln_prof_cupti_acquire(const char **why, const char **library);
/* One profiler fewer; the last one turns tracing off. */
void kiln_prof_cupti_release(void);
/* Makes CUPTI hand over every record of finished work. Call after the
 * device is idle, without the table lock held. */
void kiln_prof_cupti_flush(void);

typedef enum kiln_cupti_lookup {
    KILN_CUPTI_FOUND = 0,
    KILN_CUPTI_NOT_YET = 1, /* not delivered (yet) */
    KILN_CUPTI_LOST = 2     /* overwritten by a much later operation's record */
} kiln_cupti_lookup;

/* The table is read under its lock, taken once per resolve. */
void kiln_prof_cupti_lock(void);
void kiln_prof_cupti_unlock(void);
/* Device start (on kiln_now_ms's clock) and duration of the operation with
 * this correlation id. Lock held. */
kiln_cupti_lookup kiln_prof_cupti_lookup_locked(uint32_t correlation_id, double *begin_ms, double *dur_ms);
/* Records CUPTI reports it dropped (it had no buffer). Lock held. */
uint64_t kiln_prof_cupti_dropped_locked(void);

#endif
