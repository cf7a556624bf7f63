/* clock.h: a monotonic clock for host-side timings. */
#ifndef KILN_CORE_CLOCK_H
#define KILN_CORE_CLOCK_H

#include <time.h>

static inline double kiln_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

#endif
