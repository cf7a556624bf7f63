/* prof_api.c: the public kiln_profiler_* calls (include/kiln.h) over the
 * recorder in prof.c. Each takes the profiler's lock for as long as it reads
 * or resets the records; reports first resolve every finished record. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backends.h"
#include "core/error.h"
#include "prof/prof_internal.h"

/* kiln_open is the core's context plus the profiler the environment asks
 * for (KILN_PROFILE, KILN_TRACE): it lives here so that core knows nothing
 * of the profiler. */
kiln_status kiln_open(kiln_context **out, const char *target) {
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_open: out is NULL");
    kiln_context *ctx = NULL;
    kiln_status s = kiln_backend_open_context(&ctx, target);
    if (s == KILN_OK) s = kiln_prof_attach(ctx);
    if (s != KILN_OK) {
        kiln_close(ctx);
        return s;
    }
    *out = ctx;
    kiln_clear_error();
    return KILN_OK;
}

static kiln_status need_context(kiln_context *ctx, const char *what) {
    if (!ctx) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: context is NULL", what);
    return KILN_OK;
}

static kiln_status need_profiler(kiln_context *ctx, const char *what) {
    kiln_status s = need_context(ctx, what);
    if (s == KILN_OK && !kiln_prof_of(ctx))
        s = kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "%s: profiling is off for this context (set KILN_PROFILE=1 or call kiln_profiler_start)", what);
    return s;
}

/* The slot's create for kiln_profiler_start: a profiler that keeps records. */
static kiln_status prof_start(kiln_context *ctx, void *arg, void **state) {
    int *made = arg;
    kiln_prof *p = kiln_prof_create(ctx);
    if (!p) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_profiler_start: out of host memory");
    kiln_prof_set_retain(p, 1);
    *made = 1;
    *state = p;
    return KILN_OK;
}

kiln_status kiln_profiler_start(kiln_context *ctx) {
    kiln_status s = need_context(ctx, "kiln_profiler_start");
    if (s != KILN_OK) return s;
    int made = 0;
    void *state = NULL;
    if ((s = kiln_slot_get(ctx, &kiln_prof_slot, prof_start, &made, &state)) != KILN_OK) return s;
    if (made) return KILN_OK;
    kiln_prof *p = state;
    pthread_mutex_lock(&p->lock);
    kiln_prof_set_retain(p, 1);
    pthread_mutex_unlock(&p->lock);
    atomic_store(&p->head.enabled, 1);
    return KILN_OK;
}

kiln_status kiln_profiler_stop(kiln_context *ctx) {
    kiln_status s = need_context(ctx, "kiln_profiler_stop");
    kiln_prof *p = s == KILN_OK ? kiln_prof_of(ctx) : NULL;
    if (p) atomic_store(&p->head.enabled, 0);
    return s;
}

int kiln_profiler_enabled(const kiln_context *ctx) {
    kiln_prof *p = ctx ? kiln_prof_of(ctx) : NULL;
    return p && atomic_load(&p->head.enabled);
}

kiln_status kiln_profiler_reset(kiln_context *ctx) {
    kiln_status s = need_profiler(ctx, "kiln_profiler_reset");
    if (s != KILN_OK) return s;
    kiln_prof *p = kiln_prof_of(ctx);
    pthread_mutex_lock(&p->lock);
    kiln_prof_forget(p);
    pthread_mutex_unlock(&p->lock);
    return KILN_OK;
}

kiln_status kiln_profiler_summary(kiln_context *ctx, char **text) {
    kiln_status s = need_profiler(ctx, "kiln_profiler_summary");
    if (s != KILN_OK) return s;
    if (!text) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_profiler_summary: text is NULL");
    kiln_prof *p = kiln_prof_of(ctx);
    pthread_mutex_lock(&p->lock);
    kiln_prof_resolve(p, 1);
    char *t = kiln_prof_summary_text(p);
    pthread_mutex_unlock(&p->lock);
    if (!t) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_profiler_summary: out of host memory");
    *text = t;
    return KILN_OK;
}

kiln_status kiln_profiler_print(kiln_context *ctx, FILE *out) {
    char *text = NULL;
    kiln_status s = kiln_profiler_summary(ctx, &text);
    if (s != KILN_OK) return s;
    FILE *f = out ? out : stderr;
    int bad = fputs(text, f) < 0 || fflush(f) != 0;
    free(text);
    return bad ? kiln_set_error(KILN_ERR_IO, "kiln_profiler_print: writing the summary failed: %s",
                                strerror(errno))
               : KILN_OK;
}

kiln_status kiln_profiler_write_trace(kiln_context *ctx, const char *path) {
    kiln_status s = need_profiler(ctx, "kiln_profiler_write_trace");
    if (s != KILN_OK) return s;
    if (!path || !*path)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_profiler_write_trace: path is empty");
    kiln_prof *p = kiln_prof_of(ctx);
    pthread_mutex_lock(&p->lock);
    kiln_prof_resolve(p, 1);
    s = kiln_prof_trace_write(p, path);
    pthread_mutex_unlock(&p->lock);
    return s;
}
