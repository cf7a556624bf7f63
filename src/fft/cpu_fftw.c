/* cpu_fftw.c: the CPU provider: FFTW 3 (double: libfftw3, float: libfftw3f)
 * through dlopen, guru64 interface.
 *
 * Plans are made once per layout with a measured planner (FFTW_MEASURE
 * unless KILN_FFTW_PLANNER says otherwise) on scratch buffers of the same
 * extent and SIMD alignment as the arrays they will run on, so planning never
 * touches user data, and are run with the new-array execute functions
 * (thread-safe, unlike the planner, which takes one process-wide lock).
 * Multi-threaded on all online cores through libfftw3_threads when present
 * (KILN_FFTW_THREADS overrides the count). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dynlib.h"
#include "core/error.h"
#include "core/settings.h"
#include "fft/fft.h"

/* FFTW's fftw_iodim64 (fftw3.h): the same three ptrdiff_t. */
typedef struct fftw_dim {
    ptrdiff_t n, is, os;
} fftw_dim;

#define FFTW_MEASURE_FLAG 0U
#define FFTW_DESTROY_INPUT_FLAG (1U << 0)
#define FFTW_EXHAUSTIVE_FLAG (1U << 3)
#define FFTW_PATIENT_FLAG (1U << 5)
#define FFTW_ESTIMATE_FLAG (1U << 6)

/* One precision of FFTW. Pointer arguments are void * here: the double and
 * float libraries differ only in what they point to. */
typedef struct fftw_api {
    kiln_dynlib lib, threads_lib;
    void *(*plan_dft)(int, const fftw_dim *, int, const fftw_dim *, void *, void *, int, unsigned);
    void *(*plan_r2c)(int, const fftw_dim *, int, const fftw_dim *, void *, void *, unsigned);
    void *(*plan_c2r)(int, const fftw_dim *, int, const fftw_dim *, void *, void *, unsigned);
    void (*execute_dft)(void *, void *, void *);
    void (*execute_r2c)(void *, void *, void *);
    void (*execute_c2r)(void *, void *, void *);
    void (*destroy_plan)(void *);
    int (*alignment_of)(void *);
    void *(*malloc_)(size_t);
    void (*free_)(void *);
    int (*init_threads)(void);
    void (*plan_with_nthreads)(int);
    int (*import_wisdom)(const char *);
    int (*export_wisdom)(const char *);
    int threads;            /* what plan_with_nthreads is given; 1 without the threads library */
    char wisdom_path[1100]; /* "" when wisdom is not kept on disk */
} fftw_api;

static fftw_api api_double, api_float;
static pthread_once_t once_double = PTHREAD_ONCE_INIT, once_float = PTHREAD_ONCE_INIT;
/* FFTW's planner (and plan destruction) is not thread-safe: one lock for both
 * precisions, since they share FFTW's global planner state per library. */
static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;

