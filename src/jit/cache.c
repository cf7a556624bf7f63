/* cache.c: compiled modules on disk, safe under many processes.
 *
 * A cached CPU module is a shared object that kiln loads and runs, so the
 * directory must be owned by the user and writable by nobody else, and every
 * entry carries a SHA-256 of its payload that is checked before use. Writers
 * never modify a file in place: they write a private temp file and rename it,
 * so a reader sees a whole old entry or a whole new one. */
#include "jit/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "jit/cache_deps.h"
#include "jit/sha256.h" /* first: before any other OpenSSL header */

/* An entry: magic, payload size (u64), SHA-256 of the payload, the key it
 * was written for, then the payload. The key inside lets a load tell an
 * entry copied or renamed under another key from its own. */
#define CACHE_MAGIC "KILNC002"
#define CACHE_HEADER_BYTES (8 + 8 + 32 + KILN_CACHE_KEY_BYTES)
#define CACHE_SUFFIX ".kc"
/* "/" + 64 hex digits + ".kc", or "/.tmp-XXXXXX", after the folder. */
#define CACHE_NAME_ROOM (1 + 2 * KILN_CACHE_KEY_BYTES + 3 + 1)

static void sha256(const void *data, size_t n, unsigned char out[32]) {
    kiln_sha256_ctx c;
    kiln_sha256_init(&c);
    kiln_sha256_update(&c, data, n);
    kiln_sha256_final(&c, out);
}

/* The folder (core/cache_dir.c) keeps room for the longest entry name. */
_Static_assert(CACHE_NAME_ROOM == KILN_CACHE_NAME_ROOM, "core/cache_dir.h's room is an entry's name");

static void digest_update_str(kiln_sha256_ctx *md, const char *tag, const char *s) {
    /* Tag and length-prefix each field so that no two inputs hash alike. */
    size_t n = s ? strlen(s) : 0;
    kiln_sha256_update(md, tag, strlen(tag));
    kiln_sha256_update(md, &n, sizeof n);
    if (n) kiln_sha256_update(md, s, n);
}

/* Every file directly in each -I directory contributes its name, size and
 * mtime: the net under kiln_cache_digest_includes for headers named by a
 * macro, which it cannot follow. */
static void digest_include_dir(kiln_sha256_ctx *md, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[2048];
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        digest_update_str(md, "inc", e->d_name);
        kiln_sha256_update(md, &st.st_size, sizeof st.st_size);
        kiln_sha256_update(md, &st.st_mtim, sizeof st.st_mtim);
    }
    closedir(d);
}

void kiln_cache_key(const kiln_compile_request *req, const char *compiler_id,
                    unsigned char key[KILN_CACHE_KEY_BYTES]) {
    kiln_sha256_ctx ctx, *md = &ctx;
    kiln_sha256_init(md);
    digest_update_str(md, "kiln", kiln_version_string());
    digest_update_str(md, "compiler", compiler_id);
    digest_update_str(md, "arch", req->arch);
    digest_update_str(md, "name", req->name);
    digest_update_str(md, "source", req->source);
    for (int i = 0; i < req->kernel_count; i++) digest_update_str(md, "kernel", req->kernel_names[i]);
    for (int i = 0; i < req->define_count; i++) digest_update_str(md, "D", req->defines[i]);
    for (int i = 0; i < req->include_count; i++) {
        digest_update_str(md, "I", req->include_dirs[i]);
        digest_include_dir(md, req->include_dirs[i]);
    }
    kiln_cache_digest_includes(md, req);
    int flags[3] = {req->debug, req->lineinfo, req->fast_math};
    kiln_sha256_update(md, flags, sizeof flags);
    /* hashed only when set: the keys of every other module stay as they were */
    if (req->fast_compile) digest_update_str(md, "fast-compile", "1");
    /* hashed only when there are some, likewise: a module with globals
     * built before they were findable has no entries for them */
    for (int i = 0; i < req->global_count; i++) digest_update_str(md, "global", req->global_names[i]);
    kiln_sha256_final(md, key);
}

