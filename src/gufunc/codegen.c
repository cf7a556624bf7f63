/* codegen.c: the CUDA C source of a gufunc kernel for one plan.
 *
 * The module is: kiln's view prelude (gufunc_views.cuh), the user's preamble
 * (#line "<name>.preamble"), the user's body as an inlined __device__
 * function taking one view or scalar per argument (#line "<name>", so errors
 * carry the body's own line numbers), then one __global__ kernel whose shape
 * depends on the strategy (plan.c). Its parameters are listed once, by
 * gu_kernel_params, which both the generator and the launcher use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/text.h"
#include "gufunc/gufunc.h"

extern const char kiln_embedded_gufunc_views[];

static int count_lines(const kiln_text *t) {
    int n = 1;
    for (size_t i = 0; i < t->length; i++) n += t->data[i] == '\n';
    return n;
}

/* "#line <next> "<file>"" so that later errors point into generated code. */
static void resync(kiln_text *t, const kiln_gufunc *f) {
    kiln_text_printf(t, "\n");
    int line = count_lines(t) + 1;
    kiln_text_printf(t, "#line %d \"kiln-gufunc-%s.cu\"\n", line, f->name);
}

/* ---------------------------------------------------------------- expressions */

static int nops_of(const kiln_gufunc *f) { return f->layout.nin + f->layout.nout; }

static void dim_expr(const kiln_gufunc *f, const gu_plan *p, int d, char *buf, size_t cap) {
    if (f->layout.dim_fixed[d] >= 0)
        snprintf(buf, cap, "%lldLL", (long long)f->layout.dim_fixed[d]);
    else if (p->key.baked)
        snprintf(buf, cap, "%lldLL", (long long)p->dims[d]);
    else
        snprintf(buf, cap, "d%d", d);
}

/* Element stride of core dim j of operand k. */
static void core_stride_expr(const kiln_gufunc *f, const gu_plan *p, int k, int j, char *buf, size_t cap) {
    const gu_layout *l = &f->layout;
    if (p->key.kind[k] == GU_OP_ARRAY) {
        snprintf(buf, cap, "cs%d_%d", k, j);
        return;
    }
    if (p->key.baked || j == l->core_nd[k] - 1) {
        int64_t s = 1;
        for (int i = j + 1; i < l->core_nd[k]; i++) {
            int d = l->core_dim[k][i];
            s *= l->dim_fixed[d] >= 0 ? l->dim_fixed[d] : p->dims[d];
        }
        snprintf(buf, cap, "%lldLL", (long long)s);
        return;
    }
    size_t n = (size_t)snprintf(buf, cap, "(1LL");
    for (int i = j + 1; i < l->core_nd[k]; i++) {
        char e[32];
        dim_expr(f, p, l->core_dim[k][i], e, sizeof e);
        n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "*%s", e);
    }
    snprintf(buf + n, n < cap ? cap - n : 0, ")");
}

/* Elements of one row (all core dims) of operand k. */
static void row_elems_expr(const kiln_gufunc *f, const gu_plan *p, int k, char *buf, size_t cap) {
    const gu_layout *l = &f->layout;
    size_t n = (size_t)snprintf(buf, cap, "(1LL");
    for (int i = 0; i < l->core_nd[k]; i++) {
        char e[32];
        dim_expr(f, p, l->core_dim[k][i], e, sizeof e);
        n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "*%s", e);
    }
    snprintf(buf + n, n < cap ? cap - n : 0, ")");
}

static int64_t row_elems(const kiln_gufunc *f, const gu_plan *p, int k) {
    int64_t n = 1;
    for (int i = 0; i < f->layout.core_nd[k]; i++) n *= p->dims[f->layout.core_dim[k][i]];
    return n;
}

/* Loop stride (elements) of operand k along loop dim d. */
static void loop_stride_expr(const kiln_gufunc *f, const gu_plan *p, int k, int d, char *buf, size_t cap) {
    if (p->key.bcast[k])
        snprintf(buf, cap, "0LL");
    else if (p->key.kind[k] == GU_OP_PACKED && d == p->nloop - 1)
        row_elems_expr(f, p, k, buf, cap);
    else
        snprintf(buf, cap, "ls%d_%d", k, d);
}

