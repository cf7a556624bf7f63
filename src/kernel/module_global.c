/* module_global.c: kiln_module_global, an array over a module's
 * __constant__ or __device__ variable.
 *
 * The array owns no memory: it holds the module (the variable lives as long
 * as the module is loaded) and releases it with its last reference, so the
 * array may outlive every other handle on the module. Copies into it go
 * through the ordinary array paths, in stream order; on the CPU, where a
 * copy from another thread could land while a kernel of the module reads
 * the variable, the module says it is busy and the write is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/error.h"
#include "kernel/module.h"
#include "kernel/module_tier.h"

/* What an array over a variable holds: the module, and what a write must
 * know about the variable. */
typedef struct global_keeper {
    kiln_module *module;
    int is_const;
    char name[256];
} global_keeper;

static void keeper_release(void *keeper) {
    global_keeper *k = keeper;
    kiln_module_release(k->module);
    free(k);
}

static kiln_status keeper_write_check(void *keeper) {
    global_keeper *k = keeper;
    kiln_module *m = k->module;
    kiln_context *ctx = m->ctx;
    /* On the CPU a const variable lives in read-only pages: a write would
     * kill the process. Refused on both backends alike. */
    if (k->is_const)
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "variable %s of module %s is declared const; kiln reads it but does not write it", k->name,
            m->name);
    if (ctx->ops->module_busy && ctx->ops->module_busy(ctx->state, m->impl))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "cannot write a variable of module %s while one of its kernels is running on "
                              "the %s backend (another thread launched it); write it before the launch or "
                              "after it returns",
                              m->name, ctx->ops->name);
    return KILN_OK;
}

/* The shape the declaration gives when it agrees with the compiled size;
 * else the variable's bytes, or its elements when the type is known and
 * the extents are not (float c[KERNEL_LENGTH]). */
static void global_layout(const kiln_global_decl *g, size_t bytes, kiln_dtype *dtype, int *ndim,
                          int64_t *shape) {
    size_t item = g->dtype < KILN_DTYPE_COUNT ? kiln_dtype_size(g->dtype) : 0;
    if (item && g->dims_known) {
        int64_t n = kiln_shape_size(g->ndim, g->shape);
        if (n >= 0 && (size_t)n * item == bytes) {
            *dtype = g->dtype;
            *ndim = g->ndim;
            memcpy(shape, g->shape, sizeof(int64_t) * (size_t)g->ndim);
            return;
        }
    }
    if (item && bytes % item == 0 && (!g->dims_known || g->ndim > 0)) {
        *dtype = g->dtype;
        *ndim = 1;
        shape[0] = (int64_t)(bytes / item);
        return;
    }
    *dtype = KILN_UINT8;
    *ndim = 1;
    shape[0] = (int64_t)bytes;
}

kiln_status kiln_module_global(kiln_module *m, const char *name, kiln_array **out) {
    if (!m || !name || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_module_global: NULL argument");
    kiln_context *ctx = m->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    int index = kiln_global_list_find(&m->globals, name);
    if (index < 0) {
        kiln_set_error(KILN_ERR_NOT_FOUND, "no __constant__ or __device__ variable '%s' in %s", name,
                       m->name);
        if (m->globals.count == 0)
            kiln_append_error(" (it defines none at namespace scope)");
        else {
            kiln_append_error("; its variables are:");
            for (int i = 0; i < m->globals.count; i++) kiln_append_error(" %s", m->globals.names[i]);
        }
        return KILN_ERR_NOT_FOUND;
    }
    if (!ctx->ops->module_global)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the %s backend cannot reach a module's variables",
                              ctx->ops->name);
    const kiln_global_decl *g = &m->globals.items[index];
    /* The module keeps the build it has now: a tier-up (module_tier.h)
     * would load another copy of the variable under the array. */
    kiln_module_tier_stop(m);
    void *ptr = NULL;
    size_t bytes = 0;
    s = ctx->ops->module_global(ctx->state, m->impl, g->name, &ptr, &bytes);
    if (s != KILN_OK) return kiln_prefix_error(s, "variable %s of %s: ", g->name, m->name);
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    global_layout(g, bytes, &dtype, &ndim, shape);
    global_keeper *keeper = calloc(1, sizeof *keeper);
    if (!keeper) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_array *a = NULL;
    s = kiln_array_alloc_header(ctx, dtype, ndim, shape, &a);
    if (s != KILN_OK) {
        free(keeper);
        return s;
    }
    keeper->module = kiln_module_retain(m);
    keeper->is_const = g->is_const;
    snprintf(keeper->name, sizeof keeper->name, "%s", g->name);
    a->data = ptr;
    a->memory = KILN_MEMORY_DEVICE;
    a->keeper = keeper;
    a->keeper_release = keeper_release;
    a->keeper_write_check = keeper_write_check;
    *out = a;
    return KILN_OK;
}
