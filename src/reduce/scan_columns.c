/* scan_columns.c: the CUDA column scan (scans whose neighbours lie next to
 * each other in memory, such as cumsum along axis 0 of a C-contiguous
 * matrix), split among blocks, with the bits of the sequential scan.
 *
 * A thread per scan reads a column with coalesced loads, but one thread per
 * column leaves too few loads in flight to fill the memory system (0.105 of
 * a device copy at 16384^2 float32 on the H100). Here a block takes a tile
 * of WIDTH neighbouring scans times a chunk of GROUPS x ROWS elements of
 * each (GROUPS row groups of WIDTH threads, ROWS elements per thread):
 *   1. it takes its id from an atomic counter (chunk-major), so it only ever
 *      waits for blocks that are already running: no deadlock;
 *   2. every thread loads its ROWS elements into registers at once (issued
 *      before any waiting);
 *   3. each thread of its first row group waits for its scan's inclusive
 *      prefix at the end of the chunk above (a tagged slot per scan, below);
 *      the row groups then combine their elements onto it in order, handing
 *      the running values from group to group through shared memory (named
 *      barriers on a GPU, so that no thread loops over the groups and its
 *      outputs can take its inputs' registers), and the last group
 *      publishes the chunk's last values at once;
 *   4. it stores its results.
 * Every result is ((prefix . x0) . x1) ..., exactly the sequential scan's
 * order, so the values are those of the thread-per-scan kernel and of the
 * CPU backend (bit for bit), whatever the timing. Only the chain of
 * prefixes is serial: one link between blocks per chunk, whose cost is
 * round trips through L2 under full load (~1.5-2 us each on an H100),
 * whatever the chunk's size. The first version (one group of 128 float32
 * rows, a flag per block behind a fence, then the values) paid ~4 trips a
 * link and 128 links per 16384-row column: ~0.95 ms, 0.75 of a copy. Now a
 * link is ~1.5 trips (one tagged store, one poll) and row groups make a
 * chunk taller without more registers per thread, so there are fewer links
 * (GROUPS x ROWS = 256: 64 links) while the adds inside a chunk, the only
 * other serial work, stay cheap (a float64 add per row). docs/PERF_NOTES.md
 * has the arithmetic.
 * Prefixes live in a ring of two slots per scan: chunk k + 2 overwrites
 * chunk k's value only after reading chunk k + 1's, which chunk k + 1
 * published after reading (and adding) chunk k's.
 *
 * The three shapes are settings (KILN_SCAN_COLUMN_BYTES, _GROUPS, _WIDTH) so
 * that one GPU run can sweep them (reduce_bench's "sweep"). */
#include "core/dtype.h"
#include "core/settings.h"
#include "reduce/scan_gpu.h"

/* Defaults (see PERF_NOTES.md): 64 scans per block (float32: two 128-byte
 * lines per row), 256 bytes of a chunk per thread (64 float32 rows, inputs
 * and outputs in the same registers), 4 row groups: 256 threads, chunks of
 * 256 float32 rows. */
#define SC_COL_WIDTH 64
#define SC_COL_BYTES 256
#define SC_COL_GROUPS 4

