/* sha256.h: SHA-256 for the disk cache's keys and checksums.
 *
 * Through libcrypto's direct SHA256_Init/Update/Final (deprecated in
 * OpenSSL 3, still built by every distribution), not EVP: EVP's first use
 * in a process loads OpenSSL's configuration file, error strings and
 * provider tables, 5.2M instructions (~1.5 ms), which was most of a cache
 * hit's time in a fresh process (issue 15; docs/PERF_NOTES.md, cold calls).
 * The direct functions need only the CPU feature probe that libcrypto runs
 * when it is loaded, and keep its SHA-NI/AVX2 code for large payloads.
 * Include this before any other OpenSSL header. */
#ifndef KILN_JIT_SHA256_H
#define KILN_JIT_SHA256_H

#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED 1
#endif
#include <openssl/sha.h>

typedef SHA256_CTX kiln_sha256_ctx;
#define kiln_sha256_init(c) SHA256_Init(c)
#define kiln_sha256_update(c, p, n) SHA256_Update((c), (p), (n))
#define kiln_sha256_final(c, out) SHA256_Final((out), (c))

#endif
