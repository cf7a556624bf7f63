/* kiln_main.c: the `kiln` command line: dispatches to one cmd_*.c per command. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kiln.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"info", kiln_cmd_info, "version, backends, devices, compilers, the cache and the settings"},
    {"compile", kiln_cmd_compile, "compile a .cu file for cpu or cuda and print diagnostics"},
    {"cache", kiln_cmd_cache, "list, clear or locate the compile cache"},
    {"demo", kiln_cmd_demo, "run the example workloads, verified against host references"},
    {"bench", kiln_cmd_bench, "time the example workloads beside hand-written kernels"},
    {"prof", kiln_cmd_prof, "run a program with the kiln profiler on"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: kiln COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n  kiln COMMAND --help   shows a command's options\n"
               "  kiln --version        prints the version\n"
               "\nenvironment: KILN_TARGET (auto|cpu|cuda[:N]), KILN_CACHE_DIR, KILN_CXX,\n"
               "  KILN_PROFILE=1, KILN_TRACE=FILE, KILN_QUIET=1\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "-V") == 0 || strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("kiln %s\n", kiln_version_string());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "kiln: unknown command \"%s\"\n\n", name);
    usage(stderr);
    return 2;
}
