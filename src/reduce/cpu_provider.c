/* cpu_provider.c: reductions on the CPU: plain loops, vectorised and
 * pairwise (codegen_cpu.c), a few tasks per core, the reduced elements cut
 * into whole 128-element pairwise blocks only when the outputs are too few
 * to keep every core busy. */
#include "reduce/codegen.h"
#include "reduce/rd_provider.h"

static int64_t ceil_div(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

static void cpu_cut(rd_plan *p, int units) {
    int64_t tasks = (int64_t)units * 4;
    int64_t outer = p->O;
    if (p->layout == RD_COLUMN) {
        int64_t C = p->oshape[p->ndo - 1];
        outer = ceil_div(C, 64) * (p->O / (C ? C : 1)); /* column tiles */
    }
    if (outer < tasks && p->R >= 8192) {
        p->splits = ceil_div(tasks, outer ? outer : 1);
        int64_t most = ceil_div(p->R, 4096);
        if (p->splits > most) p->splits = most;
    }
    if (p->splits < 1) p->splits = 1;
    /* pieces are whole 128-element pairwise blocks, so a piece's sum is a
     * sub-sum of the one-piece pairwise tree */
    p->rchunk = (ceil_div(p->R, p->splits) + 127) / 128 * 128;
    if (p->rchunk < 1) p->rchunk = 1;
    p->splits = p->R > 0 ? ceil_div(p->R, p->rchunk) : 1;
    if (p->layout != RD_COLUMN && p->splits == 1) {
        /* several outputs per block when there are many small ones */
        int64_t per = ceil_div(p->O, tasks);
        int64_t min_per = p->R > 0 ? ceil_div(16384, p->R) : 16384;
        p->per_task = per > min_per ? per : min_per;
        if (p->per_task > p->O) p->per_task = p->O > 0 ? p->O : 1;
    }
}

static void cpu_emit(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np) {
    if (p->layout == RD_COLUMN)
        rd_emit_cpu_column(t, op, p, pp, np);
    else
        rd_emit_cpu_rows(t, op, p, pp, np);
    rd_emit_cpu_finish(t, p);
}

/* One-thread blocks: a block is a task of the context's workers. */
static void cpu_main_shape(const rd_plan *p, kiln_dim3 *grid, kiln_dim3 *block) {
    *block = KILN_DIM(1);
    if (p->layout == RD_COLUMN) {
        int64_t C = p->oshape[p->ndo - 1];
        *grid = KILN_DIM((uint32_t)((p->O / C) * ((C + 31) / 32) * p->splits));
    } else {
        *grid = KILN_DIM((uint32_t)(((p->O + p->per_task - 1) / p->per_task) * p->splits));
    }
}

static int64_t cpu_finish_per(const rd_plan *p) {
    int64_t per = (p->O + 63) / 64;
    return per > 0 ? per : 1;
}

static const char *cpu_finish_shape(const rd_plan *p, int64_t per, kiln_dim3 *grid, kiln_dim3 *block) {
    *block = KILN_DIM(1);
    *grid = KILN_DIM((uint32_t)((p->O + per - 1) / per));
    return "kiln_rd_finish_cols";
}

const rd_provider rd_cpu_provider = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "reduce",
             .name = "kiln",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU)},
    .target = "cpu",
    .cut = cpu_cut,
    .emit = cpu_emit,
    .main_shape = cpu_main_shape,
    .finish_per = cpu_finish_per,
    .finish_shape = cpu_finish_shape,
};
