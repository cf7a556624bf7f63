/* cuda_provider.c: reductions on CUDA: blocks of RD_GPU_BLOCK threads, a
 * warp or a block per output (a column per thread for RD_COLUMN), enough
 * blocks to fill every SM, 16-byte loads where the rows allow. */
#include "reduce/codegen.h"
#include "reduce/rd_provider.h"

extern const char kiln_embedded_reduce_gpu[];

static int64_t ceil_div(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

static void cuda_cut(rd_plan *p, int units) {
    int64_t target = (int64_t)units * 8; /* blocks of 256 filling every SM */
    if (p->layout == RD_COLUMN) {
        int64_t C = p->oshape[p->ndo - 1];
        int64_t blocks = ceil_div(C, RD_GPU_BLOCK) * (p->O / (C ? C : 1));
        if (blocks < target) p->splits = ceil_div(target, blocks ? blocks : 1);
        int64_t most = ceil_div(p->R, 64); /* at least 64 rows per thread */
        if (p->splits > most) p->splits = most;
    } else {
        if (p->R <= 128 && p->O >= 64) p->group = 32;
        if (p->group == RD_GPU_BLOCK && p->O < target) {
            p->splits = ceil_div(target, p->O ? p->O : 1);
            int64_t most = ceil_div(p->R, (int64_t)RD_GPU_BLOCK * p->vec * 8);
            if (p->splits > most) p->splits = most;
        }
    }
    if (p->splits > 65535) p->splits = 65535;
    if (p->splits < 1) p->splits = 1;
    p->rchunk = ceil_div(p->R, p->splits);
}

static void cuda_emit(kiln_text *t, const rd_op *op, const rd_plan *p, const rd_param *pp, int np) {
    if (p->layout == RD_COLUMN)
        rd_emit_gpu_column(t, op, p, pp, np);
    else
        rd_emit_gpu_group(t, op, p, pp, np);
    rd_emit_gpu_finish(t, p);
}

static void cuda_main_shape(const rd_plan *p, kiln_dim3 *grid, kiln_dim3 *block) {
    *block = KILN_DIM(RD_GPU_BLOCK);
    if (p->layout == RD_COLUMN) {
        int64_t C = p->oshape[p->ndo - 1];
        int64_t ncb = (C + RD_GPU_BLOCK - 1) / RD_GPU_BLOCK;
        *grid = KILN_DIM((uint32_t)(ncb * (p->O / C)), (uint32_t)p->splits);
    } else if (p->group == RD_GPU_BLOCK) {
        *grid = KILN_DIM((uint32_t)(p->O * p->splits));
    } else {
        int per = RD_GPU_BLOCK / p->group;
        *grid = KILN_DIM((uint32_t)((p->O + per - 1) / per));
    }
}

static int64_t cuda_finish_per(const rd_plan *p) {
    (void)p;
    return 1;
}

/* Few outputs: a block sums each one's partials; many: a thread each. */
static const char *cuda_finish_shape(const rd_plan *p, int64_t per, kiln_dim3 *grid, kiln_dim3 *block) {
    (void)per;
    *block = KILN_DIM(RD_GPU_BLOCK);
    if (p->O < 64) {
        *grid = KILN_DIM((uint32_t)p->O);
        return "kiln_rd_finish_rows";
    }
    *grid = KILN_DIM((uint32_t)((p->O + RD_GPU_BLOCK - 1) / RD_GPU_BLOCK));
    return "kiln_rd_finish_cols";
}

const rd_provider rd_cuda_provider = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "reduce",
             .name = "kiln",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CUDA)},
    .target = "cuda",
    .device_source = kiln_embedded_reduce_gpu,
    .wide_acc = 1,
    .vector_loads = 1,
    .cut = cuda_cut,
    .emit = cuda_emit,
    .main_shape = cuda_main_shape,
    .finish_per = cuda_finish_per,
    .finish_shape = cuda_finish_shape,
};
