/* cuda_internal.h: what the CUDA backend's files share. Private to
 * src/backend/cuda/. */
#ifndef KILN_CUDA_INTERNAL_H
#define KILN_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend/cuda/cuda_loader.h"
#include "core/backend.h"

/* Kernels with more dynamic shared memory than this need an opt-in
 * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) first. */
#define KILN_CUDA_SHARED_DEFAULT_BYTES (48u * 1024u)

struct kiln_backend_state {
    const kiln_cuda_driver *cu;
    int ordinal;
    CUdevice device;
    CUcontext context; /* the device's primary context, retained */
    CUstream stream;   /* the default stream: non-blocking, made at open */
    CUmemoryPool pool; /* the device's default stream-ordered pool */
    int compute_major, compute_minor;
    size_t shared_optin_bytes; /* per block, with opt-in */
    char arch[16];             /* "sm_90" */
};

/* kiln_backend_stream * is the CUstream itself and kiln_backend_event * the
 * CUevent itself: both are already opaque driver handles, and wrapping them
 * would cost an allocation and an indirection on every launch. */
static inline CUstream kiln_cuda_stream(const kiln_backend_state *st, kiln_backend_stream *s) {
    return s ? (CUstream)(void *)s : st->stream;
}

typedef struct kiln_cuda_kernel_entry {
    char *source_name;  /* as in the user's source */
    char *lowered_name; /* the symbol in the cubin */
    /* Its signature record's bytes, copied out of the cubin at load
     * (cuda_elf.c); NULL: read from the device instead. */
    unsigned char *signature;
    size_t signature_bytes;
} kiln_cuda_kernel_entry;

struct kiln_backend_module {
    CUmodule module;
    int kernel_count;
    kiln_cuda_kernel_entry *kernels;
    /* Function handles made so far, one per kernel, freed with the module:
     * every kiln_kernel of one kernel shares its handle, so lookups repeated
     * over a long run allocate nothing. */
    pthread_mutex_t lock;
    struct kiln_backend_function *functions;
};

struct kiln_backend_function {
    CUfunction function;
    /* Dynamic shared memory a launch may ask for without / with the opt-in
     * (the block's limit less the kernel's static shared memory). */
    size_t dynamic_default_bytes, dynamic_limit_bytes;
    /* Set once the opt-in to dynamic_limit_bytes is made. Every thread that
     * races to make it writes the same value, so no lock is needed. */
    atomic_int opted_in;
    /* The parameters its signature record gave, read from the device once:
     * a module loaded from the cache is checked kernel by kernel and then
     * each kernel is looked up again (kernel/module.c). */
    kiln_param_info *params;
    int param_count;
    const kiln_cuda_kernel_entry *entry;
    struct kiln_backend_function *next;
};

/* NVRTC's start-up in a thread while the first context opens
 * (cuda_warmup.c): start it once per process; wait before a context closes
 * (compiles run beside it). */
void kiln_cuda_warmup_start(const char *arch);
void kiln_cuda_warmup_wait(void);
/* A compile for req->arch with no context (the warm-up's). */
kiln_status kiln_cuda_compile_plain(const kiln_compile_request *req, kiln_blob *out, char **log);
/* The text NVRTC is given for req: the prelude, req's source and one
 * signature record per kernel (cuda_module_text.c); malloc'd, NULL when out of
 * memory. Also KILN_BACKEND_PROC_MODULE_TEXT's. */
char *kiln_cuda_module_text(const kiln_compile_request *req);
/* req's blob from its prebuilt image (req->prebuilt, cuda_prebuilt.c):
 * KILN_ERR_UNSUPPORTED, saying why, when the image does not serve req. */
kiln_status kiln_cuda_pack_prebuilt(const kiln_compile_request *req, kiln_blob *out);
/* get_proc_address of the ops table: KILN_BACKEND_PROC_PROF (cuda_stream.c)
 * and KILN_BACKEND_PROC_LTO (kiln_cuda_lto, cuda_lto.c). */
