/* cpu_internal.h: what the CPU backend's files share. Private to src/backend/cpu/. */
#ifndef KILN_BACKEND_CPU_INTERNAL_H
#define KILN_BACKEND_CPU_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "backend/cpu/cpu_abi.h"
#include "backend/cpu/cpu_pool.h"
#include "core/backend.h"

#define KILN_CPU_MAX_THREADS_PER_BLOCK 1024
#define KILN_CPU_SHARED_BYTES 49152u        /* per block, without opt-in, as CUDA */
#define KILN_CPU_SHARED_BYTES_OPTIN 232448u /* 227 KiB, an H100's opt-in limit */
#define KILN_CPU_TLS_OVERHEAD 256u          /* the prelude's own thread_locals and padding */

/* The compiler command (KILN_CXX, else "c++") split into words. */
typedef struct kiln_cpu_compiler {
    char text[1024]; /* the command as given, for messages */
    char *argv[32];  /* words of text (point into words) */
    int argc;
    char words[1024];
    /* "-fuse-ld=gold" or "-fuse-ld=lld" when that linker is on PATH, else
     * NULL (the compiler's default, GNU ld): a small module links in a
     * third of the time (docs/PERF_NOTES.md, cold calls). */
    const char *linker;
} kiln_cpu_compiler;

struct kiln_cpu_worker; /* cpu_launch.c */

typedef struct kiln_cpu_mapping {
    void *ptr;    /* what the caller got */
    size_t bytes; /* what the caller asked for */
    void *base;   /* the whole mapping (guards included) */
    size_t total;
} kiln_cpu_mapping;

/* Small buffers' slabs (cpu_slab.c). */
typedef struct kiln_cpu_slab kiln_cpu_slab;
#define KILN_CPU_SLAB_CLASSES 8                     /* slots of 1, 2, 4 ... 128 pages */
#define KILN_CPU_SLOT_GUARD ((size_t)128 << 10)     /* PROT_NONE after every slot */
#define KILN_CPU_SLAB_KEEP_BYTES ((size_t)64 << 20) /* empty slabs kept mapped in */

struct kiln_backend_state {
    kiln_cpu_compiler cxx;
    pthread_mutex_t lock;        /* guards compiler_id */
    char compiler_id[512];       /* "" until first asked */
    pthread_mutex_t launch_lock; /* one launch at a time: workers are shared */
    kiln_cpu_pool *pool;
    struct kiln_cpu_worker *workers; /* one per pool participant */
    int worker_count;
    size_t stack_bytes; /* per fiber */
    int checked;        /* KILN_CPU_CHECKED: every buffer between guards (cpu_memory.c) */
    /* Large buffers, mapped one by one (cpu_memory.c). */
    pthread_mutex_t big_lock;
    kiln_cpu_mapping *big;
    size_t big_count, big_cap;
    /* Freed mappings kept for reuse (their pages stay faulted in), up to
     * KILN_CPU_SPARE_BYTES; dropped before an allocation is refused. */
    kiln_cpu_mapping spare[16];
    size_t spare_count, spare_bytes;
    /* Small buffers in guarded slots of slabs (cpu_slab.c), under big_lock:
     * every slab sorted by address, and per class the slabs with a free slot. */
    kiln_cpu_slab **slabs;
    size_t slab_count, slab_cap;
    kiln_cpu_slab *slab_free[KILN_CPU_SLAB_CLASSES];
    size_t slab_empty_bytes; /* data bytes of the empty slabs kept */
};

struct kiln_backend_module {
    void *handle;       /* dlopen */
    int fd;             /* the memfd holding the code, or -1 */
    int barriers;       /* kernels run as fibers (KILN_CPU_BLOB_BARRIERS) */
    int stateless;      /* KILN_CPU_BLOB_STATELESS: may be upgraded (cpu_upgrade.c) */
    size_t frame_bytes; /* the largest frame the compiler reported; 0: unknown */
    kiln_cpu_begin_fn begin;
    /* Fault reports (cpu_launch.c): the faulting worker's block and thread
     * indices as the module last stored them (NULL in modules without). */
    void (*where)(unsigned *block_and_thread);
    pthread_mutex_t lock;                    /* guards functions and handle */
    atomic_int running;                      /* launches of its kernels in progress (module_busy) */
    struct kiln_backend_function *functions; /* owned; freed at unload */
};