int sc_columns_fit(sc_plan *p, int64_t in_size, int64_t out_size) {
    if (p->nd < 1 || p->sL == in_size) return 0;
    if (p->rin[p->nd - 1] != in_size || p->rout[p->nd - 1] != out_size) return 0;
    int width = (int)kiln_setting_int("KILN_SCAN_COLUMN_WIDTH", 32, 1024, SC_COL_WIDTH) / 32 * 32;
    int budget = (int)kiln_setting_int("KILN_SCAN_COLUMN_BYTES", 32, 1024, SC_COL_BYTES);
    /* named barriers 1..groups-1 hand values on (barrier 0 is __syncthreads) */
    int groups = (int)kiln_setting_int("KILN_SCAN_COLUMN_GROUPS", 1, 16, SC_COL_GROUPS);
    while (groups > 1 && width * groups > 1024) groups /= 2;
    int64_t per_row = in_size == out_size ? in_size : in_size + out_size;
    int rows = 128; /* more would not fit a thread's registers */
    while (rows > 8 && rows * per_row > budget) rows /= 2;
    int64_t chunk = (int64_t)rows * groups;
    /* one chunk: the thread-per-scan kernel does the same with no waiting;
     * fewer scans than a warp: lanes idle, the single pass does better */
    if (p->L <= chunk || p->M < 32) return 0;
    int64_t chunks = (p->L + chunk - 1) / chunk, tiles = (p->M + width - 1) / width;
    if (chunks * tiles >= ((int64_t)1 << 31)) return 0; /* one grid dimension of blocks */
    p->block = width * groups;
    p->group = groups;
    p->items = rows;
    p->tile = chunk;
    p->T = chunks;
    p->per = tiles;
    return 1;
}

/* Workspace: the block counter (16 bytes), then a ring of two slots per
 * scan (SC_SLOT_BYTES each at most), all zeroed by kiln_sc_colinit. */
int64_t sc_columns_workspace_bytes(const sc_plan *p) { return 16 + 2 * p->M * SC_SLOT_BYTES; }

/* A prefix travels from block to block in its scan's slot with a tag (the
 * number of the chunk it ends, plus one; 0: never written), so that each
 * thread waits for its own scan's value and nothing waits on the block as
 * a whole. A value of at most 8 bytes and its tag are one 16-byte access
 * (the single pass does the same, scan_gpu.c): one store publishes, one
 * load reads both, no fence, no second trip for the value. Larger values
 * go as value, fence, tag (and tag, fence, value to read). In L2 (.cg): L1
 * is not coherent. The CPU backend (no __CUDA_ARCH__) has no PTX: there
 * the tag is stored with release and loaded with acquire. */
