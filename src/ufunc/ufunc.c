/* ufunc.c: creating and releasing ufuncs, and their targets. */
#include "ufunc/ufunc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/settings.h"
#include "kernel/module.h"
#include "kernel/options.h"
#include "ufunc/plan.h"
#include "ufunc/signature.h"
#include "ufunc/staging.h"
#include "ufunc/variants.h"

/* The key of the kernel for contiguous arrays of signature sig's own dtypes,
 * as uf_build_plan would make it for fresh, aligned arrays. */
static void contiguous_key(const kiln_ufunc *f, int sig, uf_backend backend, uf_key *key) {
    const uf_signature *g = &f->sigs[sig];
    memset(key, 0, sizeof *key);
    key->backend = (uint8_t)backend;
    key->sig = (uint8_t)sig;
    key->nin = (uint8_t)f->nin;
    key->nout = (uint8_t)f->nout;
    key->layout = UF_CONTIG;
    key->vec = 1;
    size_t maxitem = 0;
    for (int i = 0; i < f->nin; i++) {
        key->in[i] = (uint8_t)g->in[i];
        if (kiln_dtype_size(g->in[i]) > maxitem) maxitem = kiln_dtype_size(g->in[i]);
    }
    for (int j = 0; j < f->nout; j++) {
        key->out[j] = (uint8_t)g->out[j];
        if (kiln_dtype_size(g->out[j]) > maxitem) maxitem = kiln_dtype_size(g->out[j]);
    }
    if (backend == UF_CUDA) {
        key->idx32 = 1;
        if (16 / maxitem >= 2) {
            key->layout = UF_VECTOR;
            key->vec = (uint8_t)(16 / maxitem);
        }
    }
}

/* ---------------------------------------------------------------- public */

/* Below vector_min_elements, CUDA kernels take one element per thread even
 * when 16-byte accesses are possible: small launches are latency bound and
 * gain more from twice the threads than from wider loads (measured on H100:
 * haversine 1e6 f64 1.08x native with 2 per thread, 1.0x with 1; vectorAdd
 * 320M f32 0.91x native with 4 per thread). KILN_UFUNC_VECTOR_MIN overrides.
 * KILN_UFUNC_GRID_WAVES=w caps CUDA grids at w blocks per SM (grid-stride
 * loops); unset or 0: one element (or vector) per thread. For measuring.
 * KILN_UFUNC_MIXED=0: no mixed kernels (uf_key.mixed): kiln_vectorize
 * compiles the all-array kernels and each pattern of scalar arguments
 * compiles its own variant at its first call, as before mixed kernels
 * existed. KILN_UFUNC_MIXED_LIMIT=n: on CUDA the mixed kernel serves n
 * elements of calls before they compile their exact kernels (uf_mixed_take;
 * default UF_MIXED_CUDA_ELEMENTS; 0: exact kernels from the start, and
 * kiln_vectorize compiles the all-array ones). Read once per ufunc, when it
 * is made. */
static void read_tuning(kiln_ufunc *f) {
    const char *e = kiln_setting_string("KILN_UFUNC_VECTOR_MIN");
    long long v = e ? atoll(e) : (1LL << 23);
    f->vector_min_elements = v < 0 ? 0 : (int64_t)v;
    e = kiln_setting_string("KILN_UFUNC_GRID_WAVES");
    int w = e ? atoi(e) : 0;
    f->grid_waves = w < 0 ? 0 : w;
    f->no_mixed = !kiln_setting_flag("KILN_UFUNC_MIXED", 1);
    e = kiln_setting_string("KILN_UFUNC_MIXED_LIMIT");
    long long m = e ? atoll(e) : UF_MIXED_CUDA_ELEMENTS;
    f->mixed_limit = m < 0 ? 0 : (int64_t)m;
}

static kiln_status check_name(const char *name) {
    if (!name || !*name) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_vectorize: name is empty");
    size_t n = strlen(name);
    int ok = n < UF_NAME_MAX - 8 && (isalpha((unsigned char)name[0]) || name[0] == '_');
    for (size_t i = 0; i < n && ok; i++) ok = isalnum((unsigned char)name[i]) || name[i] == '_';
    if (!ok)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_vectorize: name \"%s\" must be a C identifier of at most %d characters",
                              name, UF_NAME_MAX - 9);
    return KILN_OK;
}

