/* cache_dir.c: where kiln keeps what it compiles (cache_dir.h): the folder
 * the environment names, created and vetted. */
#include "core/cache_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/settings.h"

static int make_dirs(const char *path) {
    char tmp[sizeof((kiln_cache_dir *)0)->path];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s", path) >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return (mkdir(tmp, 0700) == 0 || errno == EEXIST) ? 0 : -1;
}

void kiln_cache_dir_resolve(kiln_cache_dir *out) {
    memset(out, 0, sizeof *out);
    const char *env = kiln_setting_string("KILN_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    const char *from = env && *env ? "KILN_CACHE_DIR" : xdg && *xdg ? "XDG_CACHE_HOME" : "HOME";
    size_t n;
    if (env && *env)
        n = (size_t)snprintf(out->path, sizeof out->path, "%s", env);
    else if (xdg && *xdg)
        n = (size_t)snprintf(out->path, sizeof out->path, "%s/kiln", xdg);
    else if (home && *home)
        n = (size_t)snprintf(out->path, sizeof out->path, "%s/.cache/kiln", home);
    else {
        snprintf(out->reason, sizeof out->reason, "no KILN_CACHE_DIR, XDG_CACHE_HOME or HOME set");
        return;
    }
    /* A path cut to fit would be another folder: refuse it instead. */
    if (n + KILN_CACHE_NAME_ROOM > sizeof out->path) {
        snprintf(out->reason, sizeof out->reason,
                 "the cache folder from %s is %zu characters long; at most %zu are supported", from, n,
                 sizeof out->path - KILN_CACHE_NAME_ROOM);
        out->path[0] = '\0';
        return;
    }
    if (make_dirs(out->path) != 0) {
        snprintf(out->reason, sizeof out->reason, "cannot create %s: %s", out->path, strerror(errno));
        return;
    }
    struct stat st;
    if (stat(out->path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(out->reason, sizeof out->reason, "%s is not a directory", out->path);
        return;
    }
    if (st.st_uid != geteuid()) {
        snprintf(out->reason, sizeof out->reason,
                 "%s is owned by uid %u, not by this user (uid %u); refusing to load code from it", out->path,
                 (unsigned)st.st_uid, (unsigned)geteuid());
        return;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(out->reason, sizeof out->reason,
                 "%s is writable by %s (mode %04o); refusing to load code from it "
                 "(chmod 700 it or set KILN_CACHE_DIR)",
                 out->path, (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
        return;
    }
    out->usable = 1;
}
