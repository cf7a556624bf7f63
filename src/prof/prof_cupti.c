/* prof_cupti.c: loading libcupti with dlopen, the process-wide tracing
 * session (activity buffers) and the ring of delivered records that kiln's
 * operations are matched against by stream order (see prof_cupti.h).
 *
 * No CUPTI headers at build time: the few types below are declared here, and
 * records are read at fixed offsets. Those offsets have been stable since
 * CUpti_ActivityKernel4 and CUpti_ActivityMemcpy3 (CUDA 9 to 13):
 *   kernel (CONCURRENT_KERNEL, KERNEL): start @16, end @24, contextId @44,
 *       streamId @48, gridX..Z @52, blockX..Z @64 (int32), name @104
 *   memcpy: copyKind @4 (uint8), bytes @8, start @16, end @24,
 *       contextId @36, streamId @40 */
#include "prof/prof_cupti.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

/* CUPTI names the driver's context and stream by the driver's handles. */
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef void *cupti_subscriber;
typedef struct cupti_record cupti_record; /* read by offset */
typedef void (*cupti_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *cbdata);
typedef void (*cupti_buffer_requested_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*cupti_buffer_completed_fn)(void *context, uint32_t stream_id, uint8_t *buffer, size_t size,
                                          size_t valid_bytes);

enum {
    CUPTI_KIND_MEMCPY = 1,
    CUPTI_KIND_KERNEL = 3,
    CUPTI_KIND_CONCURRENT_KERNEL = 10,
    CUPTI_FLUSH_FORCED = 1,
    CUPTI_ERR_MULTIPLE_SUBSCRIBERS = 39,
    CUPTI_ATTR_PER_THREAD_ACTIVITY_BUFFER = 9 /* CUDA 12.3+ */
};
enum { REC_START = 16, REC_END = 24 };
enum { KERNEL_CONTEXT = 44, KERNEL_STREAM = 48, KERNEL_GRID = 52, KERNEL_BLOCK = 64, KERNEL_NAME = 104 };
enum { MEMCPY_COPY_KIND = 4, MEMCPY_BYTES = 8, MEMCPY_CONTEXT = 36, MEMCPY_STREAM = 40 };
/* CUpti_ActivityMemcpyKind */
enum {
    CUPTI_COPY_HTOD = 1,
    CUPTI_COPY_DTOH = 2,
    CUPTI_COPY_DTOD = 8,
    CUPTI_COPY_HTOH = 9,
    CUPTI_COPY_PTOP = 10
};

/* 2^17 records (6 MiB, touched as used): a record stays until 2^17 later
 * ones have been delivered, far more than kiln leaves between an operation
 * and its resolution (a few chunks) plus the program's own work between. */
#define RING_BITS 17
#define RING_SIZE ((uint64_t)1 << RING_BITS)
/* A search never looks further than this past its start. */
#define MAX_SCAN ((uint64_t)1 << 15)
#define BUFFER_BYTES (1u << 20)
#define FLUSH_PERIOD_MS 50
/* A record that started this long before an operation's host call began is
 * not that operation's (nor a later one's): generous against clock error. */
#define STALE_MS 2.0

/* One delivered kernel or copy. */
typedef struct cupti_entry {
    uint64_t start_ns, end_ns;
    uint64_t name_hash; /* kernels: kiln_prof_cupti_mangled_name_hash */
    uint64_t key;       /* kernels: dims key; copies: bytes */
    uint32_t context_id, stream_id;
    uint8_t cls;       /* kiln_cupti_class */
    uint8_t copy_kind; /* copies: CUpti_ActivityMemcpyKind */
    uint8_t taken;     /* matched to a kiln operation */
} cupti_entry;

typedef struct cupti_library {
#define KILN_CUPTI_REQUIRED(name, args) int(*name) args;
#define KILN_CUPTI_OPTIONAL(name, args) int(*name) args;
#include "prof/prof_cupti_symbols.h"
#undef KILN_CUPTI_REQUIRED
#undef KILN_CUPTI_OPTIONAL
} cupti_library;

