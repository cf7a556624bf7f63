/* codegen.c: the CUDA C module of one reduction (op, plan).
 *
 * The module is: kiln's ufunc helpers (float16, safe casts) and
 * reduce_common.cuh, then the operator, the same text on both backends
 * (kiln_rd_identity/map/reduce/post, the user's snippets under their own
 * #line names), then the loops, which differ:
 *   CUDA RD_INNER/GENERIC  a group of threads (a warp, or a block of 256)
 *                          per output: per-thread accumulation with 16-byte
 *                          loads where aligned, warp shuffles, one shared
 *                          memory step; an output's elements may be split
 *                          over several blocks (partials, then a finish
 *                          kernel in a fixed order)
 *   CUDA RD_COLUMN         a thread per output along the contiguous kept dim
 *                          (coalesced), accumulating down the reduced dims,
 *                          rows optionally split over grid.y
 *   CPU  RD_INNER/GENERIC  a block per run of outputs (or per piece of one
 *                          output): NumPy's pairwise scheme (8 lanes over
 *                          blocks of 128, blocks merged as a binary counter)
 *   CPU  RD_COLUMN         a block per tile of 32 outputs: the same pairwise
 *                          scheme with the 32 lanes vectorised across outputs
 * Parameters are listed once (rd_params) for the text and the launch. The
 * CPU loops are in codegen_cpu.c. */
#include "reduce/codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/text.h"
#include "reduce/rd_provider.h"

extern const char kiln_embedded_ufunc_common[];
extern const char kiln_embedded_reduce_common[];

const char *rd_storage_type(kiln_dtype t) {
    return kiln_dtype_is_half(t) ? "uint16_t" : kiln_dtype_c_type(t);
}
const char *rd_compute_type(kiln_dtype t) { return kiln_dtype_is_half(t) ? "float" : kiln_dtype_c_type(t); }

void rd_load_expr(char *out, size_t cap, kiln_dtype have, kiln_dtype want, const char *src) {
    char val[256];
    if (kiln_dtype_is_half(have))
        snprintf(val, sizeof val, "%s(%s)", have == KILN_BFLOAT16 ? "kiln_uf_bf2f" : "kiln_uf_h2f", src);
    else
        snprintf(val, sizeof val, "%s", src);
    if (strcmp(rd_compute_type(have), rd_compute_type(want)) == 0)
        snprintf(out, cap, "%s", val);
    else
        snprintf(out, cap, "kiln_uf_cv<%s>::go(%s)", rd_compute_type(want), val);
}

void rd_store_expr(char *out, size_t cap, kiln_dtype have, kiln_dtype want, const char *src) {
    char val[256];
    if (strcmp(rd_compute_type(have), rd_compute_type(want)) == 0)
        snprintf(val, sizeof val, "%s", src);
    else
        snprintf(val, sizeof val, "kiln_uf_cv<%s>::go(%s)", rd_compute_type(want), src);
    if (kiln_dtype_is_half(want))
        snprintf(out, cap, "%s(%s)", want == KILN_BFLOAT16 ? "kiln_uf_f2bf" : "kiln_uf_f2h", val);
    else
        snprintf(out, cap, "%s", val);
}

static int count_lines(const kiln_text *t) {
    int n = 1;
    for (size_t i = 0; i < t->length; i++) n += t->data[i] == '\n';
    return n;
}

static void resync(kiln_text *t, const rd_op *op) {
    kiln_text_printf(t, "\n#line %d \"kiln-reduce-%s.cu\"\n", count_lines(t) + 1, op->name);
}

/* A snippet under its own file name (user operators) so errors count from
 * its first line. */
static void snippet(kiln_text *t, const rd_op *op, const char *part, const char *text) {
    if (op->user) kiln_text_printf(t, "\n#line 1 \"%s.%s\"\n", op->name, part);
    kiln_text_printf(t, "%s", text);
    if (op->user)
        resync(t, op);
    else
        kiln_text_printf(t, "\n");
}

static const char *acc_type(const rd_op *op, const rd_plan *p) {
    return p->prov->wide_acc && op->gpu_acc_f64 ? "double" : op->acc_type;
}

