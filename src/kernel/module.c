/* module.c: source -> (disk cache | compiler) -> loaded module -> kernels. */
#include "kernel/module.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/text.h"
#include "jit/cache.h"
#include "jit/sha256.h"
#include "kernel/absent.h"
#include "kernel/expand.h"
#include "kernel/module_binary.h"
#include "kernel/options.h"
#include "kernel/tier_up.h"
#include "prof/prof.h"

static void note_unusable_cache(kiln_context *ctx, const kiln_cache_dir *dir) {
    pthread_mutex_lock(&ctx->lock);
    int first = !ctx->cache_warned;
    ctx->cache_warned = 1;
    pthread_mutex_unlock(&ctx->lock);
    if (first && !kiln_setting_string("KILN_QUIET"))
        fprintf(stderr, "kiln: not using the disk cache: %s\n", dir->reason);
}

/* Loads bin into m and finds every kernel the source defines, so that an
 * entry that passes its checksum but is not the module it should be (say,
 * written by a kiln whose entry points differed) fails here, where it can
 * still be rebuilt, rather than at kiln_module_kernel. */
static kiln_status load_module(kiln_context *ctx, kiln_module *m, const kiln_blob *bin, int from_cache) {
    kiln_status s = ctx->ops->module_load(ctx->state, bin, &m->impl);
    /* Only entries from the cache can be strangers; a fresh build is
     * checked at kiln_module_kernel as before. (Function handles
     * belong to the backend module and go with it.) */
    for (int i = 0; s == KILN_OK && from_cache && i < m->kernels.count; i++) {
        kiln_backend_function *fn = NULL;
        kiln_param_info params[KILN_MAX_PARAMS];
        int count = 0;
        /* by its symbol, as kiln_module_kernel asks: a template
         * instantiation's name ("scale<float>") is no symbol */
        s = ctx->ops->function_get(ctx->state, m->impl, m->kernels.symbols[i], &fn, params, KILN_MAX_PARAMS,
                                   &count);
    }
    if (s != KILN_OK && m->impl) {
        ctx->ops->module_unload(ctx->state, m->impl);
        m->impl = NULL;
    }
    return s;
}

/* Where the disk cache remembers the kernels that req's compile found
 * absent (absent.h): req's key at full optimisation (the kernels a build
 * has do not depend on it), under a tag of its own. */
static void absent_key(const kiln_compile_request *req, const char *compiler_id,
                       unsigned char out[KILN_CACHE_KEY_BYTES]) {
    kiln_compile_request r = *req;
    r.fast_compile = 0;
    unsigned char key[KILN_CACHE_KEY_BYTES];
    kiln_cache_key(&r, compiler_id, key);
    kiln_sha256_ctx c;
    kiln_sha256_init(&c);
    kiln_sha256_update(&c, "kiln absent kernels", 19);
    kiln_sha256_update(&c, key, sizeof key);
    kiln_sha256_final(&c, out);
}

/* Drops the kernels an earlier compile of this module found absent (their
 * names, one a line, under absent_at). */
static void drop_remembered_absent(const kiln_cache_dir *dir, const unsigned char *absent_at,
                                   kiln_module *m) {
    kiln_blob names = {0};
    int rejected = 0;
    if (!dir->usable || !kiln_cache_load(dir, absent_at, &names, &rejected)) return;
    unsigned char absent[KILN_MAX_KERNELS_PER_MODULE] = {0};
    int any = 0;
    for (int k = 0; k < m->kernels.count; k++) {
        size_t n = strlen(m->kernels.names[k]);
        for (const char *p = (const char *)names.data, *e = p + names.size; p < e;) {
            const char *nl = memchr(p, '\n', (size_t)(e - p));
            size_t len = nl ? (size_t)(nl - p) : (size_t)(e - p);
            if (len == n && memcmp(p, m->kernels.names[k], n) == 0) absent[k] = 1;
            p += len + 1;
        }
        any |= absent[k];
    }
    /* (a memory that would leave nothing is not trusted: compile and see) */
    int kept = 0;
    for (int k = 0; k < m->kernels.count; k++) kept += !absent[k];
    if (any && kept) kiln_kernel_list_drop(&m->kernels, absent);
    free(names.data);
}

