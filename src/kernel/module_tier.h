/* module_tier.h: a raw module's first call without its -O3 compile
 * (issue 15, cold calls on the CPU).
 *
 * On the CPU backend, a module the program builds from its own source
 * (kiln_module_from_source, kiln_module_from_file, kiln_kernel_from_source)
 * whose -O3 build is not in the disk cache is compiled at -O1 first (the
 * host compiler's --fast-compile, about half the time), loaded, and
 * returned. From the module's first launch (or kiln_jit_wait) a
 * background thread compiles it at -O3, stores that in the cache, and
 * swaps it in under the module's kernels (the backend's module_upgrade):
 * launches from then on run the -O3 code, and later processes load it from
 * the cache directly. A module never launched costs no second compile. The results do not change:
 * the -O1 build contracts a*b+c to FMA as -O3 does, and without
 * --use_fast_math neither calls vector math.
 *
 * Not tiered: modules that keep state between launches (a `__device__`
 * variable, a static local: the new build would start from the initial
 * values; the backend says which), -G, --use_fast_math, --fast-compile,
 * kiln's own modules (ufuncs, gufuncs, reductions), the CUDA backend
 * (NVRTC's fixed cost is most of a small module's compile there), and
 * KILN_CPU_TIERS=0. One build per module, at a lower CPU priority (nice
 * 10) than the program, and per context at most a quarter of the CPUs'
 * worth at once (the rest queue); releasing the module or closing the
 * context stops it (the compiler is killed) and waits for it. */
#ifndef KILN_KERNEL_MODULE_TIER_H
#define KILN_KERNEL_MODULE_TIER_H

#include "kernel/module.h"
#include "kernel/options.h"

/* 1 when kiln_module_build should build m's source in two tiers. */
int kiln_module_tiers_wanted(kiln_context *ctx, const kiln_options *opts);
/* Arms the -O3 build of m (its first tier loaded) from copies of what
 * kiln_module_build was given: it starts at m's first launch or at
 * kiln_jit_wait. A failure to arm or start is not an error: m keeps its
 * first tier. */
void kiln_module_tier_arm(kiln_module *m, const char *source, const char *options, const char *include_dir);
/* kiln_launch, for m's kernels: starts m's armed build. */
void kiln_module_tier_launched(kiln_module *m);
static inline void kiln_module_tier_note_launch(kiln_module *m) {
    if (atomic_load_explicit(&m->tier_armed, memory_order_relaxed)) kiln_module_tier_launched(m);
}
/* In the module's release: stops its running build, if any, and waits. */
void kiln_module_tier_stop(kiln_module *m);

#endif