/* Loading: once per process, read-only afterwards. */
static cupti_library cupti;
static const cupti_library *cupti_ok;
static const char *load_why = "";
static char load_why_buffer[256];
static char library_name[64];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* Tracing session: under session_lock. */
static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static int users;
static cupti_subscriber subscriber;
static int buffers_registered;
static char session_why[256];

/* The ring: under ring_lock. Written by CUPTI's buffer thread (or by a flush
 * on the caller's), read by the resolver. */
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static cupti_entry *ring;
static uint64_t ring_head;    /* position of the next record */
static uint64_t anchor_ns;    /* cuptiGetTimestamp ... */
static double anchor_host_ms; /* ... and kiln_now_ms read together */
static uint64_t dropped;

/* ------------------------------------------------------------------ loading */

static void *open_in(const char *dir, const char *name) {
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n <= 0 || (size_t)n >= sizeof path) return NULL;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
#define NAME_COUNT (sizeof names / sizeof names[0])

/* pip's CUDA wheels keep CUPTI beside NVRTC/cudart (nvidia/cu13/lib) or in a
 * sibling package (nvidia/cuda_cupti/lib): look next to whichever is loaded. */
static int next_to_loaded(struct dl_phdr_info *info, size_t size, void *out) {
    (void)size;
    const char *path = info->dlpi_name, *slash = path ? strrchr(path, '/') : NULL;
    if (!slash || (!strstr(slash, "libnvrtc.so") && !strstr(slash, "libcudart.so"))) return 0;
    char dir[4096];
    int n = snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (n <= 0 || (size_t)n >= sizeof dir) return 0;
    for (size_t i = 0; i < NAME_COUNT; i++) {
        char sibling[4200];
        void *lib = open_in(dir, names[i]);
        snprintf(sibling, sizeof sibling, "%s/../../cuda_cupti/lib", dir);
        if (!lib) lib = open_in(sibling, names[i]);
        if (lib) {
            *(void **)out = lib;
            snprintf(library_name, sizeof library_name, "%s", names[i]);
            return 1;
        }
    }
    return 0;
}

/* CUPTI ships in extras/CUPTI/lib64 of the toolkit, which is rarely on the
 * loader path; newer toolkits also put it in lib64. */
static void *cupti_open(void) {
    for (size_t i = 0; i < NAME_COUNT; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        snprintf(library_name, sizeof library_name, "%s", names[i]);
        if (lib) return lib;
    }
    const char *home = getenv("CUDA_HOME"), *path = getenv("CUDA_PATH");
    const char *roots[3] = {home && *home ? home : NULL, path && *path ? path : NULL, "/usr/local/cuda"};
    static const char *const subdirs[] = {"extras/CUPTI/lib64", "lib64"};
    for (size_t s = 0; s < 2; s++)
        for (size_t r = 0; r < 3; r++) {
            if (!roots[r]) continue;
            char dir[4096];
            int n = snprintf(dir, sizeof dir, "%s/%s", roots[r], subdirs[s]);
            if (n <= 0 || (size_t)n >= sizeof dir) continue;
            for (size_t i = 0; i < NAME_COUNT; i++) {
                void *lib = open_in(dir, names[i]);
                snprintf(library_name, sizeof library_name, "%s", names[i]);
                if (lib) return lib;
            }
        }
    void *lib = NULL;
    dl_iterate_phdr(next_to_loaded, &lib);
    return lib;
}

