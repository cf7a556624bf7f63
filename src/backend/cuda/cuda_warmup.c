/* cuda_warmup.c: NVRTC's one-time start-up, overlapped with opening the
 * device.
 *
 * The first compile in a process costs about 10 ms more than the next
 * (NVRTC loads libnvrtc-builtins and sets up its front end, optimiser and
 * ptxas on first use); opening a CUDA context costs 100+ ms of driver work
 * that needs no CPU of ours. So the first cuda_open of a process starts one
 * thread that compiles a tiny kernel with kiln's prelude and options while
 * the driver creates the context. A real compile does not wait for that
 * thread: NVRTC is thread-safe and its start-up is shared, so a compile that
 * comes while the warm-up still runs (the first process after a machine
 * starts, whose NVRTC pages come from disk: warm-ups of 100-210 ms on the
 * H100 host) pays only what start-up has left, not the warm-up's own
 * compile too (waiting made first compiles of 105-204 ms there, running
 * beside it 67-151 ms; PERF_NOTES, "Eighth pass"). The thread only runs
 * once per process; closing a context and the process's exit wait for it,
 * so it never runs while NVRTC is unloaded. KILN_NVRTC_WARMUP=0 turns it off (a
 * program that opens a context and never compiles then spends no CPU on
 * NVRTC). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "core/settings.h"

static pthread_once_t warm_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t warm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t warm_done = PTHREAD_COND_INITIALIZER;
static int warm_running; /* guarded by warm_lock */
static char warm_arch[16];

static void *warm_main(void *arg) {
    (void)arg;
    static const char source[] = "extern \"C\" __global__ void kiln_warmup(int *p) { if (p) *p = 1; }\n";
    const char *const names[] = {"kiln_warmup"};
    kiln_compile_request req;
    memset(&req, 0, sizeof req);
    req.source = source;
    req.name = "kiln-warmup.cu";
    req.kernel_names = names;
    req.kernel_count = 1;
    req.arch = warm_arch;
    kiln_blob blob = {0};
    char *log = NULL;
    /* Any failure here (no NVRTC, ...) is the real compile's to report. */
    (void)kiln_cuda_compile_plain(&req, &blob, &log);
    free(blob.data);
    free(log);
    pthread_mutex_lock(&warm_lock);
    warm_running = 0;
    pthread_cond_broadcast(&warm_done);
    pthread_mutex_unlock(&warm_lock);
    return NULL;
}

static void wait_at_exit(void) { kiln_cuda_warmup_wait(); }

static void warm_start(void) {
    if (!kiln_setting_flag("KILN_NVRTC_WARMUP", 1)) return;
    if (atexit(wait_at_exit) != 0) return;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    pthread_mutex_lock(&warm_lock);
    warm_running = pthread_create(&thread, &attr, warm_main, NULL) == 0;
    pthread_mutex_unlock(&warm_lock);
    pthread_attr_destroy(&attr);
}

void kiln_cuda_warmup_start(const char *arch) {
    /* Only the first caller's arch is used (any arch warms NVRTC up); the
     * thread reads it after pthread_create, and it never changes again. */
    pthread_mutex_lock(&warm_lock);
    if (!warm_arch[0]) snprintf(warm_arch, sizeof warm_arch, "%s", arch && *arch ? arch : "sm_90");
    pthread_mutex_unlock(&warm_lock);
    (void)pthread_once(&warm_once, warm_start);
}

void kiln_cuda_warmup_wait(void) {
    pthread_mutex_lock(&warm_lock);
    while (warm_running) pthread_cond_wait(&warm_done, &warm_lock);
    pthread_mutex_unlock(&warm_lock);
}