/* ---------------------------------------------------------------- parameters */

static kiln_value compute_value(const kiln_value *v) { return *v; }

int gu_kernel_params(const kiln_gufunc *f, const gu_plan *p, gu_param *out, int cap) {
    const gu_layout *l = &f->layout;
    int n = 0, nops = nops_of(f);
#define GU_ADD(nm_fmt, a, b, type_text, val)                                                                 \
    do {                                                                                                     \
        if (n == cap) return -1;                                                                             \
        snprintf(out[n].name, sizeof out[n].name, nm_fmt, a, b);                                             \
        snprintf(out[n].type, sizeof out[n].type, "%s", type_text);                                          \
        out[n].value = (val);                                                                                \
        n++;                                                                                                 \
    } while (0)
    for (int k = 0; k < nops; k++) {
        kiln_dtype sd = (kiln_dtype)p->key.dtype[k];
        if (p->key.kind[k] == GU_OP_VALUE) {
            GU_ADD("v%d%.0d", k, 0, gu_compute_type(sd), compute_value(&p->value[k]));
        } else {
            char type[48];
            snprintf(type, sizeof type, "%s *", gu_storage_type(sd));
            GU_ADD("p%d%.0d", k, 0, type, kiln_ptr(p->data[k], KILN_DTYPE_COUNT));
            /* any-layout: the value read where the pointer is NULL */
            if (p->key.kind[k] == GU_OP_EITHER)
                GU_ADD("v%d%.0d", k, 0, gu_compute_type(sd), compute_value(&p->value[k]));
        }
    }
    for (int d = 0; d < p->nloop; d++) GU_ADD("n%d%.0d", d, 0, "long long", kiln_i64(p->loop_shape[d]));
    GU_ADD("tot%.0d%.0d", 0, 0, "long long", kiln_i64(p->total));
    for (int k = 0; k < nops; k++) {
        if (p->key.kind[k] == GU_OP_VALUE || p->key.bcast[k]) continue;
        for (int d = 0; d < p->nloop; d++) {
            if (p->key.kind[k] == GU_OP_PACKED && d == p->nloop - 1) continue;
            GU_ADD("ls%d_%d", k, d, "long long", kiln_i64(p->loop_stride[k][d]));
        }
    }
    for (int k = 0; k < nops; k++)
        if (p->key.kind[k] == GU_OP_ARRAY)
            for (int j = 0; j < l->core_nd[k]; j++)
                GU_ADD("cs%d_%d", k, j, "long long", kiln_i64(p->core_stride[k][j]));
    if (!p->key.baked)
        for (int d = 0; d < l->ndims; d++)
            if (l->dim_fixed[d] < 0) GU_ADD("d%d%.0d", d, 0, "long long", kiln_i64(p->dims[d]));
    if (p->key.strategy == GU_CPU_LOOP) GU_ADD("chunk%.0d%.0d", 0, 0, "long long", kiln_i64(p->chunk));
#undef GU_ADD
    return n;
}

/* ---------------------------------------------------------------- body */

static void body_param_type(const kiln_gufunc *f, const gu_plan *p, int k, char *buf, size_t cap) {
    const gu_layout *l = &f->layout;
    kiln_dtype sd = (kiln_dtype)p->key.dtype[k];
    kiln_dtype td = f->sigs[p->key.sig].dtype[k];
    int input = k < l->nin;
    if (l->core_nd[k] == 0) {
        if (input)
            snprintf(buf, cap, "%s", gu_compute_type(td));
        else
            snprintf(buf, cap, "kiln_gu_access<%s, %s>::kiln_ref", gu_storage_type(sd), gu_compute_type(td));
        return;
    }
    snprintf(buf, cap, "kiln_gu_view<%s%s, %s, %d>", input ? "const " : "", gu_storage_type(sd),
             gu_compute_type(td), l->core_nd[k]);
}