void kiln_cache_entry_path(const kiln_cache_dir *dir, const unsigned char key[KILN_CACHE_KEY_BYTES],
                           char *out, size_t cap) {
    char hex[2 * KILN_CACHE_KEY_BYTES + 1];
    for (int i = 0; i < KILN_CACHE_KEY_BYTES; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
    snprintf(out, cap, "%s/%s%s", dir->path, hex, CACHE_SUFFIX);
}

static int read_whole(int fd, unsigned char *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = read(fd, buf + done, n - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        done += (size_t)r;
    }
    return 0;
}

static int write_whole(int fd, const unsigned char *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return 0;
}

const char *kiln_cache_reject_reason(int rejected) {
    switch (rejected) {
    case KILN_CACHE_REJECT_CORRUPT: return "truncated, corrupt or foreign";
    case KILN_CACHE_REJECT_KEY: return "written for another key";
    default: return "";
    }
}

int kiln_cache_load(const kiln_cache_dir *dir, const unsigned char key[KILN_CACHE_KEY_BYTES], kiln_blob *out,
                    int *rejected) {
    *rejected = 0;
    if (!dir->usable) return 0;
    char path[sizeof dir->path + CACHE_NAME_ROOM];
    kiln_cache_entry_path(dir, key, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return 0;
    struct stat st;
    unsigned char *buf = NULL;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
             st.st_size >= CACHE_HEADER_BYTES && (buf = malloc((size_t)st.st_size)) != NULL &&
             read_whole(fd, buf, (size_t)st.st_size) == 0;
    close(fd);
    int why = KILN_CACHE_REJECT_CORRUPT;
    if (ok) {
        uint64_t payload;
        memcpy(&payload, buf + 8, sizeof payload);
        unsigned char digest[32];
        ok = memcmp(buf, CACHE_MAGIC, 8) == 0 && payload == (uint64_t)st.st_size - CACHE_HEADER_BYTES;
        if (ok) {
            sha256(buf + CACHE_HEADER_BYTES, payload, digest);
            ok = memcmp(digest, buf + 16, 32) == 0;
        }
        if (ok && memcmp(buf + 48, key, KILN_CACHE_KEY_BYTES) != 0) {
            ok = 0;
            why = KILN_CACHE_REJECT_KEY;
        }
        if (ok) {
            memmove(buf, buf + CACHE_HEADER_BYTES, payload);
            out->data = buf;
            out->size = payload;
            return 1;
        }
    }
    free(buf);
    /* Truncated, corrupted, foreign or another key's: remove it so the
     * rebuilt one replaces it. */
    unlink(path);
    *rejected = why;
    return 0;
}

void kiln_cache_evict(const kiln_cache_dir *dir, const unsigned char key[KILN_CACHE_KEY_BYTES]) {
    if (!dir->usable) return;
    char path[sizeof dir->path + CACHE_NAME_ROOM];
    kiln_cache_entry_path(dir, key, path, sizeof path);
    unlink(path);
}

int kiln_cache_store(const kiln_cache_dir *dir, const unsigned char key[KILN_CACHE_KEY_BYTES],
                     const kiln_blob *blob) {
    if (!dir->usable) return 0;
    char path[sizeof dir->path + CACHE_NAME_ROOM], tmp[sizeof dir->path + CACHE_NAME_ROOM];
    kiln_cache_entry_path(dir, key, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir->path);
    int fd = mkstemp(tmp);
    if (fd < 0) return 0;
    unsigned char header[CACHE_HEADER_BYTES];
    uint64_t payload = blob->size;
    memcpy(header, CACHE_MAGIC, 8);
    memcpy(header + 8, &payload, 8);
    sha256(blob->data, blob->size, header + 16);
    memcpy(header + 48, key, KILN_CACHE_KEY_BYTES);
    int ok = write_whole(fd, header, sizeof header) == 0 && write_whole(fd, blob->data, blob->size) == 0;
    ok = (close(fd) == 0) && ok;
    if (ok && rename(tmp, path) == 0) return 1;
    unlink(tmp);
    return 0;
}

kiln_status kiln_cache_info_get(kiln_cache_info *out) {
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_cache_info_get: out is NULL");
    memset(out, 0, sizeof *out);
    kiln_cache_dir dir;
    kiln_cache_dir_resolve(&dir);
    snprintf(out->path, sizeof out->path, "%s", dir.path);
    snprintf(out->reason, sizeof out->reason, "%s", dir.reason);
    out->usable = dir.usable;
    DIR *d = dir.usable ? opendir(dir.path) : NULL;
    if (!d) return KILN_OK;
    struct dirent *e;
    char path[2048];
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 3, CACHE_SUFFIX) != 0) continue;
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir.path, e->d_name);
        if (stat(path, &st) != 0) continue;
        out->entries++;
        out->bytes += st.st_size;
    }
    closedir(d);
    return KILN_OK;
}

kiln_status kiln_cache_clear(int64_t *removed) {
    kiln_cache_dir dir;
    kiln_cache_dir_resolve(&dir);
    int64_t count = 0;
    if (!dir.usable) return kiln_set_error(KILN_ERR_CACHE, "cache unusable: %s", dir.reason);
    DIR *d = opendir(dir.path);
    if (!d) return kiln_set_error(KILN_ERR_IO, "cannot open %s: %s", dir.path, strerror(errno));
    struct dirent *e;
    char path[2048];
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        int entry = n >= 3 && strcmp(e->d_name + n - 3, CACHE_SUFFIX) == 0;
        int temp = strncmp(e->d_name, ".tmp-", 5) == 0;
        /* What the CPU backend remembers about its compiler (version line,
         * link line): forgotten too, so a clear is also how to make it ask
         * again (a wrapper whose compiler changed behind it). */
        int fact = strncmp(e->d_name, "cpu-cxx-", 8) == 0 || strncmp(e->d_name, "cpu-link-", 9) == 0;
        if (!entry && !temp && !fact) continue;
        snprintf(path, sizeof path, "%s/%s", dir.path, e->d_name);
        if (unlink(path) == 0 && entry) count++;
    }
    closedir(d);
    if (removed) *removed = count;
    return KILN_OK;
}
