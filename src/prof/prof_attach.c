/* prof_attach.c: the profiler on a context: attached from the environment
 * (KILN_PROFILE, KILN_TRACE) at kiln_open, kept in a context slot, and its
 * summary and trace written when kiln_close empties that slot. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/settings.h"
#include "prof/prof_internal.h"

static int env_on(const char *name) {
    const char *v = kiln_setting_string(name);
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "off") != 0 && strcmp(v, "no") != 0;
}

/* 0 (and a warning) when a trace cannot be written to `path`: checked up
 * front so the user learns it at the start of a long run, not at its end. */
static int trace_path_usable(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    const char *why = NULL;
    if (access(dir, W_OK | X_OK) != 0)
        why = strerror(errno);
    else if (access(path, F_OK) == 0 && access(path, W_OK) != 0)
        why = strerror(errno);
    if (!why) return 1;
    fprintf(stderr, "kiln: warning: KILN_TRACE=%s cannot be written (%s); no trace will be written\n", path,
            why);
    return 0;
}

/* The slot's create: hands over the profiler attach made. */
static kiln_status prof_install(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    *state = arg;
    return KILN_OK;
}

kiln_status kiln_prof_attach(kiln_context *ctx) {
    int profile = env_on("KILN_PROFILE");
    const char *trace = kiln_setting_string("KILN_TRACE");
    if (trace && (!*trace || !trace_path_usable(trace))) trace = NULL;
    if (!profile && !trace) return KILN_OK;
    kiln_prof *p = kiln_prof_create(ctx);
    const char *out = kiln_setting_string("KILN_PROFILE_OUT");
    if (p) {
        p->print_at_exit = profile;
        kiln_prof_set_retain(p, trace != NULL);
        if (trace && !(p->trace_path = kiln_prof_strdup(trace))) kiln_prof_set_retain(p, 0);
        if (out && *out) p->summary_path = kiln_prof_strdup(out);
    }
    if (!p || (trace && !p->trace_path)) {
        /* Profiling is a diagnostic: never fail kiln_open over it. */
        fprintf(stderr, "kiln: warning: out of memory starting the profiler; profiling is off\n");
        kiln_prof_free(p);
        return KILN_OK;
    }
    void *installed = NULL;
    if (kiln_slot_get(ctx, &kiln_prof_slot, prof_install, p, &installed) != KILN_OK || installed != p) {
        fprintf(stderr, "kiln: warning: %s; profiling is off\n",
                installed ? "a profiler was already attached" : kiln_last_error());
        kiln_clear_error();
        kiln_prof_free(p);
    }
    return KILN_OK;
}

static void write_summary_at_exit(kiln_prof *p) {
    char *text = kiln_prof_summary_text(p);
    if (!text) {
        fprintf(stderr, "kiln: warning: out of memory formatting the profile\n");
        return;
    }
    FILE *f = stderr;
    if (p->summary_path) {
        f = fopen(p->summary_path, "a");
        if (!f) {
            fprintf(stderr,
                    "kiln: warning: cannot write the profile to KILN_PROFILE_OUT=%s (%s); printing it here\n",
                    p->summary_path, strerror(errno));
            f = stderr;
        }
    }
    /* A full disk (ENOSPC) or a failing device must not lose the profile
     * silently: say so, and print it here instead. */
    int ok = fputs(text, f) >= 0;
    ok = fflush(f) == 0 && ok && !ferror(f);
    int err = errno;
    if (f != stderr && fclose(f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok && f != stderr) {
        fprintf(stderr,
                "kiln: warning: writing the profile to KILN_PROFILE_OUT=%s failed (%s); printing it here\n",
                p->summary_path, strerror(err));
        fputs(text, stderr);
    }
    free(text);
}

/* Prints the summary and writes the trace if asked, then frees p. */
static void prof_finish(kiln_prof *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    kiln_prof_resolve(p, 1);
    if (p->print_at_exit) write_summary_at_exit(p);
    if (p->trace_path && kiln_prof_trace_write(p, p->trace_path) != KILN_OK) {
        fprintf(stderr, "kiln: warning: %s; the program's results are not affected\n", kiln_last_error());
        kiln_clear_error();
    }
    pthread_mutex_unlock(&p->lock);
    kiln_prof_free(p);
}

void kiln_prof_detach(kiln_context *ctx) { prof_finish(kiln_slot_take(ctx, &kiln_prof_slot)); }

static void prof_on_close(kiln_context *ctx, void *state) {
    (void)state;
    kiln_prof_detach(ctx);
}

static void prof_destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    prof_finish(state);
}

/* Reports after the device is synchronized, before the libraries release
 * their objects (core/context.h). */
const kiln_slot_class kiln_prof_slot = {
    .name = "profiler",
    .close_stage = KILN_SLOT_CLOSE_REPORT,
    .on_close = prof_on_close,
    .destroy = prof_destroy,
};
