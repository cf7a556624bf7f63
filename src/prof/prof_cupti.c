/* prof_cupti.c: loading libcupti with dlopen, the process-wide tracing
 * session (subscriber, activity buffers) and the correlation-id table that
 * carries CUPTI's device times to kiln's records (see prof_cupti.h).
 *
 * No CUPTI headers at build time: the few types below are declared here, and
 * records are read at fixed offsets. Those offsets have been stable since
 * CUpti_ActivityKernel4 and CUpti_ActivityMemcpy3 (CUDA 9 to 13):
 *   kernel (CONCURRENT_KERNEL, KERNEL): start @16, end @24, correlationId @92
 *   memcpy, memset:                     start @16, end @24, correlationId @44
 *   CUpti_CallbackData: callbackSite @0, functionReturnValue @24,
 *                       correlationId @64 */
#include "prof/prof_cupti.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

typedef void *cupti_subscriber;
typedef struct cupti_record cupti_record; /* read by offset */
typedef void (*cupti_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *cbdata);
typedef void (*cupti_buffer_requested_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*cupti_buffer_completed_fn)(void *context, uint32_t stream_id, uint8_t *buffer, size_t size,
                                          size_t valid_bytes);

enum {
    CUPTI_KIND_MEMCPY = 1,
    CUPTI_KIND_MEMSET = 2,
    CUPTI_KIND_KERNEL = 3,
    CUPTI_KIND_CONCURRENT_KERNEL = 10,
    CUPTI_DOMAIN_DRIVER_API = 1,
    CUPTI_SITE_API_EXIT = 1,
    CUPTI_FLUSH_FORCED = 1,
    CUPTI_ERR_MULTIPLE_SUBSCRIBERS = 39
};
enum { KERNEL_START = 16, KERNEL_END = 24, KERNEL_CORRELATION = 92 };
enum { MEMCPY_START = 16, MEMCPY_END = 24, MEMCPY_CORRELATION = 44 };
enum { CALLBACK_SITE = 0, CALLBACK_RETURN_VALUE = 24, CALLBACK_CORRELATION = 64 };

/* The driver calls kiln's profiled operations make (CUPTI_DRIVER_TRACE_CBID_*);
 * the first is the one kiln's CUDA backend launches with and must be traceable. */
static const uint32_t traced_calls[] = {
    307, /* cuLaunchKernel */
    442, /* cuLaunchKernel_ptsz */
    652, /* cuLaunchKernelEx */
    653, /* cuLaunchKernelEx_ptsz */
    277, /* cuMemcpyHtoDAsync_v2 */
    279, /* cuMemcpyDtoHAsync_v2 */
    281, /* cuMemcpyDtoDAsync_v2 */
    421, /* cuMemcpyHtoDAsync_v2_ptsz */
    422, /* cuMemcpyDtoHAsync_v2_ptsz */
    423, /* cuMemcpyDtoDAsync_v2_ptsz */
};
#define TRACED_CALL_COUNT (sizeof traced_calls / sizeof traced_calls[0])

/* 2^18 slots (6 MiB, touched as used): an entry survives until 2^18 later
 * correlation ids (driver calls) have been delivered, far more than kiln
 * leaves between an operation and its resolution (a few chunks). */
#define TABLE_BITS 18
#define TABLE_SIZE (1u << TABLE_BITS)
#define BUFFER_BYTES (1u << 20)
#define FLUSH_PERIOD_MS 50

typedef struct cupti_time {
    uint32_t correlation_id; /* 0: empty */
    uint64_t start_ns, end_ns;
} cupti_time;

typedef struct cupti_library {
#define KILN_CUPTI_REQUIRED(name, args) int(*name) args;
#define KILN_CUPTI_OPTIONAL(name, args) int(*name) args;
#include "prof/prof_cupti_symbols.h"
#undef KILN_CUPTI_REQUIRED
#undef KILN_CUPTI_OPTIONAL
} cupti_library;

