/* cpu_module.c: loading a compiled CPU module and finding its kernels.
 *
 * The shared object goes into an anonymous memory file (memfd) and is opened
 * through /proc/self/fd, so nothing touches the disk; where that fails, a
 * file in a private 0700 temporary folder, removed right after dlopen.
 *
 * dlopen treats a path it has already loaded as the same object, so the
 * memfd stays open as long as the module is loaded: no other module can get
 * its /proc/self/fd/N name meanwhile. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

static int write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

static void *open_from_memfd(const unsigned char *so, size_t n, int *fd_out) {
    int fd = memfd_create("kiln-cpu-module", MFD_CLOEXEC);
    if (fd < 0) return NULL;
    void *h = NULL;
    if (write_all(fd, so, n)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (h)
        *fd_out = fd;
    else
        close(fd);
    return h;
}

static void *open_from_temp_file(const unsigned char *so, size_t n) {
    const char *tmp = getenv("TMPDIR");
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/kiln-cpu-XXXXXX", (tmp && *tmp) ? tmp : "/tmp");
    if (!mkdtemp(dir)) return NULL; /* mkdtemp makes it 0700 */
    snprintf(path, sizeof path, "%s/module.so", dir);
    void *h = NULL;
    FILE *f = fopen(path, "wb");
    if (f) {
        int ok = fwrite(so, 1, n, f) == n;
        if (fclose(f) == 0 && ok) h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        unlink(path);
    }
    rmdir(dir);
    return h;
}

/* Bytes of thread-local storage the shared object asks for (its PT_TLS
 * segment), where static __shared__ variables live; 0 if none or not a
 * 64-bit ELF. */
static uint64_t tls_bytes(const unsigned char *so, size_t n) {
    if (n < sizeof(Elf64_Ehdr) || memcmp(so, ELFMAG, SELFMAG) != 0 || so[EI_CLASS] != ELFCLASS64) return 0;
    Elf64_Ehdr eh;
    memcpy(&eh, so, sizeof eh);
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        uint64_t off = eh.e_phoff + (uint64_t)i * eh.e_phentsize;
        Elf64_Phdr ph;
        if (eh.e_phentsize < sizeof ph || off > n || n - off < sizeof ph) return 0;
        memcpy(&ph, so + off, sizeof ph);
        if (ph.p_type == PT_TLS) return ph.p_memsz;
    }
    return 0;
}

/* Touches the module's thread-local storage (its __shared__ variables) on
 * one worker. glibc allocates a dlopen'ed module's TLS on a thread's first
 * access and aborts the process if that allocation fails; done here, at
 * load, it happens while memory is still there, not in the middle of a
 * launch after the program has filled memory with arrays. */
static void warm_tls(void *job, int participant) {
    (void)participant;
    kiln_backend_module *m = job;
    unsigned where[6];
    m->where(where);
}

kiln_status kiln_cpu_module_load(kiln_backend_state *st, const kiln_blob *binary, kiln_backend_module **out) {
    unsigned flags = 0;
    const unsigned char *so = NULL;
    size_t so_size = 0;
    kiln_status s = kiln_cpu_blob_read(binary, &flags, &so, &so_size);
    if (s != KILN_OK) return s;
    /* Static __shared__ memory is the module's thread-local storage: refuse
     * what CUDA refuses (48 KiB per block) before dlopen, which would abort
     * the process allocating gigabytes of it per thread. kiln's own
     * thread_locals (a few indices) get a little room on top. */
    uint64_t tls = tls_bytes(so, so_size);
    if (tls > KILN_CPU_SHARED_BYTES + KILN_CPU_TLS_OVERHEAD)
        return kiln_set_error(
            KILN_ERR_LAUNCH_CONFIG,
            "the module's static __shared__ memory is %llu bytes; CUDA allows at most %u bytes "
            "(48 KiB) of static shared memory per block (use dynamic shared memory, "
            "extern __shared__, for more)",
            (unsigned long long)(tls > KILN_CPU_TLS_OVERHEAD ? tls - KILN_CPU_TLS_OVERHEAD : tls),
            KILN_CPU_SHARED_BYTES);
    int fd = -1;
    void *h = open_from_memfd(so, so_size, &fd);
    if (!h) h = open_from_temp_file(so, so_size);
    if (!h) {
        const char *why = dlerror();
        return kiln_set_error(KILN_ERR_IO, "cannot load the compiled CPU module (%zu bytes): %s", so_size,
                              why ? why : "no memfd and no writable temporary folder");
    }
    const int *abi = dlsym(h, "kiln_cpu_abi_version");
    kiln_cpu_begin_fn begin = NULL;
    void *sym = dlsym(h, "kiln_cpu_begin");
    memcpy(&begin, &sym, sizeof begin); /* object to function pointer, as POSIX allows */
    if (!abi || *abi != KILN_CPU_ABI_VERSION || !begin) {
        dlclose(h);
        if (fd >= 0) close(fd);
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "the CPU module does not speak ABI %d (it has %s); rebuild it",
                              KILN_CPU_ABI_VERSION, abi ? "another version" : "no kiln_cpu_abi_version");
    }
    kiln_backend_module *m = calloc(1, sizeof *m);
    if (!m) {
        dlclose(h);
        if (fd >= 0) close(fd);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    m->handle = h;
    m->fd = fd;
    m->barriers = (flags & KILN_CPU_BLOB_BARRIERS) != 0;
    m->stateless = (flags & KILN_CPU_BLOB_STATELESS) != 0;
    m->frame_bytes = (size_t)(flags >> KILN_CPU_BLOB_FRAME_SHIFT) * 1024;
    m->begin = begin;
    sym = dlsym(h, "kiln_cpu_where");
    memcpy(&m->where, &sym, sizeof sym);

    pthread_mutex_init(&m->lock, NULL);
    if (m->where && st && st->pool) {
        pthread_mutex_lock(&st->launch_lock); /* the pool runs one job at a time */
        kiln_cpu_pool_run(st->pool, warm_tls, m, 0);
        pthread_mutex_unlock(&st->launch_lock);
    }
    *out = m;
    return KILN_OK;
}

