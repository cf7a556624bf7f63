/* cpu_compile.c: CUDA C source -> shared object, through the host C++
 * compiler, packed as a CPU blob.
 *
 * The compiled text is: the CPU prelude, kiln_complex.cuh, kiln_signature.cuh,
 * `#line 1 "<name>"` and the user's source (so diagnostics count the user's
 * lines), then per kernel its signature record and the entry point libkiln
 * calls (fast loop or fiber thread, see cpu_abi.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"
#include "core/text.h"

extern const char kiln_embedded_kiln_cpu_prelude[];
extern const char kiln_embedded_kiln_complex[];
extern const char kiln_embedded_kiln_signature[];

static char *assemble_source(const kiln_compile_request *req, int *barriers) {
    char *user = kiln_cpu_source_prepare(req, barriers);
    if (!user) return NULL;
    kiln_text t = {0};
    kiln_text_line_directive(&t, "kiln_cpu_prelude.cuh");
    kiln_text_puts(&t, kiln_embedded_kiln_cpu_prelude);
    kiln_text_line_directive(&t, "kiln_complex.cuh");
    kiln_text_puts(&t, kiln_embedded_kiln_complex);
    kiln_text_line_directive(&t, "kiln_signature.cuh");
    kiln_text_puts(&t, kiln_embedded_kiln_signature);
    kiln_text_line_directive(&t, req->name ? req->name : "kernel.cu");
    kiln_text_puts(&t, user);
    free(user);
    kiln_text_line_directive(&t, "kiln-cpu-entry-points");
    for (int i = 0; i < req->kernel_count; i++) {
        const char *k = req->kernel_names[i];
        kiln_text_puts(&t, "KILN_EXPORT_SIGNATURE(");
        kiln_text_puts(&t, k);
        kiln_text_puts(&t, *barriers ? ")\nKILN_CPU_EXPORT_THREAD(" : ")\nKILN_CPU_EXPORT_FAST(");
        kiln_text_puts(&t, k);
        kiln_text_puts(&t, ")\n");
    }
    return kiln_text_take(&t);
}

static kiln_status write_file(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return kiln_set_error(KILN_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    size_t w = fwrite(data, 1, n, f);
    if (fclose(f) != 0 || w != n) return kiln_set_error(KILN_ERR_IO, "cannot write %s", path);
    return KILN_OK;
}

static kiln_status read_file(const char *path, unsigned char **data, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return kiln_set_error(KILN_ERR_IO, "the compiler reported success but wrote no %s", path);
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        fclose(f);
        return kiln_set_error(KILN_ERR_IO, "cannot stat %s", path);
    }
    unsigned char *d = malloc((size_t)sb.st_size + 1);
    size_t got = d ? fread(d, 1, (size_t)sb.st_size, f) : 0;
    fclose(f);
    if (!d || got != (size_t)sb.st_size) {
        free(d);
        return kiln_set_error(KILN_ERR_IO, "cannot read the compiled module %s", path);
    }
    *data = d;
    *n = got;
    return KILN_OK;
}

/* Flags of every compile, before the options of the request. */
static const char *const fixed_flags[] = {
    "-std=c++17", "-fPIC", "-shared", "-march=native",
    /* Hidden by default: only the entry points are exported, and the
     * module's thread_locals get the cheaper local-dynamic TLS model. */
    "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti", "-fno-math-errno",
    /* NVCC contracts a*b+c into FMA by default; -std=c++17 would not. */
    "-ffp-contract=fast", "-pipe",
    /* Each function's frame size, written beside the output: fiber stacks
     * are sized from the kernel's frames (kiln_cpu_frame_bytes). */
    "-fstack-usage"};

/* Libraries every module links against, after the source. Generated ufunc
 * loops call glibc's vector math variants (_ZGV..., ufunc_cpu_math.cuh),
 * which live in libmvec: linking it makes the module name it as a
 * dependency (DT_NEEDED), so dlopen resolves them with no help from the
 * process. --as-needed: modules that call none of them do not depend on it. */
static const char *const link_flags[] = {"-Wl,--as-needed",
#if defined(__x86_64__) && defined(__GLIBC__)
                                         "-lmvec",
#endif
                                         "-lm"};

#define COUNT(a) (sizeof(a) / sizeof *(a))

void kiln_cpu_command_flags(char *out, size_t out_size) {
    size_t n = 0;
    if (out_size) out[0] = '\0';
    for (size_t i = 0; i < COUNT(fixed_flags) + COUNT(link_flags) && n < out_size; i++) {
        const char *f = i < COUNT(fixed_flags) ? fixed_flags[i] : link_flags[i - COUNT(fixed_flags)];
        n += (size_t)snprintf(out + n, out_size - n, "%s%s", n ? " " : "", f);
    }
}

/* The compiler's command line (free the array only: the strings belong to
 * the compiler, the request, the tables above or the caller). */
