/* tier_up.c: tier-up (tier_up.h): a module's, from the context's list of
 * tier-ups, and a call's, one at a time per owner.
 *
 * A module's tier-up, armed (waiting for the module's first launch), queued
 * (for a slot) or running, is on its context's list (a context slot, under
 * ctx->lock). A running one takes itself off the list, under the lock, as
 * the last thing it does with the module or the context; whoever must
 * outlive it (the module's release, kiln_close, kiln_jit_wait) signals it
 * to stop if it wants it stopped and waits on the list's `changed` until it
 * is gone. The thread is detached: nothing joins it, so the wait is all the
 * synchronisation there is. An armed or queued one is simply taken off the
 * list and freed. A call's tier-up is a joinable thread of its owner's. */
#include "kernel/tier_up.h"

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
#include "kernel/module_binary.h"
#include "prof/prof.h"

/* A module's tier-up waits for the module's first launch (ARMED), then for
 * one of the context's build slots (QUEUED), then runs on its own thread
 * (RUNNING). */
enum tier_up_state { TIER_UP_ARMED, TIER_UP_QUEUED, TIER_UP_RUNNING };

typedef struct module_tier_up {
    struct module_tier_up *next;
    kiln_context *ctx;
    kiln_tier_up_module module; /* not a reference: the module's release waits for it */
    enum tier_up_state state;
    kiln_cancel cancel;
    char *source, *options, *include_dir;
} module_tier_up;

/* The context's module tier-ups, and the signal that one has ended. */
typedef struct tier_up_list {
    module_tier_up *head;
    pthread_cond_t changed;
} tier_up_list;

static void list_on_close(kiln_context *ctx, void *state);
static void list_destroy(kiln_context *ctx, void *state);

/* Tier-ups stop before kiln_close synchronizes the device: a module still
 * held keeps the build it runs now. */
static const kiln_slot_class tier_up_slot = {
    .name = "tier-ups",
    .close_stage = KILN_SLOT_CLOSE_STOP,
    .on_close = list_on_close,
    .destroy = list_destroy,
};

static kiln_status list_create(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    (void)arg;
    tier_up_list *l = calloc(1, sizeof *l);
    if (!l) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_cond_init(&l->changed, NULL);
    *state = l;
    return KILN_OK;
}

static void list_destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    tier_up_list *l = state;
    pthread_cond_destroy(&l->changed);
    free(l);
}

/* Under ctx->lock: ctx's list, NULL when no tier-up was ever armed. */
static tier_up_list *list_of(kiln_context *ctx) { return kiln_slot_peek(ctx, &tier_up_slot); }

/* The tier-up's niceness: the program's own threads come first. */
#define TIER_UP_NICE 10

/* Tier-ups running at once per context: a quarter of the CPUs, at least one
 * (a program that launches twenty new modules must not start twenty
 * compilers on a 2-core machine). */
static int build_slots(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN) / 4;
    return n < 1 ? 1 : (int)n;
}

static void start_queued_locked(kiln_context *ctx);

int kiln_tier_up_module_wanted(kiln_context *ctx, const kiln_options *opts) {
    if (!ctx->ops->module_tier_up || !ctx->ops->module_can_tier_up) return 0;
    if (opts->debug || opts->fast_math || opts->fast_compile) return 0;
    return kiln_setting_flag("KILN_CPU_TIERS", 1);
}

/* Compiles the module's source at full optimisation (or finds that build in
 * the cache, written meanwhile by another process) and swaps it in. */
static kiln_status build_and_swap(module_tier_up *t, double *compile_ms, double *swap_ms, int *swapped) {
    kiln_context *ctx = t->ctx;
    kiln_options opts;
    kiln_status s = kiln_options_parse(t->options, t->include_dir, &opts);
    if (s != KILN_OK) return s;
    kiln_compile_request req;
    kiln_module_request(ctx, t->module.kernels, t->module.globals, t->source, t->module.name, &opts, &req);
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
        s = ctx->ops->module_tier_up(ctx->state, t->module.impl, &bin);
        *swap_ms = kiln_now_ms() - t0;
        *swapped = s == KILN_OK;
    }
    free(bin.data);
    kiln_options_free(&opts);
    return s;
}

static void tier_up_free(module_tier_up *t) {
    if (t->cancel.fd >= 0) close(t->cancel.fd);
    free(t->source);
    free(t->options);
    free(t->include_dir);
    free(t);
}

