/* scan_gpu.c: the CUDA single-pass scan (read n, write n), deterministic.
 *
 * Tiles (block * items elements of one row) take their ids from an atomic
 * counter in the order they start, so a tile only ever waits for tiles that
 * are already running: no deadlock whatever the scheduler does. Each tile
 *   1. loads its elements (16-byte loads where aligned) into shared memory
 *      striped, and reads them back blocked (items per thread, padded
 *      against bank conflicts);
 *   2. reduces each thread's items in order and scans the threads' totals
 *      (warp shuffles, then the warps' totals);
 *   3. publishes its aggregate (value, fence, flag), unless nobody reads it;
 *   4. waits for the aggregates of the earlier tiles of its group (a group
 *      is one tile per thread of a block, 256 tiles), each thread one, and
 *      combines them in a FIXED order (a fixed tree per warp, then the warps
 *      in order); meanwhile its last thread waits for P(g), the prefix of
 *      its group, published by the last tile of the previous group; the
 *      last tile of a group publishes P(g+1) = (P(g) . earlier) . own;
 *   5. rescans its items from the prefix and stores them through shared
 *      memory (16-byte stores where aligned).
 * Every value is a fixed function of the inputs, whatever the timing
 * (unlike a decoupled look-back, which combines whichever predecessors are
 * ready), so float results are identical run to run. The chain over groups
 * has one link per group (a few hundred for 2^28 floats), short enough to
 * stay off the critical path. Published values are read from L2 (__ldcg),
 * since L1 is not coherent between SMs. The CPU backend never gets this
 * kernel: blocks spinning on one another would deadlock its worker pool. */
#include "reduce/scan_gpu.h"

#include <stdio.h>

#include "core/dtype.h"

