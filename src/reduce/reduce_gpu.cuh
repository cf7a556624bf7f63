// reduce_gpu.cuh: warp shuffles of any trivially copyable accumulator, word
// by word, for the generated CUDA reduction and scan kernels only (kept out
// of CPU sources, where a shuffle's name would make the kernel run as fibers).
#ifndef KILN_RD_GPU
#define KILN_RD_GPU 1
// Accumulators of any size: copied through whole words (no read past a
// 1- or 2-byte value), each word shuffled.
#define KILN_RD_SHFL_(name, intrinsic)                                                              \
    template <class T> KILN_RD_FN T name(T v, int arg) {                                            \
        const int words = (int)((sizeof(T) + 3) / 4);                                               \
        int w[words];                                                                               \
        char *c = reinterpret_cast<char *>(w);                                                      \
        const char *s = reinterpret_cast<const char *>(&v);                                         \
        for (int b = 0; b < (int)sizeof(T); b++) c[b] = s[b];                                       \
        for (int i = 0; i < words; i++) w[i] = intrinsic(0xffffffffu, w[i], arg);                   \
        T r = v;                                                                                    \
        char *d = reinterpret_cast<char *>(&r);                                                     \
        for (int b = 0; b < (int)sizeof(T); b++) d[b] = c[b];                                       \
        return r;                                                                                   \
    }
KILN_RD_SHFL_(kiln_rd_shfl_xor, __shfl_xor_sync)
KILN_RD_SHFL_(kiln_rd_shfl_up, __shfl_up_sync)
#undef KILN_RD_SHFL_
#endif
