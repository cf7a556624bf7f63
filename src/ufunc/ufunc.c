/* ufunc.c: creating and releasing ufuncs, targets, and the table of
 * compiled kernel variants. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/settings.h"
#include "kernel/module.h"
#include "kernel/module_cache.h"
#include "kernel/options.h"
#include "ufunc/call.h"

/* ---------------------------------------------------------------- variants */

static uf_variant *find_variant(kiln_ufunc *f, kiln_context *ctx, const uf_key *key) {
    for (int i = f->nvariants - 1; i >= 0; i--)
        if (f->variants[i].ctx == ctx && memcmp(&f->variants[i].key, key, sizeof *key) == 0)
            return &f->variants[i];
    return NULL;
}

/* Compiles one module holding a kernel per key, on ctx, and records them.
 * The module and its kernels are the context's (its module cache: a body
 * vectorised again finds them there). CUDA mixed kernels only (what
 * kiln_vectorize builds): --fast-compile, as calls leave them for their
 * exact kernels after f->mixed_limit elements; the CPU's mixed kernels
 * serve every call and are compiled fully. */
static kiln_status build_variants(kiln_ufunc *f, kiln_context *ctx, const uf_key *keys, int nkeys) {
    if (nkeys < 1) return kiln_set_error(KILN_ERR_INTERNAL, "ufunc %s: no kernel to build", f->name);
    char *source = NULL;
    char(*names)[UF_KERNEL_NAME_MAX] = calloc((size_t)nkeys, sizeof *names);
    kiln_kernel **kernels = calloc((size_t)nkeys, sizeof *kernels);
    if (!names || !kernels) {
        free(names);
        free(kernels);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    int quick = 1;
    for (int i = 0; i < nkeys; i++) quick &= keys[i].backend == UF_CUDA && keys[i].mixed;
    kiln_status s = uf_generate(f, keys, nkeys, &source, names);
    kiln_cached_module *m = NULL;
    if (s == KILN_OK) {
        kiln_module_spec spec = {
            .source = source, .name = f->name, .options = quick ? kiln_quick_build_options() : NULL};
        s = kiln_module_cache_get(ctx, &spec, &m);
    }
    free(source);
    if (s == KILN_ERR_COMPILE)
        kiln_prefix_error(
            s, "ufunc %s: the body did not compile (lines below count from the body's first line):\n",
            f->name);
    for (int i = 0; i < nkeys && s == KILN_OK; i++)
        s = kiln_module_cache_kernel(ctx, m, names[i], &kernels[i]);
    pthread_mutex_lock(&f->lock);
    for (int i = 0; i < nkeys && s == KILN_OK; i++) {
        if (find_variant(f, ctx, &keys[i])) continue;
        if (f->nvariants == f->cap_variants) {
            int cap = f->cap_variants ? f->cap_variants * 2 : 8;
            uf_variant *v = realloc(f->variants, sizeof *v * (size_t)cap);
            if (!v) {
                s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
                break;
            }
            f->variants = v;
            f->cap_variants = cap;
        }
        f->variants[f->nvariants].key = keys[i];
        f->variants[f->nvariants].ctx = ctx;
        f->variants[f->nvariants].kernel = kernels[i];
        f->variants[f->nvariants].served = 0;
        f->nvariants++;
    }
    pthread_mutex_unlock(&f->lock);
    free(kernels);
    free(names);
    return s;
}

kiln_kernel *uf_find_kernel(kiln_ufunc *f, kiln_context *ctx, const uf_key *key) {
    pthread_mutex_lock(&f->lock);
    uf_variant *v = find_variant(f, ctx, key);
    kiln_kernel *k = v ? v->kernel : NULL;
    pthread_mutex_unlock(&f->lock);
    return k;
}

int uf_mixed_take(kiln_ufunc *f, kiln_context *ctx, const uf_key *mixed_key, int64_t n,
                  kiln_kernel **kernel) {
    pthread_mutex_lock(&f->lock);
    uf_variant *v = find_variant(f, ctx, mixed_key);
    int take = !v || v->served < f->mixed_limit;
    if (v && take) {
        v->served += n;
        *kernel = v->kernel;
    }
    pthread_mutex_unlock(&f->lock);
    return take;
}

/* An exact kernel built on the tier-up thread: the context is held until
 * the build is done. */
typedef struct uf_tier_up_job {
    kiln_ufunc *f;
    kiln_context *ctx;
    uf_key key;
} uf_tier_up_job;

static kiln_status tier_up_build(void *arg) {
    uf_tier_up_job *job = arg;
    kiln_kernel *k = NULL;
    kiln_status s = uf_get_kernel(job->f, job->ctx, &job->key, &k);
    kiln_context_release(job->ctx);
    return s;
}

int uf_tier_up(kiln_ufunc *f, kiln_context *ctx, const uf_key *key) {
    pthread_mutex_lock(&f->lock);
    int start = 0, serve = kiln_tier_up_serve(&f->tier_up, &start);
    if (start) {
        uf_tier_up_job *job = malloc(sizeof *job);
        if (job) {
            job->f = f;
            job->ctx = kiln_context_retain(ctx);
            job->key = *key;
        }
        serve = job && kiln_tier_up_start(&f->tier_up, tier_up_build, job) == 0;
        if (job && !serve) kiln_context_release(ctx); /* the job was freed */
    }
    pthread_mutex_unlock(&f->lock);
    return serve;
}

/* Whether f's calls on backend be may run mixed kernels at all: not with
 * KILN_UFUNC_MIXED=0, and on CUDA not with KILN_UFUNC_MIXED_LIMIT=0 (the
 * exact kernels from the first call on). */
static int mixed_serves(const kiln_ufunc *f, uf_backend be) {
    return !f->no_mixed && (be != UF_CUDA || f->mixed_limit > 0);
}

int uf_mixed_key(const kiln_ufunc *f, const uf_key *key, uf_key *out) {
    if (!mixed_serves(f, (uf_backend)key->backend) || key->mixed || f->nin == 0) return 0;
    if (key->layout != UF_CONTIG && !(key->layout == UF_VECTOR && key->backend == UF_CUDA)) return 0;
    if (key->backend == UF_CUDA && !key->idx32) return 0;
    const uf_signature *g = &f->sigs[key->sig];
    for (int i = 0; i < f->nin; i++) {
        if ((key->in[i] & ~UF_SCALAR_BIT) != (uint8_t)g->in[i]) return 0;
        /* CPU: a scalar's copies are stored in the input's storage type,
         * which for the 16-bit floats would round a scalar the all-array
         * path passes at float precision. */
        if (key->backend == UF_CPU && kiln_dtype_is_half(g->in[i])) return 0;
    }
    for (int j = 0; j < f->nout; j++)
        if (key->out[j] != (uint8_t)g->out[j]) return 0;
    memset(out, 0, sizeof *out);
    out->backend = key->backend;
    out->sig = key->sig;
    out->nin = key->nin;
    out->nout = key->nout;
    out->layout = UF_CONTIG;
    out->idx32 = key->idx32;
    out->vec = 1;
    out->cover = key->cover;
    out->mixed = 1;
    for (int i = 0; i < f->nin && i < UF_MAX_IN; i++) out->in[i] = (uint8_t)g->in[i];
    for (int j = 0; j < f->nout && j < UF_MAX_OUT; j++) out->out[j] = (uint8_t)g->out[j];
    return 1;
}

kiln_status uf_get_kernel(kiln_ufunc *f, kiln_context *ctx, const uf_key *key, kiln_kernel **out) {
    pthread_mutex_lock(&f->lock);
    uf_variant *v = find_variant(f, ctx, key);
    kiln_kernel *k = v ? v->kernel : NULL;
    pthread_mutex_unlock(&f->lock);
    if (!k) {
        kiln_status s = build_variants(f, ctx, key, 1);
        if (s != KILN_OK) return s;
        pthread_mutex_lock(&f->lock);
        v = find_variant(f, ctx, key);
        k = v ? v->kernel : NULL;
        pthread_mutex_unlock(&f->lock);
        if (!k) return kiln_set_error(KILN_ERR_INTERNAL, "ufunc %s: compiled variant not recorded", f->name);
    }
    *out = k;
    return KILN_OK;
}

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
    kiln_tier_up_init(&f->tier_up);
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
        s = build_variants(f, ctx, keys, nkeys);
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
    kiln_tier_up_finish(&f->tier_up); /* an exact kernel being built in the background */
    uf_staging_release(f);
    free(f->variants); /* their kernels are their contexts' (module_cache.h) */
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