/* After a failed compile: drops the kernels the compiler says the source
 * does not define (absent.h), their names into *names (one a line, for
 * the cache once the module without them has compiled); 1 when some were. */
static int drop_absent(kiln_module *m, kiln_text *names) {
    unsigned char absent[KILN_MAX_KERNELS_PER_MODULE];
    if (kiln_kernels_absent(kiln_last_error(), &m->kernels, absent) == 0) return 0;
    for (int k = 0; k < m->kernels.count; k++)
        if (absent[k]) kiln_text_printf(names, "%s\n", m->kernels.names[k]);
    kiln_kernel_list_drop(&m->kernels, absent);
    return 1;
}

/* Where compile_without_absent finds and leaves things. */
typedef struct absent_retry {
    const kiln_cache_dir *dir;
    const unsigned char *absent_at;
    unsigned char *key;
    kiln_blob *bin;
    int *hit;
    double *compile_ms;
} absent_retry;

/* After req's compile failed (kiln_last_error holds the log): when the
 * errors were kiln's references to kernels in #if sections that are off,
 * compiles the module without them (req and r->key follow) and, once that
 * compiled, has the cache remember them; else returns the error as it is. */
static kiln_status compile_without_absent(kiln_context *ctx, kiln_module *m, const char *source,
                                          const kiln_options *opts, kiln_compile_request *req, int quick,
                                          absent_retry *r) {
    kiln_text names = {0};
    if (!drop_absent(m, &names)) return KILN_ERR_COMPILE;
    double first_ms = *r->compile_ms;
    const char *name = req->name;
    kiln_module_request(ctx, &m->kernels, &m->globals, source, name, opts, req);
    req->fast_compile = req->fast_compile || quick;
    kiln_cache_key(req, ctx->compiler_id, r->key);
    kiln_status s =
        m->kernels.count
            ? kiln_module_obtain_binary(ctx, req, r->dir, r->key, 1, r->bin, r->hit, r->compile_ms)
            : kiln_set_error(KILN_ERR_NOT_FOUND,
                             "%s defines no __global__ function that the compiler sees "
                             "(all are in #if sections that are off)",
                             name);
    *r->compile_ms += first_ms;
    if (s == KILN_OK && r->dir->usable && !names.failed) {
        kiln_blob b = {(unsigned char *)names.data, names.length};
        kiln_cache_store(r->dir, r->absent_at, &b);
    }
    kiln_text_free(&names);
    return s;
}

/* A load that failed for a module packed from its prebuilt image (a
 * driver older than the toolkit that built it may refuse the image): the
 * compiler's build (or the disk cache's) instead, unless the image is
 * required. */
static kiln_status load_unpacked(kiln_context *ctx, kiln_module *m, const kiln_compile_request *req,
                                 const kiln_cache_dir *dir, const unsigned char *key, kiln_blob *bin,
                                 int *hit, double *compile_ms) {
    if (!kiln_setting_string("KILN_QUIET"))
        fprintf(stderr, "kiln: note: the prebuilt module %s could not be loaded (%s); compiling it\n",
                req->name, kiln_last_error());
    free(bin->data);
    bin->data = NULL;
    bin->size = 0;
    kiln_status s = kiln_module_obtain_binary(ctx, req, dir, key, 1, bin, hit, compile_ms);
    return s == KILN_OK ? kiln_context_note(ctx, load_module(ctx, m, bin, *hit)) : s;
}

/* tier_up: the program's own module, which may get a tier-up (tier_up.h);
 * prebuilt: kiln's own module's image built ahead of time, or NULL */