static const char columns_helpers[] =
    "static_assert(sizeof(kiln_sc_t) <= 32, \"scan value larger than its slot\");\n"
    "static constexpr bool kiln_sc_packed = sizeof(kiln_sc_t) <= 8;\n"
    "// u64 words per slot, and the tag's word: packed {value, tag}; else {value x4, tag, pad}\n"
    "static constexpr int kiln_sc_slotw = kiln_sc_packed ? 2 : 6, kiln_sc_tagw = kiln_sc_packed ? 1 : 4;\n"
    "static constexpr int kiln_sc_nwords = (int)((sizeof(kiln_sc_t) + 3) / 4);\n"
    "static __device__ __forceinline__ void kiln_sc_words(kiln_sc_t v, unsigned int *w) {\n"
    "    char *d = reinterpret_cast<char *>(w);\n"
    "    const char *c = reinterpret_cast<const char *>(&v);\n"
    "    for (int b = 0; b < kiln_sc_nwords * 4; b++) d[b] = b < (int)sizeof(kiln_sc_t) ? c[b] : 0;\n"
    "}\n"
    "static __device__ __forceinline__ kiln_sc_t kiln_sc_value(const void *w) {\n"
    "    kiln_sc_t v;\n"
    "    char *d = reinterpret_cast<char *>(&v);\n"
    "    const char *c = reinterpret_cast<const char *>(w);\n"
    "    for (int b = 0; b < (int)sizeof(kiln_sc_t); b++) d[b] = c[b];\n"
    "    return v;\n"
    "}\n"
    "#ifdef __CUDA_ARCH__\n"
    "static __device__ __forceinline__ void kiln_sc_cst2(unsigned long long *p, unsigned long long a, "
    "unsigned long long b) {\n"
    "    asm volatile(\"st.global.cg.v2.u64 [%0], {%1, %2};\" ::\"l\"(p), \"l\"(a), \"l\"(b) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void kiln_sc_cld2(const unsigned long long *p, unsigned long long &a, "
    "unsigned long long &b) {\n"
    "    asm volatile(\"ld.global.cg.v2.u64 {%0, %1}, [%2];\" : \"=l\"(a), \"=l\"(b) : \"l\"(p) : "
    "\"memory\");\n"
    "}\n"
    "#endif\n"
    "// Publishes v in slot s with tag t.\n"
    "static __device__ __forceinline__ void kiln_sc_cpublish(unsigned long long *s, kiln_sc_t v, "
    "unsigned long long t) {\n"
    "    unsigned long long w[4] = {0, 0, 0, 0};\n"
    "    kiln_sc_words(v, reinterpret_cast<unsigned int *>(w));\n"
    "#ifdef __CUDA_ARCH__\n"
    "    if (kiln_sc_packed) {\n"
    "        kiln_sc_cst2(s, w[0], t);\n"
    "    } else {\n"
    "        kiln_sc_cst2(s, w[0], w[1]);\n"
    "        if (sizeof(kiln_sc_t) > 16) kiln_sc_cst2(s + 2, w[2], w[3]);\n"
    "        __threadfence();\n"
    "        kiln_sc_cst2(s + 4, t, 0ull);\n"
    "    }\n"
    "#else\n"
    "    for (int i = 0; i < kiln_sc_tagw; i++) s[i] = w[i];\n"
    "    __atomic_store_n(s + kiln_sc_tagw, t, __ATOMIC_RELEASE);\n"
    "#endif\n"
    "}\n"
    "// Whether slot s holds tag t; if so *v is its value.\n"
    "static __device__ __forceinline__ bool kiln_sc_cpoll(const unsigned long long *s, unsigned long long t, "
    "kiln_sc_t *v) {\n"
    "    unsigned long long w[6] = {0, 0, 0, 0, 0, 0};\n"
    "#ifdef __CUDA_ARCH__\n"
    "    if (kiln_sc_packed) {\n"
    "        kiln_sc_cld2(s, w[0], w[1]);\n"
    "        if (w[1] != t) return false;\n"
    "    } else {\n"
    "        kiln_sc_cld2(s + 4, w[4], w[5]);\n"
    "        if (w[4] != t) return false;\n"
    "        __threadfence();\n"
    "        kiln_sc_cld2(s, w[0], w[1]);\n"
    "        if (sizeof(kiln_sc_t) > 16) kiln_sc_cld2(s + 2, w[2], w[3]);\n"
    "    }\n"
    "#else\n"
    "    if (__atomic_load_n(s + kiln_sc_tagw, __ATOMIC_ACQUIRE) != t) return false;\n"
    "    for (int i = 0; i < kiln_sc_tagw; i++) w[i] = s[i];\n"
    "#endif\n"
    "    *v = kiln_sc_value(w);\n"
    "    return true;\n"
    "}\n"
    "#if __CUDA_ARCH__ >= 700\n#define KILN_SC_COL_PAUSE() __nanosleep(20)\n#else\n"
    "#define KILN_SC_COL_PAUSE()\n#endif\n";

/* After the row bases of scan kiln_m: load, wait (each thread of the first
 * row group for its scan's prefix), combine group by group, publish (each
 * thread of the last group), store. */
