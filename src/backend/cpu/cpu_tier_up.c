/* cpu_tier_up.c: replacing a loaded module's code by another build of the
 * same source (src/kernel/tier_up.c: a quick build compiled at -O1 serves
 * until its -O3 tier-up is ready).
 *
 * The module object and its function handles stay; what changes is the
 * shared object behind them. The swap happens under the module's lock
 * (function lookups read the handle) and the launch lock (a launch calls
 * the module's begin and then the function's entries, which must come from
 * one build: each build has its own gridDim and blockDim), so a launch runs
 * wholly on the old build or wholly on the new one. The old build is
 * closed after the swap: no launch can be running it then. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

int kiln_cpu_module_can_tier_up(kiln_backend_state *st, kiln_backend_module *mod) {
    (void)st;
    return mod && mod->stateless;
}

kiln_status kiln_cpu_module_tier_up(kiln_backend_state *st, kiln_backend_module *mod,
                                    const kiln_blob *better) {
    if (!mod->stateless)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the CPU module keeps state between launches; it is "
                                                    "not replaced");
    kiln_backend_module *next = NULL;
    kiln_status s = kiln_cpu_module_load(st, better, &next);
    if (s != KILN_OK) return s;

    pthread_mutex_lock(&mod->lock);
    /* Every kernel handed out so far must be in the new build, on a path
     * of the same kind (a fiber kernel's workers are prepared for fibers). */
    int count = 0;
    for (kiln_backend_function *f = mod->functions; f; f = f->next) count++;
    kiln_backend_function *found = calloc((size_t)count + 1, sizeof *found);
    int i = 0;
    for (kiln_backend_function *f = mod->functions; found && f && s == KILN_OK; f = f->next, i++)
        if (!kiln_cpu_entries_find(next->handle, f->name, &found[i]) ||
            (found[i].thread != NULL) != (f->thread != NULL))
            s = kiln_set_error(KILN_ERR_INTERNAL,
                               "the new build of the CPU module has no %s entry for kernel %s",
                               f->thread ? "fiber" : "loop", f->name);
    if (!found) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) {
        pthread_mutex_lock(&st->launch_lock);
        i = 0;
        for (kiln_backend_function *f = mod->functions; f; f = f->next, i++) {
            f->fast = found[i].fast;
            f->probe = found[i].probe;
            f->one = found[i].one;
            f->thread = found[i].thread;
        }
        /* next takes the old build, to be closed below */
        void *handle = mod->handle;
        int fd = mod->fd;
        size_t frame_bytes = mod->frame_bytes;
        kiln_cpu_begin_fn begin = mod->begin;
        void (*where)(unsigned *) = mod->where;
        mod->handle = next->handle;
        mod->fd = next->fd;
        mod->frame_bytes = next->frame_bytes;
        mod->begin = next->begin;
        mod->where = next->where;
        next->handle = handle;
        next->fd = fd;
        next->frame_bytes = frame_bytes;
        next->begin = begin;
        next->where = where;
        pthread_mutex_unlock(&st->launch_lock);
    }
    pthread_mutex_unlock(&mod->lock);
    free(found);
    kiln_cpu_module_unload(st, next);
    return s;
}
