/* cuda_blob.h: the CUDA backend's compiled-module format, what compile()
 * returns and the disk cache stores. Self-contained: the kernel name table
 * travels with the cubin, so a cached module needs no recompilation to find
 * its (mangled) kernels.
 *
 * Layout, integers little-endian:
 *   0   "KILNCUBN"            magic, 8 bytes
 *   8   u32 version           KILN_CUDA_BLOB_VERSION
 *   12  u32 kernel_count
 *   16  u64 cubin_offset      from the blob's start, a multiple of 16
 *   24  u64 cubin_size
 *   32  string arch           ("sm_90")
 *       kernel_count x { string source_name, string lowered_name }
 *       zero padding to cubin_offset, then the cubin (an ELF image)
 * where a string is u32 length (without the NUL) then the bytes and a NUL. */
#ifndef KILN_CUDA_BLOB_H
#define KILN_CUDA_BLOB_H

#include "backend/cuda/cuda_internal.h"

#define KILN_CUDA_BLOB_VERSION 1u

kiln_status kiln_cuda_blob_write(kiln_blob *out, const char *arch, int kernel_count,
                                 const char *const *source_names, const char *const *lowered_names,
                                 const void *cubin, size_t cubin_size);

/* A parsed blob. The strings are copies (free with kiln_cuda_blob_view_free);
 * cubin points into the blob. */
typedef struct kiln_cuda_blob_view {
    char arch[16];
    int kernel_count;
    kiln_cuda_kernel_entry *kernels;
    const unsigned char *cubin;
    size_t cubin_size;
} kiln_cuda_blob_view;

/* KILN_ERR_INVALID_ARGUMENT with a message when the bytes are not a blob of
 * this version (truncated, bad magic, ...). */
kiln_status kiln_cuda_blob_read(const kiln_blob *blob, kiln_cuda_blob_view *out);
void kiln_cuda_blob_view_free(kiln_cuda_blob_view *v);
void kiln_cuda_kernel_entries_free(kiln_cuda_kernel_entry *entries, int count);

#endif
