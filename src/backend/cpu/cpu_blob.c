/* cpu_blob.c: the CPU backend's compiled-module format (layout in
 * cpu_internal.h): a shared object with a header saying how to run it. It is
 * what the disk cache stores, so it carries everything module_load needs. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "core/byte_order.h"
#include "core/error.h"

#define BLOB_MAGIC "KILNCPU1"
#define BLOB_HEADER 24u

kiln_status kiln_cpu_blob_write(kiln_blob *out, unsigned flags, const void *so, size_t so_size) {
    unsigned char *d = malloc(BLOB_HEADER + so_size);
    if (!d)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for a %zu-byte module", so_size);
    memcpy(d, BLOB_MAGIC, 8);
    put_u32(d + 8, KILN_CPU_ABI_VERSION);
    put_u32(d + 12, flags);
    put_u64(d + 16, so_size);
    memcpy(d + BLOB_HEADER, so, so_size);
    out->data = d;
    out->size = BLOB_HEADER + so_size;
    return KILN_OK;
}

kiln_status kiln_cpu_blob_read(const kiln_blob *blob, unsigned *flags, const unsigned char **so,
                               size_t *so_size) {
    if (!blob || !blob->data || blob->size < BLOB_HEADER || memcmp(blob->data, BLOB_MAGIC, 8) != 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "not a CPU module: expected a blob starting with \"" BLOB_MAGIC "\" of at "
                              "least %u bytes, got %zu bytes",
                              BLOB_HEADER, blob && blob->data ? blob->size : 0);
    uint32_t abi = get_u32(blob->data + 8);
    if (abi != KILN_CPU_ABI_VERSION)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "CPU module built for ABI %u; this kiln runs ABI %d",
                              abi, KILN_CPU_ABI_VERSION);
    uint64_t size = get_u64(blob->data + 16);
    if (size != blob->size - BLOB_HEADER)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "truncated CPU module: header says %llu bytes of code, blob holds %zu",
                              (unsigned long long)size, blob->size - BLOB_HEADER);
    *flags = get_u32(blob->data + 12);
    *so = blob->data + BLOB_HEADER;
    *so_size = (size_t)size;
    return KILN_OK;
}
