/* cmd_compile.c: `kiln compile FILE.cu`: compile without running, the way a
 * context would, and show what the compiler said. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "kiln.h"

static void usage(FILE *f) {
    fprintf(f, "usage: kiln compile FILE.cu [--target cpu|cuda] [--arch sm_XX] [-DNAME[=V]] [-IDIR]\n"
               "                    [-G] [-lineinfo] [--use_fast_math] [--fast-compile]\n"
               "  Compiles FILE.cu as kiln would (NVRTC for cuda, the host C++ compiler for\n"
               "  cpu) and prints the diagnostics with FILE:LINE, and on cuda the registers,\n"
               "  shared memory and spills of each kernel. Includes resolve from FILE's folder.\n"
               "  --target  default: cuda when a GPU is usable, else cpu\n"
               "  --arch    CUDA architecture, default sm_90\n"
               "  exit status: 0 compiled, 1 did not compile (or no compiler), 2 bad usage\n");
}

/* Appends " WORD" to the options string; 0 on success. */
static int append_option(char *opts, size_t size, const char *word) {
    size_t len = strlen(opts);
    if (strchr(word, ' ')) {
        fprintf(stderr,
                "kiln compile: option \"%s\" contains a space, which kiln's option "
                "syntax cannot carry\n",
                word);
        return -1;
    }
    if (len + 1 + strlen(word) + 1 > size) {
        fprintf(stderr, "kiln compile: too many options\n");
        return -1;
    }
    snprintf(opts + len, size - len, "%s%s", len ? " " : "", word);
    return 0;
}

static const char *default_target(void) {
    int count = 0;
    return kiln_cuda_device_count(&count, NULL) == KILN_OK && count > 0 ? "cuda" : "cpu";
}

int kiln_cmd_compile(int argc, char **argv) {
    /* The resource report is ptxas's, and NVRTC 13 serves a program it has
     * compiled before (in any process: its cache is CUDA_CACHE_PATH's)
     * without running ptxas, so without a report. This command is for the
     * report: it compiles every time, unless the user set the variable. */
    setenv("CUDA_CACHE_DISABLE", "1", 0);
    const char *file = NULL, *target = NULL, *arch = NULL;
    char opts[8192] = "";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char joined[4200];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--target") == 0) {
            if (!(target = cli_option_value("compile", argc, argv, &i))) return 2;
        } else if (strcmp(a, "--arch") == 0) {
            if (!(arch = cli_option_value("compile", argc, argv, &i))) return 2;
        } else if ((strcmp(a, "-D") == 0 || strcmp(a, "-I") == 0)) {
            const char *v = cli_option_value("compile", argc, argv, &i);
            if (!v) return 2;
            snprintf(joined, sizeof joined, "%s%s", a, v);
            if (append_option(opts, sizeof opts, joined) != 0) return 2;
        } else if (strncmp(a, "-D", 2) == 0 || strncmp(a, "-I", 2) == 0 || strcmp(a, "-G") == 0 ||
                   strcmp(a, "-lineinfo") == 0 || strcmp(a, "--use_fast_math") == 0 ||
                   strcmp(a, "--fast-compile") == 0) {
            if (append_option(opts, sizeof opts, a) != 0) return 2;
        } else if (a[0] == '-') {
            fprintf(stderr, "kiln compile: unknown option \"%s\"\n", a);
            usage(stderr);
            return 2;
        } else if (file) {
            fprintf(stderr, "kiln compile: one file at a time (got \"%s\" and \"%s\")\n", file, a);
            return 2;
        } else {
            file = a;
        }
    }
    if (!file) {
        fprintf(stderr, "kiln compile: no file given\n");
        usage(stderr);
        return 2;
    }
    if (!target) target = default_target();
    if (strcmp(target, "cpu") != 0 && strcmp(target, "cuda") != 0) {
        fprintf(stderr, "kiln compile: --target must be cpu or cuda, got \"%s\"\n", target);
        return 2;
    }
    char *source = cli_read_file("compile", file);
    if (!source) return 1;

    /* Includes resolve from the file's folder, as kiln_module_from_file does. */
    char dir[4200];
    const char *slash = strrchr(file, '/');
    snprintf(dir, sizeof dir, "-I%.*s", slash ? (int)(slash - file) : 1, slash ? file : ".");
    if (strchr(dir, ' '))
        fprintf(stderr,
                "kiln compile: note: the folder of %s contains a space, which kiln's "
                "option syntax cannot carry; its #include \"...\" files will not be found\n",
                file);
    else if (append_option(opts, sizeof opts, dir) != 0) {
        free(source);
        return 2;
    }

    char *log = NULL;
    kiln_status s = kiln_compile_only(target, arch, source, file, opts, &log);
    free(source);
    const char *where = strcmp(target, "cuda") == 0 ? (arch ? arch : "sm_90") : "the host";
    if (s == KILN_OK) {
        if (log && *log) fputs(log, stdout);
        if (log && *log && log[strlen(log) - 1] != '\n') putchar('\n');
        printf("%s: compiled for %s (%s)\n", file, target, where);
    } else if (s == KILN_ERR_COMPILE) {
        /* The message names file and target and carries the compiler's log
         * with FILE:LINE. */
        fprintf(stderr, "%s\n", kiln_last_error());
    } else {
        fprintf(stderr, "kiln compile: %s: %s\n", kiln_status_string(s), kiln_last_error());
    }
    kiln_free(log);
    return s == KILN_OK ? 0 : 1;
}
