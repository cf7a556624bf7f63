/* tierup.h: compiling a call's own kernel in the background while a
 * first-tier kernel serves it (a ufunc's mixed kernels on CUDA, a gufunc's
 * any-layout kernels).
 *
 * Those kernels hand over to kernels made for a call's layout once they
 * have served enough elements. The call that crosses that point used to
 * compile the new kernel itself (50-250 ms); now it starts the compile on
 * a thread and keeps running the first-tier kernel, as do the calls after
 * it, until the new kernel is recorded. One build at a time per owner;
 * the owner's lock guards the state, and the build records its kernel
 * under that lock itself before it says it is done. A build that fails
 * stops background builds for the owner: its calls then compile in the
 * call, where the error surfaces. KILN_TIER_UP=0: every hand-over compiles
 * in the call, as before (read when the owner is made). */
#ifndef KILN_KERNEL_TIERUP_H
#define KILN_KERNEL_TIERUP_H

#include <pthread.h>
#include <stdatomic.h>

#include "kiln.h"

typedef kiln_status (*kiln_tierup_build_fn)(void *job);

typedef struct kiln_tierup {
    int enabled;     /* KILN_TIER_UP is not 0 */
    int running;     /* a thread was started and not joined yet */
    int failed;      /* a build failed: no more background builds */
    atomic_int done; /* the running thread has finished (safe to join) */
    pthread_t thread;
    kiln_tierup_build_fn build;
    void *job; /* freed by the thread when it ends */
} kiln_tierup;

/* Reads KILN_TIER_UP. */
void kiln_tierup_init(kiln_tierup *t);
/* Under the owner's lock, for a call past the first tier's limit whose own
 * kernel is not built: joins a finished build; 1 when the first tier may
 * serve the call because a build runs (*start = 0) or the caller is to
 * start one now (*start = 1); 0 when the call must build its kernel itself
 * (KILN_TIER_UP=0, or an earlier build failed). */
int kiln_tierup_serve(kiln_tierup *t, int *start);
/* Under the owner's lock, after kiln_tierup_serve set *start: runs build(job) on
 * a new thread (job: malloc'd, freed after build returns). 0 on success;
 * -1 when no thread could be started (job freed: the caller compiles in
 * the call). */
int kiln_tierup_start(kiln_tierup *t, kiln_tierup_build_fn build, void *job);
/* Without the owner's lock: waits for a running build (the owner is being
 * released). */
void kiln_tierup_finish(kiln_tierup *t);

#endif
