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

#include "backend/cpu/cpu_fission.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_pch.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/text.h"

extern const char kiln_embedded_kiln_cpu_fission[];
extern const char kiln_embedded_kiln_cpu_fission_warp[];

/* Module globals: per variable an exported function giving its address and
 * size (cpu_globals.c finds it by name). A function rather than exporting
 * the variable itself: the module stays -fvisibility=hidden, and static
 * variables, anonymous namespaces and C++ mangling need no special case. */
static void append_global_accessors(kiln_text *t, const kiln_compile_request *req) {
    if (req->global_count == 0) return;
    kiln_text_line_directive(t, "kiln-cpu-globals");
    for (int i = 0; i < req->global_count; i++) {
        char sym[KILN_CPU_GLOBAL_SYMBOL_BYTES];
        if (!kiln_cpu_global_symbol(req->global_names[i], sym, sizeof sym)) continue;
        kiln_text_printf(t,
                         "extern \"C\" __attribute__((__visibility__(\"default\"))) void *%s(unsigned long "
                         "long *bytes) { *bytes = sizeof(%s); return (void *)&(%s); }\n",
                         sym, req->global_names[i], req->global_names[i]);
    }
}

/* KILN_CPU_FISSION_BEGIN: paths per kernel, see cpu_fission.h */
static char *assemble_source(const kiln_compile_request *req, int fission, int pch,
                             kiln_cpu_prelude_kind prelude, int *barriers, kiln_cpu_kernel_plan *plans) {
    int module_barriers = 0;
    char *user = kiln_cpu_source_prepare(req, &module_barriers);
    if (!user) return NULL;
    kiln_text gen = {0};
    kiln_cpu_plan_kernels(user, req, module_barriers, fission, plans, &gen);
    kiln_text t = {0};
    if (pch)
        kiln_text_puts(&t, "#include \"" KILN_CPU_PCH_HEADER "\"\n");
    else
        kiln_cpu_prelude_text(&t, prelude);
    /* The fission templates go before the user's code: a user's #define
     * (B, end, ...) must not reach anything kiln writes. */
    if (gen.length) {
        kiln_text_line_directive(&t, "kiln_cpu_fission.cuh");
        kiln_text_puts(&t, kiln_embedded_kiln_cpu_fission);
        kiln_text_line_directive(&t, "kiln_cpu_fission_warp.cuh");
        kiln_text_puts(&t, kiln_embedded_kiln_cpu_fission_warp);
    }
    kiln_text_line_directive(&t, req->name ? req->name : "kernel.cu");
    kiln_text_puts(&t, user);
    free(user);
    if (gen.length) {
        kiln_text_line_directive(&t, "kiln-cpu-fission");
        kiln_text_add(&t, gen.data, gen.length);
    }
    t.failed |= gen.failed;
    kiln_text_free(&gen);
    kiln_text_line_directive(&t, "kiln-cpu-entry-points");
    *barriers = 0;
    for (int i = 0; i < req->kernel_count; i++) {
        const char *sym = req->kernel_names[i], *expr = req->kernel_exprs ? req->kernel_exprs[i] : sym;
        kiln_text_printf(&t, "KILN_EXPORT_SIGNATURE(%s, %s)\n", sym, expr);
        if (plans[i].path == KILN_CPU_PATH_FISSION) continue; /* exported with its body */
        *barriers |= plans[i].path == KILN_CPU_PATH_FIBERS;
        kiln_text_printf(&t, "%s(%s, %s)\n",
                         plans[i].path == KILN_CPU_PATH_FIBERS ? "KILN_CPU_EXPORT_THREAD"
                                                               : "KILN_CPU_EXPORT_FAST",
                         sym, expr);
    }
    append_global_accessors(&t, req);
    return kiln_text_take(&t);
}

