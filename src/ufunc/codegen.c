/* codegen.c: CUDA C source for one ufunc kernel variant.
 *
 * Every variant is: the common helpers, (CPU) the vector-math declarations,
 * the user's preamble, the user's body wrapped in an always-inlined function
 * `kiln_uf_body`, and one __global__ loop around it. `#line` directives make
 * compiler diagnostics count lines from the first line of the body (file
 * "<name>") and of the preamble (file "<name>.preamble").
 *
 * GPU loops (one thread per element when the grid covers n, else grid-stride;
 * the launch picks, the source is the same):
 *   UF_CONTIG   a[i] for every operand: no shape arithmetic at all
 *   UF_VECTOR   the same, moving 16 bytes per access (kiln_uf_vec), + a tail
 *   UF_STRIDED  i unravelled over nd coalesced dims into byte offsets
 *   mixed       UF_CONTIG, each input `kiln_i ? kiln_i[i] : kiln_s` (a
 *               uniform branch): one kernel for scalars at any positions
 * Index arithmetic is 32-bit when n and every operand's extent allow.
 *
 * CPU loops are not thread emulation: block b is one contiguous chunk
 * [b*chunk, (b+1)*chunk) of the elements, run as a plain loop the host
 * compiler vectorises (`ivdep` is sound: the caller rejects outputs that
 * overlap an input other than exactly in place). Strided chunks walk row by
 * row with the last dim innermost. */
#include "ufunc/codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/text.h"

extern const char kiln_embedded_ufunc_common[];
extern const char kiln_embedded_ufunc_cpu_math[];

static int count_lines(const kiln_text *b) {
    int lines = 1;
    for (size_t i = 0; i < b->length; i++) lines += b->data[i] == '\n';
    return lines;
}

/* Type the body computes in. */
static const char *compute_type(kiln_dtype t) {
    return kiln_dtype_is_half(t) ? "float" : kiln_dtype_c_type(t);
}
/* Type the array holds. */
static const char *storage_type(kiln_dtype t) {
    return kiln_dtype_is_half(t) ? "uint16_t" : kiln_dtype_c_type(t);
}

/* Writes into out the expression turning `src` (a storage value of dtype
 * have) into the compute type of dtype want. */
static void load_expr(char *out, size_t cap, kiln_dtype have, kiln_dtype want, const char *src) {
    char val[256];
    if (kiln_dtype_is_half(have))
        snprintf(val, sizeof val, "%s(%s)", have == KILN_BFLOAT16 ? "kiln_uf_bf2f" : "kiln_uf_h2f", src);
    else
        snprintf(val, sizeof val, "%s", src);
    const char *ht = compute_type(have), *wt = compute_type(want);
    if (strcmp(ht, wt) == 0)
        snprintf(out, cap, "%s", val);
    else
        snprintf(out, cap, "kiln_uf_cv<%s>::go(%s)", wt, val);
}

/* The expression storing compute value `src` of dtype have as dtype want. */
static void store_expr(char *out, size_t cap, kiln_dtype have, kiln_dtype want, const char *src) {
    char val[256];
    const char *ht = compute_type(have), *wt = compute_type(want);
    if (strcmp(ht, wt) == 0)
        snprintf(val, sizeof val, "%s", src);
    else
        snprintf(val, sizeof val, "kiln_uf_cv<%s>::go(%s)", wt, src);
    if (kiln_dtype_is_half(want))
        snprintf(out, cap, "%s(%s)", want == KILN_BFLOAT16 ? "kiln_uf_f2bf" : "kiln_uf_f2h", val);
    else
        snprintf(out, cap, "%s", val);
}

static kiln_dtype key_in(const uf_key *k, int i) { return (kiln_dtype)(k->in[i] & ~UF_SCALAR_BIT); }
static int key_scalar(const uf_key *k, int i) { return (k->in[i] & UF_SCALAR_BIT) != 0; }

/* The user's function for signature `sig`: declared (decl_only) before the
 * kernels, defined after them, so that nothing kiln writes comes after the
 * user's preamble or body, where a user's macro (`#define t 0.5`) could
 * reach it. */