extern const kiln_backend_lto kiln_cuda_lto;
const void *kiln_cuda_get_proc_address(const char *name);
/* compile_only of the ops table: NVRTC alone, no device. */
kiln_status kiln_cuda_compile_only(const kiln_compile_request *req, kiln_blob *out, char **log, char *id,
                                   size_t id_size);

/* The initial bytes of global `name` in a cubin: 1 with *data pointing
 * into elf, 0 when not found in an initialised section (cuda_elf.c). */
int kiln_cuda_elf_global(const unsigned char *elf, size_t size, const char *name, const unsigned char **data,
                         size_t *bytes);
/* Calls each(name, ud) for every kernel entry of a cubin (a function symbol
 * marked as an entry, st_other 0x10); returns how many, or -1 when the
 * image is not one kiln can read. For `kiln compile`'s check that kiln named
 * every kernel the compiler made. */
int kiln_cuda_elf_entries(const unsigned char *elf, size_t size, void (*each)(const char *name, void *ud),
                          void *ud);

/* Makes st's context current on the calling thread (a no-op when it is). */
kiln_status kiln_cuda_make_current(kiln_backend_state *st);

/* Sets the thread error "<what>: CUDA_ERROR_X (description)" and returns the
 * kiln status for r: out of memory, device fault (sticky), launch config or
 * driver error. */
kiln_status kiln_cuda_fail(const kiln_cuda_driver *cu, CUresult r, const char *what);
/* The same for a launch, where CUDA_ERROR_INVALID_VALUE means a bad config. */
kiln_status kiln_cuda_fail_launch(const kiln_cuda_driver *cu, CUresult r, const char *what);

/* ops implemented in the other files */
kiln_status kiln_cuda_mem_alloc(kiln_backend_state *st, size_t bytes, kiln_backend_stream *stream,
                                void **out);
void kiln_cuda_mem_free(kiln_backend_state *st, void *ptr, kiln_backend_stream *stream);
kiln_status kiln_cuda_host_alloc(kiln_backend_state *st, size_t bytes, void **out);
void kiln_cuda_host_free(kiln_backend_state *st, void *ptr);
int kiln_cuda_host_is_pinned(kiln_backend_state *st, const void *ptr);
kiln_status kiln_cuda_copy(kiln_backend_state *st, void *dst, const void *src, size_t bytes,
                           kiln_copy_kind kind, kiln_backend_stream *stream, int async);
kiln_status kiln_cuda_memset(kiln_backend_state *st, void *dst, int value, size_t bytes,
                             kiln_backend_stream *stream);

kiln_status kiln_cuda_stream_create(kiln_backend_state *st, kiln_backend_stream **out);
kiln_status kiln_cuda_stream_synchronize(kiln_backend_state *st, kiln_backend_stream *stream);
void kiln_cuda_stream_destroy(kiln_backend_state *st, kiln_backend_stream *stream);
kiln_status kiln_cuda_synchronize(kiln_backend_state *st);
kiln_status kiln_cuda_event_create(kiln_backend_state *st, kiln_backend_event **out);
kiln_status kiln_cuda_event_record(kiln_backend_state *st, kiln_backend_event *ev,
                                   kiln_backend_stream *stream);
kiln_status kiln_cuda_event_synchronize(kiln_backend_state *st, kiln_backend_event *ev);
kiln_status kiln_cuda_event_elapsed_ms(kiln_backend_state *st, kiln_backend_event *start,
                                       kiln_backend_event *end, float *ms);
void kiln_cuda_event_destroy(kiln_backend_state *st, kiln_backend_event *ev);

kiln_status kiln_cuda_compiler_id(kiln_backend_state *st, const char *arch, char *out, size_t out_size);
kiln_status kiln_cuda_compile(kiln_backend_state *st, const kiln_compile_request *req, kiln_blob *out,
                              char **log);

kiln_status kiln_cuda_module_load(kiln_backend_state *st, const kiln_blob *binary, kiln_backend_module **out);
void kiln_cuda_module_unload(kiln_backend_state *st, kiln_backend_module *mod);
kiln_status kiln_cuda_launch_cooperative(kiln_backend_state *st, kiln_backend_function *fn,
                                         const kiln_launch_config *cfg, kiln_backend_stream *stream,
                                         void **args);
