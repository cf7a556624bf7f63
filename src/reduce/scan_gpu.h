/* scan_gpu.h: the CUDA scan kernels: single pass (scan_gpu.c) and chained
 * column scans (scan_columns.c). */
#ifndef KILN_REDUCE_SCAN_GPU_H
#define KILN_REDUCE_SCAN_GPU_H

#include "reduce/scan_codegen.h"

/* The CUDA kernels kiln_sc_init and kiln_sc_onepass. */
void sc_emit_gpu_onepass(kiln_text *t, const sc_plan *p);
/* Bytes of the single-pass workspace of plan p. */
int64_t sc_onepass_workspace_bytes(const sc_plan *p);
/* scan_columns.c: 1 when neighbouring scans of p lie next to each other in
 * memory and the column scan suits them; it then sets p's block, items,
 * tile, T and per for it (and changes nothing otherwise). */
int sc_columns_fit(sc_plan *p, int64_t in_size, int64_t out_size);
/* The CUDA kernels kiln_sc_colinit and kiln_sc_columns, and their workspace. */
void sc_emit_gpu_columns(kiln_text *t, const sc_plan *p);
int64_t sc_columns_workspace_bytes(const sc_plan *p);

#endif
