/* variants.c: the table of a ufunc's compiled kernel variants (one per
 * uf_key and context), the mixed kernels that serve scalar patterns first,
 * and the exact kernels built behind them. */
#include "ufunc/variants.h"

#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "kernel/module.h"
#include "ufunc/codegen.h"

static uf_variant *find_variant(kiln_ufunc *f, kiln_context *ctx, const uf_key *key) {
    for (int i = f->nvariants - 1; i >= 0; i--)
        if (f->variants[i].ctx == ctx && memcmp(&f->variants[i].key, key, sizeof *key) == 0)
            return &f->variants[i];
    return NULL;
}

/* Compiles one module holding a kernel per key, on ctx, and records them.
 * CUDA mixed kernels only (what kiln_vectorize builds): --fast-compile, as
 * calls leave them for their exact kernels after f->mixed_limit elements;
 * the CPU's mixed kernels serve every call and are compiled fully. */
kiln_status uf_build_variants(kiln_ufunc *f, kiln_context *ctx, const uf_key *keys, int nkeys) {
    if (nkeys < 1) return kiln_set_error(KILN_ERR_INTERNAL, "ufunc %s: no kernel to build", f->name);
    char *source = NULL;
    char(*names)[UF_KERNEL_NAME_MAX] = calloc((size_t)nkeys, sizeof *names);
    if (!names) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    int first_tier = 1;
    for (int i = 0; i < nkeys; i++) first_tier &= keys[i].backend == UF_CUDA && keys[i].mixed;
    kiln_status s = uf_generate(f, keys, nkeys, &source, names);
    kiln_module *m = NULL;
    if (s == KILN_OK)
        s = kiln_module_build(ctx, source, f->name, first_tier ? kiln_first_tier_options() : NULL, NULL, &m);
    free(source);
    if (s != KILN_OK) {
        free(names);
        if (s == KILN_ERR_COMPILE)
            kiln_prefix_error(
                s, "ufunc %s: the body did not compile (lines below count from the body's first line):\n",
                f->name);
        return s;
    }
    pthread_mutex_lock(&f->lock);
    for (int i = 0; i < nkeys && s == KILN_OK; i++) {
        if (find_variant(f, ctx, &keys[i])) continue;
        kiln_kernel *k = NULL;
        s = kiln_module_kernel(m, names[i], &k);
        if (s != KILN_OK) break;
        if (f->nvariants == f->cap_variants) {
            int cap = f->cap_variants ? f->cap_variants * 2 : 8;
            uf_variant *v = realloc(f->variants, sizeof *v * (size_t)cap);
            if (!v) {
                kiln_kernel_release(k);
                s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
                break;
            }
            f->variants = v;
            f->cap_variants = cap;
        }
        f->variants[f->nvariants].key = keys[i];
        f->variants[f->nvariants].ctx = ctx;
        f->variants[f->nvariants].kernel = k;
        f->variants[f->nvariants].served = 0;
        f->nvariants++;
    }
    pthread_mutex_unlock(&f->lock);
    kiln_module_release(m);
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
typedef struct uf_tierup_job {
    kiln_ufunc *f;
    kiln_context *ctx;
    uf_key key;
} uf_tierup_job;

static kiln_status tierup_build(void *arg) {
    uf_tierup_job *job = arg;
    kiln_kernel *k = NULL;
    kiln_status s = uf_get_kernel(job->f, job->ctx, &job->key, &k);
    kiln_context_release(job->ctx);
    return s;
}

int uf_tier_up(kiln_ufunc *f, kiln_context *ctx, const uf_key *key) {
    pthread_mutex_lock(&f->lock);
    int start = 0, serve = kiln_tierup_serve(&f->tierup, &start);
    if (start) {
        uf_tierup_job *job = malloc(sizeof *job);
        if (job) {
            job->f = f;
            job->ctx = kiln_context_retain(ctx);
            job->key = *key;
        }
        serve = job && kiln_tierup_start(&f->tierup, tierup_build, job) == 0;
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
        kiln_status s = uf_build_variants(f, ctx, key, 1);
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