static kiln_status module_build(kiln_context *ctx, const char *source, const char *name, const char *options,
                                const char *include_dir, int tier_up, const char *const *requested,
                                int requested_count, const kiln_module_prebuilt *prebuilt,
                                kiln_module **out) {
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!source || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "module source or out is NULL");
    if (!name) name = "kernel.cu";

    kiln_module *m = calloc(1, sizeof *m);
    if (!m) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    atomic_init(&m->refs, 1);
    atomic_init(&m->tier_up_armed, 0);
    m->ctx = kiln_context_retain(ctx);
    m->holds_ctx = 1;
    m->name = strdup(name);
    kiln_options opts;
    /* The user's own #include files are inlined: their kernels are the
     * module's too (expand.h), and so are their variables. */
    char *expanded = NULL;
    s = kiln_options_parse(options, include_dir, &opts);
    if (s == KILN_OK) {
        s = kiln_discover_kernels(source, name, include_dir, &opts, &expanded, &m->kernels);
        if (s == KILN_OK && requested_count > 0 && !requested)
            s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%d kernel names requested, but names is NULL",
                               requested_count);
        for (int i = 0; s == KILN_OK && i < requested_count; i++)
            s = kiln_kernel_list_request(&m->kernels, requested[i]);
        if (s == KILN_OK) s = kiln_scan_globals(expanded ? expanded : source, &m->globals);
        if (s != KILN_OK) kiln_options_free(&opts);
    }
    if (s != KILN_OK) {
        free(expanded);
        kiln_module_release(m);
        return s;
    }
    if (expanded) source = expanded;

    kiln_compile_request req;
    kiln_module_request(ctx, &m->kernels, &m->globals, source, name, &opts, &req);

    kiln_cache_dir dir;
    kiln_cache_dir_resolve(&dir);
    if (!dir.usable) note_unusable_cache(ctx, &dir);
    unsigned char absent_at[KILN_CACHE_KEY_BYTES];
    absent_key(&req, ctx->compiler_id, absent_at);
    drop_remembered_absent(&dir, absent_at, m);
    kiln_module_request(ctx, &m->kernels, &m->globals, source, name, &opts, &req);
    unsigned char key[KILN_CACHE_KEY_BYTES];
    kiln_cache_key(&req, ctx->compiler_id, key);
    kiln_blob bin = {0};
    int hit = 0, quick = 0, packed = 0;
    double compile_ms = 0, load_ms = 0;
    s = kiln_module_obtain_prebuilt(ctx, &req, prebuilt, &bin, &packed);
    if (s == KILN_OK && !packed && tier_up && kiln_tier_up_module_wanted(ctx, &opts)) {
        /* The -O3 build when the cache has it, else the -O1 one (from the
         * cache or the compiler) and the -O3 build in the background. */
        hit = kiln_module_load_cached(ctx, req.name, &dir, key, &bin);
        if (!hit) {
            quick = 1;
            req.fast_compile = 1;
            kiln_cache_key(&req, ctx->compiler_id, key);
        }
    }
    /* A compile inside a graph capture would stall the capture for a
     * compile's time and tie a first-call path into the graph: refused,
     * unless the disk cache has the module already. */
    if (s == KILN_OK && !packed && !hit && kiln_capture_refuses_compile(ctx) &&
        !(hit = kiln_module_load_cached(ctx, req.name, &dir, key, &bin))) {
        char what[300];
        snprintf(what, sizeof what, "compiling %s (a first call)", req.name);
        s = kiln_capture_refuse(ctx, what);
    } else if (s == KILN_OK && !packed) {
        s = hit ? KILN_OK : kiln_module_obtain_binary(ctx, &req, &dir, key, 1, &bin, &hit, &compile_ms);
        if (s == KILN_ERR_COMPILE) {
            absent_retry r = {&dir, absent_at, key, &bin, &hit, &compile_ms};
            s = compile_without_absent(ctx, m, source, &opts, &req, quick, &r);
        }
    }
    if (s == KILN_OK) {
        double t0 = kiln_now_ms();
        /* a packed image is checked kernel by kernel as a cache entry is */
        s = kiln_context_note(ctx, load_module(ctx, m, &bin, hit || packed));
        load_ms = kiln_now_ms() - t0;
    }
    if (s != KILN_OK && packed && !prebuilt->required && !atomic_load(&ctx->dead)) {
        packed = 0;
        s = load_unpacked(ctx, m, &req, &dir, key, &bin, &hit, &compile_ms);
    }
    /* (a module refused for exceeding a limit is what it is, not a bad entry) */
    if (s != KILN_OK && hit && s != KILN_ERR_LAUNCH_CONFIG && !atomic_load(&ctx->dead)) {
        /* A cached entry that cannot be used is evicted and rebuilt, once;
         * a fresh build that fails to load is a real error. */
        if (!kiln_setting_string("KILN_QUIET"))
            fprintf(stderr, "kiln: note: the cached module for %s could not be loaded (%s); rebuilding it\n",
                    name, kiln_last_error());
        kiln_module_count_reject(ctx, name, "could not be loaded");
        kiln_cache_evict(&dir, key);
        free(bin.data);
        bin.data = NULL;
        bin.size = 0;
        s = kiln_module_obtain_binary(ctx, &req, &dir, key, 0, &bin, &hit, &compile_ms);
        if (s == KILN_OK) {
            double t0 = kiln_now_ms();
            s = kiln_context_note(ctx, load_module(ctx, m, &bin, hit));
            load_ms = kiln_now_ms() - t0;
        }
    }
    if (s != KILN_OK && bin.data) kiln_prefix_error(s, "loading %s: ", name);
    kiln_options_free(&opts);
    free(bin.data);
    if (s != KILN_OK) {
        free(expanded);
        kiln_module_release(m);
        return s;
    }
    pthread_mutex_lock(&ctx->lock);
    if (hit)
        ctx->jit.cache_hits++;
    else if (!packed) /* (a packed image ran no compiler) */
        ctx->jit.compiles++;
    ctx->jit.compile_ms += compile_ms;
    ctx->jit.load_ms += load_ms;
    pthread_mutex_unlock(&ctx->lock);
    if (KILN_PROF_ON(ctx)) kiln_prof_compile(ctx, name, hit || packed, compile_ms, load_ms);
    if (quick) {
        kiln_tier_up_module t = {m, m->impl, m->name, &m->kernels, &m->globals, &m->tier_up_armed};
        kiln_tier_up_module_arm(ctx, &t, source, options, include_dir);
    }
    free(expanded);
    *out = m;
    return KILN_OK;
}

