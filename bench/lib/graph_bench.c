/* graph_bench.c: kiln_graph_bench: the graphs demo's time-step loop (n
 * floats, K small kernels and one ufunc call a step; examples/graph_steps.c)
 * through kiln, queued directly and as a captured graph, beside the same
 * kernels written with the CUDA runtime and captured into a native CUDA
 * graph (lib/graph_native.cu, built by nvcc into libkiln_graph_native.so,
 * dlopened from beside this executable or $KILN_GRAPH_NATIVE_LIB).
 *
 *   kiln_graph_bench [--target auto|cpu|cuda[:N]] [--size N] [--steps S] [--kernels K]
 *
 * Host time per node is the time the host spends queuing (launch calls, or
 * graph launches divided by the graph's nodes); a step's time is wall time,
 * waiting included, over S steps. The ratio column is kiln / native. */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_examples.h"
#include "graph_native.h"
#include "native_path.h"

typedef struct native_lib {
    graph_native_run_fn run;
    graph_native_error_fn error;
} native_lib;

static int load_native(native_lib *n, char *why, size_t why_size) {
    char path[PATH_MAX + 64];
    kiln_bench_native_path("KILN_GRAPH_NATIVE_LIB", "libkiln_graph_native.so", path, sizeof path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, why_size, "%s", dlerror());
        return 1;
    }
    void *p[3] = {dlsym(h, "graph_native_abi"), dlsym(h, "graph_native_run"), dlsym(h, "graph_native_error")};
    for (int i = 0; i < 3; i++)
        if (!p[i]) {
            snprintf(why, why_size, "%s lacks a symbol", path);
            return 1;
        }
    graph_native_abi_fn abi;
    memcpy(&abi, &p[0], sizeof abi);
    memcpy(&n->run, &p[1], sizeof n->run);
    memcpy(&n->error, &p[2], sizeof n->error);
    if (abi() != GRAPH_NATIVE_ABI) {
        snprintf(why, why_size, "%s has ABI %d, expected %d", path, abi(), GRAPH_NATIVE_ABI);
        return 1;
    }
    return 0;
}

static long arg_long(int argc, char **argv, int *i, long lo, long hi) {
    if (*i + 1 >= argc) return -1;
    char *end;
    long v = strtol(argv[++*i], &end, 10);
    return *end || v < lo || v > hi ? -1 : v;
}

static void row(const char *who, double direct_ms, double graph_ms, double direct_us, double graph_us,
                int nodes, int steps) {
    printf("%-8s | %11.3f | %10.3f | %12.2f | %11.2f | %5d\n", who, direct_ms / steps, graph_ms / steps,
           direct_us, graph_us, nodes);
}

int main(int argc, char **argv) {
    const char *target = "auto";
    long n = 4096, steps = 50, kernels = 1000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--target") == 0 && i + 1 < argc)
            target = argv[++i];
        else if (strcmp(argv[i], "--size") == 0 && (n = arg_long(argc, argv, &i, 2, 1L << 28)) > 0)
            continue;
        else if (strcmp(argv[i], "--steps") == 0 && (steps = arg_long(argc, argv, &i, 1, 100000)) > 0)
            continue;
        else if (strcmp(argv[i], "--kernels") == 0 && (kernels = arg_long(argc, argv, &i, 2, 100000)) > 0 &&
                 kernels % 2 == 0)
            continue;
        else {
            fprintf(stderr,
                    "usage: kiln_graph_bench [--target auto|cpu|cuda[:N]] [--size N >= 2] [--steps S] "
                    "[--kernels K, even]\n");
            return 2;
        }
    }
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, target);
    if (s != KILN_OK) {
        fprintf(stderr, "kiln_graph_bench: %s: %s\n", kiln_status_string(s), kiln_last_error());
        return 1;
    }
    kiln_device_info dev;
    KILN_CHECK(kiln_device_info_get(ctx, &dev));
    printf("device: %s (%s); n = %ld floats, %ld kernels + 1 ufunc a step, %ld steps\n\n", dev.name,
           kiln_context_backend_name(ctx), n, kernels, steps);
    float *kiln_state = malloc((size_t)n * sizeof *kiln_state),
          *native_state = malloc((size_t)n * sizeof(float));
    float *init = malloc((size_t)n * sizeof *init);
    if (!kiln_state || !native_state || !init) return 1;
    for (long i = 0; i < n; i++) init[i] = kiln_example_graph_init(i);
    kiln_graph_demo_result r;
    s = kiln_example_graph_steps(ctx, n, (int)steps, (int)kernels, kiln_state, &r);
    if (s != KILN_OK) {
        fprintf(stderr, "kiln_graph_bench: kiln: %s: %s\n", kiln_status_string(s), kiln_last_error());
        return 1;
    }
    printf("%-8s | %11s | %10s | %12s | %11s | %5s\n", "", "direct ms/step", "graph ms/step",
           "direct us/launch", "graph us/node", "nodes");
    row("kiln", r.direct_ms, r.graph_ms, r.direct_us_node, r.graph_us_node, r.nodes, (int)steps);
    int rc = r.equal ? 0 : 1;
    if (!r.equal) printf("kiln: the graph's result differs from the direct run's\n");

    native_lib lib;
    char why[512] = "";
    if (kiln_context_backend(ctx) != KILN_BACKEND_CUDA) {
        printf("native   | n/a: the native CUDA graph needs a CUDA context\n");
    } else if (load_native(&lib, why, sizeof why) != 0) {
        printf("native   | n/a: %s\n", why);
    } else {
        int64_t len = n;
        kiln_array *a = NULL, *b = NULL;
        KILN_CHECK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &len, &a));
        KILN_CHECK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &len, &b));
        KILN_CHECK(kiln_synchronize(ctx));
        graph_native_result nr;
        int e = lib.run(dev.ordinal, kiln_array_data(a), kiln_array_data(b), init, (int)n, (int)steps,
                        (int)kernels, &nr);
        if (e != 0) {
            printf("native   | failed: %s\n", lib.error(e));
            rc = 1;
        } else {
            row("native", nr.direct_ms, nr.graph_ms, nr.direct_us_node, nr.graph_us_node, nr.nodes,
                (int)steps);
            KILN_CHECK(kiln_array_to_host(a, native_state, (size_t)n * sizeof(float)));
            double worst = 0;
            for (long i = 0; i < n; i++) worst = fmax(worst, fabs((double)native_state[i] - kiln_state[i]));
            printf("ratio    | %11.3f | %10.3f | %12.3f | %11.3f |   (kiln / native)\n",
                   r.direct_ms / nr.direct_ms, r.graph_ms / nr.graph_ms, r.direct_us_node / nr.direct_us_node,
                   r.graph_us_node / nr.graph_us_node);
            printf("kiln vs native final state: max abs difference %g\n", worst);
        }
        kiln_array_release(a);
        kiln_array_release(b);
    }
    free(kiln_state);
    free(native_state);
    free(init);
    kiln_close(ctx);
    return rc;
}