_Thread_local prof_record *kiln_prof_cupti_pending;

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

/* Times: under table_lock. Written by CUPTI's buffer thread (or by a flush on
 * the caller's), read by the resolver. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static cupti_time *table;
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
        load_why = "libcupti.so.13/.12 not found (looked on the loader path, in $CUDA_HOME/extras/CUPTI/lib64, "
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

/* ------------------------------------------------------------------ callbacks */

/* Runs on the launching thread at the exit of every traced driver call; the
 * whole cost CUPTI mode adds to a launch beyond CUPTI's own. */
static void on_driver_call(void *userdata, int domain, uint32_t cbid, const void *cbdata) {
    (void)userdata;
    (void)domain;
    (void)cbid;
    prof_record *r = kiln_prof_cupti_pending;
    if (!r) return;
    const unsigned char *data = cbdata;
    uint32_t site, correlation_id;
    memcpy(&site, data + CALLBACK_SITE, sizeof site);
    if (site != CUPTI_SITE_API_EXIT) return;
    void *result_ptr;
    int result = 0;
    memcpy(&result_ptr, data + CALLBACK_RETURN_VALUE, sizeof result_ptr);
    if (result_ptr) memcpy(&result, result_ptr, sizeof result);
    memcpy(&correlation_id, data + CALLBACK_CORRELATION, sizeof correlation_id);
    kiln_prof_cupti_pending = NULL;
    /* A failed call queued nothing: no activity record will come. */
    if (result == 0) r->corr_id = correlation_id;
}

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    /* CUPTI wants 8-byte alignment; malloc gives 16. NULL: CUPTI drops
     * records and counts them (reported in the summary). */
    *buffer = malloc(BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0; /* as many as fit */
}

static void store_record(const unsigned char *rec) {
    uint32_t kind, correlation_id;
    uint64_t start, end;
    memcpy(&kind, rec, sizeof kind);
    size_t at_correlation;
    if (kind == CUPTI_KIND_CONCURRENT_KERNEL || kind == CUPTI_KIND_KERNEL) at_correlation = KERNEL_CORRELATION;
    else if (kind == CUPTI_KIND_MEMCPY || kind == CUPTI_KIND_MEMSET) at_correlation = MEMCPY_CORRELATION;
    else return;
    memcpy(&start, rec + KERNEL_START, sizeof start); /* same offsets in both */
    memcpy(&end, rec + KERNEL_END, sizeof end);
    memcpy(&correlation_id, rec + at_correlation, sizeof correlation_id);
    /* A forced flush may hand over records whose work has not finished. */
    if (correlation_id == 0 || start == 0 || end < start) return;
    cupti_time *t = &table[correlation_id & (TABLE_SIZE - 1)];
    t->correlation_id = correlation_id;
    t->start_ns = start;
    t->end_ns = end;
}

static void buffer_completed(void *context, uint32_t stream_id, uint8_t *buffer, size_t size, size_t valid_bytes) {
    (void)size;
    pthread_mutex_lock(&table_lock);
    cupti_record *rec = NULL;
    if (table && buffer)
        while (valid_bytes > 0 && cupti.cuptiActivityGetNextRecord(buffer, valid_bytes, &rec) == 0)
            store_record((const unsigned char *)rec);
    size_t lost = 0;
    if (cupti.cuptiActivityGetNumDroppedRecords &&
        cupti.cuptiActivityGetNumDroppedRecords(context, stream_id, &lost) == 0)
        dropped += lost;
    pthread_mutex_unlock(&table_lock);
    free(buffer);
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
        for (size_t i = 0; i < TRACED_CALL_COUNT; i++)
            (void)cupti.cuptiEnableCallback(0, subscriber, CUPTI_DOMAIN_DRIVER_API, traced_calls[i]);
        (void)cupti.cuptiUnsubscribe(subscriber);
        subscriber = NULL;
    }
    if (cupti.cuptiActivityFlushPeriod) (void)cupti.cuptiActivityFlushPeriod(0);
    /* Hands the buffers back so they are freed; late records are harmless. */
    (void)cupti.cuptiActivityFlushAll(CUPTI_FLUSH_FORCED);
}

