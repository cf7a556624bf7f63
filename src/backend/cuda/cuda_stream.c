/* cuda_stream.c: streams and timing events. The handles are the driver's own
 * (see kiln_cuda_stream in cuda_internal.h). */
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_prof.h"
#include "core/error.h"

atomic_uint kiln_cuda_streams_destroyed;

static CUevent event_of(kiln_backend_event *ev) { return (CUevent)(void *)ev; }

kiln_status kiln_cuda_stream_create(kiln_backend_state *st, kiln_backend_stream **out) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUstream stream = NULL;
    /* Non-blocking: never waits on, or for, the legacy NULL stream. */
    CUresult r = st->cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuStreamCreate");
    *out = (kiln_backend_stream *)(void *)stream;
    return KILN_OK;
}

kiln_status kiln_cuda_stream_synchronize(kiln_backend_state *st, kiln_backend_stream *stream) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuStreamSynchronize(kiln_cuda_stream(st, stream));
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuStreamSynchronize");
}

void kiln_cuda_stream_destroy(kiln_backend_state *st, kiln_backend_stream *stream) {
    if (!stream || kiln_cuda_make_current(st) != KILN_OK) return;
    (void)st->cu->cuStreamDestroy(kiln_cuda_stream(st, stream));
    atomic_fetch_add_explicit(&kiln_cuda_streams_destroyed, 1, memory_order_release);
}

/* ---- The profiler's extra (backend.h's kiln_backend_prof). */

static unsigned prof_failed_calls(void) { return kiln_cuda_failed_calls; }

static unsigned prof_streams_destroyed(void) {
    return atomic_load_explicit(&kiln_cuda_streams_destroyed, memory_order_acquire);
}

static void prof_handles(kiln_backend_state *st, kiln_backend_stream *s, void **context, void **stream) {
    *context = (void *)st->context;
    *stream = (void *)kiln_cuda_stream(st, s);
}

static int prof_stream_unique_id(kiln_backend_state *st, kiln_backend_stream *s, unsigned long long *id) {
    if (!st->cu->cuStreamGetId) return -1;
    return st->cu->cuStreamGetId(kiln_cuda_stream(st, s), id) == CUDA_SUCCESS ? 0 : -1;
}

static const kiln_backend_prof cuda_prof = {
    .failed_calls = prof_failed_calls,
    .streams_destroyed = prof_streams_destroyed,
    .handles = prof_handles,
    .stream_unique_id = prof_stream_unique_id,
};

static const kiln_backend_module_text cuda_module_text = {.text = kiln_cuda_module_text};

const void *kiln_cuda_get_proc_address(const char *name) {
    if (name && strcmp(name, KILN_BACKEND_PROC_PROF) == 0) return &cuda_prof;
    if (name && strcmp(name, KILN_BACKEND_PROC_LTO) == 0) return &kiln_cuda_lto;
    if (name && strcmp(name, KILN_BACKEND_PROC_MODULE_TEXT) == 0) return &cuda_module_text;
    return NULL;
}

kiln_status kiln_cuda_synchronize(kiln_backend_state *st) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuCtxSynchronize();
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuCtxSynchronize");
}

kiln_status kiln_cuda_event_create(kiln_backend_state *st, kiln_backend_event **out) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUevent ev = NULL;
    CUresult r = st->cu->cuEventCreate(&ev, CU_EVENT_DEFAULT); /* with timing */
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuEventCreate");
    *out = (kiln_backend_event *)(void *)ev;
    return KILN_OK;
}

kiln_status kiln_cuda_event_record(kiln_backend_state *st, kiln_backend_event *ev,
                                   kiln_backend_stream *stream) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuEventRecord(event_of(ev), kiln_cuda_stream(st, stream));
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuEventRecord");
}

kiln_status kiln_cuda_event_synchronize(kiln_backend_state *st, kiln_backend_event *ev) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuEventSynchronize(event_of(ev));
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuEventSynchronize");
}

kiln_status kiln_cuda_event_elapsed_ms(kiln_backend_state *st, kiln_backend_event *start,
                                       kiln_backend_event *end, float *ms) {
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUresult r = st->cu->cuEventElapsedTime(ms, event_of(start), event_of(end));
    return r == CUDA_SUCCESS ? KILN_OK : kiln_cuda_fail(st->cu, r, "cuEventElapsedTime");
}

void kiln_cuda_event_destroy(kiln_backend_state *st, kiln_backend_event *ev) {
    if (!ev || kiln_cuda_make_current(st) != KILN_OK) return;
    (void)st->cu->cuEventDestroy(event_of(ev));
}
