/* cmd_demo.c: `kiln demo`: runs the seed workloads on one context and shows
 * that each result matches its host reference, with the kernel time. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "examples.h"
#include "kiln.h"

static void usage(FILE *f) {
    int n;
    const kiln_example *ex = kiln_examples(&n);
    fprintf(f, "usage: kiln demo [NAME...] [--target auto|cpu|cuda[:N]] [--size N] [--repeat N]\n"
               "                 [--out DIR] [--image FILE.png] [--profile] [--trace FILE] [-v]\n"
               "  Runs the named workloads (default: all), each verified against a host\n"
               "  reference and timed with events (median of --repeat runs, default 20).\n"
               "  --size N   problem size, as each workload reads it (below)\n"
               "  --out DIR  where files go (mandelbrot.png); default: the current folder\n"
               "  --image FILE.png  fft_convolve: your own picture instead of kiln's test image\n"
               "  --profile  print kiln's profile (kernels, copies, JIT) after the table\n"
               "  --trace FILE  also write a Chrome trace of the run (Perfetto, chrome://tracing)\n"
               "  exit status: 0 all passed, 1 a check failed or a workload errored\n\nworkloads:\n");
    for (int i = 0; i < n; i++) fprintf(f, "  %-15s seed %s: %s\n", ex[i].name, ex[i].seed, ex[i].summary);
}

typedef struct demo_args {
    const char *target;
    kiln_example_opts opts;
    const kiln_example *chosen[16];
    int count;
} demo_args;

/* 0: run; 1: exit 0 (help); 2: usage error. */
static int parse(int argc, char **argv, demo_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v;
        int64_t n;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
            a->opts.verbose = 1;
        } else if (strcmp(arg, "--target") == 0) {
            if (!(a->target = cli_option_value("demo", argc, argv, &i))) return 2;
        } else if (strcmp(arg, "--profile") == 0) {
            /* The profiler is switched on by the context at kiln_open. */
            setenv("KILN_PROFILE", "1", 1);
        } else if (strcmp(arg, "--trace") == 0) {
            if (!(v = cli_option_value("demo", argc, argv, &i))) return 2;
            setenv("KILN_TRACE", v, 1);
        } else if (strcmp(arg, "--out") == 0) {
            if (!(a->opts.out_dir = cli_option_value("demo", argc, argv, &i))) return 2;
        } else if (strcmp(arg, "--image") == 0) {
            /* Read by fft_convolve (the only workload that takes a picture). */
            if (!(v = cli_option_value("demo", argc, argv, &i))) return 2;
            setenv("KILN_DEMO_IMAGE", v, 1);
        } else if (strcmp(arg, "--size") == 0) {
            if (!(v = cli_option_value("demo", argc, argv, &i)) ||
                cli_parse_int64("demo", "--size", v, 1, INT64_C(1) << 40, &n) != 0)
                return 2;
            a->opts.size = n;
        } else if (strcmp(arg, "--repeat") == 0) {
            if (!(v = cli_option_value("demo", argc, argv, &i)) ||
                cli_parse_int64("demo", "--repeat", v, 1, 100000, &n) != 0)
                return 2;
            a->opts.repeat = (int)n;
        } else if (arg[0] == '-') {
            fprintf(stderr, "kiln demo: unknown option \"%s\"\n", arg);
            usage(stderr);
            return 2;
        } else {
            const kiln_example *ex = kiln_example_find(arg);
            if (!ex) {
                fprintf(stderr, "kiln demo: no workload \"%s\"\n", arg);
                usage(stderr);
                return 2;
            }
            if (a->count == (int)(sizeof a->chosen / sizeof a->chosen[0])) {
                fprintf(stderr, "kiln demo: too many workloads named\n");
                return 2;
            }
            a->chosen[a->count++] = ex;
        }
    }
    if (a->count == 0) {
        int n;
        const kiln_example *all = kiln_examples(&n);
        for (int i = 0; i < n && i < 16; i++) a->chosen[a->count++] = &all[i];
    }
    return 0;
}

/* The first number in a file, or -1 ("max" and missing files too). */
static long long read_number(const char *path) {
    FILE *f = fopen(path, "r");
    long long v = -1;
    if (f) {
        if (fscanf(f, "%lld", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

/* Room left under the cgroup limit of folder `dir` (limit less usage), or
 * -1 when the folder has no limit or is not there. */
static long long cgroup_room(const char *dir, const char *limit_file, const char *usage_file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, limit_file);
    long long limit = read_number(path);
    snprintf(path, sizeof path, "%s/%s", dir, usage_file);
    long long usage = read_number(path);
    if (limit <= 0 || limit >= (1LL << 62) || usage < 0) return -1; /* "max", or v1's "no limit" */
    return limit > usage ? limit - usage : 0;
}

/* The least room under the memory limits of this process's cgroup (the
 * folder /proc/self/cgroup names, v2 then v1) and of the mount's root (a
 * container's own cgroup), or -1 when none has a limit. */
static long long cgroup_memory_room(void) {
    char own_v2[512] = "", own_v1[512] = "", line[512];
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            if (strncmp(line, "0::", 3) == 0) snprintf(own_v2, sizeof own_v2, "/sys/fs/cgroup%s", line + 3);
            char *m = strstr(line, ":memory:");
            if (m) snprintf(own_v1, sizeof own_v1, "/sys/fs/cgroup/memory%s", m + 8);
        }
        fclose(f);
    }
    long long rooms[4] = {
        cgroup_room(own_v2, "memory.max", "memory.current"),
        cgroup_room("/sys/fs/cgroup", "memory.max", "memory.current"),
        cgroup_room(own_v1, "memory.limit_in_bytes", "memory.usage_in_bytes"),
        cgroup_room("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes")};
    long long least = -1;
    for (int i = 0; i < 4; i++)
        if (rooms[i] >= 0 && (least < 0 || rooms[i] < least)) least = rooms[i];
    return least;
}

/* What this process can have without swapping out others, in bytes:
 * MemAvailable of /proc/meminfo, less where a cgroup limit (a container, a
 * systemd slice) leaves less; 0 when nothing says. */
static int64_t memory_available_bytes(void) {
    long long kib = 0, bytes = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
        fclose(f);
        bytes = kib * 1024;
    }
    long long room = cgroup_memory_room();
    if (room >= 0 && (bytes == 0 || room < bytes)) bytes = room;
    return (int64_t)bytes;
}

