/* cpu_pch.c: the CPU prelude as a precompiled header.
 *
 * Every CPU module starts with the same ~600 lines of prelude, whose
 * standard headers cost about half of a small module's compile. With GCC
 * the prelude is compiled once into a .gch in the disk cache, in a folder
 * named by a hash of everything that shapes it (compiler command, the
 * compiler binary's identity, flags, prelude text, ABI version): a change of
 * any of them gets a new folder, as modules get new keys. The module then
 * `#include`s the header; GCC takes the .gch beside it when it was built
 * with compatible options and otherwise reads the header's text, so a .gch
 * that does not fit costs time, never correctness. KILN_CPU_PCH=0 turns it
 * off; compilers that call themselves clang are left alone. */
#include "backend/cpu/cpu_pch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/common/prelude_needs.h"
#include "backend/cpu/cpu_cache_files.h"
#include "backend/cpu/cpu_internal.h"
#include "core/cache_dir.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/settings.h"

extern const char kiln_embedded_kiln_cpu_math[];
extern const char kiln_embedded_kiln_cpu_prelude[];
extern const char kiln_embedded_kiln_cpu_prelude_sync[];
extern const char kiln_embedded_kiln_cpu_prelude_atomics[];
extern const char kiln_embedded_kiln_cpu_prelude_math[];
extern const char kiln_embedded_kiln_cpu_prelude_vector[];
extern const char kiln_embedded_kiln_cpu_prelude_runners[];
extern const char kiln_embedded_kiln_complex[];
extern const char kiln_embedded_kiln_signature[];

/* The prelude's files in the order a module reads them, each under its own
 * #line name so that a compiler's message names the file and line. */
static const struct {
    const char *name;
    const char *text;
} prelude_parts[] = {
    {"kiln_cpu_prelude.cuh", kiln_embedded_kiln_cpu_prelude},
    {"kiln_cpu_prelude_sync.cuh", kiln_embedded_kiln_cpu_prelude_sync},
    {"kiln_cpu_prelude_atomics.cuh", kiln_embedded_kiln_cpu_prelude_atomics},
    {"kiln_cpu_prelude_math.cuh", kiln_embedded_kiln_cpu_prelude_math},
    {"kiln_cpu_prelude_vector.cuh", kiln_embedded_kiln_cpu_prelude_vector},
    {"kiln_cpu_prelude_runners.cuh", kiln_embedded_kiln_cpu_prelude_runners},
};

unsigned long long kiln_cpu_prelude_hash(void) {
    unsigned long long h = KILN_FNV1A_INIT;
    for (size_t i = 0; i < sizeof prelude_parts / sizeof *prelude_parts; i++)
        h = kiln_fnv1a(h, prelude_parts[i].text, strlen(prelude_parts[i].text));
    return h;
}

void kiln_cpu_prelude_text(kiln_text *t, kiln_cpu_prelude_kind kind) {
    if (kind != KILN_CPU_PRELUDE_FULL) kiln_text_puts(t, "#define KILN_CPU_LIGHT_MATH 1\n");
    for (size_t i = 0; i < sizeof prelude_parts / sizeof *prelude_parts; i++) {
        kiln_text_line_directive(t, prelude_parts[i].name);
        kiln_text_puts(t, prelude_parts[i].text);
    }
    kiln_text_line_directive(t, "kiln_cpu_math.cuh");
    kiln_text_puts(t, kiln_embedded_kiln_cpu_math);
    if (kind != KILN_CPU_PRELUDE_REAL) {
        kiln_text_line_directive(t, "kiln_complex.cuh");
        kiln_text_puts(t, kiln_embedded_kiln_complex);
    }
    kiln_text_line_directive(t, "kiln_signature.cuh");
    kiln_text_puts(t, kiln_embedded_kiln_signature);
}

kiln_cpu_prelude_kind kiln_cpu_prelude_for(const kiln_compile_request *req) {
    if (!kiln_setting_flag("KILN_CPU_LIGHT_PRELUDE", 1) || !req->source || strstr(req->source, "#include") ||
        strstr(req->source, "std::"))
        return KILN_CPU_PRELUDE_FULL;
    return kiln_prelude_needs_complex(req) ? KILN_CPU_PRELUDE_LIGHT : KILN_CPU_PRELUDE_REAL;
}

