/* module_tier.c: the -O3 build of a first-tier module, in the background
 * (module_tier.h).
 *
 * Each build, armed (waiting for the module's first launch), queued (for a
 * slot) or running, is on its context's list (a context slot, under
 * ctx->lock). A running build
 * takes itself off the list, under the lock, as the last thing it does
 * with the module or the context; whoever must outlive it (the module's
 * release, kiln_close, kiln_jit_wait) signals it to stop if it wants it
 * stopped and waits on the list's `changed` until it is gone. The thread is
 * detached: nothing joins it, so the wait is all the synchronisation
 * there is. An armed or queued build is simply taken off the list and
 * freed. */
#include "kernel/module_tier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/settings.h"
#include "jit/cache.h"
#include "prof/prof.h"

/* A build waits for its module's first launch (ARMED), then for one of the
 * context's build slots (QUEUED), then runs on its own thread (RUNNING). */
enum tier_state { TIER_ARMED, TIER_QUEUED, TIER_RUNNING };

struct kiln_module_tier {
    struct kiln_module_tier *next;
    kiln_module *module; /* not a reference: the module's release waits for the build */
    enum tier_state state;
    kiln_cancel cancel;
    char *source, *options, *include_dir;
};

/* The context's builds, and the signal that one has ended. */
struct tier_list {
    struct kiln_module_tier *head;
    pthread_cond_t changed;
};

static void tiers_on_close(kiln_context *ctx, void *state);
static void tiers_destroy(kiln_context *ctx, void *state);

/* Builds stop before kiln_close synchronizes the device: a module still
 * held keeps the build it runs now. */
static const kiln_slot_class tiers_slot = {
    .name = "background builds",
    .close_stage = KILN_SLOT_CLOSE_STOP,
    .on_close = tiers_on_close,
    .destroy = tiers_destroy,
};

static kiln_status tiers_create(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    (void)arg;
    struct tier_list *l = calloc(1, sizeof *l);
    if (!l) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_cond_init(&l->changed, NULL);
    *state = l;
    return KILN_OK;
}

static void tiers_destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    struct tier_list *l = state;
    pthread_cond_destroy(&l->changed);
    free(l);
}

/* Under ctx->lock: ctx's list, NULL when no build was ever armed. */
static struct tier_list *tiers_of(kiln_context *ctx) { return kiln_slot_peek(ctx, &tiers_slot); }

/* The build's niceness: the program's own threads come first. */
#define TIER_NICE 10

/* Builds running at once per context: a quarter of the CPUs, at least one
 * (a program that launches twenty new modules must not start twenty
 * compilers on a 2-core machine). */
static int slots(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN) / 4;
    return n < 1 ? 1 : (int)n;
}

static void start_queued_locked(kiln_context *ctx);

int kiln_module_tiers_wanted(kiln_context *ctx, const kiln_options *opts) {
    if (!ctx->ops->module_upgrade || !ctx->ops->module_upgradable) return 0;
    if (opts->debug || opts->fast_math || opts->fast_compile) return 0;
    return kiln_setting_flag("KILN_CPU_TIERS", 1);
}

/* Compiles the module's source at full optimisation (or finds that build in
 * the cache, written meanwhile by another process) and swaps it in. */
static kiln_status build_and_swap(struct kiln_module_tier *t, double *compile_ms, double *swap_ms,
                                  int *swapped) {
    kiln_module *m = t->module;
    kiln_context *ctx = m->ctx;
    kiln_options opts;
    kiln_status s = kiln_options_parse(t->options, t->include_dir, &opts);
    if (s != KILN_OK) return s;
    kiln_compile_request req;
    kiln_module_request(m, t->source, m->name, &opts, &req);
    req.cancel = &t->cancel;
    kiln_cache_dir dir;
    kiln_cache_dir_resolve(&dir);
    unsigned char key[KILN_CACHE_KEY_BYTES];
    kiln_cache_key(&req, ctx->compiler_id, key);
    kiln_blob bin = {0};
    int hit = 0;
    s = kiln_module_obtain_binary(ctx, &req, &dir, key, 1, &bin, &hit, compile_ms);
    if (s == KILN_OK && !atomic_load(&t->cancel.stop)) {
        double t0 = kiln_now_ms();
        s = ctx->ops->module_upgrade(ctx->state, m->impl, &bin);
        *swap_ms = kiln_now_ms() - t0;
        *swapped = s == KILN_OK;
    }
    free(bin.data);
    kiln_options_free(&opts);
    return s;
}

