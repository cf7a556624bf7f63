/* backends.h: the backends kiln is built with, and the choice among them
 * by target name. Callers above core reach a backend through this table;
 * core itself only ever holds the kiln_backend_ops it was handed. */
#ifndef KILN_BACKEND_BACKENDS_H
#define KILN_BACKEND_BACKENDS_H

#include "core/backend.h"

/* Each returns a static table. */
const kiln_backend_ops *kiln_backend_cpu(void);
const kiln_backend_ops *kiln_backend_cuda(void);

/* The backend named exactly `name` ("cpu", "cuda"), NULL for any other
 * name: for work that needs no device (kiln_compile_only). */
const kiln_backend_ops *kiln_backend_named(const char *name);

/* Opens a context for `target` ("auto", "cpu", "cuda", "cuda:N"; NULL or
 * "auto" read KILN_TARGET), without a profiler. "auto" tries CUDA, then
 * says why not on stderr (unless KILN_QUIET) and opens the CPU. */
kiln_status kiln_backend_open_context(kiln_context **out, const char *target);

#endif