int kiln_cpu_pch_prepare(char *const *base_argv, int base_argc, kiln_cpu_prelude_kind kind, char *dir,
                         size_t dir_size) {
    kiln_cache_dir info;
    if (!kiln_cpu_cache_aid_allowed("KILN_CPU_PCH", "0", base_argv, base_argc, &info)) return 0;
    kiln_text t = {0};
    kiln_cpu_prelude_text(&t, kind);
    char *text = kiln_text_take(&t);
    if (!text) return 0;
    unsigned long long h = kiln_fnv1a_str(text);
    for (int i = 0; i < base_argc; i++) h = kiln_fnv1a(h, base_argv[i], strlen(base_argv[i]) + 1);
    unsigned long long bin = kiln_cpu_binary_identity(base_argv[0]);
    int abi = KILN_CPU_ABI_VERSION;
    h = kiln_fnv1a(kiln_fnv1a(h, &bin, sizeof bin), &abi, sizeof abi);
    snprintf(dir, dir_size, "%s/cpu-pch-%016llx", info.path, h);
    char hdr[4200], gch[4200], tmp[4300], failed[4200];
    snprintf(hdr, sizeof hdr, "%s/" KILN_CPU_PCH_HEADER, dir);
    snprintf(gch, sizeof gch, "%s.gch", hdr);
    snprintf(failed, sizeof failed, "%s/failed", dir);
    int ok = 0;
    if (access(gch, R_OK) == 0 && access(hdr, R_OK) == 0) {
        ok = 1;
    } else if (access(failed, F_OK) != 0 && (mkdir(info.path, 0700) == 0 || errno == EEXIST) &&
               (mkdir(dir, 0700) == 0 || errno == EEXIST)) {
        /* The header by rename (readers never see half of it), then the
         * .gch built beside it under a private name and renamed in place:
         * processes racing to build it each publish a whole one. */
        if (kiln_cpu_publish(hdr, text) == 0) {
            char **argv = calloc((size_t)base_argc + 8, sizeof *argv);
            if (argv && kiln_cpu_private_name(tmp, sizeof tmp, gch)) {
                int k = 0;
                for (int i = 0; i < base_argc; i++) argv[k++] = base_argv[i];
                argv[k++] = "-x";
                argv[k++] = "c++-header";
                argv[k++] = hdr;
                argv[k++] = "-o";
                argv[k++] = tmp;
                char *out = NULL;
                int code = -1;
                kiln_status run = kiln_cpu_spawn(argv, &out, &code);
                /* -fstack-usage's report of the header compile, named after
                 * the output: nothing reads it. */
                char su[4400];
                snprintf(su, sizeof su, "%s-%.*s.su", tmp, (int)(sizeof KILN_CPU_PCH_HEADER - 3),
                         KILN_CPU_PCH_HEADER);
                unlink(su);
                if (run == KILN_OK && code == 0 && rename(tmp, gch) == 0)
                    ok = 1;
                else {
                    kiln_clear_error();
                    unlink(tmp);
                    (void)kiln_cpu_publish(failed, out ? out : "");
                }
                free(out);
            }
            free(argv);
        }
    }
    free(text);
    return ok;
}

int kiln_cpu_pch_check(const char *dir, const char *compiler_output) {
    if (!compiler_output || !strstr(compiler_output, "Winvalid-pch")) return 0;
    char gch[4300], marker[4200], failed[4200];
    snprintf(gch, sizeof gch, "%s/" KILN_CPU_PCH_HEADER ".gch", dir);
    snprintf(marker, sizeof marker, "%s/rejected", dir);
    snprintf(failed, sizeof failed, "%s/failed", dir);
    (void)kiln_cpu_publish(access(marker, F_OK) == 0 ? failed : marker, compiler_output);
    unlink(gch);
    return 1;
}