static void *module_tier_up_main(void *arg) {
    module_tier_up *t = arg;
    kiln_context *ctx = t->ctx;
    /* Linux keeps a nice value per thread, and the compiler this thread
     * starts inherits it. */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), TIER_UP_NICE);
    double compile_ms = 0, swap_ms = 0;
    int swapped = 0;
    kiln_status s = build_and_swap(t, &compile_ms, &swap_ms, &swapped);
    int cancelled = atomic_load(&t->cancel.stop);
    if (swapped && KILN_PROF_ON(ctx)) {
        /* its own row in the profile: the program did not wait for it */
        char name[512];
        snprintf(name, sizeof name, "%s (-O3, tier-up)", t->module.name);
        kiln_prof_compile(ctx, name, compile_ms == 0, compile_ms, swap_ms);
    }
    if (s != KILN_OK && !cancelled && !kiln_setting_string("KILN_QUIET"))
        fprintf(stderr, "kiln: note: the -O3 tier-up of %s failed (%s: %s); it keeps running its -O1 build\n",
                t->module.name, kiln_status_string(s), kiln_last_error());
    kiln_clear_error();

    pthread_mutex_lock(&ctx->lock);
    ctx->jit.compile_ms += compile_ms;
    if (swapped) ctx->jit.tier_ups++;
    tier_up_list *l = list_of(ctx); /* made before t was armed */
    module_tier_up **p = &l->head;
    while (*p && *p != t) p = &(*p)->next;
    if (*p) *p = t->next;
    start_queued_locked(ctx); /* the slot this one held */
    /* Past this unlock the module and the context may be gone. */
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&ctx->lock);
    tier_up_free(t);
    return NULL;
}

static char *dup_or_null(const char *s, int *failed) {
    char *d = s ? strdup(s) : NULL;
    if (s && !d) *failed = 1;
    return d;
}

void kiln_tier_up_module_arm(kiln_context *ctx, const kiln_tier_up_module *m, const char *source,
                             const char *options, const char *include_dir) {
    if (!ctx->ops->module_can_tier_up(ctx->state, m->impl)) return;
    module_tier_up *t = calloc(1, sizeof *t);
    if (!t) return;
    int failed = 0;
    t->ctx = ctx;
    t->module = *m;
    atomic_init(&t->cancel.stop, 0);
    t->cancel.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    t->source = dup_or_null(source, &failed);
    t->options = dup_or_null(options, &failed);
    t->include_dir = dup_or_null(include_dir, &failed);
    if (failed || t->cancel.fd < 0) {
        tier_up_free(t);
        return;
    }
    pthread_mutex_lock(&ctx->lock);
    void *state = NULL;
    kiln_status s = kiln_slot_get_locked(ctx, &tier_up_slot, list_create, NULL, &state);
    if (s == KILN_OK) {
        module_tier_up **end = &((tier_up_list *)state)->head; /* at the end: queued ones start in order */
        while (*end) end = &(*end)->next;
        *end = t;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (s != KILN_OK) { /* not an error: the module keeps its quick build */
        kiln_clear_error();
        tier_up_free(t);
        return;
    }
    atomic_store(m->armed, 1);
}

static void unlink_locked(kiln_context *ctx, module_tier_up *t) {
    module_tier_up **p = &list_of(ctx)->head;
    while (*p && *p != t) p = &(*p)->next;
    if (*p) *p = t->next;
}

/* Under ctx->lock: starts queued tier-ups while slots are free. One that
 * gets no thread is dropped (its module keeps its quick build). */
static void start_queued_locked(kiln_context *ctx) {
    tier_up_list *l = list_of(ctx);
    if (!l) return;
    int running = 0, most = build_slots();
    for (module_tier_up *t = l->head; t; t = t->next) running += t->state == TIER_UP_RUNNING;
    for (module_tier_up *t = l->head, *next; t && running < most; t = next) {
        next = t->next;
        if (t->state != TIER_UP_QUEUED) continue;
        pthread_attr_t attr;
        pthread_t thread;
        int ok = pthread_attr_init(&attr) == 0;
        if (ok) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            t->state = TIER_UP_RUNNING;
            ok = pthread_create(&thread, &attr, module_tier_up_main, t) == 0;
            pthread_attr_destroy(&attr);
        }
        if (ok) {
            running++;
        } else {
            unlink_locked(ctx, t);
            tier_up_free(t);
        }
    }
}

