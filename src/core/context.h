/* context.h: what a kiln_context holds. Private to src/ (not the backends). */
#ifndef KILN_CORE_CONTEXT_H
#define KILN_CORE_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/backend.h"
#include "kiln.h"

struct kiln_copy_pool;

/* ------------------------------------------------------------------ slots
 * What a part above core keeps per context (a library's handles and caches,
 * the profiler, background builds) hangs on the context in a slot, as an
 * SQLite extension hangs its data on a connection (sqlite3_set_clientdata):
 * core stores the pointer and calls the class's functions at close without
 * knowing what the state is. A class is a static const object of its owner;
 * its address is the slot's key.
 *
 * Ordering rule. kiln_close(ctx) calls each state's on_close, stage by stage:
 *   KILN_SLOT_CLOSE_STOP    before the device is synchronized: threads of the
 *                           context's own (background builds) stop;
 *   KILN_SLOT_CLOSE_REPORT  after it, while everything is still there:
 *                           observers report what happened (the profiler
 *                           prints its summary and writes its trace);
 *   KILN_SLOT_CLOSE_RELEASE then a library releases the objects it made
 *                           (ufuncs, plans, modules), which hold the context
 *                           like any object and would keep it alive.
 * Within a stage, and at the last release (kiln_context_release), where
 * each state's destroy is called, slots go in reverse creation order, all
 * before the backend closes (cuFFT plans, cuBLAS handles belong to its
 * device) and before the CPU context of host-side work is closed, so a
 * state made while using another's goes first. A state an on_close emptied
 * (kiln_slot_take) gets no destroy. */
typedef enum kiln_slot_stage {
    KILN_SLOT_CLOSE_STOP,
    KILN_SLOT_CLOSE_REPORT,
    KILN_SLOT_CLOSE_RELEASE
} kiln_slot_stage;

typedef struct kiln_slot_class {
    const char *name; /* for messages: "blas" */
    kiln_slot_stage close_stage;
    void (*on_close)(kiln_context *ctx, void *state); /* may be NULL */
    void (*destroy)(kiln_context *ctx, void *state);  /* may be NULL */
} kiln_slot_class;

/* Makes a class's state from `arg` (what kiln_slot_get was handed), called
 * under ctx->lock: it must not take the lock, nor get another slot. */
typedef kiln_status (*kiln_slot_create_fn)(kiln_context *ctx, void *arg, void **state);

/* A context has room for this many classes. */
#define KILN_CONTEXT_SLOTS 32

struct kiln_context_slot {
    const kiln_slot_class *cls;
    _Atomic(void *) state;
};

/* Streams are reference counted: an array keeps the stream that last used
 * its memory alive, so that freeing it can be ordered after that work (the
 * device pool reuses memory in stream order). */
struct kiln_stream {
    atomic_int refs;
    kiln_context *ctx;
    kiln_backend_stream *impl; /* NULL: the backend's default stream */
    /* Graph capture (kernel/graph.c): set from begin to end capture.
     * Arrays whose last reference goes during the capture while their
     * memory was last used on this stream are kept here, unfreed: the graph
     * may use that memory at every launch, so it takes them at end capture
     * and frees them when it is destroyed. */
    atomic_int capturing;
    pthread_mutex_t deferred_lock;
    kiln_array **deferred;
    int deferred_count, deferred_cap;
};

struct kiln_event {
    kiln_context *ctx;
    kiln_backend_event *impl;
    unsigned flags; /* KILN_EVENT_* */
};

/* Lifetime: every object made on a context (array, module, kernel, ufunc,
 * gufunc, stream, event) holds a reference to it, and kiln_open's caller
 * holds one that kiln_close drops. The backend is closed and the struct
 * freed when the last reference goes, so an object released, launched or
 * copied after kiln_close still finds its context whole. */
struct kiln_context {
    atomic_int refs;
    atomic_int closed; /* kiln_close was called (the user's reference is gone) */
    const kiln_backend_ops *ops;
    const kiln_backend_ops *host_ops; /* the CPU backend, for kiln_context_host */
    kiln_backend_state *state;
    kiln_device_info info;
    char arch[32];         /* "sm_90" on CUDA, "" on the CPU */
    char compiler_id[512]; /* part of every cache key */
    atomic_int dead;       /* set by a sticky device fault */
    pthread_mutex_t lock;  /* guards the fields below */
    kiln_jit_stats jit;
    int cache_warned; /* the unusable-cache notice is printed once */
    /* Opened on first need, closed with the context (see the functions below). */
    kiln_context *host; /* CUDA contexts: the CPU context for host-side work */
    struct kiln_copy_pool *copy_pool;
    int copy_pool_tried; /* creation is attempted once */
    /* The parts' state (see slots above): slots[0, nslots) are in use, in
     * creation order; a slot, once taken, keeps its class. */
    struct kiln_context_slot slots[KILN_CONTEXT_SLOTS];
    atomic_int nslots;
    /* Streams of ctx capturing a graph now (core/graph.c): while nonzero,
     * compiles and allocations outside the pool are refused. */
    atomic_int capturing;
};