/* One line per kernel: the path it took and why (`kiln compile --target cpu`). */
static void append_paths(char **log, const kiln_compile_request *req, const kiln_cpu_kernel_plan *plans,
                         const char *note) {
    static const char *const path_names[] = {"loop", "fission", "fibers"};
    kiln_text t = {0};
    if (*log) kiln_text_puts(&t, *log);
    if (note) kiln_text_puts(&t, note);
    for (int i = 0; i < req->kernel_count; i++)
        kiln_text_printf(&t, "kiln: CPU path of %s: %s (%s)\n",
                         req->kernel_exprs ? req->kernel_exprs[i] : req->kernel_names[i],
                         path_names[plans[i].path], plans[i].why);
    char *s = kiln_text_take(&t);
    if (s) {
        free(*log);
        *log = s;
    }
}
/* KILN_CPU_FISSION_END */

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
 * process. --as-needed: modules that call none of them do not depend on it.
 * -z defs: a symbol nothing defines (a function declared but never given a
 * body) fails the link, so that `kiln compile` refuses what dlopen would. */
static const char *const link_flags[] = {"-Wl,--as-needed", "-Wl,-z,defs",
#if defined(__x86_64__) && defined(__GLIBC__)
                                         "-lmvec",
#endif
                                         "-lm"};

/* --fast-compile: -O1, plus the pass that contracts a*b+c into an FMA
 * (GCC runs it from -O2 on): a module's quick build (src/kernel/tier_up.c)
 * must compute what its -O3 tier-up will, bit for bit. KILN_CPU_QUICK_BUILD
 * leaves out code that only makes the -O3 build faster, such as fission's
 * tree reductions in registers (kiln_cpu_fission.cuh), which doubled the
 * quick build of a reduction over extern __shared__ memory. */
static const char *const fast_flags[] = {"-O1", "-fexpensive-optimizations", "-DKILN_CPU_QUICK_BUILD"};

#define COUNT(a) (sizeof(a) / sizeof *(a))

void kiln_cpu_command_flags(char *out, size_t out_size) {
    size_t n = 0;
    if (out_size) out[0] = '\0';
    const char *const *lists[] = {fixed_flags, link_flags, fast_flags};
    const size_t counts[] = {COUNT(fixed_flags), COUNT(link_flags), COUNT(fast_flags)};
    for (size_t l = 0; l < COUNT(lists); l++)
        for (size_t i = 0; i < counts[l] && n < out_size; i++)
            n += (size_t)snprintf(out + n, out_size - n, "%s%s", n ? " " : "", lists[l][i]);
}

/* The compiler command and the flags that shape the code, without -D, -I,
 * inputs and outputs (also what the precompiled prelude is built with).
 * argv needs room for c->argc + COUNT(fixed_flags) + COUNT(fast_flags) + 2 words. */
static int base_args(const kiln_cpu_compiler *c, const kiln_compile_request *req, char **argv) {
    int k = 0;
    for (int i = 0; i < c->argc; i++) argv[k++] = c->argv[i];
    for (size_t i = 0; i < COUNT(fixed_flags); i++) argv[k++] = (char *)fixed_flags[i];
    if (req->debug) {
        argv[k++] = "-O0";
        argv[k++] = "-g";
    } else if (req->fast_compile)
        for (size_t i = 0; i < COUNT(fast_flags); i++) argv[k++] = (char *)fast_flags[i];
    else
        argv[k++] = "-O3";
    if (req->fast_math) argv[k++] = "-ffast-math";
    return k;
}

/* The compiler's command line (free the array only: the strings belong to
 * the compiler, the request, the tables above or the caller). pch_dir: the
 * precompiled prelude's folder, or NULL. */
