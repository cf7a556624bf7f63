/* cuda_blob.c: writing and checking the module format of cuda_blob.h. Reads
 * are bounds-checked field by field: the bytes may come from disk. */
#include "backend/cuda/cuda_blob.h"

#include <stdlib.h>
#include <string.h>

#include "core/byte_order.h"
#include "core/error.h"

static const char blob_magic[8] = {'K', 'I', 'L', 'N', 'C', 'U', 'B', 'N'};
#define BLOB_HEADER_BYTES 32u

static size_t put_string(unsigned char *p, const char *s) {
    size_t n = strlen(s);
    put_u32(p, (uint32_t)n);
    memcpy(p + 4, s, n + 1);
    return 4 + n + 1;
}

kiln_status kiln_cuda_blob_write(kiln_blob *out, const char *arch, int kernel_count,
                                 const char *const *source_names, const char *const *lowered_names,
                                 const void *cubin, size_t cubin_size) {
    size_t table = 4 + strlen(arch) + 1;
    for (int i = 0; i < kernel_count; i++)
        table += 4 + strlen(source_names[i]) + 1 + 4 + strlen(lowered_names[i]) + 1;
    size_t cubin_offset = (BLOB_HEADER_BYTES + table + 15u) & ~(size_t)15u;
    size_t total = cubin_offset + cubin_size;
    unsigned char *b = calloc(1, total);
    if (!b)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for a CUDA module", total);
    memcpy(b, blob_magic, sizeof blob_magic);
    put_u32(b + 8, KILN_CUDA_BLOB_VERSION);
    put_u32(b + 12, (uint32_t)kernel_count);
    put_u64(b + 16, cubin_offset);
    put_u64(b + 24, cubin_size);
    size_t at = BLOB_HEADER_BYTES;
    at += put_string(b + at, arch);
    for (int i = 0; i < kernel_count; i++) {
        at += put_string(b + at, source_names[i]);
        at += put_string(b + at, lowered_names[i]);
    }
    memcpy(b + cubin_offset, cubin, cubin_size);
    out->data = b;
    out->size = total;
    return KILN_OK;
}

/* Reads a string at *at, checking it lies inside [0, end) and ends in NUL. */
static const char *get_string(const unsigned char *b, size_t end, size_t *at) {
    if (*at > end || end - *at < 4) return NULL;
    size_t n = get_u32(b + *at);
    if (end - *at - 4 < n + 1 || b[*at + 4 + n] != '\0') return NULL;
    const char *s = (const char *)b + *at + 4;
    if (memchr(s, '\0', n)) return NULL;
    *at += 4 + n + 1;
    return s;
}

void kiln_cuda_kernel_entries_free(kiln_cuda_kernel_entry *entries, int count) {
    if (!entries) return;
    for (int i = 0; i < count; i++) {
        free(entries[i].source_name);
        free(entries[i].lowered_name);
        free(entries[i].signature);
    }
    free(entries);
}

void kiln_cuda_blob_view_free(kiln_cuda_blob_view *v) {
    kiln_cuda_kernel_entries_free(v->kernels, v->kernel_count);
    v->kernels = NULL;
    v->kernel_count = 0;
}

static kiln_status blob_bad(const char *why) {
    return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "not a kiln CUDA module (format %u): %s",
                          KILN_CUDA_BLOB_VERSION, why);
}

kiln_status kiln_cuda_blob_read(const kiln_blob *blob, kiln_cuda_blob_view *out) {
    memset(out, 0, sizeof *out);
    const unsigned char *b = blob ? blob->data : NULL;
    size_t size = blob ? blob->size : 0;
    if (!b || size < BLOB_HEADER_BYTES) return blob_bad("shorter than its header");
    if (memcmp(b, blob_magic, sizeof blob_magic) != 0) return blob_bad("bad magic");
    if (get_u32(b + 8) != KILN_CUDA_BLOB_VERSION) return blob_bad("another format version");
    uint32_t count = get_u32(b + 12);
    uint64_t cubin_offset = get_u64(b + 16), cubin_size = get_u64(b + 24);
    if (cubin_offset < BLOB_HEADER_BYTES || cubin_offset > size || cubin_size != size - cubin_offset ||
        cubin_size == 0)
        return blob_bad("cubin outside the blob");
    if (count > 1u << 20) return blob_bad("absurd kernel count");
    size_t at = BLOB_HEADER_BYTES, end = (size_t)cubin_offset;
    const char *arch = get_string(b, end, &at);
    if (!arch || strlen(arch) >= sizeof out->arch) return blob_bad("bad architecture string");
    strcpy(out->arch, arch);
    out->kernels = calloc(count ? count : 1, sizeof *out->kernels);
    if (!out->kernels)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory reading a CUDA module");
    for (uint32_t i = 0; i < count; i++) {
        const char *source = get_string(b, end, &at);
        const char *lowered = source ? get_string(b, end, &at) : NULL;
        if (!lowered) {
            kiln_cuda_blob_view_free(out);
            return blob_bad("truncated kernel table");
        }
        out->kernel_count = (int)i + 1;
        out->kernels[i].source_name = strdup(source);
        out->kernels[i].lowered_name = strdup(lowered);
        if (!out->kernels[i].source_name || !out->kernels[i].lowered_name) {
            kiln_cuda_blob_view_free(out);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory reading a CUDA module");
        }
    }
    out->cubin = b + cubin_offset;
    out->cubin_size = (size_t)cubin_size;
    return KILN_OK;
}
