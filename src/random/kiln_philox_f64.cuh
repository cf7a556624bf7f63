/* kiln_philox_f64.cuh: the CUDA provider's own kernel for Philox4x32-10
 * uniform doubles, the values of a fresh cuRAND generator at `offset`
 * (curandGenerateUniformDouble), as rng_fill.c computes them on the CPU.
 * cuRAND's own consecutive calls leave its states elsewhere after doubles,
 * and setting its offset again costs a second fill's time (rng_cuda.c), so
 * kiln writes these itself; at every size it also writes them faster than
 * cuRAND (docs/PERF_NOTES.md: 2870 against 1460 GB/s at 10^8 on the H100).
 *
 * Output g of the sequence (g = offset + i) is slot q = g % 4 of step
 * s = g / (4 T) of logical thread t = (g / 4) % T, T = 65536 = 2^16. The
 * double reads words 2j, 2j + 1 of thread t's stream (subsequence t), where
 * j = 4 s + q - 2 floor(b / 4) and b counts the thread's positions below the
 * offset in its first row: slots 0, 1 share one counter, 2, 3 the next.
 * So the pair of outputs (2P, 2P + 1) is one Philox block: counter
 * 2 s - rows - [rem >= 4 t + 4] + P % 2 of subsequence t, with
 * rows = offset / 4T and rem = offset % 4T (floor(b / 4) = rows + [rem >= 4 t + 4]).
 *
 * One Philox block per pair and one 16-byte store where the pair lands
 * 16-byte aligned: a warp writes 512 contiguous bytes (the earlier kernel's
 * four 8-byte stores 32 bytes apart per thread moved four times the L2
 * sectors and ran at half cuRAND's speed). A grid-stride loop over pairs,
 * the grid sized by the host to the device (rng_cuda.c).
 *
 * The rounds and the double are those of the device API: this text follows
 * kiln_random.cuh (kiln_philox_block, kiln_bits_to_uniform_double) in one
 * source, which kiln_rng_philox_f64_source() puts together. */
extern "C" __global__ void kiln_philox_uniform_f64(unsigned long long out_address, unsigned long long n,
                                                   unsigned long long seed, unsigned long long offset,
                                                   unsigned long long pairs) {
    double *out = (double *)out_address;
    const unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
    const unsigned long long rows = offset >> 18, rem = offset & 0x3ffff; /* 4T = 2^18 */
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long pi = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; pi < pairs;
         pi += stride) {
        unsigned long long P = offset / 2 + pi, G = P >> 1;
        unsigned long long s = G >> 16, t = G & 0xffff;
        /* Never below zero for a pair this launch writes: a thread whose
         * first group lies wholly below the offset has no pair here. */
        unsigned long long c = 2 * s - rows - (rem >= 4 * t + 4 ? 1 : 0) + (P & 1);
        const unsigned int ctr[4] = {(unsigned int)c, (unsigned int)(c >> 32), (unsigned int)t, 0u};
        unsigned int w[4];
        kiln_philox_block(ctr, k0, k1, w);
        double a = kiln_bits_to_uniform_double(w[0], w[1]), b = kiln_bits_to_uniform_double(w[2], w[3]);
        long long i = (long long)(2 * P) - (long long)offset; /* -1 for an odd offset's first pair */
        int lo = i >= 0, hi = (unsigned long long)(i + 1) < n;
        if (lo && hi && (((unsigned long long)(out + i)) & 15) == 0) {
            *(double2 *)(out + i) = make_double2(a, b);
        } else {
            if (lo) out[i] = a;
            if (hi) out[i + 1] = b;
        }
    }
}
