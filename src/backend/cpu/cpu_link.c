/* cpu_link.c: linking a module's object with the linker itself, not through
 * the compiler driver (issue 15, cold calls).
 *
 * `c++ -shared` runs collect2, which runs the linker with the LTO plugin,
 * and links libstdc++ and libgcc_s: reading libstdc++'s symbols is most of
 * a small module's link (gold: 23 ms of CPU through the driver, 11 ms run
 * directly without libstdc++, docs/PERF_NOTES.md). So the driver is asked
 * once, with -###, what it would run; the answer is kept in the cache folder
 * (cpu-link-<hash>, the hash over the compiler command, its binary's
 * identity and the link flags) and each module is then linked by the linker
 * alone: no LTO plugin, and first without the C++ runtime (-lstdc++ dropped,
 * libgcc static), under -z defs, so that a module needing the C++ runtime
 * (a function-local static with a guard, operator new) fails that link and
 * is linked again with the driver's full library list. Compilers that call
 * themselves clang, a driver whose -### shows no collect2 (remembered as
 * such), an unusable cache folder and KILN_CPU_LINK=driver keep the driver's
 * own link; a remembered line that does not parse or fails is asked again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu_cache_files.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_pch.h"
#include "core/error.h"
#include "core/hash.h"

#define IN_MARK "kiln-link-input.o"
#define OUT_MARK "kiln-link-output.so"
#define NONE_MARK "kiln: no direct link"

/* Splits a line of -### output into words: "..." quoted with \" and \\
 * escapes, or bare. Writes the words NUL-terminated into line itself. */
