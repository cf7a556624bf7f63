/* codegen_cpu.c: the CPU loops of a reduction module. They are plain loops
 * the host compiler vectorises, not emulated threads: a block is a run of
 * outputs (or a piece of one output's elements), reduced with NumPy's
 * pairwise scheme; column reductions take 32 outputs as SIMD lanes and
 * apply the same scheme down the rows. */
#include <stdio.h>

#include "reduce/codegen.h"

static const char cpu_pairwise[] =
    "// NumPy's pairwise scheme: 8 lanes over blocks of 128 elements, the block\n"
    "// sums merged as a binary counter (equal-sized neighbours first), so the\n"
    "// error grows with log2(n/128), and the order depends on [r0, r1) only.\n"
    "template <class F> static inline kiln_rd_acc kiln_rd_pairwise(long long r0, long long r1, F elem) {\n"
    "    kiln_rd_acc kiln_stack[64];\n"
    "    int kiln_level[64], kiln_top = 0;\n"
    "    for (long long b = r0; b < r1; b += 128) {\n"
    "        const long long e = r1 - b < 128 ? r1 : b + 128;\n"
    "        kiln_rd_acc l[8];\n"
    "        for (int j = 0; j < 8; j++) l[j] = kiln_rd_identity();\n"
    "        long long r = b;\n"
    "        for (; r + 8 <= e; r += 8) {\n"
    "#pragma GCC unroll 8\n"
    "            for (int j = 0; j < 8; j++) l[j] = kiln_rd_reduce(l[j], elem(r + j));\n"
    "        }\n"
    "        for (; r < e; r++) l[0] = kiln_rd_reduce(l[0], elem(r));\n"
    "        kiln_rd_acc v = kiln_rd_reduce(kiln_rd_reduce(kiln_rd_reduce(l[0], l[1]), kiln_rd_reduce(l[2], "
    "l[3])),\n"
    "                                       kiln_rd_reduce(kiln_rd_reduce(l[4], l[5]), kiln_rd_reduce(l[6], "
    "l[7])));\n"
    "        int lv = 0;\n"
    "        while (kiln_top > 0 && kiln_level[kiln_top - 1] == lv) {\n"
    "            v = kiln_rd_reduce(kiln_stack[kiln_top - 1], v);\n"
    "            kiln_top--;\n"
    "            lv++;\n"
    "        }\n"
    "        kiln_stack[kiln_top] = v;\n"
    "        kiln_level[kiln_top++] = lv;\n"
    "    }\n"
    "    kiln_rd_acc acc = kiln_rd_identity();\n"
    "    for (int i = kiln_top - 1; i >= 0; i--) acc = kiln_rd_reduce(kiln_stack[i], acc);\n"
    "    return acc;\n"
    "}\n";

/* argmin/argmax over one reduced dim of one array: each block of 512
 * elements first reduced to its extreme with a vectorised loop (NaNs
 * noted), and stepped through element by element only when it can change
 * the answer (a better extreme, a NaN, or the first block): memory speed on
 * any data, the same result as the plain step loop. */