static char **build_argv(const kiln_cpu_compiler *c, const kiln_compile_request *req, const char *src,
                         const char *so) {
    size_t n = (size_t)c->argc + 2 * ((size_t)req->define_count + (size_t)req->include_count) +
               COUNT(fixed_flags) + COUNT(link_flags) + 16;
    char **argv = calloc(n, sizeof *argv);
    if (!argv) return NULL;
    int k = 0;
    for (int i = 0; i < c->argc; i++) argv[k++] = c->argv[i];
    for (size_t i = 0; i < COUNT(fixed_flags); i++) argv[k++] = (char *)fixed_flags[i];
    if (req->debug) {
        argv[k++] = "-O0";
        argv[k++] = "-g";
    } else
        argv[k++] = "-O3";
    if (req->fast_math) argv[k++] = "-ffast-math";
    /* -D and -I as separate words: no quoting, no string building. */
    for (int i = 0; i < req->define_count; i++) {
        argv[k++] = "-D";
        argv[k++] = (char *)req->defines[i];
    }
    for (int i = 0; i < req->include_count; i++) {
        argv[k++] = "-I";
        argv[k++] = (char *)req->include_dirs[i];
    }
    argv[k++] = "-o";
    argv[k++] = (char *)so;
    argv[k++] = (char *)src;
    for (size_t i = 0; i < COUNT(link_flags); i++) argv[k++] = (char *)link_flags[i];
    argv[k] = NULL;
    return argv;
}

/* The largest frame the compiler reported (-fstack-usage: lines
 * "file:line:col:function<TAB>bytes<TAB>static|dynamic|bounded") in any .su
 * file of dir; 0 when none was written (a compiler without the flag's
 * output, or a frame of unbounded dynamic size). Removes the files. */
static size_t frame_bytes(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t most = 0;
    struct dirent *e;
    char path[4400], line[2048];
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 3, ".su") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f)) {
            char *tab = strchr(line, '\t');
            if (!tab) continue;
            unsigned long long bytes = strtoull(tab + 1, NULL, 10);
            if (bytes > most) most = (size_t)bytes;
        }
        if (f) fclose(f);
        unlink(path);
    }
    closedir(d);
    return most;
}

static void remove_dir(const char *dir, const char *src, const char *so) {
    unlink(src);
    unlink(so);
    (void)frame_bytes(dir); /* and any .su files left */
    rmdir(dir);
}

kiln_status kiln_cpu_compile(const kiln_cpu_compiler *c, const kiln_compile_request *req, kiln_blob *out,
                             char **log) {
    *log = NULL;
    if (!req || !req->source)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "CPU compile: no source to compile");
    int barriers = 0;
    char *source = assemble_source(req, &barriers);
    if (!source)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory assembling the CPU source");

    const char *tmp = getenv("TMPDIR");
    char dir[4096], src[4200], so[4200];
    snprintf(dir, sizeof dir, "%s/kiln-cpu-XXXXXX", (tmp && *tmp) ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        free(source);
        return kiln_set_error(KILN_ERR_IO, "cannot create a private temporary folder %s: %s", dir,
                              strerror(errno));
    }
    snprintf(src, sizeof src, "%s/kernel.cpp", dir);
    snprintf(so, sizeof so, "%s/kernel.so", dir);
    kiln_status s = write_file(src, source, strlen(source));
    free(source);
    char *output = NULL;
    char **argv = s == KILN_OK ? build_argv(c, req, src, so) : NULL;
    if (s == KILN_OK && !argv) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    int code = 0;
    if (s == KILN_OK) s = kiln_cpu_spawn(argv, &output, &code);
    if (s == KILN_ERR_COMPILER_MISSING)
        kiln_append_error(" (KILN_CXX is %s)", getenv("KILN_CXX") ? getenv("KILN_CXX") : "not set");
    free(argv);
    if (s == KILN_OK && code != 0) {
        s = kiln_set_error(KILN_ERR_COMPILE, "%s exited with status %d", c->argv[0], code);
        *log = output;
        output = NULL;
    }
    unsigned char *so_data = NULL;
    size_t so_size = 0;
    if (s == KILN_OK) s = read_file(so, &so_data, &so_size);
    if (s == KILN_OK) {
        /* The largest frame, in KiB rounded up, rides in the flags' high bits. */
        size_t frame_kb = (frame_bytes(dir) + 1023) / 1024;
        if (frame_kb > KILN_CPU_BLOB_FRAME_KB_MAX) frame_kb = KILN_CPU_BLOB_FRAME_KB_MAX;
        unsigned flags = (barriers ? KILN_CPU_BLOB_BARRIERS : 0) | (unsigned)frame_kb
                                                                       << KILN_CPU_BLOB_FRAME_SHIFT;
        s = kiln_cpu_blob_write(out, flags, so_data, so_size);
    }
    if (s == KILN_OK && output && output[0]) { /* warnings */
        *log = output;
        output = NULL;
    }
    free(output);
    free(so_data);
    remove_dir(dir, src, so);
    return s;
}
