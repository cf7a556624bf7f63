/*
 * backend.h: the one interface between kiln's core and a backend.
 *
 * It lives in core because core calls it: the backends (src/backend/cpu,
 * src/backend/cuda) implement it from above, and core reaches them only
 * through the table it is handed (src/backend/backends.c picks it).
 *
 * A backend is a table of function pointers (kiln_backend_ops) plus an opaque
 * per-context state. The core never includes a backend's private headers and
 * backends never include each other. Optional operations may be NULL; the
 * core checks and reports KILN_ERR_UNSUPPORTED naming the backend.
 *
 * Every operation that can fail returns kiln_status and, on failure, sets the
 * thread's message with kiln_set_error() (src/core/error.h).
 */
#ifndef KILN_CORE_BACKEND_H
#define KILN_CORE_BACKEND_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

#define KILN_BACKEND_OPS_VERSION 1

typedef struct kiln_backend_state kiln_backend_state; /* per context, backend-defined */
typedef struct kiln_backend_stream kiln_backend_stream;
typedef struct kiln_backend_event kiln_backend_event;
typedef struct kiln_backend_module kiln_backend_module;
typedef struct kiln_backend_function kiln_backend_function;
typedef struct kiln_backend_graph kiln_backend_graph;

typedef enum kiln_copy_kind {
    KILN_COPY_HOST_TO_DEVICE = 0,
    KILN_COPY_DEVICE_TO_HOST = 1,
    KILN_COPY_DEVICE_TO_DEVICE = 2,
    KILN_COPY_HOST_TO_HOST = 3
} kiln_copy_kind;

/* A growable byte buffer; the compile output and cache payload. */
typedef struct kiln_blob {
    unsigned char *data;
    size_t size;
} kiln_blob;

/* A module compiled ahead of time, when kiln was built (on CUDA: nvcc's
 * cubin of the very text kiln's NVRTC path compiles for the module), with
 * the symbols its kernels and variables have in it. Static data of the
 * library: kiln's own modules offer one through kiln_module_spec
 * (kernel/module_cache.h), for one target each. */
typedef struct kiln_prebuilt_image {
    const char *arch;   /* the one target it serves: "sm_90" */
    const char *source; /* the module's source as its caller gives it (what picks the image) */
    /* The whole text that was compiled: what the backend's compiler is
     * given for `source` (prelude, source, signature records;
     * KILN_BACKEND_PROC_MODULE_TEXT). The backend uses the image only for
     * a request of this very text. */
    const char *text;
    const unsigned char *image; /* the backend's binary (CUDA: a cubin) */
    size_t image_bytes;
    int count;
    /* The kernels by the expressions the request names them by
     * (kernel_exprs), then the module globals as "&name"; and each one's
     * symbol in the image. */
    const char *const *names;
    const char *const *lowered;
} kiln_prebuilt_image;

/* What to compile. `source` is the user's source exactly as given; the backend
 * adds its own prelude in front and a `#line 1 "<name>"` directive so that
 * diagnostics count lines from the user's first line. `kernel_names` lists the
 * __global__ functions found in the source by kiln_scan_kernels()
 * (src/kernel/kernel_scanner.h); the backend must make each reachable by that name and
 * find it in the source through kernel_exprs,
 * describe its parameters (see kiln_param_info). */
