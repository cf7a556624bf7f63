/* cpu_cache_files.c: the small files the CPU backend keeps beside its
 * modules in the cache folder (the prelude's PCH, the remembered link
 * line): whether they may be used, the compiler identity that names them,
 * and writing and reading them safely under many processes. */
#include "backend/cpu/cpu_cache_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/settings.h"

/* The compiler binary's identity (an upgrade changes it), found on PATH as
 * posix_spawnp would. */
unsigned long long kiln_cpu_binary_identity(const char *name) {
    struct stat sb;
    char path[4096];
    if (strchr(name, '/')) {
        if (stat(name, &sb) != 0) return 0;
    } else {
        const char *p = getenv("PATH");
        int found = 0;
        for (const char *d = p ? p : "/usr/bin:/bin"; *d && !found;) {
            size_t n = strcspn(d, ":");
            snprintf(path, sizeof path, "%.*s/%s", (int)n, d, name);
            found = stat(path, &sb) == 0;
            d += n + (d[n] == ':');
        }
        if (!found) return 0;
    }
    unsigned long long id[4] = {(unsigned long long)sb.st_dev, (unsigned long long)sb.st_ino,
                                (unsigned long long)sb.st_size, (unsigned long long)sb.st_mtime};
    return kiln_fnv1a(KILN_FNV1A_INIT, id, sizeof id);
}

/* path's private temporary name: process and thread, since two threads of
 * one process may build the same file at once (a program's first-tier
 * modules' background -O3 builds all want the -O3 prelude). */
int kiln_cpu_private_name(char *out, size_t size, const char *path) {
    return (size_t)snprintf(out, size, "%s.%ld.%ld.tmp", path, (long)getpid(), (long)syscall(SYS_gettid)) <
           size;
}

int kiln_cpu_publish(const char *path, const char *text) {
    char tmp[4300];
    if (!kiln_cpu_private_name(tmp, sizeof tmp, path)) return -1;
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    size_t n = strlen(text), w = fwrite(text, 1, n, f);
    if (fclose(f) != 0 || w != n || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

char *kiln_cpu_read_small(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(65536);
    size_t n = buf ? fread(buf, 1, 65535, f) : 0;
    fclose(f);
    if (!buf || n == 0 || n == 65535) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

int kiln_cpu_cache_aid_allowed(const char *env_name, const char *off, char *const *argv, int argc,
                               kiln_cache_dir *info) {
    const char *env = kiln_setting_string(env_name);
    if (env && strcmp(env, off) == 0) return 0;
    for (int i = 0; i < argc; i++)
        if (strstr(argv[i], "clang")) return 0;
    kiln_cache_dir_resolve(info);
    return info->usable;
}
