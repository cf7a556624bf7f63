/* bench_main.c: kiln_bench: every seed workload through kiln beside a
 * hand-written kernel, plus launch overhead and compile/cache cost.
 * README.md (this folder) says what each number means. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static void usage(FILE *f) {
    /* `kiln bench` runs this program with KILN_BENCH_AS="kiln bench": the
     * usage names the command the user typed (both names are 10 wide). */
    const char *as = getenv("KILN_BENCH_AS");
    fprintf(f,
            "usage: %s [NAME...] [--target auto|cpu|cuda[:N]] [--size N] [--repeat N]\n"
            "                  [--json FILE] [--no-launch] [--no-compile] [--no-ufunc] [--no-gufunc]\n"
            "  Times each named seed workload (default: all) through kiln and through a\n"
            "  hand-written kernel on the same data: median of --repeat (default 20)\n"
            "  event-timed runs after 3 warm-ups. Then the host cost of one launch\n"
            "  (10000 empty kernels) and the first-kernel cost in fresh processes with\n"
            "  an empty and a warm compile cache. Without NAMEs, also the vectorize\n"
            "  workloads (bench/ufunc_bench.c) at the seeds' sizes (NAME \"vectorize\" selects\n"
            "  them; on the CPU against C loops with libmvec), and the guvectorize\n"
            "  one (seed 002's hermite, 128M x 4 and 1.28M x 4 f32 in place; the CPU runs\n"
            "  1.28M x 4; bench/gufunc_bench.c), which NAME \"hermite\" also selects.\n",
            as && *as ? as : "kiln_bench");
}

static int parse_int(const char *opt, const char *text, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text ? text : "", &end, 10);
    if (!text || errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "kiln_bench: %s wants an integer in %lld..%lld, got \"%s\"\n", opt, lo, hi,
                text ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* 0 run, 1 done (help), 2 usage error. */
static int parse(int argc, char **argv, bench_options *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        long long v;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--target") == 0 && next) {
            o->target = argv[++i];
        } else if (strcmp(a, "--json") == 0 && next) {
            o->json_path = argv[++i];
        } else if (strcmp(a, "--size") == 0) {
            if (parse_int(a, next, 1, 1LL << 40, &v) != 0) return 2;
            o->size = v;
            i++;
        } else if (strcmp(a, "--repeat") == 0) {
            if (parse_int(a, next, 1, 100000, &v) != 0) return 2;
            o->repeat = (int)v;
            i++;
        } else if (strcmp(a, "--no-launch") == 0) {
            o->skip_launch = 1;
        } else if (strcmp(a, "--no-compile") == 0) {
            o->skip_compile = 1;
        } else if (strcmp(a, "--no-ufunc") == 0) {
            o->skip_ufunc = 1;
        } else if (strcmp(a, "--no-gufunc") == 0) {
            o->skip_gufunc = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "kiln_bench: unknown option or missing value: %s\n", a);
            usage(stderr);
            return 2;
        } else if (strcmp(a, "vectorize") == 0) {
            o->want_ufunc = 1; /* the kiln_vectorize rows (ufunc_bench.c) */
        } else if (strcmp(a, "hermite") == 0) {
            o->want_gufunc = 1; /* the guvectorize rows, not a raw-kernel workload */
        } else if (!kiln_example_find(a)) {
            fprintf(stderr, "kiln_bench: no workload \"%s\" (see `kiln demo --help`)\n", a);
            return 2;
        } else if (o->name_count < 16) {
            o->names[o->name_count++] = a;
        }
    }
    return 0;
}

static void print_launch(const bench_launch_cost *c, const char *backend) {
    printf("\nlaunch overhead (%d empty kernels back to back, host clock):\n", c->launches);
    printf("  kiln   %-4s: %7.2f us per launch queued, %7.2f us including the final sync\n", backend,
           c->kiln_enqueue_us, c->kiln_total_us);
    if (c->have_native)
        printf("  native %-4s: %7.2f us per launch queued, %7.2f us including the final sync\n", backend,
               c->native_enqueue_us, c->native_total_us);
}