static int thread_count(void) {
    const char *e = kiln_setting_string("KILN_FFTW_THREADS");
    if (e && *e) {
        long n = strtol(e, NULL, 10);
        if (n >= 1 && n <= 1024) return (int)n;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : (int)cores;
}

/* Measured plans cost seconds for large transforms; FFTW's wisdom (what it
 * measured) is kept in kiln's cache folder, one file per precision, so a
 * later process plans the same transforms at once. KILN_FFTW_WISDOM=0 turns
 * it off. A damaged file is ignored by FFTW's import. */
static void load_wisdom(fftw_api *api, int dbl) {
    api->wisdom_path[0] = '\0';
    if (!kiln_setting_flag("KILN_FFTW_WISDOM", 1) || !api->import_wisdom || !api->export_wisdom) return;
    kiln_cache_info info;
    if (kiln_cache_info_get(&info) != KILN_OK || !info.usable) return;
    int n = snprintf(api->wisdom_path, sizeof api->wisdom_path, "%s/fftw-wisdom-%s", info.path,
                     dbl ? "double" : "single");
    if (n <= 0 || (size_t)n >= sizeof api->wisdom_path) {
        api->wisdom_path[0] = '\0';
        return;
    }
    (void)api->import_wisdom(api->wisdom_path);
}

/* Writes the wisdom after a measured plan (planner lock held): a temporary
 * file renamed over the old one, so readers never see half a file. */
static void save_wisdom(fftw_api *api) {
    if (!api->wisdom_path[0]) return;
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", api->wisdom_path, (long)getpid());
    if (api->export_wisdom(tmp) && rename(tmp, api->wisdom_path) == 0) return;
    unlink(tmp);
}

static void load(fftw_api *api, int dbl) {
    const char *pfx = dbl ? "fftw_" : "fftwf_";
    static const char *const sonames_d[] = {"libfftw3.so.3", "libfftw3.so", NULL};
    static const char *const sonames_f[] = {"libfftw3f.so.3", "libfftw3f.so", NULL};
    static const char *const threads_d[] = {"libfftw3_threads.so.3", "libfftw3_threads.so", NULL};
    static const char *const threads_f[] = {"libfftw3f_threads.so.3", "libfftw3f_threads.so", NULL};
    const kiln_dynlib_spec spec = {
        dbl ? "FFTW (double)" : "FFTW (single)", dbl ? sonames_d : sonames_f,
        dbl ? "install FFTW 3 (Debian: apt-get install libfftw3-double3, or libfftw3-dev)"
            : "install FFTW 3 in single precision (Debian: apt-get install libfftw3-single3, or "
              "libfftw3-dev)",
        0, dbl ? "KILN_FFTW_LIBRARY" : "KILN_FFTWF_LIBRARY"};
    /* Names built once per precision; static storage for the table. */
    static char names[2][14][40];
    const char *base[14] = {"plan_guru64_dft",
                            "plan_guru64_dft_r2c",
                            "plan_guru64_dft_c2r",
                            "execute_dft",
                            "execute_dft_r2c",
                            "execute_dft_c2r",
                            "destroy_plan",
                            "alignment_of",
                            "malloc",
                            "free",
                            "init_threads",
                            "plan_with_nthreads",
                            "import_wisdom_from_filename",
                            "export_wisdom_to_filename"};
    for (int i = 0; i < 14; i++) snprintf(names[dbl][i], sizeof names[dbl][i], "%s%s", pfx, base[i]);
    char(*nm)[40] = names[dbl];
    const kiln_dynlib_symbol syms[] = {
        {nm[0], (void **)&api->plan_dft, 1},
        {nm[1], (void **)&api->plan_r2c, 1},
        {nm[2], (void **)&api->plan_c2r, 1},
        {nm[3], (void **)&api->execute_dft, 1},
        {nm[4], (void **)&api->execute_r2c, 1},
        {nm[5], (void **)&api->execute_c2r, 1},
        {nm[6], (void **)&api->destroy_plan, 1},
        {nm[7], (void **)&api->alignment_of, 1},
        {nm[8], (void **)&api->malloc_, 1},
        {nm[9], (void **)&api->free_, 1},
        /* Builds with threads in the main library have these here. */
        {nm[10], (void **)&api->init_threads, 0},
        {nm[11], (void **)&api->plan_with_nthreads, 0},
        {nm[12], (void **)&api->import_wisdom, 0},
        {nm[13], (void **)&api->export_wisdom, 0},
    };
    kiln_dynlib_load(&api->lib, &spec, syms, sizeof syms / sizeof syms[0]);
    api->threads = 1;
    if (api->lib.status != KILN_OK) return;
    if (!api->init_threads || !api->plan_with_nthreads) {
        const kiln_dynlib_spec tspec = {spec.label, dbl ? threads_d : threads_f, spec.install_hint, 0, NULL};
        const kiln_dynlib_symbol tsyms[] = {{nm[10], (void **)&api->init_threads, 1},
                                            {nm[11], (void **)&api->plan_with_nthreads, 1}};
        /* Optional: without it FFTW runs on one core. */
        kiln_dynlib_load(&api->threads_lib, &tspec, tsyms, 2);
    }
    if (api->init_threads && api->plan_with_nthreads && api->init_threads()) api->threads = thread_count();
    load_wisdom(api, dbl);
}

static void load_double(void) { load(&api_double, 1); }
static void load_float(void) { load(&api_float, 0); }

static kiln_status get_api(int dbl, fftw_api **out) {
    pthread_once(dbl ? &once_double : &once_float, dbl ? load_double : load_float);
    fftw_api *api = dbl ? &api_double : &api_float;
    kiln_status s = kiln_dynlib_check(&api->lib);
    if (s != KILN_OK) return s;
    *out = api;
    return KILN_OK;
}

static unsigned planner_flags(void) {
    static const char *const words[] = {"measure", "estimate", "patient", "exhaustive"};
    static const unsigned flags[] = {FFTW_MEASURE_FLAG, FFTW_ESTIMATE_FLAG, FFTW_PATIENT_FLAG,
                                     FFTW_EXHAUSTIVE_FLAG};
    return flags[kiln_setting_choice("KILN_FFTW_PLANNER", words, 4, 0)]; /* unset or unknown: measure */
}

typedef struct fftw_plan_box {
    fftw_api *api;
    void *plan;
} fftw_plan_box;

static size_t complex_bytes(int dbl) { return dbl ? 16 : 8; }

/* A scratch buffer of `bytes` whose start has FFTW alignment offset `align`. */
static char *scratch(fftw_api *api, size_t bytes, int align, void **base) {
    *base = api->malloc_(bytes + 64);
    return *base ? (char *)*base + align : NULL;
}

static kiln_status fftw_plan(kiln_context *ctx, const kiln_fft_layout *l, void **out) {
    (void)ctx;
    if (l->fuse) /* FFTW has no callbacks (product_callback is 0) */
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "FFTW cannot fuse the product into a transform");
    fftw_api *api = NULL;
    kiln_status s = get_api(l->double_precision, &api);
    if (s != KILN_OK) return s;
    fftw_dim dims[KILN_MAX_DIMS], loops[KILN_MAX_DIMS];
    for (int i = 0; i < l->rank; i++) dims[i] = (fftw_dim){l->n[i], l->is[i], l->os[i]};
    for (int i = 0; i < l->howmany_rank; i++) loops[i] = (fftw_dim){l->hn[i], l->his[i], l->hos[i]};
    size_t cb = complex_bytes(l->double_precision), rb = cb / 2;
    size_t in_item = l->kind == KILN_FFT_R2C ? rb : cb, out_item = l->kind == KILN_FFT_C2R ? rb : cb;
    void *in_base = NULL, *out_base = NULL;
    char *in = scratch(api, (size_t)l->in_extent * in_item, l->in_align, &in_base);
    char *outp = l->inplace ? in : scratch(api, (size_t)l->out_extent * out_item, l->out_align, &out_base);
    if (!in || !outp) {
        if (in_base) api->free_(in_base);
        if (out_base) api->free_(out_base);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "FFTW planning: no memory for %zu bytes of scratch",
                              (size_t)l->in_extent * in_item + (size_t)l->out_extent * out_item);
    }
    /* C2R may destroy its input (the front hands it a copy); the others keep it. */
    unsigned flags = planner_flags() | (l->kind == KILN_FFT_C2R ? FFTW_DESTROY_INPUT_FLAG : 0U);
    pthread_mutex_lock(&planner_lock);
    if (api->plan_with_nthreads) api->plan_with_nthreads(api->threads);
    void *p = NULL;
    if (l->kind == KILN_FFT_C2C)
        p = api->plan_dft(l->rank, dims, l->howmany_rank, loops, in, outp, l->sign, flags);
    else if (l->kind == KILN_FFT_R2C)
        p = api->plan_r2c(l->rank, dims, l->howmany_rank, loops, in, outp, flags);
    else
        p = api->plan_c2r(l->rank, dims, l->howmany_rank, loops, in, outp, flags);
    if (p && !(flags & FFTW_ESTIMATE_FLAG)) save_wisdom(api);
    pthread_mutex_unlock(&planner_lock);
    api->free_(in_base);
    if (out_base) api->free_(out_base);
    /* FFTW returns NULL for layouts it does not support; the front copies. */
    if (!p) return KILN_ERR_UNSUPPORTED;
    fftw_plan_box *box = malloc(sizeof *box);
    if (!box) {
        pthread_mutex_lock(&planner_lock);
        api->destroy_plan(p);
        pthread_mutex_unlock(&planner_lock);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    box->api = api;
    box->plan = p;
    *out = box;
    return KILN_OK;
}