/* The state of `cls` on ctx, or NULL: without the lock (one load per slot
 * in use), for hooks on the launch path such as the profiler's. */
static inline void *kiln_slot_peek(const kiln_context *ctx, const kiln_slot_class *cls) {
    int n = atomic_load_explicit(&((kiln_context *)ctx)->nslots, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (ctx->slots[i].cls == cls)
            return atomic_load_explicit(&((kiln_context *)ctx)->slots[i].state, memory_order_acquire);
    return NULL;
}
/* The state of `cls` on ctx, made by create(ctx, arg, ...) under ctx->lock
 * on first use. The _locked form is for callers that hold ctx->lock. */
kiln_status kiln_slot_get(kiln_context *ctx, const kiln_slot_class *cls, kiln_slot_create_fn create,
                          void *arg, void **out);
kiln_status kiln_slot_get_locked(kiln_context *ctx, const kiln_slot_class *cls, kiln_slot_create_fn create,
                                 void *arg, void **out);
/* Empties the slot of `cls` and returns what it held (NULL if nothing): the
 * owner then frees it. A later kiln_slot_get makes a new state in the same
 * slot (the profiler, stopped at kiln_close or restarted). */
void *kiln_slot_take(kiln_context *ctx, const kiln_slot_class *cls);

/* kiln_open without the profiler, on the backend `ops` (device `ordinal`);
 * host_ops (the CPU backend) opens kiln_context_host's context on first
 * need. src/backend/backends.c chooses both from the target; kiln_open
 * (src/prof/prof_api.c) attaches the profiler the environment asks for. */
kiln_status kiln_context_open(kiln_context **out, const kiln_backend_ops *ops, int ordinal,
                              const kiln_backend_ops *host_ops);
kiln_context *kiln_context_retain(kiln_context *ctx);
/* Drops a reference; the last one closes the backend and frees ctx. */
void kiln_context_release(kiln_context *ctx);
/* KILN_ERR_CONTEXT_DEAD when kiln_close(ctx) has been called: for the
 * libraries' per-context state (BLAS, FFT, reductions), which kiln_close
 * releases because it holds the context itself. */
kiln_status kiln_context_check_open(kiln_context *ctx, const char *what);
/* KILN_ERR_CONTEXT_DEAD (with message) when an earlier fault killed ctx. */
kiln_status kiln_context_check(kiln_context *ctx);
/* Passes a backend status through; a device fault marks ctx dead. */
kiln_status kiln_context_note(kiln_context *ctx, kiln_status status);
/* The CPU context that runs host-side kernels for ctx (ufunc "cpu" and
 * "parallel" targets on a CUDA context): ctx itself on the CPU backend, else
 * a CPU context owned by ctx, opened on first call (without a profiler of its
 * own) and closed by kiln_close(ctx). Objects made on it (kernels) must be
 * released before ctx is closed, as ctx's own. */
kiln_status kiln_context_host(kiln_context *ctx, kiln_context **out);
/* ctx's threads for large host memcpys (core/copy_pool.h), created on first
 * call; NULL when one thread is all there is or they could not be started
 * (callers then copy alone). Lives until kiln_close(ctx). */
struct kiln_copy_pool *kiln_context_copy_pool(kiln_context *ctx);
static inline kiln_backend_stream *kiln_stream_impl(kiln_stream *s) { return s ? s->impl : NULL; }
kiln_stream *kiln_stream_retain(kiln_stream *s);
/* Graph capture (core/graph.c): KILN_ERR_CAPTURE naming `what` (a compile,
 * an allocation outside the pool), for calls made while ctx captures a
 * graph on any stream. */
kiln_status kiln_capture_refuse(kiln_context *ctx, const char *what);
/* Marks the calling thread as kiln's own background builder: its compiles
 * are never refused for a capture (they queue nothing on a user stream). */
void kiln_capture_exempt_thread(void);
/* 1 when ctx captures a graph and the calling thread is not exempt. */
int kiln_capture_refuses_compile(kiln_context *ctx);
static inline int kiln_context_capturing(const kiln_context *ctx) {
    return atomic_load_explicit(&ctx->capturing, memory_order_relaxed) != 0;
}
static inline int kiln_stream_capturing(const kiln_stream *s) {
    return s && atomic_load_explicit(&s->capturing, memory_order_relaxed) != 0;
}
/* Keeps `a` (an owner whose last reference went) on `stream`'s deferred
 * list; 0 when the list cannot grow (the caller frees it then). */
int kiln_stream_defer_release(kiln_stream *stream, kiln_array *a);
/* Takes the stream's deferred list (*count entries; free() the array). */
kiln_array **kiln_stream_take_deferred(kiln_stream *stream, int *count);

#endif