static void emit_preamble(kiln_text *t, const kiln_gufunc *f) {
    if (f->preamble && f->preamble[0]) {
        kiln_text_printf(t, "#line 1 \"%s.preamble\"\n%s", f->name, f->preamble);
        resync(t, f);
    }
}

/* The user's body for the plan's signature (kiln_gu_body_<sig>: a module
 * may hold several): declared (decl_only) before the kernels and defined
 * after them, behind the preamble, so that nothing kiln writes comes after
 * the user's code, where a user's macro (`#define t 0.5`, `#define end 0`)
 * could reach it. */
static void emit_body(kiln_text *t, const kiln_gufunc *f, const gu_plan *p, int decl_only) {
    int nops = nops_of(f);
    kiln_text_printf(t, "static __device__ __forceinline__ void kiln_gu_body_%d(", p->key.sig);
    for (int k = 0; k < nops; k++) {
        char type[160];
        body_param_type(f, p, k, type, sizeof type);
        kiln_text_printf(t, "%s%s %s", k ? ", " : "", type, decl_only ? "" : f->names[k]);
    }
    if (decl_only) {
        kiln_text_printf(t, ");\n");
        return;
    }
    kiln_text_printf(t, ") {\n#line 1 \"%s\"\n%s", f->name, f->body);
    resync(t, f);
    kiln_text_printf(t, "}\n");
}

/* The body's argument for operand k whose row starts at `row` (an S* expression). */
static void body_arg(kiln_text *t, const kiln_gufunc *f, const gu_plan *p, int k, const char *row) {
    const gu_layout *l = &f->layout;
    kiln_dtype sd = (kiln_dtype)p->key.dtype[k];
    kiln_dtype td = f->sigs[p->key.sig].dtype[k];
    int input = k < l->nin;
    if (p->key.kind[k] == GU_OP_VALUE) {
        kiln_text_printf(t, "v%d", k);
        return;
    }
    if (l->core_nd[k] == 0) {
        if (input)
            kiln_text_printf(t, "kiln_gu_get<%s>(%s)", gu_compute_type(td), row);
        else
            kiln_text_printf(t, "kiln_gu_access<%s, %s>::at(%s)", gu_storage_type(sd), gu_compute_type(td),
                             row);
        return;
    }
    char type[160], e[64];
    body_param_type(f, p, k, type, sizeof type);
    dim_expr(f, p, l->core_dim[k][0], e, sizeof e);
    kiln_text_printf(t, "%s{%s, %s, {", type, row, e);
    for (int j = 0; j < l->core_nd[k]; j++) {
        dim_expr(f, p, l->core_dim[k][j], e, sizeof e);
        kiln_text_printf(t, "%s%s", j ? ", " : "", e);
    }
    kiln_text_printf(t, "}, {");
    for (int j = 0; j < l->core_nd[k]; j++) {
        char s[160];
        core_stride_expr(f, p, k, j, s, sizeof s);
        kiln_text_printf(t, "%s%s", j ? ", " : "", s);
    }
    kiln_text_printf(t, "}}");
}

static void emit_call(kiln_text *t, const kiln_gufunc *f, const gu_plan *p, char rows[][96]) {
    kiln_text_printf(t, "kiln_gu_body_%d(", p->key.sig);
    for (int k = 0; k < nops_of(f); k++) {
        if (k) kiln_text_printf(t, ",\n                     ");
        body_arg(t, f, p, k, rows[k]);
    }
    kiln_text_printf(t, ");\n");
}

/* ---------------------------------------------------------------- kernels */

static void emit_signature(kiln_text *t, const kiln_gufunc *f, const gu_plan *p, const char *kname,
                           const char *bounds) {
    gu_param params[GU_MAX_PARAMS];
    int n = gu_kernel_params(f, p, params, GU_MAX_PARAMS);
    kiln_text_printf(t, "__global__ void %s%s(", bounds, kname);
    for (int i = 0; i < n; i++)
        kiln_text_printf(t, "%s%s%s%s", i ? ",\n    " : "", params[i].type,
                         params[i].type[strlen(params[i].type) - 1] == '*' ? "" : " ", params[i].name);
    kiln_text_printf(t, ") {\n");
}

