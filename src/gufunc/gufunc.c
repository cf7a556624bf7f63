/* gufunc.c: kiln_guvectorize and its calls: parse once, then per call
 * resolve (call.c), plan (plan.c), find or build the kernel variant
 * (codegen.c + the disk cache), launch. */
#include "gufunc/gufunc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "kernel/module.h"

static int is_identifier(const char *s, size_t max) {
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    size_t n = 0;
    for (; s[n]; n++)
        if (!(isalnum((unsigned char)s[n]) || s[n] == '_')) return 0;
    return n <= max;
}

kiln_status kiln_guvectorize(kiln_context *ctx, const char *name, const char *type_signatures,
                             const char *layout, const char *params, const char *body, const char *preamble,
                             kiln_gufunc **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_guvectorize: ctx and out must not be NULL");
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!is_identifier(name, 40))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_guvectorize: name must be a C identifier of at most 40 "
                              "characters, got \"%s\"",
                              name ? name : "(null)");
    if (!body) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_guvectorize: %s: body is NULL", name);
    kiln_gufunc *f = calloc(1, sizeof *f);
    if (!f) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    snprintf(f->name, sizeof f->name, "%s", name);
    s = gu_parse_layout(layout, &f->layout);
    if (s == KILN_OK) s = gu_parse_typesigs(type_signatures, f->sigs, &f->nsig);
    if (s == KILN_OK) s = gu_check_typesigs(&f->layout, f->sigs, f->nsig);
    if (s == KILN_OK) s = gu_parse_params(params, f->layout.nin + f->layout.nout, f->names);
    if (s != KILN_OK) {
        free(f);
        return kiln_prefix_error(s, "kiln_guvectorize %s: ", name);
    }
    f->ctx = kiln_context_retain(ctx); /* released with the gufunc */
    f->body = strdup(body);
    f->preamble = preamble ? strdup(preamble) : NULL;
    if (!f->body || (preamble && !f->preamble)) {
        kiln_context_release(ctx);
        free(f->body);
        free(f->preamble);
        free(f);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    pthread_mutex_init(&f->lock, NULL);
    kiln_tierup_init(&f->tierup);
    s = gu_any_build(f);
    if (s != KILN_OK) {
        kiln_gufunc_release(f);
        return s;
    }
    *out = f;
    return KILN_OK;
}

void kiln_gufunc_release(kiln_gufunc *f) {
    if (!f) return;
    kiln_tierup_finish(&f->tierup); /* a layout kernel being built in the background */
    for (int i = 0; i < f->nvariants; i++) kiln_kernel_release(f->variants[i].kernel);
    for (int i = 0; i < f->nsig; i++) kiln_kernel_release(f->any_kernel[i]);
    free(f->variants);
    pthread_mutex_destroy(&f->lock);
    free(f->body);
    free(f->preamble);
    kiln_context *ctx = f->ctx;
    free(f);
    kiln_context_release(ctx);
}

int kiln_gufunc_nin(const kiln_gufunc *f) { return f ? f->layout.nin : -1; }
int kiln_gufunc_nout(const kiln_gufunc *f) { return f ? f->layout.nout : -1; }

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* GPU any-layout kernel (codegen.c, emit_any_gpu): 256 threads, x along the
 * innermost loop dim (a power of two from 32 up to cover it), y along the
 * next; grid z over the outermost. Every loop is grid-stride, so the grid
 * is capped at about `most` blocks and at the hardware's y and z limits. */
static void any_gpu_shape(const gu_plan *p, int64_t most, kiln_dim3 *grid, kiln_dim3 *block) {
    int64_t n0 = p->loop_shape[0], n1 = p->loop_shape[1], n2 = p->loop_shape[2];
    int64_t bx = 32;
    while (bx < 256 && bx < n2) bx *= 2;
    int64_t by = 256 / bx;
    int64_t gx = min64((n2 + bx - 1) / bx, most);
    int64_t gy = min64(min64((n1 + by - 1) / by, most / gx), 65535);
    if (gy < 1) gy = 1;
    int64_t gz = min64(min64(n0, most / (gx * gy)), 65535);
    if (gz < 1) gz = 1;
    *block = KILN_DIM((uint32_t)bx, (uint32_t)by);
    *grid = KILN_DIM((uint32_t)gx, (uint32_t)gy, (uint32_t)gz);
}

