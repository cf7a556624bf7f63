/* cuda_elf.c: reading a global's initial bytes out of a cubin (an ELF64
 * image), so that a kernel's signature record (kiln_signature.cuh) is read
 * on the host when the module loads, instead of with one synchronous
 * device-to-host copy per kernel. Anything unexpected (not ELF64 little
 * endian, a symbol in no initialised section, out of bounds) returns 0 and
 * the caller reads the device as before. */
#include <stdint.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

#define SHT_PROGBITS 1
#define SHT_SYMTAB 2
#define SHDR_BYTES 64
#define SYM_BYTES 24

static uint64_t get(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

typedef struct elf_section {
    uint32_t name, type, link;
    uint64_t addr, offset, size, entsize;
} elf_section;

static int section(const unsigned char *elf, size_t size, uint64_t shoff, uint64_t shnum, uint64_t i,
                   elf_section *out) {
    if (i >= shnum) return 0;
    uint64_t at = shoff + i * SHDR_BYTES;
    if (at > size || size - at < SHDR_BYTES) return 0;
    const unsigned char *h = elf + at;
    out->name = (uint32_t)get(h, 4);
    out->type = (uint32_t)get(h + 4, 4);
    out->addr = get(h + 16, 8);
    out->offset = get(h + 24, 8);
    out->size = get(h + 32, 8);
    out->link = (uint32_t)get(h + 40, 4);
    out->entsize = get(h + 56, 8);
    return out->offset <= size && out->size <= size - out->offset;
}

int kiln_cuda_elf_global(const unsigned char *elf, size_t size, const char *name, const unsigned char **data,
                         size_t *bytes) {
    static const unsigned char ident[6] = {0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little endian */};
    if (size < 64 || memcmp(elf, ident, sizeof ident) != 0 || get(elf + 0x3a, 2) != SHDR_BYTES) return 0;
    uint64_t shoff = get(elf + 0x28, 8), shnum = get(elf + 0x3c, 2);
    size_t name_len = strlen(name);
    for (uint64_t i = 0; i < shnum; i++) {
        elf_section symtab, strtab;
        if (!section(elf, size, shoff, shnum, i, &symtab) || symtab.type != SHT_SYMTAB) continue;
        if (symtab.entsize != SYM_BYTES || !section(elf, size, shoff, shnum, symtab.link, &strtab)) return 0;
        for (uint64_t at = 0; at + SYM_BYTES <= symtab.size; at += SYM_BYTES) {
            const unsigned char *sym = elf + symtab.offset + at;
            uint64_t sname = get(sym, 4);
            if (sname >= strtab.size || strtab.size - sname <= name_len ||
                memcmp(elf + strtab.offset + sname, name, name_len + 1) != 0)
                continue;
            elf_section home;
            uint64_t value = get(sym + 8, 8), length = get(sym + 16, 8);
            if (!section(elf, size, shoff, shnum, get(sym + 6, 2), &home) || home.type != SHT_PROGBITS ||
                value < home.addr || value - home.addr > home.size ||
                length > home.size - (value - home.addr))
                return 0;
            *data = elf + home.offset + (value - home.addr);
            *bytes = (size_t)length;
            return 1;
        }
        return 0;
    }
    return 0;
}

#define STT_FUNC 2
#define STO_CUDA_ENTRY 0x10

int kiln_cuda_elf_entries(const unsigned char *elf, size_t size, void (*each)(const char *name, void *ud),
                          void *ud) {
    static const unsigned char ident[6] = {0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little endian */};
    if (size < 64 || memcmp(elf, ident, sizeof ident) != 0 || get(elf + 0x3a, 2) != SHDR_BYTES) return -1;
    uint64_t shoff = get(elf + 0x28, 8), shnum = get(elf + 0x3c, 2);
    for (uint64_t i = 0; i < shnum; i++) {
        elf_section symtab, strtab;
        if (!section(elf, size, shoff, shnum, i, &symtab) || symtab.type != SHT_SYMTAB) continue;
        if (symtab.entsize != SYM_BYTES || !section(elf, size, shoff, shnum, symtab.link, &strtab)) return -1;
        int count = 0;
        for (uint64_t at = 0; at + SYM_BYTES <= symtab.size; at += SYM_BYTES) {
            const unsigned char *sym = elf + symtab.offset + at;
            uint64_t sname = get(sym, 4);
            if ((sym[4] & 0xf) != STT_FUNC || !(sym[5] & STO_CUDA_ENTRY) || sname >= strtab.size) continue;
            const char *name = (const char *)elf + strtab.offset + sname;
            if (!memchr(name, '\0', strtab.size - sname)) continue;
            each(name, ud);
            count++;
        }
        return count;
    }
    return -1;
}