/* ---------------------------------------------------------------- parameters */

static int rd_params(const rd_op *op, const rd_plan *p, void *out, void *part, rd_param *pp) {
    int n = 0;
#define ADD(type_, val_, ...)                                                                                \
    do {                                                                                                     \
        if (n == RD_MAX_PARAMS) return -1;                                                                   \
        snprintf(pp[n].name, sizeof pp[n].name, __VA_ARGS__);                                                \
        snprintf(pp[n].type, sizeof pp[n].type, "%s", type_);                                                \
        pp[n].value = (val_);                                                                                \
        n++;                                                                                                 \
    } while (0)
    char type[64];
    snprintf(type, sizeof type, "%s *", rd_storage_type(p->out_store));
    ADD(type, kiln_ptr(out, KILN_DTYPE_COUNT), "kiln_out");
    ADD("kiln_rd_acc *", kiln_ptr(part, KILN_DTYPE_COUNT), "kiln_part");
    for (int i = 0; i < op->nin; i++) {
        if (p->scalar[i]) {
            ADD(rd_compute_type(op->in_dtype[i]), p->value[i], "kiln_v%d", i);
        } else {
            snprintf(type, sizeof type, "const %s *", rd_storage_type(p->store[i]));
            ADD(type, kiln_ptr(p->data[i], KILN_DTYPE_COUNT), "kiln_in%d", i);
        }
    }
    ADD("long long", kiln_i64(p->O), "kiln_O");
    ADD("long long", kiln_i64(p->R), "kiln_R");
    ADD("long long", kiln_i64(p->splits), "kiln_S");
    ADD("long long", kiln_i64(p->rchunk), "kiln_rchunk");
    ADD("long long", kiln_i64(p->per_task), "kiln_per_task");
    for (int d = 0; d < p->ndo; d++) ADD("long long", kiln_i64(p->oshape[d]), "kiln_os%d", d);
    for (int d = 0; d < p->ndr; d++) ADD("long long", kiln_i64(p->rshape[d]), "kiln_rs%d", d);
    for (int i = 0; i < op->nin; i++) {
        if (p->scalar[i]) continue;
        for (int d = 0; d < p->ndo; d++) ADD("long long", kiln_i64(p->ostr[i][d]), "kiln_ot%d_%d", i, d);
        for (int d = 0; d < p->ndr; d++) ADD("long long", kiln_i64(p->rstr[i][d]), "kiln_rt%d_%d", i, d);
    }
    if (op->uses_index)
        for (int d = 0; d < p->ndr; d++) ADD("long long", kiln_i64(p->rstr[RD_IDX][d]), "kiln_iw%d", d);
#undef ADD
    return n;
}

int rd_main_args(const rd_op *op, const rd_plan *p, void *out, void *part, kiln_value *args, int cap) {
    rd_param pp[RD_MAX_PARAMS];
    int n = rd_params(op, p, out, part, pp);
    if (n < 0 || n > cap) return -1;
    for (int i = 0; i < n; i++) args[i] = pp[i].value;
    return n;
}

int rd_finish_args(const rd_plan *p, void *out, void *part, kiln_value *args, int cap) {
    if (cap < 6) return -1;
    args[0] = kiln_ptr(out, KILN_DTYPE_COUNT);
    args[1] = kiln_ptr(part, KILN_DTYPE_COUNT);
    args[2] = kiln_i64(p->O);
    args[3] = kiln_i64(p->splits);
    args[4] = kiln_i64(p->R);
    args[5] = kiln_i64(p->prov->finish_per(p));
    return 6;
}

void rd_emit_param_list(kiln_text *t, const rd_param *pp, int n) {
    for (int i = 0; i < n; i++) kiln_text_printf(t, "%s%s %s", i ? ", " : "", pp[i].type, pp[i].name);
}

/* ---------------------------------------------------------------- operator */