/* Grid, block and dynamic shared memory for the plan; fills plan->chunk. */
static void launch_shape(const kiln_context *ctx, gu_plan *p, kiln_dim3 *grid, kiln_dim3 *block,
                         size_t *smem) {
    int64_t units = ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 1, blocks = 1;
    *smem = 0;
    switch (p->key.strategy) {
    case GU_CPU_LOOP: {
        /* A few chunks per core for balance, none smaller than ~2k loop indices. */
        int64_t chunks = (p->total + 2047) / 2048;
        if (chunks > units * 4) chunks = units * 4;
        if (chunks < 1) chunks = 1;
        p->chunk = (p->total + chunks - 1) / chunks;
        if (p->chunk < 1) p->chunk = 1;
        blocks = (p->total + p->chunk - 1) / p->chunk;
        *block = KILN_DIM(1);
        break;
    }
    case GU_GPU_ROWS_REG:
        blocks = (p->total + 255) / 256;
        *block = KILN_DIM(256);
        break;
    case GU_GPU_ROWS_SMEM:
        blocks = (p->total + p->key.rows_per_block - 1) / p->key.rows_per_block;
        *block = KILN_DIM((uint32_t)p->key.rows_per_block);
        *smem = p->smem_bytes;
        break;
    default:
        if (p->key.any) {
            any_gpu_shape(p, units * 32, grid, block);
            return;
        }
        blocks = (p->total + 255) / 256;
        if (blocks > units * 32) blocks = units * 32;
        *block = KILN_DIM(256);
        break;
    }
    if (blocks < 1) blocks = 1;
    *grid = KILN_DIM((uint32_t)blocks);
}

/* The kernel built for key, or NULL. */
static kiln_kernel *built_variant(kiln_gufunc *f, const gu_key *key) {
    kiln_kernel *k = NULL;
    pthread_mutex_lock(&f->lock);
    for (int i = 0; i < f->nvariants && !k; i++)
        if (memcmp(&f->variants[i].key, key, sizeof *key) == 0) k = f->variants[i].kernel;
    pthread_mutex_unlock(&f->lock);
    return k;
}

