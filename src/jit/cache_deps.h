/* cache_deps.h: hashing the contents of every file a compile can read
 * (cache_deps.c), for the disk cache's key. */
#ifndef KILN_JIT_CACHE_DEPS_H
#define KILN_JIT_CACHE_DEPS_H

#include "core/backend.h"
#include "jit/sha256.h"

/* Follows req's #include lines (recursively, through req's -I folders) and
 * feeds the path and contents of every file found, and the name of every
 * one not found, into md. */
void kiln_cache_digest_includes(kiln_sha256_ctx *md, const kiln_compile_request *req);

#endif