static void emit_operator(kiln_text *t, const rd_op *op, const rd_plan *p) {
    if (op->uses_ddof) kiln_text_printf(t, "#define KILN_RD_DDOF %d\n", op->ddof);
    if (op->preamble && *op->preamble) snippet(t, op, "preamble", op->preamble);
    kiln_text_printf(t, "typedef %s kiln_rd_acc;\n", acc_type(op, p));
    kiln_text_printf(t, "KILN_RD_FN kiln_rd_acc kiln_rd_identity() {\n    return ");
    snippet(t, op, "identity", op->identity ? op->identity : "kiln_rd_acc()");
    kiln_text_printf(t, "    ;\n}\nKILN_RD_FN kiln_rd_acc kiln_rd_map(");
    for (int i = 0; i < op->nin; i++)
        kiln_text_printf(t, "%s %s, ", rd_compute_type(op->in_dtype[i]), op->in_name[i]);
    kiln_text_printf(t, "long long _i) {\n    (void)_i;\n    return ");
    snippet(t, op, "map", op->map);
    kiln_text_printf(
        t, "    ;\n}\nKILN_RD_FN kiln_rd_acc kiln_rd_reduce(kiln_rd_acc a, kiln_rd_acc b) {\n    return ");
    snippet(t, op, "reduce", op->reduce);
    /* the next element of a loop over one reduced dim (indices increasing) */
    kiln_text_printf(t, "    ;\n}\nKILN_RD_FN kiln_rd_acc kiln_rd_step(kiln_rd_acc a, ");
    for (int i = 0; i < op->nin; i++)
        kiln_text_printf(t, "%s %s, ", rd_compute_type(op->in_dtype[i]), op->in_name[i]);
    kiln_text_printf(t, "long long _i) {\n    return ");
    if (op->step) {
        kiln_text_printf(t, "%s", op->step);
    } else {
        kiln_text_printf(t, "kiln_rd_reduce(a, kiln_rd_map(");
        for (int i = 0; i < op->nin; i++) kiln_text_printf(t, "%s, ", op->in_name[i]);
        kiln_text_printf(t, "_i))");
    }
    kiln_text_printf(
        t, ";\n}\nKILN_RD_FN %s kiln_rd_post(kiln_rd_acc a, long long _n) {\n    (void)_n;\n    return ",
        rd_compute_type(op->out_dtype));
    snippet(t, op, "post", op->post ? op->post : "a");
    kiln_text_printf(t, "    ;\n}\n");
    /* the accumulator's size, for the partials buffer (asked once per module) */
    kiln_text_printf(t, "__global__ void kiln_rd_acc_bytes(long long *kiln_r) { kiln_r[0] = (long "
                        "long)sizeof(kiln_rd_acc); }\n");
    /* one element, from each array input's byte address: mapped, or
     * stepped into an accumulator */
    for (int form = 0; form < 2; form++) {
        kiln_text_printf(t, "KILN_RD_FN kiln_rd_acc kiln_rd_elem%s(%s", form ? "_step" : "",
                         form ? "kiln_rd_acc a, " : "");
        for (int i = 0; i < op->nin; i++) {
            if (p->scalar[i])
                kiln_text_printf(t, "%s kiln_v%d, ", rd_compute_type(op->in_dtype[i]), i);
            else
                kiln_text_printf(t, "const char *kiln_p%d, ", i);
        }
        kiln_text_printf(t, "long long _i) {\n    return %s", form ? "kiln_rd_step(a, " : "kiln_rd_map(");
        for (int i = 0; i < op->nin; i++) {
            char src[96], e[384];
            if (p->scalar[i]) {
                kiln_text_printf(t, "kiln_v%d, ", i);
                continue;
            }
            snprintf(src, sizeof src, "*(const %s *)kiln_p%d", rd_storage_type(p->store[i]), i);
            rd_load_expr(e, sizeof e, p->store[i], op->in_dtype[i], src);
            kiln_text_printf(t, "%s, ", e);
        }
        kiln_text_printf(t, "_i);\n}\n");
    }
    char e[384];
    rd_store_expr(e, sizeof e, op->out_dtype, p->out_store, "kiln_rd_post(a, n)");
    kiln_text_printf(t, "KILN_RD_FN %s kiln_rd_store(kiln_rd_acc a, long long n) { return %s; }\n",
                     rd_storage_type(p->out_store), e);
}