/* Under ctx->lock: armed tier-up t is wanted now. */
static void queue_locked(kiln_context *ctx, module_tier_up *t) {
    atomic_store(t->module.armed, 0);
    t->state = TIER_UP_QUEUED;
    start_queued_locked(ctx);
}

void kiln_tier_up_module_launched(kiln_context *ctx, const void *owner, atomic_int *armed) {
    if (!atomic_exchange(armed, 0)) return;
    pthread_mutex_lock(&ctx->lock);
    tier_up_list *l = list_of(ctx);
    for (module_tier_up *t = l ? l->head : NULL; t; t = t->next)
        if (t->module.owner == owner && t->state == TIER_UP_ARMED) {
            queue_locked(ctx, t);
            break;
        }
    pthread_mutex_unlock(&ctx->lock);
}

/* Under ctx->lock: 1 while a tier-up of owner (of any module when owner is
 * NULL) is queued or runs. stop: running ones are signalled to stop, the
 * others dropped; else armed ones are queued. */
static int running(kiln_context *ctx, const void *owner, int stop) {
    int found = 0;
    tier_up_list *l = list_of(ctx);
    if (!l) return 0;
    module_tier_up **p = &l->head;
    while (*p) {
        module_tier_up *t = *p;
        if (owner && t->module.owner != owner) {
            p = &t->next;
            continue;
        }
        if (t->state != TIER_UP_RUNNING && stop) {
            atomic_store(t->module.armed, 0);
            *p = t->next;
            tier_up_free(t);
            continue;
        }
        if (t->state == TIER_UP_ARMED) queue_locked(ctx, t); /* may drop it: *p is then the next one */
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

static void wait_for(kiln_context *ctx, const void *owner, int stop) {
    pthread_mutex_lock(&ctx->lock);
    while (running(ctx, owner, stop)) pthread_cond_wait(&list_of(ctx)->changed, &ctx->lock);
    pthread_mutex_unlock(&ctx->lock);
}

void kiln_tier_up_module_stop(kiln_context *ctx, const void *owner) { wait_for(ctx, owner, 1); }

/* kiln_close: stops every running tier-up of ctx and waits for them. */
static void list_on_close(kiln_context *ctx, void *state) {
    (void)state;
    wait_for(ctx, NULL, 1);
}

kiln_status kiln_jit_wait(kiln_context *ctx) {
    if (!ctx) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_jit_wait: ctx is NULL");
    wait_for(ctx, NULL, 0);
    return KILN_OK;
}

/* ------------------------------------------------------------ a call's tier-up */

void kiln_tier_up_init(kiln_tier_up *t) {
    memset(t, 0, sizeof *t);
    atomic_init(&t->done, 0);
    t->enabled = kiln_setting_flag("KILN_TIER_UP", 1);
}

static void *call_tier_up_main(void *arg) {
    kiln_tier_up *t = arg;
    /* A build beside the program is no part of any graph it captures. */
    kiln_capture_exempt_thread();
    kiln_status s = t->build(t->job);
    free(t->job);
    t->job = NULL;
    /* failed is read under the owner's lock only after done, which the
     * joiner sees through the release/acquire pair */
    t->failed = s != KILN_OK;
    atomic_store_explicit(&t->done, 1, memory_order_release);
    return NULL;
}

int kiln_tier_up_serve(kiln_tier_up *t, int *start) {
    if (t->running && atomic_load_explicit(&t->done, memory_order_acquire)) {
        pthread_join(t->thread, NULL);
        t->running = 0;
    }
    *start = 0;
    if (!t->enabled) return 0;
    if (t->running) return 1; /* failed is the running thread's until it is joined */
    if (t->failed) return 0;
    *start = 1;
    return 1;
}

int kiln_tier_up_start(kiln_tier_up *t, kiln_tier_up_build_fn build, void *job) {
    t->build = build;
    t->job = job;
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    if (pthread_create(&t->thread, NULL, call_tier_up_main, t) != 0) {
        free(job);
        t->job = NULL;
        return -1;
    }
    t->running = 1;
    return 0;
}

void kiln_tier_up_finish(kiln_tier_up *t) {
    if (t->running) {
        pthread_join(t->thread, NULL);
        t->running = 0;
    }
}
