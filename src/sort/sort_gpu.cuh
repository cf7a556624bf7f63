/* sort_gpu.cuh: kiln's LSD radix sort on CUDA, onesweep-style (Adinets and
 * Merrill, "Onesweep", 2022): one kernel reads every key once and counts the
 * digits of all passes; then each 8-bit pass is ONE kernel that reads its
 * tile, ranks the tile's keys stably in shared memory, learns where its
 * digits go from the tiles before it by decoupled look-back, and writes the
 * keys (and values) out. A pass moves each key once in and once out, as
 * CUB's DeviceRadixSort does.
 *
 * Layout assumed: 256 threads; a tile is KILN_SG_ITEMS keys per thread,
 * loaded warp-striped (item i of lane l of warp w is element
 * w*32*ITEMS + i*32 + l of the tile), so loads are coalesced and a warp's
 * keys are ranked in their order: stability needs nothing more. Tiles take
 * their number from an atomic counter, in the order they start, so the
 * tiles a look-back waits for are already running (forward progress).
 * Needs sm_70 (__match_any_sync). Defined by the includer besides
 * sort_keys.cuh's: KILN_SG_ITEMS and KILN_SG_STATUS64 (1 when n >= 2^30:
 * 64-bit look-back words).
 *
 * Every kernel takes `only_if`: NULL, or a flag word that a sort through
 * CUB's kernels queued before these raised when kiln's order must redo it
 * (KILN_SK_REDO); when it did not, each block returns at once, so the
 * redo costs a few empty launches. Such a redo is compiled with
 * KILN_SG_PERSISTENT 1: the passes run on a grid the GPU holds at once,
 * each block taking tile after tile, so an empty launch is a few hundred
 * blocks rather than one per tile (65536 at 2^28 keys, ~40 us a pass). */
#ifndef KILN_SG_PERSISTENT
#define KILN_SG_PERSISTENT 0
#endif
#define KILN_SG_BLOCK 256
#define KILN_SG_SKIP(only_if) ((only_if) && !KILN_SK_REDO(*(only_if)))
#define KILN_SG_WARPS (KILN_SG_BLOCK / 32)
#define KILN_SG_TILE (KILN_SG_BLOCK * KILN_SG_ITEMS)
#define KILN_SG_LOOK 8 /* look-back window, tiles */
#if KILN_SV_BYTES > KILN_SK_BYTES
#define KILN_SG_XBYTES KILN_SV_BYTES
#else
#define KILN_SG_XBYTES KILN_SK_BYTES
#endif
/* Blocks a pass should fit on an SM: 4 (32 warps, 64 registers, a few
 * bytes spilled outside the loops) for the default tile of 16 keys of up to
 * 4 bytes a thread, where 3 would leave a quarter of the warps idle; 2 for
 * larger tiles. */
#if KILN_SG_ITEMS * KILN_SG_XBYTES <= 64
#define KILN_SG_MIN_BLOCKS 4
#else
#define KILN_SG_MIN_BLOCKS 2
#endif

/* A look-back word: a flag in the top two bits (0 not yet, 1 the tile's own
 * count, 2 the count of this tile and every tile before it), the count below. */
#if KILN_SG_STATUS64
typedef unsigned long long kiln_sg_word;
#define KILN_SG_FLAG_SHIFT 62
#else
typedef unsigned int kiln_sg_word;
#define KILN_SG_FLAG_SHIFT 30
#endif
#define KILN_SG_AGGREGATE ((kiln_sg_word)1 << KILN_SG_FLAG_SHIFT)
#define KILN_SG_PREFIX ((kiln_sg_word)2 << KILN_SG_FLAG_SHIFT)
#define KILN_SG_VALUE(w) ((w) & (((kiln_sg_word)1 << KILN_SG_FLAG_SHIFT) - 1))

/* Zeroes `words` 32-bit words (look-back words and the tile counter). */
__global__ void kiln_sort_clear(unsigned *p, long long words, const unsigned *only_if) {
    if (KILN_SG_SKIP(only_if)) return;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (long long)gridDim.x * blockDim.x)
        p[i] = 0;
}

/* The digit counts of every pass, hist[pass * 256 + digit], added into a
 * zeroed hist: per block in shared memory, then once per bin globally. */
