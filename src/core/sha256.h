/* sha256.h: SHA-256 (FIPS 180-4), kiln's own.
 *
 * The disk cache hashes every key and checks every entry with it. OpenSSL 3
 * did that too, but its first digest in a process fetches the algorithm
 * from the provider (building its method store: 1-10 ms measured), which
 * was most of a cache hit's time. This is the plain algorithm: ~45 MB/s
 * unvectorised is plenty for keys and cubins of a few kB. */
#ifndef KILN_CORE_SHA256_H
#define KILN_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define KILN_SHA256_BYTES 32

typedef struct kiln_sha256_ctx {
    uint32_t state[8];
    uint64_t length; /* bytes so far */
    unsigned char block[64];
    size_t used; /* bytes waiting in block */
} kiln_sha256_ctx;

void kiln_sha256_init(kiln_sha256_ctx *h);
void kiln_sha256_update(kiln_sha256_ctx *h, const void *data, size_t n);
void kiln_sha256_final(kiln_sha256_ctx *h, unsigned char out[KILN_SHA256_BYTES]);
/* init + update + final */
void kiln_sha256(const void *data, size_t n, unsigned char out[KILN_SHA256_BYTES]);

#endif
