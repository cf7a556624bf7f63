/* cache_dir.h: the folder of kiln's disk cache ($KILN_CACHE_DIR, else
 * $XDG_CACHE_HOME/kiln, else ~/.cache/kiln), which jit/cache.c fills with
 * compiled modules and the CPU backend with its compile aids (precompiled
 * prelude, link recipes, the compiler's version). In core, beside the
 * settings, so that a backend finds it without reaching above itself. */
#ifndef KILN_CORE_CACHE_DIR_H
#define KILN_CORE_CACHE_DIR_H

/* Room an entry's name takes after the folder: "/" + 64 hex digits + ".kc"
 * (or "/.tmp-XXXXXX") and the terminator. */
#define KILN_CACHE_NAME_ROOM (1 + 64 + 3 + 1)

typedef struct kiln_cache_dir {
    char path[1024];
    int usable;
    char reason[256];
} kiln_cache_dir;

/* Finds (creating it 0700 if needed) and vets the cache directory. Never
 * fails: an unusable directory comes back with usable = 0 and a reason. */
void kiln_cache_dir_resolve(kiln_cache_dir *out);

#endif