static void load(void) {
    void *lib = cupti_open();
    if (!lib) {
        load_why =
            "libcupti.so.13/.12 not found (looked on the loader path, in $CUDA_HOME/extras/CUPTI/lib64, "
            "/usr/local/cuda/extras/CUPTI/lib64 and /usr/local/cuda/lib64)";
        return;
    }
    void *sym;
#define KILN_CUPTI_RESOLVE_(name, required)                                                                  \
    sym = dlsym(lib, #name);                                                                                 \
    memcpy(&cupti.name, &sym, sizeof cupti.name);                                                            \
    if (!sym && (required)) {                                                                                \
        snprintf(load_why_buffer, sizeof load_why_buffer, "%s lacks %s", library_name, #name);               \
        load_why = load_why_buffer;                                                                          \
        dlclose(lib);                                                                                        \
        return;                                                                                              \
    }
#define KILN_CUPTI_REQUIRED(name, args) KILN_CUPTI_RESOLVE_(name, 1)
#define KILN_CUPTI_OPTIONAL(name, args) KILN_CUPTI_RESOLVE_(name, 0)
#include "prof/prof_cupti_symbols.h"
#undef KILN_CUPTI_REQUIRED
#undef KILN_CUPTI_OPTIONAL
#undef KILN_CUPTI_RESOLVE_
    cupti_ok = &cupti;
}

/* ------------------------------------------------------------------ records */

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    /* CUPTI wants 8-byte alignment; malloc gives 16. NULL: CUPTI drops
     * records and counts them (reported in the summary). */
    *buffer = malloc(BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0; /* as many as fit */
}

static uint32_t read_u32(const unsigned char *rec, size_t at) {
    uint32_t v;
    memcpy(&v, rec + at, sizeof v);
    return v;
}

/* Ring lock held. */
static void store_record(const unsigned char *rec) {
    cupti_entry e;
    memset(&e, 0, sizeof e);
    uint32_t kind = read_u32(rec, 0);
    memcpy(&e.start_ns, rec + REC_START, sizeof e.start_ns);
    memcpy(&e.end_ns, rec + REC_END, sizeof e.end_ns);
    /* A forced flush may hand over records whose work has not finished. */
    if (e.start_ns == 0 || e.end_ns < e.start_ns) return;
    if (kind == CUPTI_KIND_CONCURRENT_KERNEL || kind == CUPTI_KIND_KERNEL) {
        uint32_t grid[3], block[3];
        for (int i = 0; i < 3; i++) {
            grid[i] = read_u32(rec, KERNEL_GRID + 4 * (size_t)i);
            block[i] = read_u32(rec, KERNEL_BLOCK + 4 * (size_t)i);
        }
        const char *name;
        memcpy(&name, rec + KERNEL_NAME, sizeof name);
        e.cls = KILN_CUPTI_KERNEL;
        e.context_id = read_u32(rec, KERNEL_CONTEXT);
        e.stream_id = read_u32(rec, KERNEL_STREAM);
        e.key = kiln_prof_cupti_dims_key(grid, block);
        e.name_hash = kiln_prof_cupti_mangled_name_hash(name);
    } else if (kind == CUPTI_KIND_MEMCPY) {
        e.cls = KILN_CUPTI_COPY;
        e.copy_kind = rec[MEMCPY_COPY_KIND];
        memcpy(&e.key, rec + MEMCPY_BYTES, sizeof e.key);
        e.context_id = read_u32(rec, MEMCPY_CONTEXT);
        e.stream_id = read_u32(rec, MEMCPY_STREAM);
    } else {
        return;
    }
    ring[ring_head & (RING_SIZE - 1)] = e;
    ring_head++;
}

static void buffer_completed(void *context, uint32_t stream_id, uint8_t *buffer, size_t size,
                             size_t valid_bytes) {
    (void)size;
    pthread_mutex_lock(&ring_lock);
    cupti_record *rec = NULL;
    if (ring && buffer)
        while (valid_bytes > 0 && cupti.cuptiActivityGetNextRecord(buffer, valid_bytes, &rec) == 0)
            store_record((const unsigned char *)rec);
    size_t lost = 0;
    if (cupti.cuptiActivityGetNumDroppedRecords &&
        cupti.cuptiActivityGetNumDroppedRecords(context, stream_id, &lost) == 0)
        dropped += lost;
    pthread_mutex_unlock(&ring_lock);
    free(buffer);
}

/* Never called: kiln enables no callback. The subscription only tells kiln
 * that another CUPTI client is attached. */
static void on_callback(void *userdata, int domain, uint32_t cbid, const void *cbdata) {
    (void)userdata;
    (void)domain;
    (void)cbid;
    (void)cbdata;
}

/* ------------------------------------------------------------------ session */

static const char *fail(const char *call, int result) {
    const char *text = NULL;
    if (cupti.cuptiGetResultString(result, &text) != 0 || !text) text = "unknown CUptiResult";
    snprintf(session_why, sizeof session_why, "%s failed: %s (%d)%s", call, text, result,
             result == CUPTI_ERR_MULTIPLE_SUBSCRIBERS
                 ? "; another CUPTI client (Nsight Systems, a framework's profiler) is attached"
                 : "");
    return session_why;
}

static void stop_tracing(void) {
    (void)cupti.cuptiActivityDisable(CUPTI_KIND_CONCURRENT_KERNEL);
    (void)cupti.cuptiActivityDisable(CUPTI_KIND_MEMCPY);
    if (subscriber) {
        (void)cupti.cuptiUnsubscribe(subscriber);
        subscriber = NULL;
    }
    if (cupti.cuptiActivityFlushPeriod) (void)cupti.cuptiActivityFlushPeriod(0);
    /* Hands the buffers back so they are freed; late records are harmless. */
    (void)cupti.cuptiActivityFlushAll(CUPTI_FLUSH_FORCED);
}

void kiln_prof_cupti_reanchor(void) {
    if (!cupti_ok) return;
    uint64_t now_ns = 0;
    if (cupti.cuptiGetTimestamp(&now_ns) != 0) return;
    double now_ms = kiln_now_ms();
    pthread_mutex_lock(&ring_lock);
    anchor_ns = now_ns;
    anchor_host_ms = now_ms;
    pthread_mutex_unlock(&ring_lock);
}

/* Session lock held. NULL on success, else the reason. */
static const char *start_tracing(void) {
    pthread_mutex_lock(&ring_lock);
    if (!ring) ring = calloc(RING_SIZE, sizeof *ring);
    int have_ring = ring != NULL;
    pthread_mutex_unlock(&ring_lock);
    if (!have_ring) return "out of host memory for the CUPTI record ring";
    /* Subscribing first: it fails when another CUPTI client (Nsight, a
     * framework's profiler) is attached, before kiln takes over the activity
     * buffers that client relies on. No callback is enabled. */
    int r = cupti.cuptiSubscribe(&subscriber, on_callback, NULL);
    if (r != 0) {
        subscriber = NULL;
        return fail("cuptiSubscribe", r);
    }
    const char *why = NULL;
    if (!buffers_registered) { /* once: CUPTI keeps them for the process */
        /* Per-thread buffers (CUDA 12.3+; the default from 13): a record is
         * stored without a process-wide lock. Must precede registering. */
        if (cupti.cuptiActivitySetAttribute) {
            uint8_t on = 1;
            size_t on_size = sizeof on;
            (void)cupti.cuptiActivitySetAttribute(CUPTI_ATTR_PER_THREAD_ACTIVITY_BUFFER, &on_size, &on);
        }
        if ((r = cupti.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != 0)
            why = fail("cuptiActivityRegisterCallbacks", r);
        else
            buffers_registered = 1;
    }
    if (!why && (r = cupti.cuptiActivityEnable(CUPTI_KIND_CONCURRENT_KERNEL)) != 0)
        why = fail("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    if (!why && (r = cupti.cuptiActivityEnable(CUPTI_KIND_MEMCPY)) != 0)
        why = fail("cuptiActivityEnable(MEMCPY)", r);
    uint64_t now_ns = 0;
    if (!why && (r = cupti.cuptiGetTimestamp(&now_ns)) != 0) why = fail("cuptiGetTimestamp", r);
    if (why) {
        stop_tracing();
        return why;
    }
    kiln_prof_cupti_reanchor();
    /* Full buffers then reach the ring within this period without any
     * flush, so the resolver keeps up while the program runs. */
    if (cupti.cuptiActivityFlushPeriod) (void)cupti.cuptiActivityFlushPeriod(FLUSH_PERIOD_MS);
    return NULL;
}

int kiln_prof_cupti_acquire(const char **why, const char **library) {
    (void)pthread_once(&load_once, load);
    *library = library_name;
    if (!cupti_ok) {
        *why = load_why;
        return 0;
    }
    pthread_mutex_lock(&session_lock);
    const char *failed = users == 0 ? start_tracing() : NULL;
    if (!failed) users++;
    pthread_mutex_unlock(&session_lock);
    *why = failed ? failed : "";
    return failed == NULL;
}

void kiln_prof_cupti_release(void) {
    pthread_mutex_lock(&session_lock);
    if (users > 0 && --users == 0) stop_tracing();
    pthread_mutex_unlock(&session_lock);
}

void kiln_prof_cupti_flush(void) {
    if (cupti_ok) (void)cupti.cuptiActivityFlushAll(CUPTI_FLUSH_FORCED);
}

/* ------------------------------------------------------------------ ids */

/* The backend's extra for device timers (backend.h), NULL when it has none. */
static const kiln_backend_prof *backend_prof(kiln_context *ctx) {
    const kiln_backend_ops *ops = ctx->ops;
    return ops->get_proc_address ? ops->get_proc_address(KILN_BACKEND_PROC_PROF) : NULL;
}

uint32_t kiln_prof_cupti_context_id(kiln_context *ctx) {
    void *context = NULL, *stream = NULL;
    uint32_t id = 0;
    const kiln_backend_prof *b = backend_prof(ctx);
    if (!cupti_ok || !cupti.cuptiGetContextId || !b || !b->handles) return PROF_NO_ID;
    b->handles(ctx->state, NULL, &context, &stream);
    return cupti.cuptiGetContextId((CUcontext)context, &id) == 0 ? id : PROF_NO_ID;
}

uint32_t kiln_prof_cupti_stream_id(kiln_context *ctx, kiln_backend_stream *s) {
    void *context = NULL, *stream = NULL;
    uint32_t id = 0;
    const kiln_backend_prof *b = backend_prof(ctx);
    if (!cupti_ok || !b || !b->handles) return PROF_NO_ID;
    b->handles(ctx->state, s, &context, &stream);
    if (cupti.cuptiGetStreamIdEx &&
        cupti.cuptiGetStreamIdEx((CUcontext)context, (CUstream)stream, 0, &id) == 0)
        return id;
    if (cupti.cuptiGetStreamId && cupti.cuptiGetStreamId((CUcontext)context, (CUstream)stream, &id) == 0)
        return id;
    unsigned long long unique = 0;
    if (b->stream_unique_id && b->stream_unique_id(ctx->state, s, &unique) == 0) return (uint32_t)unique;
    return PROF_NO_ID;
}

/* ------------------------------------------------------------------ matching */

void kiln_prof_cupti_lock(void) { pthread_mutex_lock(&ring_lock); }
void kiln_prof_cupti_unlock(void) { pthread_mutex_unlock(&ring_lock); }

uint64_t kiln_prof_cupti_head_locked(void) { return ring_head; }

/* Difference first: nanoseconds since the epoch do not fit a double's
 * mantissa. */
static double host_ms_of(uint64_t ns) { return anchor_host_ms + (double)(int64_t)(ns - anchor_ns) * 1e-6; }

/* The same stream and kind of work. */
static int same_stream(const cupti_entry *e, const kiln_cupti_op *op) {
    return e->cls == op->cls && (op->context_id == PROF_NO_ID || e->context_id == op->context_id) &&
           (op->stream_id == PROF_NO_ID || e->stream_id == op->stream_id);
}

static int copy_kind_matches(uint8_t cupti_kind, uint8_t kiln_kind) {
    switch (kiln_kind) {
    case KILN_COPY_HOST_TO_DEVICE: return cupti_kind == CUPTI_COPY_HTOD;
    case KILN_COPY_DEVICE_TO_HOST: return cupti_kind == CUPTI_COPY_DTOH;
    case KILN_COPY_DEVICE_TO_DEVICE: return cupti_kind == CUPTI_COPY_DTOD || cupti_kind == CUPTI_COPY_PTOP;
    default: return cupti_kind == CUPTI_COPY_HTOH;
    }
}

/* The same work: a kernel of that name (when both names could be read) and
 * those dimensions; a copy of that direction and size. */
static int same_work(const cupti_entry *e, const kiln_cupti_op *op) {
    if (e->key != op->key) return 0;
    if (op->cls == KILN_CUPTI_COPY) return copy_kind_matches(e->copy_kind, op->copy_kind);
    return e->name_hash == 0 || op->name_hash == 0 || e->name_hash == op->name_hash;
}

kiln_cupti_lookup kiln_prof_cupti_match_locked(const kiln_cupti_op *op, uint64_t *cursor, int take,
                                               double *begin_ms, double *dur_ms) {
    if (!ring) return KILN_CUPTI_NOT_YET;
    uint64_t oldest = ring_head > RING_SIZE ? ring_head - RING_SIZE : 0;
    uint64_t from = *cursor < oldest ? oldest : *cursor;
    double stale_ms = op->host_begin_ms - STALE_MS;
    /* Records at the front that can be neither this operation's nor a later
     * one's on the stream are passed for good: other streams' (this search
     * position is the stream's own), taken ones, and ones older than this
     * operation (the program's own work, or launches while the profiler was
     * stopped). */
    for (; from < ring_head; from++) {
        const cupti_entry *e = &ring[from & (RING_SIZE - 1)];
        if (same_stream(e, op) && !e->taken && host_ms_of(e->start_ns) >= stale_ms) break;
    }
    if (take) *cursor = from;
    /* Then the first record of the same work. Others of the stream in between
     * (work kiln did not launch, or kiln's on another thread that got its
     * record later) stay for later operations. */
    uint64_t end = ring_head - from > MAX_SCAN ? from + MAX_SCAN : ring_head;
    for (uint64_t at = from; at < end; at++) {
        cupti_entry *e = &ring[at & (RING_SIZE - 1)];
        if (!same_stream(e, op) || e->taken || !same_work(e, op) || host_ms_of(e->start_ns) < stale_ms)
            continue;
        *begin_ms = host_ms_of(e->start_ns);
        *dur_ms = (double)(e->end_ns - e->start_ns) * 1e-6;
        if (take) {
            e->taken = 1;
            if (at == *cursor) (*cursor)++;
        }
        return KILN_CUPTI_FOUND;
    }
    return KILN_CUPTI_NOT_YET;
}

uint64_t kiln_prof_cupti_dropped_locked(void) { return dropped; }

int kiln_prof_cupti_streams_seen_locked(uint32_t context_id, uint32_t *ids, int cap) {
    int n = 0;
    if (!ring) return 0;
    uint64_t oldest = ring_head > RING_SIZE ? ring_head - RING_SIZE : 0;
    for (uint64_t at = oldest; at < ring_head && n < cap; at++) {
        const cupti_entry *e = &ring[at & (RING_SIZE - 1)];
        if (context_id != PROF_NO_ID && e->context_id != context_id) continue;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++) seen = ids[i] == e->stream_id;
        if (!seen) ids[n++] = e->stream_id;
    }
    return n;
}
