/* cmd_info.c: `kiln info`: what kiln would use on this machine and why. */
#define KILN_EXPERIMENTAL /* kiln_setting_count, kiln_setting_get, kiln_setting_value (include/kiln.h) */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "kiln.h"

static void usage(FILE *f) {
    fprintf(f, "usage: kiln info [--target auto|cpu|cuda[:N]]\n"
               "  Prints the version, the backends this machine has (and why CUDA is\n"
               "  missing when it is), the device a context opens on, the compilers,\n"
               "  the compile cache, and every environment variable kiln reads\n"
               "  (its value here, else its default; see docs/environment.md).\n");
}

static void print_device(const char *target) {
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, target);
    if (s != KILN_OK) {
        printf("  context \"%s\": cannot open: %s: %s\n", target, kiln_status_string(s), kiln_last_error());
        return;
    }
    kiln_device_info d;
    s = kiln_device_info_get(ctx, &d);
    if (s != KILN_OK) {
        printf("  context \"%s\" on %s: no device info: %s\n", target, kiln_context_backend_name(ctx),
               kiln_last_error());
        kiln_close(ctx);
        return;
    }
    char total[32], free_b[32];
    printf("  context \"%s\" opens: %s:%d  %s\n", target, kiln_context_backend_name(ctx), d.ordinal, d.name);
    if (kiln_context_backend(ctx) == KILN_BACKEND_CUDA) {
        printf("    compute capability %d.%d, %d SMs, warp %d, driver %d.%d\n", d.compute_major,
               d.compute_minor, d.multiprocessors, d.warp_size, d.driver_version / 1000,
               d.driver_version % 1000 / 10);
    } else {
        printf("    %d cores\n", d.multiprocessors);
    }
    printf("    memory %s total, %s free\n", cli_bytes((double)d.total_memory_bytes, total, 32),
           cli_bytes((double)d.free_memory_bytes, free_b, 32));
    printf("    max %d threads/block, block (%d,%d,%d), grid (%d,%d,%d), shared %zu B/block "
           "(%zu opt-in)\n",
           d.max_threads_per_block, d.max_block_dim[0], d.max_block_dim[1], d.max_block_dim[2],
           d.max_grid_dim[0], d.max_grid_dim[1], d.max_grid_dim[2], d.max_shared_bytes_per_block,
           d.max_shared_bytes_per_block_optin);
    kiln_close(ctx);
}

/* First line of `$KILN_CXX --version` (the compiler the CPU backend runs). */
static void print_host_compiler(void) {
    const char *env = kiln_setting_value("KILN_CXX");
    char words[1024];
    snprintf(words, sizeof words, "%s", env && *env ? env : "c++");
    char *argv[18];
    int argc = 0;
    char *save = NULL;
    for (char *w = strtok_r(words, " \t", &save); w && argc < 16; w = strtok_r(NULL, " \t", &save))
        argv[argc++] = w;
    if (argc == 0) {
        printf("  host C++ (CPU backend): KILN_CXX is blank\n");
        return;
    }
    argv[argc++] = "--version";
    argv[argc] = NULL;
    char *out = NULL;
    int rc = cli_spawn(argv, NULL, &out);
    if (rc == 0 && out) {
        out[strcspn(out, "\n")] = '\0';
        printf("  host C++ (CPU backend): %s  [%s]\n", out, argv[0]);
    } else {
        printf("  host C++ (CPU backend): %s did not run (exit %d); set KILN_CXX\n", argv[0], rc);
    }
    free(out);
}

/* NVRTC has no query in the public API; compiling a trivial kernel both
 * proves it loads and shows what a cold compile costs here. */
static void print_nvrtc(void) {
    char *log = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kiln_status s =
        kiln_compile_only("cuda", "sm_90", "__global__ void kiln_info_probe() {}\n", "probe.cu", NULL, &log);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (s == KILN_OK)
        printf("  NVRTC (CUDA backend): usable (probe compiled for sm_90 in %.0f ms)\n", ms);
    else
        printf("  NVRTC (CUDA backend): not usable: %s: %s\n", kiln_status_string(s), kiln_last_error());
    kiln_free(log);
}

static void print_cache(void) {
    kiln_cache_info c;
    kiln_status s = kiln_cache_info_get(&c);
    if (s != KILN_OK) {
        printf("  cache: %s: %s\n", kiln_status_string(s), kiln_last_error());
        return;
    }
    char size[32];
    printf("  path    %s\n", c.path);
    printf("  usable  %s%s%s\n", c.usable ? "yes" : "no", c.usable ? "" : ": ", c.usable ? "" : c.reason);
    printf("  entries %lld (%s)\n", (long long)c.entries, cli_bytes((double)c.bytes, size, 32));
}

/* Every KILN_* variable kiln reads: the value it has here, else its
 * default, and what it does. */
static void print_settings(void) {
    int count = kiln_setting_count();
    for (int i = 0; i < count; i++) {
        kiln_setting_info v;
        if (kiln_setting_get(i, &v) != KILN_OK) continue;
        if (v.value)
            printf("  %-24s = %s\n", v.name, v.value);
        else
            printf("  %-24s   (default: %s)\n", v.name, v.default_value);
        printf("  %-24s   %s: %s\n", "", v.type, v.doc);
    }
}

int kiln_cmd_info(int argc, char **argv) {
    const char *target = "auto";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--target") == 0) {
            if (!(target = cli_option_value("info", argc, argv, &i))) return 2;
        } else {
            fprintf(stderr, "kiln info: unknown argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    printf("kiln %s (library loaded), header %d.%d.%d\n", kiln_version_string(), KILN_VERSION_MAJOR,
           KILN_VERSION_MINOR, KILN_VERSION_PATCH);

    printf("\nbackends:\n  cpu: always available\n");
    int count = 0;
    const char *why = NULL;
    kiln_status s = kiln_cuda_device_count(&count, &why);
    if (s != KILN_OK)
        printf("  cuda: unknown: %s: %s\n", kiln_status_string(s), kiln_last_error());
    else if (count > 0)
        printf("  cuda: %d device%s\n", count, count == 1 ? "" : "s");
    else
        printf("  cuda: none (%s)\n", why ? why : "no reason given");

    printf("\ndevice:\n");
    const char *env_target = kiln_setting_value("KILN_TARGET");
    if (strcmp(target, "auto") == 0 && env_target && *env_target)
        printf("  (KILN_TARGET=%s overrides \"auto\")\n", env_target);
    print_device(target);

    printf("\ncompilers:\n");
    print_host_compiler();
    print_nvrtc();

    printf("\ncache:\n");
    print_cache();

    printf("\nsettings (environment):\n");
    print_settings();
    return 0;
}
