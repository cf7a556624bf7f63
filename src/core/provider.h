/* provider.h: the one shape of a library provider. A library front (fft,
 * blas, random, reduce, comm, sort, sparse, linalg) keeps its operations in a
 * table of its own whose first member is a kiln_provider, as SQLite's VFS
 * objects and ggml's backend registry share a common head: the front picks a
 * provider for the context's backend with kiln_provider_select, asks it for
 * its per-context state with kiln_provider_state, and never tests the
 * backend's kind itself.
 *
 *     typedef struct fft_provider {
 *         kiln_provider base;   // first: a kiln_provider * converts to and fro
 *         kiln_status (*plan)(...);
 *         ...
 *     } fft_provider;
 *
 * A provider is a static const object of the library that defines it; its
 * address identifies it. Providers of kiln's own code (kiln's sort kernels,
 * the CPU's CSR loops) have no load and no state. */
#ifndef KILN_CORE_PROVIDER_H
#define KILN_CORE_PROVIDER_H

#include <stddef.h>

#include "kiln.h"

/* The shape's version: a table made for another does not match. */
#define KILN_PROVIDER_ABI 1

/* The bit of a backend in kiln_provider.backends. */
#define KILN_PROVIDER_ON(kind) (1u << (unsigned)(kind))

typedef struct kiln_provider {
    int abi;             /* KILN_PROVIDER_ABI */
    const char *library; /* the front: "fft", "blas", "sort" */
    const char *name;    /* what users read in errors and profiles: "cuFFT", "FFTW", "kiln" */
    unsigned backends;   /* KILN_PROVIDER_ON(kind) for each backend whose memory it works on */
    /* Makes the provider usable in this process (dlopen and symbol lookup),
     * once, thread-safely; NULL: nothing to load. Fails with
     * KILN_ERR_LIBRARY_MISSING and a message naming the package. */
    kiln_status (*load)(void);
    /* One line on what was loaded ("cuFFT 12.0 (libcufft.so.12)"); NULL: the name. */
    const char *(*describe)(void);
    /* Per-context state (handles, plan caches), made on the first
     * kiln_provider_state call for a context and released at kiln_close,
     * before the backend closes, in reverse order of making. NULL: none. */
    kiln_status (*context_init)(kiln_context *ctx, void **state);
    void (*context_release)(kiln_context *ctx, void *state);
} kiln_provider;

/* 1 when p works on the memory of ctx's backend. */
int kiln_provider_serves(const kiln_provider *p, const kiln_context *ctx);

/* The first of candidates[0, n) that serves ctx's backend and loads (NULL
 * entries are skipped). When none does: the status and message of the first
 * that serves the backend and failed to load, or KILN_ERR_UNSUPPORTED naming
 * the library and the backend when no candidate serves it. */
kiln_status kiln_provider_select(kiln_context *ctx, const kiln_provider *const *candidates, size_t n,
                                 const kiln_provider **out);

/* p's state on ctx (NULL for a provider without context_init), made on
 * first call. KILN_ERR_CONTEXT_DEAD after kiln_close. */
kiln_status kiln_provider_state(kiln_context *ctx, const kiln_provider *p, void **state);

/* "cuFFT 12.0 (libcufft.so.12)", or the name. */
const char *kiln_provider_describe(const kiln_provider *p);

#endif