kiln_status kiln_cuda_module_global(kiln_backend_state *st, kiln_backend_module *mod, const char *name,
                                    void **ptr, size_t *bytes);
kiln_status kiln_cuda_function_get(kiln_backend_state *st, kiln_backend_module *mod, const char *name,
                                   kiln_backend_function **out, kiln_param_info *params, int max_params,
                                   int *param_count);
kiln_status kiln_cuda_function_attributes(kiln_backend_state *st, kiln_backend_function *fn,
                                          kiln_kernel_attributes *out);
kiln_status kiln_cuda_launch(kiln_backend_state *st, kiln_backend_function *fn, const kiln_launch_config *cfg,
                             kiln_backend_stream *stream, void **args);
kiln_status kiln_cuda_stream_query(kiln_backend_state *st, kiln_backend_stream *stream, int *done);
kiln_status kiln_cuda_copy_peer(kiln_backend_state *st, void *dst, kiln_backend_state *src_st,
                                const void *src, size_t bytes, kiln_backend_stream *stream);

/* cuda_driver.c and cuda_graph.c: the driver layer's ops. */
kiln_status kiln_cuda_event_create_flags(kiln_backend_state *st, unsigned flags, kiln_backend_event **out);
kiln_status kiln_cuda_event_query(kiln_backend_state *st, kiln_backend_event *ev, int *done);
kiln_status kiln_cuda_stream_wait_event(kiln_backend_state *st, kiln_backend_stream *stream,
                                        kiln_backend_event *ev);
kiln_status kiln_cuda_stream_add_callback(kiln_backend_state *st, kiln_backend_stream *stream,
                                          void (*fn)(void *), void *user);
kiln_status kiln_cuda_function_occupancy(kiln_backend_state *st, kiln_backend_function *fn, int block_threads,
                                         size_t dynamic_shared_bytes, int *blocks_per_sm);
kiln_status kiln_cuda_function_block_size(kiln_backend_state *st, kiln_backend_function *fn,
                                          size_t dynamic_shared_bytes, int block_limit, int *min_grid,
                                          int *block_threads);
kiln_status kiln_cuda_function_set_shared(kiln_backend_state *st, kiln_backend_function *fn,
                                          size_t max_dynamic_shared_bytes, int carveout_percent);
size_t kiln_cuda_function_dynamic_shared_limit(kiln_backend_state *st, kiln_backend_function *fn);
kiln_status kiln_cuda_mem_alloc_kind(kiln_backend_state *st, kiln_memory kind, size_t bytes, void **device,
                                     void **host);
void kiln_cuda_mem_free_kind(kiln_backend_state *st, kiln_memory kind, void *device);
kiln_status kiln_cuda_mem_prefetch(kiln_backend_state *st, void *ptr, size_t bytes, int to_device,
                                   kiln_backend_stream *stream);
kiln_status kiln_cuda_mem_advise(kiln_backend_state *st, void *ptr, size_t bytes, kiln_memory_advice advice);
kiln_status kiln_cuda_pool_set_release_threshold(kiln_backend_state *st, uint64_t bytes);
kiln_status kiln_cuda_device_can_access_peer(kiln_backend_state *st, kiln_backend_state *peer, int *can);
kiln_status kiln_cuda_graph_begin_capture(kiln_backend_state *st, kiln_backend_stream *stream);
kiln_status kiln_cuda_graph_end_capture(kiln_backend_state *st, kiln_backend_stream *stream,
                                        kiln_backend_graph **out, int *node_count);
kiln_status kiln_cuda_graph_launch(kiln_backend_state *st, kiln_backend_graph *g,
                                   kiln_backend_stream *stream);
kiln_status kiln_cuda_graph_update(kiln_backend_state *st, kiln_backend_graph *g, kiln_backend_graph *from);
void kiln_cuda_graph_destroy(kiln_backend_state *st, kiln_backend_graph *g);

#endif