kiln_status kiln_module_build(kiln_context *ctx, const char *source, const char *name, const char *options,
                              const char *include_dir, const kiln_module_prebuilt *prebuilt,
                              kiln_module **out) {
    return module_build(ctx, source, name, options, include_dir, 0, NULL, 0, prebuilt, out);
}

kiln_status kiln_module_from_source(kiln_context *ctx, const char *source, const char *name,
                                    const char *options, kiln_module **out) {
    return module_build(ctx, source, name, options, NULL, 1, NULL, 0, NULL, out);
}

kiln_status kiln_module_from_source_names(kiln_context *ctx, const char *source, const char *name,
                                          const char *options, const char *const *kernel_names, int count,
                                          kiln_module **out) {
    if (count < 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kernel name count %d is negative", count);
    return module_build(ctx, source, name, options, NULL, 1, kernel_names, count, NULL, out);
}

/* A kernel source file: a regular file of at most KILN_MAX_SOURCE_BYTES
 * (/dev/zero would otherwise be read until memory ran out, and a FIFO
 * would block). */
static kiln_status read_text_file(const char *path, char **out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return kiln_set_error(KILN_ERR_NOT_FOUND, "cannot open kernel source %s: %s", path, strerror(errno));
    struct stat st;
    kiln_status s = KILN_OK;
    if (fstat(fd, &st) != 0)
        s = kiln_set_error(KILN_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        s = kiln_set_error(KILN_ERR_IO, "%s is not a regular file; kernel sources must be", path);
    else if ((uint64_t)st.st_size > KILN_MAX_SOURCE_BYTES)
        s = kiln_set_error(KILN_ERR_IO, "%s is %lld bytes; kernel sources are limited to %zu bytes", path,
                           (long long)st.st_size, KILN_MAX_SOURCE_BYTES);
    char *buf = s == KILN_OK ? malloc((size_t)st.st_size + 1) : NULL;
    if (s == KILN_OK && !buf)
        s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory reading %s", path);
    size_t done = 0;
    while (s == KILN_OK && done < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + done, (size_t)st.st_size - done);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) s = kiln_set_error(KILN_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        if (r <= 0) break;
        done += (size_t)r;
    }
    close(fd);
    if (s != KILN_OK) {
        free(buf);
        return s;
    }
    /* the compiler would stop at a NUL and quietly drop what follows it
     * (every kernel after the byte), so such a file is not a source */
    const char *nul = memchr(buf, '\0', done);
    if (nul) {
        s = kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                           "%s has a NUL byte at offset %zu (of %zu bytes); kernel sources are text", path,
                           (size_t)(nul - buf), done);
        free(buf);
        return s;
    }
    buf[done] = '\0';
    *out = buf;
    return KILN_OK;
}

