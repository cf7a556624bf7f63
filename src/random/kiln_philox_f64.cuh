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
 * thread): two Philox blocks, four stores. */
__device__ inline void kiln_philox_f64_block(unsigned long long counter, unsigned long long t,
                                             unsigned int k0, unsigned int k1, unsigned int *w) {
    unsigned int x0 = (unsigned int)counter, x1 = (unsigned int)(counter >> 32), x2 = (unsigned int)t,
                 x3 = (unsigned int)(t >> 32);
#pragma unroll
    for (int r = 0; r < 10; r++) {
        unsigned long long p0 = (unsigned long long)0xD2511F53u * x0,
                           p1 = (unsigned long long)0xCD9E8D57u * x2;
        unsigned int y0 = (unsigned int)(p1 >> 32) ^ x1 ^ k0, y2 = (unsigned int)(p0 >> 32) ^ x3 ^ k1;
        x1 = (unsigned int)p1;
        x3 = (unsigned int)p0;
        x0 = y0;
        x2 = y2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    w[0] = x0;
    w[1] = x1;
    w[2] = x2;
    w[3] = x3;
}

__device__ inline double kiln_philox_f64_value(unsigned int x, unsigned int y) {
    unsigned long long z = (unsigned long long)x ^ ((unsigned long long)y << 21);
    return (double)z * 1.1102230246251565e-16 + 1.1102230246251565e-16 / 2.0;
}

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
        kiln_philox_f64_block(j0 / 2 + half, t, k0, k1, w);
        if (g >= offset) out[g - offset] = kiln_philox_f64_value(w[0], w[1]);
        if (g + 1 >= offset && g + 1 < end) out[g + 1 - offset] = kiln_philox_f64_value(w[2], w[3]);
    }
}
