/* scan_columns.c: the CUDA column scan (scans whose neighbours lie next to
 * each other in memory, such as cumsum along axis 0 of a C-contiguous
 * matrix), split among blocks, with the bits of the sequential scan.
 *
 * A thread per scan reads a column with coalesced loads, but one thread per
 * column leaves too few loads in flight to fill the memory system (0.105 of
 * a device copy at 16384^2 float32 on the H100). Here a block takes a tile
 * of BLOCK neighbouring scans times a chunk of ROWS elements of each:
 *   1. it takes its id from an atomic counter (chunk-major), so it only ever
 *      waits for blocks that are already running: no deadlock;
 *   2. it loads its chunk into registers at once (ROWS loads in flight per
 *      thread, issued before any waiting);
 *   3. it waits for the inclusive prefix of the chunk above (published by
 *      that block as values, fence, flag), combines its elements onto it in
 *      order and publishes its own last value at once;
 *   4. it stores its results.
 * Every result is ((prefix . x0) . x1) ..., exactly the sequential scan's
 * order, so the values are those of the thread-per-scan kernel and of the
 * CPU backend (bit for bit), whatever the timing. Only the chain of
 * prefixes is serial: one link per chunk (128 for 16384 float32 rows),
 * while the blocks of later chunks already have their loads in flight.
 * Prefixes live in a ring of two chunk rows: chunk k + 2 overwrites chunk
 * k's values only after chunk k + 1 (which read them) has published. */
#include "core/dtype.h"
#include "reduce/scan_gpu.h"

/* Scans per block: 64 float32 columns are two 128-byte lines per row. */
#define SC_COL_BLOCK 64
/* Bytes of a chunk one thread keeps in registers (inputs and outputs):
 * 128 float32 rows in place, a link of the chain per 128 rows. */
#define SC_COL_BYTES 512

int sc_columns_fit(sc_plan *p, int64_t in_size, int64_t out_size) {
    if (p->nd < 1 || p->sL == in_size) return 0;
    if (p->rin[p->nd - 1] != in_size || p->rout[p->nd - 1] != out_size) return 0;
    int64_t per_row = in_size == out_size ? in_size : in_size + out_size;
    int rows = 128;
    while (rows > 8 && rows * per_row > SC_COL_BYTES) rows /= 2;
    /* one chunk: the thread-per-scan kernel does the same with no waiting;
     * fewer scans than a warp: lanes idle, the single pass does better */
    if (p->L <= rows || p->M < 32) return 0;
    int64_t chunks = (p->L + rows - 1) / rows, tiles = (p->M + SC_COL_BLOCK - 1) / SC_COL_BLOCK;
    if (chunks * tiles >= ((int64_t)1 << 31)) return 0; /* one grid dimension of blocks */
    p->block = SC_COL_BLOCK;
    p->items = rows;
    p->tile = rows;
    p->T = chunks;
    p->per = tiles;
    return 1;
}

/* Workspace: the block counter, a flag per column tile for each of the two
 * ring rows (16-byte aligned), then the ring's values. */
int64_t sc_columns_workspace_bytes(const sc_plan *p) {
    int64_t flags = (4 + 2 * p->per) * 4;
    flags = (flags + 15) / 16 * 16;
    return flags + 2 * p->M * SC_SLOT_BYTES;
}

static const char columns_helpers[] =
    "// a prefix as 32-bit words, read and written in L2 (.cg): L1 is not coherent\n"
    "static constexpr int kiln_sc_nwords = (int)((sizeof(kiln_sc_t) + 3) / 4);\n"
    "static __device__ __forceinline__ void kiln_sc_put(unsigned int *p, kiln_sc_t v) {\n"
    "    unsigned int w[kiln_sc_nwords];\n"
    "    char *d = reinterpret_cast<char *>(w);\n"
    "    const char *c = reinterpret_cast<const char *>(&v);\n"
    "    for (int b = 0; b < kiln_sc_nwords * 4; b++) d[b] = b < (int)sizeof(kiln_sc_t) ? c[b] : 0;\n"
    "    for (int i = 0; i < kiln_sc_nwords; i++) __stcg(p + i, w[i]);\n"
    "}\n"
    "static __device__ __forceinline__ kiln_sc_t kiln_sc_get(const unsigned int *p) {\n"
    "    unsigned int w[kiln_sc_nwords];\n"
    "    for (int i = 0; i < kiln_sc_nwords; i++) w[i] = __ldcg(p + i);\n"
    "    kiln_sc_t v;\n"
    "    char *d = reinterpret_cast<char *>(&v);\n"
    "    const char *c = reinterpret_cast<const char *>(w);\n"
    "    for (int b = 0; b < (int)sizeof(kiln_sc_t); b++) d[b] = c[b];\n"
    "    return v;\n"
    "}\n"
    "#if __CUDA_ARCH__ >= 700\n#define KILN_SC_COL_PAUSE() __nanosleep(20)\n#else\n"
    "#define KILN_SC_COL_PAUSE()\n#endif\n";