/* ---------------------------------------------------------------- shared loop pieces */

/* const char *kiln_b<i> = input i's address of output coordinate `var`
 * (consumed) over kept dims [0, upto), plus `extra` elements of the last. */
void rd_emit_bases(kiln_text *t, const rd_op *op, const rd_plan *p, const char *var, int upto) {
    for (int i = 0; i < op->nin; i++)
        if (!p->scalar[i])
            kiln_text_printf(t, "        const char *kiln_b%d = (const char *)kiln_in%d;\n", i, i);
    for (int d = upto - 1; d >= 0; d--) {
        kiln_text_printf(t, "        { const long long kiln_c = %s %% kiln_os%d; %s /= kiln_os%d;\n", var, d,
                         var, d);
        for (int i = 0; i < op->nin; i++)
            if (!p->scalar[i]) kiln_text_printf(t, "          kiln_b%d += kiln_c * kiln_ot%d_%d;\n", i, i, d);
        kiln_text_printf(t, "        }\n");
    }
}

/* kiln_rd_elem(...) of reduced element `r` (a long long expression),
 * relative to the kiln_b* bases, for the plan's reduced dims. For more than
 * one reduced dim the caller has opened a block computing kiln_ro<i>/kiln_ri. */
void rd_elem_call(char *buf, size_t cap, const rd_op *op, const rd_plan *p, const char *r, const char *colx) {
    size_t n = (size_t)snprintf(buf, cap, "kiln_rd_elem(");
    for (int i = 0; i < op->nin; i++) {
        if (p->scalar[i])
            n += (size_t)snprintf(buf + n, cap - n, "kiln_v%d, ", i);
        else if (p->ndr == 1)
            n += (size_t)snprintf(buf + n, cap - n, "kiln_b%d + (%s) * kiln_rt%d_0%s, ", i, r, i, colx);
        else
            n += (size_t)snprintf(buf + n, cap - n, "kiln_b%d + kiln_ro%d%s, ", i, i, colx);
    }
    if (!op->uses_index)
        snprintf(buf + n, cap - n, "0)");
    else if (p->ndr == 1)
        snprintf(buf + n, cap - n, "(%s) * kiln_iw0)", r);
    else
        snprintf(buf + n, cap - n, "kiln_ri)");
}

/* Offsets kiln_ro<i> and index kiln_ri of reduced element `r` (ndr > 1). */
void rd_emit_unravel_r(kiln_text *t, const rd_op *op, const rd_plan *p, const char *r, const char *ind) {
    kiln_text_printf(t, "%slong long kiln_rr = %s, kiln_ri = 0;", ind, r);
    for (int i = 0; i < op->nin; i++)
        if (!p->scalar[i]) kiln_text_printf(t, " long long kiln_ro%d = 0;", i);
    kiln_text_printf(t, "\n");
    for (int d = p->ndr - 1; d >= 0; d--) {
        kiln_text_printf(t, "%s{ const long long kiln_c = kiln_rr %% kiln_rs%d; kiln_rr /= kiln_rs%d;", ind,
                         d, d);
        for (int i = 0; i < op->nin; i++)
            if (!p->scalar[i]) kiln_text_printf(t, " kiln_ro%d += kiln_c * kiln_rt%d_%d;", i, i, d);
        if (op->uses_index) kiln_text_printf(t, " kiln_ri += kiln_c * kiln_iw%d;", d);
        kiln_text_printf(t, " }\n");
    }
    kiln_text_printf(t, "%s(void)kiln_ri;\n", ind);
}

/* ---------------------------------------------------------------- CUDA */

/* kiln_acc = <the next element> for the loops over one reduced dim, whose
 * indices increase: elem is an rd_elem_call text, made a step. */
static void emit_step(kiln_text *t, const char *indent, const char *elem) {
    const char *args = strchr(elem, '(');
    kiln_text_printf(t, "%skiln_acc = kiln_rd_elem_step(kiln_acc, %s;\n", indent, args ? args + 1 : ")");
}