static const char columns_body[] =
    "    const long long kiln_l0 = kiln_k * kiln_sc_chunk + (long long)kiln_g * kiln_sc_rows;\n"
    "    const long long kiln_left = kiln_L - kiln_l0;\n"
    "    const int kiln_nr = kiln_left <= 0 ? 0 : kiln_left < kiln_sc_rows ? (int)kiln_left : "
    "kiln_sc_rows;\n"
    "    kiln_sc_in kiln_x[kiln_sc_rows];\n"
    "#pragma unroll\n"
    "    for (int kiln_j = 0; kiln_j < kiln_sc_rows; kiln_j++)\n"
    "        if (kiln_live && kiln_j < kiln_nr)\n"
    "            kiln_x[kiln_j] = *(const kiln_sc_in *)(kiln_pi + (kiln_l0 + kiln_j) * kiln_sL);\n"
    "    // slot of scan m for chunk c: ring row c & 1\n"
    "    unsigned long long *kiln_ring = (unsigned long long *)((char *)kiln_aggr + 16);\n"
    "#define KILN_SC_SLOT(c) (kiln_ring + (((c) & 1) * kiln_M + kiln_m) * kiln_sc_slotw)\n"
    "    __shared__ unsigned int kiln_carry[kiln_sc_groups > 1 ? kiln_sc_cblock * kiln_sc_nwords : 1];\n"
    "    kiln_sc_t kiln_acc = kiln_sc_identity();\n"
    "    if (kiln_k > 0 && kiln_g == 0 && kiln_live)\n"
    "        while (!kiln_sc_cpoll(KILN_SC_SLOT(kiln_k - 1), (unsigned long long)kiln_k, &kiln_acc)) "
    "KILN_SC_COL_PAUSE();\n"
    "    // lanes that waited and lanes that did not meet again before the barriers below\n"
    "    if (kiln_sc_groups > 1) __syncwarp();\n"
    "    kiln_sc_out kiln_y[kiln_sc_rows];\n"
    "#define KILN_SC_SCAN_ROWS()                                                             \\\n"
    "    _Pragma(\"unroll\") for (int kiln_j = 0; kiln_j < kiln_sc_rows; kiln_j++)               \\\n"
    "        if (kiln_j < kiln_nr) {                                                        \\\n"
    "            const kiln_sc_t kiln_v = kiln_sc_load((const char *)&kiln_x[kiln_j]);       \\\n"
    "            if (kiln_excl) kiln_sc_store((char *)&kiln_y[kiln_j], kiln_acc);            \\\n"
    "            kiln_acc = kiln_sc_op(kiln_acc, kiln_v);                                    \\\n"
    "            if (!kiln_excl) kiln_sc_store((char *)&kiln_y[kiln_j], kiln_acc);           \\\n"
    "        }\n"
    "#ifdef __CUDA_ARCH__\n"
    "    // the row groups hand their running values on in order through named\n"
    "    // barriers (barrier g: group g - 1 arrives, group g waits), each thread\n"
    "    // straight through, so that its outputs take its inputs' registers\n"
    "    const unsigned int kiln_pair = 2u * kiln_sc_cblock;\n"
    "    if (kiln_g > 0) {\n"
    "        asm volatile(\"bar.sync %0, %1;\" ::\"r\"(kiln_g), \"r\"(kiln_pair) : \"memory\");\n"
    "        kiln_acc = kiln_sc_value(kiln_carry + kiln_c * kiln_sc_nwords);\n"
    "    }\n"
    "    KILN_SC_SCAN_ROWS();\n"
    "    if (kiln_g + 1 < kiln_sc_groups) {\n"
    "        kiln_sc_words(kiln_acc, kiln_carry + kiln_c * kiln_sc_nwords);\n"
    "        asm volatile(\"bar.arrive %0, %1;\" ::\"r\"(kiln_g + 1), \"r\"(kiln_pair) : \"memory\");\n"
    "    }\n"
    "#else\n"
    "    // the CPU backend: the same order through block barriers\n"
    "    for (int kiln_s = 0; kiln_s < kiln_sc_groups; kiln_s++) {\n"
    "        if (kiln_g == kiln_s) {\n"
    "            if (kiln_s > 0) kiln_acc = kiln_sc_value(kiln_carry + kiln_c * kiln_sc_nwords);\n"
    "            KILN_SC_SCAN_ROWS();\n"
    "            if (kiln_s + 1 < kiln_sc_groups) kiln_sc_words(kiln_acc, kiln_carry + kiln_c * "
    "kiln_sc_nwords);\n"
    "        }\n"
    "        if (kiln_s + 1 < kiln_sc_groups) __syncthreads();\n"
    "    }\n"
    "#endif\n"
    "#undef KILN_SC_SCAN_ROWS\n"
    "    // the last group publishes its last values at once, then all store\n"
    "    if (kiln_g == kiln_sc_groups - 1 && kiln_k + 1 < kiln_T && kiln_live)\n"
    "        kiln_sc_cpublish(KILN_SC_SLOT(kiln_k), kiln_acc, (unsigned long long)(kiln_k + 1));\n"
    "#undef KILN_SC_SLOT\n"
    "#pragma unroll\n"
    "    for (int kiln_j = 0; kiln_j < kiln_sc_rows; kiln_j++)\n"
    "        if (kiln_live && kiln_j < kiln_nr) *(kiln_sc_out *)(kiln_po + (kiln_l0 + kiln_j) * kiln_oL) = "
    "kiln_y[kiln_j];\n"
    "}\n";