static char **build_argv(const kiln_cpu_compiler *c, const kiln_compile_request *req, const char *src,
                         const char *so, const char *pch_dir, int object_only, const char *kiln_include) {
    size_t n = (size_t)c->argc + 2 * ((size_t)req->define_count + (size_t)req->include_count) +
               COUNT(fixed_flags) + COUNT(link_flags) + 16;
    char **argv = calloc(n, sizeof *argv);
    if (!argv) return NULL;
    int k = base_args(c, req, argv);
    /* -D and -I as separate words: no quoting, no string building. */
    for (int i = 0; i < req->define_count; i++) {
        argv[k++] = "-D";
        argv[k++] = (char *)req->defines[i];
    }
    if (pch_dir) {
        argv[k++] = "-Winvalid-pch"; /* kiln_cpu_pch_check reads what it says */
        argv[k++] = "-I";
        argv[k++] = (char *)pch_dir;
    }
    for (int i = 0; i < req->include_count; i++) {
        argv[k++] = "-I";
        argv[k++] = (char *)req->include_dirs[i];
    }
    if (kiln_include) { /* kiln's toolkit headers (cpu_headers.c), after the user's */
        argv[k++] = "-I";
        argv[k++] = (char *)kiln_include;
    }
    if (object_only) argv[k++] = "-c"; /* cpu_link.c links it */
    argv[k++] = "-o";
    argv[k++] = (char *)so;
    argv[k++] = (char *)src;
    if (!object_only) {
        if (c->linker) argv[k++] = (char *)c->linker;
        for (size_t i = 0; i < COUNT(link_flags); i++) argv[k++] = (char *)link_flags[i];
    }
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

static void remove_dir(const char *dir, const char *src, const char *so, const char *obj) {
    unlink(src);
    unlink(so);
    unlink(obj);
    (void)frame_bytes(dir); /* and any .su files left */
    rmdir(dir);
}

/* Appends text (may be NULL) to *dst (malloc'd or NULL); the log is
 * advisory, so a failed allocation keeps what was there. */
static void append_text(char **dst, const char *text) {
    if (!text || !text[0]) return;
    size_t a = *dst ? strlen(*dst) : 0, b = strlen(text);
    char *both = realloc(*dst, a + b + 1);
    if (both) {
        memcpy(both + a, text, b + 1);
        *dst = both;
    }
}

/* Links the object as cpu_link.c prepared: first lean (no C++ runtime,
 * -z defs), and when that fails, with the driver's full library list. The
 * linker's output joins the compiler's (*output), for warnings or the error. */
static kiln_status link_object(kiln_cpu_link *link, const kiln_cancel *cancel, char **output) {
    char *argv[KILN_CPU_LINK_MAX_WORDS + 1];
    char *text = NULL;
    int code = -1;
    kiln_cpu_link_lean(link, argv);
    kiln_status s = kiln_cpu_spawn_until(argv, cancel, &text, &code);
    if (s == KILN_OK && code != 0) {
        free(text);
        text = NULL;
        kiln_cpu_link_full(link, argv);
        s = kiln_cpu_spawn_until(argv, cancel, &text, &code);
    }
    if (s == KILN_OK && code != 0)
        s = kiln_set_error(KILN_ERR_COMPILE, "the linker %s exited with status %d", argv[0], code);
    if (s == KILN_OK) append_text(output, text);
    free(text);
    return s;
}

/* The log of a compiler that failed: its own words, and where it said
 * nothing or a signal ended it, what happened (the exit status or the
 * signal), so a compiler that dies silently never leaves an empty message. */
static void note_exit(char **output, const char *program, int code, const char *during) {
    int silent = !*output || !(*output)[strspn(*output, " \t\r\n")];
    if (!silent && code >= 0) return;
    char who[300], what[512], line[600];
    snprintf(who, sizeof who, "%s%s", program, during ? during : "");
    kiln_cpu_describe_exit(who, code, what, sizeof what);
    snprintf(line, sizeof line, "kiln: %s%s\n", what, code >= 0 ? " without printing anything" : "");
    append_text(output, line);
}

static kiln_status compile_once(const kiln_cpu_compiler *c, const kiln_compile_request *req, int fission,
                                kiln_cpu_kernel_plan *plans, kiln_blob *out, char **log) {
    *log = NULL;
    int barriers = 0;
    char *base[64], pch_dir[4096];
    /* --fast-compile (-O1) has a precompiled prelude of its own: GCC 12
     * takes the -O3 one across -O levels, but GCC 13 refuses it ("created
     * and used with differing settings of '-munroll-only-small-loops'",
     * which x86 turns on from -O2), and a refused header is given up on. */
    int base_count = base_args(c, req, base);
    kiln_cpu_prelude_kind prelude = kiln_cpu_prelude_for(req);
    int pch = kiln_cpu_pch_prepare(base, base_count, prelude, pch_dir, sizeof pch_dir);
    char *source = assemble_source(req, fission, pch, prelude, &barriers, plans);
    if (!source)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory assembling the CPU source");

    const char *tmp = getenv("TMPDIR");
    char dir[4096], src[4200], so[4200], obj[4200];
    snprintf(dir, sizeof dir, "%s/kiln-cpu-XXXXXX", (tmp && *tmp) ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        free(source);
        return kiln_set_error(KILN_ERR_IO, "cannot create a private temporary folder %s: %s", dir,
                              strerror(errno));
    }
    snprintf(src, sizeof src, "%s/kernel.cpp", dir);
    snprintf(so, sizeof so, "%s/kernel.so", dir);
    snprintf(obj, sizeof obj, "%s/kernel.o", dir);
    kiln_status s = write_file(src, source, strlen(source));
    free(source);
    char kiln_include[4400] = "";
    if (s == KILN_OK && kiln_cpu_headers_wanted(req))
        s = kiln_cpu_headers_write(dir, kiln_include, sizeof kiln_include);
    /* The linker run directly when the driver's link line is known
     * (cpu_link.c), else the driver links too. */
    char *link_words[COUNT(link_flags) + 1];
    int link_count = 0;
    if (c->linker) link_words[link_count++] = (char *)c->linker;
    for (size_t i = 0; i < COUNT(link_flags); i++) link_words[link_count++] = (char *)link_flags[i];
    kiln_cpu_link link;
    int direct = kiln_cpu_link_prepare(base, base_count, c->argc, link_words, link_count, obj, so, &link);
    char *output = NULL;
    char **argv = s == KILN_OK ? build_argv(c, req, src, direct ? obj : so, pch ? pch_dir : NULL, direct,
                                            kiln_include[0] ? kiln_include : NULL)
                               : NULL;
    if (s == KILN_OK && !argv) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    int code = 0;
    if (s == KILN_OK) s = kiln_cpu_spawn_until(argv, req->cancel, &output, &code);
    if (s == KILN_ERR_COMPILER_MISSING)
        kiln_append_error(" (KILN_CXX is %s)",
                          kiln_setting_string("KILN_CXX") ? kiln_setting_string("KILN_CXX") : "not set");
    free(argv);
    if (s == KILN_OK && pch && kiln_cpu_pch_check(pch_dir, output)) {
        /* Not an error of the user's code: the next compile rebuilds it. */
        char *note = NULL;
        kiln_text t = {0};
        kiln_text_puts(&t, "kiln: the precompiled CPU prelude was not used (GCC's reason above); it is "
                           "rebuilt on the next compile\n");
        note = kiln_text_take(&t);
        if (note && output) {
            char *both = malloc(strlen(output) + strlen(note) + 1);
            if (both) {
                strcpy(both, output);
                strcat(both, note);
                free(output);
                output = both;
            }
        }
        free(note);
    }
    if (s == KILN_OK && code != 0) {
        s = kiln_set_error(KILN_ERR_COMPILE, "%s exited with status %d", c->argv[0], code);
        note_exit(&output, c->argv[0], code, NULL);
        *log = output;
        output = NULL;
    }
    /* Read before the link: the object holds the user's code and kiln's
     * prelude only (no start files); without one, the module counts as
     * keeping state. */
    int stateless = 0;
    unsigned char *obj_data = NULL;
    size_t obj_size = 0;
    if (s == KILN_OK && direct) {
        if (read_file(obj, &obj_data, &obj_size) == KILN_OK)
            stateless = kiln_cpu_object_stateless(obj_data, obj_size);
        else
            kiln_clear_error();
        free(obj_data);
    }
    kiln_status linked = s == KILN_OK && direct ? link_object(&link, req->cancel, &output) : KILN_OK;
    if (linked != KILN_OK && req->cancel && atomic_load(&req->cancel->stop))
        s = linked; /* stopped, not failed: the link line stays */
    else if (linked != KILN_OK) {
        /* The remembered link line failed (a module that does not link, or
         * a stale or damaged cpu-link file): the driver links the object,
         * and its verdict and messages are the ones that count. */
        kiln_clear_error();
        char *link_out = NULL;
        argv = build_argv(c, req, obj, so, NULL, 0, NULL);
        s = argv ? kiln_cpu_spawn(argv, &link_out, &code)
                 : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        free(argv);
        append_text(&output, link_out);
        free(link_out);
        if (s == KILN_OK && code == 0) kiln_cpu_link_forget(&link);
        if (s == KILN_OK && code != 0) {
            s = kiln_set_error(KILN_ERR_COMPILE, "%s exited with status %d linking the module", c->argv[0],
                               code);
            note_exit(&output, c->argv[0], code, " (linking the module)");
            *log = output;
            output = NULL;
        }
    }
    if (direct) kiln_cpu_link_free(&link);
    unsigned char *so_data = NULL;
    size_t so_size = 0;
    if (s == KILN_OK) s = read_file(so, &so_data, &so_size);
    if (s == KILN_OK) {
        /* The largest frame, in KiB rounded up, rides in the flags' high bits. */
        size_t frame_kb = (frame_bytes(dir) + 1023) / 1024;
        if (frame_kb > KILN_CPU_BLOB_FRAME_KB_MAX) frame_kb = KILN_CPU_BLOB_FRAME_KB_MAX;
        unsigned flags = (barriers ? KILN_CPU_BLOB_BARRIERS : 0) | (stateless ? KILN_CPU_BLOB_STATELESS : 0) |
                         (unsigned)frame_kb << KILN_CPU_BLOB_FRAME_SHIFT;
        s = kiln_cpu_blob_write(out, flags, so_data, so_size);
    }
    if (s == KILN_OK && output && output[0]) { /* warnings */
        *log = output;
        output = NULL;
    }
    free(output);
    free(so_data);
    if (kiln_include[0]) kiln_cpu_headers_remove(kiln_include);
    remove_dir(dir, src, so, obj);
    return s;
}

/* KILN_CPU_FISSION_BEGIN */
kiln_status kiln_cpu_compile(const kiln_cpu_compiler *c, const kiln_compile_request *req, kiln_blob *out,
                             char **log) {
    *log = NULL;
    if (!req || !req->source)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "CPU compile: no source to compile");
    if (kiln_cpu_refuse(req->source, req->name ? req->name : "kernel.cu", log))
        return kiln_set_error(KILN_ERR_COMPILE, "the CPU backend cannot run this source");
    kiln_cpu_kernel_plan *plans = calloc((size_t)req->kernel_count + 1, sizeof *plans);
    if (!plans) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_status s = compile_once(c, req, 1, plans, out, log);
    int fission = 0;
    for (int i = 0; i < req->kernel_count; i++) fission |= plans[i].path == KILN_CPU_PATH_FISSION;
    const char *note = NULL;
    if (s == KILN_ERR_COMPILE && fission) {
        /* The transformer's output must never cost a kernel that compiles
         * on fibers: the same module again without it. */
        char *first_log = *log;
        kiln_blob retry = {0};
        kiln_status s2 = compile_once(c, req, 0, plans, &retry, log);
        if (s2 == KILN_OK) {
            kiln_clear_error();
            *out = retry;
            if (kiln_setting_string("KILN_CPU_FISSION_DUMP") && first_log) /* why, for the dump's reader */
                fprintf(stderr, "%s\n", first_log);
            free(first_log);
            s = KILN_OK;
            note = "kiln: the loop-fission code did not compile; every barrier kernel runs on fibers\n";
        } else {
            free(*log);
            *log = first_log;
        }
    }
    if (s == KILN_OK) append_paths(log, req, plans, note);
    free(plans);
    return s;
}
/* KILN_CPU_FISSION_END */
