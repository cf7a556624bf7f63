/* backends.c: which backend a target names, the "auto" fallback, and the
 * questions asked of a backend before any context exists (device count). */
#include "backend/backends.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/settings.h"

const kiln_backend_ops *kiln_backend_named(const char *name) {
    if (strcmp(name, "cpu") == 0) return kiln_backend_cpu();
    if (strcmp(name, "cuda") == 0) return kiln_backend_cuda();
    return NULL;
}

/* Parses "cpu", "cuda", "cuda:N" into a backend and an ordinal. */
static kiln_status parse_target(const char *target, const kiln_backend_ops **ops, int *ordinal) {
    *ordinal = 0;
    if (strcmp(target, "cpu") == 0) {
        *ops = kiln_backend_cpu();
        return KILN_OK;
    }
    if (strncmp(target, "cuda", 4) == 0) {
        *ops = kiln_backend_cuda();
        if (target[4] == '\0') return KILN_OK;
        if (target[4] == ':') {
            char *end = NULL;
            long n = strtol(target + 5, &end, 10);
            if (end != target + 5 && *end == '\0' && n >= 0 && n < 1024) {
                *ordinal = (int)n;
                return KILN_OK;
            }
        }
    }
    return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                          "unknown target '%s': expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"", target);
}

kiln_status kiln_backend_open_context(kiln_context **out, const char *target) {
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_open: out is NULL");
    const char *env = kiln_setting_string("KILN_TARGET");
    if (!target || strcmp(target, "auto") == 0) target = (env && *env) ? env : "auto";
    /* Every context may need the CPU for host-side work (kiln_context_host). */
    const kiln_backend_ops *host = kiln_backend_cpu();
    if (strcmp(target, "auto") == 0) {
        kiln_status s = kiln_context_open(out, kiln_backend_cuda(), 0, host);
        if (s == KILN_OK) return s;
        /* The one-line notice DESIGN.md promises: say why the GPU was not used. */
        if (!kiln_setting_string("KILN_QUIET"))
            fprintf(stderr, "kiln: no usable GPU (%s); using the CPU backend\n", kiln_last_error());
        return kiln_context_open(out, host, 0, host);
    }
    const kiln_backend_ops *ops = NULL;
    int ordinal = 0;
    kiln_status s = parse_target(target, &ops, &ordinal);
    if (s != KILN_OK) return s;
    return kiln_context_open(out, ops, ordinal, host);
}

kiln_status kiln_cuda_device_count(int *count, const char **why) {
    if (!count) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_cuda_device_count: count is NULL");
    const char *reason = NULL;
    const kiln_backend_ops *cuda = kiln_backend_cuda();
    kiln_status s = cuda->device_count ? cuda->device_count(count, &reason)
                                       : kiln_set_error(KILN_ERR_UNSUPPORTED,
                                                        "kiln_cuda_device_count: %s backend "
                                                        "cannot count its devices",
                                                        cuda->name);
    if (why) *why = reason;
    return s;
}
