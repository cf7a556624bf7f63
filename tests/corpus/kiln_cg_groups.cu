// kiln_cg_groups.cu: cooperative groups as CUDA C uses them, for
// test_cuda_c.c: block queries, tiles of 4, 16 and 32 threads (shuffles,
// votes, reduce, scan), a coalesced group aggregating atomics, and the grid.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

template <typename Tile> __device__ void tile_ops(Tile t, const int *in, int *out, int stride) {
    unsigned rank = cg::this_thread_block().thread_rank();
    int v = in[blockIdx.x * blockDim.x + rank];
    int *o = out + (blockIdx.x * blockDim.x + rank) * stride;
    o[0] = cg::reduce(t, v, cg::plus<int>());
    o[1] = cg::reduce(t, v, cg::less<int>());
    o[2] = cg::reduce(t, v, cg::greater<int>());
    o[3] = cg::reduce(t, v, cg::bit_and<int>());
    o[4] = cg::reduce(t, v, cg::bit_or<int>());
    o[5] = cg::reduce(t, v, cg::bit_xor<int>());
    o[6] = t.shfl(v, 1);
    o[7] = t.shfl_down(v, 1);
    o[8] = t.shfl_up(v, 2);
    o[9] = t.shfl_xor(v, 1);
    o[10] = (int)t.ballot(v & 1);
    o[11] = t.any(v > 90);
    o[12] = t.all(v >= 0);
    o[13] = (int)t.thread_rank();
    o[14] = (int)t.meta_group_rank();
    o[15] = (int)t.meta_group_size();
    o[16] = cg::inclusive_scan(t, v);
    o[17] = cg::exclusive_scan(t, v);
    o[18] = (int)t.num_threads();
    t.sync();
    cg::sync(t);
}

__global__ void tiles(const int *in, int *out4, int *out16, int *out32) {
    cg::thread_block block = cg::this_thread_block();
    tile_ops(cg::tiled_partition<4>(block), in, out4, 19);
    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(block);
    tile_ops(t16, in, out16, 19);
    tile_ops(cg::tiled_partition<32>(block), in, out32, 19);
}

__global__ void block_info(int *out) {
    cg::thread_block b = cg::this_thread_block();
    int *o = out + 8 * (blockIdx.x * b.size() + b.thread_rank());
    o[0] = (int)b.thread_rank();
    o[1] = (int)b.size();
    o[2] = (int)b.group_index().x;
    o[3] = (int)b.thread_index().x;
    o[4] = (int)b.thread_index().y;
    o[5] = (int)b.dim_threads().x * 100 + (int)b.dim_threads().y;
    cg::thread_group g = cg::tiled_partition(b, 8);
    o[6] = (int)g.thread_rank();
    cg::grid_group grid = cg::this_grid();
    o[7] = (int)grid.thread_rank();
    b.sync();
}

// Warp-aggregated atomics: one atomicAdd per coalesced group, each thread
// gets its own slot.
__global__ void filter_positive(int *dst, int *count, const int *src, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && src[i] > 0) {
        cg::coalesced_group active = cg::coalesced_threads();
        int base = 0;
        if (active.thread_rank() == 0) base = atomicAdd(count, (int)active.size());
        base = active.shfl(base, 0);
        dst[base + active.thread_rank()] = src[i];
    }
}

// Two phases separated by a grid-wide barrier (one block on the CPU; a
// cooperative launch on the GPU).
__global__ void grid_phases(int *data, int *out) {
    cg::grid_group grid = cg::this_grid();
    unsigned i = grid.thread_rank();
    data[i] = (int)i;
    grid.sync();
    out[i] = data[grid.size() - 1 - i];
}
