/* options.c: one option language for both backends, so a program's options
 * mean the same on the CPU and the GPU. */
#include "kernel/options.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/settings.h"

static kiln_status add_word(const char **list, int *count, const char *word, const char *what) {
    if (*count == KILN_MAX_OPTIONS)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "too many %s options (limit %d)", what,
                              KILN_MAX_OPTIONS);
    list[(*count)++] = word;
    return KILN_OK;
}

kiln_status kiln_options_parse(const char *text, const char *extra_include, kiln_options *o) {
    memset(o, 0, sizeof *o);
    o->storage = strdup(text ? text : "");
    if (!o->storage) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_status s = KILN_OK;
    char *save = NULL;
    for (char *w = strtok_r(o->storage, " \t\n", &save); w && s == KILN_OK;
         w = strtok_r(NULL, " \t\n", &save)) {
        if (strncmp(w, "-D", 2) == 0) {
            const char *d = w[2] ? w + 2 : strtok_r(NULL, " \t\n", &save);
            if (!d)
                s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "option -D needs a macro name");
            else
                s = add_word(o->defines, &o->define_count, d, "-D");
        } else if (strncmp(w, "-I", 2) == 0) {
            const char *d = w[2] ? w + 2 : strtok_r(NULL, " \t\n", &save);
            if (!d)
                s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "option -I needs a directory");
            else
                s = add_word(o->include_dirs, &o->include_count, d, "-I");
        } else if (strcmp(w, "-G") == 0 || strcmp(w, "--device-debug") == 0) {
            o->debug = 1;
        } else if (strcmp(w, "-lineinfo") == 0 || strcmp(w, "--generate-line-info") == 0) {
            o->lineinfo = 1;
        } else if (strcmp(w, "--use_fast_math") == 0 || strcmp(w, "-use_fast_math") == 0) {
            o->fast_math = 1;
        } else if (strcmp(w, "--fast-compile") == 0) {
            o->fast_compile = 1;
        } else {
            s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                               "unknown compile option '%s': kiln accepts -DNAME[=VALUE], -IDIR, "
                               "-G, -lineinfo, --use_fast_math and --fast-compile on both backends",
                               w);
        }
    }
    if (s == KILN_OK && extra_include) s = add_word(o->include_dirs, &o->include_count, extra_include, "-I");
    if (s != KILN_OK) kiln_options_free(o);
    return s;
}

const char *kiln_quick_build_options(void) {
    return kiln_setting_flag("KILN_FAST_COMPILE", 1) ? "--fast-compile" : NULL;
}

void kiln_options_free(kiln_options *o) {
    free(o->storage);
    memset(o, 0, sizeof *o);
}

void kiln_options_apply(const kiln_options *o, kiln_compile_request *req) {
    req->defines = o->defines;
    req->define_count = o->define_count;
    req->include_dirs = o->include_dirs;
    req->include_count = o->include_count;
    req->debug = o->debug;
    req->lineinfo = o->lineinfo;
    req->fast_math = o->fast_math;
    req->fast_compile = o->fast_compile;
}
