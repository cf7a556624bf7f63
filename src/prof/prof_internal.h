/* prof_internal.h: the profiler's records, shared by the recorder (prof.c),
 * the summary (prof_summary.c) and the trace writer (prof_trace.c).
 *
 * Every launch, copy, allocation and compile becomes one fixed-size record in
 * a chunk of PROF_CHUNK_RECORDS. Chunks are allocated a few at a time and
 * recycled, so recording in the steady state allocates nothing. Names and
 * argument descriptions are interned (a record holds small ids).
 *
 * Device times come from one of three timers (prof_timer): the host clock
 * (CPU backend), CUPTI activity records matched by stream order (CUDA,
 * prof_cupti.h), or two pooled backend events around each operation (other
 * GPUs, or CUDA without CUPTI). They are read lazily ("resolved") when the
 * chunk is old enough that its work has surely finished, or when a summary or
 * trace is asked for, never on the launch path. */
#ifndef KILN_PROF_INTERNAL_H
#define KILN_PROF_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "prof/prof.h"

#define PROF_CHUNK_RECORDS 1024
/* GPU: chunks younger than this many are not resolved while recording, so
 * that resolving never waits on work that is still queued. */
#define PROF_UNRESOLVED_CHUNKS 4
/* Records kept for a trace; later ones are counted in the summary only. */
#define PROF_TRACE_MAX_RECORDS (1u << 19)
#define PROF_NO_ID UINT32_MAX
#define PROF_EVENT_BATCH 128
#define PROF_DESC_CACHE 16 /* a power of two */

typedef enum prof_type {
    PROF_KERNEL = 0,
    PROF_COPY = 1,
    PROF_ALLOC = 2,
    PROF_COMPILE = 3,
    PROF_COLLECTIVE = 4 /* src/comm: copy_kind holds the collective's index */
} prof_type;

#define PROF_COLLECTIVE_KINDS 8

struct prof_chunk;

/* One recorded operation; also the token handed out by the _begin hooks.
 * 112 bytes: a trace keeps every record, and each of its bytes is fresh
 * memory (page faults) on the launch path. Fields of one type of record, or
 * of one stage of its life, share room. */
struct kiln_prof_op {
    uint8_t type;        /* prof_type */
    uint8_t copy_kind;   /* kiln_copy_kind */
    uint8_t pinned;      /* copies: host side page-locked */
    uint8_t cache_hit;   /* compiles */
    uint8_t ev_failed;   /* an event could not be recorded: use host times */
    uint8_t no_device;   /* a driver call failed during the op: it may have queued nothing */
    uint8_t library;     /* a vendor library call: timed by its events, never matched to CUPTI */
    atomic_uchar done;   /* set by kiln_prof_end (kernels, copies) */
    uint32_t name_id;    /* interned kernel or module name */
    uint32_t desc_id;    /* interned argument description, PROF_NO_ID if none */
    uint32_t host_tid;   /* OS thread id of the caller */
    uint32_t stream;     /* index into prof->streams */
    uint32_t dev_stream; /* CUPTI: the stream's CUPTI id, PROF_NO_ID if unknown */
    unsigned fail_mark;  /* kiln_prof_failed_calls at the start of the op */
    union {
        struct {
            uint32_t grid[3], block[3]; /* kernels kiln launched */
        };
        double flops; /* library calls (no dims): floating-point operations, 0 if unknown */
        struct {
            double compile_ms, load_ms; /* compiles */
        };
        double bus_factor; /* collectives: bus bandwidth / algorithm bandwidth */
    };
    union {
        uint64_t shared_bytes; /* kernels */
        uint64_t bytes;        /* copies, allocations, collectives */
    };
    double host_begin_ms, host_end_ms; /* the host call (kiln_now_ms) */
    union {
        struct {
            double dev_begin_ms, dev_ms; /* on the stream; set when resolved */
        };
        kiln_backend_stream *stream_ptr; /* until kiln_prof_end: where ev[] are recorded */
    };
    kiln_backend_event *ev[2]; /* GPU: recorded around the op */
};
typedef struct kiln_prof_op prof_record;
_Static_assert(sizeof(prof_record) <= 112, "a record grew: in a trace each of its bytes is fresh memory");

typedef struct prof_chunk {
    struct prof_chunk *next;
    uint32_t count;    /* records handed out */
    uint32_t resolved; /* records folded into the statistics */
    prof_record rec[PROF_CHUNK_RECORDS];
} prof_chunk;

