/* haversine_mesh.c: seed 000 (t40): the lat/lon mesh made inside the kernel through the
 * example registry: compile, time, and check against a long double host
 * reference. The kernel source is printed with --source.
 *
 *   ./example_haversine_mesh [N] [--source]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"

int main(int argc, char **argv) {
    kiln_example_opts opts = {0, 0, 1, NULL};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--source") == 0) {
            fputs(kiln_example_source("haversine_mesh"), stdout);
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
    int status = kiln_example_find("haversine_mesh")->run(ctx, &opts, &r);
    if (status != KILN_OK)
        kiln_report_failure(status, "haversine_mesh", __FILE__, __LINE__);
    else
        printf("haversine_mesh %lld^2 on %s: %.3f ms (%.1f GB/s), %s: %s\n", (long long)r.size,
               kiln_context_backend_name(ctx), r.ms_median, r.bytes / (r.ms_median * 1e6),
               r.passed ? "ok" : "FAIL", r.check);
    kiln_close(ctx);
    return status == KILN_OK && r.passed ? 0 : 1;
}
