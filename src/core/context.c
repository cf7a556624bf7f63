/* context.c: opening a context on a backend, the "auto" fallback, and the
 * context-wide operations (synchronize, device info, pinned memory). */
#include "core/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/copy_pool.h"
#include "core/error.h"
#include "core/settings.h"

unsigned kiln_version(void) { return KILN_VERSION_NUMBER; }
const char *kiln_version_string(void) { return "0.1.0"; }

static kiln_status context_open_backend(kiln_context *ctx, const kiln_backend_ops *ops, int ordinal) {
    kiln_status s = ops->open(ordinal, &ctx->state);
    if (s != KILN_OK) return s;
    ctx->ops = ops;
    s = ops->device_info(ctx->state, &ctx->info);
    if (s == KILN_OK && ops->kind == KILN_BACKEND_CUDA)
        snprintf(ctx->arch, sizeof ctx->arch, "sm_%d%d", ctx->info.compute_major, ctx->info.compute_minor);
    if (s == KILN_OK)
        s = ops->compiler_id(ctx->state, ctx->arch[0] ? ctx->arch : NULL, ctx->compiler_id,
                             sizeof ctx->compiler_id);
    if (s != KILN_OK) {
        ops->close(ctx->state);
        ctx->state = NULL;
        ctx->ops = NULL;
    }
    return s;
}

/* The backend is handed in (src/backend/backends.c picks it by target):
 * core names no backend. host_ops opens the CPU context of host-side work
 * (kiln_context_host) on first need. */
kiln_status kiln_context_open(kiln_context **out, const kiln_backend_ops *ops, int ordinal,
                              const kiln_backend_ops *host_ops) {
    if (!out || !ops) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_open: out or backend is NULL");
    kiln_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_open: out of host memory");
    atomic_init(&ctx->refs, 1);
    atomic_init(&ctx->closed, 0);
    atomic_init(&ctx->dead, 0);
    pthread_mutex_init(&ctx->lock, NULL);
    atomic_init(&ctx->nslots, 0);
    ctx->host_ops = host_ops;
    kiln_status s = context_open_backend(ctx, ops, ordinal);
    if (s != KILN_OK) {
        kiln_close(ctx);
        return s;
    }
    *out = ctx;
    return KILN_OK;
}

/* on_close of every state of `stage`, newest first (context.h). */
static void slots_close(kiln_context *ctx, kiln_slot_stage stage) {
    for (int i = atomic_load(&ctx->nslots) - 1; i >= 0; i--) {
        const kiln_slot_class *cls = ctx->slots[i].cls;
        void *state = atomic_load(&ctx->slots[i].state);
        if (state && cls->close_stage == stage && cls->on_close) cls->on_close(ctx, state);
    }
}

/* destroy of every state left, newest first. */
static void slots_destroy(kiln_context *ctx) {
    for (int i = atomic_load(&ctx->nslots) - 1; i >= 0; i--) {
        const kiln_slot_class *cls = ctx->slots[i].cls;
        void *state = atomic_exchange(&ctx->slots[i].state, NULL);
        if (state && cls->destroy) cls->destroy(ctx, state);
    }
}

/* The user's part of closing: wait, and print or write the profile the
 * environment asked for, now rather than whenever the last object goes.
 * What objects still need (memory, modules, the backend) stays until
 * kiln_context_release drops the last reference. The slots' stages
 * (context.h) order the parts' work. */
void kiln_close(kiln_context *ctx) {
    if (!ctx || atomic_exchange(&ctx->closed, 1)) return;
    /* Modules still held keep the build they run now. */
    slots_close(ctx, KILN_SLOT_CLOSE_STOP);
    if (ctx->ops) {
        if (!atomic_load(&ctx->dead)) (void)ctx->ops->synchronize(ctx->state);
        slots_close(ctx, KILN_SLOT_CLOSE_REPORT);
        /* The libraries' own objects (BLAS's conversion ufunc and small-matrix
         * gufuncs, FFT's scaling ufunc and plans, the reductions' modules)
         * hold the context like any object: released here, or the context
         * would keep itself alive (kiln_context_check_open refuses to make
         * them again). */
        slots_close(ctx, KILN_SLOT_CLOSE_RELEASE);
    }
    kiln_context_release(ctx);
}

kiln_status kiln_context_check_open(kiln_context *ctx, const char *what) {
    if (!atomic_load(&ctx->closed)) return KILN_OK;
    return kiln_set_error(KILN_ERR_CONTEXT_DEAD,
                          "%s: the context was closed (kiln_close); arrays that outlive it can still be read "
                          "and released, not used by the libraries",
                          what);
}

kiln_context *kiln_context_retain(kiln_context *ctx) {
    if (ctx) atomic_fetch_add(&ctx->refs, 1);
    return ctx;
}

