/* cpu_headers.c: the CUDA toolkit headers kiln gives CPU modules.
 *
 * CUDA C written for nvcc includes <cooperative_groups.h> and friends; on
 * the CPU kiln provides its own header under each such name (embedded in
 * libkiln like the prelude), written into the compile's private folder and
 * put on the compiler's include path after the user's folders. Written only
 * when the source names one of them, so other compiles touch nothing more. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

extern const char kiln_embedded_kiln_cpu_cg[];
extern const char kiln_embedded_kiln_cpu_fp16[];

typedef struct header {
    const char *path; /* under the include folder */
    const char *text;
} header;

static const header headers[] = {
    {"cooperative_groups.h", NULL}, /* kiln_cpu_cg.cuh */
    {"cuda_fp16.h", NULL},          /* kiln_cpu_fp16.cuh, both */
    {"cuda_bf16.h", NULL},
    {"cooperative_groups/reduce.h", "#include <cooperative_groups.h>\n"},
    {"cooperative_groups/scan.h", "#include <cooperative_groups.h>\n"},
};

static kiln_status write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return kiln_set_error(KILN_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    size_t n = strlen(text), w = fwrite(text, 1, n, f);
    if (fclose(f) != 0 || w != n) return kiln_set_error(KILN_ERR_IO, "cannot write %s", path);
    return KILN_OK;
}

int kiln_cpu_headers_wanted(const kiln_compile_request *req) {
    return req->source && (strstr(req->source, "cooperative_groups") || strstr(req->source, "cuda_fp16.h") ||
                           strstr(req->source, "cuda_bf16.h"));
}

kiln_status kiln_cpu_headers_write(const char *dir, char *include_dir, size_t cap) {
    char path[4400];
    snprintf(include_dir, cap, "%s/include", dir);
    snprintf(path, sizeof path, "%s/cooperative_groups", include_dir);
    if (mkdir(include_dir, 0700) != 0 || mkdir(path, 0700) != 0)
        return kiln_set_error(KILN_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    for (size_t i = 0; i < sizeof headers / sizeof *headers; i++) {
        snprintf(path, sizeof path, "%s/%s", include_dir, headers[i].path);
        const char *text = headers[i].text                             ? headers[i].text
                           : strncmp(headers[i].path, "cuda_", 5) == 0 ? kiln_embedded_kiln_cpu_fp16
                                                                       : kiln_embedded_kiln_cpu_cg;
        kiln_status s = write_text(path, text);
        if (s != KILN_OK) return s;
    }
    return KILN_OK;
}

void kiln_cpu_headers_remove(const char *include_dir) {
    char path[4400];
    for (size_t i = sizeof headers / sizeof *headers; i-- > 0;) {
        snprintf(path, sizeof path, "%s/%s", include_dir, headers[i].path);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/cooperative_groups", include_dir);
    rmdir(path);
    rmdir(include_dir);
}