struct kiln_backend_function {
    struct kiln_backend_function *next;
    kiln_backend_module *module;
    char *name;
    kiln_cpu_fast_fn fast;  /* NULL on the barrier path */
    kiln_cpu_fast_fn probe; /* fast's twin that keeps threadIdx in memory (fault reports); may be NULL */
    /* Loop-path kernels: one thread of one block (fault reports: libkiln
     * loops and notes who runs, so modules carry no probe loop); may be NULL. */
    kiln_cpu_thread_fn one;
    kiln_cpu_thread_fn thread; /* NULL on the fast path */
    int param_count;
    unsigned short pointee_size[128]; /* per parameter: bytes of a pointer's element, else 0 */
    unsigned short param_size[128];   /* per parameter: its bytes (a graph copies the values) */
};

/* Work runs synchronously in call order, so a stream is a handle and an
 * event a timestamp; a stream capturing a graph records instead of running
 * (cpu_graph.c). */
struct kiln_cpu_graph;
struct kiln_backend_stream {
    struct kiln_cpu_graph *capture; /* NULL unless capturing */
};

struct kiln_backend_event {
    double ms; /* CLOCK_MONOTONIC when recorded */
    int recorded;
};

/* cpu_compiler.c */
/* Reads KILN_CXX (default "c++") into c; KILN_ERR_INVALID_ARGUMENT if it is unusable. */
kiln_status kiln_cpu_compiler_from_env(kiln_cpu_compiler *c);
/* "<first line of cxx --version> <machine> cpu:<flags hash> abi:<n> prelude:<hash>
 * flags:<hash of the command's fixed and link flags>". */
kiln_status kiln_cpu_compiler_identify(const kiln_cpu_compiler *c, char *out, size_t out_size);
/* Runs argv (PATH lookup) with stdin from /dev/null; *output gets stdout and
 * stderr together (malloc'd), *exit_code the exit status (-N: killed by
 * signal N).
 * KILN_ERR_COMPILER_MISSING when argv[0] cannot be executed; KILN_ERR_COMPILE
 * when it runs longer than KILN_COMPILE_TIMEOUT_S (default below) and is
 * killed with its process group. */
#define KILN_CPU_COMPILE_TIMEOUT_DEFAULT_S 300
kiln_status kiln_cpu_spawn(char *const *argv, char **output, int *exit_code);
/* The same, stopped (process group killed, KILN_ERR_COMPILE) as soon as
 * cancel signals; cancel may be NULL. */
kiln_status kiln_cpu_spawn_until(char *const *argv, const kiln_cancel *cancel, char **output, int *exit_code);

/* "<program> exited with status N", or "<program> was killed by signal N
 * (NAME)", which for SIGKILL adds that memory may have run out. */
void kiln_cpu_describe_exit(const char *program, int exit_code, char *out, size_t cap);

/* cpu_link.c: a module's link run by the linker itself (see there). */
#define KILN_CPU_LINK_MAX_WORDS 256
typedef struct kiln_cpu_link {
    char *text;                          /* owns the words */
    char *argv[KILN_CPU_LINK_MAX_WORDS]; /* linker, -z defs, the driver's words */
    int argc;
    char path[4200]; /* the cpu-link file it came from */
} kiln_cpu_link;
/* base: compiler words (the first compiler_words of them) and compile flags;
 * link: the words the driver gets after the input (linker choice, libraries).
 * Returns 1 with *out ready to link obj into so, 0 when the driver should
 * link (no cache folder, a clang, KILN_CPU_LINK=driver, an answer that did
 * not parse). Never sets an error. */
int kiln_cpu_link_prepare(char *const *base, int base_count, int compiler_words, char *const *link,
                          int link_count, const char *obj, const char *so, kiln_cpu_link *out);
/* The command into argv (room for l->argc + 1): lean: without libstdc++,
 * libgcc static, under -z defs; full: the driver's libraries. Returns argc. */
int kiln_cpu_link_lean(kiln_cpu_link *l, char **argv);
int kiln_cpu_link_full(kiln_cpu_link *l, char **argv);
/* Removes the remembered link line (it failed where the driver's own link
 * worked): the next compile asks the driver again. */
void kiln_cpu_link_forget(kiln_cpu_link *l);
void kiln_cpu_link_free(kiln_cpu_link *l);

