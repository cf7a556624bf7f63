/* matmul.c: seed 001's shared-memory tiled matrix multiply through the
 * example registry: compile, upload, time, and check against a float64 host
 * product. The kernel source is printed with --source.
 *
 *   ./example_matmul [N] [--source]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"

int main(int argc, char **argv) {
    kiln_example_opts opts = {0, 0, 1, NULL};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--source") == 0) {
            fputs(kiln_example_source("matmul"), stdout);
            return 0;
        }
        opts.size = atoll(argv[i]);
        if (opts.size < 1) {
            fprintf(stderr, "usage: %s [N] [--source]\n", argv[0]);
            return 2;
        }
    }
    kiln_context *ctx = NULL;
    KILN_CHECK(kiln_open(&ctx, "auto"));
    kiln_example_result r;
    int status = kiln_example_find("matmul")->run(ctx, &opts, &r);
    if (status != KILN_OK)
        kiln_report_failure(status, "matmul", __FILE__, __LINE__);
    else
        printf("matmul n=%lld on %s: %.3f ms (%.1f GFLOP/s), %s: %s\n", (long long)r.size,
               kiln_context_backend_name(ctx), r.ms_median, r.flops / (r.ms_median * 1e6),
               r.passed ? "ok" : "FAIL", r.check);
    kiln_close(ctx);
    return status == KILN_OK && r.passed ? 0 : 1;
}