/* Offsets of each array operand for loop indices i0..i{L-1} (GPU generic). */
static void emit_generic_gpu(kiln_text *t, const kiln_gufunc *f, const gu_plan *p, const char *kname) {
    int L = p->nloop, nops = nops_of(f);
    emit_signature(t, f, p, kname, "__launch_bounds__(256) ");
    kiln_text_printf(t, "    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < tot;\n"
                        "         t += (long long)gridDim.x * blockDim.x) {\n");
    if (L == 1)
        kiln_text_printf(t, "        long long i0 = t;\n");
    else {
        kiln_text_printf(t, "        long long r = t;\n");
        for (int d = L - 1; d >= 1; d--)
            kiln_text_printf(t, "        long long i%d = r %% n%d; r /= n%d;\n", d, d, d);
        kiln_text_printf(t, "        long long i0 = r;\n");
    }
    char rows[GU_MAX_OPS][96];
    for (int k = 0; k < nops; k++) {
        if (p->key.kind[k] == GU_OP_VALUE) continue;
        if (p->key.bcast[k]) {
            snprintf(rows[k], sizeof rows[k], "p%d", k);
            continue;
        }
        kiln_text_printf(t, "        long long o%d = 0", k);
        for (int d = 0; d < L; d++) {
            char s[160];
            loop_stride_expr(f, p, k, d, s, sizeof s);
            kiln_text_printf(t, " + i%d * %s", d, s);
        }
        kiln_text_printf(t, ";\n");
        snprintf(rows[k], sizeof rows[k], "p%d + o%d", k, k);
    }
    kiln_text_printf(t, "        ");
    emit_call(t, f, p, rows);
    kiln_text_printf(t, "    }\n}\n");
}

/* Any-layout kernels: a "()" input given as a value is read through a
 * pointer too, to a copy of the value in the kernel's own storage
 * (NULL p<k>: the value, with loop strides 0). A branch per element instead
 * had NVVM duplicate the whole loop nest for each side (loop unswitching):
 * ~40 ms more NVRTC time per such input. */
static void emit_either_bases(kiln_text *t, const kiln_gufunc *f, const gu_plan *p) {
    for (int k = 0; k < p->nops; k++) {
        if (p->key.kind[k] != GU_OP_EITHER) continue;
        const char *st = gu_storage_type((kiln_dtype)p->key.dtype[k]);
        const char *ct = gu_compute_type(f->sigs[p->key.sig].dtype[k]);
        kiln_text_printf(t,
                         "    %s kiln_v%d[1];\n    kiln_gu_access<%s, %s>::at(kiln_v%d) = v%d;\n"
                         "    %s *e%d = p%d ? p%d : kiln_v%d;\n",
                         st, k, st, ct, k, k, st, k, k, k, k);
    }
}

/* The pointer operand k's rows start from: its parameter, or for a "()"
 * input of an any-layout kernel the one emit_either_bases chose. */
static char base_letter(const gu_plan *p, int k) { return p->key.kind[k] == GU_OP_EITHER ? 'e' : 'p'; }

/* GPU any-layout kernel: loop dims 0 and 1 over the grid's z and y (and the
 * block's y), the innermost over x, each a grid-stride loop: no divisions,
 * which in 64 bits are a long subroutine NVRTC compiles per kernel. */
