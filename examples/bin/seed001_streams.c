/* seed001_streams.c: seed 001's streams workload with events in place of
 * host synchronisation (examples/streams_events.c), on "auto" (KILN_TARGET
 * overrides).
 *
 *   ./example_seed001_streams [N]
 */
#include <stdio.h>
#include <stdlib.h>

#include "driver_examples.h"

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : (int64_t)1 << 22;
    if (n < 1) {
        fprintf(stderr, "usage: %s [N >= 1]\n", argv[0]);
        return 2;
    }
    kiln_context *ctx = NULL;
    KILN_CHECK(kiln_open(&ctx, "auto"));
    double err = -1;
    int s = kiln_example_streams_events(ctx, n, 8, &err);
    if (s != KILN_OK) {
        fprintf(stderr, "streams: %s: %s\n", kiln_status_string(s), kiln_last_error());
        kiln_close(ctx);
        return 1;
    }
    printf("streams (%s): %lld floats in 8 chunks over 3 streams, one host wait: max abs err %g\n",
           kiln_context_backend_name(ctx), (long long)n, err);
    kiln_close(ctx);
    return err == 0 ? 0 : 1;
}