/* After the row bases of scan kiln_m: load, wait, combine, publish, store. */
static const char columns_body[] =
    "    const long long kiln_l0 = kiln_k * kiln_sc_rows;\n"
    "    const int kiln_nr = (int)(kiln_L - kiln_l0 < kiln_sc_rows ? kiln_L - kiln_l0 : kiln_sc_rows);\n"
    "    kiln_sc_in kiln_x[kiln_sc_rows];\n"
    "#pragma unroll\n"
    "    for (int kiln_j = 0; kiln_j < kiln_sc_rows; kiln_j++)\n"
    "        if (kiln_live && kiln_j < kiln_nr)\n"
    "            kiln_x[kiln_j] = *(const kiln_sc_in *)(kiln_pi + (kiln_l0 + kiln_j) * kiln_sL);\n"
    "    unsigned int *kiln_flags = (unsigned int *)kiln_aggr + 4;\n"
    "    unsigned int *kiln_vals = (unsigned int *)((char *)kiln_aggr + kiln_fbytes);\n"
    "    kiln_sc_t kiln_acc = kiln_sc_identity();\n"
    "    if (kiln_k > 0) {\n"
    "        const long long kiln_ring = (kiln_k - 1) & 1;\n"
    "        if (threadIdx.x == 0) {\n"
    "            const unsigned int *kiln_f = kiln_flags + kiln_ring * kiln_per + kiln_ct;\n"
    "            while (*(volatile const unsigned int *)kiln_f != (unsigned int)kiln_k) "
    "KILN_SC_COL_PAUSE();\n"
    "            __threadfence();\n"
    "        }\n"
    "        __syncthreads();\n"
    "        if (kiln_live) kiln_acc = kiln_sc_get(kiln_vals + (kiln_ring * kiln_M + kiln_m) * "
    "kiln_sc_nwords);\n"
    "    }\n"
    "    kiln_sc_out kiln_y[kiln_sc_rows];\n"
    "#pragma unroll\n"
    "    for (int kiln_j = 0; kiln_j < kiln_sc_rows; kiln_j++)\n"
    "        if (kiln_j < kiln_nr) {\n"
    "            const kiln_sc_t kiln_v = kiln_sc_load((const char *)&kiln_x[kiln_j]);\n"
    "            if (kiln_excl) kiln_sc_store((char *)&kiln_y[kiln_j], kiln_acc);\n"
    "            kiln_acc = kiln_sc_op(kiln_acc, kiln_v);\n"
    "            if (!kiln_excl) kiln_sc_store((char *)&kiln_y[kiln_j], kiln_acc);\n"
    "        }\n"
    "    if (kiln_k + 1 < kiln_T) {\n"
    "        if (kiln_live) kiln_sc_put(kiln_vals + ((kiln_k & 1) * kiln_M + kiln_m) * kiln_sc_nwords, "
    "kiln_acc);\n"
    "        __threadfence();\n"
    "        __syncthreads();\n"
    "        if (threadIdx.x == 0) atomicExch(kiln_flags + (kiln_k & 1) * kiln_per + kiln_ct, (unsigned "
    "int)(kiln_k + 1));\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int kiln_j = 0; kiln_j < kiln_sc_rows; kiln_j++)\n"
    "        if (kiln_live && kiln_j < kiln_nr) *(kiln_sc_out *)(kiln_po + (kiln_l0 + kiln_j) * kiln_oL) = "
    "kiln_y[kiln_j];\n"
    "}\n";

void sc_emit_gpu_columns(kiln_text *t, const sc_plan *p) {
    kiln_text params = {0};
    sc_emit_params(&params, p);
    const char *pl = params.data ? params.data : "";
    int64_t fbytes = sc_columns_workspace_bytes(p) - 2 * p->M * SC_SLOT_BYTES;
    kiln_text_printf(t, "// column scan: %d scans x %d rows per block, chained prefixes\n", p->block,
                     p->items);
    kiln_text_printf(t,
                     "static constexpr int kiln_sc_cblock = %d, kiln_sc_rows = %d;\n"
                     "typedef %s kiln_sc_out;\n",
                     p->block, p->items, rd_storage_type(p->out_store));
    kiln_text_puts(t, columns_helpers);
    /* the counter and the flags zeroed on the scan's stream */
    kiln_text_printf(t, "__global__ void __launch_bounds__(256) kiln_sc_colinit(%s) {\n", pl);
    kiln_text_printf(t, "    (void)kiln_out; (void)kiln_in; (void)kiln_excl; (void)kiln_M; (void)kiln_L;\n"
                        "    (void)kiln_sL; (void)kiln_oL; (void)kiln_T; (void)kiln_tile;\n");
    for (int d = 0; d < p->nd; d++)
        kiln_text_printf(t, "    (void)kiln_rs%d; (void)kiln_ri%d; (void)kiln_ro%d;\n", d, d, d);
    kiln_text_printf(
        t, "    unsigned int *kiln_w = (unsigned int *)kiln_aggr;\n"
           "    for (long long kiln_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kiln_i < 4 + "
           "2 * kiln_per;\n"
           "         kiln_i += (long long)gridDim.x * blockDim.x)\n"
           "        kiln_w[kiln_i] = 0;\n"
           "}\n");
    /* kiln_T: chunks per scan, kiln_per: tiles of scans, kiln_tile: rows per chunk */
    kiln_text_printf(t, "__global__ void __launch_bounds__(%d) kiln_sc_columns(%s) {\n", p->block, pl);
    kiln_text_printf(t,
                     "    (void)kiln_tile;\n"
                     "    const long long kiln_fbytes = %lld;\n"
                     "    __shared__ unsigned int kiln_sid;\n"
                     "    if (threadIdx.x == 0) kiln_sid = atomicAdd((unsigned int *)kiln_aggr, 1u);\n"
                     "    __syncthreads();\n"
                     "    const long long kiln_k = kiln_sid / kiln_per, kiln_ct = kiln_sid %% kiln_per;\n"
                     "    const long long kiln_m0 = kiln_ct * kiln_sc_cblock + threadIdx.x;\n"
                     "    const bool kiln_live = kiln_m0 < kiln_M;\n"
                     "    const long long kiln_m = kiln_live ? kiln_m0 : 0;\n",
                     (long long)fbytes);
    sc_emit_row_bases(t, p, "kiln_m");
    kiln_text_puts(t, columns_body);
    kiln_text_free(&params);
}