static int split_words(char *line, char **words, int max) {
    int n = 0;
    char *r = line, *w = line;
    while (*r) {
        while (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r') r++;
        if (!*r) break;
        if (n == max) return -1;
        words[n++] = w;
        if (*r == '"') {
            r++;
            while (*r && *r != '"') {
                if (*r == '\\' && r[1]) r++;
                *w++ = *r++;
            }
            if (*r == '"') r++;
        } else
            while (*r && *r != ' ' && *r != '\t' && *r != '\n' && *r != '\r') *w++ = *r++;
        char *end = w;
        if (*r) r++; /* the blank after the word, overwritten by its NUL */
        *end = '\0';
        w = end + 1;
    }
    return n;
}

/* Asks the driver (base: compiler and flags, link: words after the input)
 * for its link line and the linker's path; returns "path\nline\n" or NULL. */
static char *discover(char *const *base, int base_count, int compiler_words, char *const *link,
                      int link_count) {
    char **argv = calloc((size_t)base_count + (size_t)link_count + 8, sizeof *argv);
    if (!argv) return NULL;
    int k = 0;
    for (int i = 0; i < base_count; i++) argv[k++] = base[i];
    argv[k++] = "-shared";
    argv[k++] = "-o";
    argv[k++] = OUT_MARK;
    argv[k++] = IN_MARK;
    for (int i = 0; i < link_count; i++) argv[k++] = link[i];
    argv[k++] = "-###";
    argv[k] = NULL;
    char *out = NULL, *result = NULL;
    int code = -1;
    if (kiln_cpu_spawn(argv, &out, &code) != KILN_OK) kiln_clear_error();
    char *line = NULL;
    for (char *p = (out && code == 0) ? out : NULL; p && *p;) {
        char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        size_t first = strspn(p, " ");
        size_t word = strcspn(p + first, " \n");
        if (word >= 8 && strncmp(p + first + word - 8, "collect2", 8) == 0 &&
            memmem(p, n, IN_MARK, strlen(IN_MARK))) {
            line = strndup(p + first, n - first);
            break;
        }
        p = eol ? eol + 1 : NULL;
    }
    free(out);
    /* The linker collect2 would run: -fuse-ld=X picks ld.X; the driver knows
     * where it lives (its own folders first, then PATH). */
    const char *ld = "ld";
    if (line && strstr(line, "-fuse-ld=gold")) ld = "ld.gold";
    if (line && strstr(line, "-fuse-ld=lld")) ld = "ld.lld";
    char opt[64];
    snprintf(opt, sizeof opt, "-print-prog-name=%s", ld);
    k = 0;
    for (int i = 0; i < compiler_words; i++) argv[k++] = base[i];
    argv[k++] = opt;
    argv[k] = NULL;
    out = NULL;
    code = -1;
    if (line && kiln_cpu_spawn(argv, &out, &code) == KILN_OK && code == 0 && out) {
        out[strcspn(out, "\r\n")] = '\0';
        if (out[0]) {
            kiln_text t = {0};
            kiln_text_printf(&t, "%s\n%s\n", out, line);
            result = kiln_text_take(&t);
        }
    } else
        kiln_clear_error();
    free(out);
    free(line);
    free(argv);
    return result;
}

int kiln_cpu_link_prepare(char *const *base, int base_count, int compiler_words, char *const *link,
                          int link_count, const char *obj, const char *so, kiln_cpu_link *out) {
    memset(out, 0, sizeof *out);
    kiln_cache_dir info;
    if (!kiln_cpu_cache_aid_allowed("KILN_CPU_LINK", "driver", base, compiler_words, &info)) return 0;
    unsigned long long h = KILN_FNV1A_INIT;
    for (int i = 0; i < base_count; i++) h = kiln_fnv1a(h, base[i], strlen(base[i]) + 1);
    for (int i = 0; i < link_count; i++) h = kiln_fnv1a(h, link[i], strlen(link[i]) + 1);
    /* The driver's search paths come from these too. */
    static const char *const vars[] = {"LIBRARY_PATH", "COMPILER_PATH", "GCC_EXEC_PREFIX"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        h = kiln_fnv1a(h, v ? v : "", v ? strlen(v) + 1 : 0);
    }
    for (int i = 0; i < compiler_words; i++) { /* "ccache g++": both binaries */
        unsigned long long bin = kiln_cpu_binary_identity(base[i]);
        h = kiln_fnv1a(h, &bin, sizeof bin);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/cpu-link-%016llx", info.path, h);
    char *text = kiln_cpu_read_small(path);
    int fresh = text == NULL;
    if (!text) {
        text = discover(base, base_count, compiler_words, link, link_count);
        /* Published by rename: racing processes each write a whole one. A
         * driver whose answer has no collect2 line (a clang behind `c++`)
         * is remembered as NONE_MARK, so that it is not asked at every
         * compile: its modules link through the driver. */
        (void)kiln_cpu_publish(path, text ? text : NONE_MARK "\n");
        if (!text) return 0;
    }
    if (strncmp(text, NONE_MARK "\n", sizeof NONE_MARK) == 0) {
        free(text);
        return 0;
    }
    char *nl = strchr(text, '\n');
    if (!nl || nl == text) {
        free(text);
        unlink(path);
        return 0;
    }
    *nl = '\0';
    if (strchr(text, '/') && access(text, X_OK) != 0) { /* a linker since removed */
        free(text);
        unlink(path);
        return 0;
    }
    snprintf(out->path, sizeof out->path, "%s", path);
    char *words[KILN_CPU_LINK_MAX_WORDS];
    int n = split_words(nl + 1, words, KILN_CPU_LINK_MAX_WORDS);
    int found_in = 0, found_out = 0;
    int k = 0;
    out->argv[k++] = text; /* the linker's path */
    out->argv[k++] = "-z";
    out->argv[k++] = "defs";
    for (int i = 1; i < n && k < KILN_CPU_LINK_MAX_WORDS - 4; i++) {
        const char *w = words[i];
        if (strcmp(w, "-plugin") == 0) {
            i++;
            continue;
        }
        if (strncmp(w, "-plugin-opt=", 12) == 0 || strncmp(w, "-fuse-ld=", 9) == 0) continue;
        if (strcmp(w, IN_MARK) == 0) {
            out->argv[k++] = (char *)obj;
            found_in = 1;
        } else if (strcmp(w, OUT_MARK) == 0) {
            out->argv[k++] = (char *)so;
            found_out = 1;
        } else
            out->argv[k++] = words[i];
    }
    out->argv[k] = NULL;
    out->argc = k;
    out->text = text;
    if (n < 2 || !found_in || !found_out) {
        /* Damaged on disk: asked again next time. Just asked and still not
         * usable (more words than fit): remembered as no direct link. */
        FILE *f = fresh ? fopen(path, "wb") : NULL;
        if (f) {
            fputs(NONE_MARK "\n", f);
            fclose(f);
        } else
            unlink(path);
        kiln_cpu_link_free(out);
        return 0;
    }
    return 1;
}

int kiln_cpu_link_lean(kiln_cpu_link *l, char **argv) {
    int k = 0;
    for (int i = 0; i < l->argc; i++) {
        const char *w = l->argv[i];
        if (strcmp(w, "-lstdc++") == 0) continue;
        argv[k++] = strcmp(w, "-lgcc_s") == 0 ? "-lgcc" : l->argv[i];
    }
    argv[k] = NULL;
    return k;
}

int kiln_cpu_link_full(kiln_cpu_link *l, char **argv) {
    int k = 0;
    for (int i = 0; i < l->argc; i++) {
        if (i == 1 && strcmp(l->argv[1], "-z") == 0) { /* no -z defs: as the driver links */
            i++;
            continue;
        }
        argv[k++] = l->argv[i];
    }
    argv[k] = NULL;
    return k;
}

void kiln_cpu_link_forget(kiln_cpu_link *l) {
    if (l->path[0]) unlink(l->path);
}

void kiln_cpu_link_free(kiln_cpu_link *l) {
    free(l->text);
    memset(l, 0, sizeof *l);
}
