/* prof.h: the profiler's hooks, called by the core around every kernel launch,
 * copy, allocation and compile. The profiler is the state of a context slot
 * (core/context.h); with profiling off the slot is empty and each hook is
 * one look at the context's few slots at the call site (KILN_PROF_ON). */
#ifndef KILN_PROF_H
#define KILN_PROF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"
#include "core/context.h"

/* The first member of struct kiln_prof (prof_internal.h): lets the call
 * sites skip describing arguments while the profiler is attached but
 * stopped (kiln_profiler_stop), or when no trace will show them. */
struct kiln_prof_head {
    atomic_int enabled;
    atomic_int wants_args; /* records are kept for a trace, which shows args_desc */
};
/* The profiler's slot: emptied by kiln_close after the device is
 * synchronized, before the libraries release their objects. */
extern const kiln_slot_class kiln_prof_slot;
/* ctx's profiler (struct kiln_prof, prof_internal.h), NULL when off. */
static inline struct kiln_prof_head *kiln_prof_head_of(const kiln_context *ctx) {
    return (struct kiln_prof_head *)kiln_slot_peek(ctx, &kiln_prof_slot);
}
static inline int kiln_prof_on(const kiln_context *ctx) {
    struct kiln_prof_head *h = kiln_prof_head_of(ctx);
    /* Work queued while a graph is captured runs only at the graph's
     * launch, which is what the profiler records (kernel/graph.c). */
    return h && atomic_load_explicit(&h->enabled, memory_order_relaxed) && !kiln_context_capturing(ctx);
}
#define KILN_PROF_ON(ctx) kiln_prof_on(ctx)
/* Only meaningful where KILN_PROF_ON(ctx) holds: 0 when args_desc would be
 * dropped (summary only), so a launch need not build it. */
#define KILN_PROF_WANTS_ARGS(ctx)                                                                            \
    atomic_load_explicit(&kiln_prof_head_of(ctx)->wants_args, memory_order_relaxed)

typedef struct kiln_prof_op kiln_prof_op;

/* Reads KILN_PROFILE and KILN_TRACE; fills the profiler's slot when either
 * asks for it. */
kiln_status kiln_prof_attach(kiln_context *ctx);
/* Prints the summary / writes the trace if asked, then frees the profiler. */
void kiln_prof_detach(kiln_context *ctx);

/* Marks the start of an operation on a stream; returns a token for _end
 * (NULL if the profiler cannot record it). `args_desc` (may be NULL) is a
 * short description of the arguments' shapes for the trace. */
kiln_prof_op *kiln_prof_kernel_begin(kiln_context *ctx, const char *name, const kiln_launch_config *cfg,
                                     kiln_backend_stream *stream, const char *args_desc);
/* A launch's arguments as the trace shows them, described only when the
 * profiler has not seen their kind yet: launches with equal `key` (never 0)
 * have equal descriptions (the same dtypes and shapes), and `describe`
 * writes the description of `data` into buf (at most cap bytes with the
 * NUL). Launches repeat their arguments' shapes, so most launches neither
 * describe nor look a string up. */
typedef struct kiln_prof_args {
    uint64_t key;
    void (*describe)(const void *data, char *buf, size_t cap);
    const void *data;
} kiln_prof_args;
/* kiln_prof_kernel_begin for a launch whose arguments `args` (NULL: none
 * described) are described lazily; end with kiln_prof_end. */
kiln_prof_op *kiln_prof_launch_begin(kiln_context *ctx, const char *name, const kiln_launch_config *cfg,
                                     kiln_backend_stream *stream, const kiln_prof_args *args);
/* A vendor library call (cuBLAS, cuFFT, ...) on `stream`, shown as a kernel
 * row named `name`: its kernels are the library's, which CUPTI cannot tie
 * to kiln's record, so it is timed by events around it on a GPU (whatever
 * the timer) and by the host clock on the CPU. `flops` (0 if unknown): the
 * call's floating-point operations, summed per row so the summary shows
 * FLOP/s. End with kiln_prof_end. */
kiln_prof_op *kiln_prof_library_begin(kiln_context *ctx, const char *name, kiln_backend_stream *stream,
                                      const char *args_desc, double flops);
kiln_prof_op *kiln_prof_copy_begin(kiln_context *ctx, kiln_copy_kind kind, size_t bytes, int pinned,
                                   kiln_backend_stream *stream);
void kiln_prof_end(kiln_context *ctx, kiln_prof_op *op);
/* A collective (src/comm) of kind `coll` (< 8; its name e.g. "allreduce")
 * moving `bytes` as nccl-tests counts them; bus_factor turns algorithm
 * bandwidth into bus bandwidth (nccl-tests: 2(n-1)/n for all-reduce, ...).
 * Timed like a copy: events on GPU streams, the host clock on the CPU. */
kiln_prof_op *kiln_prof_comm_begin(kiln_context *ctx, int coll, const char *name, size_t bytes,
                                   double bus_factor, kiln_backend_stream *stream);
/* Ends a collective's record with what it turned out to be (a group of
 * calls is one record, described at its end). */
void kiln_prof_comm_end(kiln_context *ctx, kiln_prof_op *op, int coll, const char *name, size_t bytes,
                        double bus_factor);
/* ctx is rank `rank` of `nranks` over `transport`: the summary and the
 * trace say so, and a trace file gets ".rank<r>" before its extension so
 * that ranks sharing KILN_TRACE do not overwrite each other. */
void kiln_prof_set_rank(kiln_context *ctx, int rank, int nranks, const char *transport);
void kiln_prof_alloc(kiln_context *ctx, size_t bytes, double host_ms);
void kiln_prof_compile(kiln_context *ctx, const char *name, int cache_hit, double compile_ms, double load_ms);
/* A disk-cache entry for module `name` was refused (`why`) and rebuilt. */
void kiln_prof_cache_reject(kiln_context *ctx, const char *name, const char *why);

#endif
