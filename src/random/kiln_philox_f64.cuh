/* kiln_philox_f64.cuh: the CUDA provider's own kernel for Philox4x32-10
 * uniform doubles, the values of a fresh cuRAND generator at `offset`
 * (curandGenerateUniformDouble), as rng_fill.c computes them on the CPU.
 * cuRAND's own consecutive calls leave its states elsewhere after doubles,
 * and setting its offset again costs a second fill's time (rng_cuda.c), so
 * kiln writes these itself.
 *
 * Output g of the sequence (g = offset + i) is slot q = g % 4 of step
 * s = g / (4 T) of logical thread t = (g / 4) % T, T = 65536. The double
 * reads words 2j, 2j + 1 of thread t's stream (subsequence t), where
 * j = 4 s + q - 2 floor(b / 4) and b counts the thread's positions below the
 * offset in its first row: slots 0, 1 share one counter, 2, 3 the next.
 * One GPU thread per group of four outputs (one step of one logical
 * thread): two Philox blocks, four stores.
 *
 * The rounds and the double are those of the device API: this text follows
 * kiln_random.cuh (kiln_philox_block, kiln_bits_to_uniform_double) in one
 * source, which kiln_rng_philox_f64_source() puts together. */
extern "C" __global__ void kiln_philox_uniform_f64(unsigned long long out_address, unsigned long long n,
                                                   unsigned long long seed, unsigned long long offset,
                                                   unsigned long long groups) {
    unsigned long long gi = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (gi >= groups) return;
    double *out = (double *)out_address;
    const unsigned long long T = 65536;
    unsigned long long G = offset / 4 + gi; /* this group: outputs 4 G .. 4 G + 3 */
    unsigned long long s = G / T, t = G % T;
    unsigned long long rows = offset / (4 * T), rem = offset % (4 * T);
    unsigned long long in_row = rem > 4 * t ? rem - 4 * t : 0;
    unsigned long long before = rows * 4 + (in_row > 4 ? 4 : in_row);
    unsigned long long j0 = 4 * s - 2 * (before / 4); /* even: slot 0 */
    unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32), w[4];
    unsigned long long end = offset + n;
    for (int half = 0; half < 2; half++) {
        unsigned long long g = 4 * G + 2 * half;
        if (g + 1 < offset || g >= end) continue;
        unsigned long long c = j0 / 2 + half; /* 128-bit counter: (c, t) */
        const unsigned int ctr[4] = {(unsigned int)c, (unsigned int)(c >> 32), (unsigned int)t,
                                     (unsigned int)(t >> 32)};
        kiln_philox_block(ctr, k0, k1, w);
        if (g >= offset) out[g - offset] = kiln_bits_to_uniform_double(w[0], w[1]);
        if (g + 1 >= offset && g + 1 < end) out[g + 1 - offset] = kiln_bits_to_uniform_double(w[2], w[3]);
    }
}
