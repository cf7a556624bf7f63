/* cuda_module.c: loading a blob's cubin, finding kernels by their source
 * name, and describing their parameters from the signature records that
 * kiln_signature.cuh compiled into the module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_blob.h"
#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

#define SIG_RECORD_BYTES 6
#define SIG_MAX_PARAMS 255 /* a record counts them in a byte */

kiln_status kiln_cuda_module_load(kiln_backend_state *st, const kiln_blob *binary,
                                  kiln_backend_module **out) {
    kiln_cuda_blob_view view;
    kiln_status s = kiln_cuda_blob_read(binary, &view);
    if (s != KILN_OK) return s;
    kiln_backend_module *m = calloc(1, sizeof *m);
    if (!m) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory loading a CUDA module");
    if (s == KILN_OK) s = kiln_cuda_make_current(st);
    if (s == KILN_OK) {
        CUresult r = st->cu->cuModuleLoadData(&m->module, view.cubin);
        if (r != CUDA_SUCCESS) {
            s = kiln_cuda_fail(st->cu, r, "cuModuleLoadData");
            kiln_prefix_error(s, "loading a module built for %s on CUDA device %d (%s): ", view.arch,
                              st->ordinal, st->arch);
        }
    }
    if (s != KILN_OK) {
        kiln_cuda_blob_view_free(&view);
        free(m);
        return s;
    }
    m->kernel_count = view.kernel_count;
    m->kernels = view.kernels; /* ownership moves to the module */
    /* Signature records from the image, while we have it (read_signature) */
    for (int i = 0; i < m->kernel_count; i++) {
        char symbol[512];
        const unsigned char *rec = NULL;
        size_t bytes = 0;
        if ((size_t)snprintf(symbol, sizeof symbol, "kiln_sig_%s", m->kernels[i].source_name) <
                sizeof symbol &&
            kiln_cuda_elf_global(view.cubin, view.cubin_size, symbol, &rec, &bytes) && bytes > 0 &&
            (m->kernels[i].signature = malloc(bytes)) != NULL) {
            memcpy(m->kernels[i].signature, rec, bytes);
            m->kernels[i].signature_bytes = bytes;
        }
    }
    pthread_mutex_init(&m->lock, NULL);
    *out = m;
    return KILN_OK;
}

void kiln_cuda_module_unload(kiln_backend_state *st, kiln_backend_module *mod) {
    if (!mod) return;
    if (kiln_cuda_make_current(st) == KILN_OK) (void)st->cu->cuModuleUnload(mod->module);
    kiln_cuda_kernel_entries_free(mod->kernels, mod->kernel_count);
    for (kiln_backend_function *fn = mod->functions, *next; fn; fn = next) {
        next = fn->next;
        free(fn->params);
        free(fn);
    }
    pthread_mutex_destroy(&mod->lock);
    free(mod);
}

static kiln_status not_found(const kiln_backend_module *mod, const char *name) {
    kiln_set_error(KILN_ERR_NOT_FOUND, "no kernel named \"%s\" in the module; it has ", name);
    int listed = 0;
    for (int i = 0; i < mod->kernel_count; i++)
        if (mod->kernels[i].source_name[0] != '&') /* module globals (cuda_compile.c) */
            kiln_append_error("%s\"%s\"", listed++ ? ", " : "", mod->kernels[i].source_name);
    if (!listed) kiln_append_error("none");
    return KILN_ERR_NOT_FOUND;
}

static size_t record_size(const unsigned char *r, int at) { return (size_t)r[at] | (size_t)r[at + 1] << 8; }