static void emit_any_gpu(kiln_text *t, const kiln_gufunc *f, const gu_plan *p, const char *kname) {
    int nops = nops_of(f);
    emit_signature(t, f, p, kname, "__launch_bounds__(256) ");
    emit_either_bases(t, f, p);
    kiln_text_printf(t, "    for (long long i0 = blockIdx.z; i0 < n0; i0 += gridDim.z)\n"
                        "    for (long long i1 = (long long)blockIdx.y * blockDim.y + threadIdx.y; i1 < n1;\n"
                        "         i1 += (long long)gridDim.y * blockDim.y)\n"
                        "    for (long long i2 = (long long)blockIdx.x * blockDim.x + threadIdx.x; i2 < n2;\n"
                        "         i2 += (long long)gridDim.x * blockDim.x) {\n");
    char rows[GU_MAX_OPS][96];
    for (int k = 0; k < nops; k++) {
        if (p->key.kind[k] == GU_OP_VALUE) continue;
        kiln_text_printf(t, "        long long o%d = i0 * ls%d_0 + i1 * ls%d_1 + i2 * ls%d_2;\n", k, k, k, k);
        snprintf(rows[k], sizeof rows[k], "%c%d + o%d", base_letter(p, k), k, k);
    }
    kiln_text_printf(t, "        ");
    emit_call(t, f, p, rows);
    kiln_text_printf(t, "    }\n}\n");
}

/* CPU: block b handles loop indices [b*chunk, (b+1)*chunk) as runs along the
 * innermost loop dim: one division per run, then a plain loop. */
static void emit_cpu_loop(kiln_text *t, const kiln_gufunc *f, const gu_plan *p, const char *kname) {
    int L = p->nloop, nops = nops_of(f);
    emit_signature(t, f, p, kname, "");
    emit_either_bases(t, f, p);
    kiln_text_printf(t,
                     "    long long t = (long long)blockIdx.x * chunk, end = t + chunk;\n"
                     "    if (end > tot) end = tot;\n"
                     "    while (t < end) {\n"
                     "        long long r = t / n%d, j = t - r * n%d;\n",
                     L - 1, L - 1);
    for (int d = L - 2; d >= 1; d--)
        kiln_text_printf(t, "        long long i%d = r %% n%d; r /= n%d;\n", d, d, d);
    if (L >= 2)
        kiln_text_printf(t, "        long long i0 = r;\n");
    else
        kiln_text_printf(t, "        (void)r;\n");
    kiln_text_printf(t, "        long long run = n%d - j;\n        if (run > end - t) run = end - t;\n",
                     L - 1);
    char rows[GU_MAX_OPS][96];
    char inner[GU_MAX_OPS][160];
    for (int k = 0; k < nops; k++) {
        if (p->key.kind[k] == GU_OP_VALUE) continue;
        kiln_dtype sd = (kiln_dtype)p->key.dtype[k];
        if (p->key.bcast[k]) {
            snprintf(rows[k], sizeof rows[k], "p%d", k);
            continue;
        }
        loop_stride_expr(f, p, k, L - 1, inner[k], sizeof inner[k]);
        kiln_text_printf(t, "        %s *q%d = %c%d + j * %s", gu_storage_type(sd), k, base_letter(p, k), k,
                         inner[k]);
        for (int d = 0; d < L - 1; d++) {
            char s[160];
            loop_stride_expr(f, p, k, d, s, sizeof s);
            kiln_text_printf(t, " + i%d * %s", d, s);
        }
        kiln_text_printf(t, ";\n");
        snprintf(rows[k], sizeof rows[k], "q%d + u * ls_in%d", k, k);
        kiln_text_printf(t, "        const long long ls_in%d = %s;\n", k, inner[k]);
    }
    kiln_text_printf(t, "        for (long long u = 0; u < run; u++) {\n            ");
    emit_call(t, f, p, rows);
    kiln_text_printf(t, "        }\n        t += run;\n    }\n}\n");
}

static const char *vec_type(int w) {
    switch (w) {
    case 16: return "uint4";
    case 8: return "uint2";
    case 4: return "unsigned int";
    case 2: return "unsigned short";
    default: return "unsigned char";
    }
}

/* Which operand's staging holds operand k (itself, or the input it aliases). */
static int holder(const gu_plan *p, int k) { return p->key.alias[k]; }

static int is_loaded(const gu_plan *p, int k) { return k < p->key.nin || p->key.load[k]; }

/* GPU, small packed rows: each thread copies its rows into registers with
 * vector accesses, runs the body there, and writes its output rows back. */