static kiln_status find_variant(kiln_gufunc *f, const gu_plan *p, kiln_kernel **out) {
    if ((*out = built_variant(f, &p->key)) != NULL) return KILN_OK;

    char kname[128], module_name[128];
    char *src = gu_generate(f, p, kname, sizeof kname);
    if (!src) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    snprintf(module_name, sizeof module_name, "kiln-gufunc-%s.cu", f->name);
    kiln_module *m = NULL;
    kiln_kernel *k = NULL;
    kiln_status s = kiln_module_build(f->ctx, src, module_name, NULL, NULL, &m);
    free(src);
    if (s == KILN_OK) s = kiln_module_kernel(m, kname, &k);
    kiln_module_release(m);
    if (s != KILN_OK) return kiln_prefix_error(s, "guvectorize %s (%s): ", f->name, f->layout.text);

    pthread_mutex_lock(&f->lock);
    for (int i = 0; i < f->nvariants; i++) /* another thread built it meanwhile */
        if (memcmp(&f->variants[i].key, &p->key, sizeof p->key) == 0) {
            kiln_kernel_release(k);
            *out = f->variants[i].kernel;
            pthread_mutex_unlock(&f->lock);
            return KILN_OK;
        }
    if (f->nvariants == f->cap_variants) {
        int cap = f->cap_variants ? f->cap_variants * 2 : 8;
        gu_variant *v = realloc(f->variants, sizeof *v * (size_t)cap);
        if (!v) {
            pthread_mutex_unlock(&f->lock);
            kiln_kernel_release(k);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        f->variants = v;
        f->cap_variants = cap;
    }
    f->variants[f->nvariants].key = p->key;
    f->variants[f->nvariants].kernel = k;
    f->nvariants++;
    pthread_mutex_unlock(&f->lock);
    *out = k;
    return KILN_OK;
}

/* A layout kernel built on the tier-up thread (kernel/tierup.h). */
typedef struct gu_tierup_job {
    kiln_gufunc *f;
    gu_plan plan;
} gu_tierup_job;

static kiln_status tierup_build(void *arg) {
    gu_tierup_job *job = arg;
    kiln_kernel *k = NULL;
    return find_variant(job->f, &job->plan, &k);
}

/* The any-layout kernel has served its limit and the kernel of the call's
 * plan is not built: 1 when the call may still run the any-layout kernel
 * because that kernel is being built in the background (started here, or
 * another build is running); 0: the call builds it itself (KILN_TIER_UP=0,
 * an earlier background build failed, or no thread). */
static int tier_up(kiln_gufunc *f, const gu_plan *exact) {
    pthread_mutex_lock(&f->lock);
    int start = 0, serve = kiln_tierup_serve(&f->tierup, &start);
    if (start) {
        gu_tierup_job *job = malloc(sizeof *job);
        if (job) {
            job->f = f;
            job->plan = *exact;
        }
        serve = job && kiln_tierup_start(&f->tierup, tierup_build, job) == 0;
    }
    pthread_mutex_unlock(&f->lock);
    return serve;
}

/* The kernel for the call planned in *p: the layout's own when it is built;
 * else the any-layout kernel while it may serve (then *p becomes its plan:
 * gu_any_plan reads none of what the strategy sets); else the layout's
 * own, built now. */
static kiln_status pick_kernel(kiln_gufunc *f, gu_plan *p, kiln_kernel **out) {
    kiln_context *ctx = f->ctx;
    gu_choose_strategy(p, &f->layout, ctx->ops->kind, ctx->info.max_shared_bytes_per_block);
    if ((*out = built_variant(f, &p->key)) != NULL) return KILN_OK;
    if (gu_any_fits(f, p) && (gu_any_count(f, p) || tier_up(f, p))) {
        *out = gu_any_plan(f, p);
        return KILN_OK;
    }
    gu_param params[GU_MAX_PARAMS];
    if (gu_kernel_params(f, p, params, GU_MAX_PARAMS) < 0) /* before compiling what cannot launch */
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "%s: this call needs more than %d kernel parameters (too many "
                              "arguments or loop dims)",
                              f->name, GU_MAX_PARAMS);
    return find_variant(f, p, out);
}

kiln_status kiln_gufunc_call_ex(kiln_gufunc *f, kiln_stream *stream, const char *dims, const kiln_value *args,
                                int nargs, kiln_array **outs) {
    if (!f) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_gufunc_call: gufunc is NULL");
    if (!args && nargs > 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_gufunc_call: args is NULL with nargs %d",
                              nargs);
    kiln_context *ctx = f->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (stream && stream->ctx != ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the stream belongs to another context",
                              f->name);
    if (nargs == f->layout.nin && !outs)
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "%s: outs is NULL; pass %d output slot%s (NULL slots receive new arrays) or the outputs "
            "as the last arguments",
            f->name, f->layout.nout, f->layout.nout == 1 ? "" : "s");
    gu_call *c = calloc(1, sizeof *c);
    if (!c) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_backend_kind backend = ctx->ops->kind;
    s = gu_resolve(f, backend, 0, dims, args, nargs, nargs == f->layout.nin ? outs : NULL, c);
    if (s != KILN_OK) {
        free(c);
        return s;
    }
    gu_plan *p = &c->plan;
    if (p->total > 0) {
        kiln_kernel *k = NULL;
        s = pick_kernel(f, p, &k);
        kiln_dim3 grid, block;
        size_t smem = 0;
        gu_param params[GU_MAX_PARAMS];
        kiln_value values[GU_MAX_PARAMS];
        int n = 0;
        if (s == KILN_OK) {
            launch_shape(ctx, p, &grid, &block, &smem);
            n = gu_kernel_params(f, p, params, GU_MAX_PARAMS); /* pick_kernel checked the count */
            for (int i = 0; i < n; i++) values[i] = params[i].value;
        }
        if (s == KILN_OK && stream)
            for (int i = 0; i < c->nops; i++) {
                kiln_array *a = c->staged[i] ? c->staged[i] : c->arr[i];
                if (a) kiln_array_note_stream(a, stream);
            }
        if (s == KILN_OK) s = kiln_launch(k, grid, block, smem, stream, values, n);
        if (s != KILN_OK) s = kiln_prefix_error(s, "%s: ", f->name);
    }
    /* Host-memory outputs on a CUDA context: copy the results back. */
    for (int k = f->layout.nin; k < c->nops && s == KILN_OK; k++)
        if (c->staged[k] && c->arr[k] != c->staged[k]) {
            if (stream) s = kiln_stream_synchronize(stream);
            if (s == KILN_OK) s = kiln_array_assign(c->arr[k], c->staged[k]);
        }
    if (s == KILN_OK && nargs == f->layout.nin)
        for (int k = 0; k < f->layout.nout; k++)
            if (c->made[f->layout.nin + k]) outs[k] = c->made[f->layout.nin + k];
    gu_call_cleanup(c, s == KILN_OK);
    free(c);
    return s;
}