/* Decodes the records of kiln_signature.cuh: {count, ...} then one per parameter. */
static kiln_status decode_signature(const char *name, const unsigned char *rec, size_t bytes,
                                    kiln_param_info *params, int max_params, int *param_count) {
    if (bytes < SIG_RECORD_BYTES || bytes % SIG_RECORD_BYTES != 0 ||
        (size_t)rec[0] + 1 != bytes / SIG_RECORD_BYTES)
        return kiln_set_error(KILN_ERR_INTERNAL, "signature record of %s is malformed (%zu bytes, count %d)",
                              name, bytes, rec[0]);
    int count = rec[0];
    if (count > max_params)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s has %d parameters; kiln supports at most %d", name,
                              count, max_params);
    for (int i = 0; i < count; i++) {
        const unsigned char *r = rec + SIG_RECORD_BYTES * (i + 1);
        params[i].cls = (kiln_param_class)r[0];
        params[i].size = record_size(r, 1);
        params[i].pointee_cls = (kiln_param_class)(r[0] == KILN_PARAM_POINTER ? r[3] : 0);
        params[i].pointee_size = record_size(r, 4);
    }
    *param_count = count;
    return KILN_OK;
}

/* Where the driver can say (12.4+), check that the records describe the
 * parameters it sees: a disagreement would make launches pass garbage. */
static kiln_status cross_check(kiln_backend_state *st, CUfunction f, const char *name,
                               const kiln_param_info *params, int count) {
    if (!st->cu->cuFuncGetParamInfo) return KILN_OK;
    int seen = 0;
    size_t offset = 0, size = 0;
    while (seen <= count && st->cu->cuFuncGetParamInfo(f, (size_t)seen, &offset, &size) == CUDA_SUCCESS) {
        if (seen < count && size != params[seen].size)
            return kiln_set_error(KILN_ERR_INTERNAL,
                                  "%s parameter %d: signature says %zu bytes, the driver %zu", name, seen,
                                  params[seen].size, size);
        seen++;
    }
    if (seen != count)
        return kiln_set_error(KILN_ERR_INTERNAL, "%s: signature lists %d parameters, the driver %s%d", name,
                              count, seen > count ? "more than " : "", seen > count ? count : seen);
    return KILN_OK;
}

/* From the record copied out of the cubin at load, else with one small
 * synchronous device read; once per kernel of a module, never per launch. */
static kiln_status read_signature(kiln_backend_state *st, kiln_backend_module *mod,
                                  const kiln_cuda_kernel_entry *entry, kiln_param_info *params,
                                  int max_params, int *param_count) {
    const char *name = entry->source_name;
    if (entry->signature)
        return decode_signature(name, entry->signature, entry->signature_bytes, params, max_params,
                                param_count);
    char symbol[512];
    if ((size_t)snprintf(symbol, sizeof symbol, "kiln_sig_%s", name) >= sizeof symbol)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kernel name too long: %s", name);
    CUdeviceptr at = 0;
    size_t bytes = 0;
    CUresult r = st->cu->cuModuleGetGlobal(&at, &bytes, mod->module, symbol);
    if (r != CUDA_SUCCESS)
        return kiln_prefix_error(kiln_cuda_fail(st->cu, r, "cuModuleGetGlobal"),
                                 "reading the signature of %s: ", name);
    unsigned char rec[SIG_RECORD_BYTES * 256];
    if (bytes > sizeof rec)
        return kiln_set_error(KILN_ERR_INTERNAL, "signature record of %s is %zu bytes", name, bytes);
    r = st->cu->cuMemcpyDtoH(rec, at, bytes);
    if (r != CUDA_SUCCESS)
        return kiln_prefix_error(kiln_cuda_fail(st->cu, r, "cuMemcpyDtoH"),
                                 "reading the signature of %s: ", name);
    return decode_signature(name, rec, bytes, params, max_params, param_count);
}

static kiln_status function_limits(kiln_backend_state *st, kiln_backend_function *fn) {
    int static_shared = 0;
    CUresult r =
        st->cu->cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn->function);
    if (r != CUDA_SUCCESS) return kiln_cuda_fail(st->cu, r, "cuFuncGetAttribute");
    size_t s = (size_t)static_shared;
    fn->dynamic_default_bytes = s < KILN_CUDA_SHARED_DEFAULT_BYTES ? KILN_CUDA_SHARED_DEFAULT_BYTES - s : 0;
    fn->dynamic_limit_bytes = s < st->shared_optin_bytes ? st->shared_optin_bytes - s : 0;
    atomic_init(&fn->opted_in, 0);
    return KILN_OK;
}