kiln_status kiln_vectorize(kiln_context *ctx, const char *name, const char *signatures, const char *params,
                           const char *body, const char *preamble, kiln_ufunc **out) {
    if (!ctx || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_vectorize: ctx or out is NULL");
    if (!body) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_vectorize: body is NULL");
    kiln_status s = kiln_context_check(ctx);
    if (s == KILN_OK) s = check_name(name);
    if (s != KILN_OK) return s;
    kiln_ufunc *f = calloc(1, sizeof *f);
    if (!f) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    f->ctx = kiln_context_retain(ctx); /* released with the ufunc */
    snprintf(f->name, sizeof f->name, "%s", name);
    pthread_mutex_init(&f->lock, NULL);
    pthread_mutex_init(&f->staging_lock, NULL);
    read_tuning(f);
    kiln_tierup_init(&f->tierup);
    f->body = strdup(body);
    f->preamble = preamble ? strdup(preamble) : NULL;
    if (!f->body || (preamble && !f->preamble))
        s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) s = uf_parse_signatures(f, signatures);
    if (s == KILN_OK) s = uf_parse_params(f, params);
    if (s == KILN_OK) {
        /* Compile the first calls' kernels now, in one module, so a body
         * that does not compile is reported here, once, and a first call
         * with contiguous operands of a signature's dtypes, arrays or
         * scalars anywhere, costs no compile: per signature its mixed
         * kernel. It runs all-array calls too: on the CPU always (the same
         * unit-stride loop; GCC's time grows with every inlined copy of the
         * body it vectorises), on CUDA until it has served
         * f->mixed_limit elements, when a call compiles its exact kernel
         * (the 16-byte form for large arrays). Without mixed kernels: the
         * all-array kernels (CUDA: the 16-byte one and the one for small
         * arrays). */
        uf_key keys[2 * UF_MAX_SIGS];
        int nkeys = 0;
        uf_backend be = ctx->ops->kind == KILN_BACKEND_CUDA ? UF_CUDA : UF_CPU;
        for (int k = 0; k < f->nsig; k++) {
            contiguous_key(f, k, be, &keys[nkeys]);
            uf_key mixed;
            if (uf_mixed_key(f, &keys[nkeys], &mixed)) {
                keys[nkeys++] = mixed;
                continue;
            }
            if (keys[nkeys++].layout == UF_VECTOR) { /* and the one for small arrays */
                keys[nkeys] = keys[nkeys - 1];
                keys[nkeys].layout = UF_CONTIG;
                keys[nkeys++].vec = 1;
            }
        }
        for (int k = 0; k < nkeys; k++) keys[k].cover = (uint8_t)UF_ASSUMED_COVER(f, &keys[k]);
        s = uf_build_variants(f, ctx, keys, nkeys);
    }
    if (s != KILN_OK) {
        kiln_ufunc_release(f);
        return s;
    }
    *out = f;
    return KILN_OK;
}

void kiln_ufunc_release(kiln_ufunc *f) {
    if (!f) return;
    kiln_tierup_finish(&f->tierup); /* an exact kernel being built in the background */
    uf_staging_release(f);
    for (int i = 0; i < f->nvariants; i++) kiln_kernel_release(f->variants[i].kernel);
    free(f->variants);
    free(f->body);
    free(f->preamble);
    pthread_mutex_destroy(&f->lock);
    pthread_mutex_destroy(&f->staging_lock);
    kiln_context *ctx = f->ctx;
    free(f);
    kiln_context_release(ctx);
}

kiln_status uf_parse_target(const char *target, uf_target *out) {
    if (!target || !*target || strcmp(target, "context") == 0)
        *out = UF_TARGET_CONTEXT;
    else if (strcmp(target, "cpu") == 0)
        *out = UF_TARGET_CPU;
    else if (strcmp(target, "parallel") == 0)
        *out = UF_TARGET_PARALLEL;
    else if (strcmp(target, "cuda") == 0 || strcmp(target, "gpu") == 0)
        *out = UF_TARGET_CUDA;
    else
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "ufunc target must be \"cuda\", \"cpu\", \"parallel\" or \"context\", got \"%s\"", target);
    return KILN_OK;
}

kiln_status kiln_ufunc_set_target(kiln_ufunc *f, const char *target) {
    if (!f) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_ufunc_set_target: ufunc is NULL");
    uf_target t = UF_TARGET_CONTEXT;
    kiln_status s = uf_parse_target(target, &t);
    if (s != KILN_OK) return s;
    if (t == UF_TARGET_CUDA && f->ctx->ops->kind != KILN_BACKEND_CUDA)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "ufunc %s: target \"cuda\" needs a cuda context; this context is %s", f->name,
                              f->ctx->ops->name);
    f->target = t;
    return KILN_OK;
}

int kiln_ufunc_nin(const kiln_ufunc *f) { return f ? f->nin : -1; }
int kiln_ufunc_nout(const kiln_ufunc *f) { return f ? f->nout : -1; }
