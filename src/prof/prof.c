/* prof.c: the recorder behind KILN_PROFILE / KILN_TRACE and kiln_profiler_*.
 *
 * The hooks append fixed-size records to preallocated chunks under one mutex
 * (held for a few dozen instructions; launches may come from many threads).
 * Times: on the CPU backend work runs inside the call, so the host clock read
 * around the call is the work's time. On CUDA, CUPTI's activity records give
 * each operation's device start and end, matched by order on its stream
 * (prof_cupti.h); where CUPTI cannot be
 * had, or KILN_PROFILE_TIMER=events asks for it, two pooled backend events
 * are recorded around each operation on its stream. Device times are read
 * only when chunks are old (their work is long done) or a report is asked for.
 * This file makes and frees the recorder and chooses its timer; the hooks
 * that record are in prof_hooks.c. The public kiln_profiler_* calls are in
 * prof_api.c; attaching the
 * profiler to a context, and its report at kiln_close, in prof_attach.c;
 * the record log, its strings and streams and the folding of finished
 * records into statistics in prof_records.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/settings.h"
#include "prof/prof_cupti.h"
#include "prof/prof_internal.h"

/* ------------------------------------------------------------------ life */

void kiln_prof_free(kiln_prof *p) {
    if (!p) return;
    if (p->timer == PROF_TIMER_CUPTI) kiln_prof_cupti_release();
    kiln_prof_events_free(p);
    kiln_prof_chunks_free(&p->open);
    kiln_prof_chunks_free(&p->kept);
    kiln_prof_chunks_free(&p->spare);
    for (uint32_t i = 0; i < p->string_count; i++) free(p->strings[i].text);
    free(p->strings);
    free(p->string_table);
    free(p->streams);
    free(p->dev_streams);
    free(p->kernels);
    free(p->summary_path);
    free(p->trace_path);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* KILN_PROFILE_TIMER=events|cupti overrides the choice (auto, the default): CUPTI on kiln's CUDA
 * backend when libcupti loads (cheapest per launch), else events; the CPU
 * backend always times on the host. */
static void choose_timer(kiln_prof *p) {
    const char *want = kiln_setting_string("KILN_PROFILE_TIMER");
    int want_events = want && strcmp(want, "events") == 0, want_cupti = want && strcmp(want, "cupti") == 0;
    if (want && *want && !want_events && !want_cupti && strcmp(want, "auto") != 0)
        fprintf(stderr,
                "kiln: warning: KILN_PROFILE_TIMER=%s is neither events nor cupti; choosing the timer "
                "automatically\n",
                want);
    p->timer = PROF_TIMER_HOST;
    /* Work done by the calling threads has no device time: wall time is its time. */
    if (kiln_backend_has(p->ctx->ops, KILN_BACKEND_CAP_HOST_EXECUTION)) {
        if (want_cupti)
            fprintf(stderr, "kiln: warning: KILN_PROFILE_TIMER=cupti: the CPU backend times on the host\n");
        return;
    }
    if (want_events) {
        snprintf(p->timer_note, sizeof p->timer_note, "KILN_PROFILE_TIMER=events");
    } else if (!p->backend) { /* the backend gives no handles to match CUPTI's records with */
        snprintf(p->timer_note, sizeof p->timer_note, "CUPTI times only kiln's CUDA backend");
    } else {
        const char *why = "", *library = "";
        if (kiln_prof_cupti_acquire(&why, &library)) {
            p->timer = PROF_TIMER_CUPTI;
            p->cupti_library = library;
            p->cupti_context_id = kiln_prof_cupti_context_id(p->ctx);
            kiln_prof_cupti_lock();
            p->cupti_start = kiln_prof_cupti_head_locked();
            kiln_prof_cupti_unlock();
            return;
        }
        snprintf(p->timer_note, sizeof p->timer_note, "CUPTI unavailable: %s", why);
    }
    if (want_cupti)
        fprintf(stderr, "kiln: warning: KILN_PROFILE_TIMER=cupti: %s; timing with events\n", p->timer_note);
    kiln_prof_events_start(p);
}

void kiln_prof_set_retain(kiln_prof *p, int retain) {
    p->retain = retain;
    atomic_store_explicit(&p->head.wants_args, retain, memory_order_relaxed);
}

kiln_prof *kiln_prof_create(kiln_context *ctx) {
    kiln_prof *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->ctx = ctx;
    if (ctx->ops && ctx->ops->get_proc_address)
        p->backend = ctx->ops->get_proc_address(KILN_BACKEND_PROC_PROF);
    pthread_mutex_init(&p->lock, NULL);
    atomic_init(&p->head.enabled, 1);
    atomic_init(&p->head.wants_args, 0);
    p->t0_ms = kiln_now_ms();
    for (int k = 0; k < PROF_COLLECTIVE_KINDS; k++) p->coll_name[k] = PROF_NO_ID;
    p->cupti_dims_key = kiln_prof_cupti_dims_key(p->cupti_grid, p->cupti_block); /* of zero dims */
    if (kiln_prof_stream_index(p, NULL) != 0 || !p->streams || !p->dev_streams) {
        kiln_prof_free(p);
        return NULL;
    }
    choose_timer(p);
    return p;
}