static void emit_rows_reg(kiln_text *t, const kiln_gufunc *f, const gu_plan *p, const char *kname) {
    int nops = nops_of(f);
    emit_signature(t, f, p, kname, "__launch_bounds__(256) ");
    kiln_text_printf(t, "    const long long t = (long long)blockIdx.x * 256 + threadIdx.x;\n"
                        "    if (t >= tot) return;\n");
    char rows[GU_MAX_OPS][96];
    for (int k = 0; k < nops; k++) {
        if (p->key.kind[k] == GU_OP_VALUE) continue;
        if (p->key.bcast[k]) {
            snprintf(rows[k], sizeof rows[k], "p%d", k);
            continue;
        }
        int h = holder(p, k);
        snprintf(rows[k], sizeof rows[k], "r%d.e", h);
        if (h != k) continue;
        kiln_dtype sd = (kiln_dtype)p->key.dtype[k];
        int64_t ne = row_elems(f, p, k), bytes = ne * (int64_t)kiln_dtype_size(sd);
        int w = p->key.vecw[k];
        kiln_text_printf(t, "    struct __align__(%d) { %s e[%lld]; } r%d;\n", w, gu_storage_type(sd),
                         (long long)ne, k);
        int load = is_loaded(p, k);
        for (int o = 0; o < nops && !load; o++)
            if (o != k && holder(p, o) == k && is_loaded(p, o)) load = 1;
        if (load)
            kiln_text_printf(
                t,
                "    {\n        const %s *s = (const %s *)(p%d + t * %lldLL);\n"
                "#pragma unroll\n        for (int j = 0; j < %lld; j++) ((%s *)r%d.e)[j] = s[j];\n    }\n",
                vec_type(w), vec_type(w), k, (long long)ne, (long long)(bytes / w), vec_type(w), k);
    }
    kiln_text_printf(t, "    ");
    emit_call(t, f, p, rows);
    for (int k = p->key.nin; k < nops; k++) {
        if (p->key.kind[k] == GU_OP_VALUE || p->key.bcast[k]) continue;
        int h = holder(p, k);
        kiln_dtype sd = (kiln_dtype)p->key.dtype[k];
        int64_t ne = row_elems(f, p, k), bytes = ne * (int64_t)kiln_dtype_size(sd);
        int w = p->key.vecw[h];
        kiln_text_printf(
            t,
            "    {\n        %s *d = (%s *)(p%d + t * %lldLL);\n"
            "#pragma unroll\n        for (int j = 0; j < %lld; j++) d[j] = ((const %s *)r%d.e)[j];\n    }\n",
            vec_type(w), vec_type(w), k, (long long)ne, (long long)(bytes / w), vec_type(w), h);
    }
    kiln_text_printf(t, "}\n");
}

/* GPU, larger packed rows: the block's tile of rows goes through shared
 * memory with coalesced word copies; a thread runs the body on its row there. */
