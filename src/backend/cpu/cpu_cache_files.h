/* cpu_cache_files.h: the CPU backend's small files in the cache folder
 * (cpu_cache_files.c). */
#ifndef KILN_BACKEND_CPU_CACHE_FILES_H
#define KILN_BACKEND_CPU_CACHE_FILES_H

#include <stddef.h>

#include "core/cache_dir.h"

/* Device, inode, size and mtime of the executable name (PATH searched as
 * posix_spawnp does) hashed: an upgrade of the compiler changes it. 0 when
 * not found. */
unsigned long long kiln_cpu_binary_identity(const char *name);
/* Whether a compile aid kept in the cache folder (the prelude's PCH, the
 * remembered link line) may be used: not turned off by env_name=off, no
 * clang among the compiler's words (argv[0..argc)), a usable cache folder
 * (described in *info). */
int kiln_cpu_cache_aid_allowed(const char *env_name, const char *off, char *const *argv, int argc,
                               kiln_cache_dir *info);

/* path's private temporary name (process and thread) into out; 0 when
 * it does not fit. */
int kiln_cpu_private_name(char *out, size_t size, const char *path);
/* Writes text to path under a private name and renames it in place, so a
 * reader (another process) sees all of it or nothing; -1 (nothing left
 * behind) on failure. */
int kiln_cpu_publish(const char *path, const char *text);
/* A small file's text (under 64 KiB, not empty), NUL-terminated and
 * malloc'd; NULL otherwise. */
char *kiln_cpu_read_small(const char *path);

#endif
