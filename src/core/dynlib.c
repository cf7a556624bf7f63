/* dynlib.c: dlopen of optional vendor libraries (see dynlib.h). */
#include "core/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/settings.h"

static void *try_open(kiln_dynlib *lib, const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) snprintf(lib->path, sizeof lib->path, "%s", path);
    return h;
}

/* The CUDA toolkit is often not on the loader path (/usr/local/cuda/lib64 is
 * not in ld.so.conf on a bare toolkit install), so look where it usually is. */
static void *open_in_cuda_dirs(kiln_dynlib *lib, const kiln_dynlib_spec *spec) {
    const char *dirs[3] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t d = 0; d < 3; d++) {
        if (!dirs[d] || !dirs[d][0]) continue;
        for (const char *const *n = spec->sonames; *n; n++) {
            char path[4096];
            int len = snprintf(path, sizeof path, "%s/lib64/%s", dirs[d], *n);
            if (len <= 0 || (size_t)len >= sizeof path) continue;
            void *h = try_open(lib, path);
            if (h) return h;
        }
    }
    return NULL;
}

void *kiln_dynlib_open(kiln_dynlib *lib, const kiln_dynlib_spec *spec) {
    const char *forced = spec->env_override ? kiln_setting_string(spec->env_override) : NULL;
    if (forced && forced[0]) return try_open(lib, forced);
    for (const char *const *n = spec->sonames; *n; n++) {
        void *h = try_open(lib, *n);
        if (h) return h;
    }
    return spec->search_cuda_dirs ? open_in_cuda_dirs(lib, spec) : NULL;
}

void kiln_dynlib_load(kiln_dynlib *lib, const kiln_dynlib_spec *spec, const kiln_dynlib_symbol *symbols,
                      size_t symbol_count) {
    memset(lib, 0, sizeof *lib);
    lib->status = KILN_ERR_LIBRARY_MISSING;
    void *h = kiln_dynlib_open(lib, spec);
    if (!h) {
        const char *forced = spec->env_override ? kiln_setting_string(spec->env_override) : NULL;
        if (forced && forced[0])
            snprintf(lib->why, sizeof lib->why, "%s: %s=%s could not be loaded (%s)", spec->label,
                     spec->env_override, forced, dlerror());
        else
            snprintf(lib->why, sizeof lib->why, "%s: %s not found; %s", spec->label, spec->sonames[0],
                     spec->install_hint);
        return;
    }
    for (size_t i = 0; i < symbol_count; i++) {
        void *p = dlsym(h, symbols[i].name);
        *symbols[i].slot = p;
        if (!p && symbols[i].required) {
            snprintf(lib->why, sizeof lib->why, "%s: %s lacks %s (too old?); %s", spec->label, lib->path,
                     symbols[i].name, spec->install_hint);
            for (size_t j = 0; j < symbol_count; j++) *symbols[j].slot = NULL;
            dlclose(h);
            return;
        }
    }
    lib->handle = h;
    lib->status = KILN_OK;
}

kiln_status kiln_dynlib_check(const kiln_dynlib *lib) {
    if (lib->status == KILN_OK) return KILN_OK;
    return kiln_set_error(lib->status, "%s", lib->why);
}