typedef struct kiln_compile_request {
    const char *source;
    const char *name;                /* file name shown in diagnostics */
    const char *const *kernel_names; /* identifiers: kiln_sig_<name> etc. (scan.h's symbols) */
    /* C++ expressions naming the same kernels ("physics::fill", "k<float>"),
     * for the signature records, entry points and NVRTC name expressions;
     * NULL: the kernel_names themselves. */
    const char *const *kernel_exprs;
    int kernel_count;
    /* Parsed compile options (src/kernel/options.h). */
    const char *const *defines; /* "NAME" or "NAME=VALUE" */
    int define_count;
    const char *const *include_dirs;
    int include_count;
    int debug;     /* -G */
    int lineinfo;  /* -lineinfo */
    int fast_math; /* --use_fast_math */
    /* --fast-compile: less optimisation for less compile time (NVRTC
     * -Ofc=mid, the host compiler -O1); kiln's first-call kernels on CUDA,
     * which calls leave for fully optimised ones (ufunc mixed, gufunc
     * any-layout) */
    int fast_compile;
    const char *arch; /* CUDA: "sm_90"; CPU: NULL */
    /* NULL, or what stops the compile (a tier-up whose module is
     * released): the backend stops its compiler and returns
     * KILN_ERR_COMPILE. Backends that cannot stop a compile midway may
     * ignore it. */
    const struct kiln_cancel *cancel;
    /* Module globals (kiln_module_global): the qualified names of the
     * __constant__ and __device__ variables the source defines at namespace
     * scope (src/kernel/globals.h). The backend makes each one's address
     * and size findable by that name in the loaded module (module_global). */
    const char *const *global_names;
    int global_count;
    /* NULL, or an image of this module built ahead of time for req's arch
     * (kernel/module.c gives one only to a context of that arch, never
     * through the disk cache): the backend packs it instead of compiling,
     * when it was compiled from the text the backend would compile for
     * this request, with no options, and has every kernel and variable;
     * else it compiles nothing and says why with KILN_ERR_UNSUPPORTED.
     * Backends that make no such images never get one. */
    const kiln_prebuilt_image *prebuilt;
} kiln_compile_request;

/* A compile's stop signal: `stop` becomes nonzero, then `fd` (an eventfd)
 * becomes readable, so that a compile waiting on its compiler wakes at
 * once. */
typedef struct kiln_cancel {
    atomic_int stop;
    int fd;
} kiln_cancel;

/* Launch geometry, already validated against kiln_device_info by the core. */
typedef struct kiln_launch_config {
    uint32_t grid[3];
    uint32_t block[3];
    size_t shared_bytes;
} kiln_launch_config;