__global__ void __launch_bounds__(KILN_SG_BLOCK)
    kiln_sort_histogram(const kiln_sk_t *keys, long long n, unsigned long long desc, unsigned *hist,
                        int passes, const unsigned *only_if) {
    if (KILN_SG_SKIP(only_if)) return;
    __shared__ unsigned s[8 * 256];
    for (int i = threadIdx.x; i < passes * 256; i += KILN_SG_BLOCK) s[i] = 0;
    __syncthreads();
    const kiln_sk_t d = (kiln_sk_t)desc;
    for (long long i = (long long)blockIdx.x * KILN_SG_BLOCK + threadIdx.x; i < n;
         i += (long long)gridDim.x * KILN_SG_BLOCK) {
        const kiln_sk_t u = kiln_sk_order(keys[i], d);
        for (int p = 0; p < passes; p++) atomicAdd(&s[p * 256 + (unsigned)((u >> (8 * p)) & 255u)], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < passes * 256; i += KILN_SG_BLOCK)
        if (s[i]) atomicAdd(&hist[i], s[i]);
}

/* Exclusive sum of one value per thread over the block; *total: the sum. */
__device__ inline unsigned kiln_sg_scan(unsigned v, unsigned *s_warp, unsigned *total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) s_warp[warp] = x;
    __syncthreads();
    unsigned before = 0, all = 0;
#pragma unroll
    for (int w = 0; w < KILN_SG_WARPS; w++) {
        const unsigned t = s_warp[w];
        before += w < warp ? t : 0u;
        all += t;
    }
    __syncthreads();
    *total = all;
    return before + x - v;
}

/* One pass: keys (and values) of kin/vin to kout/vout by the digit at
 * `shift`; hist: this pass's 256 digit counts over all keys; status:
 * tiles * 256 zeroed look-back words, then the tile counter. */
