/* clock.h: a monotonic clock for host-side timings. */
#ifndef KILN_CORE_CLOCK_H
#define KILN_CORE_CLOCK_H

#include <time.h>

static inline double kiln_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The same clock at the last timer tick (ms, a few ms behind at most): never
 * later than kiln_now_ms, for a lower bound of a time at a fraction of the
 * cost on hosts where reading the precise clock is slow. */
static inline double kiln_now_coarse_ms(void) {
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
#else
    return kiln_now_ms();
#endif
}

#endif
