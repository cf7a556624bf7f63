/* tier_up.h: tier-up, kiln's one way of compiling better code in the
 * background while quicker code serves the program.
 *
 * A quick build runs first (cheap to compile, or general enough to serve
 * any call); a tier-up builds the better code on a thread of its own and
 * swaps it in when it is ready. The program never waits for it. It comes in
 * two forms, for two owners:
 *
 * A module's tier-up (a raw module's first call on the CPU). A module the
 * program builds from its own source (kiln_module_from_source,
 * kiln_module_from_file, kiln_kernel_from_source) whose -O3 build is not in
 * the disk cache is compiled at -O1 first (the host compiler's
 * --fast-compile, about half the time), loaded, and returned. From the
 * module's first launch (or kiln_jit_wait) a background thread compiles it
 * at -O3, stores that in the cache, and swaps it in under the module's
 * kernels (the backend's module_tier_up): launches from then on run the -O3
 * code, and later processes load it from the cache directly. A module never
 * launched costs no second compile. The results do not change: the -O1
 * build contracts a*b+c to FMA as -O3 does, and without --use_fast_math
 * neither calls vector math. Not for: modules that keep state between
 * launches (a `__device__` variable, a static local: the new build would
 * start from the initial values; the backend says which), -G,
 * --use_fast_math, --fast-compile, kiln's own modules (module_cache.h), the
 * CUDA backend (NVRTC's fixed cost is most of a small module's compile
 * there), and KILN_CPU_TIERS=0. One build per module, at a lower CPU
 * priority (nice 10) than the program, and per context at most a quarter
 * of the CPUs' worth at once (the rest queue); releasing the module or
 * closing the context stops it (the compiler is killed) and waits for it.
 *
 * A call's tier-up (a ufunc's mixed kernels on CUDA, a gufunc's any-layout
 * kernels). Those quick kernels hand over to kernels made for a call's
 * layout once they have served enough elements. The call that crosses that
 * point starts the compile on a thread and keeps running the quick kernel,
 * as do the calls after it, until the new kernel is recorded. One build at
 * a time per owner; the owner's lock guards the state, and the build
 * records its kernel under that lock itself before it says it is done. A
 * build that fails stops tier-ups for the owner: its calls then compile in
 * the call, where the error surfaces. KILN_TIER_UP=0: every hand-over
 * compiles in the call (read when the owner is made). */
#ifndef KILN_KERNEL_TIER_UP_H
#define KILN_KERNEL_TIER_UP_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/context.h"
#include "kernel/globals.h"
#include "kernel/kernel_scanner.h"
#include "kernel/options.h"

/* ------------------------------------------------------- a module's tier-up */

/* What a module's tier-up needs of the module: pointers into it, valid
 * until kiln_tier_up_module_stop(ctx, owner) has returned (its release
 * calls it first). */
typedef struct kiln_tier_up_module {
    const void *owner; /* the module: the key of its tier-up */
    kiln_backend_module *impl;
    const char *name;
    const kiln_kernel_list *kernels;
    const kiln_global_list *globals;
    atomic_int *armed; /* the module's flag: 1 while its tier-up waits for a launch */
} kiln_tier_up_module;

/* 1 when a module built with opts should get a tier-up (built -O1 first). */
int kiln_tier_up_module_wanted(kiln_context *ctx, const kiln_options *opts);
/* Arms the tier-up of m (its quick build loaded) from copies of what it was
 * built from: it starts at m's first launch or at kiln_jit_wait. A failure
 * to arm or start is not an error: m keeps its quick build. */
void kiln_tier_up_module_arm(kiln_context *ctx, const kiln_tier_up_module *m, const char *source,
                             const char *options, const char *include_dir);
/* kiln_launch, for an armed module's kernels: starts its tier-up. */
void kiln_tier_up_module_launched(kiln_context *ctx, const void *owner, atomic_int *armed);
static inline void kiln_tier_up_module_note_launch(kiln_context *ctx, const void *owner, atomic_int *armed) {
    if (atomic_load_explicit(armed, memory_order_relaxed)) kiln_tier_up_module_launched(ctx, owner, armed);
}
/* In the module's release: stops its running tier-up, if any, and waits. */
void kiln_tier_up_module_stop(kiln_context *ctx, const void *owner);

/* --------------------------------------------------------- a call's tier-up */

typedef kiln_status (*kiln_tier_up_build_fn)(void *job);

/* One owner's (a ufunc's, a gufunc's) tier-up state, under its lock. */
typedef struct kiln_tier_up {
    int enabled;     /* KILN_TIER_UP is not 0 */
    int running;     /* a thread was started and not joined yet */
    int failed;      /* a build failed: no more tier-ups */
    atomic_int done; /* the running thread has finished (safe to join) */
    pthread_t thread;
    kiln_tier_up_build_fn build;
    void *job; /* freed by the thread when it ends */
} kiln_tier_up;

/* Reads KILN_TIER_UP. */
void kiln_tier_up_init(kiln_tier_up *t);
/* Under the owner's lock, for a call past the quick kernel's limit whose own
 * kernel is not built: joins a finished build; 1 when the quick kernel may
 * serve the call because a build runs (*start = 0) or the caller is to
 * start one now (*start = 1); 0 when the call must build its kernel itself
 * (KILN_TIER_UP=0, or an earlier build failed). */
int kiln_tier_up_serve(kiln_tier_up *t, int *start);
/* Under the owner's lock, after kiln_tier_up_serve set *start: runs
 * build(job) on a new thread (job: malloc'd, freed after build returns). 0
 * on success; -1 when no thread could be started (job freed: the caller
 * compiles in the call). */
int kiln_tier_up_start(kiln_tier_up *t, kiln_tier_up_build_fn build, void *job);
/* Without the owner's lock: waits for a running build (the owner is being
 * released). */
void kiln_tier_up_finish(kiln_tier_up *t);

#endif