static kiln_status fftw_execute(kiln_context *ctx, void *plan, const kiln_fft_layout *l, void *in, void *out,
                                kiln_stream *stream) {
    (void)ctx;
    (void)stream;
    fftw_plan_box *box = plan;
    fftw_api *api = box->api;
    /* The cache key holds the alignment, so a mismatch is kiln's bug; FFTW
     * would read misaligned vectors. */
    if (api->alignment_of(in) != l->in_align || api->alignment_of(out) != l->out_align)
        return kiln_set_error(KILN_ERR_INTERNAL, "FFTW plan made for alignment %d/%d run on %d/%d",
                              l->in_align, l->out_align, api->alignment_of(in), api->alignment_of(out));
    if (l->kind == KILN_FFT_C2C)
        api->execute_dft(box->plan, in, out);
    else if (l->kind == KILN_FFT_R2C)
        api->execute_r2c(box->plan, in, out);
    else
        api->execute_c2r(box->plan, in, out);
    return KILN_OK;
}

static void fftw_destroy(kiln_context *ctx, void *plan) {
    (void)ctx;
    fftw_plan_box *box = plan;
    if (!box) return;
    pthread_mutex_lock(&planner_lock);
    box->api->destroy_plan(box->plan);
    pthread_mutex_unlock(&planner_lock);
    free(box);
}

/* The offset of p from FFTW's SIMD alignment (0 when the library is missing:
 * planning then reports that). */
static int fftw_alignment(int dbl, const void *p) {
    pthread_once(dbl ? &once_double : &once_float, dbl ? load_double : load_float);
    fftw_api *api = dbl ? &api_double : &api_float;
    if (api->lib.status != KILN_OK) return 0;
    return api->alignment_of((void *)(uintptr_t)p);
}

/* No load here: each precision is a library of its own (libfftw3,
 * libfftw3f), loaded when a plan of that precision is first made, so a
 * missing single-precision library does not stop double transforms. */
const kiln_fft_provider kiln_fft_fftw = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "FFT",
             .name = "FFTW",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU)},
    .plan = fftw_plan,
    .execute = fftw_execute,
    .destroy = fftw_destroy,
    .alignment_of = fftw_alignment,
    .max_rank = 0,
    .capturable = 0,
};
