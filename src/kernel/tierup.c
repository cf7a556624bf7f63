/* tierup.c: one background build at a time per owner (tierup.h). */
#include "kernel/tierup.h"

#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/settings.h"

void kiln_tierup_init(kiln_tierup *t) {
    memset(t, 0, sizeof *t);
    atomic_init(&t->done, 0);
    t->enabled = kiln_setting_flag("KILN_TIER_UP", 1);
}

static void *tierup_main(void *arg) {
    kiln_tierup *t = arg;
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

int kiln_tierup_serve(kiln_tierup *t, int *start) {
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

int kiln_tierup_start(kiln_tierup *t, kiln_tierup_build_fn build, void *job) {
    t->build = build;
    t->job = job;
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    if (pthread_create(&t->thread, NULL, tierup_main, t) != 0) {
        free(job);
        t->job = NULL;
        return -1;
    }
    t->running = 1;
    return 0;
}

void kiln_tierup_finish(kiln_tierup *t) {
    if (t->running) {
        pthread_join(t->thread, NULL);
        t->running = 0;
    }
}