typedef struct kiln_backend_ops {
    int version;      /* KILN_BACKEND_OPS_VERSION */
    const char *name; /* "cpu", "cuda" */
    kiln_backend_kind kind;

    /* Opens device `ordinal`; on failure sets the error and returns
     * KILN_ERR_NO_DEVICE / KILN_ERR_DRIVER with the reason. */
    kiln_status (*open)(int ordinal, kiln_backend_state **out);
    void (*close)(kiln_backend_state *st);
    kiln_status (*device_info)(kiln_backend_state *st, kiln_device_info *out);

    /* Device memory. free is stream-ordered where the backend can. */
    kiln_status (*mem_alloc)(kiln_backend_state *st, size_t bytes, kiln_backend_stream *stream, void **out);
    void (*mem_free)(kiln_backend_state *st, void *ptr, kiln_backend_stream *stream);
    /* Page-locked host memory. */
    kiln_status (*host_alloc)(kiln_backend_state *st, size_t bytes, void **out);
    void (*host_free)(kiln_backend_state *st, void *ptr);

    /* Contiguous copy. stream NULL: the default stream. `async` 0: returns
     * when the copy is complete. */
    kiln_status (*copy)(kiln_backend_state *st, void *dst, const void *src, size_t bytes, kiln_copy_kind kind,
                        kiln_backend_stream *stream, int async);
    kiln_status (*memset)(kiln_backend_state *st, void *dst, int value, size_t bytes,
                          kiln_backend_stream *stream);

    kiln_status (*stream_create)(kiln_backend_state *st, kiln_backend_stream **out);
    kiln_status (*stream_synchronize)(kiln_backend_state *st, kiln_backend_stream *stream);
    void (*stream_destroy)(kiln_backend_state *st, kiln_backend_stream *stream);
    kiln_status (*synchronize)(kiln_backend_state *st); /* whole device */

    kiln_status (*event_create)(kiln_backend_state *st, kiln_backend_event **out);
    kiln_status (*event_record)(kiln_backend_state *st, kiln_backend_event *ev, kiln_backend_stream *stream);
    kiln_status (*event_synchronize)(kiln_backend_state *st, kiln_backend_event *ev);
    kiln_status (*event_elapsed_ms)(kiln_backend_state *st, kiln_backend_event *start,
                                    kiln_backend_event *end, float *ms);
    void (*event_destroy)(kiln_backend_state *st, kiln_backend_event *ev);

    /* Compilation. `compiler_id` identifies compiler + version + target for
     * the cache key (e.g. "nvrtc 13.0 sm_90", "g++ 12.2.0 x86_64 <cpu flags hash>").
     * compile() turns a request into a binary blob (backend-defined format,
     * self-contained: it is what the disk cache stores). On a compile error it
     * returns KILN_ERR_COMPILE and *log holds the compiler's output (malloc'd;
     * the caller frees). *log may also be set on success (warnings).
     * compiler_id with st NULL: the id of the compiler compile_only uses,
     * where its output depends on the request alone (then kiln_compile_only
     * keeps logs in the disk cache); an error where it does not. */
    kiln_status (*compiler_id)(kiln_backend_state *st, const char *arch, char *out, size_t out_size);
    kiln_status (*compile)(kiln_backend_state *st, const kiln_compile_request *req, kiln_blob *out,
                           char **log);
    kiln_status (*module_load)(kiln_backend_state *st, const kiln_blob *binary, kiln_backend_module **out);
    void (*module_unload)(kiln_backend_state *st, kiln_backend_module *mod);
    /* Looks up a kernel by its source name and describes its parameters:
     * *param_count and up to max_params entries of params. KILN_ERR_NOT_FOUND
     * if the module has no such kernel. *out belongs to the module (one per
     * kernel, shared by every lookup) and goes with module_unload. */
    kiln_status (*function_get)(kiln_backend_state *st, kiln_backend_module *mod, const char *name,
                                kiln_backend_function **out, kiln_param_info *params, int max_params,
                                int *param_count);
    kiln_status (*function_attributes)(kiln_backend_state *st, kiln_backend_function *fn,
                                       kiln_kernel_attributes *out);
    /* args[i] points to the value of parameter i, already converted to the
     * parameter's exact type and size. Asynchronous. */
    kiln_status (*launch)(kiln_backend_state *st, kiln_backend_function *fn, const kiln_launch_config *cfg,
                          kiln_backend_stream *stream, void **args);
    /* Optional (may be NULL): 1 if ptr lies in page-locked host memory the
     * backend knows about (for the profiler's pageable/pinned split). */
    int (*host_is_pinned)(kiln_backend_state *st, const void *ptr);
    /* Optional (may be NULL): the native handles a vendor library (cuFFT,
     * cuBLAS, cuRAND, NCCL) needs to queue work beside kiln's. On CUDA it
     * makes the context current on the calling thread and gives the CUcontext
     * and the CUstream of `stream` (NULL: the context's default stream). */
    kiln_status (*native_handles)(kiln_backend_state *st, kiln_backend_stream *stream, void **native_context,
                                  void **native_stream);
    /* Optional (may be NULL): *done = 1 when every operation queued on
     * `stream` has finished, 0 while some still run; never blocks. */
    kiln_status (*stream_query)(kiln_backend_state *st, kiln_backend_stream *stream, int *done);
    /* Optional (may be NULL): copies `bytes` from device memory of `src_st`
     * (another context of the same backend, another device) to device
     * memory of `st`, queued on `stream` of `st`. Direct over the peer link
     * when the devices allow it, else staged by the driver. */
    kiln_status (*copy_peer)(kiln_backend_state *st, void *dst, kiln_backend_state *src_st, const void *src,
                             size_t bytes, kiln_backend_stream *stream);
    /* Optional (may be NULL; the CPU backend has them): a module's tier-up
     * (src/kernel/tier_up.c). module_can_tier_up: 1 when mod may be
     * replaced by another build of the same source, i.e. it keeps no state
     * between launches (no writable module-scope or static variables).
     * module_tier_up: loads `better`, a build of mod's source with other
     * optimisation, and makes every function of mod run its code from the
     * next launch on; function handles stay valid. On failure mod is
     * unchanged. */
    int (*module_can_tier_up)(kiln_backend_state *st, kiln_backend_module *mod);
    kiln_status (*module_tier_up)(kiln_backend_state *st, kiln_backend_module *mod, const kiln_blob *better);

    /* ---- the driver layer (include/kiln.h "driver layer"). All optional:
     * NULL makes the public call KILN_ERR_UNSUPPORTED naming the backend. */
    /* An event with KILN_EVENT_* flags. */
    kiln_status (*event_create_flags)(kiln_backend_state *st, unsigned flags, kiln_backend_event **out);
    /* *done = 1 when the work before the event's last record has finished. */
    kiln_status (*event_query)(kiln_backend_state *st, kiln_backend_event *ev, int *done);
    /* Later work on `stream` waits for ev's last record; the host does not. */
    kiln_status (*stream_wait_event)(kiln_backend_state *st, kiln_backend_stream *stream,
                                     kiln_backend_event *ev);
    /* fn(user) in stream order. */
    kiln_status (*stream_add_callback)(kiln_backend_state *st, kiln_backend_stream *stream,
                                       void (*fn)(void *), void *user);
    kiln_status (*function_occupancy)(kiln_backend_state *st, kiln_backend_function *fn, int block_threads,
                                      size_t dynamic_shared_bytes, int *blocks_per_sm);
    kiln_status (*function_block_size)(kiln_backend_state *st, kiln_backend_function *fn,
                                       size_t dynamic_shared_bytes, int block_limit, int *min_grid,
                                       int *block_threads);
    /* The dynamic shared memory limit a launch may use, and the L1/shared
     * carve-out in percent (-1: unchanged). */
    kiln_status (*function_set_shared)(kiln_backend_state *st, kiln_backend_function *fn,
                                       size_t max_dynamic_shared_bytes, int carveout_percent);
    /* The largest dynamic shared memory a launch of fn may ask for now. */
    size_t (*function_dynamic_shared_limit)(kiln_backend_state *st, kiln_backend_function *fn);
    /* KILN_MEMORY_MAPPED or _MANAGED memory: *device is what kernels get,
     * *host what the host uses (equal under unified addressing). Freed with
     * mem_free_kind(kind, device). */
    kiln_status (*mem_alloc_kind)(kiln_backend_state *st, kiln_memory kind, size_t bytes, void **device,
                                  void **host);
    void (*mem_free_kind)(kiln_backend_state *st, kiln_memory kind, void *device);
    /* Managed memory: migrate to the device (to_device 1) or host, on stream. */
    kiln_status (*mem_prefetch)(kiln_backend_state *st, void *ptr, size_t bytes, int to_device,
                                kiln_backend_stream *stream);
    kiln_status (*mem_advise)(kiln_backend_state *st, void *ptr, size_t bytes, kiln_memory_advice advice);
    kiln_status (*pool_set_release_threshold)(kiln_backend_state *st, uint64_t bytes);
    /* *can = 1 when st's device accesses peer's memory directly. */
    kiln_status (*device_can_access_peer)(kiln_backend_state *st, kiln_backend_state *peer, int *can);
    /* Stream capture: work queued on `stream` from begin to end is recorded
     * into a graph instead of run. end_capture always ends the capture; on a
     * capture that failed it returns the failure and no graph. */
    kiln_status (*graph_begin_capture)(kiln_backend_state *st, kiln_backend_stream *stream);
    kiln_status (*graph_end_capture)(kiln_backend_state *st, kiln_backend_stream *stream,
                                     kiln_backend_graph **out, int *node_count);
    kiln_status (*graph_launch)(kiln_backend_state *st, kiln_backend_graph *graph,
                                kiln_backend_stream *stream);
    /* Gives graph from's parameters (in place, or instantiated anew); the
     * two swap what they describe, so from keeps graph's former contents. */
    kiln_status (*graph_update)(kiln_backend_state *st, kiln_backend_graph *graph, kiln_backend_graph *from);
    void (*graph_destroy)(kiln_backend_state *st, kiln_backend_graph *graph);
    /* ---- What callers above reach through the table, never by name. */
    /* Optional (may be NULL): compiles without a device or context
     * (kiln_compile_only: CUDA through NVRTC alone, the CPU through the host
     * compiler alone). `id` receives the compiler_id. */
    kiln_status (*compile_only)(const kiln_compile_request *req, kiln_blob *out, char **log, char *id,
                                size_t id_size);
    /* Optional (may be NULL): the devices of this backend on the machine; 0
     * and a static reason in *why when none can be used. */
    kiln_status (*device_count)(int *count, const char **why);
    /* Optional (may be NULL), ggml's get_proc_address: an extra that only
     * some backends have, by name (KILN_BACKEND_PROC_*), or NULL. */
    const void *(*get_proc_address)(const char *name);
    /* Optional (may be NULL): module globals. module_global: the address
     * (device memory, valid while mod is loaded) and size in bytes of the
     * variable `name`, one of the request's global_names;
     * KILN_ERR_NOT_FOUND when mod has none. module_busy: 1 while a kernel of
     * mod is running, when a write to its variables would race it (the CPU,
     * where another thread may copy while a launch runs); NULL where copies
     * and launches are ordered by their streams. */
    kiln_status (*module_global)(kiln_backend_state *st, kiln_backend_module *mod, const char *name,
                                 void **ptr, size_t *bytes);
    int (*module_busy)(kiln_backend_state *st, kiln_backend_module *mod);
    /* Optional (may be NULL): launch with every block of the grid resident
     * at once, so that the kernel may synchronise the whole grid
     * (kiln_launch_cooperative); a backend that cannot hold the grid says
     * so with a status. */
    kiln_status (*launch_cooperative)(kiln_backend_state *st, kiln_backend_function *fn,
                                      const kiln_launch_config *cfg, kiln_backend_stream *stream,
                                      void **args);
    /* What the backend's memory and work are (KILN_BACKEND_CAP_* bits):
     * callers above ask these instead of testing the kind. */
    unsigned caps;
} kiln_backend_ops;

