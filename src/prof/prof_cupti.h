/* prof_cupti.h: the profiler's CUPTI timer (prof_cupti.c), used on the CUDA
 * backend instead of events when libcupti can be loaded.
 *
 * Why: two cuEventRecord per launch cost ~1.4 us each and break the driver's
 * launch batching, more than doubling launch overhead. CUPTI's Activity API
 * timestamps kernels and copies inside the driver and hands the records over
 * in buffers on its own thread. kiln adds nothing to the launch path beyond
 * CUPTI's own cost: no driver callback, no external correlation id.
 *
 * How a kiln record meets its CUPTI record: by order on its stream. Every
 * kernel and copy record CUPTI delivers goes into a process-wide ring with
 * its context and stream id, start, end and what identifies the work (a
 * kernel's name and launch dimensions, a copy's direction and bytes). kiln's
 * records know their stream (its CUPTI id is looked up once per stream) and
 * the same identifying facts. The resolver walks each stream's records in
 * order, and for each kiln operation takes the first record of the ring on
 * that stream, after the previous match, that is not older than the
 * operation's host call and identifies the same work. Records of work kiln
 * did not launch (the program's own kernels on the same stream, launches
 * while the profiler was stopped) do not identify kiln's work, or are older
 * than it, and are passed over; they are overwritten later, so the ring never
 * grows. An operation whose driver call failed queued nothing and keeps its
 * host times, as does one whose record never comes.
 *
 * CUPTI is process-wide (global buffers): tracing is on while at least one
 * profiler uses it and off, at no cost to launches, otherwise. */
#ifndef KILN_PROF_CUPTI_H
#define KILN_PROF_CUPTI_H

#include <stdint.h>

#include "prof/prof_internal.h"

/* Starts tracing for one more profiler: 1, or 0 and a static reason
 * ("libcupti.so.13/.12 not found ...", "cuptiSubscribe failed: ...").
 * *library names the loaded library for the summary. */
int kiln_prof_cupti_acquire(const char **why, const char **library);
/* One profiler fewer; the last one turns tracing off. */
void kiln_prof_cupti_release(void);
/* Makes CUPTI hand over every record of finished work. Call after the
 * device is idle, without the ring lock held. */
void kiln_prof_cupti_flush(void);
/* Re-reads CUPTI's clock against kiln_now_ms, so that drift between the two
 * never builds up. Without the ring lock held. */
void kiln_prof_cupti_reanchor(void);

/* CUPTI's id of ctx's CUDA context, PROF_NO_ID if unknown (then any context
 * matches). */
uint32_t kiln_prof_cupti_context_id(kiln_context *ctx);
/* CUPTI's id of a stream of ctx (NULL: its default stream); the driver's
 * stream id where libcupti cannot say, PROF_NO_ID when neither can (then any
 * stream of the context matches). Without the ring lock held. */
uint32_t kiln_prof_cupti_stream_id(kiln_context *ctx, kiln_backend_stream *stream);

/* Kernel names as CUPTI reports them (mangled) and as kiln knows them
 * ("scale", "ns::scale<float>") reduce to the same hash of the unqualified
 * name; 0 when a name cannot be read (then it matches any). */
uint64_t kiln_prof_cupti_mangled_name_hash(const char *symbol);
uint64_t kiln_prof_cupti_source_name_hash(const char *name);
/* One key for a launch's grid and block. */
uint64_t kiln_prof_cupti_dims_key(const uint32_t grid[3], const uint32_t block[3]);

typedef enum kiln_cupti_class { KILN_CUPTI_KERNEL = 0, KILN_CUPTI_COPY = 1 } kiln_cupti_class;

/* What a kiln operation's CUPTI record must show. */
typedef struct kiln_cupti_op {
    uint8_t cls;          /* kiln_cupti_class */
    uint8_t copy_kind;    /* copies: kiln_copy_kind */
    uint32_t context_id;  /* PROF_NO_ID: any */
    uint32_t stream_id;   /* PROF_NO_ID: any stream of the context */
    uint64_t name_hash;   /* kernels, 0: any */
    uint64_t key;         /* kernels: kiln_prof_cupti_dims_key; copies: bytes */
    double host_begin_ms; /* the work cannot have started before this */
} kiln_cupti_op;

typedef enum kiln_cupti_lookup {
    KILN_CUPTI_FOUND = 0,
    KILN_CUPTI_NOT_YET = 1 /* no such record delivered (yet) */
} kiln_cupti_lookup;

/* The ring is read under its lock, taken once per resolve. */
void kiln_prof_cupti_lock(void);
void kiln_prof_cupti_unlock(void);
/* The ring position of the next record to arrive. Lock held. */
uint64_t kiln_prof_cupti_head_locked(void);
/* Looks for op's record from ring position *cursor on (the stream's search
 * position, kept by the caller per stream and class). With `take`, marks it
 * taken and moves *cursor past records that can belong to no later
 * operation on the stream; without, only looks. On FOUND, the device start
 * (on kiln_now_ms's clock) and duration. Lock held. */
kiln_cupti_lookup kiln_prof_cupti_match_locked(const kiln_cupti_op *op, uint64_t *cursor, int take,
                                               double *begin_ms, double *dur_ms);
/* Records CUPTI reports it dropped (it had no buffer). Lock held. */
uint64_t kiln_prof_cupti_dropped_locked(void);
/* Up to `cap` distinct stream ids of ctx's context seen in the ring (for the
 * summary's note when operations got no times); how many. Lock held. */
int kiln_prof_cupti_streams_seen_locked(uint32_t context_id, uint32_t *ids, int cap);

#endif