static void emit_cpu_arg_body(kiln_text *t, const rd_op *op, const rd_plan *p) {
    char src[160], e[384];
    const char *ct = rd_compute_type(op->in_dtype[0]), *cmp = op->arg == 1 ? "<" : ">";
    if (p->layout == RD_INNER)
        snprintf(src, sizeof src, "((const %s *)kiln_b0)[kiln_r]", rd_storage_type(p->store[0]));
    else
        snprintf(src, sizeof src, "*(const %s *)(kiln_b0 + kiln_r * kiln_rt0_0)",
                 rd_storage_type(p->store[0]));
    rd_load_expr(e, sizeof e, p->store[0], op->in_dtype[0], src);
    /* GCC's vector extension for contiguous numbers stored as computed (the
     * host compiler does not vectorise a NaN-aware max by itself) */
    int vec = p->layout == RD_INNER && p->store[0] == op->in_dtype[0] && p->store[0] != KILN_FLOAT16 &&
              p->store[0] != KILN_BOOL;
    kiln_text_printf(
        t,
        "        auto kiln_x = [&](long long kiln_r) -> %s { return %s; };\n"
        "        kiln_rd_acc kiln_acc = kiln_rd_identity();\n"
        "        for (long long kiln_rb = kiln_r0; kiln_rb < kiln_r1; kiln_rb += 512) {\n"
        "            const long long kiln_re = kiln_r1 - kiln_rb < 512 ? kiln_r1 : kiln_rb + 512;\n"
        "            %s kiln_m = kiln_x(kiln_rb);\n"
        "            bool kiln_nan = false;\n",
        ct, e, ct);
    if (vec)
        kiln_text_printf(
            t,
            "            if (kiln_re - kiln_rb == 512) {\n"
            "                typedef %s kiln_av __attribute__((vector_size(32)));\n"
            "                const int kiln_lanes = (int)(32 / sizeof(%s));\n"
            "                kiln_av kiln_mv, kiln_vv;\n"
            "                __builtin_memcpy(&kiln_mv, (const %s *)kiln_b0 + kiln_rb, 32);\n"
            "                auto kiln_nv = kiln_mv != kiln_mv;\n"
            "                for (long long kiln_r = kiln_rb + kiln_lanes; kiln_r < kiln_re; kiln_r += "
            "kiln_lanes) {\n"
            "                    __builtin_memcpy(&kiln_vv, (const %s *)kiln_b0 + kiln_r, 32);\n"
            "                    kiln_nv |= kiln_vv != kiln_vv;\n"
            "                    kiln_mv = kiln_vv %s kiln_mv ? kiln_vv : kiln_mv;\n"
            "                }\n"
            "                for (int kiln_j = 0; kiln_j < kiln_lanes; kiln_j++) {\n"
            "                    kiln_nan |= kiln_nv[kiln_j] != 0;\n"
            "                    kiln_m = kiln_mv[kiln_j] %s kiln_m ? kiln_mv[kiln_j] : kiln_m;\n"
            "                }\n"
            "            } else\n",
            ct, ct, ct, ct, cmp, cmp);
    kiln_text_printf(
        t,
        "            for (long long kiln_r = kiln_rb; kiln_r < kiln_re; kiln_r++) {\n"
        "                const %s kiln_v = kiln_x(kiln_r);\n"
        "                kiln_nan |= kiln_v != kiln_v;\n"
        "                kiln_m = kiln_v %s kiln_m ? kiln_v : kiln_m;\n"
        "            }\n"
        "            if (kiln_nan || kiln_acc.i < 0 || kiln_m %s kiln_acc.v)\n"
        "                for (long long kiln_r = kiln_rb; kiln_r < kiln_re; kiln_r++)\n"
        "                    kiln_acc = kiln_rd_step(kiln_acc, kiln_x(kiln_r), kiln_r * kiln_iw0);\n"
        "        }\n",
        ct, cmp, cmp);
}

void rd_emit_cpu_rows(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np) {
    char e[1024];
    int arg = op->arg && op->nin == 1 && !p->scalar[0] && p->ndr == 1;
    if (!arg) kiln_text_printf(t, "%s", cpu_pairwise);
    kiln_text_printf(t, "__global__ void kiln_rd_main(");
    rd_emit_param_list(t, pp, np);
    kiln_text_printf(t, ") {\n");
    kiln_text_printf(
        t,
        "    const long long kiln_s = blockIdx.x %% kiln_S, kiln_t = blockIdx.x / kiln_S;\n"
        "    const long long kiln_o0 = kiln_t * kiln_per_task;\n"
        "    const long long kiln_o1 = kiln_O - kiln_o0 < kiln_per_task ? kiln_O : kiln_o0 + kiln_per_task;\n"
        "    const long long kiln_r0 = kiln_s * kiln_rchunk;\n"
        "    const long long kiln_r1 = kiln_R - kiln_r0 < kiln_rchunk ? kiln_R : kiln_r0 + kiln_rchunk;\n");
    kiln_text_printf(t, "    for (long long kiln_o = kiln_o0; kiln_o < kiln_o1; kiln_o++) {\n"
                        "        long long kiln_q = kiln_o;\n");
    rd_emit_bases(t, op, p, "kiln_q", p->ndo);
    if (arg) {
        emit_cpu_arg_body(t, op, p);
    } else {
        kiln_text_printf(
            t, "        const kiln_rd_acc kiln_acc = kiln_rd_pairwise(kiln_r0, kiln_r1, [&](long long "
               "kiln_r) {\n");
        if (p->ndr > 1) rd_emit_unravel_r(t, op, p, "kiln_r", "            ");
        rd_elem_call(e, sizeof e, op, p, "kiln_r", "");
        kiln_text_printf(t, "            return %s;\n        });\n", e);
    }
    kiln_text_printf(t, "        if (kiln_S == 1) kiln_out[kiln_o] = kiln_rd_store(kiln_acc, kiln_R);\n"
                        "        else kiln_part[kiln_s * kiln_O + kiln_o] = kiln_acc;\n    }\n}\n");
}