__global__ void __launch_bounds__(KILN_SG_BLOCK, KILN_SG_MIN_BLOCKS)
    kiln_sort_onesweep(const kiln_sk_t *kin, kiln_sk_t *kout, const kiln_sv_t *vin, kiln_sv_t *vout,
                       long long n, unsigned long long desc, int shift, const unsigned *hist,
                       kiln_sg_word *status, unsigned *tile_counter, const unsigned *only_if) {
    if (KILN_SG_SKIP(only_if)) return; /* before the tile counter: every block leaves */
    __shared__ unsigned s_tile;
    __shared__ unsigned s_hist[KILN_SG_WARPS][256]; /* per warp, then each warp's start in its digit */
    __shared__ unsigned s_local[256];               /* a digit's first place in the tile */
    __shared__ long long s_out[256];                /* output index of the tile's place 0, per digit */
    __shared__ unsigned s_warp[KILN_SG_WARPS];
    __shared__ __align__(16) unsigned char s_exchange[KILN_SG_TILE * KILN_SG_XBYTES];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const kiln_sk_t d_mask = (kiln_sk_t)desc;
#if KILN_SG_PERSISTENT
    const long long tiles = (n + KILN_SG_TILE - 1) / KILN_SG_TILE;
    for (;;) {
#endif
    for (int i = tid; i < KILN_SG_WARPS * 256; i += KILN_SG_BLOCK) (&s_hist[0][0])[i] = 0;
    if (tid == 0) s_tile = atomicAdd(tile_counter, 1u);
    __syncthreads();
#if KILN_SG_PERSISTENT
    if (s_tile >= tiles) break; /* the same for every thread */
#endif
    const long long tile = s_tile, base = tile * KILN_SG_TILE;
    const long long wbase = base + (long long)warp * (32 * KILN_SG_ITEMS) + lane;
    kiln_sk_t key[KILN_SG_ITEMS];
    /* per item: its place (rank in the warp, then in the tile) << 9 | its
     * digit (256: no key), one register for both */
    unsigned item[KILN_SG_ITEMS];
#pragma unroll
    for (int i = 0; i < KILN_SG_ITEMS; i++) {
        const long long idx = wbase + i * 32;
        key[i] = idx < n ? kin[idx] : (kiln_sk_t)0;
    }
    /* rank within the warp: lanes of one digit (match) counted below this
     * lane, after what the warp's earlier items put in that digit */
    const unsigned below = (1u << lane) - 1u;
#pragma unroll
    for (int i = 0; i < KILN_SG_ITEMS; i++) {
        const int valid = wbase + i * 32 < n;
        const unsigned dg = valid ? kiln_sk_digit(key[i], d_mask, shift) : 256u;
        const unsigned live = __ballot_sync(0xffffffffu, valid);
        const unsigned peers = __match_any_sync(0xffffffffu, dg) & live;
        const unsigned before = valid ? s_hist[warp][dg] : 0u;
        __syncwarp();
        if (valid && lane == 31 - __clz(peers)) s_hist[warp][dg] = before + __popc(peers);
        __syncwarp();
        item[i] = (before + __popc(peers & below)) << 9 | dg;
    }
    __syncthreads();
    /* thread t owns digit t from here */
    unsigned count = 0;
#pragma unroll
    for (int w = 0; w < KILN_SG_WARPS; w++) {
        const unsigned c = s_hist[w][tid];
        s_hist[w][tid] = count;
        count += c;
    }
    unsigned total;
    const unsigned local = kiln_sg_scan(count, s_warp, &total);
    s_local[tid] = local;
    const unsigned start = kiln_sg_scan(hist[tid], s_warp, &total); /* the digit's first index of all */
    kiln_sg_word *mine = status + tile * 256 + tid;
    unsigned long long prefix = 0;
    if (tile == 0) {
        *(volatile kiln_sg_word *)mine = KILN_SG_PREFIX | (kiln_sg_word)count;
    } else {
        *(volatile kiln_sg_word *)mine = KILN_SG_AGGREGATE | (kiln_sg_word)count;
        /* KILN_SG_LOOK predecessors read at once (independent loads, one
         * round trip to L2), then taken in order up to the first that has
         * not counted yet (read again from there) or holds a prefix (done):
         * a walk back over many tiles that only have their own counts costs
         * a round trip per window rather than per tile. Tile 0 always holds
         * a prefix, so the walk never passes it; words before it read as an
         * empty prefix. */
        for (long long t = tile - 1;;) {
            kiln_sg_word w[KILN_SG_LOOK];
#pragma unroll
            for (int u = 0; u < KILN_SG_LOOK; u++)
                w[u] = t - u >= 0 ? *(volatile const kiln_sg_word *)(status + (t - u) * 256 + tid)
                                  : KILN_SG_PREFIX;
            int state = 0, used = 0; /* state: 0 walking, 1 a prefix found, 2 a tile not ready */
#pragma unroll
            for (int u = 0; u < KILN_SG_LOOK; u++) {
                const unsigned flag = (unsigned)(w[u] >> KILN_SG_FLAG_SHIFT);
                if (state == 0 && flag == 0) state = 2;
                if (state == 0) {
                    prefix += KILN_SG_VALUE(w[u]);
                    used++;
                    if (flag == 2) state = 1;
                }
            }
            if (state == 1) break;
            t -= used;
        }
        *(volatile kiln_sg_word *)mine = KILN_SG_PREFIX | (kiln_sg_word)(prefix + count);
    }
    s_out[tid] = (long long)start + (long long)prefix - (long long)local;
    __syncthreads();
    kiln_sk_t *sk = (kiln_sk_t *)s_exchange;
#pragma unroll
    for (int i = 0; i < KILN_SG_ITEMS; i++) {
        const unsigned dg = item[i] & 511u;
        if (dg < 256u) {
            const unsigned place = (item[i] >> 9) + s_local[dg] + s_hist[warp][dg];
            item[i] = place << 9 | dg;
            sk[place] = key[i];
        }
    }
    __syncthreads();
    /* out in tile order: neighbouring threads write neighbouring places of
     * one digit, runs of consecutive addresses */
    const long long left = n - base;
    const int in_tile = left < KILN_SG_TILE ? (int)left : KILN_SG_TILE;
#if KILN_SV_BYTES
    unsigned out_digit[KILN_SG_ITEMS];
#endif
#pragma unroll
    for (int j = 0; j < KILN_SG_ITEMS; j++) {
        const int p = j * KILN_SG_BLOCK + tid;
        if (p < in_tile) {
            const kiln_sk_t k = sk[p];
            const unsigned dg = kiln_sk_digit(k, d_mask, shift);
            kout[s_out[dg] + p] = k;
#if KILN_SV_BYTES
            out_digit[j] = dg;
#endif
        }
    }
#if KILN_SV_BYTES
    __syncthreads();
    kiln_sv_t *sv = (kiln_sv_t *)s_exchange;
#pragma unroll
    for (int i = 0; i < KILN_SG_ITEMS; i++) {
        const long long idx = wbase + i * 32;
        if (idx < n) sv[item[i] >> 9] = vin[idx];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < KILN_SG_ITEMS; j++) {
        const int p = j * KILN_SG_BLOCK + tid;
        if (p < in_tile) vout[s_out[out_digit[j]] + p] = sv[p];
    }
#else
    (void)vin;
    (void)vout;
#endif
#if KILN_SG_PERSISTENT
    __syncthreads(); /* the tile's shared data read before the next tile's */
    }
#endif
}
