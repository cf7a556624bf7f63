/* curand_lib.h: libcurand loaded at run time (dynlib.h), shared by the CUDA
 * provider and by the tests, which compare kiln with cuRAND's host
 * generator. */
#ifndef KILN_RANDOM_CURAND_LIB_H
#define KILN_RANDOM_CURAND_LIB_H

#include <stddef.h>

#include "kiln.h"
#include "random/curand_symbols.h"

/* cuRAND's enum values (curand.h). */
enum {
    KILN_CURAND_RNG_XORWOW = 101,
    KILN_CURAND_RNG_MRG32K3A = 121,
    KILN_CURAND_RNG_PHILOX4_32_10 = 161,
    KILN_CURAND_ORDERING_DEFAULT = 101,
    KILN_CURAND_ORDERING_LEGACY = 103
};

typedef struct kiln_curand_api {
#define KILN_CURAND_FIELD(name, ret, params) ret(*name) params;
    KILN_CURAND_SYMBOLS(KILN_CURAND_FIELD)
#undef KILN_CURAND_FIELD
} kiln_curand_api;

/* The loaded table, or NULL with the thread error set to
 * KILN_ERR_LIBRARY_MISSING naming what to install (*status gets it). */
const kiln_curand_api *kiln_curand_load(kiln_status *status);
/* cuRAND's type for a kiln generator type. */
int kiln_curand_rng_type(kiln_rng_type type);
/* "CURAND_STATUS_LENGTH_NOT_MULTIPLE" etc.; static storage. */
const char *kiln_curand_status_name(int status);

#endif