#define RD_CPU_TILE 32

void rd_emit_cpu_column(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np) {
    char e[1024], colx[64];
    int last = p->ndo - 1, W = RD_CPU_TILE;
    kiln_text_printf(t, "__global__ void kiln_rd_main(");
    rd_emit_param_list(t, pp, np);
    kiln_text_printf(t, ") {\n    (void)kiln_per_task;\n");
    kiln_text_printf(t, "    const long long kiln_C = kiln_os%d, kiln_nct = (kiln_C + %d) / %d;\n", last,
                     W - 1, W);
    kiln_text_printf(t,
                     "    const long long kiln_s = blockIdx.x %% kiln_S, kiln_t = blockIdx.x / kiln_S;\n"
                     "    const long long kiln_c0 = (kiln_t %% kiln_nct) * %d;\n"
                     "    const int kiln_cw = (int)(kiln_C - kiln_c0 < %d ? kiln_C - kiln_c0 : %d);\n"
                     "    long long kiln_q = kiln_t / kiln_nct;\n"
                     "    const long long kiln_obase = kiln_q * kiln_C + kiln_c0;\n",
                     W, W, W);
    rd_emit_bases(t, op, p, "kiln_q", last);
    for (int i = 0; i < op->nin; i++)
        if (!p->scalar[i]) kiln_text_printf(t, "    kiln_b%d += kiln_c0 * kiln_ot%d_%d;\n", i, i, last);
    kiln_text_printf(
        t,
        "    const long long kiln_r0 = kiln_s * kiln_rchunk;\n"
        "    const long long kiln_r1 = kiln_R - kiln_r0 < kiln_rchunk ? kiln_R : kiln_r0 + kiln_rchunk;\n");
    kiln_text_printf(t, "    kiln_rd_acc kiln_stack[48][%d];\n    int kiln_level[48], kiln_top = 0;\n", W);
    kiln_text_printf(
        t,
        "    for (long long kiln_rb = kiln_r0; kiln_rb < kiln_r1; kiln_rb += 128) {\n"
        "        const long long kiln_re = kiln_r1 - kiln_rb < 128 ? kiln_r1 : kiln_rb + 128;\n"
        "        kiln_rd_acc kiln_v[%d];\n"
        "        for (int kiln_j = 0; kiln_j < %d; kiln_j++) kiln_v[kiln_j] = kiln_rd_identity();\n"
        "        for (long long kiln_r = kiln_rb; kiln_r < kiln_re; kiln_r++) {\n",
        W, W);
    if (p->ndr > 1) rd_emit_unravel_r(t, op, p, "kiln_r", "            ");
    snprintf(colx, sizeof colx, " + kiln_j * kiln_ot%d_%d", 0, last);
    /* each array input has its own column stride */
    {
        size_t n = (size_t)snprintf(e, sizeof e, "kiln_rd_elem(");
        for (int i = 0; i < op->nin; i++) {
            if (p->scalar[i])
                n += (size_t)snprintf(e + n, sizeof e - n, "kiln_v%d, ", i);
            else if (p->ndr == 1)
                n += (size_t)snprintf(e + n, sizeof e - n,
                                      "kiln_b%d + kiln_r * kiln_rt%d_0 + kiln_j * kiln_ot%d_%d, ", i, i, i,
                                      last);
            else
                n += (size_t)snprintf(e + n, sizeof e - n, "kiln_b%d + kiln_ro%d + kiln_j * kiln_ot%d_%d, ",
                                      i, i, i, last);
        }
        if (!op->uses_index)
            snprintf(e + n, sizeof e - n, "0)");
        else if (p->ndr == 1)
            snprintf(e + n, sizeof e - n, "kiln_r * kiln_iw0)");
        else
            snprintf(e + n, sizeof e - n, "kiln_ri)");
    }
    kiln_text_printf(t,
                     "#if defined(__clang__)\n#pragma clang loop vectorize(assume_safety)\n#elif "
                     "defined(__GNUC__)\n#pragma GCC ivdep\n#endif\n"
                     "            for (int kiln_j = 0; kiln_j < kiln_cw; kiln_j++)\n"
                     "                kiln_v[kiln_j] = kiln_rd_reduce(kiln_v[kiln_j], %s);\n        }\n",
                     e);
    kiln_text_printf(
        t,
        "        int kiln_lv = 0;\n"
        "        while (kiln_top > 0 && kiln_level[kiln_top - 1] == kiln_lv) {\n"
        "            for (int kiln_j = 0; kiln_j < %d; kiln_j++)\n"
        "                kiln_v[kiln_j] = kiln_rd_reduce(kiln_stack[kiln_top - 1][kiln_j], kiln_v[kiln_j]);\n"
        "            kiln_top--;\n            kiln_lv++;\n        }\n"
        "        for (int kiln_j = 0; kiln_j < %d; kiln_j++) kiln_stack[kiln_top][kiln_j] = kiln_v[kiln_j];\n"
        "        kiln_level[kiln_top++] = kiln_lv;\n    }\n",
        W, W);
    kiln_text_printf(
        t, "    for (int kiln_j = 0; kiln_j < kiln_cw; kiln_j++) {\n"
           "        kiln_rd_acc kiln_acc = kiln_rd_identity();\n"
           "        for (int kiln_i = kiln_top - 1; kiln_i >= 0; kiln_i--) kiln_acc = "
           "kiln_rd_reduce(kiln_stack[kiln_i][kiln_j], kiln_acc);\n"
           "        if (kiln_S == 1) kiln_out[kiln_obase + kiln_j] = kiln_rd_store(kiln_acc, kiln_R);\n"
           "        else kiln_part[kiln_s * kiln_O + kiln_obase + kiln_j] = kiln_acc;\n    }\n}\n");
}

void rd_emit_cpu_finish(kiln_text *t, const rd_plan *p) {
    kiln_text_printf(
        t,
        "// partials [s][o] -> outputs in a fixed order, kiln_per outputs per block\n"
        "__global__ void kiln_rd_finish_cols(%s *kiln_out, const kiln_rd_acc *kiln_part, long long kiln_O, "
        "long long kiln_S, long long kiln_R, long long kiln_per) {\n"
        "    const long long kiln_o0 = (long long)blockIdx.x * kiln_per;\n"
        "    const long long kiln_o1 = kiln_O - kiln_o0 < kiln_per ? kiln_O : kiln_o0 + kiln_per;\n"
        "    for (long long kiln_o = kiln_o0; kiln_o < kiln_o1; kiln_o++) {\n"
        "        kiln_rd_acc kiln_acc = kiln_rd_identity();\n"
        "        for (long long kiln_s = 0; kiln_s < kiln_S; kiln_s++)\n"
        "            kiln_acc = kiln_rd_reduce(kiln_acc, kiln_part[kiln_s * kiln_O + kiln_o]);\n"
        "        kiln_out[kiln_o] = kiln_rd_store(kiln_acc, kiln_R);\n    }\n}\n",
        rd_storage_type(p->out_store));
}
