/* any_layout.c: the any-layout kernels a gufunc compiles when it is made.
 *
 * Without them every new call layout compiled a module at its first call:
 * each core size up to GU_BAKE_LIMIT, each pattern of strides, broadcast
 * or in-place operands, each scalar-or-array choice of a "()" input. Now
 * kiln_guvectorize compiles one module holding, per type signature, a
 * kernel that takes every one of those: core sizes and core and loop
 * strides as parameters, GU_ANY_LOOPS loop dims (fewer are padded in front
 * with size-1 dims), a "()" input as a pointer or, pointer NULL, a value.
 * On the CPU that is the GU_CPU_LOOP shape, on the GPU GU_GPU_GENERIC.
 *
 * It runs calls whose operands are stored in the signature's own dtypes
 * until it has served f->any_limit elements (of each call's largest
 * operand) of its signature; then calls compile the kernel made for their
 * layout (constant core sizes, rows staged through registers or shared
 * memory on the GPU), which is what a long-running loop should run. Calls
 * with more loop dims, or inputs cast from other dtypes, compile theirs at
 * once, as before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/settings.h"
#include "gufunc/gufunc.h"
#include "kernel/module.h"
#include "kernel/options.h"

void gu_any_skeleton(const kiln_gufunc *f, kiln_backend_kind backend, int sig, gu_plan *out) {
    const gu_layout *l = &f->layout;
    int nops = l->nin + l->nout;
    memset(out, 0, sizeof *out);
    gu_key *key = &out->key;
    key->backend = (uint8_t)backend;
    key->strategy = backend == KILN_BACKEND_CPU ? GU_CPU_LOOP : GU_GPU_GENERIC;
    key->sig = (uint8_t)sig;
    key->nloop = GU_ANY_LOOPS;
    key->nops = (uint8_t)nops;
    key->nin = (uint8_t)l->nin;
    key->any = 1;
    for (int k = 0; k < nops; k++) {
        key->dtype[k] = (uint8_t)f->sigs[sig].dtype[k];
        key->kind[k] = k < l->nin && l->core_nd[k] == 0 ? GU_OP_EITHER : GU_OP_ARRAY;
        key->alias[k] = (uint8_t)k;
    }
    out->nops = nops;
    out->nloop = GU_ANY_LOOPS;
}

/* KILN_GUFUNC_ANY_LIMIT=n: elements each signature's any-layout kernel
 * serves (default GU_ANY_ELEMENTS); 0: none are compiled, every call
 * compiles the kernel of its layout at its first use, as before they
 * existed. Read once per gufunc, when it is made. */
static int64_t read_limit(void) {
    const char *e = kiln_setting_string("KILN_GUFUNC_ANY_LIMIT");
    long long m = e && *e ? atoll(e) : GU_ANY_ELEMENTS;
    return m < 0 ? 0 : (int64_t)m;
}

kiln_status gu_any_generate(const kiln_gufunc *f, kiln_backend_kind backend, char **source,
                            char (*names)[128], int *sig_of, int *count) {
    *source = NULL;
    *count = 0;
    if (f->nsig < 1 || f->nsig > GU_MAX_SIGS)
        return kiln_set_error(KILN_ERR_INTERNAL, "%s: no signatures", f->name);
    gu_plan *plans = calloc((size_t)f->nsig, sizeof *plans);
    int n = 0;
    if (!plans) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int sig = 0; sig < f->nsig; sig++) {
        gu_param params[GU_MAX_PARAMS];
        gu_any_skeleton(f, backend, sig, &plans[n]);
        /* A signature whose any-layout kernel would pass kiln_launch's limit
         * of parameters has none: its calls compile their own kernels. */
        if (gu_kernel_params(f, &plans[n], params, GU_MAX_PARAMS) < 0) continue;
        sig_of[n++] = sig;
    }
    if (n > 0 && !(*source = gu_generate_group(f, plans, n, names))) {
        free(plans);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    free(plans);
    *count = n;
    return KILN_OK;
}