/* cpu_compile.c */
/* The flags every compile passes, compiler and link flags, space separated
 * (part of the compiler id, so a change of them misses the cache). */
void kiln_cpu_command_flags(char *out, size_t out_size);
kiln_status kiln_cpu_compile(const kiln_cpu_compiler *c, const kiln_compile_request *req, kiln_blob *out,
                             char **log);

/* cpu_source.c */
/* The user's source with each `extern __shared__ T name[];` turned into
 * `kiln_dyn_shared<T> name;` (same line count); *barriers is set when the
 * source, or a header it includes from include_dirs, uses a barrier or a warp
 * primitive, or when KILN_CPU_FIBERS is among the defines. NULL: no memory. */
char *kiln_cpu_source_prepare(const kiln_compile_request *req, int *barriers);

/* cpu_blob.c: the compiled-module format.
 *   0  "KILNCPU1" magic   8  u32 abi version   12 u32 flags   16 u64 so size
 *   24 the shared object's bytes */
#define KILN_CPU_BLOB_BARRIERS 1u
/* The module keeps no state between launches (cpu_state.c): a first tier
 * may be replaced by its -O3 build. Absent in older blobs: not replaced. */
#define KILN_CPU_BLOB_STATELESS 2u
/* flags >> 8: the largest stack frame of the module's functions, in KiB
 * (0: not known). */
#define KILN_CPU_BLOB_FRAME_SHIFT 8
#define KILN_CPU_BLOB_FRAME_KB_MAX 0xffffffu
kiln_status kiln_cpu_blob_write(kiln_blob *out, unsigned flags, const void *so, size_t so_size);
kiln_status kiln_cpu_blob_read(const kiln_blob *blob, unsigned *flags, const unsigned char **so,
                               size_t *so_size);

/* cpu_state.c: 1 when the object file d of n bytes (a compiled module
 * before its link) defines no writable, non-thread-local data object but
 * kiln's own launch geometry; 0 when it does or is not a 64-bit ELF. */
int kiln_cpu_object_stateless(const unsigned char *d, size_t n);

/* cpu_module.c */
kiln_status kiln_cpu_module_load(kiln_backend_state *st, const kiln_blob *binary, kiln_backend_module **out);
void kiln_cpu_module_unload(kiln_backend_state *st, kiln_backend_module *mod);
/* Module globals (cpu_globals.c): the accessor each variable gets, named
 * kiln_cpu_global_ + the name with '_' and every other character that is
 * no letter or digit written as _XX (hex), so that distinct names never
 * meet; 0 if it does not fit. */
#define KILN_CPU_GLOBAL_SYMBOL_BYTES 1024
/* kiln's headers for the toolkit's names (cpu_headers.c):
 * <cooperative_groups.h>, <cuda_fp16.h>, <cuda_bf16.h>, <curand_kernel.h>. wanted: the source names one.
 * write: into dir/include (its path to include_dir); remove: what write made. */
int kiln_cpu_headers_wanted(const kiln_compile_request *req);
/* 1, with *log (malloc'd) naming the construct and its line, when source
 * uses what the CPU backend cannot run: textures, surfaces, kernel launches
 * from device code (cpu_refuse.c). */
int kiln_cpu_refuse(const char *source, const char *name, char **log);
kiln_status kiln_cpu_headers_write(const char *dir, char *include_dir, size_t cap);
void kiln_cpu_headers_remove(const char *include_dir);
int kiln_cpu_global_symbol(const char *name, char *out, size_t cap);
kiln_status kiln_cpu_module_global(kiln_backend_state *st, kiln_backend_module *mod, const char *name,
                                   void **ptr, size_t *bytes);
int kiln_cpu_module_busy(kiln_backend_state *st, kiln_backend_module *mod);
kiln_status kiln_cpu_launch_cooperative(kiln_backend_state *st, kiln_backend_function *fn,
                                        const kiln_launch_config *cfg, kiln_backend_stream *stream,
                                        void **args);
kiln_status kiln_cpu_function_get(kiln_backend_state *st, kiln_backend_module *mod, const char *name,
                                  kiln_backend_function **out, kiln_param_info *params, int max_params,
                                  int *param_count);
kiln_status kiln_cpu_function_attributes(kiln_backend_state *st, kiln_backend_function *fn,
                                         kiln_kernel_attributes *out);
