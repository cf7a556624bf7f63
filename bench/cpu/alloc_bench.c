/* alloc_bench.c: the cost of a CPU-backend buffer (kiln_host_alloc then
 * kiln_host_free: the backend's allocator, which arrays use too), per size,
 * one at a time and in batches (allocate 256 buffers, then free them all),
 * which a free list reused at once would not show; and kiln_array_empty
 * then kiln_array_release, one at a time.
 *
 *   kiln_alloc_bench [rounds]      (KILN_TARGET is set to cpu)
 *
 * Prints, per size, the median over 7 repetitions of the time per pair, in
 * nanoseconds, with each host buffer's first byte written (a page fault on
 * a fresh page is part of what an allocation costs). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln.h"

#define BATCH 256

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns per allocate+free, one at a time (batch 0) or BATCH at a time. */
static double run(kiln_context *ctx, size_t bytes, int rounds, int batch) {
    void *p[BATCH];
    double t0 = now_ns();
    int count = batch ? BATCH : 1;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < count; i++) {
            if (kiln_host_alloc(ctx, bytes, &p[i]) != KILN_OK) {
                fprintf(stderr, "alloc failed: %s\n", kiln_last_error());
                exit(1);
            }
            *(volatile unsigned char *)p[i] = 1;
        }
        for (int i = 0; i < count; i++) kiln_host_free(ctx, p[i]);
    }
    return (now_ns() - t0) / ((double)rounds * count);
}

static double run_arrays(kiln_context *ctx, int64_t bytes, int rounds) {
    double t0 = now_ns();
    for (int r = 0; r < rounds; r++) {
        kiln_array *a = NULL;
        if (kiln_array_empty(ctx, KILN_UINT8, 1, &bytes, &a) != KILN_OK) {
            fprintf(stderr, "alloc failed: %s\n", kiln_last_error());
            exit(1);
        }
        kiln_array_release(a);
    }
    return (now_ns() - t0) / rounds;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    setenv("KILN_TARGET", "cpu", 1);
    kiln_context *ctx = NULL;
    if (kiln_open(&ctx, "cpu") != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return 1;
    }
    static const int64_t sizes[] = {64, 1000, 4096, 65536, 200000, 1 << 20, 8 << 20};
    printf("%10s %14s %14s %14s\n", "bytes", "one ns/pair", "batch ns/pair", "array ns/pair");
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        double one[7], many[7], arr[7];
        int n = sizes[s] >= (1 << 20) ? rounds / 10 + 1 : rounds;
        for (int k = 0; k < 7; k++) {
            one[k] = run(ctx, (size_t)sizes[s], n, 0);
            many[k] = run(ctx, (size_t)sizes[s], n / 16 + 1, 1);
            arr[k] = run_arrays(ctx, sizes[s], n);
        }
        qsort(one, 7, sizeof one[0], cmp);
        qsort(many, 7, sizeof many[0], cmp);
        qsort(arr, 7, sizeof arr[0], cmp);
        printf("%10lld %14.0f %14.0f %14.0f\n", (long long)sizes[s], one[3], many[3], arr[3]);
    }
    kiln_close(ctx);
    return 0;
}