static void emit_block_reduce(kiln_text *t, int group) {
    kiln_text_printf(t, "    for (int kiln_m = 16; kiln_m >= 1; kiln_m >>= 1)\n"
                        "        kiln_acc = kiln_rd_reduce(kiln_acc, kiln_rd_shfl_xor(kiln_acc, kiln_m));\n");
    if (group == 32) return;
    kiln_text_printf(
        t,
        "    __shared__ __align__(16) unsigned char kiln_sm[(%d / 32) * sizeof(kiln_rd_acc)];\n"
        "    kiln_rd_acc *kiln_smv = (kiln_rd_acc *)kiln_sm;\n"
        "    if ((threadIdx.x & 31) == 0) kiln_smv[threadIdx.x / 32] = kiln_acc;\n"
        "    __syncthreads();\n"
        "    if (threadIdx.x < 32) {\n"
        "        kiln_acc = threadIdx.x < %d / 32 ? kiln_smv[threadIdx.x] : kiln_rd_identity();\n"
        "        for (int kiln_m = %d / 64; kiln_m >= 1; kiln_m >>= 1)\n"
        "            kiln_acc = kiln_rd_reduce(kiln_acc, kiln_rd_shfl_xor(kiln_acc, kiln_m));\n"
        "    }\n",
        RD_GPU_BLOCK, RD_GPU_BLOCK, RD_GPU_BLOCK);
}

void rd_emit_gpu_group(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np) {
    int G = p->group;
    char e[1024];
    kiln_text_printf(t, "__global__ void __launch_bounds__(%d) kiln_rd_main(", RD_GPU_BLOCK);
    rd_emit_param_list(t, pp, np);
    kiln_text_printf(t, ") {\n    (void)kiln_rchunk; (void)kiln_per_task; (void)kiln_part;\n");
    kiln_text_printf(t, "    const int kiln_lane = threadIdx.x %% %d;\n", G);
    if (G == RD_GPU_BLOCK)
        kiln_text_printf(
            t, "    const long long kiln_o = blockIdx.x / kiln_S, kiln_s = blockIdx.x %% kiln_S;\n");
    else
        kiln_text_printf(
            t, "    const long long kiln_o = (long long)blockIdx.x * %d + threadIdx.x / %d, kiln_s = 0;\n",
            RD_GPU_BLOCK / G, G);
    kiln_text_printf(t, "    const long long kiln_step = kiln_S * %d;\n", G);
    kiln_text_printf(t, "    kiln_rd_acc kiln_acc = kiln_rd_identity();\n    if (kiln_o < kiln_O) {\n");
    kiln_text_printf(t, "        long long kiln_q = kiln_o;\n");
    rd_emit_bases(t, op, p, "kiln_q", p->ndo);
    const char *first = "kiln_s * %d + kiln_lane";
    char start[64];
    snprintf(start, sizeof start, first, G);
    if (p->layout == RD_INNER && p->vec > 1) {
        int v = p->vec;
        kiln_text_printf(t, "        const long long kiln_nv = kiln_R / %d;\n#pragma unroll 4\n", v);
        kiln_text_printf(t, "        for (long long kiln_v = %s; kiln_v < kiln_nv; kiln_v += kiln_step) {\n",
                         start);
        for (int i = 0; i < op->nin; i++)
            if (!p->scalar[i])
                kiln_text_printf(t,
                                 "            const kiln_uf_vec<%s, %d> kiln_x%d = ((const kiln_uf_vec<%s, "
                                 "%d> *)kiln_b%d)[kiln_v];\n",
                                 rd_storage_type(p->store[i]), v, i, rd_storage_type(p->store[i]), v, i);
        kiln_text_printf(t, "#pragma unroll\n            for (int kiln_j = 0; kiln_j < %d; kiln_j++)\n", v);
        /* values straight from the registers of the vector (no address taken) */
        kiln_text_printf(t, "                kiln_acc = kiln_rd_step(kiln_acc, ");
        for (int i = 0; i < op->nin; i++) {
            char src[64], ld[384];
            if (p->scalar[i]) {
                kiln_text_printf(t, "kiln_v%d, ", i);
                continue;
            }
            snprintf(src, sizeof src, "kiln_x%d.v[kiln_j]", i);
            rd_load_expr(ld, sizeof ld, p->store[i], op->in_dtype[i], src);
            kiln_text_printf(t, "%s, ", ld);
        }
        kiln_text_printf(t, "kiln_v * %d + kiln_j);\n        }\n", v);
        rd_elem_call(e, sizeof e, op, p, "kiln_r", "");
        kiln_text_printf(
            t, "        for (long long kiln_r = kiln_nv * %d + %s; kiln_r < kiln_R; kiln_r += kiln_step)\n",
            v, start);
        emit_step(t, "            ", e);
    } else if (p->ndr == 1) {
        rd_elem_call(e, sizeof e, op, p, "kiln_r", "");
        kiln_text_printf(
            t,
            "#pragma unroll 4\n        for (long long kiln_r = %s; kiln_r < kiln_R; kiln_r += kiln_step)\n",
            start);
        emit_step(t, "            ", e);
    } else {
        kiln_text_printf(t, "        for (long long kiln_r = %s; kiln_r < kiln_R; kiln_r += kiln_step) {\n",
                         start);
        rd_emit_unravel_r(t, op, p, "kiln_r", "            ");
        rd_elem_call(e, sizeof e, op, p, "kiln_r", "");
        kiln_text_printf(t, "            kiln_acc = kiln_rd_reduce(kiln_acc, %s);\n        }\n", e);
    }
    kiln_text_printf(t, "    }\n");
    emit_block_reduce(t, G);
    kiln_text_printf(t, "    if (kiln_lane == 0 && kiln_o < kiln_O) {\n"
                        "        if (kiln_S == 1) kiln_out[kiln_o] = kiln_rd_store(kiln_acc, kiln_R);\n"
                        "        else kiln_part[kiln_s * kiln_O + kiln_o] = kiln_acc;\n    }\n}\n");
}