static void tier_free(struct kiln_module_tier *t) {
    if (t->cancel.fd >= 0) close(t->cancel.fd);
    free(t->source);
    free(t->options);
    free(t->include_dir);
    free(t);
}

static void *tier_main(void *arg) {
    struct kiln_module_tier *t = arg;
    kiln_module *m = t->module;
    kiln_context *ctx = m->ctx;
    /* Linux keeps a nice value per thread, and the compiler this thread
     * starts inherits it. */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), TIER_NICE);
    double compile_ms = 0, swap_ms = 0;
    int swapped = 0;
    kiln_status s = build_and_swap(t, &compile_ms, &swap_ms, &swapped);
    int cancelled = atomic_load(&t->cancel.stop);
    if (swapped && KILN_PROF_ON(ctx)) {
        /* its own row in the profile: the program did not wait for it */
        char name[512];
        snprintf(name, sizeof name, "%s (-O3, background)", m->name);
        kiln_prof_compile(ctx, name, compile_ms == 0, compile_ms, swap_ms);
    }
    if (s != KILN_OK && !cancelled && !kiln_setting_string("KILN_QUIET"))
        fprintf(stderr, "kiln: note: the -O3 build of %s failed (%s: %s); it keeps running its -O1 build\n",
                m->name, kiln_status_string(s), kiln_last_error());
    kiln_clear_error();

    pthread_mutex_lock(&ctx->lock);
    ctx->jit.compile_ms += compile_ms;
    if (swapped) ctx->jit.tier_ups++;
    struct tier_list *l = tiers_of(ctx); /* made before t was armed */
    struct kiln_module_tier **p = &l->head;
    while (*p && *p != t) p = &(*p)->next;
    if (*p) *p = t->next;
    start_queued_locked(ctx); /* the slot this build held */
    /* Past this unlock the module and the context may be gone. */
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&ctx->lock);
    tier_free(t);
    return NULL;
}

static char *dup_or_null(const char *s, int *failed) {
    char *d = s ? strdup(s) : NULL;
    if (s && !d) *failed = 1;
    return d;
}

void kiln_module_tier_arm(kiln_module *m, const char *source, const char *options, const char *include_dir) {
    kiln_context *ctx = m->ctx;
    if (!ctx->ops->module_upgradable(ctx->state, m->impl)) return;
    struct kiln_module_tier *t = calloc(1, sizeof *t);
    if (!t) return;
    int failed = 0;
    t->module = m;
    atomic_init(&t->cancel.stop, 0);
    t->cancel.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    t->source = dup_or_null(source, &failed);
    t->options = dup_or_null(options, &failed);
    t->include_dir = dup_or_null(include_dir, &failed);
    if (failed || t->cancel.fd < 0) {
        tier_free(t);
        return;
    }
    pthread_mutex_lock(&ctx->lock);
    void *state = NULL;
    kiln_status s = kiln_slot_get_locked(ctx, &tiers_slot, tiers_create, NULL, &state);
    if (s == KILN_OK) {
        struct kiln_module_tier **end =
            &((struct tier_list *)state)->head; /* at the end: queued builds start in order */
        while (*end) end = &(*end)->next;
        *end = t;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (s != KILN_OK) { /* not an error: m keeps its first tier */
        kiln_clear_error();
        tier_free(t);
        return;
    }
    atomic_store(&m->tier_armed, 1);
}

static void unlink_locked(kiln_context *ctx, struct kiln_module_tier *t) {
    struct kiln_module_tier **p = &tiers_of(ctx)->head;
    while (*p && *p != t) p = &(*p)->next;
    if (*p) *p = t->next;
}

/* Under ctx->lock: starts queued builds while slots are free. One that
 * gets no thread is dropped (its module keeps its first tier). */
static void start_queued_locked(kiln_context *ctx) {
    struct tier_list *l = tiers_of(ctx);
    if (!l) return;
    int running = 0, most = slots();
    for (struct kiln_module_tier *t = l->head; t; t = t->next) running += t->state == TIER_RUNNING;
    for (struct kiln_module_tier *t = l->head, *next; t && running < most; t = next) {
        next = t->next;
        if (t->state != TIER_QUEUED) continue;
        pthread_attr_t attr;
        pthread_t thread;
        int ok = pthread_attr_init(&attr) == 0;
        if (ok) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            t->state = TIER_RUNNING;
            ok = pthread_create(&thread, &attr, tier_main, t) == 0;
            pthread_attr_destroy(&attr);
        }
        if (ok) {
            running++;
        } else {
            unlink_locked(ctx, t);
            tier_free(t);
        }
    }
}