/* Kernel `name`'s entry points in the loaded module `handle` into f's
 * fast, probe, one and thread (those of other paths NULL); 0 when it has
 * none. */
int kiln_cpu_entries_find(void *handle, const char *name, kiln_backend_function *f);

/* cpu_upgrade.c: the backend's module_upgradable and module_upgrade. */
int kiln_cpu_module_upgradable(kiln_backend_state *st, kiln_backend_module *mod);
kiln_status kiln_cpu_module_upgrade(kiln_backend_state *st, kiln_backend_module *mod,
                                    const kiln_blob *better);

/* cpu_launch.c */
kiln_status kiln_cpu_workers_create(kiln_backend_state *st);
void kiln_cpu_workers_destroy(kiln_backend_state *st);
kiln_status kiln_cpu_launch(kiln_backend_state *st, kiln_backend_function *fn, const kiln_launch_config *cfg,
                            kiln_backend_stream *stream, void **args);

/* cpu_memory.c: memory, copies, streams and events (all synchronous). */
/* Unmaps what is still mapped (at close). */
void kiln_cpu_memory_release(kiln_backend_state *st);
/* Checked mode: if addr lies in a guard next to a buffer, copies that
 * buffer's mapping into *out and returns 1. */
int kiln_cpu_memory_guard_hit(kiln_backend_state *st, const void *addr, kiln_cpu_mapping *out);
/* cpu_slab.c: buffers of up to kiln_cpu_slab_max_bytes() in guarded slots
 * (see there). kiln_cpu_slab_free returns 0 when p is not one of them. */
size_t kiln_cpu_slab_max_bytes(void);
kiln_status kiln_cpu_slab_alloc(kiln_backend_state *st, size_t bytes, void **out);
int kiln_cpu_slab_free(kiln_backend_state *st, void *p);
int kiln_cpu_slab_guard_hit(kiln_backend_state *st, const void *addr, kiln_cpu_mapping *out);
void kiln_cpu_slab_release(kiln_backend_state *st);
#define KILN_CPU_SPARE_BYTES ((size_t)256 << 20)
#define KILN_CPU_GUARD_BEFORE ((size_t)64 << 10)
#define KILN_CPU_GUARD_AFTER ((size_t)1 << 20)
kiln_status kiln_cpu_mem_alloc(kiln_backend_state *st, size_t bytes, kiln_backend_stream *stream, void **out);
void kiln_cpu_mem_free(kiln_backend_state *st, void *ptr, kiln_backend_stream *stream);
kiln_status kiln_cpu_host_alloc(kiln_backend_state *st, size_t bytes, void **out);
void kiln_cpu_host_free(kiln_backend_state *st, void *ptr);
kiln_status kiln_cpu_copy(kiln_backend_state *st, void *dst, const void *src, size_t bytes,
                          kiln_copy_kind kind, kiln_backend_stream *stream, int async);
kiln_status kiln_cpu_memset(kiln_backend_state *st, void *dst, int value, size_t bytes,
                            kiln_backend_stream *stream);
kiln_status kiln_cpu_stream_create(kiln_backend_state *st, kiln_backend_stream **out);
kiln_status kiln_cpu_stream_synchronize(kiln_backend_state *st, kiln_backend_stream *stream);
void kiln_cpu_stream_destroy(kiln_backend_state *st, kiln_backend_stream *stream);
kiln_status kiln_cpu_synchronize(kiln_backend_state *st);
kiln_status kiln_cpu_event_create(kiln_backend_state *st, kiln_backend_event **out);
kiln_status kiln_cpu_event_record(kiln_backend_state *st, kiln_backend_event *ev,
                                  kiln_backend_stream *stream);
kiln_status kiln_cpu_event_synchronize(kiln_backend_state *st, kiln_backend_event *ev);
kiln_status kiln_cpu_event_elapsed_ms(kiln_backend_state *st, kiln_backend_event *start,
                                      kiln_backend_event *end, float *ms);
void kiln_cpu_event_destroy(kiln_backend_state *st, kiln_backend_event *ev);

/* cpu_graph.c: stream capture. Each returns 1 when `stream` is capturing and
 * the operation was recorded (or *status says why it could not be), 0 when
 * the caller should run it now. */
