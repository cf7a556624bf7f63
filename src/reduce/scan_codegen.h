/* scan_codegen.h: the plan of one scan call and the pieces of its generator
 * (scan_codegen.c) shared by scan.c (the plan, the CPU and sequential
 * kernels, the launch) and scan_gpu.c (the CUDA single-pass kernel),
 * private to src/reduce/. */
#ifndef KILN_REDUCE_SCAN_CODEGEN_H
#define KILN_REDUCE_SCAN_CODEGEN_H

#include "core/text.h"
#include "reduce/scan.h"

/* Bytes of one scan value with its flag in the single-pass workspace (every
 * scan value type kiln makes, flag-wrapped complex128 included, fits). */
#define SC_SLOT_BYTES 48

typedef struct sc_plan {
    kiln_backend_kind backend;
    kiln_dtype in_store, out_store;
    int tiled; /* CUDA: the single-pass kernel; CPU: three passes over pieces */
    int chain; /* CUDA: the column scan (scan_columns.c); T chunks of tile rows, per tiles of scans */
    int nd;    /* row dims */
    int64_t M, L, sL, oL, T, tile, per;
    int64_t rshape[KILN_MAX_DIMS], rin[KILN_MAX_DIMS], rout[KILN_MAX_DIMS];
    /* CUDA single pass: threads per block, items per thread (tile = block *
     * items), tiles per group (a multiple of 32), elements per vector load
     * and store (1: scalar accesses). Column scan: threads per block, rows
     * per thread, row groups per block (tile = items * group rows). */
    int block, items, group, vin, vout;
} sc_plan;

/* The kernel parameters, the same list for every scan kernel. */
void sc_emit_params(kiln_text *t, const sc_plan *p);
/* const char *kiln_pi / char *kiln_po: the first element in and out of row
 * `row` (an expression). */
void sc_emit_row_bases(kiln_text *t, const sc_plan *p, const char *row);
#endif