static void print_compile(const bench_compile_cost *c, const char *target) {
    printf("\nfirst kernel in a fresh process (saxpy, --target %s):\n", target);
    if (!c->ok) {
        printf("  n/a: %s\n", c->note);
        return;
    }
    printf("  cold cache: open %.1f ms, first compile %.1f ms, next compile %.1f ms\n", c->cold_open_ms,
           c->cold_first_ms, c->cold_next_ms);
    printf("  warm cache: open %.1f ms, first load    %.2f ms, next load    %.2f ms\n", c->warm_open_ms,
           c->warm_first_ms, c->warm_next_ms);
    printf("  cold module (preludes built, module not cached): compile %.1f ms\n", c->module_first_ms);
    if (c->module_o3_ok)
        printf(
            "  the same at -O3 at once (KILN_CPU_TIERS=0; by default the -O1 quick build above serves until "
            "its -O3 build lands): compile %.1f ms, process %.1f ms (CPU %.1f)\n",
            c->module_o3_ms, c->module_o3_proc_ms[0], c->module_o3_proc_ms[1]);
    printf("  whole processes, wall (CPU): first ever %.1f ms (%.1f), one cold module %.1f ms (%.1f), its "
           "cache hit "
           "%.1f ms (%.1f)\n",
           c->cold_proc_ms[0], c->cold_proc_ms[1], c->module_proc_ms[0], c->module_proc_ms[1],
           c->warm_proc_ms[0], c->warm_proc_ms[1]);
    if (c->ufunc_ok)
        printf("  ufunc (2 signatures) made + first call: cold %.1f ms (%lld module(s) compiled, process "
               "%.1f ms, CPU %.1f ms), cache hit %.2f ms\n",
               c->ufunc_cold_ms, c->ufunc_compiles, c->ufunc_cold_proc_ms[0], c->ufunc_cold_proc_ms[1],
               c->ufunc_warm_ms);
    if (c->gufunc_ok)
        printf("  gufunc (2 signatures) made + first calls of 3 layouts: cold %.1f ms (kiln_guvectorize %.1f "
               "ms; "
               "%lld module(s) compiled, process %.1f ms, CPU %.1f ms), cache hit %.2f ms\n",
               c->gufunc_cold_ms, c->gufunc_make_ms, c->gufunc_compiles, c->gufunc_cold_proc_ms[0],
               c->gufunc_cold_proc_ms[1], c->gufunc_warm_ms);
    if (c->nvrtc_ok)
        printf(
            "  NVRTC + cuModuleLoadData called directly on the same saxpy, no kiln (fresh process, after "
            "NVRTC's start-up): first %.1f ms, next %.1f ms; kiln / NVRTC: first compile %.2f, next %.2f\n",
            c->nvrtc_first_ms, c->nvrtc_next_ms, c->cold_first_ms / c->nvrtc_first_ms,
            c->cold_next_ms / c->nvrtc_next_ms);
    if (c->note[0]) printf("  note: %s\n", c->note);
}