int kiln_cpu_capture_launch(kiln_backend_stream *stream, kiln_backend_function *fn,
                            const kiln_launch_config *cfg, void **args, kiln_status *status);
int kiln_cpu_capture_copy(kiln_backend_stream *stream, void *dst, const void *src, size_t bytes, int async,
                          kiln_status *status);
int kiln_cpu_capture_memset(kiln_backend_stream *stream, void *dst, int value, size_t bytes,
                            kiln_status *status);
int kiln_cpu_capture_callback(kiln_backend_stream *stream, void (*fn)(void *), void *user,
                              kiln_status *status);
int kiln_cpu_capture_event(kiln_backend_stream *stream, kiln_backend_event *ev, kiln_status *status);
/* Memory allocated on a capturing stream belongs to the graph (freed with
 * it, as CUDA's graph memory nodes): alloc records it, free of it is a no-op. */
int kiln_cpu_capture_alloc(kiln_backend_stream *stream, void *ptr);
int kiln_cpu_capture_owns(kiln_backend_stream *stream, const void *ptr);
kiln_status kiln_cpu_graph_begin_capture(kiln_backend_state *st, kiln_backend_stream *stream);
kiln_status kiln_cpu_graph_end_capture(kiln_backend_state *st, kiln_backend_stream *stream,
                                       kiln_backend_graph **out, int *node_count);
kiln_status kiln_cpu_graph_launch(kiln_backend_state *st, kiln_backend_graph *graph,
                                  kiln_backend_stream *stream);
kiln_status kiln_cpu_graph_update(kiln_backend_state *st, kiln_backend_graph *graph,
                                  kiln_backend_graph *from);
void kiln_cpu_graph_destroy(kiln_backend_state *st, kiln_backend_graph *graph);
/* A stream destroyed mid-capture drops what it recorded. */
void kiln_cpu_capture_discard(kiln_backend_state *st, kiln_backend_stream *stream);

/* cpu_driver.c: events without timing, waits, callbacks, occupancy, memory
 * kinds and peers, as the synchronous CPU backend has them. */
kiln_status kiln_cpu_event_create_flags(kiln_backend_state *st, unsigned flags, kiln_backend_event **out);
kiln_status kiln_cpu_event_query(kiln_backend_state *st, kiln_backend_event *ev, int *done);
kiln_status kiln_cpu_stream_wait_event(kiln_backend_state *st, kiln_backend_stream *stream,
                                       kiln_backend_event *ev);
kiln_status kiln_cpu_stream_add_callback(kiln_backend_state *st, kiln_backend_stream *stream,
                                         void (*fn)(void *), void *user);
kiln_status kiln_cpu_stream_query(kiln_backend_state *st, kiln_backend_stream *stream, int *done);
kiln_status kiln_cpu_function_occupancy(kiln_backend_state *st, kiln_backend_function *fn, int block_threads,
                                        size_t dynamic_shared_bytes, int *blocks_per_sm);
kiln_status kiln_cpu_function_block_size(kiln_backend_state *st, kiln_backend_function *fn,
                                         size_t dynamic_shared_bytes, int block_limit, int *min_grid,
                                         int *block_threads);
kiln_status kiln_cpu_function_set_shared(kiln_backend_state *st, kiln_backend_function *fn,
                                         size_t max_dynamic_shared_bytes, int carveout_percent);
size_t kiln_cpu_function_dynamic_shared_limit(kiln_backend_state *st, kiln_backend_function *fn);
kiln_status kiln_cpu_mem_alloc_kind(kiln_backend_state *st, kiln_memory kind, size_t bytes, void **device,
                                    void **host);
void kiln_cpu_mem_free_kind(kiln_backend_state *st, kiln_memory kind, void *device);
kiln_status kiln_cpu_mem_prefetch(kiln_backend_state *st, void *ptr, size_t bytes, int to_device,
                                  kiln_backend_stream *stream);
kiln_status kiln_cpu_mem_advise(kiln_backend_state *st, void *ptr, size_t bytes, kiln_memory_advice advice);
kiln_status kiln_cpu_pool_set_release_threshold(kiln_backend_state *st, uint64_t bytes);
kiln_status kiln_cpu_device_can_access_peer(kiln_backend_state *st, kiln_backend_state *peer, int *can);

/* cpu_device.c */
kiln_status kiln_cpu_device_info(kiln_backend_state *st, kiln_device_info *out);

#endif