static void emit_body(kiln_text *b, const kiln_ufunc *f, const uf_signature *g, int sig, int decl_only) {
    if (f->return_style)
        kiln_text_printf(b, "KILN_UF_FN %s kiln_uf_body_%d(", compute_type(g->out[0]), sig);
    else {
        kiln_text_printf(b, "KILN_UF_FN void kiln_uf_body_%d(", sig);
        for (int j = 0; j < f->nout; j++)
            kiln_text_printf(b, "%s &%s, ", compute_type(g->out[j]), decl_only ? "" : f->out_names[j]);
    }
    for (int i = 0; i < f->nin; i++)
        kiln_text_printf(b, "%s%s %s", i ? ", " : "", compute_type(g->in[i]),
                         decl_only ? "" : f->in_names[i]);
    if (decl_only) {
        kiln_text_printf(b, ");\n");
        return;
    }
    kiln_text_printf(b, ") {\n#line 1 \"%s\"\n", f->name);
    kiln_text_puts(b, f->body);
    kiln_text_printf(b, "\n");
    kiln_text_printf(b, "#line %d \"kiln-ufunc-%s.cu\"\n}\n", count_lines(b) + 1, f->name);
}

/* Kernel parameters: outputs, then each input (pointer or value), then
 * the sizes; the order uf_plan_args follows. */
static void emit_params(kiln_text *b, const kiln_ufunc *f, const uf_key *k, const uf_signature *g,
                        const char *idx) {
    for (int j = 0; j < f->nout; j++)
        kiln_text_printf(b, "%s *kiln_o%d, ", storage_type((kiln_dtype)k->out[j]), j);
    for (int i = 0; i < f->nin; i++) {
        if (k->mixed)
            kiln_text_printf(b, "const %s *kiln_i%d, %s kiln_s%d, ", storage_type(key_in(k, i)), i,
                             compute_type(g->in[i]), i);
        else if (key_scalar(k, i))
            kiln_text_printf(b, "%s kiln_s%d, ", compute_type(g->in[i]), i);
        else
            kiln_text_printf(b, "const %s *kiln_i%d, ", storage_type(key_in(k, i)), i);
    }
    kiln_text_printf(b, "%s kiln_n", idx);
    if (k->backend == UF_CPU) kiln_text_printf(b, ", %s kiln_chunk", idx);
    if (k->layout == UF_STRIDED) {
        for (int d = 0; d < k->nd; d++) kiln_text_printf(b, ", %s kiln_d%d", idx, d);
        for (int j = 0; j < f->nout; j++)
            for (int d = 0; d < k->nd; d++) kiln_text_printf(b, ", %s kiln_to%d_%d", idx, j, d);
        for (int i = 0; i < f->nin; i++)
            if (!key_scalar(k, i))
                for (int d = 0; d < k->nd; d++) kiln_text_printf(b, ", %s kiln_ti%d_%d", idx, i, d);
    }
}

typedef enum access { ACCESS_INDEX, ACCESS_VECTOR, ACCESS_OFFSET, ACCESS_MIXED } access;

/* One element: load the inputs, call the body, store the outputs. `at` is
 * the index expression (ACCESS_INDEX: operands pfx"i0"[at], pfx"o0"[at];
 * ACCESS_MIXED: the same, but input i is kiln_s<i> where kiln_i<i> is
 * NULL), the lane (ACCESS_VECTOR) or unused (ACCESS_OFFSET: operands
 * addressed through pfx"i0" pointers + at). */
