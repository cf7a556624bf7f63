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
extern const char kiln_embedded_kiln_cpu_curand[];
extern const char kiln_embedded_kiln_random[];

typedef struct header {
    const char *path;    /* under the include folder */
    const char *text[2]; /* written one after the other; NULL: none */
} header;

static const char include_cg[] = "#include <cooperative_groups.h>\n";

/* <curand_kernel.h> is kiln's cuRAND-exact generators (kiln_random.cuh)
 * with cuRAND's names on top (kiln_cpu_curand.cuh). */
static const header headers[] = {
    {"cooperative_groups.h", {kiln_embedded_kiln_cpu_cg, NULL}},
    {"cooperative_groups/reduce.h", {include_cg, NULL}},
    {"cooperative_groups/scan.h", {include_cg, NULL}},
    {"cuda_fp16.h", {kiln_embedded_kiln_cpu_fp16, NULL}},
    {"cuda_bf16.h", {kiln_embedded_kiln_cpu_fp16, NULL}},
    {"curand_kernel.h", {kiln_embedded_kiln_random, kiln_embedded_kiln_cpu_curand}},
};

static kiln_status write_text(const char *path, const char *const *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return kiln_set_error(KILN_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    int ok = 1;
    for (int i = 0; i < 2 && text[i]; i++) {
        size_t n = strlen(text[i]);
        ok &= fwrite(text[i], 1, n, f) == n;
    }
    if (fclose(f) != 0 || !ok) return kiln_set_error(KILN_ERR_IO, "cannot write %s", path);
    return KILN_OK;
}

int kiln_cpu_headers_wanted(const kiln_compile_request *req) {
    static const char *const names[] = {"cooperative_groups", "cuda_fp16.h", "cuda_bf16.h",
                                        "curand_kernel.h"};
    for (size_t i = 0; req->source && i < sizeof names / sizeof *names; i++)
        if (strstr(req->source, names[i])) return 1;
    return 0;
}

kiln_status kiln_cpu_headers_write(const char *dir, char *include_dir, size_t cap) {
    char path[4400];
    snprintf(include_dir, cap, "%s/include", dir);
    snprintf(path, sizeof path, "%s/cooperative_groups", include_dir);
    if (mkdir(include_dir, 0700) != 0 || mkdir(path, 0700) != 0)
        return kiln_set_error(KILN_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    for (size_t i = 0; i < sizeof headers / sizeof *headers; i++) {
        snprintf(path, sizeof path, "%s/%s", include_dir, headers[i].path);
        kiln_status s = write_text(path, headers[i].text);
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
