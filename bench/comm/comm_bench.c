/* comm_bench.c: kiln's collectives beside the vendor library called
 * directly, on the same sizes in the same run (kiln and native take turns
 * at every size; the best of 3 rounds of `iters` calls each side, of 7 rounds of 10 x `iters` below 64 KiB).
 *
 *   kiln_comm_bench gpu [--gpus N] [--ops allreduce,allgather,reduce_scatter]
 *                       [--min-bytes 8] [--max-bytes 1G] [--iters 20]
 *       one process driving N GPUs (kiln_comm_init_all) vs NCCL direct
 *   mpirun -np N kiln_comm_bench mpi [...]
 *       CPU ranks: kiln over MPI vs MPI_Allreduce & co. directly
 *   kiln_comm_bench heat-gpu [--gpus N] [--rows R] [--ny NY] [--steps S]
 *       the heat stencil on 1, 2, 4, ... N GPUs of this process: weak scaling
 *       (R rows per GPU) and strong scaling (R rows in all), the time split
 *       into compute and halo exchange as kiln's profiler measured it
 *
 * Sizes and bus bandwidth as nccl-tests: size = the all-reduce buffer, the
 * whole gathered (scattered) buffer for all-gather (reduce-scatter); busbw =
 * size / time x 2(n-1)/n for all-reduce, (n-1)/n for the other two. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_examples.h"
#include "native.h"

#ifdef KILN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

#define MAX_RANKS 16
static const char *const op_names[3] = {"allreduce", "allgather", "reduce_scatter"};

typedef struct bench {
    int local, size, rank;
    kiln_context *ctx[MAX_RANKS];
    kiln_comm *comm[MAX_RANKS];
    kiln_array *send[MAX_RANKS], *recv[MAX_RANKS];
    int native_ok; /* the vendor side is there */
    int mpi;       /* ranks are processes */
} bench;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static double bus_factor(int op, int n) {
    return op == BENCH_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
}

/* us[0]: microseconds per call, waits included; us[1]: the host's share
 * (the calls' issue alone, before the wait). */
static int kiln_time(bench *b, int op, size_t bytes, int iters, double us[2]) {
    size_t count = bytes / sizeof(float), part = count / (size_t)b->size;
    kiln_array *s[MAX_RANKS] = {NULL}, *r[MAX_RANKS] = {NULL};
    int st = KILN_OK;
    size_t n_send = op == BENCH_ALLREDUCE ? count : op == BENCH_ALLGATHER ? part : count;
    size_t n_recv = op == BENCH_ALLREDUCE ? count : op == BENCH_ALLGATHER ? count : part;
    for (int l = 0; l < b->local && st == KILN_OK; l++) {
        st = kiln_array_slice(b->send[l], 0, 0, (int64_t)n_send, 1, &s[l]);
        if (st == KILN_OK) st = kiln_array_slice(b->recv[l], 0, 0, (int64_t)n_recv, 1, &r[l]);
    }
#ifdef KILN_BENCH_HAVE_MPI
    if (b->mpi) MPI_Barrier(MPI_COMM_WORLD);
#endif
    double t0 = now_us();
    for (int it = 0; it < iters && st == KILN_OK; it++) {
        if (b->local > 1) st = kiln_comm_group_start();
        for (int l = 0; l < b->local && st == KILN_OK; l++)
            st = op == BENCH_ALLREDUCE ? kiln_comm_allreduce(b->comm[l], s[l], r[l], KILN_COMM_SUM, NULL)
                 : op == BENCH_ALLGATHER
                     ? kiln_comm_allgather(b->comm[l], s[l], r[l], NULL)
                     : kiln_comm_reduce_scatter(b->comm[l], s[l], r[l], KILN_COMM_SUM, NULL);
        if (b->local > 1 && st == KILN_OK) st = kiln_comm_group_end();
    }
    double issued = (now_us() - t0) / iters;
    for (int l = 0; l < b->local && st == KILN_OK; l++) st = kiln_comm_wait(b->comm[l], NULL);
    double t = (now_us() - t0) / iters;
#ifdef KILN_BENCH_HAVE_MPI
    if (b->mpi) MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
#endif
    us[0] = t;
    us[1] = issued;
    for (int l = 0; l < b->local; l++) kiln_array_release(s[l]), kiln_array_release(r[l]);
    if (st != KILN_OK) kiln_report_failure((kiln_status)st, op_names[op], __FILE__, __LINE__);
    return st;
}

