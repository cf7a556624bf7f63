/* settings.c: the table of kiln's environment variables (settings.h). */
#include "core/settings.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Sorted by the part that reads them, as docs/environment.md is. */
static const kiln_setting table[] = {
    /* contexts and the command line */
    {"KILN_TARGET", KILN_SETTING_CHOICE, "auto",
     "backend of contexts opened with \"auto\": auto, cpu, cuda or cuda:N"},
    {"KILN_QUIET", KILN_SETTING_FLAG, "unset",
     "set (to anything): no notices on stderr (GPU fallback, unusable cache, failed tier-ups)"},
    {"KILN_COPY_THREADS", KILN_SETTING_INT, "online CPUs, at most 16",
     "threads that share a large host memory copy (1 to 64)"},
    {"KILN_BENCH", KILN_SETTING_PATH, "kiln_bench beside kiln, else on PATH",
     "the program `kiln bench` runs"},
    {"KILN_DEMO_IMAGE", KILN_SETTING_PATH, "a generated image",
     "the PNG the FFT convolution demo reads (kiln demo --image sets it)"},
    /* compiling and the disk cache */
    {"KILN_CACHE_DIR", KILN_SETTING_PATH, "$XDG_CACHE_HOME/kiln, else ~/.cache/kiln",
     "folder of the disk cache of compiled modules"},
    {"KILN_FAST_COMPILE", KILN_SETTING_FLAG, "1",
     "0: kiln's own first-call kernels are compiled fully optimised at once"},
    {"KILN_TIER_UP", KILN_SETTING_FLAG, "1",
     "0: no tier-up for ufuncs and gufuncs: the hand-over to a call's own kernel compiles in the call"},
    {"KILN_CPU_TIERS", KILN_SETTING_FLAG, "1",
     "0: no tier-up on the CPU backend: a program's modules compile at -O3 at once (no -O1 quick build)"},
    /* the CPU backend */
    {"KILN_NUM_THREADS", KILN_SETTING_INT, "online CPUs",
     "worker threads of the CPU backend, and OpenBLAS's threads (1 to 4096)"},
    {"KILN_CPU_STACK_KB", KILN_SETTING_INT, "64",
     "stack of each fiber that runs a CPU thread of a block, in KiB (1 to 1048576)"},
    {"KILN_CPU_CHECKED", KILN_SETTING_FLAG, "0",
     "1: every CPU buffer between guard pages, so out-of-bounds accesses fault"},
    {"KILN_CXX", KILN_SETTING_TEXT, "c++",
     "host C++ compiler command of the CPU backend (\"ccache g++\" works)"},
    {"KILN_CPU_LINKER", KILN_SETTING_CHOICE, "gold or lld when found",
     "default: link modules with the compiler's own linker"},
    {"KILN_CPU_LINK", KILN_SETTING_CHOICE, "direct",
     "driver: link each module through the compiler driver, not the linker alone"},
    {"KILN_CPU_PCH", KILN_SETTING_FLAG, "1", "0: no precompiled header of the CPU prelude"},
    {"KILN_CPU_LIGHT_PRELUDE", KILN_SETTING_FLAG, "1", "0: every CPU module gets the full prelude"},
    {"KILN_COMPILE_TIMEOUT_S", KILN_SETTING_INT, "300",
     "seconds a host compile may run before it is stopped (1 to 86400)"},
    {"KILN_CPU_FISSION_DUMP", KILN_SETTING_FLAG, "unset",
     "set (to anything): print kernels rewritten by loop fission to stderr"},
    /* the CUDA backend */
    {"KILN_CUDA_LIGHT_PRELUDE", KILN_SETTING_FLAG, "1",
     "0: every CUDA module gets the complex types, needed or not"},
    {"KILN_NVRTC_WARMUP", KILN_SETTING_FLAG, "1", "0: NVRTC is not loaded in the background at start"},
    /* ufuncs and gufuncs */
    {"KILN_UFUNC_VECTOR_MIN", KILN_SETTING_INT, "8388608",
     "elements from which a contiguous CUDA ufunc call takes several elements per thread"},
    {"KILN_UFUNC_GRID_WAVES", KILN_SETTING_INT, "0",
     "caps a CUDA ufunc grid at this many blocks per multiprocessor (0: no cap)"},
    {"KILN_UFUNC_MIXED", KILN_SETTING_FLAG, "1", "0: no mixed scalar/array ufunc kernels"},
    {"KILN_UFUNC_MIXED_LIMIT", KILN_SETTING_INT, "67108864",
     "elements a CUDA mixed kernel serves before the call's own kernel is compiled"},
    {"KILN_GUFUNC_ANY_LIMIT", KILN_SETTING_INT, "67108864",
     "elements a gufunc's any-layout kernel serves (0: none are compiled)"},
    /* libraries */
    {"KILN_BLAS_SMALL_MAX_DIM", KILN_SETTING_INT, "per dtype and backend (measured)",
     "largest dimension served by kiln's small-matrix kernel instead of the vendor's (0 to 32)"},
    {"KILN_BLAS_SMALL_TILE", KILN_SETTING_CHOICE, "4x4 (complex128 2x2)",
     "C elements a thread of kiln's small-matrix kernel computes, RxC with R and C each 1, 2, 4 or 8"},
    {"KILN_BLAS_SMALL_MIN_BLOCKS", KILN_SETTING_INT, "3 for float32, else 2",
     "blocks of kiln's small-matrix kernel a multiprocessor should hold: caps its registers (1 to 8)"},
    {"KILN_BLAS_SMALL_PER_BLOCK", KILN_SETTING_INT, "about 256 threads' worth",
     "products a block of kiln's small-matrix kernel takes at a time (1 to 1024; fewer where shared memory "
     "ends)"},
    {"KILN_OPENBLAS_LIB", KILN_SETTING_PATH, "searched", "OpenBLAS library to load"},
    {"KILN_CUBLAS_LIB", KILN_SETTING_PATH, "searched", "cuBLAS library to load"},
    {"KILN_FFTW_LIBRARY", KILN_SETTING_PATH, "searched", "FFTW (double precision) library to load"},
    {"KILN_FFTWF_LIBRARY", KILN_SETTING_PATH, "searched", "FFTW (single precision) library to load"},
    {"KILN_FFTW_THREADS", KILN_SETTING_INT, "online CPUs", "threads of FFTW's plans (1 to 1024)"},
    {"KILN_FFTW_PLANNER", KILN_SETTING_CHOICE, "measure",
     "FFTW's planner: estimate, measure, patient or exhaustive"},
    {"KILN_SORT_GPU", KILN_SETTING_CHOICE, "auto",
     "CUDA sort kernels: auto (CUB's through NVRTC where they compile, else kiln's), cub, own"},
    {"KILN_SORT_CUB_PREBUILT", KILN_SETTING_CHOICE, "auto",
     "CUB's float32 sort kernels built by nvcc with kiln, on sm_90: auto (where built), on (or fail), "
     "off (NVRTC)"},
    {"KILN_SORT_TILE_ITEMS", KILN_SETTING_INT, "16",
     "keys per thread of a CUDA sort tile of 256 threads (4 to 32; halved for 8-byte keys or values)"},
    {"KILN_SCAN_COLUMN_WIDTH", KILN_SETTING_INT, "64",
     "scans per block of a CUDA column scan (32 to 1024, a multiple of 32)"},
    {"KILN_SCAN_COLUMN_BYTES", KILN_SETTING_INT, "256",
     "bytes of a chunk each thread of a CUDA column scan holds in registers (32 to 1024)"},
    {"KILN_SCAN_COLUMN_GROUPS", KILN_SETTING_INT, "4",
     "row groups per block of a CUDA column scan: rows chained inside a block (1 to 16)"},
    {"KILN_FFTW_WISDOM", KILN_SETTING_FLAG, "1", "0: FFTW's wisdom is not kept in the cache folder"},
    {"KILN_FFT_MAX_RANK", KILN_SETTING_INT, "the provider's",
     "lowers the dims one FFT pass transforms (a testing knob)"},
    {"KILN_FFT_FUSE", KILN_SETTING_CHOICE, "auto",
     "kiln_fft_convolve's fused product: auto, on (or fail), off, callback, rows or columns"},
    {"KILN_FFT_STRIP_SPEC", KILN_SETTING_CHOICE, "auto",
     "where the fused convolution's strip kernel reads the other spectrum: auto, shared, global or fft "
     "(for tuning)"},
    {"KILN_FFT_STRIP_LAYOUT", KILN_SETTING_CHOICE, "auto",
     "how the fused convolution's column strip reads columns: auto or transposed (through transposed row "
     "transforms), natural (in place; for tuning)"},
    {"KILN_FFT_STRIP_WIDTH", KILN_SETTING_INT, "a row, or 32 bytes of a row for columns",
     "lines a block of the fused convolution's strip kernel takes (1, 2, 4 or 8; for tuning)"},
    {"KILN_CUFFT_LIBRARY", KILN_SETTING_PATH, "searched", "cuFFT library to load"},
    {"KILN_CURAND_LIBRARY", KILN_SETTING_PATH, "searched", "cuRAND library to load"},
    {"KILN_RNG_MRG_CUDA", KILN_SETTING_CHOICE, "auto",
     "MRG32k3a fills on CUDA: auto or own (kiln's kernel), curand (cuRAND's, where it loads)"},
    {"KILN_RNG_MRG_STEPS", KILN_SETTING_INT, "chosen per fill",
     "steps of a logical thread per GPU thread in kiln's MRG32k3a kernel (1 to 2^24; for tuning)"},
    {"KILN_RNG_MRG_BLOCK", KILN_SETTING_INT, "256",
     "threads per block of kiln's MRG32k3a kernel: 64, 128, 256, 512 or 1024 (for tuning)"},
    {"KILN_RNG_MRG_REGS", KILN_SETTING_INT, "32; 64 for normals",
     "register budget of kiln's MRG32k3a kernel: 32 (2048 threads per SM) or 64 (for tuning)"},
    {"KILN_RNG_MRG_STEP", KILN_SETTING_CHOICE, "auto",
     "kiln's MRG32k3a step: auto (fp64 where doubles are fast), fp64 (component 2 in doubles), int; same "
     "values"},
    {"KILN_CUSPARSE_LIBRARY", KILN_SETTING_PATH, "searched", "cuSPARSE library to load"},
    /* collectives */
    {"KILN_COMM_TIMEOUT", KILN_SETTING_NUMBER, "300",
     "seconds a collective may wait for its peers before the communicator is broken"},
    {"KILN_NO_MPI", KILN_SETTING_FLAG, "0", "1: behave as a kiln built without MPI"},
    {"KILN_MPI_PLUGIN", KILN_SETTING_PATH, "searched", "kiln's MPI plugin to load"},
    {"KILN_NCCL_LIBRARY", KILN_SETTING_PATH, "searched", "NCCL library to load"},
    /* the profiler */
    {"KILN_PROFILE", KILN_SETTING_FLAG, "0",
     "1: print a profile of kernels, copies and compiles at kiln_close (0, off, no: off)"},
    {"KILN_PROFILE_OUT", KILN_SETTING_PATH, "stderr", "file the profile is appended to"},
    {"KILN_PROFILE_TIMER", KILN_SETTING_CHOICE, "auto", "device timer: auto, events or cupti"},
    {"KILN_TRACE", KILN_SETTING_PATH, "unset", "write a Chrome trace (Perfetto) to this file at kiln_close"},
    /* dense solvers (src/linalg) */
    {"KILN_LAPACKE_LIB", KILN_SETTING_PATH, "searched", "LAPACKE library to load (the CPU's dense solvers)"},
    {"KILN_CUSOLVER_LIB", KILN_SETTING_PATH, "searched", "cuSOLVER library to load (CUDA's dense solvers)"},
    {"KILN_CHOLESKY_FACTOR", KILN_SETTING_CHOICE, "auto",
     "the triangle kiln_cholesky has LAPACK or cuSOLVER factor: auto (the provider's faster), lower or "
     "upper"},
    {"KILN_LINALG_HOST_LOOPS", KILN_SETTING_FLAG, "1",
     "0: the CPU's dense solvers lay out their matrices with kiln's kernels, as on CUDA (for testing)"},
};

