/* launch.h: running a planned ufunc variant (launch.c). */
#ifndef KILN_UFUNC_LAUNCH_H
#define KILN_UFUNC_LAUNCH_H

#include "ufunc/plan.h"

/* Launches a planned variant on exec (compiling it on first use). */
kiln_status uf_launch_plan(kiln_ufunc *f, kiln_context *exec, const uf_plan *p, int parallel,
                           kiln_stream *stream);

#endif
