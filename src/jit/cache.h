/* cache.h: the on-disk cache of compiled modules (both backends).
 *
 * Entries are keyed by SHA-256 over everything that changes the binary:
 * kiln's version, the compiler id (compiler, version, target arch or CPU), the
 * source, its name, the kernel list, the options, the path and contents of
 * every header the source includes at any depth (cache_deps.c), and the
 * names, sizes and modification times of the files in each include
 * directory. Each entry records its key, checked on load. */
#ifndef KILN_JIT_CACHE_H
#define KILN_JIT_CACHE_H

#include "core/backend.h"
#include "core/cache_dir.h"

#define KILN_CACHE_KEY_BYTES 32

void kiln_cache_key(const kiln_compile_request *req, const char *compiler_id,
                    unsigned char key[KILN_CACHE_KEY_BYTES]);
#define KILN_CACHE_REJECT_CORRUPT 1 /* bad magic, size or checksum */
#define KILN_CACHE_REJECT_KEY 2     /* a valid entry written for another key */
/* 1 on a hit (out filled; free out->data), 0 on a miss. An entry that is
 * corrupt or was written for another key is deleted and reported through
 * *rejected (KILN_CACHE_REJECT_*; then it is a miss). */
int kiln_cache_load(const kiln_cache_dir *dir, const unsigned char key[KILN_CACHE_KEY_BYTES], kiln_blob *out,
                    int *rejected);
/* Words for a *rejected value, for notes and the profile. */
const char *kiln_cache_reject_reason(int rejected);
/* Deletes key's entry (one that passed its checks but could not be loaded). */
void kiln_cache_evict(const kiln_cache_dir *dir, const unsigned char key[KILN_CACHE_KEY_BYTES]);
/* Writes atomically (temp file + rename). Failures only cost the next run a
 * compile, so they are not errors; returns 0 when the entry was not written. */
int kiln_cache_store(const kiln_cache_dir *dir, const unsigned char key[KILN_CACHE_KEY_BYTES],
                     const kiln_blob *blob);
/* Path of the entry file for key (for tests and `kiln cache list`). */
void kiln_cache_entry_path(const kiln_cache_dir *dir, const unsigned char key[KILN_CACHE_KEY_BYTES],
                           char *out, size_t cap);

#endif