/* Device memory is the host's memory: the host reads and writes device
 * arrays as they are, and kernels and libraries take host arrays without a
 * copy (the CPU backend). Without it a KILN_MEMORY_HOST array is staged
 * through device memory before a kernel or a library reads it. */
#define KILN_BACKEND_CAP_HOST_MEMORY 0x1u
/* Work is done by the host threads that queue it (the CPU backend): a
 * stream's timeline is wall time, and work kiln does on the host during a
 * call (a CPU library) cannot be told apart from the stream's. */
#define KILN_BACKEND_CAP_HOST_EXECUTION 0x2u

/* 1 when ops has every bit of `cap`. */
static inline int kiln_backend_has(const kiln_backend_ops *ops, unsigned cap) {
    return ops && (ops->caps & cap) == cap;
}

/* get_proc_address("prof"): a const kiln_backend_prof *, what the
 * profiler's device timers need to match a tool's activity records (CUPTI)
 * to kiln's operations without a driver callback per launch. */
#define KILN_BACKEND_PROC_PROF "prof"
typedef struct kiln_backend_prof {
    /* Driver calls that failed on the calling thread so far: an operation
     * during which it moved may have queued nothing on the device. */
    unsigned (*failed_calls)(void);
    /* Streams destroyed in this process so far: a stream handle looked up
     * before a destroy may now be another stream's. */
    unsigned (*streams_destroyed)(void);
    /* The driver context and stream behind `s` (NULL: the context's default
     * stream), as the tool names them (CUcontext, CUstream). */
    void (*handles)(kiln_backend_state *st, kiln_backend_stream *s, void **context, void **stream);
    /* The stream's process-unique id (cuStreamGetId): 0, or -1 when the
     * driver cannot say. */
    int (*stream_unique_id)(kiln_backend_state *st, kiln_backend_stream *s, unsigned long long *id);
} kiln_backend_prof;