kiln_status kiln_gufunc_call(kiln_gufunc *f, const kiln_value *args, int nargs, kiln_array **outs,
                             const char *dims) {
    return kiln_gufunc_call_ex(f, NULL, dims, args, nargs, outs);
}

/* The backend a *_source call names: "cuda", "cpu", or NULL/""/"context"
 * for the context's own. */
static kiln_status source_target(const kiln_gufunc *f, const char *target, const char *fn,
                                 kiln_backend_kind *backend) {
    *backend = f->ctx->ops->kind;
    if (target && strcmp(target, "cuda") == 0)
        *backend = KILN_BACKEND_CUDA;
    else if (target && strcmp(target, "cpu") == 0)
        *backend = KILN_BACKEND_CPU;
    else if (target && target[0] && strcmp(target, "context") != 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: target must be \"cuda\", \"cpu\" or NULL, got \"%s\"", fn, target);
    return KILN_OK;
}

kiln_status kiln_gufunc_source(kiln_gufunc *f, const char *target, const char *dims, const kiln_value *args,
                               int nargs, kiln_array *const *outs, char **source, char **kernel_name) {
    if (!f || !source) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_gufunc_source: NULL argument");
    kiln_backend_kind backend;
    kiln_status s = source_target(f, target, "kiln_gufunc_source", &backend);
    if (s != KILN_OK) return s;
    gu_call *c = calloc(1, sizeof *c);
    if (!c) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    s = gu_resolve(f, backend, 1, dims, args, nargs, nargs == f->layout.nin ? outs : NULL, c);
    if (s != KILN_OK) {
        free(c);
        return s;
    }
    gu_plan *p = &c->plan;
    size_t smem_limit = backend == f->ctx->ops->kind ? f->ctx->info.max_shared_bytes_per_block : 48 * 1024;
    gu_choose_strategy(p, &f->layout, backend, smem_limit);
    if (backend == KILN_BACKEND_CPU) p->chunk = 1;
    char kname[128];
    char *src = gu_generate(f, p, kname, sizeof kname);
    gu_call_cleanup(c, 0);
    free(c);
    if (!src) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (kernel_name && !(*kernel_name = strdup(kname))) {
        free(src);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    *source = src;
    return KILN_OK;
}

kiln_status kiln_gufunc_any_source(kiln_gufunc *f, const char *target, char **source) {
    if (!f || !source)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_gufunc_any_source: NULL argument");
    kiln_backend_kind backend;
    kiln_status s = source_target(f, target, "kiln_gufunc_any_source", &backend);
    if (s != KILN_OK) return s;
    char(*names)[128] = calloc(GU_MAX_SIGS, sizeof *names);
    if (!names) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    int sig_of[GU_MAX_SIGS], n = 0;
    s = gu_any_generate(f, backend, source, names, sig_of, &n);
    free(names);
    if (s == KILN_OK && n == 0)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "%s: no signature has an any-layout kernel (each would take more than %d "
                              "kernel parameters)",
                              f->name, GU_MAX_PARAMS);
    return s;
}