static void emit_element(kiln_text *b, const kiln_ufunc *f, const uf_key *k, const uf_signature *g,
                         access how, const char *at, const char *pfx) {
    char src[160], expr[512];
    kiln_text_printf(b, "{ ");
    for (int i = 0; i < f->nin; i++) {
        if (key_scalar(k, i)) continue;
        kiln_dtype have = key_in(k, i);
        if (how == ACCESS_INDEX || how == ACCESS_MIXED)
            snprintf(src, sizeof src, "%si%d[%s]", pfx, i, at);
        else if (how == ACCESS_VECTOR)
            snprintf(src, sizeof src, "kiln_a%d.v[%s]", i, at);
        else
            snprintf(src, sizeof src, "*(const %s *)(%si%d + %s)", storage_type(have), pfx, i, at);
        load_expr(expr, sizeof expr, have, g->in[i], src);
        if (how == ACCESS_MIXED)
            kiln_text_printf(b, "const %s kiln_x%d = %si%d ? %s : kiln_s%d; ", compute_type(g->in[i]), i, pfx,
                             i, expr, i);
        else
            kiln_text_printf(b, "const %s kiln_x%d = %s; ", compute_type(g->in[i]), i, expr);
    }
    if (f->return_style)
        kiln_text_printf(b, "%s kiln_r0 = kiln_uf_body_%d(", compute_type(g->out[0]), k->sig);
    else {
        for (int j = 0; j < f->nout; j++)
            kiln_text_printf(b, "%s kiln_r%d = %s(); ", compute_type(g->out[j]), j, compute_type(g->out[j]));
        kiln_text_printf(b, "kiln_uf_body_%d(", k->sig);
        for (int j = 0; j < f->nout; j++) kiln_text_printf(b, "kiln_r%d, ", j);
    }
    for (int i = 0; i < f->nin; i++)
        kiln_text_printf(b, "%skiln_%c%d", i ? ", " : "", key_scalar(k, i) ? 's' : 'x', i);
    kiln_text_printf(b, "); ");
    for (int j = 0; j < f->nout; j++) {
        char r[16];
        snprintf(r, sizeof r, "kiln_r%d", j);
        store_expr(expr, sizeof expr, g->out[j], (kiln_dtype)k->out[j], r);
        if (how == ACCESS_INDEX || how == ACCESS_MIXED)
            kiln_text_printf(b, "%so%d[%s] = %s; ", pfx, j, at, expr);
        else if (how == ACCESS_VECTOR)
            kiln_text_printf(b, "kiln_b%d.v[%s] = %s; ", j, at, expr);
        else
            kiln_text_printf(b, "*(%s *)(%so%d + %s) = %s; ", storage_type((kiln_dtype)k->out[j]), pfx, j, at,
                             expr);
    }
    kiln_text_printf(b, "}\n");
}

/* Byte offsets of flat index `var` (consumed) over dims [0, upto) into
 * kiln_off* variables, innermost dim fastest. */
static void emit_unravel(kiln_text *b, const kiln_ufunc *f, const uf_key *k, const char *idx, const char *var,
                         int upto) {
    for (int j = 0; j < f->nout; j++) kiln_text_printf(b, "        %s kiln_offo%d = 0;\n", idx, j);
    for (int i = 0; i < f->nin; i++)
        if (!key_scalar(k, i)) kiln_text_printf(b, "        %s kiln_offi%d = 0;\n", idx, i);
    for (int d = upto - 1; d >= 0; d--) {
        if (d > 0)
            kiln_text_printf(b, "        { const %s kiln_c = %s %% kiln_d%d; %s /= kiln_d%d;\n", idx, var, d,
                             var, d);
        else
            kiln_text_printf(b, "        { const %s kiln_c = %s;\n", idx, var);
        for (int j = 0; j < f->nout; j++)
            kiln_text_printf(b, "          kiln_offo%d += kiln_c * kiln_to%d_%d;\n", j, j, d);
        for (int i = 0; i < f->nin; i++)
            if (!key_scalar(k, i))
                kiln_text_printf(b, "          kiln_offi%d += kiln_c * kiln_ti%d_%d;\n", i, i, d);
        kiln_text_printf(b, "        }\n");
    }
}

static void emit_bases(kiln_text *b, const kiln_ufunc *f, const uf_key *k) {
    for (int j = 0; j < f->nout; j++)
        kiln_text_printf(b, "        char *kiln_po%d = (char *)kiln_o%d + kiln_offo%d;\n", j, j, j);
    for (int i = 0; i < f->nin; i++)
        if (!key_scalar(k, i))
            kiln_text_printf(b, "        const char *kiln_pi%d = (const char *)kiln_i%d + kiln_offi%d;\n", i,
                             i, i);
}