static int native_time(bench *b, int op, size_t bytes, int iters, double us[2]) {
#ifdef KILN_BENCH_HAVE_MPI
    if (b->mpi) return mpi_native_time(op, bytes, iters, us);
#endif
#ifdef KILN_BENCH_HAVE_NCCL
    if (!b->mpi) return nccl_native_time(op, bytes, iters, us);
#endif
    (void)b, (void)op, (void)bytes, (void)iters, (void)us;
    return 1;
}

static void sweep(bench *b, int op, size_t min_bytes, size_t max_bytes, int iters) {
    const char *vendor = b->mpi ? "MPI" : "NCCL";
    if (b->rank == 0) {
        printf("\n%s, %d ranks (%s), float32 sum; kiln beside %s direct, best of 3 rounds of %d (7 of %d "
               "below 64 KiB)\n",
               op_names[op], b->size, b->mpi ? "processes, CPU" : "one process, GPUs", vendor, iters,
               10 * iters);
        printf("%12s %12s %11s %11s %11s %11s %8s %9s %10s %10s\n", "bytes", "count", "kiln us", "kiln busbw",
               "native us", "nat. busbw", "ratio", "diff us", "kiln host", "nat. host");
    }
    double worst_big = 1e9, worst_small_diff = -1e9;
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
        size_t unit = sizeof(float) * (op == BENCH_ALLREDUCE ? 1 : (size_t)b->size);
        size_t eff = bytes / unit * unit;
        if (eff == 0) continue;
        /* Below 64 KiB a call takes microseconds and the difference sought
         * is a fraction of one: many more calls and rounds, so that the
         * best of each is not one lucky or unlucky scheduling. */
        int small = eff < ((size_t)64 << 10);
        int it = eff >= ((size_t)256 << 20) ? (iters + 3) / 4 : small ? 10 * iters : iters;
        double best_k = 1e30, best_n = 1e30, issue_k = 1e30, issue_n = 1e30, t[2];
        for (int round = 0; round < (small ? 7 : 3); round++) {
            if (round == 0) {
                (void)kiln_time(b, op, eff, 2, t); /* warm-up */
                if (b->native_ok) (void)native_time(b, op, eff, 2, t);
            }
            /* Each side goes first in every other round: whichever runs
             * right after the other's wait starts with the GPUs idle. */
            for (int side = 0; side < 2; side++) {
                if ((side ^ (round & 1)) == 0) {
                    if (kiln_time(b, op, eff, it, t) != KILN_OK) return;
                    if (t[0] < best_k) best_k = t[0];
                    if (t[1] < issue_k) issue_k = t[1];
                } else if (b->native_ok && native_time(b, op, eff, it, t) == 0) {
                    if (t[0] < best_n) best_n = t[0];
                    if (t[1] < issue_n) issue_n = t[1];
                }
            }
        }
        double f = bus_factor(op, b->size), kb = (double)eff / best_k / 1e3 * f;
        if (b->rank != 0) continue;
        if (b->native_ok && best_n < 1e30) {
            double nb = (double)eff / best_n / 1e3 * f, ratio = best_n / best_k;
            printf("%12zu %12zu %11.2f %11.3f %11.2f %11.3f %8.3f %9.2f %10.2f %10.2f\n", eff,
                   eff / sizeof(float), best_k, kb, best_n, nb, ratio, best_k - best_n, issue_k, issue_n);
            if (eff >= ((size_t)64 << 20) && ratio < worst_big) worst_big = ratio;
            if (eff < ((size_t)64 << 10) && best_k - best_n > worst_small_diff)
                worst_small_diff = best_k - best_n;
        } else {
            printf("%12zu %12zu %11.2f %11.3f %11s %11s %8s %9s\n", eff, eff / sizeof(float), best_k, kb,
                   "n/a", "n/a", "-", "-");
        }
        fflush(stdout);
    }
    if (b->rank == 0 && b->native_ok) {
        if (worst_big < 1e9)
            printf("%s: kiln/%s time ratio from 64 MiB up: worst %.3f\n", op_names[op], vendor, worst_big);
        if (worst_small_diff > -1e9)
            printf("%s: kiln - %s below 64 KiB: worst %+.2f us a step of %d call%s (%+.2f us a call)\n",
                   op_names[op], vendor, worst_small_diff, b->local, b->local > 1 ? "s" : "",
                   worst_small_diff / b->local);
    }
}

