/* cpu_refuse.c: CUDA C the CPU backend cannot run, refused before the host
 * compiler sees it, with the construct and the line: textures and surfaces
 * (hardware sampling units kiln does not emulate) and kernels launching
 * kernels (dynamic parallelism). The host compiler's own messages for them
 * ("'cudaTextureObject_t' was not declared", "expected primary-expression
 * before '<'") say nothing of why. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "core/text.h"

static const char *const texture_names[] = {"cudaTextureObject_t",
                                            "cudaSurfaceObject_t",
                                            "texture",
                                            "surface",
                                            "tex1D",
                                            "tex1Dfetch",
                                            "tex2D",
                                            "tex3D",
                                            "tex1DLayered",
                                            "tex2DLayered",
                                            "texCubemap",
                                            "tex2Dgather",
                                            "tex1DLod",
                                            "tex2DLod",
                                            "tex3DLod",
                                            "surf1Dread",
                                            "surf1Dwrite",
                                            "surf2Dread",
                                            "surf2Dwrite",
                                            "surf3Dread",
                                            "surf3Dwrite"};

static int is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* What follows identifier w (after blanks): "texture" and "surface" are
 * refused only as templates (texture<float, 2>), the names they have in
 * CUDA, not as a user's variable. */
static int refused_name(const char *w, size_t n, const char *after) {
    for (size_t i = 0; i < sizeof texture_names / sizeof *texture_names; i++) {
        if (strlen(texture_names[i]) != n || strncmp(w, texture_names[i], n) != 0) continue;
        if (strcmp(texture_names[i], "texture") == 0 || strcmp(texture_names[i], "surface") == 0) {
            while (*after == ' ' || *after == '\t') after++;
            return *after == '<';
        }
        return 1;
    }
    return 0;
}

int kiln_cpu_refuse(const char *source, const char *name, char **log) {
    int line = 1, line_start = 1;
    for (const char *p = source; *p;) {
        if (*p == '\n') {
            line++;
            line_start = 1;
            p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
        } else if (p[0] == '/' && p[1] == '*') {
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/')) line += *p++ == '\n';
            if (*p) p += 2;
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (*p && *p != q && *p != '\n') p += (*p == '\\' && p[1]) ? 2 : 1;
            if (*p == q) p++;
        } else if (*p == '#' && line_start) {
            while (*p && !(*p == '\n' && p[-1] != '\\')) line += *p++ == '\n' && p[-2] == '\\';
        } else if (p[0] == '<' && p[1] == '<' && p[2] == '<') {
            kiln_text t = {0};
            kiln_text_printf(&t,
                             "%s:%d: error: a kernel launch inside device code (<<<...>>>, dynamic "
                             "parallelism) is not supported by kiln's CPU backend\n",
                             name, line);
            *log = kiln_text_take(&t);
            return 1;
        } else if (is_ident(*p)) {
            const char *w = p;
            while (is_ident(*p)) p++;
            if (!isdigit((unsigned char)*w) && refused_name(w, (size_t)(p - w), p)) {
                kiln_text t = {0};
                kiln_text_printf(&t,
                                 "%s:%d: error: %.*s: textures and surfaces are not supported by kiln's CPU "
                                 "backend (read the data from a plain array instead)\n",
                                 name, line, (int)(p - w), w);
                *log = kiln_text_take(&t);
                return 1;
            }
            line_start = 0;
        } else {
            if (!isspace((unsigned char)*p)) line_start = 0;
            p++;
        }
    }
    return 0;
}