void sc_emit_gpu_columns(kiln_text *t, const sc_plan *p) {
    kiln_text params = {0};
    sc_emit_params(&params, p);
    const char *pl = params.data ? params.data : "";
    int groups = p->group > 0 ? p->group : 1;
    kiln_text_printf(t, "// column scan: %d scans x %d groups x %d rows per block, chained prefixes\n",
                     p->block / groups, groups, p->items);
    kiln_text_printf(t,
                     "static constexpr int kiln_sc_cblock = %d, kiln_sc_groups = %d, kiln_sc_rows = %d;\n"
                     "static constexpr long long kiln_sc_chunk = %lld;\n"
                     "typedef %s kiln_sc_out;\n",
                     p->block / groups, groups, p->items, (long long)p->items * groups,
                     rd_storage_type(p->out_store));
    kiln_text_puts(t, columns_helpers);
    /* the counter and the ring zeroed on the scan's stream */
    kiln_text_printf(t, "__global__ void __launch_bounds__(256) kiln_sc_colinit(%s) {\n", pl);
    kiln_text_printf(t, "    (void)kiln_out; (void)kiln_in; (void)kiln_excl; (void)kiln_M; (void)kiln_L;\n"
                        "    (void)kiln_sL; (void)kiln_oL; (void)kiln_T; (void)kiln_tile;\n");
    for (int d = 0; d < p->nd; d++)
        kiln_text_printf(t, "    (void)kiln_rs%d; (void)kiln_ri%d; (void)kiln_ro%d;\n", d, d, d);
    kiln_text_printf(t,
                     "    unsigned int *kiln_w = (unsigned int *)kiln_aggr;\n"
                     "    const long long kiln_n = 4 + 2 * kiln_M * kiln_sc_slotw * 2;\n"
                     "    for (long long kiln_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; kiln_i < "
                     "kiln_n;\n"
                     "         kiln_i += (long long)gridDim.x * blockDim.x)\n"
                     "        kiln_w[kiln_i] = 0;\n"
                     "}\n");
    /* kiln_T: chunks per scan, kiln_per: tiles of scans, kiln_tile: rows per
     * chunk. No minimum of blocks per SM in the bounds: ptxas then spills
     * (sm_90, 64 float32 rows a thread: 113 registers free, spills at 128). */
    kiln_text_printf(t, "__global__ void __launch_bounds__(%d) kiln_sc_columns(%s) {\n", p->block, pl);
    kiln_text_printf(
        t, "    (void)kiln_tile;\n"
           "    __shared__ unsigned int kiln_sid;\n"
           "    if (threadIdx.x == 0) kiln_sid = atomicAdd((unsigned int *)kiln_aggr, 1u);\n"
           "    __syncthreads();\n"
           "    const long long kiln_k = kiln_sid / kiln_per, kiln_ct = kiln_sid %% kiln_per;\n"
           "    const int kiln_c = (int)(threadIdx.x %% kiln_sc_cblock), kiln_g = (int)(threadIdx.x / "
           "kiln_sc_cblock);\n"
           "    const long long kiln_m0 = kiln_ct * kiln_sc_cblock + kiln_c;\n"
           "    const bool kiln_live = kiln_m0 < kiln_M;\n"
           "    const long long kiln_m = kiln_live ? kiln_m0 : 0;\n");
    sc_emit_row_bases(t, p, "kiln_m");
    kiln_text_puts(t, columns_body);
    kiln_text_free(&params);
}