static size_t parse_bytes(const char *s) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (end && (*end == 'k' || *end == 'K')) v *= 1024;
    if (end && (*end == 'm' || *end == 'M')) v *= 1024 * 1024;
    if (end && (*end == 'g' || *end == 'G')) v *= 1024.0 * 1024 * 1024;
    return (size_t)v;
}

static int open_arrays(bench *b, size_t max_bytes) {
    int64_t n = (int64_t)(max_bytes / sizeof(float));
    for (int l = 0; l < b->local; l++) {
        KILN_CHECK(kiln_array_zeros(b->ctx[l], KILN_FLOAT32, 1, &n, &b->send[l]));
        KILN_CHECK(kiln_array_zeros(b->ctx[l], KILN_FLOAT32, 1, &n, &b->recv[l]));
        /* The argument check costs a host round trip (MPI) per call; the
         * vendor side has none. */
        KILN_CHECK(kiln_comm_set_checks(b->comm[l], 0));
    }
    return 0;
}

static void close_all(bench *b) {
    for (int l = 0; l < b->local; l++) {
        kiln_array_release(b->send[l]), kiln_array_release(b->recv[l]);
        kiln_comm_release(b->comm[l]);
        if (!b->mpi) kiln_close(b->ctx[l]);
    }
}

static int heat_scaling(int gpus, int64_t rows, int64_t ny, int steps) {
    printf(
        "\nheat stencil, float64, %lld columns, %d steps, one process driving the GPUs; total ms and "
        "efficiency from a run with nothing measuring it, the split (rank 0) from a second, profiled run\n",
        (long long)ny, steps);
    printf("%8s %6s %10s %10s %12s %12s %12s %12s %11s\n", "scaling", "gpus", "rows", "ms/step", "compute ms",
           "halo wait ms", "halo xfer ms", "total ms", "efficiency");
    for (int weak = 1; weak >= 0; weak--) {
        double t1 = 0;
        for (int n = 1; n <= gpus; n *= 2) {
            kiln_context *ctx[MAX_RANKS] = {NULL};
            kiln_comm *comm[MAX_RANKS] = {NULL};
            for (int g = 0; g < n; g++) {
                char target[32];
                snprintf(target, sizeof target, "cuda:%d", g);
                KILN_CHECK(kiln_open(&ctx[g], target));
            }
            KILN_CHECK(kiln_comm_init_all(ctx, n, comm));
            for (int g = 0; g < n; g++) KILN_CHECK(kiln_comm_set_checks(comm[g], 0));
            int64_t nx = weak ? rows * n : rows;
            kiln_heat_result r[MAX_RANKS];
            KILN_CHECK(kiln_example_heat_local(comm, n, nx, ny, 10, 0, r)); /* warm-up: compile, pools */
            /* The efficiency from a run nothing measures; the split from a
             * second, profiled run. */
            kiln_heat_result plain[MAX_RANKS];
            KILN_CHECK(kiln_example_heat_unmeasured(comm, n, nx, ny, steps, plain));
            KILN_CHECK(kiln_example_heat_local(comm, n, nx, ny, steps, 0, r));
            r[0].total_ms = plain[0].total_ms;
            if (n == 1) t1 = r[0].total_ms;
            /* weak: the same work per GPU, so T1/TN; strong: T1/(N TN) */
            double eff = weak ? t1 / r[0].total_ms : t1 / (n * r[0].total_ms);
            printf("%8s %6d %10lld %10.4f %12.3f %12.3f %12.3f %12.3f %10.1f%%\n", weak ? "weak" : "strong",
                   n, (long long)nx, r[0].total_ms / steps, r[0].compute_ms, r[0].halo_wait_ms, r[0].halo_ms,
                   r[0].total_ms, 100 * eff);
            fflush(stdout);
            for (int g = 0; g < n; g++) kiln_comm_release(comm[g]);
            for (int g = 0; g < n; g++) kiln_close(ctx[g]);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "usage: %s gpu|mpi|heat-gpu [--gpus N] [--ops a,b] [--min-bytes B] [--max-bytes B] "
                "[--iters N] [--rows R] [--ny NY] [--steps S]\n",
                argv[0]);
        return 2;
    }
    const char *mode = argv[1], *ops = "allreduce,allgather,reduce_scatter";
    int gpus = 0, iters = 20, steps = 200;
    int64_t rows = 4096, ny = 8192;
    size_t min_bytes = 8, max_bytes = strcmp(mode, "mpi") == 0 ? ((size_t)16 << 20) : ((size_t)1 << 30);
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--gpus") == 0)
            gpus = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--ops") == 0)
            ops = argv[i + 1];
        else if (strcmp(argv[i], "--min-bytes") == 0)
            min_bytes = parse_bytes(argv[i + 1]);
        else if (strcmp(argv[i], "--max-bytes") == 0)
            max_bytes = parse_bytes(argv[i + 1]);
        else if (strcmp(argv[i], "--iters") == 0)
            iters = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rows") == 0)
            rows = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--ny") == 0)
            ny = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--steps") == 0)
            steps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (iters < 1 || min_bytes < 1 || max_bytes < min_bytes) {
        fprintf(stderr, "bad --iters or byte range\n");
        return 2;
    }
    if (gpus == 0 && strcmp(mode, "mpi") != 0) {
        const char *why = NULL;
        if (kiln_cuda_device_count(&gpus, &why) != KILN_OK || gpus < 1) {
            fprintf(stderr, "%s: no GPU (%s)\n", mode, why ? why : "?");
            return 1;
        }
        if (gpus > MAX_RANKS) gpus = MAX_RANKS;
    }
    if (strcmp(mode, "heat-gpu") == 0) return heat_scaling(gpus, rows, ny, steps);

    bench b;
    memset(&b, 0, sizeof b);
    if (strcmp(mode, "mpi") == 0) {
        b.mpi = 1;
        b.local = 1;
        KILN_CHECK(kiln_comm_open_env("cpu", &b.ctx[0], &b.comm[0]));
#ifdef KILN_BENCH_HAVE_MPI
        b.native_ok = mpi_native_open(max_bytes) == 0;
#endif
    } else if (strcmp(mode, "gpu") == 0) {
        b.local = gpus;
        for (int g = 0; g < gpus; g++) {
            char target[32];
            snprintf(target, sizeof target, "cuda:%d", g);
            KILN_CHECK(kiln_open(&b.ctx[g], target));
        }
        KILN_CHECK(kiln_comm_init_all(b.ctx, gpus, b.comm));
#ifdef KILN_BENCH_HAVE_NCCL
        char why[256] = "";
        b.native_ok = nccl_native_open(gpus, max_bytes, why, sizeof why) == 0;
        if (!b.native_ok) fprintf(stderr, "native NCCL: %s\n", why);
#else
        fprintf(stderr, "kiln_comm_bench was built without nccl.h: native columns n/a\n");
#endif
    } else {
        fprintf(stderr, "unknown mode %s: gpu, mpi or heat-gpu\n", mode);
        return 2;
    }
    b.size = kiln_comm_size(b.comm[0]);
    b.rank = kiln_comm_rank(b.comm[0]);
    if (open_arrays(&b, max_bytes) != 0) return 1;
    if (b.rank == 0) {
        kiln_device_info info;
        if (kiln_device_info_get(b.ctx[0], &info) == KILN_OK)
            printf("kiln_comm_bench %s: %d ranks, %s, transport %s\n", mode, b.size, info.name,
                   kiln_comm_transport(b.comm[0]));
    }
    for (int op = 0; op < 3; op++)
        if (strstr(ops, op_names[op]) && (op == 0 || b.size > 1)) sweep(&b, op, min_bytes, max_bytes, iters);
#ifdef KILN_BENCH_HAVE_NCCL
    if (!b.mpi && b.native_ok) nccl_native_close();
#endif
#ifdef KILN_BENCH_HAVE_MPI
    if (b.mpi && b.native_ok) mpi_native_close();
#endif
    kiln_context *keep = b.mpi ? b.ctx[0] : NULL;
    close_all(&b);
    kiln_close(keep);
    return 0;
}