void kiln_context_release(kiln_context *ctx) {
    if (!ctx || atomic_fetch_sub(&ctx->refs, 1) != 1) return;
    if (ctx->ops) {
        if (!atomic_load(&ctx->dead)) (void)ctx->ops->synchronize(ctx->state);
        slots_destroy(ctx); /* cuFFT plans, cuBLAS handles go before the device does */
        kiln_close(ctx->host);
        kiln_copy_pool_destroy(ctx->copy_pool);
        ctx->ops->close(ctx->state);
    }
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

kiln_status kiln_context_host(kiln_context *ctx, kiln_context **out) {
    if (kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_EXECUTION)) { /* its work runs on the host already */
        *out = ctx;
        return KILN_OK;
    }
    pthread_mutex_lock(&ctx->lock);
    kiln_status s = KILN_OK;
    /* Its own profiler would print a second summary (or overwrite the
     * trace) at close; its work is host work of ctx's caller anyway. */
    if (!ctx->host)
        s = ctx->host_ops ? kiln_context_open(&ctx->host, ctx->host_ops, 0, ctx->host_ops)
                          : kiln_set_error(KILN_ERR_UNSUPPORTED, "no CPU backend was handed to this context");
    kiln_context *host = ctx->host;
    pthread_mutex_unlock(&ctx->lock);
    if (s != KILN_OK) return kiln_prefix_error(s, "opening the CPU context for host-side work: ");
    *out = host;
    return KILN_OK;
}

/* KILN_COPY_THREADS, else the online CPUs up to 16. Measured on the H100's
 * 16-core host, vectorAdd 320M f32 from pageable arrays end to end: 4
 * threads 190-239 ms, 8 threads 148-160 ms, 16 threads 108-111 ms: one
 * thread's memcpy is far from the memory system's bandwidth. */
static int copy_threads(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return (int)kiln_setting_int("KILN_COPY_THREADS", 1, 64, cores < 1 ? 1 : cores > 16 ? 16 : cores);
}

struct kiln_copy_pool *kiln_context_copy_pool(kiln_context *ctx) {
    pthread_mutex_lock(&ctx->lock);
    if (!ctx->copy_pool_tried) {
        ctx->copy_pool_tried = 1;
        int threads = copy_threads();
        /* Copying alone needs no pool; failing to start one is no error. */
        if (threads > 1 && kiln_copy_pool_create(threads, &ctx->copy_pool) != KILN_OK) kiln_clear_error();
    }
    struct kiln_copy_pool *p = ctx->copy_pool;
    pthread_mutex_unlock(&ctx->lock);
    return p;
}

/* NULL has no backend: KILN_BACKEND_CPU and "" would read as answers, so
 * NULL gets -1 and NULL (the enum's values are all >= 0). */
kiln_backend_kind kiln_context_backend(const kiln_context *ctx) {
    if (!ctx || !ctx->ops) {
        kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_context_backend: context is NULL");
        return (kiln_backend_kind)-1;
    }
    return ctx->ops->kind;
}
const char *kiln_context_backend_name(const kiln_context *ctx) {
    if (!ctx || !ctx->ops) {
        kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_context_backend_name: context is NULL");
        return NULL;
    }
    return ctx->ops->name;
}

kiln_status kiln_context_check(kiln_context *ctx) {
    if (!ctx) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "context is NULL");
    if (atomic_load(&ctx->dead))
        return kiln_set_error(KILN_ERR_CONTEXT_DEAD,
                              "this context is dead: an earlier kernel faulted on the device "
                              "(see the first error); release objects and open a new context");
    return KILN_OK;
}

kiln_status kiln_context_note(kiln_context *ctx, kiln_status status) {
    if (status == KILN_ERR_DEVICE_FAULT) atomic_store(&ctx->dead, 1);
    return status;
}

kiln_status kiln_synchronize(kiln_context *ctx) {
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    return kiln_context_note(ctx, ctx->ops->synchronize(ctx->state));
}

kiln_status kiln_device_info_get(kiln_context *ctx, kiln_device_info *out) {
    if (!ctx || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_device_info_get: NULL argument");
    kiln_status s = ctx->ops->device_info(ctx->state, &ctx->info);
    if (s == KILN_OK) *out = ctx->info;
    return s;
}

kiln_status kiln_host_alloc(kiln_context *ctx, size_t bytes, void **out) {
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_host_alloc: out is NULL");
    s = ctx->ops->host_alloc(ctx->state, bytes ? bytes : 1, out);
    if (s != KILN_OK) return kiln_prefix_error(s, "kiln_host_alloc of %zu bytes: ", bytes);
    kiln_context_retain(ctx); /* a pinned buffer keeps its context, as an array does */
    return KILN_OK;
}

void kiln_host_free(kiln_context *ctx, void *ptr) {
    if (!ctx || !ptr) return;
    ctx->ops->host_free(ctx->state, ptr);
    kiln_context_release(ctx);
}

kiln_status kiln_jit_stats_get(kiln_context *ctx, kiln_jit_stats *out) {
    if (!ctx || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_jit_stats_get: NULL argument");
    pthread_mutex_lock(&ctx->lock);
    *out = ctx->jit;
    pthread_mutex_unlock(&ctx->lock);
    return KILN_OK;
}
