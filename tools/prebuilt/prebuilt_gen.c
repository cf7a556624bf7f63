/* prebuilt_gen.c: kiln's build step for its prebuilt kernel images
 * (kiln_prebuilt_image, src/core/backend.h), run by cmake/prebuilt.cmake.
 *
 *   prebuilt_gen plan DIR
 *     For each module kiln prebuilds (src/sort/sort_cub_prebuilt.c):
 *     DIR/sort_cub_<i>.cu, the whole text kiln's NVRTC path compiles for
 *     it on sm_90 (the CUDA backend's own assembly: prelude, source,
 *     signature records), which nvcc compiles to a cubin as it is;
 *     .names, what the image's table lists (each kernel's expression,
 *     each module global as "&name"); .names.cu, the same text with one
 *     __device__ variable per name that holds its address, which nvcc
 *     compiles to PTX only, where each initializer spells the symbol the
 *     name lowered to; .source, the module's source as kiln gives it.
 *     (cmake/prebuilt_nvcc.cmake runs nvcc again only for a text that
 *     changed.)
 *   prebuilt_gen embed OUT.c DIR COUNT
 *     The C source of the image table: each module's cubin, text, source,
 *     names and symbols (from the PTX). A module whose cubin is empty
 *     (nvcc failed: cmake/prebuilt_nvcc.cmake) is left out, and so is one
 *     whose symbols are not all in its cubin; it then compiles through
 *     NVRTC at run time as before.
 *
 * Linked with libkiln's objects, so the text is kiln's own, never a copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "kernel/compile_only.h"
#include "sort/sort.h"

/* libkiln's table, which this program makes: empty here */
const kiln_prebuilt_image *const kiln_sort_cub_prebuilt = NULL;
const int kiln_sort_cub_prebuilt_count = 0;

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n < cap) continue;
        char *more = realloc(buf, 2 * cap + 1);
        if (!more) free(buf);
        buf = more;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (size) *size = n;
    return buf;
}

/* Writes text to path (through a temporary, renamed over it); 0 on
 * success. Always written, unchanged or not: the file is then newer than
 * this program, and the build does not run it again until it changes. */
static int write_file(const char *path, const char *text, size_t n) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(text, 1, n, f) == n;
    ok = f && fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) != 0) ok = 0;
    if (!ok) {
        remove(tmp);
        fprintf(stderr, "prebuilt_gen: cannot write %s\n", path);
    }
    return ok ? 0 : -1;
}

static int write_named(const char *dir, int i, const char *suffix, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/sort_cub_%d%s", dir, i, suffix);
    return write_file(path, text, strlen(text));
}

/* The text with one variable per name holding its address: nvcc's PTX
 * spells each initializer with the symbol the name lowered to. */
static char *names_probe(const char *text, const char *names) {
    size_t n = strlen(text) + 4 * strlen(names) + 1024, at = 0;
    int count = 0;
    for (const char *p = names; *p; p++) count += *p == '\n';
    n += (size_t)count * 96;
    char *out = malloc(n);
    if (!out) return NULL;
    at += (size_t)snprintf(out, n, "%s\n#line 1 \"kiln-prebuilt-names\"\n", text);
    int i = 0;
    for (const char *p = names; *p; i++) {
        const char *nl = strchr(p, '\n');
        int len = (int)(nl - p);
        /* a variable's name is written "&name" already */
        at += (size_t)snprintf(out + at, n - at, "__device__ void *kiln_prebuilt_name_%d = (void *)%s%.*s;\n",
                               i, *p == '&' ? "" : "&", len, p);
        p = nl + 1;
    }
    return out;
}