void rd_emit_gpu_column(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np) {
    char e[1024], colx[64];
    int last = p->ndo - 1;
    kiln_text_printf(t, "__global__ void __launch_bounds__(%d) kiln_rd_main(", RD_GPU_BLOCK);
    rd_emit_param_list(t, pp, np);
    kiln_text_printf(t, ") {\n    (void)kiln_per_task; (void)kiln_part;\n");
    kiln_text_printf(t, "    const long long kiln_C = kiln_os%d, kiln_ncb = (kiln_C + %d) / %d;\n", last,
                     RD_GPU_BLOCK - 1, RD_GPU_BLOCK);
    kiln_text_printf(t, "    const long long kiln_c = (blockIdx.x %% kiln_ncb) * %d + threadIdx.x;\n",
                     RD_GPU_BLOCK);
    kiln_text_printf(
        t, "    long long kiln_q = blockIdx.x / kiln_ncb;\n    const long long kiln_s = blockIdx.y;\n");
    kiln_text_printf(
        t, "    if (kiln_c >= kiln_C) return;\n    const long long kiln_o = kiln_q * kiln_C + kiln_c;\n");
    rd_emit_bases(t, op, p, "kiln_q", last);
    for (int i = 0; i < op->nin; i++)
        if (!p->scalar[i]) kiln_text_printf(t, "    kiln_b%d += kiln_c * kiln_ot%d_%d;\n", i, i, last);
    kiln_text_printf(
        t, "    const long long kiln_r0 = kiln_s * kiln_rchunk;\n"
           "    const long long kiln_r1 = kiln_R - kiln_r0 < kiln_rchunk ? kiln_R : kiln_r0 + kiln_rchunk;\n"
           "    kiln_rd_acc kiln_acc = kiln_rd_identity();\n");
    colx[0] = '\0';
    if (p->ndr == 1) {
        rd_elem_call(e, sizeof e, op, p, "kiln_r", colx);
        kiln_text_printf(
            t, "#pragma unroll 4\n    for (long long kiln_r = kiln_r0; kiln_r < kiln_r1; kiln_r++)\n");
        emit_step(t, "        ", e);
    } else {
        kiln_text_printf(t, "    for (long long kiln_r = kiln_r0; kiln_r < kiln_r1; kiln_r++) {\n");
        rd_emit_unravel_r(t, op, p, "kiln_r", "        ");
        rd_elem_call(e, sizeof e, op, p, "kiln_r", colx);
        kiln_text_printf(t, "        kiln_acc = kiln_rd_reduce(kiln_acc, %s);\n    }\n", e);
    }
    kiln_text_printf(t, "    if (kiln_S == 1) kiln_out[kiln_o] = kiln_rd_store(kiln_acc, kiln_R);\n"
                        "    else kiln_part[kiln_s * kiln_O + kiln_o] = kiln_acc;\n}\n");
}

