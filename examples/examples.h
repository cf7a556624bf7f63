/* examples.h: the seed workloads (shared/seeds/) as raw kiln kernels, each
 * verified against a host reference. Used by `kiln demo`, by kiln_bench and
 * by tests/test_examples.c; examples/bin/ holds small standalone mains.
 *
 * Two levels:
 *  - kiln_examples(): the registry; `run` does everything (compile, upload,
 *    warm up, time with events, verify) and fills a kiln_example_result.
 *  - kiln_example_prepare()/..._verify(): the same workload split in steps,
 *    so kiln_bench can time a hand-written kernel on exactly the same data. */
#ifndef KILN_EXAMPLES_H
#define KILN_EXAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

typedef struct kiln_example_opts {
    int64_t size;        /* problem size; 0 = the seed's size (each example says what it scales) */
    int repeat;          /* timed runs; 0 = 20, fewer (at least 3) once they pass 5 s */
    int verbose;         /* print what is being done to stdout */
    const char *out_dir; /* where files such as mandelbrot.png go; NULL = cwd */
    /* Host memory a workload may take, in bytes; 0 = no limit. A workload
     * whose default size needs more runs a smaller one (the size it ran is
     * in its result); a size given in `size` is run as given. */
    int64_t memory_bytes;
} kiln_example_opts;

typedef struct kiln_example_result {
    int passed;
    int64_t size;     /* the size actually run */
    int runs;         /* timed runs actually done */
    double ms_median; /* event-timed kernel time, median of `repeat` */
    double ms_min;
    double bytes;    /* bytes one launch must move to/from memory (minimum) */
    double flops;    /* floating-point operations of one launch */
    char check[256]; /* what was checked, e.g. "max abs err 1.2e-7 vs float64 host" */
} kiln_example_result;

/* Returns a kiln_status; on failure kiln_last_error() says why. */
typedef int (*kiln_example_fn)(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);

/* One prepared launch: the compiled kernel, its geometry and arguments over
 * device arrays holding fresh inputs, plus the host copies verify needs. */
#define KILN_EXAMPLE_MAX_ARGS 12
#define KILN_EXAMPLE_MAX_BUFFERS 4
typedef struct kiln_example_launch {
    const struct kiln_example *example;
    kiln_context *ctx;
    kiln_kernel *kernel;
    kiln_dim3 grid, block;
    size_t shared_bytes;
    kiln_value args[KILN_EXAMPLE_MAX_ARGS];
    int nargs;
    kiln_array *arrays[KILN_EXAMPLE_MAX_BUFFERS]; /* owned; released by _release */
    void *host[KILN_EXAMPLE_MAX_BUFFERS];         /* owned malloc'd host data */
    int64_t size;                                 /* the size actually used */
    double bytes, flops;                          /* per launch */
} kiln_example_launch;

typedef int (*kiln_example_prepare_fn)(kiln_context *ctx, int64_t size, kiln_example_launch *l);
/* Reads the outputs back and compares them with the host reference; fills
 * res->passed and res->check. opts may be NULL (no files written). */
typedef int (*kiln_example_verify_fn)(kiln_example_launch *l, const kiln_example_opts *opts,
                                      kiln_example_result *res);

typedef struct kiln_example {
    const char *name;    /* "saxpy" */
    const char *seed;    /* "004" */
    const char *summary; /* one line */
    kiln_example_fn run;
    /* The rest is set for raw-kernel workloads only; vectorize workloads
     * (ufunc_examples.c) have just `run`, and prepare returns
     * KILN_ERR_UNSUPPORTED for them. */
    const char *source;       /* the CUDA C kernel source */
    const char *kernel_name;  /* the __global__ function timed */
    int64_t default_size;     /* the seed's size */
    int64_t default_size_cpu; /* on the CPU backend, when the seed's would take minutes */
    kiln_example_prepare_fn prepare;
    kiln_example_verify_fn verify;
} kiln_example;

/* A whole program around one registry workload: `PROG [SIZE] [--source]`.
 * Runs it on "auto" (KILN_TARGET overrides), prints time, rates and the
 * check; returns the exit status (0 passed, 1 failed, 2 usage). */
int kiln_example_main(const char *name, int argc, char **argv);

/* Kernel text shared by the examples and kiln_bench, so that both time the
 * same code: the CUDA samples' cumulative normal distribution (Black-Scholes)
 * and seed 002's guvectorize body (the Hermite-like recurrence). */