static int plan(const char *dir) {
    for (int i = 0; i < SORT_CUB_PREBUILT_VARIANTS; i++) {
        const sort_cub_variant *v = &sort_cub_prebuilt_variants[i];
        char *source = sort_cub_module_source(v->dtype, v->value_bytes, v->descending);
        char *text = NULL, *names = NULL, *probe = NULL;
        kiln_status s = source ? kiln_module_text_for("cuda", SORT_CUB_PREBUILT_ARCH, source,
                                                      SORT_CUB_MODULE_NAME, &text, &names)
                               : KILN_ERR_OUT_OF_MEMORY;
        if (s == KILN_OK) probe = names_probe(text, names);
        int rc = s != KILN_OK || !probe || write_named(dir, i, ".cu", text) ||
                 write_named(dir, i, ".names", names) || write_named(dir, i, ".names.cu", probe) ||
                 write_named(dir, i, ".source", source);
        if (s != KILN_OK) fprintf(stderr, "prebuilt_gen: %s\n", kiln_last_error());
        free(source);
        free(text);
        free(names);
        free(probe);
        if (rc) return 1;
    }
    return 0;
}

/* ---- embed */

static void put_bytes(FILE *f, const char *name, int i, const unsigned char *p, size_t n, int nul) {
    fprintf(f, "static const %s %s_%d[] = {", nul ? "char" : "unsigned char", name, i);
    for (size_t k = 0; k < n; k++) fprintf(f, "%s0x%02x,", k % 16 ? "" : "\n    ", p[k]);
    fprintf(f, "%s};\n", nul ? "0x00" : "");
}

static void put_string(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '"' || s[k] == '\\') fputc('\\', f);
        fputc(s[k], f);
    }
    fputc('"', f);
}

/* The symbol PTX gives `kiln_prebuilt_name_<i>`'s initializer (names_probe):
 * "= sym;" for a kernel, "= generic(sym);" for a variable. */
static int lowered_in_ptx(const char *ptx, int i, const char **sym, size_t *len) {
    char key[64];
    snprintf(key, sizeof key, "kiln_prebuilt_name_%d = ", i);
    const char *p = strstr(ptx, key);
    if (!p) return 0;
    p += strlen(key);
    if (strncmp(p, "generic(", 8) == 0) p += 8;
    *sym = p;
    *len = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$");
    return *len > 0;
}

/* 1 when the cubin's string table holds sym as a whole string. */
static int in_image(const unsigned char *image, size_t size, const char *sym, size_t len) {
    for (size_t k = 1; k + len < size; k++)
        if (image[k - 1] == 0 && image[k + len] == 0 && memcmp(image + k, sym, len) == 0) return 1;
    return 0;
}

typedef struct module_files {
    char *cubin, *ptx, *names, *text, *source;
    size_t cubin_size;
} module_files;

static void files_free(module_files *m) {
    free(m->cubin);
    free(m->ptx);
    free(m->names);
    free(m->text);
    free(m->source);
}

static int files_read(const char *dir, int i, module_files *m) {
    memset(m, 0, sizeof *m);
    const struct {
        char **field;
        const char *suffix;
        size_t *size;
    } parts[] = {{&m->cubin, ".cubin", &m->cubin_size},
                 {&m->ptx, ".names.ptx", NULL},
                 {&m->names, ".names", NULL},
                 {&m->text, ".cu", NULL},
                 {&m->source, ".source", NULL}};
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/sort_cub_%d%s", dir, i, parts[k].suffix);
        if (!(*parts[k].field = read_file(path, parts[k].size))) {
            fprintf(stderr, "prebuilt_gen: cannot read %s\n", path);
            return -1;
        }
    }
    return 0;
}

