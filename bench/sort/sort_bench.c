/* sort_bench.c: kiln's sort beside the references, one run, printed as
 * ratios (reference time / kiln time: >= 1 means kiln is as fast).
 *
 *   CUDA context: kiln_sort and kiln_sort_pairs of 2^28 uint32 keys (pairs:
 *   uint32 values) and kiln_sort of float32 keys vs CUB's DeviceRadixSort
 *   (libkiln_sort_cub.so, built by nvcc beside this program and dlopened),
 *   and a device copy's bandwidth; kiln as KILN_SORT_GPU leaves it (auto:
 *   CUB's kernels launched by kiln) and with its own kernels (own), each
 *   beside CUB, from one run.
 *   CPU context: 2^24 uint32 keys vs qsort, std::sort and std::sort on
 *   every core (one part per thread, merged in parallel); pairs vs that
 *   parallel sort of 64-bit key-value words.
 * Both sides sort the same keys (the generator below). Every kiln result is
 * checked: sorted, and a permutation of the input.
 * Usage: kiln_sort_bench [cpu|cuda] [log2 n] [repeat] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln.h"
#include "native_path.h"

void kiln_bench_std_sort_u32(uint32_t *x, long long n);
void kiln_bench_par_sort_u32(uint32_t *x, long long n);
void kiln_bench_par_sort_pairs_u32(uint64_t *kv, long long n);

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* sort_cub.cu's generator */
static uint32_t key_at(int64_t i) {
    uint64_t s = (uint64_t)i * 6364136223846793005ull + 1442695040888963407ull;
    s ^= s >> 29;
    s *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(s >> 32);
}

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        if ((call) != KILN_OK) {                                                                             \
            fprintf(stderr, "%s: %s\n", #call, kiln_last_error());                                           \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

/* Median ms of one kiln call (events: device time on CUDA, wall on the CPU). */
static double time_kiln(kiln_context *ctx, kiln_array *k, kiln_array *v, int repeat) {
    if (repeat > 64) repeat = 64;
    kiln_event *e0 = NULL, *e1 = NULL;
    CHECK(kiln_event_create(ctx, &e0));
    CHECK(kiln_event_create(ctx, &e1));
    double t[64];
    for (int i = -1; i < repeat; i++) { /* -1: compile and warm up */
        kiln_array *rk = NULL, *rv = NULL;
        CHECK(kiln_event_record(e0, NULL));
        if (v)
            CHECK(kiln_sort_pairs(k, v, 0, 0, NULL, NULL, NULL, &rk, &rv));
        else
            CHECK(kiln_sort(k, 0, 0, NULL, NULL, &rk));
        CHECK(kiln_event_record(e1, NULL));
        CHECK(kiln_event_synchronize(e1));
        float ms = 0;
        CHECK(kiln_event_elapsed_ms(e0, e1, &ms));
        if (i >= 0) t[i] = ms;
        kiln_array_release(rk);
        kiln_array_release(rv);
    }
    kiln_event_release(e0);
    kiln_event_release(e1);
    qsort(t, (size_t)repeat, sizeof *t, cmp_d);
    return t[repeat / 2];
}

/* kiln's result of sorting keys h (values: indices when pairs): sorted, and
 * each value names a key equal to the one beside it (a permutation). */
static int verify(kiln_context *ctx, const uint32_t *h, int64_t n, int pairs) {
    kiln_array *k = NULL, *v = NULL, *rk = NULL, *rv = NULL;
    CHECK(kiln_array_from_host(ctx, KILN_UINT32, 1, &n, h, 4 * (size_t)n, &k));
    uint32_t *idx = malloc(4 * (size_t)n), *got = malloc(4 * (size_t)n), *gv = malloc(4 * (size_t)n);
    for (int64_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
    CHECK(kiln_array_from_host(ctx, KILN_UINT32, 1, &n, idx, 4 * (size_t)n, &v));
    if (pairs)
        CHECK(kiln_sort_pairs(k, v, 0, 0, NULL, NULL, NULL, &rk, &rv));
    else
        CHECK(kiln_sort(k, 0, 0, NULL, NULL, &rk));
    CHECK(kiln_array_to_host(rk, got, 4 * (size_t)n));
    if (pairs) CHECK(kiln_array_to_host(rv, gv, 4 * (size_t)n));
    uint64_t sum_in = 0, sum_out = 0;
    int ok = 1;
    for (int64_t i = 0; i < n; i++) {
        sum_in += h[i];
        sum_out += got[i];
        if (i && got[i - 1] > got[i]) ok = 0;
        if (pairs && (gv[i] >= n || h[gv[i]] != got[i] || (i && got[i - 1] == got[i] && gv[i - 1] > gv[i])))
            ok = 0;
    }
    ok &= sum_in == sum_out;
    free(idx), free(got), free(gv);
    kiln_array_release(k), kiln_array_release(v), kiln_array_release(rk), kiln_array_release(rv);
    return ok;
}

static void row(const char *what, double kiln_ms, const char *ref, double ref_ms) {
    printf("  %-34s kiln %9.2f ms   %-16s %9.2f ms   ratio %5.2f\n", what, kiln_ms, ref, ref_ms,
           ref_ms / kiln_ms);
}

static void run_cpu(kiln_context *ctx, int64_t n, int repeat, const uint32_t *h) {
    kiln_array *k = NULL, *v = NULL;
    CHECK(kiln_array_from_host(ctx, KILN_UINT32, 1, &n, h, 4 * (size_t)n, &k));
    uint32_t *idx = malloc(4 * (size_t)n), *x = malloc(4 * (size_t)n);
    uint64_t *kv = malloc(8 * (size_t)n);
    for (int64_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
    CHECK(kiln_array_from_host(ctx, KILN_UINT32, 1, &n, idx, 4 * (size_t)n, &v));
    double keys = time_kiln(ctx, k, NULL, repeat), pairs = time_kiln(ctx, k, v, repeat);
    memcpy(x, h, 4 * (size_t)n);
    double t0 = now_ms();
    qsort(x, (size_t)n, 4, cmp_u32);
    double q = now_ms() - t0;
    memcpy(x, h, 4 * (size_t)n);
    t0 = now_ms();
    kiln_bench_std_sort_u32(x, n);
    double st = now_ms() - t0, par[16], parp[16];
    for (int i = 0; i < repeat && i < 16; i++) {
        memcpy(x, h, 4 * (size_t)n);
        t0 = now_ms();
        kiln_bench_par_sort_u32(x, n);
        par[i] = now_ms() - t0;
        for (int64_t j = 0; j < n; j++) kv[j] = (uint64_t)h[j] << 32 | (uint64_t)j;
        t0 = now_ms();
        kiln_bench_par_sort_pairs_u32(kv, n);
        parp[i] = now_ms() - t0;
    }
    int r = repeat < 16 ? repeat : 16;
    qsort(par, (size_t)r, sizeof *par, cmp_d);
    qsort(parp, (size_t)r, sizeof *parp, cmp_d);
    char what[64];
    snprintf(what, sizeof what, "sort %lld uint32", (long long)n);
    row(what, keys, "qsort", q);
    row(what, keys, "std::sort", st);
    row(what, keys, "std::sort x cores", par[r / 2]);
    snprintf(what, sizeof what, "sort_pairs %lld uint32+uint32", (long long)n);
    row(what, pairs, "std::sort x cores", parp[r / 2]);
    free(idx), free(x), free(kv);
    kiln_array_release(k), kiln_array_release(v);
}

/* kiln's times under KILN_SORT_GPU=path (NULL: as the environment has it):
 * uint32 keys, pairs, float32 keys. */
typedef struct kiln_times {
    double keys, pairs, floats;
} kiln_times;

static kiln_times time_path(kiln_context *ctx, const char *path, kiln_array *k, kiln_array *v, kiln_array *f,
                            int repeat) {
    char *saved = getenv("KILN_SORT_GPU") ? strdup(getenv("KILN_SORT_GPU")) : NULL;
    if (path) setenv("KILN_SORT_GPU", path, 1);
    kiln_times t = {time_kiln(ctx, k, NULL, repeat), time_kiln(ctx, k, v, repeat),
                    time_kiln(ctx, f, NULL, repeat)};
    if (saved)
        setenv("KILN_SORT_GPU", saved, 1);
    else
        unsetenv("KILN_SORT_GPU");
    free(saved);
    return t;
}

static void run_cuda(kiln_context *ctx, int64_t n, int repeat, const uint32_t *h) {
    kiln_array *k = NULL, *v = NULL, *f = NULL;
    CHECK(kiln_array_from_host(ctx, KILN_UINT32, 1, &n, h, 4 * (size_t)n, &k));
    uint32_t *idx = malloc(4 * (size_t)n);
    float *fh = malloc(4 * (size_t)n);
    for (int64_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
    /* sort_cub.cu's float keys: the same generator scaled to [-1, 1) */
    for (int64_t i = 0; i < n; i++) fh[i] = (float)(h[i] >> 8) * (1.0f / 8388608.0f) - 1.0f;
    CHECK(kiln_array_from_host(ctx, KILN_UINT32, 1, &n, idx, 4 * (size_t)n, &v));
    CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, fh, 4 * (size_t)n, &f));
    free(idx), free(fh);
    char mode[64]; /* before time_path's setenv, which may move the environment's strings */
    const char *env = getenv("KILN_SORT_GPU");
    snprintf(mode, sizeof mode, "%s", env && *env ? env : "auto");
    kiln_times t = time_path(ctx, NULL, k, v, f, repeat), own = time_path(ctx, "own", k, v, f, repeat);
    double keys = t.keys, pairs = t.pairs;
    kiln_array_release(k), kiln_array_release(v), kiln_array_release(f);
    double ms[4] = {0, 0, 0, 0};
    char lib[4096];
    kiln_bench_native_path(NULL, "libkiln_sort_cub.so", lib, sizeof lib);
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    int (*cub)(long long, int, double *) = NULL;
    if (dl)
        *(void **)&cub =
            dlsym(dl, "kiln_sort_cub_bench"); /* POSIX's way past ISO C's object/function split */
    char what[64];
    snprintf(what, sizeof what, "sort %lld uint32", (long long)n);
    if (!cub || cub(n, repeat, ms) != 0) {
        printf("  %-34s kiln %9.2f ms   CUB n/a (%s)\n", what, keys, dl ? "CUDA error" : dlerror());
        printf("  %-34s kiln %9.2f ms   CUB n/a\n", "sort_pairs uint32+uint32", pairs);
        return;
    }
    printf("  kiln: KILN_SORT_GPU=%s, then own\n", mode);
    row(what, keys, "CUB SortKeys", ms[0]);
    row("  own kernels", own.keys, "CUB SortKeys", ms[0]);
    snprintf(what, sizeof what, "sort_pairs %lld uint32+uint32", (long long)n);
    row(what, pairs, "CUB SortPairs", ms[1]);
    row("  own kernels", own.pairs, "CUB SortPairs", ms[1]);
    snprintf(what, sizeof what, "sort %lld float32", (long long)n);
    row(what, t.floats, "CUB SortKeys f32", ms[3]);
    row("  own kernels", own.floats, "CUB SortKeys f32", ms[3]);
    /* 4 passes read and write the keys, the histogram reads them once */
    double bytes = 9.0 * 4 * (double)n, copy_gbs = 2.0 * 4 * (double)n / ms[2] / 1e6;
    printf("  keys: kiln %.0f GB/s of 9 key moves, CUB %.0f GB/s; a device copy moves %.0f GB/s\n",
           bytes / keys / 1e6, bytes / ms[0] / 1e6, copy_gbs);
}

int main(int argc, char **argv) {
    const char *target = argc > 1 ? argv[1] : "auto";
    kiln_context *ctx = NULL;
    CHECK(kiln_open(&ctx, target));
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    int lg = argc > 2 ? atoi(argv[2]) : cuda ? 28 : 24, repeat = argc > 3 ? atoi(argv[3]) : cuda ? 20 : 5;
    if (lg < 4 || lg > 31 || repeat < 1 || repeat > 64) {
        fprintf(stderr, "usage: kiln_sort_bench [cpu|cuda] [log2 n: 4..31] [repeat: 1..64]\n");
        return 2;
    }
    int64_t n = (int64_t)1 << lg;
    uint32_t *h = malloc(4 * (size_t)n);
    for (int64_t i = 0; i < n; i++) h[i] = key_at(i);
    printf("kiln_sort_bench on %s, median of %d (ratio = reference time / kiln time)\n",
           kiln_context_backend_name(ctx), repeat);
    int64_t vn = n < ((int64_t)1 << 22) ? n : (int64_t)1 << 22;
    int ok = verify(ctx, h, vn, 0) && verify(ctx, h, vn, 1);
    printf("  check: kiln's keys and pairs of %lld keys sorted and a permutation: %s\n", (long long)vn,
           ok ? "ok" : "FAILED");
    if (cuda)
        run_cuda(ctx, n, repeat, h);
    else
        run_cpu(ctx, n, repeat, h);
    free(h);
    kiln_close(ctx);
    return ok ? 0 : 1;
}