/* get_proc_address("lto"): a const kiln_backend_lto *, device functions
 * compiled to LTO-IR for a library that links them into its own kernels at
 * plan time (cuFFT's LTO callbacks, through nvJitLink). */
#define KILN_BACKEND_PROC_LTO "lto"
typedef struct kiln_backend_lto {
    /* Compiles `source` (device functions only, no prelude) to LTO-IR for
     * `arch` ("sm_90" or "compute_90"); needs no device. out->data is
     * malloc'd (the caller frees it); *log (may be NULL) receives the
     * compiler's messages, malloc'd, or NULL. */
    kiln_status (*compile)(const char *source, const char *name, const char *arch, kiln_blob *out,
                           char **log);
} kiln_backend_lto;

/* get_proc_address("module_text"): a const kiln_backend_module_text *, the
 * text the backend's compiler is given for a request (its prelude, the
 * source, the signature records): what kiln's build compiles a prebuilt
 * image from (kiln_prebuilt_image.text). */
#define KILN_BACKEND_PROC_MODULE_TEXT "module_text"
typedef struct kiln_backend_module_text {
    /* malloc'd (the caller frees it); NULL when out of memory */
    char *(*text)(const kiln_compile_request *req);
} kiln_backend_module_text;

#endif /* KILN_CORE_BACKEND_H */