kiln_status kiln_cuda_function_get(kiln_backend_state *st, kiln_backend_module *mod, const char *name,
                                   kiln_backend_function **out, kiln_param_info *params, int max_params,
                                   int *param_count) {
    const kiln_cuda_kernel_entry *entry = NULL;
    for (int i = 0; i < mod->kernel_count && !entry; i++)
        if (strcmp(mod->kernels[i].source_name, name) == 0) entry = &mod->kernels[i];
    if (!entry) return not_found(mod, name);
    kiln_status s = KILN_OK;
    pthread_mutex_lock(&mod->lock);
    kiln_backend_function *fn = mod->functions;
    while (fn && fn->entry != entry) fn = fn->next;
    if (!fn) {
        /* First lookup: the signature record (a device read), the function
         * and its limits; kept for the next lookups. */
        kiln_param_info read[SIG_MAX_PARAMS];
        int count = 0;
        s = kiln_cuda_make_current(st);
        if (s == KILN_OK) s = read_signature(st, mod, entry, read, SIG_MAX_PARAMS, &count);
        fn = s == KILN_OK ? calloc(1, sizeof *fn) : NULL;
        if (s == KILN_OK && fn) fn->params = malloc(sizeof *fn->params * (size_t)(count > 0 ? count : 1));
        if (s == KILN_OK && (!fn || !fn->params))
            s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory looking up %s", name);
        CUresult r = s == KILN_OK
                         ? st->cu->cuModuleGetFunction(&fn->function, mod->module, entry->lowered_name)
                         : CUDA_SUCCESS;
        if (r != CUDA_SUCCESS)
            s = kiln_prefix_error(kiln_cuda_fail(st->cu, r, "cuModuleGetFunction"),
                                  "kernel %s (symbol %s): ", name, entry->lowered_name);
        if (s == KILN_OK) s = cross_check(st, fn->function, name, read, count);
        if (s == KILN_OK) s = function_limits(st, fn);
        if (s == KILN_OK) {
            memcpy(fn->params, read, sizeof *read * (size_t)count);
            fn->param_count = count;
            fn->entry = entry;
            fn->next = mod->functions;
            mod->functions = fn;
        } else {
            if (fn) free(fn->params);
            free(fn);
            fn = NULL;
        }
    }
    if (s == KILN_OK && fn->param_count > max_params)
        s = kiln_set_error(KILN_ERR_UNSUPPORTED, "%s has %d parameters; kiln supports at most %d", name,
                           fn->param_count, max_params);
    if (s == KILN_OK) {
        memcpy(params, fn->params, sizeof *params * (size_t)fn->param_count);
        *param_count = fn->param_count;
        *out = fn;
    }
    pthread_mutex_unlock(&mod->lock);
    return s;
}

/* Module globals: the blob's table lists each under "&name" with the
 * symbol NVRTC gave it (cuda_compile.c). */
kiln_status kiln_cuda_module_global(kiln_backend_state *st, kiln_backend_module *mod, const char *name,
                                    void **ptr, size_t *bytes) {
    const kiln_cuda_kernel_entry *entry = NULL;
    for (int i = 0; i < mod->kernel_count && !entry; i++)
        if (mod->kernels[i].source_name[0] == '&' && strcmp(mod->kernels[i].source_name + 1, name) == 0)
            entry = &mod->kernels[i];
    if (!entry) return kiln_set_error(KILN_ERR_NOT_FOUND, "the CUDA module has no variable %s", name);
    kiln_status s = kiln_cuda_make_current(st);
    if (s != KILN_OK) return s;
    CUdeviceptr dptr = 0;
    size_t size = 0;
    CUresult r = st->cu->cuModuleGetGlobal(&dptr, &size, mod->module, entry->lowered_name);
    if (r != CUDA_SUCCESS)
        return kiln_prefix_error(kiln_cuda_fail(st->cu, r, "cuModuleGetGlobal"),
                                 "variable %s (symbol %s): ", name, entry->lowered_name);
    *ptr = (void *)(uintptr_t)dptr;
    *bytes = size;
    return KILN_OK;
}