static void emit_gpu_kernel(kiln_text *b, const kiln_ufunc *f, const uf_key *k, const uf_signature *g,
                            const char *kname) {
    const char *idx = k->idx32 ? "int" : "long long";
    kiln_text_printf(b, "__global__ void %s(", kname);
    emit_params(b, f, k, g, idx);
    kiln_text_printf(b, ") {\n");
    kiln_text_printf(b, "    const %s kiln_step = (%s)gridDim.x * blockDim.x;\n", idx, idx);
    kiln_text_printf(b, "    const %s kiln_first = (%s)blockIdx.x * blockDim.x + threadIdx.x;\n", idx, idx);
    if (k->layout == UF_CONTIG && k->cover) {
        kiln_text_printf(
            b, "    (void)kiln_step;\n    const %s kiln_e = kiln_first;\n    if (kiln_e < kiln_n) ", idx);
        emit_element(b, f, k, g, k->mixed ? ACCESS_MIXED : ACCESS_INDEX, "kiln_e", "kiln_");
    } else if (k->layout == UF_CONTIG) {
        kiln_text_printf(b, "    for (%s kiln_e = kiln_first; kiln_e < kiln_n; kiln_e += kiln_step) ", idx);
        emit_element(b, f, k, g, k->mixed ? ACCESS_MIXED : ACCESS_INDEX, "kiln_e", "kiln_");
    } else if (k->layout == UF_VECTOR) {
        int v = k->vec;
        kiln_text_printf(b, "    const %s kiln_nv = kiln_n / %d;\n", idx, v);
        kiln_text_printf(b, "    for (%s kiln_e = kiln_first; kiln_e < kiln_nv; kiln_e += kiln_step) {\n",
                         idx);
        for (int i = 0; i < f->nin; i++)
            if (!key_scalar(k, i))
                kiln_text_printf(b,
                                 "        const kiln_uf_vec<%s, %d> kiln_a%d = ((const kiln_uf_vec<%s, %d> "
                                 "*)kiln_i%d)[kiln_e];\n",
                                 storage_type(key_in(k, i)), v, i, storage_type(key_in(k, i)), v, i);
        for (int j = 0; j < f->nout; j++)
            kiln_text_printf(b, "        kiln_uf_vec<%s, %d> kiln_b%d;\n",
                             storage_type((kiln_dtype)k->out[j]), v, j);
        kiln_text_printf(b, "#pragma unroll\n        for (int kiln_l = 0; kiln_l < %d; kiln_l++) ", v);
        emit_element(b, f, k, g, ACCESS_VECTOR, "kiln_l", "");
        for (int j = 0; j < f->nout; j++)
            kiln_text_printf(b, "        ((kiln_uf_vec<%s, %d> *)kiln_o%d)[kiln_e] = kiln_b%d;\n",
                             storage_type((kiln_dtype)k->out[j]), v, j, j);
        kiln_text_printf(b, "    }\n");
        kiln_text_printf(
            b, "    for (%s kiln_e = kiln_nv * %d + kiln_first; kiln_e < kiln_n; kiln_e += kiln_step) ", idx,
            v);
        emit_element(b, f, k, g, k->mixed ? ACCESS_MIXED : ACCESS_INDEX, "kiln_e", "kiln_");
    } else {
        kiln_text_printf(b, "    for (%s kiln_e = kiln_first; kiln_e < kiln_n; kiln_e += kiln_step) {\n",
                         idx);
        kiln_text_printf(b, "        %s kiln_rest = kiln_e;\n", idx);
        emit_unravel(b, f, k, idx, "kiln_rest", k->nd);
        emit_bases(b, f, k);
        kiln_text_printf(b, "        ");
        emit_element(b, f, k, g, ACCESS_OFFSET, "0", "kiln_p");
        kiln_text_printf(b, "    }\n");
    }
    kiln_text_printf(b, "}\n");
}

static void emit_ivdep(kiln_text *b) {
    kiln_text_printf(b, "#if defined(__clang__)\n#pragma clang loop vectorize(assume_safety)\n"
                        "#elif defined(__GNUC__)\n#pragma GCC ivdep\n#endif\n");
}

/* The CPU mixed kernel: a NULL input pointer stands for its value at every
 * element. A per-element `p ? p[e] : s` would keep GCC from vectorising
 * (the load may trap, and unswitching stops at small bodies), so a scalar
 * input becomes a small block of copies instead, and the loop runs over
 * blocks of UF_CPU_MIXED_BLOCK elements reading every input with unit
 * stride: arrays advance a block at a time, a scalar's copies stay. */
