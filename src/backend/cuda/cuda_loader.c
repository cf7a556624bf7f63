/* cuda_loader.c: finding and opening libcuda.so.1 and libnvrtc.
 *
 * Every driver entry point is resolved through cuGetProcAddress_v2 at the
 * version listed in cuda_driver_symbols.h rather than by dlsym, because the
 * driver exports several ABI versions of one function (cuMemAlloc,
 * cuMemAlloc_v2, ...) and only cuGetProcAddress picks the one whose arguments
 * match our declaration. A missing library, the toolkit's stub libcuda, or
 * no device all end as a status and a static reason, never a loader error. */
#include "backend/cuda/cuda_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dynlib.h"

typedef CUresult (*get_proc_address_fn)(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *status);

static kiln_cuda_driver driver;
static const kiln_cuda_driver *driver_ok;
static kiln_status driver_status = KILN_ERR_NO_DEVICE;
static const char *driver_why = "";
/* Written once, inside driver_once, for reasons that name a symbol or code. */
static char driver_why_buffer[256];
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static const char *why_stub = "libcuda.so.1 is the CUDA toolkit's stub library, not a driver";

/* Sets the reason from a driver result during loading. */
static void driver_fail_code(const char *what, CUresult r) {
    if (r == CUDA_ERROR_STUB_LIBRARY) {
        driver_why = why_stub;
        driver_status = KILN_ERR_NO_DEVICE;
    } else if (r == CUDA_ERROR_NO_DEVICE) {
        driver_why = "no CUDA device";
        driver_status = KILN_ERR_NO_DEVICE;
    } else if (r == CUDA_ERROR_INSUFFICIENT_DRIVER) {
        driver_why = "the NVIDIA driver is too old for this CUDA version";
        driver_status = KILN_ERR_NO_DEVICE;
    } else {
        snprintf(driver_why_buffer, sizeof driver_why_buffer, "%s failed with CUresult %d", what, r);
        driver_why = driver_why_buffer;
        driver_status = KILN_ERR_DRIVER;
    }
}

/* Resolves every symbol of the table; 0 and a reason on the first required
 * one that is missing. */