kiln_status gu_any_build(kiln_gufunc *f) {
    f->any_limit = read_limit();
    if (f->any_limit == 0) return KILN_OK;
    char(*names)[128] = calloc(GU_MAX_SIGS, sizeof *names);
    if (!names) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    char *src = NULL;
    int sig_of[GU_MAX_SIGS], n = 0;
    kiln_status s = gu_any_generate(f, f->ctx->ops->kind, &src, names, sig_of, &n);
    kiln_module *m = NULL;
    if (s == KILN_OK && src) {
        char module_name[128];
        snprintf(module_name, sizeof module_name, "kiln-gufunc-%s.cu", f->name);
        /* CUDA: less optimisation for less compile time, as calls leave
         * these kernels after f->any_limit elements (H100: the bench child
         * 76-116 ms against 154-223 compiled fully). Not on the CPU, where
         * -O1 saved ~50 ms of a 240 ms compile but ran Hermite rows 3x
         * slower: over the 2^26 elements served, more than it saved. */
        const char *options = f->ctx->ops->kind == KILN_BACKEND_CUDA ? kiln_first_tier_options() : NULL;
        s = kiln_module_build(f->ctx, src, module_name, options, NULL, &m);
    }
    free(src);
    for (int i = 0; i < n && s == KILN_OK; i++)
        s = kiln_module_kernel(m, names[i], &f->any_kernel[sig_of[i]]);
    kiln_module_release(m);
    free(names);
    if (s != KILN_OK) {
        for (int sig = 0; sig < f->nsig; sig++) {
            kiln_kernel_release(f->any_kernel[sig]);
            f->any_kernel[sig] = NULL;
        }
        return kiln_prefix_error(s, "guvectorize %s (%s): ", f->name, f->layout.text);
    }
    return KILN_OK;
}

static int64_t largest_operand(const kiln_gufunc *f, const gu_plan *p) {
    const gu_layout *l = &f->layout;
    int64_t most = 1;
    for (int k = 0; k < p->nops; k++) {
        int64_t n = 1;
        for (int j = 0; j < l->core_nd[k]; j++) n *= p->dims[l->core_dim[k][j]];
        if (n > most) most = n;
    }
    return p->total > INT64_MAX / most ? INT64_MAX : p->total * most;
}

int gu_any_fits(const kiln_gufunc *f, const gu_plan *p) {
    int sig = p->key.sig;
    if (!f->any_kernel[sig] || p->nloop > GU_ANY_LOOPS) return 0;
    const gu_typesig *t = &f->sigs[sig];
    for (int i = 0; i < p->nops; i++)
        if (p->key.kind[i] != GU_OP_VALUE && p->key.dtype[i] != (uint8_t)t->dtype[i]) return 0;
    return 1;
}

int gu_any_count(kiln_gufunc *f, const gu_plan *p) {
    int sig = p->key.sig;
    pthread_mutex_lock(&f->lock);
    int take = f->any_served[sig] < f->any_limit;
    if (take) {
        int64_t n = largest_operand(f, p);
        f->any_served[sig] = n > INT64_MAX - f->any_served[sig] ? INT64_MAX : f->any_served[sig] + n;
    }
    pthread_mutex_unlock(&f->lock);
    return take;
}

kiln_kernel *gu_any_plan(const kiln_gufunc *f, gu_plan *p) {
    int sig = p->key.sig;
    const gu_typesig *t = &f->sigs[sig];
    /* The call's plan, as the any-layout kernel takes it: its loop dims
     * moved to the innermost positions, size-1 dims in front. */
    gu_plan any;
    gu_any_skeleton(f, (kiln_backend_kind)p->key.backend, sig, &any);
    memcpy(any.dims, p->dims, sizeof any.dims);
    any.total = p->total;
    int pad = GU_ANY_LOOPS - p->nloop;
    for (int d = 0; d < GU_ANY_LOOPS; d++) any.loop_shape[d] = d < pad ? 1 : p->loop_shape[d - pad];
    for (int i = 0; i < p->nops; i++) {
        if (p->key.kind[i] == GU_OP_VALUE) { /* a "()" input given as a value */
            any.value[i] = p->value[i];
            continue;
        }
        any.data[i] = p->data[i];
        for (int d = 0; d < GU_ANY_LOOPS; d++)
            any.loop_stride[i][d] = d < pad ? 0 : p->loop_stride[i][d - pad];
        memcpy(any.core_stride[i], p->core_stride[i], sizeof any.core_stride[i]);
        if (any.key.kind[i] == GU_OP_EITHER) { /* the value slot is unused: a zero of its type */
            kiln_value zero = kiln_i64(0);
            any.value[i] = kiln_value_convert(&zero, t->dtype[i]);
        }
    }
    *p = any;
    return f->any_kernel[sig];
}