/* Session lock held. NULL on success, else the reason. */
static const char *start_tracing(void) {
    pthread_mutex_lock(&table_lock);
    if (!table) table = calloc(TABLE_SIZE, sizeof *table);
    int have_table = table != NULL;
    pthread_mutex_unlock(&table_lock);
    if (!have_table) return "out of host memory for the CUPTI time table";
    /* Subscribing first: it fails when another CUPTI client (Nsight, a
     * framework's profiler) is attached, before kiln takes over the activity
     * buffers that client relies on. */
    int r = cupti.cuptiSubscribe(&subscriber, on_driver_call, NULL);
    if (r != 0) {
        subscriber = NULL;
        return fail("cuptiSubscribe", r);
    }
    const char *why = NULL;
    if (!buffers_registered) { /* once: CUPTI keeps them for the process */
        if ((r = cupti.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != 0)
            why = fail("cuptiActivityRegisterCallbacks", r);
        else buffers_registered = 1;
    }
    /* Only cuLaunchKernel is essential; older CUPTIs lack some ids. */
    for (size_t i = 0; i < TRACED_CALL_COUNT && !why; i++)
        if ((r = cupti.cuptiEnableCallback(1, subscriber, CUPTI_DOMAIN_DRIVER_API, traced_calls[i])) != 0 && i == 0)
            why = fail("cuptiEnableCallback(cuLaunchKernel)", r);
    if (!why && (r = cupti.cuptiActivityEnable(CUPTI_KIND_CONCURRENT_KERNEL)) != 0)
        why = fail("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    if (!why && (r = cupti.cuptiActivityEnable(CUPTI_KIND_MEMCPY)) != 0) why = fail("cuptiActivityEnable(MEMCPY)", r);
    uint64_t now_ns = 0;
    if (!why && (r = cupti.cuptiGetTimestamp(&now_ns)) != 0) why = fail("cuptiGetTimestamp", r);
    if (why) {
        stop_tracing();
        return why;
    }
    double now_ms = kiln_now_ms();
    pthread_mutex_lock(&table_lock);
    anchor_ns = now_ns;
    anchor_host_ms = now_ms;
    pthread_mutex_unlock(&table_lock);
    /* Full buffers then reach the table within this period without any
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

/* ------------------------------------------------------------------ lookup */

void kiln_prof_cupti_lock(void) { pthread_mutex_lock(&table_lock); }
void kiln_prof_cupti_unlock(void) { pthread_mutex_unlock(&table_lock); }

kiln_cupti_lookup kiln_prof_cupti_lookup_locked(uint32_t correlation_id, double *begin_ms, double *dur_ms) {
    if (!table) return KILN_CUPTI_NOT_YET;
    const cupti_time *t = &table[correlation_id & (TABLE_SIZE - 1)];
    if (t->correlation_id != correlation_id)
        /* Ids only grow (modulo 2^32): a later id in our slot overwrote ours. */
        return t->correlation_id != 0 && (int32_t)(t->correlation_id - correlation_id) > 0 ? KILN_CUPTI_LOST
                                                                                           : KILN_CUPTI_NOT_YET;
    /* Difference first: nanoseconds since the epoch do not fit a double's
     * mantissa. */
    *begin_ms = anchor_host_ms + (double)(int64_t)(t->start_ns - anchor_ns) * 1e-6;
    *dur_ms = (double)(t->end_ns - t->start_ns) * 1e-6;
    return KILN_CUPTI_FOUND;
}

uint64_t kiln_prof_cupti_dropped_locked(void) { return dropped; }