kiln_status kiln_module_from_file_names(kiln_context *ctx, const char *path, const char *options,
                                        const char *const *kernel_names, int count, kiln_module **out) {
    if (!path) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_module_from_file: path is NULL");
    if (count < 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kernel name count %d is negative", count);
    char *source = NULL;
    kiln_status s = read_text_file(path, &source);
    if (s != KILN_OK) return s;
    char *dir_copy = strdup(path);
    s = module_build(ctx, source, path, options, dir_copy ? dirname(dir_copy) : NULL, 1, kernel_names, count,
                     NULL, out);
    free(dir_copy);
    free(source);
    return s;
}

kiln_status kiln_module_from_file(kiln_context *ctx, const char *path, const char *options,
                                  kiln_module **out) {
    return kiln_module_from_file_names(ctx, path, options, NULL, 0, out);
}

kiln_module *kiln_module_retain(kiln_module *m) {
    atomic_fetch_add(&m->refs, 1);
    return m;
}

void kiln_module_release(kiln_module *m) {
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
    kiln_tier_up_module_stop(m->ctx, m);
    if (m->impl) m->ctx->ops->module_unload(m->ctx->state, m->impl);
    kiln_kernel_list_free(&m->kernels);
    kiln_global_list_free(&m->globals);
    free(m->name);
    if (m->holds_ctx) kiln_context_release(m->ctx);
    free(m);
}

void kiln_module_owned_by_context(kiln_module *m) {
    if (m->holds_ctx) kiln_context_release(m->ctx);
    m->holds_ctx = 0;
}

int kiln_module_kernel_count(const kiln_module *m) { return m ? m->kernels.count : 0; }
const char *kiln_module_kernel_name(const kiln_module *m, int i) {
    return (m && i >= 0 && i < m->kernels.count) ? m->kernels.names[i] : NULL;
}

/* kiln_signature.cuh records a vector pointee (float4 *) as {upper-case
 * lane class, lane size | lane count << 8}; the backends pass the record
 * through, and this turns it into KILN_PARAM_VECTOR with its lanes. */
static void decode_vector_pointee(kiln_param_info *p) {
    p->pointee_lane_cls = (kiln_param_class)0;
    p->pointee_lanes = 0;
    int c = (int)p->pointee_cls;
    if (p->cls != KILN_PARAM_POINTER || (c != 'I' && c != 'U' && c != 'F')) return;
    size_t lane = p->pointee_size & 255, lanes = p->pointee_size >> 8;
    p->pointee_cls = KILN_PARAM_VECTOR;
    p->pointee_lane_cls = (kiln_param_class)(c - 'A' + 'a');
    p->pointee_lanes = (int)lanes;
    p->pointee_size = lane * lanes;
}

kiln_status kiln_module_kernel(kiln_module *m, const char *kernel_name, kiln_kernel **out) {
    if (!m || !kernel_name || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_module_kernel: NULL argument");
    kiln_status s = kiln_context_check(m->ctx);
    if (s != KILN_OK) return s;
    int index = kiln_kernel_list_find(&m->kernels, kernel_name);
    if (index < 0) {
        kiln_set_error(KILN_ERR_NOT_FOUND, "no kernel '%s' in %s; its kernels are:", kernel_name, m->name);
        for (int i = 0; i < m->kernels.count; i++) kiln_append_error(" %s", m->kernels.names[i]);
        kiln_append_error(
            " (kernels in a namespace and template instantiations are named as in C++, 'ns::k', "
            "'k<float>'; the bare name works when only one kernel has it)");
        return KILN_ERR_NOT_FOUND;
    }
    kiln_kernel *k = calloc(1, sizeof *k);
    if (!k) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    k->name = strdup(m->kernels.names[index]);
    kiln_context *ctx = m->ctx;
    s = ctx->ops->function_get(ctx->state, m->impl, m->kernels.symbols[index], &k->impl, k->params,
                               KILN_MAX_PARAMS, &k->param_count);
    if (s == KILN_OK && k->param_count > KILN_MAX_PARAMS)
        s = kiln_set_error(KILN_ERR_UNSUPPORTED, "kernel %s has %d parameters; kiln supports %d", kernel_name,
                           k->param_count, KILN_MAX_PARAMS);
    for (int i = 0; s == KILN_OK && i < k->param_count; i++) decode_vector_pointee(&k->params[i]);
    kiln_kernel_attributes attrs;
    if (s == KILN_OK && ctx->ops->function_attributes &&
        ctx->ops->function_attributes(ctx->state, k->impl, &attrs) == KILN_OK)
        k->static_shared_bytes = attrs.shared_bytes;
    if (s != KILN_OK) {
        free(k->name);
        free(k);
        return kiln_context_note(ctx, s);
    }
    k->module = kiln_module_retain(m);
    *out = k;
    return KILN_OK;
}

kiln_status kiln_kernel_from_source(kiln_context *ctx, const char *source, const char *kernel_name,
                                    const char *options, kiln_kernel **out) {
    kiln_module *m = NULL;
    /* A template instantiation's name is requested: the source need not
     * instantiate it (the name of a kernel it has is found either way). */
    const char *requested[1] = {kernel_name};
    int template_name = kernel_name && strchr(kernel_name, '<');
    kiln_status s = module_build(ctx, source, NULL, options, NULL, 1, template_name ? requested : NULL,
                                 template_name, NULL, &m);
    if (s != KILN_OK) return s;
    s = kiln_module_kernel(m, kernel_name, out);
    kiln_module_release(m); /* the kernel holds its own reference */
    return s;
}

void kiln_kernel_release(kiln_kernel *k) {
    if (!k) return;
    kiln_module_release(k->module);
    free(k->name);
    free(k);
}

int kiln_kernel_param_count(const kiln_kernel *k) { return k ? k->param_count : -1; }
const char *kiln_kernel_name(const kiln_kernel *k) { return k ? k->name : NULL; }

kiln_status kiln_kernel_param(const kiln_kernel *k, int index, kiln_param_info *out) {
    if (!k || !out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_kernel_param: NULL argument");
    if (index < 0 || index >= k->param_count)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kernel %s has %d parameters; index %d is out of range", k->name,
                              k->param_count, index);
    *out = k->params[index];
    return KILN_OK;
}

kiln_status kiln_kernel_attributes_get(kiln_kernel *k, kiln_kernel_attributes *out) {
    if (!k || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_kernel_attributes_get: NULL argument");
    kiln_context *ctx = k->module->ctx;
    if (!ctx->ops->function_attributes)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the %s backend reports no kernel attributes",
                              ctx->ops->name);
    return ctx->ops->function_attributes(ctx->state, k->impl, out);
}
