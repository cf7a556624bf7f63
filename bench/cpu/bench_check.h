/* bench_check.h: CHECK(call) for the CPU benchmark programs: a kiln call
 * that fails ends the program with the file, line, status and kiln's
 * message. */
#ifndef KILN_BENCH_CPU_CHECK_H
#define KILN_BENCH_CPU_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        kiln_status s_ = (call);                                                                             \
        if (s_ != KILN_OK) {                                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, kiln_status_string(s_),                   \
                    kiln_last_error());                                                                      \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

#endif