static int driver_resolve(get_proc_address_fn gpa) {
    CUresult r;
    CUdriverProcAddressQueryResult q;
    void *p;
#define KILN_CU_RESOLVE_(name, version, required)                                                            \
    q = 0;                                                                                                   \
    p = NULL;                                                                                                \
    r = gpa(#name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &q);                                            \
    memcpy(&driver.name, &p, sizeof driver.name);                                                            \
    if (r == CUDA_ERROR_STUB_LIBRARY) {                                                                      \
        driver_fail_code(#name, r);                                                                          \
        return 0;                                                                                            \
    }                                                                                                        \
    if (r != CUDA_SUCCESS || q != 0 || !driver.name) {                                                       \
        driver.name = NULL;                                                                                  \
        if (required) {                                                                                      \
            snprintf(driver_why_buffer, sizeof driver_why_buffer,                                            \
                     "libcuda.so.1 lacks %s (needs a driver for CUDA %d.%d or newer)", #name,                \
                     (version) / 1000, (version) % 1000 / 10);                                               \
            driver_why = driver_why_buffer;                                                                  \
            driver_status = KILN_ERR_NO_DEVICE;                                                              \
            return 0;                                                                                        \
        }                                                                                                    \
    }
#define KILN_CU_REQUIRED(name, version, args) KILN_CU_RESOLVE_(name, version, 1)
#define KILN_CU_OPTIONAL(name, version, args) KILN_CU_RESOLVE_(name, version, 0)
#include "backend/cuda/cuda_driver_symbols.h"
#undef KILN_CU_REQUIRED
#undef KILN_CU_OPTIONAL
#undef KILN_CU_RESOLVE_
    return 1;
}

static void driver_load_once(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        driver_why = "libcuda.so.1 not found (no NVIDIA driver)";
        return;
    }
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
    get_proc_address_fn gpa;
    void *sym = dlsym(lib, "cuGetProcAddress_v2");
    memcpy(&gpa, &sym, sizeof gpa);
    if (!gpa) {
        driver_why = "libcuda.so.1 lacks cuGetProcAddress_v2 (needs a driver for CUDA 12.0 or newer)";
        dlclose(lib);
        return;
    }
    if (!driver_resolve(gpa)) {
        dlclose(lib);
        return;
    }
    CUresult r = driver.cuInit(0);
    if (r == CUDA_SUCCESS) r = driver.cuDriverGetVersion(&driver.driver_version);
    if (r != CUDA_SUCCESS) {
        driver_fail_code("cuInit", r);
        /* Keep the library mapped: cuInit may have started driver threads. */
        return;
    }
    driver_status = KILN_OK;
    driver_ok = &driver;
}

const kiln_cuda_driver *kiln_cuda_driver_load(kiln_status *status, const char **why) {
    (void)pthread_once(&driver_once, driver_load_once);
    if (status) *status = driver_ok ? KILN_OK : driver_status;
    if (why) *why = driver_ok ? "" : driver_why;
    return driver_ok;
}

/* ------------------------------------------------------------------ NVRTC */
static kiln_nvrtc nvrtc;
static const kiln_nvrtc *nvrtc_ok;
static const char *nvrtc_why = "";
static char nvrtc_why_buffer[256];
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;

/* The toolkit is often not on the loader path (/usr/local/cuda/lib64 is not
 * in ld.so.conf on a bare toolkit install), so look where it usually is. */
static void *nvrtc_open(void) {
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
    const kiln_dynlib_spec spec = {
        .label = "NVRTC", .sonames = names, .install_hint = "", .search_cuda_dirs = 1};
    kiln_dynlib where;
    return kiln_dynlib_open(&where, &spec);
}

/* 1 when dir holds the toolkit's device headers (not the system's
 * /usr/include, which a Debian toolkit shares with glibc: NVRTC must not
 * see glibc's headers, and there the headers are on its path anyway). */
static int is_toolkit_include(const char *dir) {
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/cuda_fp16.h", dir);
    return strcmp(dir, "/usr/include") != 0 && access(probe, R_OK) == 0;
}

/* The headers of the toolkit NVRTC came from: the library's real folder
 * is <toolkit>/lib64, <toolkit>/lib or <toolkit>/targets/<arch>/lib, each
 * with include/ beside it; CCCL (cuda/std, cub, thrust) lives in
 * include/cccl from CUDA 13 on and in include/ itself before. */
static void find_toolkit_headers(kiln_nvrtc *nv) {
    Dl_info info;
    void *sym;
    memcpy(&sym, &nv->nvrtcVersion, sizeof sym);
    nv->include_count = 0;
    char lib[PATH_MAX], dir[PATH_MAX + 32];
    if (!dladdr(sym, &info) || !info.dli_fname || !realpath(info.dli_fname, lib)) return;
    char *slash = strrchr(lib, '/');
    if (!slash) return;
    *slash = '\0';
    snprintf(dir, sizeof dir, "%s/../include", lib);
    char resolved[PATH_MAX];
    if (!realpath(dir, resolved) || !is_toolkit_include(resolved)) return;
    snprintf(nv->include_dirs[nv->include_count++], sizeof nv->include_dirs[0], "%s", resolved);
    snprintf(dir, sizeof dir, "%s/cccl", resolved);
    if (access(dir, R_OK | X_OK) == 0)
        snprintf(nv->include_dirs[nv->include_count++], sizeof nv->include_dirs[0], "%s", dir);
}

static void nvrtc_load_once(void) {
    void *lib = nvrtc_open();
    if (!lib) {
        nvrtc_why = "libnvrtc.so.13/.12 not found (install the CUDA toolkit's NVRTC, or set CUDA_HOME)";
        return;
    }
    void *sym;
#define KILN_NVRTC_SYMBOL(ret, name, args)                                                                   \
    sym = dlsym(lib, #name);                                                                                 \
    if (!sym) {                                                                                              \
        snprintf(nvrtc_why_buffer, sizeof nvrtc_why_buffer, "libnvrtc lacks %s", #name);                     \
        nvrtc_why = nvrtc_why_buffer;                                                                        \
        dlclose(lib);                                                                                        \
        return;                                                                                              \
    }                                                                                                        \
    memcpy(&nvrtc.name, &sym, sizeof nvrtc.name);
#include "backend/cuda/nvrtc_symbols.h"
#undef KILN_NVRTC_SYMBOL
    if (nvrtc.nvrtcVersion(&nvrtc.major, &nvrtc.minor) != NVRTC_SUCCESS) {
        nvrtc_why = "nvrtcVersion failed";
        dlclose(lib);
        return;
    }
    find_toolkit_headers(&nvrtc);
    nvrtc_ok = &nvrtc;
}

const kiln_nvrtc *kiln_cuda_nvrtc_load(const char **why) {
    (void)pthread_once(&nvrtc_once, nvrtc_load_once);
    if (why) *why = nvrtc_ok ? "" : nvrtc_why;
    return nvrtc_ok;
}