static void emit_rows_smem(kiln_text *t, const kiln_gufunc *f, const gu_plan *p, const char *kname) {
    int nops = nops_of(f), R = p->key.rows_per_block;
    char bounds[48];
    snprintf(bounds, sizeof bounds, "__launch_bounds__(%d) ", R);
    emit_signature(t, f, p, kname, bounds);
    kiln_text_printf(t,
                     "    extern __shared__ __align__(16) unsigned char kiln_gu_smem[];\n"
                     "    const long long r0 = (long long)blockIdx.x * %d;\n"
                     "    const int rows = tot - r0 < %d ? (int)(tot - r0) : %d;\n",
                     R, R, R);
    char rows[GU_MAX_OPS][96];
    for (int k = 0; k < nops; k++) {
        if (p->key.kind[k] == GU_OP_VALUE) continue;
        if (p->key.bcast[k]) {
            snprintf(rows[k], sizeof rows[k], "p%d", k);
            continue;
        }
        int h = holder(p, k);
        kiln_dtype sd = (kiln_dtype)p->key.dtype[h];
        int64_t bytes = row_elems(f, p, h) * (int64_t)kiln_dtype_size(sd);
        snprintf(rows[k], sizeof rows[k], "(%s *)(sm%d + threadIdx.x * %lld)", gu_storage_type(sd), h,
                 (long long)bytes);
        if (h != k) continue;
        kiln_text_printf(t, "    unsigned char *sm%d = kiln_gu_smem + %zu;\n", k, p->smem_offset[k]);
        int load = is_loaded(p, k);
        for (int o = 0; o < nops && !load; o++)
            if (o != k && holder(p, o) == k && is_loaded(p, o)) load = 1;
        if (load)
            kiln_text_printf(
                t,
                "    kiln_gu_copy_tile<%d>(sm%d, (const unsigned char *)(p%d + r0 * %lldLL), rows * %lld);\n",
                p->key.vecw[k], k, k, (long long)row_elems(f, p, k), (long long)bytes);
    }
    kiln_text_printf(t, "    __syncthreads();\n    if ((int)threadIdx.x < rows) {\n        ");
    emit_call(t, f, p, rows);
    kiln_text_printf(t, "    }\n    __syncthreads();\n");
    for (int k = p->key.nin; k < nops; k++) {
        if (p->key.kind[k] == GU_OP_VALUE || p->key.bcast[k]) continue;
        int h = holder(p, k);
        int64_t bytes = row_elems(f, p, k) * (int64_t)kiln_dtype_size((kiln_dtype)p->key.dtype[k]);
        kiln_text_printf(
            t, "    kiln_gu_copy_tile<%d>((unsigned char *)(p%d + r0 * %lldLL), sm%d, rows * %lld);\n",
            p->key.vecw[h], k, (long long)row_elems(f, p, k), h, (long long)bytes);
    }
    kiln_text_printf(t, "}\n");
}

static void kernel_name_of(const kiln_gufunc *f, const gu_plan *p, char *buf, size_t cap) {
    if (p->key.any) /* one per signature in the module kiln_guvectorize builds */
        snprintf(buf, cap, "kiln_gu_%s_%s_any%d", f->name, gu_strategy_name(p->key.strategy), p->key.sig);
    else
        snprintf(buf, cap, "kiln_gu_%s_%s", f->name, gu_strategy_name(p->key.strategy));
}

char *gu_generate_group(const kiln_gufunc *f, const gu_plan *plans, int nplans, char (*names)[128]) {
    kiln_text t = {0};
    for (int i = 0; i < nplans; i++) {
        const gu_plan *p = &plans[i];
        kernel_name_of(f, p, names[i], sizeof names[i]);
        kiln_text_printf(&t, "// kiln guvectorize \"%s\": layout %s, types %s, strategy %s%s\n", f->name,
                         f->layout.text, f->sigs[p->key.sig].text, gu_strategy_name(p->key.strategy),
                         p->key.any ? ", any layout" : "");
    }
    kiln_text_puts(&t, kiln_embedded_gufunc_views);
    resync(&t, f);
    for (int i = 0; i < nplans; i++) emit_body(&t, f, &plans[i], 1);
    for (int i = 0; i < nplans; i++) {
        const gu_plan *p = &plans[i];
        switch (p->key.strategy) {
        case GU_CPU_LOOP: emit_cpu_loop(&t, f, p, names[i]); break;
        case GU_GPU_ROWS_REG: emit_rows_reg(&t, f, p, names[i]); break;
        case GU_GPU_ROWS_SMEM: emit_rows_smem(&t, f, p, names[i]); break;
        default:
            if (p->key.any)
                emit_any_gpu(&t, f, p, names[i]);
            else
                emit_generic_gpu(&t, f, p, names[i]);
            break;
        }
    }
    emit_preamble(&t, f);
    for (int i = 0; i < nplans; i++) emit_body(&t, f, &plans[i], 0);
    return kiln_text_take(&t);
}

char *gu_generate(const kiln_gufunc *f, const gu_plan *p, char *kernel_name, size_t cap) {
    char name[1][128];
    char *src = gu_generate_group(f, p, 1, name);
    snprintf(kernel_name, cap, "%s", name[0]);
    return src;
}