#define UF_CPU_MIXED_BLOCK 128
static void emit_cpu_mixed_loop(kiln_text *b, const kiln_ufunc *f, const uf_key *k, const uf_signature *g) {
    const int block = UF_CPU_MIXED_BLOCK;
    for (int i = 0; i < f->nin; i++) {
        const char *t = storage_type(key_in(k, i)); /* = the compute type: no float16 here */
        kiln_text_printf(b, "    %s kiln_f%d[%d];\n", t, i, block);
        kiln_text_printf(b, "    const %s *kiln_bi%d = kiln_i%d ? kiln_i%d + kiln_lo : kiln_f%d;\n", t, i, i,
                         i, i);
        kiln_text_printf(b, "    const long long kiln_adv%d = kiln_i%d ? %d : 0;\n", i, i, block);
        kiln_text_printf(b, "    if (!kiln_i%d)\n", i);
        kiln_text_printf(b,
                         "        for (int kiln_j = 0; kiln_j < %d; kiln_j++) kiln_f%d[kiln_j] = kiln_s%d;\n",
                         block, i, i);
    }
    for (int j = 0; j < f->nout; j++)
        kiln_text_printf(b, "    %s *kiln_bo%d = kiln_o%d + kiln_lo;\n", storage_type((kiln_dtype)k->out[j]),
                         j, j);
    kiln_text_printf(b, "    for (long long kiln_e = kiln_lo; kiln_e < kiln_hi; kiln_e += %d) {\n", block);
    kiln_text_printf(b, "        const long long kiln_m = kiln_hi - kiln_e < %d ? kiln_hi - kiln_e : %d;\n",
                     block, block);
    emit_ivdep(b);
    kiln_text_printf(b, "        for (long long kiln_j = 0; kiln_j < kiln_m; kiln_j++) ");
    emit_element(b, f, k, g, ACCESS_INDEX, "kiln_j", "kiln_b");
    kiln_text_printf(b, "        ");
    for (int i = 0; i < f->nin; i++) kiln_text_printf(b, "kiln_bi%d += kiln_adv%d; ", i, i);
    for (int j = 0; j < f->nout; j++) kiln_text_printf(b, "kiln_bo%d += %d; ", j, block);
    kiln_text_printf(b, "\n    }\n");
}

static void emit_cpu_kernel(kiln_text *b, const kiln_ufunc *f, const uf_key *k, const uf_signature *g,
                            const char *kname) {
    kiln_text_printf(b, "__global__ void %s(", kname);
    emit_params(b, f, k, g, "long long");
    kiln_text_printf(b, ") {\n");
    kiln_text_printf(b, "    const long long kiln_lo = (long long)blockIdx.x * kiln_chunk;\n");
    kiln_text_printf(
        b, "    const long long kiln_hi = kiln_n - kiln_lo < kiln_chunk ? kiln_n : kiln_lo + kiln_chunk;\n");
    if (k->mixed) {
        emit_cpu_mixed_loop(b, f, k, g);
    } else if (k->layout != UF_STRIDED) {
        emit_ivdep(b);
        kiln_text_printf(b, "    for (long long kiln_e = kiln_lo; kiln_e < kiln_hi; kiln_e++) ");
        emit_element(b, f, k, g, ACCESS_INDEX, "kiln_e", "kiln_");
    } else {
        int last = k->nd - 1;
        kiln_text_printf(b, "    for (long long kiln_e = kiln_lo; kiln_e < kiln_hi;) {\n");
        kiln_text_printf(b, "        long long kiln_rest = kiln_e / kiln_d%d;\n", last);
        kiln_text_printf(b, "        const long long kiln_j0 = kiln_e - kiln_rest * kiln_d%d;\n", last);
        kiln_text_printf(b,
                         "        const long long kiln_cnt = kiln_d%d - kiln_j0 < kiln_hi - kiln_e ? "
                         "kiln_d%d - kiln_j0 : kiln_hi - kiln_e;\n",
                         last, last);
        emit_unravel(b, f, k, "long long", "kiln_rest", last);
        /* the innermost dim's start */
        for (int j = 0; j < f->nout; j++)
            kiln_text_printf(b, "        kiln_offo%d += kiln_j0 * kiln_to%d_%d;\n", j, j, last);
        for (int i = 0; i < f->nin; i++)
            if (!key_scalar(k, i))
                kiln_text_printf(b, "        kiln_offi%d += kiln_j0 * kiln_ti%d_%d;\n", i, i, last);
        emit_bases(b, f, k);
        emit_ivdep(b);
        kiln_text_printf(b, "        for (long long kiln_j = 0; kiln_j < kiln_cnt; kiln_j++) {\n");
        /* per-operand offsets of lane j */
        for (int j = 0; j < f->nout; j++)
            kiln_text_printf(b, "            char *kiln_qo%d = kiln_po%d + kiln_j * kiln_to%d_%d;\n", j, j, j,
                             last);
        for (int i = 0; i < f->nin; i++)
            if (!key_scalar(k, i))
                kiln_text_printf(b,
                                 "            const char *kiln_qi%d = kiln_pi%d + kiln_j * kiln_ti%d_%d;\n",
                                 i, i, i, last);
        kiln_text_printf(b, "            ");
        emit_element(b, f, k, g, ACCESS_OFFSET, "0", "kiln_q");
        kiln_text_printf(b, "        }\n        kiln_e += kiln_cnt;\n    }\n");
    }
    kiln_text_printf(b, "}\n");
}

