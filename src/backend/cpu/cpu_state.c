/* cpu_state.c: does a compiled module keep state between launches?
 *
 * A module's quick build is replaced by its -O3 tier-up
 * (src/kernel/tier_up.c) while the program runs. That is only invisible when nothing the
 * module's code writes outlives a launch: a `__device__ int counter`, a
 * function's `static` local or a non-const `__constant__` table would
 * start again from its initial value in the new build. Such variables are
 * data objects in writable, non-thread-local sections of the module's
 * object file, so that is what is looked for; static __shared__ variables
 * are thread-locals (their contents do not outlive a block) and kiln's
 * own gridDim and blockDim are set again at every launch. The object file
 * is read rather than the linked module: it holds no start files, whose
 * own writable symbols differ from one toolchain to the next. */
#include <elf.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"

/* kiln_cpu_prelude.cuh's launch geometry, written by kiln_cpu_begin. */
static const char *const prelude_objects[] = {"_ZL7gridDim", "_ZL8blockDim"};

/* Section header i, or 0 when it lies outside the file. */
static int section(const unsigned char *d, size_t n, const Elf64_Ehdr *eh, unsigned i, Elf64_Shdr *out) {
    uint64_t off = eh->e_shoff + (uint64_t)i * eh->e_shentsize;
    if (i >= eh->e_shnum || eh->e_shentsize < sizeof *out || off > n || n - off < sizeof *out) return 0;
    memcpy(out, d + off, sizeof *out);
    return out->sh_offset <= n && (out->sh_type == SHT_NOBITS || n - out->sh_offset >= out->sh_size);
}

static int is_prelude_object(const char *name) {
    for (size_t i = 0; i < sizeof prelude_objects / sizeof *prelude_objects; i++)
        if (strcmp(name, prelude_objects[i]) == 0) return 1;
    return 0;
}

/* 1 when every data object of the symbol table `symtab` lies in a
 * read-only or thread-local section (or is kiln's geometry); 0 otherwise. */
static int symbols_stateless(const unsigned char *d, size_t n, const Elf64_Ehdr *eh,
                             const Elf64_Shdr *symtab) {
    Elf64_Shdr strtab;
    if (symtab->sh_type == SHT_NOBITS || symtab->sh_entsize < sizeof(Elf64_Sym) ||
        !section(d, n, eh, symtab->sh_link, &strtab))
        return 0;
    size_t count = symtab->sh_size / symtab->sh_entsize;
    for (size_t j = 0; j < count; j++) {
        Elf64_Sym sym;
        memcpy(&sym, d + symtab->sh_offset + j * symtab->sh_entsize, sizeof sym);
        int type = ELF64_ST_TYPE(sym.st_info);
        if (type == STT_COMMON || (type == STT_OBJECT && sym.st_shndx == SHN_COMMON)) return 0;
        if (type != STT_OBJECT || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) continue;
        Elf64_Shdr home;
        if (!section(d, n, eh, sym.st_shndx, &home)) return 0;
        if (!(home.sh_flags & SHF_WRITE) || (home.sh_flags & SHF_TLS)) continue;
        if (strtab.sh_type == SHT_NOBITS || sym.st_name >= strtab.sh_size) return 0;
        const char *name = (const char *)d + strtab.sh_offset + sym.st_name;
        if (!memchr(name, '\0', strtab.sh_size - sym.st_name) || !is_prelude_object(name)) return 0;
    }
    return 1;
}

int kiln_cpu_object_stateless(const unsigned char *d, size_t n) {
    Elf64_Ehdr eh;
    int ok = d && n >= sizeof eh && memcmp(d, ELFMAG, SELFMAG) == 0 && d[EI_CLASS] == ELFCLASS64;
    if (ok) memcpy(&eh, d, sizeof eh);
    int found = 0;
    for (unsigned i = 0; ok && i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        if (!section(d, n, &eh, i, &sh))
            ok = 0;
        else if (sh.sh_type == SHT_SYMTAB) {
            found = 1;
            ok = symbols_stateless(d, n, &eh, &sh);
        }
    }
    return ok && found;
}