/* Rates only where the count means something for the workload. */
static void format_rate(double amount, double ms, double unit, char *buf, size_t size) {
    if (amount > 0 && ms > 0)
        snprintf(buf, size, "%.1f", amount / (ms * 1e-3) / unit);
    else
        snprintf(buf, size, "-");
}

int kiln_cmd_demo(int argc, char **argv) {
    demo_args a;
    memset(&a, 0, sizeof a);
    a.target = "auto";
    int p = parse(argc, argv, &a);
    if (p != 0) return p == 1 ? 0 : 2;

    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, a.target);
    if (s != KILN_OK) {
        fprintf(stderr, "kiln demo: cannot open a context on \"%s\": %s: %s\n", a.target,
                kiln_status_string(s), kiln_last_error());
        return 1;
    }
    const char *backend = kiln_context_backend_name(ctx);
    kiln_device_info dev;
    if (kiln_device_info_get(ctx, &dev) == KILN_OK) printf("device: %s (%s)\n\n", dev.name, backend);

    /* Workloads run one at a time, each freeing its memory before the next:
     * half of what is available leaves room for the compiler kiln runs and
     * for the rest of the machine. --size runs what it says. */
    int64_t available = memory_available_bytes();
    if (available > 0 && a.opts.size == 0) {
        a.opts.memory_bytes = available / 2;
        printf("memory: %.1f GB available; workloads sized to use at most %.1f GB (--size N overrides)\n",
               (double)available / 1e9, (double)a.opts.memory_bytes / 1e9);
    }
    printf("%d workload%s; the first run compiles their kernels (then cached on disk)\n\n", a.count,
           a.count == 1 ? "" : "s");

    int failures = 0;
    printf("%-15s | %-4s | %-7s | %-9s | %-6s | %10s | %4s | %8s | %8s | %s\n", "workload", "seed", "backend",
           "size", "passed", "median ms", "runs", "GB/s", "GFLOP/s", "check");
    printf("----------------+------+---------+-----------+--------+------------+------+----------+-"
           "---------+------\n");
    for (int i = 0; i < a.count; i++) {
        const kiln_example *ex = a.chosen[i];
        kiln_example_result r;
        memset(&r, 0, sizeof r); /* vectorize workloads may leave size/runs unset */
        /* The row's start shows which workload is running (some take
         * seconds); -v prints the workloads' own steps instead. */
        if (!a.opts.verbose) printf("%-15s | %-4s | %-7s | ", ex->name, ex->seed, backend);
        fflush(stdout);
        s = (kiln_status)ex->run(ctx, &a.opts, &r);
        if (a.opts.verbose) printf("%-15s | %-4s | %-7s | ", ex->name, ex->seed, backend);
        if (s != KILN_OK) {
            printf("%-9s | %-6s | %10s | %4s | %8s | %8s | %s: %s\n", "-", "ERROR", "-", "-", "-", "-",
                   kiln_status_string(s), kiln_last_error());
            failures++;
            if (s == KILN_ERR_DEVICE_FAULT || s == KILN_ERR_CONTEXT_DEAD) break;
            continue;
        }
        char gbs[32], gflops[32], size[32] = "default", runs[16] = "-";
        format_rate(r.bytes, r.ms_median, 1e9, gbs, sizeof gbs);
        format_rate(r.flops, r.ms_median, 1e9, gflops, sizeof gflops);
        if (r.size > 0)
            snprintf(size, sizeof size, "%lld", (long long)r.size);
        else if (a.opts.size > 0)
            snprintf(size, sizeof size, "%lld", (long long)a.opts.size);
        if (r.runs > 0) snprintf(runs, sizeof runs, "%d", r.runs);
        printf("%-9s | %-6s | %10.4f | %4s | %8s | %8s | %s\n", size, r.passed ? "yes" : "NO", r.ms_median,
               runs, gbs, gflops, r.check);
        failures += !r.passed;
    }
    fflush(stdout); /* the profile, if on, goes to stderr at kiln_close: keep the table above it */
    kiln_close(ctx);
    if (failures) fprintf(stderr, "kiln demo: %d workload%s failed\n", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
