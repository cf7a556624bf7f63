/* commands.h: the subcommands of the `kiln` CLI and the helpers they share.
 * Every command gets argv with argv[0] = its own name ("info", ...) and
 * returns the process exit status: 0 success, 1 failure, 2 usage error. */
#ifndef KILN_COMMANDS_H
#define KILN_COMMANDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int kiln_cmd_info(int argc, char **argv);
int kiln_cmd_compile(int argc, char **argv);
int kiln_cmd_cache(int argc, char **argv);
int kiln_cmd_demo(int argc, char **argv);
int kiln_cmd_bench(int argc, char **argv);
int kiln_cmd_prof(int argc, char **argv); /* tools/cmd_prof.c */

/* ---- helpers (cli_util.c) */
/* Parses a whole decimal integer in [min, max]; 0 on success, else prints
 * "kiln CMD: OPTION wants ..." to stderr and returns -1. */
int cli_parse_int64(const char *cmd, const char *option, const char *text, int64_t min, int64_t max,
                    int64_t *out);
/* The value of an option that takes one ("--size N"): argv[*i + 1], moving *i
 * past it; NULL (with a message) when it is missing. */
const char *cli_option_value(const char *cmd, int argc, char **argv, int *i);
/* Reads a whole file into a malloc'd NUL-terminated buffer; NULL with a
 * message naming the path on failure. */
char *cli_read_file(const char *cmd, const char *path);
/* The folder of the running executable (from /proc/self/exe) in buf; 0 on
 * success. */
int cli_self_dir(char *buf, size_t size);
/* Runs argv (posix_spawnp, never fork: this process may hold a CUDA
 * context) with `env_extra` (NULL-terminated "NAME=VALUE" list, may be
 * NULL) added to the environment. When `output` is non-NULL, the child's
 * stdout is captured into *output (malloc'd) instead of shown. Returns the
 * exit status, 128+N for signal N, or 127 when it could not be started. */
int cli_spawn(char *const argv[], char *const env_extra[], char **output);
/* Formats a byte count as "1.5 GiB". */
const char *cli_bytes(double bytes, char *buf, size_t size);

#endif
