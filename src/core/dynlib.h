/* dynlib.h: opening an optional vendor library (cuFFT, cuBLAS, cuRAND, NCCL,
 * FFTW, OpenBLAS, ...) with dlopen and filling a table of its functions.
 *
 * The library providers under src/random, src/fft, src/blas and src/comm keep
 * one such table per library, filled once per process under pthread_once
 * (a loaded library is process-wide by nature, like the driver). A missing
 * library or symbol becomes KILN_ERR_LIBRARY_MISSING and a message that names
 * what to install; it is never a loader error and never breaks the rest of
 * kiln. */
#ifndef KILN_CORE_DYNLIB_H
#define KILN_CORE_DYNLIB_H

#include <stddef.h>

#include "kiln.h"

/* One function to resolve: its exported name and where to store it. */
typedef struct kiln_dynlib_symbol {
    const char *name;
    void **slot;  /* receives the address; NULL when missing */
    int required; /* a missing required symbol fails the load */
} kiln_dynlib_symbol;

/* What a library is and where it may be. */
typedef struct kiln_dynlib_spec {
    const char *label;          /* "cuFFT", shown in messages */
    const char *const *sonames; /* tried in order, NULL-terminated: "libcufft.so.12", ... */
    const char *install_hint;   /* "install the CUDA toolkit's cuFFT (libcufft)" or
                                   "apt-get install libfftw3-3" */
    int search_cuda_dirs;       /* also try $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64 */
    const char *env_override;   /* optional: an environment variable naming a path to try first */
} kiln_dynlib_spec;

/* A loaded library. `why` is "" on success, else the reason (static storage
 * inside the struct, so the struct must outlive its readers: keep it static). */
typedef struct kiln_dynlib {
    void *handle;
    kiln_status status; /* KILN_OK or KILN_ERR_LIBRARY_MISSING */
    char path[512];     /* the name or path that loaded */
    char why[512];
} kiln_dynlib;

/* Only the search: the first of spec's names that loads (the override, the
 * loader path, then the CUDA folders), its name in lib->path; NULL if none.
 * For loaders with their own symbol tables (NVRTC). */
void *kiln_dynlib_open(kiln_dynlib *lib, const kiln_dynlib_spec *spec);

/* Opens the library and resolves `symbols` into their slots. On failure
 * lib->status is KILN_ERR_LIBRARY_MISSING and lib->why says what is missing and
 * what to install; the handle is closed again. Not thread-safe by itself:
 * call it inside pthread_once. */
void kiln_dynlib_load(kiln_dynlib *lib, const kiln_dynlib_spec *spec, const kiln_dynlib_symbol *symbols,
                      size_t symbol_count);

/* Sets the thread error from a failed load ("<label> is not available: <why>")
 * and returns lib->status; KILN_OK when loaded. */
kiln_status kiln_dynlib_check(const kiln_dynlib *lib);

#endif
