/* absent.c: kernels whose definitions the preprocessor leaves out.
 *
 * kiln names a module's kernels from its text (expand.h), without
 * evaluating #if: the compilers know which macros are defined (their own,
 * the system headers', -D), kiln does not. A kernel in a section that is off
 * is then listed, and kiln's reference to it (its signature record, its
 * entry point, NVRTC's name expression) is the compile's only error. The
 * compiler has then said which kernels the module really has: kiln drops
 * the others and compiles again (module.c remembers them in the disk cache,
 * so the next process compiles once). */
#include "kernel/absent.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Where kiln's own text is compiled: the #line names it writes after the
 * user's source and the headers it includes before (by prefix: the CPU
 * prelude is several files, kiln_cpu_prelude*.cuh). */
static const char *const kiln_sections[] = {
    "kiln-kernel-signatures", "kiln-cpu-entry-points", "kiln-cpu-fission",     "__nv_name_map",
    "kiln_signature.cuh",     "kiln_cpu_prelude",      "kiln_cuda_prelude.cuh"};

static int in_kiln_section(const char *line) {
    for (size_t i = 0; i < sizeof kiln_sections / sizeof *kiln_sections; i++)
        if (strncmp(line, kiln_sections[i], strlen(kiln_sections[i])) == 0) return 1;
    return 0;
}

/* A compiler's error line: "file:line:col: error: ...", "file(line): error: ...". */
static int is_error_line(const char *line, size_t n) {
    for (size_t i = 0; i + 7 <= n; i++)
        if (strncmp(line + i, ": error", 7) == 0 || strncmp(line + i, ": fatal error", 13) == 0) return 1;
    return 0;
}

/* The name a compiler's message uses for kernel `name`: its last
 * component, without template arguments ("k" for "ns::k<float>"). */
static void base_name(const char *name, const char **b, size_t *n) {
    const char *lt = strchr(name, '<');
    const char *end = lt ? lt : name + strlen(name), *start = name;
    for (const char *c = name; c + 1 < end; c++)
        if (c[0] == ':' && c[1] == ':') start = c + 2;
    *b = start;
    *n = (size_t)(end - start);
}

/* The message says a name is not declared (GCC, clang, NVRTC's words); an
 * error about a kernel that does exist (a parameter type kiln cannot
 * pass) is the user's to see, not a reason to drop it. */
static int says_undeclared(const char *line, size_t len) {
    static const char *const words[] = {"not declared",   "not been declared", "undeclared",
                                        "is undefined",   "has no member",     "is not a member",
                                        "no member named"};
    for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
        size_t n = strlen(words[w]);
        for (size_t i = 0; i + n <= len; i++)
            if (strncmp(line + i, words[w], n) == 0) return 1;
    }
    return 0;
}

static int names_word(const char *line, size_t len, const char *w, size_t n) {
    for (size_t i = 0; n && i + n <= len; i++)
        if (strncmp(line + i, w, n) == 0 &&
            (i == 0 || !(isalnum((unsigned char)line[i - 1]) || line[i - 1] == '_')) &&
            (i + n == len || !(isalnum((unsigned char)line[i + n]) || line[i + n] == '_')))
            return 1;
    return 0;
}

int kiln_kernels_absent(const char *log, const kiln_kernel_list *list, unsigned char *absent) {
    memset(absent, 0, (size_t)list->count);
    if (!log) return 0;
    int found = 0, errors = 0;
    for (const char *p = log; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (is_error_line(p, len)) {
            errors++;
            if (!in_kiln_section(p)) return 0; /* the user's code has an error */
            /* GCC and clang suggest a name that does exist */
            for (size_t i = 0; i + 12 <= len; i++)
                if (strncmp(p + i, "did you mean", 12) == 0) {
                    len = i;
                    break;
                }
            for (int k = 0; k < list->count && says_undeclared(p, len); k++) {
                const char *b;
                size_t n;
                base_name(list->names[k], &b, &n);
                if (!absent[k] && names_word(p, len, b, n)) {
                    absent[k] = 1;
                    found++;
                }
            }
        }
        p = end ? end + 1 : p + strlen(p);
    }
    return errors ? found : 0;
}

void kiln_kernel_list_drop(kiln_kernel_list *list, const unsigned char *absent) {
    int kept = 0;
    for (int k = 0; k < list->count; k++) {
        if (absent[k]) {
            free(list->names[k]);
            free(list->symbols[k]);
            continue;
        }
        list->names[kept] = list->names[k];
        list->symbols[kept] = list->symbols[k];
        kept++;
    }
    list->count = kept;
}