void rd_emit_gpu_finish(kiln_text *t, const rd_plan *p) {
    const char *ot = rd_storage_type(p->out_store);
    kiln_text_printf(t,
                     "// partials [s][o] -> outputs, in a fixed order: a block per output when few\n"
                     "__global__ void __launch_bounds__(%d) kiln_rd_finish_rows(%s *kiln_out, const "
                     "kiln_rd_acc *kiln_part, long long kiln_O, long long kiln_S, long long kiln_R, long "
                     "long kiln_per) {\n"
                     "    (void)kiln_per;\n    const long long kiln_o = blockIdx.x;\n"
                     "    kiln_rd_acc kiln_acc = kiln_rd_identity();\n"
                     "    for (long long kiln_s = threadIdx.x; kiln_s < kiln_S; kiln_s += %d)\n"
                     "        kiln_acc = kiln_rd_reduce(kiln_acc, kiln_part[kiln_s * kiln_O + kiln_o]);\n",
                     RD_GPU_BLOCK, ot, RD_GPU_BLOCK);
    emit_block_reduce(t, RD_GPU_BLOCK);
    kiln_text_printf(t, "    if (threadIdx.x == 0) kiln_out[kiln_o] = kiln_rd_store(kiln_acc, kiln_R);\n}\n");
    kiln_text_printf(t,
                     "__global__ void __launch_bounds__(%d) kiln_rd_finish_cols(%s *kiln_out, const "
                     "kiln_rd_acc *kiln_part, long long kiln_O, long long kiln_S, long long kiln_R, long "
                     "long kiln_per) {\n"
                     "    (void)kiln_per;\n    const long long kiln_o = (long long)blockIdx.x * blockDim.x + "
                     "threadIdx.x;\n"
                     "    if (kiln_o >= kiln_O) return;\n"
                     "    kiln_rd_acc kiln_acc = kiln_rd_identity();\n"
                     "    for (long long kiln_s = 0; kiln_s < kiln_S; kiln_s++)\n"
                     "        kiln_acc = kiln_rd_reduce(kiln_acc, kiln_part[kiln_s * kiln_O + kiln_o]);\n"
                     "    kiln_out[kiln_o] = kiln_rd_store(kiln_acc, kiln_R);\n}\n",
                     RD_GPU_BLOCK, ot);
}

char *rd_generate(const rd_op *op, const rd_plan *p) {
    static const char *const layouts[] = {"inner", "column", "generic"};
    kiln_text t = {0};
    kiln_text_printf(&t, "#line 1 \"kiln-reduce-%s.cu\"\n", op->name);
    kiln_text_printf(
        &t, "// kiln reduction %s, %s kernels, layout %s (%d kept, %d reduced dims), vec %d, group %d\n",
        op->name, p->prov->target, layouts[p->layout], p->ndo, p->ndr, p->vec, p->group);
    kiln_text_puts(&t, kiln_embedded_ufunc_common);
    kiln_text_puts(&t, kiln_embedded_reduce_common);
    if (p->prov->device_source) kiln_text_puts(&t, p->prov->device_source);
    resync(&t, op);
    emit_operator(&t, op, p);
    rd_param pp[RD_MAX_PARAMS];
    int np = rd_params(op, p, NULL, NULL, pp);
    if (np < 0) {
        kiln_text_free(&t);
        return NULL;
    }
    p->prov->emit(&t, op, p, pp, np);
    return kiln_text_take(&t);
}
