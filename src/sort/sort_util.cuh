/* sort_util.cuh: the element-wise kernels around a sort, the same on both
 * backends (grid-stride loops, no barriers): index sequences, gathers by a
 * permutation, segment numbers, binary searches and the steps of unique.
 * Keys are compared by kiln_sk_order (sort_keys.cuh), so searches and
 * unique agree with the sort on NaN, -0.0 and descending order. */
#define KILN_SU_LOOP(i, n)                                                                                     \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                             \
         i += (long long)gridDim.x * blockDim.x)

__global__ void kiln_sort_iota(unsigned *out, long long n) {
    KILN_SU_LOOP(i, n) out[i] = (unsigned)i;
}

/* out[i] = perm[i] - (its row's first index): the index along the sorted
 * axis of rows of `len` (perm never leaves its row). */
__global__ void kiln_sort_row_index(const unsigned *perm, long long *out, long long n, long long len) {
    KILN_SU_LOOP(i, n) out[i] = (long long)perm[i] % len;
}

/* seg[i]: the sequence that element perm[i] belongs to: the last s with
 * offsets[s] <= perm[i] (empty sequences are passed over), or perm[i] / len. */
__global__ void kiln_sort_segment_ids(const unsigned *perm, unsigned *seg, long long n, const long long *offsets,
                                      long long nseg, long long len) {
    KILN_SU_LOOP(i, n) {
        const long long x = perm[i];
        if (!offsets) {
            seg[i] = (unsigned)(x / len);
            continue;
        }
        long long lo = 0, hi = nseg; /* offsets[lo] <= x < offsets[hi] */
        while (hi - lo > 1) {
            const long long mid = lo + (hi - lo) / 2;
            if (offsets[mid] <= x)
                lo = mid;
            else
                hi = mid;
        }
        seg[i] = (unsigned)lo;
    }
}

__global__ void kiln_sort_gather_keys(const kiln_sk_t *src, kiln_sk_t *dst, const unsigned *perm, long long n) {
    KILN_SU_LOOP(i, n) dst[i] = src[perm[i]];
}

__global__ void kiln_sort_gather_values(const kiln_sv_t *src, kiln_sv_t *dst, const unsigned *perm, long long n) {
    KILN_SU_LOOP(i, n) dst[i] = src[perm[i]];
}

/* NumPy's searchsorted: out[i] is the first place in sorted[0, n) whose key
 * is >= v[i] (left) or > v[i] (right). */
__global__ void kiln_sort_search(const kiln_sk_t *sorted, long long n, const kiln_sk_t *v, long long m,
                                 long long *out, int right, unsigned long long desc) {
    const kiln_sk_t d = (kiln_sk_t)desc;
    KILN_SU_LOOP(i, m) {
        const kiln_sk_t x = kiln_sk_order(v[i], d);
        long long lo = 0, hi = n;
        while (lo < hi) {
            const long long mid = lo + (hi - lo) / 2;
            const kiln_sk_t y = kiln_sk_order(sorted[mid], d);
            if (right ? y <= x : y < x)
                lo = mid + 1;
            else
                hi = mid;
        }
        out[i] = lo;
    }
}

/* unique, step 1: 1 where a sorted key starts a run of equal keys. */
__global__ void kiln_sort_run_starts(const kiln_sk_t *sorted, long long n, long long *flags) {
    KILN_SU_LOOP(i, n) flags[i] = i == 0 || kiln_sk_order(sorted[i], 0) != kiln_sk_order(sorted[i - 1], 0);
}

/* unique, step 2 (group: the inclusive sum of the flags, so run g's
 * elements have group g + 1): each run's first key, its first place, the
 * smallest original index (perm: stable), and every element's run. */
__global__ void kiln_sort_unique_scatter(const kiln_sk_t *sorted, const long long *perm, const long long *group,
                                         long long n, kiln_sk_t *values, long long *first, long long *index,
                                         long long *inverse) {
    KILN_SU_LOOP(i, n) {
        const long long g = group[i] - 1;
        if (i == 0 || group[i] != group[i - 1]) {
            values[g] = sorted[i];
            first[g] = i;
            if (index) index[g] = perm[i];
        }
        if (inverse) inverse[perm[i]] = g;
    }
}

/* unique, step 3: run g's length from the first places. */
__global__ void kiln_sort_run_counts(const long long *first, long long runs, long long n, long long *counts) {
    KILN_SU_LOOP(g, runs) counts[g] = (g + 1 < runs ? first[g + 1] : n) - first[g];
}