static const char onepass_helpers[] =
    "// Published values: a value of at most 8 bytes and its flag travel as one\n"
    "// 16-byte access (one store publishes, one load reads both), larger ones\n"
    "// as value, fence, flag. Accesses go to L2 (.cg): L1 is not coherent.\n"
    "struct __align__(16) kiln_sc_slot { unsigned long long w[6]; }; // value w[0..3], flag w[4] (packed: "
    "w[1])\n"
    "static_assert(sizeof(kiln_sc_t) <= 32, \"scan value larger than its slot\");\n"
    "static constexpr bool kiln_sc_packed = sizeof(kiln_sc_t) <= 8;\n"
    "#if __CUDA_ARCH__ >= 700\n#define KILN_SC_PAUSE() __nanosleep(32)\n#else\n#define "
    "KILN_SC_PAUSE()\n#endif\n"
    "static __device__ __forceinline__ void kiln_sc_st2(unsigned long long *p, unsigned long long a, "
    "unsigned "
    "long long b) {\n"
    "    asm volatile(\"st.global.cg.v2.u64 [%0], {%1, %2};\" ::\"l\"(p), \"l\"(a), \"l\"(b) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void kiln_sc_ld2(const unsigned long long *p, unsigned long long &a, "
    "unsigned long long &b) {\n"
    "    asm volatile(\"ld.global.cg.v2.u64 {%0, %1}, [%2];\" : \"=l\"(a), \"=l\"(b) : \"l\"(p) : "
    "\"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void kiln_sc_publish(kiln_sc_slot *s, kiln_sc_t v) {\n"
    "    kiln_sc_slot t;\n"
    "    for (int i = 0; i < 4; i++) t.w[i] = 0;\n"
    "    const char *c = reinterpret_cast<const char *>(&v);\n"
    "    char *d = reinterpret_cast<char *>(t.w);\n"
    "    for (int b = 0; b < (int)sizeof(kiln_sc_t); b++) d[b] = c[b];\n"
    "    if (kiln_sc_packed) {\n"
    "        kiln_sc_st2(s->w, t.w[0], 1ull);\n"
    "    } else {\n"
    "        kiln_sc_st2(s->w, t.w[0], t.w[1]);\n"
    "        if (sizeof(kiln_sc_t) > 16) kiln_sc_st2(s->w + 2, t.w[2], t.w[3]);\n"
    "        __threadfence();\n"
    "        kiln_sc_st2(s->w + 4, 1ull, 0ull);\n"
    "    }\n"
    "}\n"
    "// Whether slot s is published; if so *v is its value.\n"
    "static __device__ __forceinline__ bool kiln_sc_poll(const kiln_sc_slot *s, kiln_sc_t *v) {\n"
    "    kiln_sc_slot t;\n"
    "    bool ready;\n"
    "    if (kiln_sc_packed) {\n"
    "        kiln_sc_ld2(s->w, t.w[0], t.w[1]);\n"
    "        ready = t.w[1] != 0;\n"
    "    } else {\n"
    "        kiln_sc_ld2(s->w + 4, t.w[4], t.w[5]);\n"
    "        ready = t.w[4] != 0;\n"
    "        if (ready) {\n"
    "            __threadfence();\n"
    "            kiln_sc_ld2(s->w, t.w[0], t.w[1]);\n"
    "            if (sizeof(kiln_sc_t) > 16) kiln_sc_ld2(s->w + 2, t.w[2], t.w[3]);\n"
    "        }\n"
    "    }\n"
    "    const char *c = reinterpret_cast<const char *>(t.w);\n"
    "    char *d = reinterpret_cast<char *>(v);\n"
    "    for (int b = 0; b < (int)sizeof(kiln_sc_t); b++) d[b] = c[b];\n"
    "    return ready;\n"
    "}\n"
    "// The workspace: tile aggregates, group prefixes (slots of 48 bytes), the tile counter.\n"
    "static __device__ __forceinline__ kiln_sc_slot *kiln_sc_slots(void *base, long long i) {\n"
    "    return reinterpret_cast<kiln_sc_slot *>(reinterpret_cast<char *>(base) + i * 48);\n"
    "}\n"
    "// Exclusive scan of one value per thread over the block, in thread order\n"
    "// (thread 0 gets the identity); *total: the block's aggregate. wt: one\n"
    "// slot per warp.\n"
    "static __device__ __forceinline__ kiln_sc_t kiln_sc_block_excl(kiln_sc_t v, kiln_sc_t *wt, kiln_sc_t "
    "*total) {\n"
    "    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;\n"
    "    for (int d = 1; d < 32; d <<= 1) {\n"
    "        const kiln_sc_t up = kiln_rd_shfl_up(v, d);\n"
    "        if (lane >= d) v = kiln_sc_op(up, v);\n"
    "    }\n"
    "    if (lane == 31) wt[w] = v;\n"
    "    __syncthreads();\n"
    "    if (w == 0) {\n"
    "        kiln_sc_t x = lane < kiln_sc_nw ? wt[lane] : kiln_sc_identity();\n"
    "        for (int d = 1; d < kiln_sc_nw; d <<= 1) {\n"
    "            const kiln_sc_t up = kiln_rd_shfl_up(x, d);\n"
    "            if (lane >= d) x = kiln_sc_op(up, x);\n"
    "        }\n"
    "        if (lane < kiln_sc_nw) wt[lane] = x;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    const kiln_sc_t before = kiln_rd_shfl_up(v, 1);\n"
    "    *total = wt[kiln_sc_nw - 1];\n"
    "    if (lane == 0) return w > 0 ? wt[w - 1] : kiln_sc_identity();\n"
    "    return w > 0 ? kiln_sc_op(wt[w - 1], before) : before;\n"
    "}\n";

static const char onepass_init[] =
    "    const long long kiln_G = (kiln_T + kiln_sc_w - 1) / kiln_sc_w;\n"
    "    const long long kiln_n = (kiln_M * kiln_T + kiln_M * kiln_G) * 3;\n"
    "    uint4 *kiln_w = (uint4 *)kiln_aggr;\n"
    "    const long long kiln_i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    for (long long kiln_i = kiln_i0; kiln_i < kiln_n; kiln_i += (long long)gridDim.x * blockDim.x)\n"
    "        kiln_w[kiln_i] = make_uint4(0, 0, 0, 0);\n"
    "    if (kiln_i0 == 0) *(unsigned int *)(kiln_w + kiln_n) = 0;\n"
    "}\n";