kiln_status uf_generate(const kiln_ufunc *f, const uf_key *keys, int nkeys, char **source,
                        char (*kernel_names)[UF_KERNEL_NAME_MAX]) {
    kiln_text b = {0};
    static const char *const layout_names[] = {"contiguous", "vector", "strided"};
    kiln_text_printf(&b, "#line 1 \"kiln-ufunc-%s.cu\"\n", f->name);
    kiln_text_printf(&b, "// kiln ufunc %s (%s), %s kernels\n", f->name, f->sig_list,
                     keys[0].backend == UF_CUDA ? "cuda" : "cpu");
    kiln_text_puts(&b, kiln_embedded_ufunc_common);
    if (keys[0].backend == UF_CPU) kiln_text_puts(&b, kiln_embedded_ufunc_cpu_math);
    unsigned char emitted[UF_MAX_SIGS] = {0};
    for (int v = 0; v < nkeys; v++)
        if (!emitted[keys[v].sig]) {
            emit_body(&b, f, &f->sigs[keys[v].sig], keys[v].sig, 1);
            emitted[keys[v].sig] = 1;
        }
    for (int v = 0; v < nkeys; v++) {
        const uf_key *key = &keys[v];
        const uf_signature *g = &f->sigs[key->sig];
        snprintf(kernel_names[v], UF_KERNEL_NAME_MAX, "kiln_uf_%s_%d", f->name, v);
        kiln_text_printf(&b, "// %s: signature %s, layout %s", kernel_names[v], g->text,
                         layout_names[key->layout]);
        if (key->layout == UF_STRIDED) kiln_text_printf(&b, " (%d dims)", key->nd);
        if (key->layout == UF_VECTOR) kiln_text_printf(&b, " (%d per access)", key->vec);
        if (key->mixed) kiln_text_printf(&b, " (mixed: an input whose pointer is NULL is its value)");
        kiln_text_printf(&b, ", %d-bit indices; operands:", key->idx32 ? 32 : 64);
        for (int j = 0; j < f->nout; j++)
            kiln_text_printf(&b, " out%d %s", j, kiln_dtype_code((kiln_dtype)key->out[j]));
        for (int i = 0; i < f->nin; i++)
            kiln_text_printf(&b, " %s %s%s", f->in_names[i], kiln_dtype_code(key_in(key, i)),
                             key_scalar(key, i) ? " scalar"
                             : key->mixed       ? " array or scalar"
                                                : "");
        kiln_text_printf(&b, "\n");
        if (key->backend == UF_CUDA)
            emit_gpu_kernel(&b, f, key, g, kernel_names[v]);
        else
            emit_cpu_kernel(&b, f, key, g, kernel_names[v]);
    }
    /* The user's code last: see emit_body. */
    if (f->preamble && *f->preamble) {
        kiln_text_printf(&b, "#line 1 \"%s.preamble\"\n", f->name);
        kiln_text_puts(&b, f->preamble);
        kiln_text_printf(&b, "\n#line %d \"kiln-ufunc-%s.cu\"\n", count_lines(&b) + 1, f->name);
    }
    for (int sig = 0; sig < f->nsig; sig++)
        if (emitted[sig]) emit_body(&b, f, &f->sigs[sig], sig, 0);
    char *text = kiln_text_take(&b);
    if (!text)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory generating ufunc %s", f->name);
    *source = text;
    return KILN_OK;
}
