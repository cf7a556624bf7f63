/* cuda_lto.c: device functions compiled to LTO-IR through NVRTC, for a
 * library that links them into its own kernels (cuFFT's LTO callbacks,
 * which cuFFT hands to nvJitLink at plan time). Needs NVRTC only, no
 * device: the tests compile for sm_90 on machines without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "core/error.h"

static kiln_status lto_fail(const kiln_nvrtc *nv, nvrtcResult r, const char *what, const char *name) {
    return kiln_set_error(r == NVRTC_ERROR_COMPILATION ? KILN_ERR_COMPILE : KILN_ERR_INTERNAL,
                          "%s (%s, to LTO-IR): %s", what, name, nv->nvrtcGetErrorString(r));
}

/* The program's log, malloc'd; NULL when empty or unreadable. */
static char *program_log(const kiln_nvrtc *nv, nvrtcProgram prog) {
    size_t n = 0;
    if (nv->nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return NULL;
    char *log = malloc(n + 1);
    if (log && nv->nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    if (log) log[n] = '\0';
    return log;
}

/* "sm_90" or "compute_90" -> "-arch=compute_90": LTO-IR is virtual-arch
 * code, finished for the real device when the library links it. */
static int arch_option(const char *arch, char *out, size_t cap) {
    const char *digits = arch;
    if (strncmp(arch, "sm_", 3) == 0)
        digits = arch + 3;
    else if (strncmp(arch, "compute_", 8) == 0)
        digits = arch + 8;
    else
        return 0;
    if (!*digits || strlen(digits) > 4) return 0;
    return snprintf(out, cap, "-arch=compute_%s", digits) < (int)cap;
}

static kiln_status lto_compile(const char *source, const char *name, const char *arch, kiln_blob *out,
                               char **log) {
    if (log) *log = NULL;
    out->data = NULL;
    out->size = 0;
    char arch_opt[40];
    if (!source || !name || !arch || !arch_option(arch, arch_opt, sizeof arch_opt))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "LTO-IR compile of %s: arch \"%s\"; expected sm_XX or compute_XX",
                              name ? name : "(no name)", arch ? arch : "(null)");
    const char *why = NULL;
    const kiln_nvrtc *nv = kiln_cuda_nvrtc_load(&why);
    if (!nv) return kiln_set_error(KILN_ERR_COMPILER_MISSING, "cannot compile %s to LTO-IR: %s", name, why);
    /* -rdc keeps the device functions (nothing in this program calls
     * them); -default-device makes unannotated functions device code. */
    const char *opts[] = {arch_opt, "-dlto", "--relocatable-device-code=true", "-default-device",
                          "--std=c++17"};
    nvrtcProgram prog = NULL;
    nvrtcResult r = nv->nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) return lto_fail(nv, r, "nvrtcCreateProgram", name);
    r = nv->nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    char *text = program_log(nv, prog);
    kiln_status s = KILN_OK;
    if (r != NVRTC_SUCCESS) {
        s = kiln_set_error(r == NVRTC_ERROR_COMPILATION ? KILN_ERR_COMPILE : KILN_ERR_INTERNAL,
                           "compiling %s to LTO-IR for %s failed: %s%s%s", name, arch,
                           nv->nvrtcGetErrorString(r), text ? "\n" : "", text ? text : "");
    }
    size_t size = 0;
    if (s == KILN_OK && (r = nv->nvrtcGetLTOIRSize(prog, &size)) != NVRTC_SUCCESS)
        s = lto_fail(nv, r, "nvrtcGetLTOIRSize", name);
    if (s == KILN_OK && size == 0)
        s = kiln_set_error(KILN_ERR_INTERNAL, "NVRTC made no LTO-IR for %s (%s)", name, arch);
    if (s == KILN_OK && !(out->data = malloc(size)))
        s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory compiling %s", name);
    if (s == KILN_OK && (r = nv->nvrtcGetLTOIR(prog, (char *)out->data)) != NVRTC_SUCCESS)
        s = lto_fail(nv, r, "nvrtcGetLTOIR", name);
    if (s == KILN_OK) {
        out->size = size;
    } else {
        free(out->data);
        out->data = NULL;
    }
    nv->nvrtcDestroyProgram(&prog);
    if (log)
        *log = text;
    else
        free(text);
    return s;
}

const kiln_backend_lto kiln_cuda_lto = {.compile = lto_compile};