const kiln_setting *kiln_settings(int *count) {
    *count = (int)(sizeof table / sizeof table[0]);
    return table;
}

const kiln_setting *kiln_setting_find(const char *name) {
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

const char *kiln_setting_string(const char *name) {
    assert(kiln_setting_find(name) && "a KILN_ variable missing from the settings table");
    return getenv(name);
}

int kiln_setting_flag(const char *name, int fallback) {
    const char *v = kiln_setting_string(name);
    if (!v || !*v) return fallback;
    return strcmp(v, "0") != 0;
}

long kiln_setting_int(const char *name, long min, long max, long fallback) {
    const char *v = kiln_setting_string(name);
    if (!v || !*v) return fallback;
    char *end = NULL;
    long n = strtol(v, &end, 10);
    return *end == '\0' && n >= min && n <= max ? n : fallback;
}

int kiln_setting_choice(const char *name, const char *const *words, int count, int fallback) {
    const char *v = kiln_setting_string(name);
    for (int i = 0; v && i < count; i++)
        if (strcmp(v, words[i]) == 0) return i;
    return fallback;
}

/* ---- The public view (kiln.h), for `kiln info`. */

int kiln_setting_count(void) { return (int)(sizeof table / sizeof table[0]); }

static const char *type_name(kiln_setting_type t) {
    switch (t) {
    case KILN_SETTING_FLAG: return "flag";
    case KILN_SETTING_INT: return "integer";
    case KILN_SETTING_NUMBER: return "number";
    case KILN_SETTING_CHOICE: return "choice";
    case KILN_SETTING_TEXT: return "text";
    case KILN_SETTING_PATH: return "path";
    }
    return "?";
}

kiln_status kiln_setting_get(int index, kiln_setting_info *out) {
    int count = kiln_setting_count();
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_setting_get: out is NULL");
    if (index < 0 || index >= count)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_setting_get: index %d is not in 0..%d", index,
                              count - 1);
    out->name = table[index].name;
    out->type = type_name(table[index].type);
    out->default_value = table[index].default_value;
    out->doc = table[index].doc;
    out->value = getenv(table[index].name);
    return KILN_OK;
}

const char *kiln_setting_value(const char *name) {
    if (!kiln_setting_find(name)) {
        kiln_set_error(KILN_ERR_NOT_FOUND, "%s is not a variable kiln reads (kiln info lists them)",
                       name ? name : "NULL");
        return NULL;
    }
    return getenv(name);
}