/* The body after the row bases: load, scan, look back, rescan, store. */
static const char onepass_body[] =
    "    const long long kiln_l0 = kiln_t * kiln_sc_tile;\n"
    "    const int kiln_nv = (int)(kiln_L - kiln_l0 < kiln_sc_tile ? kiln_L - kiln_l0 : kiln_sc_tile);\n"
    "    kiln_sc_in *kiln_si = (kiln_sc_in *)kiln_smb;\n"
    "    if (kiln_sc_vin > 1 && kiln_nv == kiln_sc_tile) {\n"
    "        typedef kiln_uf_vec<kiln_sc_in, kiln_sc_vin> kiln_vi;\n"
    "        const kiln_vi *kiln_src = (const kiln_vi *)(kiln_pi + kiln_l0 * (long "
    "long)sizeof(kiln_sc_in));\n"
    "        kiln_vi kiln_v[kiln_sc_items / kiln_sc_vin];\n"
    "#pragma unroll\n"
    "        for (int kiln_j = 0; kiln_j < kiln_sc_items / kiln_sc_vin; kiln_j++)\n"
    "            kiln_v[kiln_j] = kiln_src[kiln_j * kiln_sc_block + threadIdx.x];\n"
    "#pragma unroll\n"
    "        for (int kiln_j = 0; kiln_j < kiln_sc_items / kiln_sc_vin; kiln_j++)\n"
    "#pragma unroll\n"
    "            for (int kiln_e = 0; kiln_e < kiln_sc_vin; kiln_e++)\n"
    "                kiln_si[KILN_SC_PAD((kiln_j * kiln_sc_block + (int)threadIdx.x) * kiln_sc_vin + "
    "kiln_e)] "
    "=\n"
    "                    kiln_v[kiln_j].v[kiln_e];\n"
    "    } else {\n"
    "#pragma unroll\n"
    "        for (int kiln_j = 0; kiln_j < kiln_sc_items; kiln_j++) {\n"
    "            const int kiln_c = kiln_j * kiln_sc_block + threadIdx.x;\n"
    "            if (kiln_c < kiln_nv)\n"
    "                kiln_si[KILN_SC_PAD(kiln_c)] = *(const kiln_sc_in *)(kiln_pi + (kiln_l0 + kiln_c) * "
    "kiln_sL);\n"
    "        }\n"
    "    }\n"
    "    __syncthreads();\n"
    "    // each thread's items, blocked; read again for the rescan (fewer registers)\n"
    "#define KILN_SC_X(k) (threadIdx.x * kiln_sc_items + (k) < kiln_nv ? kiln_sc_load((const char "
    "*)&kiln_si[KILN_SC_PAD(threadIdx.x * kiln_sc_items + (k))]) : kiln_sc_identity())\n"
    "    kiln_sc_t kiln_run = KILN_SC_X(0);\n"
    "#pragma unroll\n"
    "    for (int kiln_k = 1; kiln_k < kiln_sc_items; kiln_k++) kiln_run = kiln_sc_op(kiln_run, "
    "KILN_SC_X(kiln_k));\n"
    "    kiln_sc_t kiln_total;\n"
    "    const kiln_sc_t kiln_texcl = kiln_sc_block_excl(kiln_run, kiln_wt, &kiln_total);\n"
    "    const long long kiln_gi = kiln_t / kiln_sc_w, kiln_cnt = kiln_t % kiln_sc_w;\n"
    "    const long long kiln_tb = kiln_m * kiln_T + kiln_gi * kiln_sc_w, kiln_gb = kiln_m * kiln_G;\n"
    "    if (threadIdx.x == 0 && kiln_cnt < kiln_sc_w - 1 && kiln_t + 1 < kiln_T)\n"
    "        kiln_sc_publish(kiln_sc_slots(kiln_aggr, kiln_id), kiln_total);\n"
    "    // thread j waits for the aggregate of its group's tile j (j < kiln_cnt),\n"
    "    // the last thread meanwhile for P(g); each warp folds its aggregates in\n"
    "    // a fixed tree, thread 0 the warps in order\n"
    "    kiln_sc_t *kiln_wl = kiln_wt + kiln_sc_nw + 1;\n"
    "    if (kiln_cnt > 0 || kiln_gi > 0) {\n"
    "        const int kiln_lane = threadIdx.x & 31;\n"
    "        const bool kiln_wantp = threadIdx.x == kiln_sc_w - 1 && kiln_gi > 0;\n"
    "        kiln_sc_t kiln_e = kiln_sc_identity(), kiln_pv = kiln_e;\n"
    "        if ((long long)(threadIdx.x & ~31u) < kiln_cnt || (kiln_gi > 0 && (threadIdx.x | 31u) == "
    "kiln_sc_w - 1)) {\n"
    "            bool kiln_got = threadIdx.x >= kiln_cnt && !kiln_wantp;\n"
    "            for (;;) {\n"
    "                if (!kiln_got)\n"
    "                    kiln_got = kiln_wantp ? kiln_sc_poll(kiln_sc_slots(kiln_aggr, kiln_P0 + kiln_gb + "
    "kiln_gi), "
    "&kiln_pv)\n"
    "                                          : kiln_sc_poll(kiln_sc_slots(kiln_aggr, kiln_tb + "
    "threadIdx.x), &kiln_e);\n"
    "                if (__all_sync(0xffffffffu, kiln_got)) break;\n"
    "                KILN_SC_PAUSE();\n"
    "            }\n"
    "            for (int kiln_d = 1; kiln_d < 32; kiln_d <<= 1) {\n"
    "                const kiln_sc_t kiln_o = kiln_rd_shfl_xor(kiln_e, kiln_d);\n"
    "                if ((kiln_lane & kiln_d) == 0) kiln_e = kiln_sc_op(kiln_e, kiln_o);\n"
    "            }\n"
    "        }\n"
    "        if (kiln_lane == 0) kiln_wl[threadIdx.x >> 5] = kiln_e;\n"
    "        if (kiln_wantp) kiln_wt[kiln_sc_nw] = kiln_pv;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) {\n"
    "        kiln_sc_t kiln_pre = kiln_wl[0];\n"
    "        for (int kiln_w = 1; kiln_w < kiln_sc_nw && kiln_w * 32 < kiln_cnt; kiln_w++)\n"
    "            kiln_pre = kiln_sc_op(kiln_pre, kiln_wl[kiln_w]);\n"
    "        if (kiln_gi > 0) kiln_pre = kiln_cnt > 0 ? kiln_sc_op(kiln_wt[kiln_sc_nw], kiln_pre) : "
    "kiln_wt[kiln_sc_nw];\n"
    "        if (kiln_cnt == kiln_sc_w - 1 && kiln_t + 1 < kiln_T)\n"
    "            kiln_sc_publish(kiln_sc_slots(kiln_aggr, kiln_P0 + kiln_gb + kiln_gi + 1), "
    "kiln_sc_op(kiln_pre, "
    "kiln_total));\n"
    "        kiln_wt[kiln_sc_nw] = kiln_pre;\n"
    "        kiln_has = kiln_gi > 0 || kiln_cnt > 0;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    kiln_sc_t kiln_acc = kiln_has ? (threadIdx.x ? kiln_sc_op(kiln_wt[kiln_sc_nw], kiln_texcl) : "
    "kiln_wt[kiln_sc_nw]) : kiln_texcl;\n"
    "    // in place when the sizes match: a thread rewrites only its own items\n"
    "    kiln_sc_out *kiln_so = (kiln_sc_out *)(kiln_smb + (kiln_sc_inplace ? 0 : KILN_SC_PAD(kiln_sc_tile) "
    "* "
    "sizeof(kiln_sc_in)));\n"
    "    if (kiln_excl) {\n"
    "#pragma unroll\n"
    "        for (int kiln_k = 0; kiln_k < kiln_sc_items; kiln_k++) {\n"
    "            const kiln_sc_t kiln_x = KILN_SC_X(kiln_k); // before the store: in place\n"
    "            kiln_sc_store((char *)&kiln_so[KILN_SC_PAD(threadIdx.x * kiln_sc_items + kiln_k)], "
    "kiln_acc);\n"
    "            kiln_acc = kiln_sc_op(kiln_acc, kiln_x);\n"
    "        }\n"
    "    } else {\n"
    "#pragma unroll\n"
    "        for (int kiln_k = 0; kiln_k < kiln_sc_items; kiln_k++) {\n"
    "            kiln_acc = kiln_sc_op(kiln_acc, KILN_SC_X(kiln_k));\n"
    "            kiln_sc_store((char *)&kiln_so[KILN_SC_PAD(threadIdx.x * kiln_sc_items + kiln_k)], "
    "kiln_acc);\n"
    "        }\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if (kiln_sc_vout > 1 && kiln_nv == kiln_sc_tile) {\n"
    "        typedef kiln_uf_vec<kiln_sc_out, kiln_sc_vout> kiln_vo;\n"
    "        kiln_vo *kiln_dst = (kiln_vo *)(kiln_po + kiln_l0 * (long long)sizeof(kiln_sc_out));\n"
    "#pragma unroll\n"
    "        for (int kiln_j = 0; kiln_j < kiln_sc_items / kiln_sc_vout; kiln_j++) {\n"
    "            const int kiln_c = kiln_j * kiln_sc_block + threadIdx.x;\n"
    "            kiln_vo kiln_v;\n"
    "#pragma unroll\n"
    "            for (int kiln_e = 0; kiln_e < kiln_sc_vout; kiln_e++)\n"
    "                kiln_v.v[kiln_e] = kiln_so[KILN_SC_PAD(kiln_c * kiln_sc_vout + kiln_e)];\n"
    "            kiln_dst[kiln_c] = kiln_v;\n"
    "        }\n"
    "    } else {\n"
    "#pragma unroll\n"
    "        for (int kiln_j = 0; kiln_j < kiln_sc_items; kiln_j++) {\n"
    "            const int kiln_c = kiln_j * kiln_sc_block + threadIdx.x;\n"
    "            if (kiln_c < kiln_nv)\n"
    "                *(kiln_sc_out *)(kiln_po + (kiln_l0 + kiln_c) * kiln_oL) = "
    "kiln_so[KILN_SC_PAD(kiln_c)];\n"
    "        }\n"
    "    }\n"
    "}\n";

