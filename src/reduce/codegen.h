/* codegen.h: pieces of the reduction generator shared by codegen.c (the
 * operator, the CUDA loops, the module) and codegen_cpu.c (the CPU loops),
 * private to src/reduce/. */
#ifndef KILN_REDUCE_CODEGEN_H
#define KILN_REDUCE_CODEGEN_H

#include "core/text.h"
#include "reduce/reduce.h"

/* One kernel parameter: its name and type in the source, its launch value. */
typedef struct rd_param {
    char name[24];
    char type[64];
    kiln_value value;
} rd_param;

#define RD_MAX_PARAMS 128

void rd_emit_param_list(kiln_text *t, const rd_param *pp, int n);
/* const char *kiln_b<i>: input i's address of output coordinate `var`
 * (consumed) over kept dims [0, upto). */
void rd_emit_bases(kiln_text *t, const rd_op *op, const rd_plan *p, const char *var, int upto);
/* kiln_rd_elem(...) of reduced element `r` relative to the kiln_b* bases. */
void rd_elem_call(char *buf, size_t cap, const rd_op *op, const rd_plan *p, const char *r, const char *colx);
/* Offsets kiln_ro<i> and index kiln_ri of reduced element `r` (ndr > 1). */
void rd_emit_unravel_r(kiln_text *t, const rd_op *op, const rd_plan *p, const char *r, const char *ind);

/* codegen.c: CUDA's loops (one group of threads per output, or a column
 * per thread) and the fixed second pass. */
void rd_emit_gpu_group(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np);
void rd_emit_gpu_column(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np);
void rd_emit_gpu_finish(kiln_text *t, const rd_plan *p);

/* codegen_cpu.c: the CPU loops (plain loops, vectorised, pairwise). */
void rd_emit_cpu_rows(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np);
void rd_emit_cpu_column(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np);
void rd_emit_cpu_finish(kiln_text *t, const rd_plan *p);

#endif