void kiln_cpu_module_unload(kiln_backend_state *st, kiln_backend_module *m) {
    (void)st;
    if (!m) return;
    for (kiln_backend_function *f = m->functions, *next; f; f = next) {
        next = f->next;
        free(f->name);
        free(f);
    }
    pthread_mutex_destroy(&m->lock);
    dlclose(m->handle);
    if (m->fd >= 0) close(m->fd);
    free(m);
}

static void *symbol(void *h, const char *prefix, const char *name) {
    char buf[1024];
    if ((size_t)snprintf(buf, sizeof buf, "%s%s", prefix, name) >= sizeof buf) return NULL;
    return dlsym(h, buf);
}

/* Records as kiln_signature.cuh writes them: record 0 holds the count. */
static int read_params(const unsigned char *sig, kiln_param_info *params, int max_params) {
    int count = sig[0];
    for (int i = 0; i < count && i < max_params; i++) {
        const unsigned char *r = sig + 6 * (i + 1);
        params[i].cls = (kiln_param_class)r[0];
        params[i].size = (size_t)r[1] | (size_t)r[2] << 8;
        params[i].pointee_cls = (kiln_param_class)(r[0] == 'p' ? r[3] : 0);
        params[i].pointee_size = r[0] == 'p' ? ((size_t)r[4] | (size_t)r[5] << 8) : 0;
    }
    return count;
}

int kiln_cpu_entries_find(void *handle, const char *name, kiln_backend_function *f) {
    /* Each kernel exports the entry of the path it took (cpu_fission.h):
     * the loop and fission entries share one signature. */
    int fibers = 0;
    void *entry = symbol(handle, "kiln_cpu_fast_", name);
    if (!entry) entry = symbol(handle, "kiln_cpu_fis_", name);
    if (!entry) fibers = (entry = symbol(handle, "kiln_cpu_thread_", name)) != NULL;
    f->fast = f->probe = NULL;
    f->one = f->thread = NULL;
    if (!entry) return 0;
    if (fibers)
        memcpy(&f->thread, &entry, sizeof entry);
    else {
        memcpy(&f->fast, &entry, sizeof entry);
        void *probe = symbol(handle, "kiln_cpu_probe_", name);
        memcpy(&f->probe, &probe, sizeof probe);
        void *one = symbol(handle, "kiln_cpu_one_", name);
        memcpy(&f->one, &one, sizeof one);
    }
    return 1;
}

kiln_status kiln_cpu_function_get(kiln_backend_state *st, kiln_backend_module *m, const char *name,
                                  kiln_backend_function **out, kiln_param_info *params, int max_params,
                                  int *param_count) {
    (void)st;
    pthread_mutex_lock(&m->lock); /* m->handle changes under it (module_tier_up) */
    const unsigned char *sig = symbol(m->handle, "kiln_sig_", name);
    kiln_backend_function found;
    int entry = kiln_cpu_entries_find(m->handle, name, &found);
    if (!sig || !entry) {
        pthread_mutex_unlock(&m->lock);
        return kiln_set_error(KILN_ERR_NOT_FOUND,
                              "the CPU module has no kernel '%s' (expected symbols kiln_sig_%s and "
                              "kiln_cpu_fast_%s, kiln_cpu_fis_%s or kiln_cpu_thread_%s)",
                              name, name, name, name, name);
    }
    *param_count = read_params(sig, params, max_params);
    kiln_backend_function *f = m->functions;
    while (f && strcmp(f->name, name) != 0) f = f->next;
    if (!f && (f = calloc(1, sizeof *f)) != NULL) {
        f->name = strdup(name);
        if (!f->name) {
            free(f);
            f = NULL;
        } else {
            f->module = m;
            f->fast = found.fast;
            f->probe = found.probe;
            f->one = found.one;
            f->thread = found.thread;
            f->param_count = *param_count;
            for (int i = 0; i < *param_count && i < max_params && i < 128; i++)
                f->pointee_size[i] =
                    (unsigned short)(params[i].cls == KILN_PARAM_POINTER ? params[i].pointee_size : 0);
            for (int i = 0; i < *param_count && i < max_params && i < 128; i++)
                f->param_size[i] = (unsigned short)params[i].size;
            f->next = m->functions;
            m->functions = f;
        }
    }
    pthread_mutex_unlock(&m->lock);
    if (!f) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    *out = f;
    return KILN_OK;
}

kiln_status kiln_cpu_function_attributes(kiln_backend_state *st, kiln_backend_function *fn,
                                         kiln_kernel_attributes *out) {
    (void)st;
    (void)fn;
    /* Static __shared__ variables are thread_locals of the module: their size
     * is not recorded per kernel, so 0 (unknown) is reported. */
    memset(out, 0, sizeof *out);
    out->max_threads_per_block = KILN_CPU_MAX_THREADS_PER_BLOCK;
    return KILN_OK;
}
