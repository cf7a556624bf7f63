/* sort_cpu.cuh: kiln's sort kernels for the CPU backend, one thread per
 * block (a block is a task of the worker pool, and blocks there cannot wait
 * for one another).
 *
 * Large single sequences: LSD radix sort by 8-bit digits. The keys are cut
 * into one contiguous chunk per block; a pass counts each chunk's digits
 * (kiln_sort_cpu_count: 256 counters per chunk, a loop the compiler keeps
 * in registers and L1), turns the counts into each chunk's first place per
 * digit (kiln_sort_cpu_offsets, digit-major then chunk, so equal digits keep
 * chunk order: stable), and scatters (kiln_sort_cpu_scatter, each chunk in
 * order). Keys move as raw bits; the digit is computed from kiln_sk_order.
 * Many or small sequences (segments, rows): a stable merge sort per
 * sequence (kiln_sort_cpu_segments), insertion-sorted runs of 32 first. */

/* counts[b * 256 + d]: keys of digit d in chunk b at this pass */
__global__ void kiln_sort_cpu_count(const kiln_sk_t *kin, long long n, long long chunk, unsigned long long desc,
                                    int shift, unsigned long long *counts) {
    const long long lo = (long long)blockIdx.x * chunk;
    const long long hi = n - lo < chunk ? n : lo + chunk;
    unsigned long long c[256];
    for (int d = 0; d < 256; d++) c[d] = 0;
    const kiln_sk_t m = (kiln_sk_t)desc;
    for (long long i = lo; i < hi; i++) c[kiln_sk_digit(kin[i], m, shift)]++;
    for (int d = 0; d < 256; d++) counts[(long long)blockIdx.x * 256 + d] = c[d];
}

/* One block: counts become each chunk's first output place per digit. */
__global__ void kiln_sort_cpu_offsets(unsigned long long *counts, long long chunks) {
    unsigned long long run = 0;
    for (int d = 0; d < 256; d++)
        for (long long b = 0; b < chunks; b++) {
            const unsigned long long c = counts[b * 256 + d];
            counts[b * 256 + d] = run;
            run += c;
        }
}

__global__ void kiln_sort_cpu_scatter(const kiln_sk_t *kin, kiln_sk_t *kout, const kiln_sv_t *vin, kiln_sv_t *vout,
                                      long long n, long long chunk, unsigned long long desc, int shift,
                                      const unsigned long long *offsets) {
    const long long lo = (long long)blockIdx.x * chunk;
    const long long hi = n - lo < chunk ? n : lo + chunk;
    unsigned long long at[256];
    for (int d = 0; d < 256; d++) at[d] = offsets[(long long)blockIdx.x * 256 + d];
    const kiln_sk_t m = (kiln_sk_t)desc;
    for (long long i = lo; i < hi; i++) {
        const kiln_sk_t k = kin[i];
        const unsigned long long p = at[kiln_sk_digit(k, m, shift)]++;
        kout[p] = k;
        if (KILN_SV_BYTES) vout[p] = vin[i];
    }
}

/* Stable merge sort of n keys (and values) from ki/vi into ko/vo, with
 * kt/vt (n more) as scratch. */
__device__ inline void kiln_sort_cpu_merge(const kiln_sk_t *ki, kiln_sk_t *ko, kiln_sk_t *kt, const kiln_sv_t *vi,
                                           kiln_sv_t *vo, kiln_sv_t *vt, long long n, kiln_sk_t m) {
    const long long run = 32;
    int passes = 0;
    for (long long w = run; w < n; w *= 2) passes++;
    /* runs go where an even number of merge passes then ends in ko */
    kiln_sk_t *ka = passes % 2 ? kt : ko, *kb = passes % 2 ? ko : kt;
    kiln_sv_t *va = passes % 2 ? vt : vo, *vb = passes % 2 ? vo : vt;
    for (long long lo = 0; lo < n; lo += run) {
        const long long hi = n - lo < run ? n : lo + run;
        for (long long i = lo; i < hi; i++) {
            const kiln_sk_t k = ki[i];
            const kiln_sk_t o = kiln_sk_order(k, m);
            kiln_sv_t v;
            if (KILN_SV_BYTES) v = vi[i];
            long long j = i;
            while (j > lo && kiln_sk_order(ka[j - 1], m) > o) {
                ka[j] = ka[j - 1];
                if (KILN_SV_BYTES) va[j] = va[j - 1];
                j--;
            }
            ka[j] = k;
            if (KILN_SV_BYTES) va[j] = v;
        }
    }
    for (long long w = run; w < n; w *= 2) {
        for (long long lo = 0; lo < n; lo += 2 * w) {
            const long long mid = n - lo < w ? n : lo + w, hi = n - lo < 2 * w ? n : lo + 2 * w;
            long long i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                /* the right run's key goes first only when strictly smaller: stable */
                const int right = kiln_sk_order(ka[j], m) < kiln_sk_order(ka[i], m);
                const long long s = right ? j++ : i++;
                kb[o] = ka[s];
                if (KILN_SV_BYTES) vb[o] = va[s];
                o++;
            }
            for (; i < mid; i++, o++) {
                kb[o] = ka[i];
                if (KILN_SV_BYTES) vb[o] = va[i];
            }
            for (; j < hi; j++, o++) {
                kb[o] = ka[j];
                if (KILN_SV_BYTES) vb[o] = va[j];
            }
        }
        kiln_sk_t *kx = ka;
        ka = kb;
        kb = kx;
        kiln_sv_t *vx = va;
        va = vb;
        vb = vx;
    }
}

/* Block b sorts sequences [b * per, (b + 1) * per): sequence s is
 * [offsets[s], offsets[s + 1]), or [s * len, (s + 1) * len) without offsets. */
__global__ void kiln_sort_cpu_segments(const kiln_sk_t *kin, kiln_sk_t *kout, kiln_sk_t *ktmp, const kiln_sv_t *vin,
                                       kiln_sv_t *vout, kiln_sv_t *vtmp, const long long *offsets, long long nseg,
                                       long long len, long long per, unsigned long long desc) {
    const long long s0 = (long long)blockIdx.x * per;
    const long long s1 = nseg - s0 < per ? nseg : s0 + per;
    for (long long s = s0; s < s1; s++) {
        const long long lo = offsets ? offsets[s] : s * len, hi = offsets ? offsets[s + 1] : lo + len;
        if (KILN_SV_BYTES)
            kiln_sort_cpu_merge(kin + lo, kout + lo, ktmp + lo, vin + lo, vout + lo, vtmp + lo, hi - lo,
                                (kiln_sk_t)desc);
        else
            kiln_sort_cpu_merge(kin + lo, kout + lo, ktmp + lo, vin, vout, vtmp, hi - lo, (kiln_sk_t)desc);
    }
}