int main(int argc, char **argv) {
    /* The C baselines use OpenMP, whose idle threads spin for up to 300000
     * turns after each parallel region by default (libgomp); on a small
     * machine that steals cores from kiln's own pool timed right after. A
     * short spin keeps back-to-back regions of a timed loop hot (no futex
     * wake-up charged to the baseline) and frees the cores within tens of
     * microseconds. libgomp reads the variable at load, hence the re-exec. */
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT") &&
        setenv("GOMP_SPINCOUNT", "20000", 1) == 0) {
        execv("/proc/self/exe", argv);
        /* not re-executed: go on with the default policy */
    }
    if (argc >= 4 && strcmp(argv[1], "--child") == 0 &&
        (strcmp(argv[2], "compile") == 0 || strcmp(argv[2], "ufunc") == 0 || strcmp(argv[2], "gufunc") == 0 ||
         strcmp(argv[2], "nvrtc") == 0))
        return bench_compile_child(argv[2], argc >= 5 && strcmp(argv[3], "--target") == 0 ? argv[4] : "auto");
    bench_options o;
    memset(&o, 0, sizeof o);
    o.target = "auto";
    o.repeat = 20;
    /* The compile children are this same program; argv[0] may be a bare
     * name found on PATH, /proc/self/exe is not. */
    static char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = '\0';
    o.self = len > 0 ? self : argv[0];
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;

    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, o.target);
    if (s != KILN_OK) {
        fprintf(stderr, "kiln_bench: cannot open \"%s\": %s: %s\n", o.target, kiln_status_string(s),
                kiln_last_error());
        return 1;
    }
    const char *backend = kiln_context_backend_name(ctx);
    /* Children must land on the same backend, whatever "auto" would pick. */
    if (strcmp(o.target, "auto") == 0) o.target = backend;
    kiln_device_info dev;
    memset(&dev, 0, sizeof dev);
    (void)kiln_device_info_get(ctx, &dev);
    bench_native native;
    bench_native_load(ctx, &native);
    printf("kiln %s on %s (%s)\n%s\n\n", kiln_version_string(), dev.name, backend, native.note);

    int count = 0, failures = 0;
    /* "hermite" or "vectorize" alone name no raw-kernel workload: run only
     * those rows. */
    int gufunc_only = (o.want_gufunc || o.want_ufunc) && o.name_count == 0;
    const kiln_example *all = kiln_examples(&count);
    bench_row rows[16];
    int nrows = 0;
    for (int i = 0; i < count && nrows < 16; i++) {
        int wanted = o.name_count == 0 && !gufunc_only;
        for (int j = 0; j < o.name_count; j++) wanted |= strcmp(o.names[j], all[i].name) == 0;
        if (!wanted || !all[i].prepare) continue; /* vectorize workloads: see below */
        s = (kiln_status)bench_workload(ctx, &native, &all[i], &o, &rows[nrows]);
        if (s != KILN_OK) {
            fprintf(stderr, "kiln_bench: %s: %s: %s\n", all[i].name, kiln_status_string(s),
                    kiln_last_error());
            failures++;
            if (s == KILN_ERR_DEVICE_FAULT || s == KILN_ERR_CONTEXT_DEAD) break;
            continue;
        }
        failures += !rows[nrows].kiln_passed || (rows[nrows].have_native && !rows[nrows].native_passed);
        nrows++;
    }
    if (!gufunc_only) bench_print_rows(rows, nrows, backend);

    if (!o.skip_ufunc && ((o.name_count == 0 && !gufunc_only) || o.want_ufunc)) {
        printf("\nvectorize workloads (kiln_vectorize vs a hand-written kernel, bench/ufunc_bench.c):\n");
        fflush(stdout);
        if (kiln_bench_ufunc(ctx, o.repeat) != 0) failures++;
    }

    bench_gu_row gu[8];
    int ngu = 0;
    if (!o.skip_gufunc && ((o.name_count == 0 && !gufunc_only) || o.want_gufunc)) {
        printf("%sguvectorize workload (kiln_guvectorize vs a hand-written kernel, bench/gufunc_bench.c):\n",
               gufunc_only ? "" : "\n");
        fflush(stdout);
        failures += kiln_bench_gufunc(ctx, &native, &o, gu, 8, &ngu);
    }

    bench_launch_cost launch;
    memset(&launch, 0, sizeof launch);
    if (!o.skip_launch) {
        s = (kiln_status)bench_launch_overhead(ctx, &native, 10000, &launch);
        if (s == KILN_OK) {
            print_launch(&launch, backend);
        } else {
            fprintf(stderr, "kiln_bench: launch overhead: %s: %s\n", kiln_status_string(s),
                    kiln_last_error());
            failures++;
        }
    }
    bench_compile_cost compile;
    memset(&compile, 0, sizeof compile);
    if (!o.skip_compile) {
        (void)bench_compile_cost_measure(&o, strcmp(backend, "cuda") == 0, &compile);
        print_compile(&compile, o.target);
    }
    if (o.json_path) {
        s = (kiln_status)bench_write_json(o.json_path, backend, dev.name, rows, nrows, gu, ngu, &launch,
                                          &compile);
        if (s != KILN_OK) {
            fprintf(stderr, "kiln_bench: cannot write %s: %s\n", o.json_path, strerror(errno));
            failures++;
        }
    }
    bench_native_unload(&native);
    kiln_close(ctx);
    return failures ? 1 : 0;
}
