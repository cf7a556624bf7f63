/* scan_gpu.h: the CUDA single-pass scan kernel (scan_gpu.c). */
#ifndef KILN_REDUCE_SCAN_GPU_H
#define KILN_REDUCE_SCAN_GPU_H

#include "reduce/scan_codegen.h"

/* The CUDA kernels kiln_sc_init and kiln_sc_onepass. */
void sc_emit_gpu_onepass(kiln_text *t, const sc_plan *p);
/* Bytes of the single-pass workspace of plan p. */
int64_t sc_onepass_workspace_bytes(const sc_plan *p);

#endif
