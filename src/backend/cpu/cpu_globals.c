/* cpu_globals.c: a CPU module's __constant__ and __device__ variables.
 *
 * They are ordinary variables of the shared object; each has an accessor
 * (cpu_compile.c writes one per variable the source defines) that gives
 * its address and size. "Device" memory is host memory here, so the
 * address is what kernels of the module read. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

int kiln_cpu_global_symbol(const char *name, char *out, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    size_t n = (size_t)snprintf(out, cap, "kiln_cpu_global_");
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        if (n + 4 >= cap) return 0;
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')) {
            out[n++] = (char)*c;
        } else {
            out[n++] = '_';
            out[n++] = hex[*c >> 4];
            out[n++] = hex[*c & 15];
        }
    }
    out[n] = '\0';
    return 1;
}

typedef void *(*accessor_fn)(unsigned long long *bytes);

kiln_status kiln_cpu_module_global(kiln_backend_state *st, kiln_backend_module *mod, const char *name,
                                   void **ptr, size_t *bytes) {
    (void)st;
    char sym[KILN_CPU_GLOBAL_SYMBOL_BYTES];
    if (!kiln_cpu_global_symbol(name, sym, sizeof sym))
        return kiln_set_error(KILN_ERR_NOT_FOUND, "the name %s is too long", name);
    pthread_mutex_lock(&mod->lock); /* mod->handle changes under it (module_tier_up) */
    void *found = dlsym(mod->handle, sym);
    pthread_mutex_unlock(&mod->lock);
    if (!found)
        return kiln_set_error(KILN_ERR_NOT_FOUND, "the CPU module has no variable %s (expected symbol %s)",
                              name, sym);
    accessor_fn accessor;
    memcpy(&accessor, &found, sizeof accessor); /* object to function pointer, as POSIX allows */
    unsigned long long size = 0;
    *ptr = accessor(&size);
    *bytes = (size_t)size;
    return KILN_OK;
}

int kiln_cpu_module_busy(kiln_backend_state *st, kiln_backend_module *mod) {
    (void)st;
    return atomic_load(&mod->running) > 0;
}
