/* curand_lib.c: loading libcurand once per process (curand_lib.h). */
#include "random/curand_lib.h"

#include <pthread.h>

#include "core/dynlib.h"
#include "core/error.h"

static kiln_curand_api curand_api;
static kiln_dynlib curand_lib;
static pthread_once_t curand_once = PTHREAD_ONCE_INIT;

static void curand_load_once(void) {
    static const char *const sonames[] = {"libcurand.so.10", "libcurand.so", NULL};
    static const kiln_dynlib_spec spec = {"cuRAND", sonames,
                                          "install the CUDA toolkit's cuRAND (libcurand, Debian package "
                                          "libcurand10) or set KILN_CURAND_LIBRARY",
                                          1, "KILN_CURAND_LIBRARY"};
    /* curandCreateGeneratorHost and curandGetVersion are all the tests need;
     * every symbol is in every libcurand.so.10, so all are required. */
    const kiln_dynlib_symbol symbols[] = {
#define KILN_CURAND_SYMBOL(name, ret, params) {#name, (void **)&curand_api.name, 1},
        KILN_CURAND_SYMBOLS(KILN_CURAND_SYMBOL)
#undef KILN_CURAND_SYMBOL
    };
    kiln_dynlib_load(&curand_lib, &spec, symbols, sizeof symbols / sizeof symbols[0]);
}

const kiln_curand_api *kiln_curand_load(kiln_status *status) {
    (void)pthread_once(&curand_once, curand_load_once);
    kiln_status st = kiln_dynlib_check(&curand_lib);
    if (status) *status = st;
    return st == KILN_OK ? &curand_api : NULL;
}

int kiln_curand_rng_type(kiln_rng_type type) {
    switch (type) {
    case KILN_RNG_XORWOW: return KILN_CURAND_RNG_XORWOW;
    case KILN_RNG_PHILOX4_32_10: return KILN_CURAND_RNG_PHILOX4_32_10;
    case KILN_RNG_MRG32K3A: return KILN_CURAND_RNG_MRG32K3A;
    }
    return 0;
}

const char *kiln_curand_status_name(int status) {
    switch (status) {
    case 0: return "CURAND_STATUS_SUCCESS";
    case 100: return "CURAND_STATUS_VERSION_MISMATCH";
    case 101: return "CURAND_STATUS_NOT_INITIALIZED";
    case 102: return "CURAND_STATUS_ALLOCATION_FAILED";
    case 103: return "CURAND_STATUS_TYPE_ERROR";
    case 104: return "CURAND_STATUS_OUT_OF_RANGE";
    case 105: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case 106: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case 201: return "CURAND_STATUS_LAUNCH_FAILURE";
    case 202: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case 203: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case 204: return "CURAND_STATUS_ARCH_MISMATCH";
    case 999: return "CURAND_STATUS_INTERNAL_ERROR";
    }
    return "CURAND_STATUS_UNKNOWN";
}

kiln_status kiln_rng_curand_host_uniform(kiln_rng_type type, uint64_t seed, uint64_t offset, float *out,
                                         size_t n) {
    kiln_status st;
    const kiln_curand_api *api = kiln_curand_load(&st);
    if (!api) return st;
    if (!out && n)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_rng_curand_host_uniform: out is NULL");
    int ctype = kiln_curand_rng_type(type);
    if (!ctype)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_rng_curand_host_uniform: unknown generator type %d", (int)type);
    void *g = NULL;
    int rc = api->curandCreateGeneratorHost(&g, ctype);
    if (!rc) rc = api->curandSetPseudoRandomGeneratorSeed(g, seed);
    if (!rc) rc = api->curandSetGeneratorOffset(g, offset);
    if (!rc) rc = api->curandGenerateUniform(g, out, n);
    if (g) api->curandDestroyGenerator(g);
    if (rc)
        return kiln_set_error(KILN_ERR_DRIVER, "cuRAND's host generator failed: %s (%d)",
                              kiln_curand_status_name(rc), rc);
    return KILN_OK;
}