/* A singly linked FIFO of chunks. */
typedef struct prof_chunk_list {
    prof_chunk *head, *tail;
    size_t length;
} prof_chunk_list;

typedef struct prof_stat {
    int64_t calls;
    double total_ms, min_ms, max_ms;
    uint64_t bytes;
    double flops; /* library calls: the summary shows FLOP/s */
} prof_stat;

typedef struct prof_string {
    char *text;
    uint64_t hash;
    uint64_t kernel_hash; /* kiln_prof_cupti_source_name_hash(text) */
} prof_string;

/* CUPTI: a stream's id and where the resolver's search for its next kernel
 * and copy records starts in the ring (prof_cupti.h). */
typedef struct prof_dev_stream {
    uint32_t id;         /* CUPTI's id of the stream, PROF_NO_ID if unknown */
    unsigned generation; /* the backend's streams_destroyed when id was looked up */
    int known;           /* id was looked up */
    int searched;        /* cursor[] is set, for records of stream cursor_id */
    uint32_t cursor_id;
    uint64_t cursor[2]; /* [kiln_cupti_class] */
} prof_dev_stream;

/* A string the hooks were given and its interned id (prof_hooks.c). */
typedef struct prof_last_string {
    const char *ptr;
    uint32_t id;
} prof_last_string;

typedef enum prof_timer {
    PROF_TIMER_HOST = 0,   /* wall time of the call: the CPU backend works inside it */
    PROF_TIMER_EVENTS = 1, /* backend events recorded around each operation */
    PROF_TIMER_CUPTI = 2   /* CUPTI activity records (CUDA) */
} prof_timer;

typedef struct kiln_prof {
    struct kiln_prof_head head; /* first: KILN_PROF_ON reads head.enabled */
    kiln_context *ctx;
    const kiln_backend_prof *backend; /* the backend's extra for device timers, or NULL */
    pthread_mutex_t lock;             /* everything below */
    prof_timer timer;                 /* fixed when the profiler starts */
    int use_events;                   /* timer == PROF_TIMER_EVENTS */
    char timer_note[320];             /* why this timer (summary header), may be empty */
    const char *cupti_library;        /* "libcupti.so.13" */
    uint64_t cupti_lost;              /* records whose CUPTI times never came: host times */
    uint32_t cupti_context_id;        /* CUPTI's id of ctx's CUDA context, PROF_NO_ID if unknown */
    uint64_t cupti_start;             /* ring position when the profiler started */
    /* The last kernel dims the resolver keyed and their key: launches repeat
     * their dims, and the key is a chain of six multiplies. */
    uint32_t cupti_grid[3], cupti_block[3];
    uint64_t cupti_dims_key;
    int retain;         /* keep resolved records for a trace */
    int print_at_exit;  /* KILN_PROFILE was set */
    char *summary_path; /* KILN_PROFILE_OUT, NULL: stderr */
    char *trace_path;   /* KILN_TRACE, NULL: none */
    double t0_ms;       /* kiln_now_ms when the profiler started: trace time 0 */
    double reset_ms;    /* kiln_profiler_reset: older records leave the trace */

    /* Records. `open` holds chunks being filled or waiting to be resolved,
     * oldest first (the tail is being filled); `kept` resolved chunks for the
     * trace; `spare` recycled ones. */
    prof_chunk_list open, kept, spare;
    size_t kept_records;
    uint64_t dropped_records; /* resolved but not kept: the trace is truncated */

    /* GPU clock anchor: base event recorded at base_host_ms. */
    kiln_backend_event *base_event;
    double base_host_ms;
    kiln_backend_event **free_events;
    size_t free_event_count, free_event_cap;
    int events_failed; /* event creation failed: host times from then on */

    /* Interned strings; ids index `strings`. */
    prof_string *strings;
    uint32_t string_count, string_cap;
    uint32_t *string_table; /* open addressing, holds id + 1, 0 empty */
    uint32_t string_table_cap;

    /* Streams seen, in order; index 0 is the default stream (NULL). */
    kiln_backend_stream **streams;
    prof_dev_stream *dev_streams; /* parallel to streams */
    uint32_t stream_count, stream_cap;

    /* The last kernel name and the last argument description given as
     * text, and their ids: launches repeat them. */
    prof_last_string last_name, last_desc;

    /* Launches' argument descriptions by kiln_prof_args key (0: empty),
     * direct-mapped: a launch like a recent one neither describes its
     * arguments nor interns the text. */
    uint64_t desc_keys[PROF_DESC_CACHE];
    uint32_t desc_ids[PROF_DESC_CACHE];

    /* Statistics of resolved records. kernels[name_id]. */
    prof_stat *kernels;
    uint32_t kernel_cap;
    prof_stat copies[4][2]; /* [kiln_copy_kind][pinned] */
    prof_stat allocs;
    prof_stat compiles, cache_hits; /* total_ms: compile; bytes unused */
    double load_ms;

    /* Collectives (src/comm), by kind; set when the context joins a
     * communicator (kiln_prof_set_rank). */
    prof_stat colls[PROF_COLLECTIVE_KINDS];
    double coll_factor[PROF_COLLECTIVE_KINDS];
    uint32_t coll_name[PROF_COLLECTIVE_KINDS]; /* interned names, PROF_NO_ID if none yet */
    int rank, nranks;                          /* nranks 0: not a rank of any communicator */
    char transport[16];
    /* Cache entries refused (corrupt, another key's, unloadable) and the
     * last one's module and reason, for the summary's JIT line. */
    int64_t cache_rejects;
    char last_reject[256];
} kiln_prof;