#define KILN_EXAMPLE_CND_SOURCE                                                                              \
    "__device__ inline double cnd(double d) {\n"                                                             \
    "    const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937, A4 = -1.821255978, A5 = "        \
    "1.330274429;\n"                                                                                         \
    "    const double RSQRT2PI = 0.39894228040143267793994605993438;\n"                                      \
    "    double K = 1.0 / (1.0 + 0.2316419 * fabs(d));\n"                                                    \
    "    double r = RSQRT2PI * exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));\n"  \
    "    if (d > 0) r = 1.0 - r;\n"                                                                          \
    "    return r;\n"                                                                                        \
    "}\n"
/* seed 000's t39 ufunc body: haversine with atan2 and the scale fused in. */
#define KILN_EXAMPLE_HAVERSINE_BODY                                                                          \
    "double a = pow(sin(0.008726645 * (lat2 - lat1)), 2) +\n"                                                \
    "           cos(0.01745329 * lat1) * cos(0.01745329 * lat2) * pow(sin(0.008726645 * (lon2 - lon1)), "    \
    "2);\n"                                                                                                  \
    "return atan2(a, 1 - a) * s;"
#define KILN_EXAMPLE_HERMITE_BODY                                                                            \
    "for (int i = 2; i < out.len; i++)\n"                                                                    \
    "    out[i] = out[1] * out[i - 1] - (i - 1) * out[i - 2];\n"                                             \
    "float c = 1;\n"                                                                                         \
    "for (int i = 2; i < out.len; i++) {  // cannot be merged with the loop above\n"                         \
    "    c *= i;\n"                                                                                          \
    "    out[i] /= sqrtf(c);\n"                                                                              \
    "}\n"

/* The registry, in a fixed order; *count (may be NULL) gets its length. */
const kiln_example *kiln_examples(int *count);
/* The example called `name`, or NULL. */
const kiln_example *kiln_example_find(const char *name);
/* The kernel source of example `name` (a static string), or NULL (also for
 * vectorize workloads, whose source kiln generates). */
const char *kiln_example_source(const char *name);

/* The size opts->size = 0 means on ctx's backend. */
int64_t kiln_example_default_size(const kiln_example *ex, kiln_context *ctx);
/* Compiles, uploads fresh inputs; on failure everything is released.
 * size 0: kiln_example_default_size. */
int kiln_example_prepare(const kiln_example *ex, kiln_context *ctx, int64_t size, kiln_example_launch *l);
/* Launches once on the default stream (queued, not waited for). */
int kiln_example_launch_once(kiln_example_launch *l);
/* One timed run: `batch` launches (at least 1) back to back between the
 * events start and end, waited for; *ms gets the time per launch. A lone
 * launch's figure also holds the host's submission of that launch after
 * the start event; batches spread it over the launches. */
int kiln_example_time_run(kiln_example_launch *l, kiln_event *start, kiln_event *end, int batch, double *ms);
/* Warm-up launches, then `repeat` launches each between two events; the
 * median and minimum in milliseconds. With budget_ms > 0, stops after 3
 * runs once the timed runs add up to budget_ms, and skips the second
 * warm-up when the first alone took that long; *runs gets the count. */
int kiln_example_time(kiln_example_launch *l, int warmups, int repeat, double budget_ms, double *ms_median,
                      double *ms_min, int *runs);
int kiln_example_verify(kiln_example_launch *l, const kiln_example_opts *opts, kiln_example_result *res);
void kiln_example_release(kiln_example_launch *l);
/* prepare, warm up, time opts->repeat runs, verify, release: what `run` of
 * every registered example does. */
int kiln_example_run(const kiln_example *ex, kiln_context *ctx, const kiln_example_opts *opts,
                     kiln_example_result *res);

/* Median of n values (sorts a copy); 0 for n == 0. */
double kiln_example_median(const double *v, int n);
/* One timed step of kiln_example_time_calls: a kiln call queued on the
 * default stream, returning its status. */
typedef int (*kiln_example_step)(void *arg);
/* step(arg) `warmups` times, then `repeat` (at least 1) times, each between
 * two events on the default stream: the median and (min not NULL) the least
 * of the device times in ms. */
int kiln_example_time_calls(kiln_context *ctx, kiln_example_step step, void *arg, int warmups, int repeat,
                            double *ms_median, double *ms_min);
/* Monotonic host time in ms, for the host-timed runs of examples and benches. */
double kiln_example_now_ms(void);
/* Modules ctx has compiled or loaded from the disk cache so far
 * (kiln_jit_stats), -1 on error: a quick kernel's hand-over to the
 * kernel of a call's layout shows as one more. */
int64_t kiln_example_modules_built(kiln_context *ctx);

#endif
