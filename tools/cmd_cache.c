/* cmd_cache.c: `kiln cache list|clear|path`: the on-disk compile cache. */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "kiln.h"

static void usage(FILE *f) {
    fprintf(f, "usage: kiln cache list|clear|path\n"
               "  list   every cached module (file, size, last written) and the total\n"
               "  clear  delete every cached module\n"
               "  path   print the cache folder ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln,\n"
               "         else ~/.cache/kiln)\n");
}

/* Entries are named by the hash of what was compiled (source, options,
 * arch, compiler and kiln versions), so the name says nothing readable;
 * size and time are what a user can act on. */
static int list_entries(const kiln_cache_info *info) {
    DIR *d = opendir(info->path);
    if (!d) {
        fprintf(stderr, "kiln cache: cannot open %s: %s\n", info->path, strerror(errno));
        return 1;
    }
    printf("%s\n", info->path);
    struct dirent *e;
    char path[2200], size[32], when[32];
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 3, ".kc") != 0) continue;
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", info->path, e->d_name);
        if (stat(path, &st) != 0) continue;
        struct tm tm;
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&st.st_mtime, &tm));
        printf("  %s  %10s  %s\n", e->d_name, cli_bytes((double)st.st_size, size, 32), when);
    }
    closedir(d);
    printf("%lld entries, %s\n", (long long)info->entries, cli_bytes((double)info->bytes, size, 32));
    return 0;
}

int kiln_cmd_cache(int argc, char **argv) {
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "kiln cache: %s\n", argc < 2 ? "which action?" : "one action at a time");
        usage(stderr);
        return 2;
    }
    const char *action = argv[1];
    if (strcmp(action, "list") != 0 && strcmp(action, "clear") != 0 && strcmp(action, "path") != 0) {
        fprintf(stderr, "kiln cache: unknown action \"%s\"\n", action);
        usage(stderr);
        return 2;
    }
    kiln_cache_info info;
    kiln_status s = kiln_cache_info_get(&info);
    if (s != KILN_OK) {
        fprintf(stderr, "kiln cache: %s: %s\n", kiln_status_string(s), kiln_last_error());
        return 1;
    }
    if (strcmp(action, "path") == 0) {
        printf("%s\n", info.path);
        if (!info.usable) fprintf(stderr, "kiln cache: not usable: %s\n", info.reason);
        return info.usable ? 0 : 1;
    }
    if (!info.usable) {
        fprintf(stderr, "kiln cache: %s is not usable: %s\n", info.path, info.reason);
        return 1;
    }
    if (strcmp(action, "list") == 0) return list_entries(&info);
    int64_t removed = 0;
    s = kiln_cache_clear(&removed);
    if (s != KILN_OK) {
        fprintf(stderr, "kiln cache: %s: %s\n", kiln_status_string(s), kiln_last_error());
        return 1;
    }
    printf("removed %lld cached module%s from %s\n", (long long)removed, removed == 1 ? "" : "s", info.path);
    return 0;
}