/* Driver calls that failed on this thread so far (0 for a backend that
 * keeps no count). */
static inline unsigned kiln_prof_failed_calls(const kiln_prof *p) {
    return p->backend && p->backend->failed_calls ? p->backend->failed_calls() : 0;
}

/* ctx's profiler, NULL when off (its slot, prof.h). */
static inline kiln_prof *kiln_prof_of(const kiln_context *ctx) { return (kiln_prof *)kiln_prof_head_of(ctx); }

/* prof.c */
/* A profiler for ctx with its timer chosen (KILN_PROFILE_TIMER), recording;
 * NULL when out of memory. kiln_prof_free gives back what it holds. */
kiln_prof *kiln_prof_create(kiln_context *ctx);
void kiln_prof_free(kiln_prof *p);
/* Keep records for a trace (and have launches describe their arguments). */
void kiln_prof_set_retain(kiln_prof *p, int retain);
/* Waits for the recorded work, then forgets it and the statistics (records
 * still in flight on other threads stay). Lock held. */
void kiln_prof_forget(kiln_prof *p);
/* Folds every finished record into the statistics; with `wait` set, first
 * waits for the device (summary, trace). Call with prof->lock held. */
void kiln_prof_resolve(kiln_prof *p, int wait);
const char *kiln_prof_string(const kiln_prof *p, uint32_t id);
const char *kiln_prof_copy_kind_name(int kind); /* "HtoD", ... */

/* prof_records.c: the record log (lock held for all). */
char *kiln_prof_strdup(const char *s);                  /* malloc'd; NULL when out of memory */
uint32_t kiln_prof_intern(kiln_prof *p, const char *s); /* the string's id; PROF_NO_ID when out of memory */
uint32_t kiln_prof_stream_index(kiln_prof *p, kiln_backend_stream *s);
uint32_t kiln_prof_stream_cupti_id(kiln_prof *p, uint32_t index, kiln_backend_stream *stream);
void kiln_prof_chunks_push(prof_chunk_list *l, prof_chunk *c);
prof_chunk *kiln_prof_chunks_pop(prof_chunk_list *l); /* NULL when empty */
void kiln_prof_chunks_free(prof_chunk_list *l);
/* A zeroed record at the end of the log; NULL when out of memory. */
prof_record *kiln_prof_new_record(kiln_prof *p);

/* prof_events.c: the events timer. Lock held for all but _start (called
 * while the profiler is being created). */
void kiln_prof_events_start(kiln_prof *p); /* sets timer and use_events if events work */
void kiln_prof_events_take(kiln_prof *p, prof_record *r);
void kiln_prof_events_give(kiln_prof *p, prof_record *r);
/* Reads a finished record's event times; host times if that fails. */
void kiln_prof_events_read(kiln_prof *p, prof_record *r, int wait);
void kiln_prof_events_free(kiln_prof *p);

/* prof_summary.c: the nvprof-style table, malloc'd. Call with the lock held
 * after kiln_prof_resolve(p, 1). */
char *kiln_prof_summary_text(kiln_prof *p);
/* Formats a duration nvprof's way: "2.8544ms", "864ns". */
void kiln_prof_format_time(double ms, char *buf, size_t cap);

/* prof_trace.c: writes the Chrome trace-event JSON. Lock held, resolved. */
kiln_status kiln_prof_trace_write(kiln_prof *p, const char *path);

#endif