/* Under ctx->lock: armed build t is wanted now. */
static void queue_locked(kiln_context *ctx, struct kiln_module_tier *t) {
    atomic_store(&t->module->tier_armed, 0);
    t->state = TIER_QUEUED;
    start_queued_locked(ctx);
}

void kiln_module_tier_launched(kiln_module *m) {
    if (!atomic_exchange(&m->tier_armed, 0)) return;
    kiln_context *ctx = m->ctx;
    pthread_mutex_lock(&ctx->lock);
    struct tier_list *l = tiers_of(ctx);
    for (struct kiln_module_tier *t = l ? l->head : NULL; t; t = t->next)
        if (t->module == m && t->state == TIER_ARMED) {
            queue_locked(ctx, t);
            break;
        }
    pthread_mutex_unlock(&ctx->lock);
}

/* Under ctx->lock: 1 while a build of m (or of any module when m is NULL)
 * is queued or runs. stop: running builds are signalled to stop, the
 * others dropped; else armed ones are queued. */
static int running(kiln_context *ctx, const kiln_module *m, int stop) {
    int found = 0;
    struct tier_list *l = tiers_of(ctx);
    if (!l) return 0;
    struct kiln_module_tier **p = &l->head;
    while (*p) {
        struct kiln_module_tier *t = *p;
        if (m && t->module != m) {
            p = &t->next;
            continue;
        }
        if (t->state != TIER_RUNNING && stop) {
            atomic_store(&t->module->tier_armed, 0);
            *p = t->next;
            tier_free(t);
            continue;
        }
        if (t->state == TIER_ARMED) queue_locked(ctx, t); /* may drop it: *p is then the next one */
        if (*p != t) continue;
        found = 1;
        if (stop && !atomic_exchange(&t->cancel.stop, 1)) {
            uint64_t one = 1;
            (void)!write(t->cancel.fd, &one, sizeof one);
        }
        p = &t->next;
    }
    return found;
}

static void wait_for(kiln_context *ctx, const kiln_module *m, int stop) {
    pthread_mutex_lock(&ctx->lock);
    while (running(ctx, m, stop)) pthread_cond_wait(&tiers_of(ctx)->changed, &ctx->lock);
    pthread_mutex_unlock(&ctx->lock);
}

void kiln_module_tier_stop(kiln_module *m) { wait_for(m->ctx, m, 1); }

/* kiln_close: stops every running build of ctx and waits for them. */
static void tiers_on_close(kiln_context *ctx, void *state) {
    (void)state;
    wait_for(ctx, NULL, 1);
}

kiln_status kiln_jit_wait(kiln_context *ctx) {
    if (!ctx) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_jit_wait: ctx is NULL");
    wait_for(ctx, NULL, 0);
    return KILN_OK;
}