int64_t sc_onepass_workspace_bytes(const sc_plan *p) {
    int64_t tiles = p->M * p->T, groups = p->M * ((p->T + p->group - 1) / p->group);
    return (tiles + groups) * SC_SLOT_BYTES + 16;
}

void sc_emit_gpu_onepass(kiln_text *t, const sc_plan *p) {
    kiln_text params = {0};
    sc_emit_params(&params, p);
    kiln_text_printf(t,
                     "// single-pass scan: %d threads x %d items per tile, groups of %d tiles, vectors "
                     "of %d in, %d out\n",
                     p->block, p->items, p->group, p->vin, p->vout);
    kiln_text_printf(t,
                     "static constexpr int kiln_sc_block = %d, kiln_sc_items = %d, kiln_sc_tile = %d, "
                     "kiln_sc_nw = %d,\n"
                     "    kiln_sc_w = %d, kiln_sc_vin = %d, kiln_sc_vout = %d;\n"
                     "#define KILN_SC_PAD(i) ((i) + ((i) >> 5))\n"
                     "typedef %s kiln_sc_out;\n"
                     "static constexpr bool kiln_sc_inplace = sizeof(kiln_sc_in) == sizeof(kiln_sc_out);\n",
                     p->block, p->items, p->block * p->items, p->block / 32, p->group, p->vin, p->vout,
                     rd_storage_type(p->out_store));
    kiln_text_puts(t, onepass_helpers);
    /* the workspace's slots and counter zeroed on the scan's stream */
    kiln_text_printf(t, "__global__ void __launch_bounds__(256) kiln_sc_init(%s) {\n",
                     params.data ? params.data : "");
    kiln_text_printf(t, "    (void)kiln_out; (void)kiln_in; (void)kiln_excl; (void)kiln_L; (void)kiln_sL; "
                        "(void)kiln_oL;\n    (void)kiln_tile; (void)kiln_per;\n");
    for (int d = 0; d < p->nd; d++)
        kiln_text_printf(t, "    (void)kiln_rs%d; (void)kiln_ri%d; (void)kiln_ro%d;\n", d, d, d);
    kiln_text_puts(t, onepass_init);
    kiln_text_printf(t, "__global__ void __launch_bounds__(%d) kiln_sc_onepass(%s) {\n", p->block,
                     params.data ? params.data : "");
    kiln_text_printf(
        t,
        "    (void)kiln_tile; (void)kiln_per;\n"
        "    __shared__ __align__(16) unsigned char kiln_smb[KILN_SC_PAD(kiln_sc_tile) * "
        "(sizeof(kiln_sc_in) + (kiln_sc_inplace ? 0 : sizeof(kiln_sc_out)))];\n"
        "    __shared__ __align__(16) unsigned char kiln_smw[(2 * kiln_sc_nw + 1) * sizeof(kiln_sc_t)];\n"
        "    __shared__ unsigned int kiln_sid;\n"
        "    __shared__ bool kiln_has;\n"
        "    kiln_sc_t *kiln_wt = (kiln_sc_t *)kiln_smw;\n"
        "    const long long kiln_G = (kiln_T + kiln_sc_w - 1) / kiln_sc_w;\n"
        "    const long long kiln_P0 = kiln_M * kiln_T; // the first group-prefix slot\n"
        "    if (threadIdx.x == 0)\n"
        "        kiln_sid = atomicAdd((unsigned int *)kiln_sc_slots(kiln_aggr, kiln_P0 + kiln_M * kiln_G), "
        "1u);\n"
        "    __syncthreads();\n"
        "    const long long kiln_id = kiln_sid, kiln_m = kiln_id / kiln_T, kiln_t = kiln_id %% kiln_T;\n");
    sc_emit_row_bases(t, p, "kiln_m");
    kiln_text_puts(t, onepass_body);
    kiln_text_free(&params);
}