/* Module i's arrays into f; 1 when it went in, 0 when it is left out. */
static int embed_module(FILE *f, const char *dir, int i, int index) {
    module_files m;
    if (files_read(dir, i, &m) != 0) {
        files_free(&m);
        return -1;
    }
    int ok = m.cubin_size > 0, count = 0;
    if (!ok) fprintf(stderr, "prebuilt_gen: note: no cubin for sort_cub_%d (nvcc failed): left out\n", i);
    for (const char *p = m.names; ok && *p; p = strchr(p, '\n') + 1) count++;
    for (int k = 0; ok && k < count; k++) {
        const char *sym = NULL;
        size_t len = 0;
        ok = lowered_in_ptx(m.ptx, k, &sym, &len) &&
             in_image((unsigned char *)m.cubin, m.cubin_size, sym, len);
        if (!ok)
            fprintf(stderr, "prebuilt_gen: note: sort_cub_%d's name %d is not in its cubin: left out\n", i,
                    k);
    }
    if (ok) {
        put_bytes(f, "image", index, (unsigned char *)m.cubin, m.cubin_size, 0);
        put_bytes(f, "text", index, (unsigned char *)m.text, strlen(m.text), 1);
        put_bytes(f, "source", index, (unsigned char *)m.source, strlen(m.source), 1);
        fprintf(f, "static const char *const names_%d[] = {", index);
        for (const char *p = m.names; *p; p = strchr(p, '\n') + 1) {
            fputs("\n    ", f);
            put_string(f, p, (size_t)(strchr(p, '\n') - p));
            fputc(',', f);
        }
        fprintf(f, "};\nstatic const char *const lowered_%d[] = {", index);
        for (int k = 0; k < count; k++) {
            const char *sym = NULL;
            size_t len = 0;
            lowered_in_ptx(m.ptx, k, &sym, &len);
            fputs("\n    ", f);
            put_string(f, sym, len);
            fputc(',', f);
        }
        fprintf(f, "};\n");
    }
    files_free(&m);
    return ok ? count : 0;
}

static int embed(const char *out, const char *dir, int modules) {
    if (modules != SORT_CUB_PREBUILT_VARIANTS) {
        fprintf(stderr,
                "prebuilt_gen: cmake/prebuilt.cmake builds %d modules, sort_cub_prebuilt.c lists %d\n",
                modules, SORT_CUB_PREBUILT_VARIANTS);
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.new", out);
    FILE *f = fopen(tmp, "w");
    if (!f) return 1;
    fprintf(f, "/* generated by tools/prebuilt/prebuilt_gen.c from nvcc's cubins; do not edit */\n"
               "#include <stddef.h>\n\n#include \"core/backend.h\"\n\n");
    int counts[SORT_CUB_PREBUILT_VARIANTS], kept = 0, failed = 0;
    for (int i = 0; i < modules; i++) {
        counts[kept] = embed_module(f, dir, i, kept);
        failed |= counts[kept] < 0;
        if (counts[kept] > 0) kept++;
    }
    if (kept) {
        fprintf(f, "\nstatic const kiln_prebuilt_image images[] = {\n");
        for (int k = 0; k < kept; k++)
            fprintf(f,
                    "    {.arch = \"%s\", .source = source_%d, .text = text_%d, .image = image_%d,\n"
                    "     .image_bytes = sizeof image_%d, .count = %d, .names = names_%d, .lowered = "
                    "lowered_%d},\n",
                    SORT_CUB_PREBUILT_ARCH, k, k, k, k, counts[k], k, k);
        fprintf(f, "};\nconst kiln_prebuilt_image *const kiln_sort_cub_prebuilt = images;\n");
    } else {
        fprintf(f, "const kiln_prebuilt_image *const kiln_sort_cub_prebuilt = NULL;\n");
    }
    fprintf(f, "const int kiln_sort_cub_prebuilt_count = %d;\n", kept);
    failed |= fclose(f) != 0;
    if (failed || rename(tmp, out) != 0) {
        remove(tmp);
        fprintf(stderr, "prebuilt_gen: cannot write %s\n", out);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "plan") == 0) return plan(argv[2]);
    if (argc == 5 && strcmp(argv[1], "embed") == 0) return embed(argv[2], argv[3], atoi(argv[4]));
    fprintf(stderr, "usage: prebuilt_gen plan DIR | prebuilt_gen embed OUT.c DIR COUNT\n");
    return 2;
}
