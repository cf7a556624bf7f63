/* plan.c: which kernel shape a call gets, from its shapes and strides.
 *
 * CPU: always GU_CPU_LOOP (a block per chunk of loop indices, each a plain
 * loop the host compiler inlines the body into and may vectorise).
 * GPU, in order of preference, for one (coalesced) loop dim whose array
 * operands hold their rows back to back (PACKED) or are the same row for
 * every index (broadcast):
 *  - GU_GPU_ROWS_REG: rows of at most 32 bytes. Each thread moves its own
 *    rows with one or two vector accesses; neighbouring threads touch
 *    neighbouring rows, so a warp reads and writes whole contiguous spans.
 *  - GU_GPU_ROWS_SMEM: larger rows. A block copies its tile of rows between
 *    global and shared memory with coalesced 16-byte words, and each thread
 *    runs the body on its row in shared memory.
 * Anything else: GU_GPU_GENERIC, a thread per loop index with the innermost
 * loop dim chosen (by the caller) as the one of smallest stride, so that
 * neighbouring threads touch neighbouring addresses when the data allows. */
#include <string.h>

#include "core/dtype.h"
#include "gufunc/gufunc.h"

const char *gu_strategy_name(int strategy) {
    switch (strategy) {
    case GU_CPU_LOOP: return "cpu_loop";
    case GU_GPU_GENERIC: return "generic";
    case GU_GPU_ROWS_REG: return "rows_reg";
    case GU_GPU_ROWS_SMEM: return "rows_smem";
    default: return "unknown";
    }
}

const char *gu_storage_type(kiln_dtype t) {
    return t == KILN_FLOAT16 ? "kiln_gu_half" : t == KILN_BFLOAT16 ? "kiln_gu_bf16" : kiln_dtype_c_type(t);
}
const char *gu_compute_type(kiln_dtype t) { return kiln_dtype_is_half(t) ? "float" : kiln_dtype_c_type(t); }

/* Largest power of two <= 16 dividing both x and the address. */
static int vector_width(uint64_t x, uintptr_t addr) {
    int w = 16;
    while (w > 1 && ((x % (uint64_t)w) != 0 || (addr % (uintptr_t)w) != 0)) w /= 2;
    return w;
}

static int64_t row_elems(const gu_plan *p, const gu_layout *l, int k) {
    int64_t n = 1;
    for (int j = 0; j < l->core_nd[k]; j++) n *= p->dims[l->core_dim[k][j]];
    return n;
}

/* Is operand k's storage staged (rows copied in/out) on the GPU fast paths? */
static int staged(const gu_plan *p, int k) {
    const gu_key *key = &p->key;
    return key->kind[k] != GU_OP_VALUE && !key->bcast[k] && key->alias[k] == k;
}

void gu_choose_strategy(gu_plan *p, const gu_layout *l, kiln_backend_kind backend, size_t max_shared_bytes) {
    gu_key *key = &p->key;
    memset(key->vecw, 0, sizeof key->vecw);
    key->rows_per_block = 0;
    p->smem_bytes = 0;
    memset(p->smem_offset, 0, sizeof p->smem_offset);
    if (backend == KILN_BACKEND_CPU) {
        key->strategy = GU_CPU_LOOP;
        return;
    }
    key->strategy = GU_GPU_GENERIC;
    if (p->nloop != 1 || !key->baked) return;
    int fits_reg = 1;
    int64_t reg_bytes = 0, row_bytes_total = 0, max_row = 0;
    for (int k = 0; k < p->nops; k++) {
        if (key->kind[k] == GU_OP_VALUE) continue;
        if (key->bcast[k]) {
            if (k >= key->nin) return; /* a broadcast output: every thread writes the same row */
            continue;
        }
        if (key->kind[k] != GU_OP_PACKED) return;
        if (!staged(p, k)) continue;
        int64_t b = row_elems(p, l, k) * (int64_t)kiln_dtype_size(key->dtype[k]);
        if (b == 0) return;
        if (b > 32) fits_reg = 0;
        reg_bytes += b;
        row_bytes_total += b;
        if (b > max_row) max_row = b;
    }
    if (fits_reg && reg_bytes <= 128) {
        for (int k = 0; k < p->nops; k++) {
            if (!staged(p, k)) continue;
            int64_t b = row_elems(p, l, k) * (int64_t)kiln_dtype_size(key->dtype[k]);
            int w = vector_width((uint64_t)b, (uintptr_t)p->data[k]);
            if (w < (int)kiln_dtype_size(key->dtype[k]) && w < 4) return; /* misaligned elements */
            key->vecw[k] = (uint8_t)w;
        }
        key->strategy = GU_GPU_ROWS_REG;
        return;
    }
    if (max_row > 4096) return;
    size_t limit = max_shared_bytes ? max_shared_bytes : 48 * 1024;
    if (limit > 48 * 1024) limit = 48 * 1024; /* no opt-in needed, and room for two blocks per SM */
    int rows = 256;
    /* each staged operand's tile rounded up to 16 bytes */
    for (;;) {
        size_t total = 0;
        for (int k = 0; k < p->nops; k++)
            if (staged(p, k)) {
                size_t b =
                    (size_t)(row_elems(p, l, k) * (int64_t)kiln_dtype_size(key->dtype[k])) * (size_t)rows;
                total += (b + 15) & ~(size_t)15;
            }
        if (total <= limit) break;
        if (rows == 32) return;
        rows /= 2;
    }
    size_t off = 0;
    for (int k = 0; k < p->nops; k++) {
        if (!staged(p, k)) continue;
        uint64_t b = (uint64_t)(row_elems(p, l, k) * (int64_t)kiln_dtype_size(key->dtype[k]));
        int w = vector_width(b * (uint64_t)rows, (uintptr_t)p->data[k]);
        if (w < (int)kiln_dtype_size(key->dtype[k]) && w < 4) return;
        key->vecw[k] = (uint8_t)w;
        p->smem_offset[k] = off;
        off += ((size_t)b * (size_t)rows + 15) & ~(size_t)15;
    }
    (void)row_bytes_total;
    p->smem_bytes = off;
    key->rows_per_block = rows;
    key->strategy = GU_GPU_ROWS_SMEM;
}
