/*
 * kiln.h: the whole public interface of kiln.
 *
 * kiln compiles CUDA C source at run time (NVRTC for NVIDIA GPUs, the host C++
 * compiler for the CPU), caches the result on disk and runs it over n-d arrays.
 * The same program runs on a machine with no GPU (CPU backend) and on a GPU
 * (CUDA backend) without a rebuild.
 *
 * Conventions, true of every function below unless its comment says otherwise:
 *  - Every fallible call returns kiln_status; KILN_OK is 0. On failure,
 *    kiln_last_error() holds a message for the calling thread that says what
 *    was expected and what was found. Nothing aborts the process on user error.
 *  - Whoever creates an object releases it (kiln_*_release). Out-parameters
 *    are written only on success. NULL for a context, an object or an
 *    out-pointer gives KILN_ERR_INVALID_ARGUMENT; functions that return a
 *    value instead of a status give NULL, 0 or -1 for a NULL object.
 *  - A NULL kiln_stream means the context's default stream.
 *  - Names. A getter is kiln_<object>_<property> (kiln_array_dtype,
 *    kiln_module_kernel, kiln_rng_offset); one that fills a struct is named
 *    after the struct, kiln_<struct>_get (kiln_device_info_get); a setter is
 *    kiln_<object>_set_<property>.
 *  - Threads. What may be shared between threads:
 *    a context: yes, for everything made and done on it: compiling modules
 *      and kernels, building ufunc and gufunc variants on first use,
 *      launching, making, copying and releasing arrays, the libraries'
 *      plan caches and handles, and the profiler take the locks they need
 *      (the test suite runs this under ThreadSanitizer). Only kiln_close,
 *      and the last release of any object, must come after every other
 *      thread's use of it;
 *    arrays: reference counts are atomic, and any number of threads may read
 *      an array at once; two calls that write the same memory (views
 *      included), or one that writes what another reads, are the caller's
 *      to order, as on a GPU: one stream, or events between streams;
 *    streams: usable from several threads; work queued on one stream runs
 *      in the order the calls were made, whichever thread made them. A
 *      graph capture (kiln_graph_begin_capture) affects every thread's
 *      compiles on that context until it ends;
 *    events, generators (kiln_rng), plans and communicators: the caller's
 *      to order, one thread at a time on each (recording an event, drawing
 *      from a generator and a collective all change the object's state);
 *    per thread: kiln_last_error() and the kiln_comm_group_start/end
 *      nesting. What is process-wide (the loaded driver and vendor
 *      libraries) is set up once, thread-safely, at first use.
 *  - Experimental. Diagnostics and test hooks (generated source, the
 *    settings table, reference generators) are declared at the end, only
 *    when KILN_EXPERIMENTAL is defined before this header is included.
 */
#ifndef KILN_H
#define KILN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ version */
#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0
#define KILN_VERSION_NUMBER (KILN_VERSION_MAJOR * 10000 + KILN_VERSION_MINOR * 100 + KILN_VERSION_PATCH)

#if defined(_WIN32)
#define KILN_API __declspec(dllexport)
#elif defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

/* KILN_VERSION_NUMBER of the library actually loaded. */
KILN_API unsigned kiln_version(void);
/* "0.1.0"; static storage. */
KILN_API const char *kiln_version_string(void);

/* ------------------------------------------------------------------ errors */
/* Codes are grouped by kind: 1xx argument, 2xx resource, 3xx compile,
 * 4xx device, 9xx internal. */
typedef enum kiln_status {
    KILN_OK = 0,
    /* Not a failure: the work asked about has not finished yet
     * (kiln_event_query, kiln_stream_query). */
    KILN_ERR_NOT_READY = 1,

    KILN_ERR_INVALID_ARGUMENT = 100, /* NULL where an object was needed, bad value */
    KILN_ERR_SHAPE = 101,            /* shapes do not match or broadcast */
    KILN_ERR_DTYPE = 102,            /* dtype not allowed or not matching */
    KILN_ERR_ARG_COUNT = 103,        /* wrong number of kernel/ufunc arguments */
    KILN_ERR_ARG_TYPE = 104,         /* argument of the wrong type */
    KILN_ERR_LAUNCH_CONFIG = 105,    /* grid/block/shared memory beyond the limits */
    KILN_ERR_NOT_FOUND = 106,        /* unknown kernel, file or name */
    KILN_ERR_UNSUPPORTED = 107,      /* not available on this backend */
    KILN_ERR_SIGNATURE = 108,        /* malformed type or layout signature */
    KILN_ERR_CAPTURE = 109,          /* the call cannot be part of a graph capture (kiln_graph_*) */
    KILN_ERR_LINALG = 110,           /* a matrix the routine cannot take: singular (kiln_solve, kiln_inv),
                                        not positive definite (kiln_cholesky), no convergence (kiln_svd,
                                        kiln_eigh); NumPy's LinAlgError. The message names the matrix's
                                        index in the batch. None of the other codes says this: the
                                        arguments are well formed, only their values defeat the algorithm */

    KILN_ERR_OUT_OF_MEMORY = 200,   /* device or host allocation failed */
    KILN_ERR_IO = 201,              /* file could not be read or written */
    KILN_ERR_CACHE = 202,           /* cache unusable (unsafe permissions, ...) */
    KILN_ERR_LIBRARY_MISSING = 203, /* an optional library (cuFFT, FFTW, ...) is not installed; the
                                       message names the Debian package or toolkit part */

    KILN_ERR_COMPILE = 300,          /* the source did not compile; log in kiln_last_error */
    KILN_ERR_COMPILER_MISSING = 301, /* no host compiler / no NVRTC */

    KILN_ERR_NO_DEVICE = 400,    /* no driver or no usable device */
    KILN_ERR_DRIVER = 401,       /* the driver returned an error */
    KILN_ERR_DEVICE_FAULT = 402, /* a kernel faulted; the context is now dead */
    KILN_ERR_CONTEXT_DEAD = 403, /* an earlier fault killed this context */
    KILN_ERR_COMM = 404,         /* a collective failed: a peer died or timed out, ranks disagreed;
                                    the communicator is now unusable */

    KILN_ERR_INTERNAL = 900
} kiln_status;

/* Name of a status, e.g. "KILN_ERR_SHAPE"; static storage. */
KILN_API const char *kiln_status_string(kiln_status status);
/* The calling thread's message for its last failed call ("" if none).
 * Valid until the thread's next kiln call. */
KILN_API const char *kiln_last_error(void);

/* Convenience for examples: on failure print status and message to stderr
 * and return the status from the enclosing function (which must return int
 * or kiln_status). C++ converts no int to an enum, so it returns the
 * kiln_status itself, which converts to int. */
#ifdef __cplusplus
#define KILN_CHECK_RESULT_(status) (status)
#else
#define KILN_CHECK_RESULT_(status) ((int)(status))
#endif
#define KILN_CHECK(call)                                                                                     \
    do {                                                                                                     \
        kiln_status kiln_check_status_ = (call);                                                             \
        if (kiln_check_status_ != KILN_OK) {                                                                 \
            kiln_report_failure(kiln_check_status_, #call, __FILE__, __LINE__);                              \
            return KILN_CHECK_RESULT_(kiln_check_status_);                                                   \
        }                                                                                                    \
    } while (0)
/* Prints "file:line: call failed: STATUS: message" to stderr. */
KILN_API void kiln_report_failure(kiln_status status, const char *what, const char *file, int line);

/* ------------------------------------------------------------------ dtypes */
typedef enum kiln_dtype {
    KILN_BOOL = 0,
    KILN_INT8,
    KILN_INT16,
    KILN_INT32,
    KILN_INT64,
    KILN_UINT8,
    KILN_UINT16,
    KILN_UINT32,
    KILN_UINT64,
    KILN_FLOAT16,
    KILN_FLOAT32,
    KILN_FLOAT64,
    KILN_COMPLEX64,
    KILN_COMPLEX128,
    /* Added after the others so that no earlier value moves (they are ABI).
     * bfloat16: float32's 8-bit exponent with a 7-bit mantissa, computed as
     * float; promotes with float16 to float32 (as ml_dtypes and JAX do). */
    KILN_BFLOAT16,
    KILN_DTYPE_COUNT
} kiln_dtype;

/* Bytes per element. 0 for an invalid dtype. */
KILN_API size_t kiln_dtype_size(kiln_dtype dtype);
/* NumPy's name: "float32", "complex128", ...; static storage. */
KILN_API const char *kiln_dtype_name(kiln_dtype dtype);
/* Parses "float32", "f4", "float", "double", "c8", "u1", "bool", "bfloat16", "bf16", ...
 * KILN_ERR_DTYPE for anything else. */
KILN_API kiln_status kiln_dtype_parse(const char *name, kiln_dtype *out);
/* NumPy's safe casting: can every value of `from` be represented in `to`? */
KILN_API int kiln_dtype_can_cast(kiln_dtype from, kiln_dtype to);

/* ------------------------------------------------------------------ context */
typedef struct kiln_context kiln_context;
typedef struct kiln_stream kiln_stream;
typedef struct kiln_event kiln_event;

typedef enum kiln_backend_kind { KILN_BACKEND_CPU = 0, KILN_BACKEND_CUDA = 1 } kiln_backend_kind;

/* Opens a context on "auto" (CUDA if a GPU is usable, else the CPU, with a
 * one-line notice on stderr saying why), "cpu", "cuda" or "cuda:N".
 * The environment variable KILN_TARGET overrides "auto" (and NULL).
 * Release with kiln_close. */
KILN_API kiln_status kiln_open(kiln_context **out, const char *target);
/* Waits for all work, writes the profile the environment asked for and drops
 * the caller's reference: ctx must not be passed to kiln again. Objects made
 * on ctx (arrays, modules, kernels, ufuncs, gufuncs, streams, events) hold
 * references of their own, stay fully usable, and the context really closes
 * (memory, modules, threads) when the last of them is released. NULL is a
 * no-op. */
KILN_API void kiln_close(kiln_context *ctx);
/* The backend; (kiln_backend_kind)-1 for NULL. */
KILN_API kiln_backend_kind kiln_context_backend(const kiln_context *ctx);
/* "cpu" or "cuda"; static storage. NULL for NULL. */
KILN_API const char *kiln_context_backend_name(const kiln_context *ctx);
/* Waits until every stream of the context is idle. */
KILN_API kiln_status kiln_synchronize(kiln_context *ctx);

typedef struct kiln_device_info {
    char name[256];
    int ordinal;
    int multiprocessors;              /* SMs on CUDA, cores on the CPU */
    int compute_major, compute_minor; /* 0.0 on the CPU */
    size_t total_memory_bytes;
    size_t free_memory_bytes;
    int max_threads_per_block;
    int max_block_dim[3];
    int max_grid_dim[3];
    size_t max_shared_bytes_per_block;       /* without opt-in */
    size_t max_shared_bytes_per_block_optin; /* with opt-in (dynamic) */
    int warp_size;
    int driver_version; /* 13000 for CUDA 13.0; 0 on CPU */
} kiln_device_info;

KILN_API kiln_status kiln_device_info_get(kiln_context *ctx, kiln_device_info *out);
/* Number of CUDA devices usable on this machine; 0 (and KILN_OK) when no
 * driver is present. `why` (may be NULL) receives a static reason when 0. */
KILN_API kiln_status kiln_cuda_device_count(int *count, const char **why);

/* ------------------------------------------------------------------ streams */
/* A queue of work; operations on one stream run in order. */
KILN_API kiln_status kiln_stream_create(kiln_context *ctx, kiln_stream **out);
KILN_API kiln_status kiln_stream_synchronize(kiln_stream *stream);
/* Waits for the stream's work, then frees it. NULL is a no-op. */
KILN_API void kiln_stream_release(kiln_stream *stream);

KILN_API kiln_status kiln_event_create(kiln_context *ctx, kiln_event **out);
KILN_API kiln_status kiln_event_record(kiln_event *event, kiln_stream *stream);
KILN_API kiln_status kiln_event_synchronize(kiln_event *event);
/* Milliseconds between two recorded events (device time on CUDA). */
KILN_API kiln_status kiln_event_elapsed_ms(kiln_event *start, kiln_event *end, float *ms);
KILN_API void kiln_event_release(kiln_event *event);

/* Page-locked host memory (plain memory on the CPU backend): copies from it
 * run asynchronously and at full bus speed. Free with kiln_host_free (with
 * the same ctx; the buffer keeps ctx alive until then).
 * KILN_ERR_OUT_OF_MEMORY when it cannot be had; the context stays usable. */
KILN_API kiln_status kiln_host_alloc(kiln_context *ctx, size_t bytes, void **out);
KILN_API void kiln_host_free(kiln_context *ctx, void *ptr);

/* ------------------------------------------------------------------ arrays */
#define KILN_MAX_DIMS 16

typedef struct kiln_array kiln_array;

typedef enum kiln_memory {
    KILN_MEMORY_DEVICE = 0, /* owned by the context's backend (host RAM on the CPU) */
    KILN_MEMORY_HOST = 1,   /* plain host memory, wrapped with kiln_array_wrap_host */
    /* Kinds of the driver layer (kiln_array_empty_mapped / _managed); host
     * memory on the CPU backend. */
    KILN_MEMORY_MAPPED = 2, /* pinned host memory kernels read in place (zero copy) */
    KILN_MEMORY_MANAGED = 3 /* unified memory the driver migrates on demand */
} kiln_memory;

/* New contiguous (C-order) array with uninitialised contents. The caller owns
 * one reference; release with kiln_array_release. */
KILN_API kiln_status kiln_array_empty(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                      kiln_array **out);
KILN_API kiln_status kiln_array_zeros(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                      kiln_array **out);
/* Every element set to `value` converted to dtype (imaginary part used for
 * complex dtypes only; integers truncate toward zero, as in C and NumPy).
 * A value the dtype cannot hold is KILN_ERR_INVALID_ARGUMENT naming it: an
 * integer out of range, NaN or an infinity for an integer dtype, a finite
 * value that would round to infinity in a float dtype. */
KILN_API kiln_status kiln_array_full(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                     double value, double value_imag, kiln_array **out);
/* New device array holding a copy of `bytes` bytes of C-order host data;
 * `bytes` must equal the array's size in bytes. */
KILN_API kiln_status kiln_array_from_host(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                          const void *data, size_t bytes, kiln_array **out);
/* An array over host memory the caller keeps owning (no copy). strides in
 * bytes, NULL for C order. Usable as an input or output of ufuncs, and as a
 * source or destination of copies. */
KILN_API kiln_status kiln_array_wrap_host(kiln_context *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                          const int64_t *strides_bytes, void *data, kiln_array **out);

/* Values start, start+step, ... below stop (NumPy arange), made on the device. */
KILN_API kiln_status kiln_array_arange(kiln_context *ctx, kiln_dtype dtype, double start, double stop,
                                       double step, kiln_array **out);
/* num values from start to stop (stop included when endpoint != 0), made on the device. */
KILN_API kiln_status kiln_array_linspace(kiln_context *ctx, kiln_dtype dtype, double start, double stop,
                                         int64_t num, int endpoint, kiln_array **out);
/* NumPy meshgrid of two 1-d arrays, made on the device. indexing "xy"
 * (shape (len(y), len(x))) or "ij" (shape (len(x), len(y))). Two new arrays. */
KILN_API kiln_status kiln_array_meshgrid(kiln_array *x, kiln_array *y, const char *indexing,
                                         kiln_array **out_x, kiln_array **out_y);

KILN_API kiln_array *kiln_array_retain(kiln_array *a);
/* Drops one reference; frees the memory when the last one (views count) goes. */
KILN_API void kiln_array_release(kiln_array *a);

KILN_API kiln_context *kiln_array_context(const kiln_array *a);
KILN_API kiln_dtype kiln_array_dtype(const kiln_array *a);
KILN_API int kiln_array_ndim(const kiln_array *a);
/* ndim entries; valid while the array lives. */
KILN_API const int64_t *kiln_array_shape(const kiln_array *a);
KILN_API const int64_t *kiln_array_strides(const kiln_array *a); /* bytes */
KILN_API int64_t kiln_array_size(const kiln_array *a);           /* elements */
KILN_API size_t kiln_array_nbytes(const kiln_array *a);          /* size * itemsize */
KILN_API kiln_memory kiln_array_memory(const kiln_array *a);
KILN_API int kiln_array_is_contiguous(const kiln_array *a); /* C order */
/* Address of element 0: a device pointer on CUDA, a host pointer otherwise. */
KILN_API void *kiln_array_data(const kiln_array *a);

/* Views share memory with `a` and keep it alive. */
/* Elements start, start+step, ... before stop along axis (Python slicing;
 * negative indices count from the end; step may be negative, not 0 nor
 * INT64_MIN, which cannot be negated: KILN_ERR_INVALID_ARGUMENT). */
KILN_API kiln_status kiln_array_slice(kiln_array *a, int axis, int64_t start, int64_t stop, int64_t step,
                                      kiln_array **out);
/* Same elements, new shape (one entry may be -1). Needs a contiguous array. */
KILN_API kiln_status kiln_array_reshape(kiln_array *a, int ndim, const int64_t *shape, kiln_array **out);
/* Permutes axes; axes NULL reverses them. */
KILN_API kiln_status kiln_array_transpose(kiln_array *a, const int *axes, kiln_array **out);
/* New contiguous device array with a's elements (any strides, host or device). */
KILN_API kiln_status kiln_array_copy(kiln_array *a, kiln_array **out);

/* Copies the array's elements in C order into `dst`; `bytes` must equal
 * kiln_array_nbytes(a). Works for any strides. */
KILN_API kiln_status kiln_array_to_host(kiln_array *a, void *dst, size_t bytes);
/* Fills the array from C-order host data of exactly kiln_array_nbytes(a). */
KILN_API kiln_status kiln_array_from_host_copy(kiln_array *a, const void *src, size_t bytes);
/* Asynchronous forms on a stream; contiguous arrays only. The host buffer
 * must stay valid until the stream is synchronised; pinned host memory
 * (kiln_host_alloc) makes them truly asynchronous. */
KILN_API kiln_status kiln_array_to_host_async(kiln_array *a, void *dst, size_t bytes, kiln_stream *stream);
KILN_API kiln_status kiln_array_from_host_async(kiln_array *a, const void *src, size_t bytes,
                                                kiln_stream *stream);
/* dst = src elementwise (same shape and dtype, any strides, any memory).
 * Arrays of two contexts (two GPUs, a GPU and the CPU) too: src's context
 * is waited for, then the copy goes directly between the devices where
 * both arrays are contiguous device memory of one backend (over the peer
 * link when kiln_device_can_access_peer says so), else through the host. */
KILN_API kiln_status kiln_array_assign(kiln_array *dst, kiln_array *src);

/* ------------------------------------------------------------------ values */
/* A typed argument: a scalar, an array, or a raw device pointer. Build them
 * with the helpers below; KILN_ARGS(...) turns a list into (pointer, count). */
typedef enum kiln_value_kind {
    KILN_VALUE_SCALAR = 0,
    KILN_VALUE_ARRAY = 1,
    KILN_VALUE_POINTER = 2
} kiln_value_kind;

typedef struct kiln_value {
    kiln_value_kind kind;
    kiln_dtype dtype; /* scalars; for POINTER the pointee dtype if known */
    union {
        int64_t i;
        uint64_t u;
        double f;
        double c[2];
        kiln_array *array;
        void *pointer;
    } as;
} kiln_value;

static inline kiln_value kiln_scalar_i_(kiln_dtype t, int64_t v) {
    kiln_value r;
    r.kind = KILN_VALUE_SCALAR;
    r.dtype = t;
    r.as.c[1] = 0;
    r.as.i = v;
    return r;
}
static inline kiln_value kiln_scalar_u_(kiln_dtype t, uint64_t v) {
    kiln_value r;
    r.kind = KILN_VALUE_SCALAR;
    r.dtype = t;
    r.as.c[1] = 0;
    r.as.u = v;
    return r;
}
static inline kiln_value kiln_scalar_f_(kiln_dtype t, double re, double im) {
    kiln_value r;
    r.kind = KILN_VALUE_SCALAR;
    r.dtype = t;
    r.as.c[0] = re;
    r.as.c[1] = im;
    return r;
}
static inline kiln_value kiln_bool(int v) { return kiln_scalar_i_(KILN_BOOL, v != 0); }
static inline kiln_value kiln_i8(int8_t v) { return kiln_scalar_i_(KILN_INT8, v); }
static inline kiln_value kiln_i16(int16_t v) { return kiln_scalar_i_(KILN_INT16, v); }
static inline kiln_value kiln_i32(int32_t v) { return kiln_scalar_i_(KILN_INT32, v); }
static inline kiln_value kiln_i64(int64_t v) { return kiln_scalar_i_(KILN_INT64, v); }
static inline kiln_value kiln_u8(uint8_t v) { return kiln_scalar_u_(KILN_UINT8, v); }
static inline kiln_value kiln_u16(uint16_t v) { return kiln_scalar_u_(KILN_UINT16, v); }
static inline kiln_value kiln_u32(uint32_t v) { return kiln_scalar_u_(KILN_UINT32, v); }
static inline kiln_value kiln_u64(uint64_t v) { return kiln_scalar_u_(KILN_UINT64, v); }
static inline kiln_value kiln_f32(float v) { return kiln_scalar_f_(KILN_FLOAT32, v, 0); }
/* A bfloat16 scalar (rounded to bfloat16, nearest even, where it is stored). */
static inline kiln_value kiln_bf16(float v) { return kiln_scalar_f_(KILN_BFLOAT16, v, 0); }
static inline kiln_value kiln_f64(double v) { return kiln_scalar_f_(KILN_FLOAT64, v, 0); }
static inline kiln_value kiln_c64(float re, float im) { return kiln_scalar_f_(KILN_COMPLEX64, re, im); }
static inline kiln_value kiln_c128(double re, double im) { return kiln_scalar_f_(KILN_COMPLEX128, re, im); }
static inline kiln_value kiln_arr(kiln_array *a) {
    kiln_value r;
    r.kind = KILN_VALUE_ARRAY;
    r.dtype = KILN_DTYPE_COUNT;
    r.as.c[1] = 0;
    r.as.array = a;
    return r;
}
/* A raw device pointer (e.g. from another library); no type checking of the
 * pointee beyond what dtype says (KILN_DTYPE_COUNT: unknown, accepted by any
 * pointer parameter). */
static inline kiln_value kiln_ptr(void *p, kiln_dtype pointee) {
    kiln_value r;
    r.kind = KILN_VALUE_POINTER;
    r.dtype = pointee;
    r.as.c[1] = 0;
    r.as.pointer = p;
    return r;
}

/* KILN_ARGS(v, ...) expands to the two parameters `const kiln_value *args,
 * int nargs` of kiln_launch / kiln_call; the array lives until the end of
 * the call it is passed to. The arguments are evaluated once. */
#ifndef __cplusplus
#define KILN_ARGS(...)                                                                                       \
    ((const kiln_value[]){__VA_ARGS__}),                                                                     \
        ((int)(sizeof((const kiln_value[]){__VA_ARGS__}) / sizeof(kiln_value)))
#else
/* C++ has no compound literals (g++: "taking address of temporary array"):
 * the same list goes into a temporary of a struct holding the array, which
 * lives to the end of the full expression, the call. The count comes from
 * an unevaluated sizeof of a declared-only function, so nothing is
 * evaluated twice. Templates cannot have C linkage, hence extern "C++". */
extern "C++" {
template <int N> struct kiln_args_list_ {
    kiln_value values[N];
    const kiln_value *data() const { return values; }
};
template <class... T> char (&kiln_args_count_(const T &...))[sizeof...(T)];
}
#define KILN_ARGS(...)                                                                                       \
    (kiln_args_list_<(int)sizeof(kiln_args_count_(__VA_ARGS__))>{{__VA_ARGS__}}.data()),                     \
        ((int)sizeof(kiln_args_count_(__VA_ARGS__)))
#endif

/* ------------------------------------------------------------------ kernels */
typedef struct kiln_dim3 {
    uint32_t x, y, z; /* 0 counts as 1, so KILN_DIM(256) is (256,1,1) */
} kiln_dim3;
static inline kiln_dim3 kiln_dim3_1_(uint32_t x) {
    kiln_dim3 d;
    d.x = x;
    d.y = 1;
    d.z = 1;
    return d;
}
static inline kiln_dim3 kiln_dim3_2_(uint32_t x, uint32_t y) {
    kiln_dim3 d;
    d.x = x;
    d.y = y;
    d.z = 1;
    return d;
}
static inline kiln_dim3 kiln_dim3_3_(uint32_t x, uint32_t y, uint32_t z) {
    kiln_dim3 d;
    d.x = x;
    d.y = y;
    d.z = z;
    return d;
}
#define KILN_DIM_PICK_(a, b, c, f, ...) f
/* KILN_DIM(x), KILN_DIM(x, y) or KILN_DIM(x, y, z); missing sizes are 1. */
#define KILN_DIM(...) KILN_DIM_PICK_(__VA_ARGS__, kiln_dim3_3_, kiln_dim3_2_, kiln_dim3_1_, 0)(__VA_ARGS__)

typedef struct kiln_module kiln_module;
typedef struct kiln_kernel kiln_kernel;

/* Compile options, space separated, the same on both backends:
 *   -DNAME[=VALUE]  define a macro        -IDIR   add an include directory
 *   -G              device debug (CUDA) / -O0 -g (CPU)
 *   -lineinfo       line info (CUDA only; ignored on the CPU)
 *   --use_fast_math fast math on both backends
 *   --fast-compile  less optimisation for less compile time: NVRTC
 *                   -Ofast-compile=mid (NVRTC 12.8+; older ones compile
 *                   fully), the host compiler -O1 (with FMA contraction,
 *                   so the results are -O3's) instead of -O3. kiln builds
 *                   its first-call kernels on CUDA so (a ufunc's mixed
 *                   kernels, a gufunc's any-layout kernels), and on the
 *                   CPU a program's new modules until their -O3 build
 *                   lands (kiln_jit_wait).
 * Anything else is an error naming the option. NULL or "" for none. */

/* Compiles CUDA C source holding one or more __global__ functions for the
 * context's backend (or loads it from the disk cache). `name` labels the
 * source in diagnostics ("kernel.cu" if NULL). On KILN_ERR_COMPILE,
 * kiln_last_error() holds the compiler's log with lines numbered from the
 * first line of `source`. Release with kiln_module_release. */
KILN_API kiln_status kiln_module_from_source(kiln_context *ctx, const char *source, const char *name,
                                             const char *options, kiln_module **out);
/* The largest kernel source file kiln reads (kiln_module_from_file, `kiln
 * compile`): 64 MiB. Larger files, and paths that are not regular files
 * (/dev/zero, a FIFO), are refused with KILN_ERR_IO. */
#define KILN_MAX_SOURCE_BYTES ((size_t)64 << 20)
/* The same for a file on disk; includes are resolved relative to its folder.
 * The kernels of a module are those of the file and of every file it
 * includes with `#include "..."` (beside the including file, then in the -I
 * folders), found however deep. */
KILN_API kiln_status kiln_module_from_file(kiln_context *ctx, const char *path, const char *options,
                                           kiln_module **out);
/* Template kernels by name: as kiln_module_from_source / _from_file, and
 * each of kernel_names[0, count) that names an instantiation of a
 * __global__ template of the source ("reduce4<float, 256>", default
 * arguments may be left out) becomes one of the module's kernels, whether
 * or not the source instantiates it (NVRTC name expressions on CUDA, the
 * same instantiation on the CPU). KILN_ERR_NOT_FOUND when the source has no
 * such template. The names are part of the module's disk-cache key. */
KILN_API kiln_status kiln_module_from_source_names(kiln_context *ctx, const char *source, const char *name,
                                                   const char *options, const char *const *kernel_names,
                                                   int count, kiln_module **out);
KILN_API kiln_status kiln_module_from_file_names(kiln_context *ctx, const char *path, const char *options,
                                                 const char *const *kernel_names, int count,
                                                 kiln_module **out);

KILN_API void kiln_module_release(kiln_module *module);
/* Number of __global__ functions found and the name of the i-th. */
KILN_API int kiln_module_kernel_count(const kiln_module *module);
KILN_API const char *kiln_module_kernel_name(const kiln_module *module, int index);

/* Looks up a __global__ function by its name in the source: as C++ names it
 * for a kernel in a namespace ("physics::fill") or an explicit template
 * instantiation ("scale<float>", under any spelling of the same arguments:
 * "scale<unsigned>" for "scale<unsigned int>", spaces, default arguments
 * written out or not); the bare name works when only one kernel has it. The kernel keeps the module alive.
 * KILN_ERR_NOT_FOUND names the kernels that do exist. */
KILN_API kiln_status kiln_module_kernel(kiln_module *module, const char *kernel_name, kiln_kernel **out);

/* An array over the module's __constant__ or __device__ variable `name`
 * (defined at namespace scope; "ns::v" or the bare name when unique), for
 * kiln_array_from_host_copy / kiln_array_assign / kiln_array_to_host and as
 * a kernel argument; copies are stream-ordered like any array's. Its dtype
 * and shape are the declaration's when it spells a scalar type and integer
 * extents (`__constant__ float c[17]` -> float32 (17,)), else uint8 bytes.
 * The array keeps the module loaded; release it with kiln_array_release.
 * KILN_ERR_NOT_FOUND names the variables that exist; on the CPU a write
 * while a kernel of the module runs on another thread is refused. */
KILN_API kiln_status kiln_module_global(kiln_module *module, const char *name, kiln_array **out);
/* Shorthand: compile `source` and look up `kernel_name` (a template
 * instantiation's name is requested as kiln_module_from_source_names does). */
KILN_API kiln_status kiln_kernel_from_source(kiln_context *ctx, const char *source, const char *kernel_name,
                                             const char *options, kiln_kernel **out);
KILN_API void kiln_kernel_release(kiln_kernel *kernel);

/* How a kernel parameter was declared, read from the compiled code itself. */
typedef enum kiln_param_class {
    KILN_PARAM_SIGNED = 'i',
    KILN_PARAM_UNSIGNED = 'u',
    KILN_PARAM_FLOAT = 'f',
    KILN_PARAM_BOOL = 'b',
    KILN_PARAM_COMPLEX = 'c',
    KILN_PARAM_POINTER = 'p',
    KILN_PARAM_OTHER = 'o', /* a struct passed by value */
    KILN_PARAM_VECTOR = 'v' /* pointees only: float4, double2, int2, ... (2 to 4 lanes x, y, z, w of
                               one arithmetic type) */
} kiln_param_class;

typedef struct kiln_param_info {
    kiln_param_class cls;
    size_t size;                       /* bytes of the parameter itself */
    kiln_param_class pointee_cls;      /* pointers: class of what they point to */
    size_t pointee_size;               /* pointers: 0 for void* */
    kiln_param_class pointee_lane_cls; /* KILN_PARAM_VECTOR pointees: class of a lane (i, u, f) */
    int pointee_lanes;                 /* KILN_PARAM_VECTOR pointees: 2 to 4; else 0 */
} kiln_param_info;

KILN_API int kiln_kernel_param_count(const kiln_kernel *kernel);
KILN_API kiln_status kiln_kernel_param(const kiln_kernel *kernel, int index, kiln_param_info *out);
KILN_API const char *kiln_kernel_name(const kiln_kernel *kernel);

typedef struct kiln_kernel_attributes {
    int num_regs;        /* per thread (CUDA) */
    size_t shared_bytes; /* static shared memory */
    size_t local_bytes;  /* spills / stack (CUDA) */
    int max_threads_per_block;
} kiln_kernel_attributes;
KILN_API kiln_status kiln_kernel_attributes_get(kiln_kernel *kernel, kiln_kernel_attributes *out);

/* Launches `kernel` over grid x block threads with `shared_bytes` of dynamic
 * shared memory on `stream` (NULL: default). Arguments are checked against
 * the kernel's parameters: count, and class and size of each (a pointer's
 * pointee against the array's dtype: float * takes float32, float4 * takes
 * float32 with a size that is a multiple of 4 and 16-byte aligned data,
 * float2 * also complex64, double2 * also complex128); scalars are
 * converted only where NumPy's safe casting allows (int32 -> size_t yes,
 * double -> float no). Arrays must belong to the kernel's context.
 * Asynchronous: returns once queued. */
KILN_API kiln_status kiln_launch(kiln_kernel *kernel, kiln_dim3 grid, kiln_dim3 block, size_t shared_bytes,
                                 kiln_stream *stream, const kiln_value *args, int nargs);
/* kiln_launch with every block resident at once, so that the kernel may
 * synchronise the whole grid (cooperative groups' this_grid().sync()):
 * cuLaunchCooperativeKernel on CUDA, where a grid larger than the device
 * can hold at once is refused by the driver. The CPU gives each block an OS
 * thread: up to 1024 blocks and 16384 threads in all (KILN_ERR_LAUNCH_CONFIG
 * beyond), not recorded into a graph when more than one block
 * (KILN_ERR_UNSUPPORTED). */
KILN_API kiln_status kiln_launch_cooperative(kiln_kernel *kernel, kiln_dim3 grid, kiln_dim3 block,
                                             size_t shared_bytes, kiln_stream *stream, const kiln_value *args,
                                             int nargs);

/* ------------------------------------------------------------------ compile */
/* Compiles source for a target without running it and without a device:
 * target "cpu" or "cuda"; arch like "sm_90" (CUDA; NULL: the device's or
 * sm_90). Fills *log (caller frees with kiln_free) with diagnostics, and for
 * CUDA a per-kernel resource report (registers, shared memory, spills) when
 * it can be had: ptxas writes it, and NVRTC 13 serves a program it compiled
 * before (its cache, CUDA_CACHE_PATH, shared by processes) without running
 * ptxas; with CUDA_CACHE_DISABLE=1 in the environment it always compiles
 * (`kiln compile` sets that). KILN_ERR_COMPILE on errors. Needs no context.
 * On CUDA a successful compile's log is kept in the disk cache
 * (KILN_CACHE_DIR), keyed like a module (source, included headers, options,
 * NVRTC version, arch), so checking the same source again costs a file
 * read. */
KILN_API kiln_status kiln_compile_only(const char *target, const char *arch, const char *source,
                                       const char *name, const char *options, char **log);
/* Frees memory that kiln returned to the caller. */
KILN_API void kiln_free(void *ptr);

/* ------------------------------------------------------------------ cache */
typedef struct kiln_cache_info {
    char path[1024];
    int usable; /* 0 when refused; reason says why */
    char reason[256];
    int64_t entries;
    int64_t bytes;
} kiln_cache_info;

/* Where compiled modules are kept ($KILN_CACHE_DIR, else
 * $XDG_CACHE_HOME/kiln, else ~/.cache/kiln) and whether it is usable: it must
 * be owned by the user and writable by nobody else. */
KILN_API kiln_status kiln_cache_info_get(kiln_cache_info *out);

/* Deletes every cached module; *removed (may be NULL) gets the count. */
KILN_API kiln_status kiln_cache_clear(int64_t *removed);

/* ------------------------------------------------------------------ profiling */
/* Per-context counters, always kept (cheap). */
typedef struct kiln_jit_stats {
    int64_t compiles;      /* cache misses that ran a compiler */
    int64_t cache_hits;    /* modules loaded from the disk cache */
    int64_t cache_rejects; /* cache entries refused (corrupt, written for another key, not loadable) and
                              rebuilt */
    double compile_ms;     /* total compiler time (tier-ups included) */
    double load_ms;        /* total time loading modules */
    int64_t tier_ups;      /* CPU modules whose quick build a -O3 tier-up replaced (kiln_jit_wait) */
} kiln_jit_stats;
KILN_API kiln_status kiln_jit_stats_get(kiln_context *ctx, kiln_jit_stats *out);
/* Waits until no tier-up of ctx's modules runs (and starts those whose
 * module was not launched yet). On the CPU backend a module built from the
 * program's source whose -O3 build is not in the disk cache is compiled at
 * -O1 first (its quick build, about half the compile); from its first
 * launch its -O3 tier-up is compiled in the background (nice 10; per
 * context at most a quarter of the CPUs' worth of tier-ups at once, the
 * others queue) and swapped in under its kernels when ready. Launches in
 * between run the -O1 code, with the same results. Call this before timing
 * kernels. A tier-up that fails leaves the -O1 code (a note on stderr);
 * releasing the module or closing the context stops its tier-up. No
 * tier-up for: modules with `__device__` or static variables (they would
 * start again from their initial values), -G, --use_fast_math,
 * --fast-compile, kiln's own modules, the CUDA backend, and
 * KILN_CPU_TIERS=0 (everything at -O3 at once). */
KILN_API kiln_status kiln_jit_wait(kiln_context *ctx);

/* ------------------------------------------------------------------ profiler */
/* Records every kernel launch, copy (direction, bytes, pageable or pinned),
 * allocation and compile (cache hit or miss, compile and load time) of a
 * context: device times on a GPU (from CUPTI's activity records when
 * libcupti can be loaded, else from pooled CUDA events around each
 * operation), wall times on the CPU.
 * Environment, read by kiln_open:
 *   KILN_PROFILE=1        record; print the summary at kiln_close to stderr
 *   KILN_PROFILE_OUT=FILE append the summary to FILE instead
 *   KILN_TRACE=FILE       record; write a Chrome trace (Perfetto,
 *                         chrome://tracing) to FILE at kiln_close
 *   KILN_PROFILE_TIMER=cupti|events  force the GPU timer (default: CUPTI if found)
 * With none of them set and no kiln_profiler_start, recording costs nothing. */
/* Starts (or resumes) recording on ctx and keeps the records for
 * kiln_profiler_write_trace. The first start on a context that was opened
 * without KILN_PROFILE/KILN_TRACE must not race with other threads using ctx. */
KILN_API kiln_status kiln_profiler_start(kiln_context *ctx);
/* Pauses recording; what was recorded stays. A no-op when not recording. */
KILN_API kiln_status kiln_profiler_stop(kiln_context *ctx);
/* 1 while ctx is recording. */
KILN_API int kiln_profiler_enabled(const kiln_context *ctx);
/* Forgets everything recorded so far (statistics and trace). */
KILN_API kiln_status kiln_profiler_reset(kiln_context *ctx);
/* Waits for the recorded work, then returns the nvprof-style summary (backend
 * and device, per-kernel and per-copy-direction table with GB/s, allocations,
 * JIT) in *text; the caller frees it with kiln_free. */
KILN_API kiln_status kiln_profiler_summary(kiln_context *ctx, char **text);
/* The same summary written to `out` (stderr when NULL). */
KILN_API kiln_status kiln_profiler_print(kiln_context *ctx, FILE *out);
/* Writes the records kept so far as Chrome trace-event JSON to `path`
 * (replaced atomically). KILN_ERR_IO, naming the path, if it cannot be written. */
KILN_API kiln_status kiln_profiler_write_trace(kiln_context *ctx, const char *path);

/* ------------------------------------------------------------------ ufuncs */
/* Elementwise functions from a scalar CUDA C body (NumPy/Numba "vectorize").
 *
 *   kiln_ufunc *hav;
 *   kiln_vectorize(ctx, "hav", "f8(f8,f8,f8,f8,f8)", "lat1, lon1, lat2, lon2, s",
 *                  "double a = ...; return atan2(a, 1 - a) * s;", NULL, &hav);
 *   kiln_array *Z = NULL;                           (NULL: allocated by the call)
 *   kiln_call(hav, KILN_ARGS(kiln_arr(X), kiln_arr(Y), kiln_f64(30), kiln_f64(101),
 *                            kiln_f64(1)), &Z);
 *
 * signatures: "f8(f8,f8)", several separated by ';' ("f4(f4,f4); f8(f8,f8)"),
 *   several outputs as "(f8,f8)(f8,f8,f8)"; "(f8,f8)->f8" also reads. Types
 *   are anything kiln_dtype_parse takes. float16 and bfloat16 are computed as float.
 * params: the inputs' names, "a, b"; with named outputs "S, X, T -> call, put"
 *   the body assigns them (`call = ...;`); otherwise a one-output body
 *   `return`s its value and a several-output body assigns out0, out1, ...
 * body: CUDA C statements; it may call the math functions and the
 *   __device__ helpers defined in `preamble` (may be NULL). Compile errors
 *   give lines counted from the body's first line (file "<name>") and the
 *   preamble's ("<name>.preamble").
 * Calls broadcast like NumPy over any number of dims, take any mix of arrays
 * (any strides, views, host or device memory) and scalars (passed to the
 * kernel as values, never expanded), and pick the first signature matching
 * exactly, else the first every input casts to safely (NumPy's rules; a
 * scalar also fits when its value does). */
typedef struct kiln_ufunc kiln_ufunc;

/* Parses the signatures and compiles the kernels for contiguous arrays of
 * every signature on the context's backend (from the disk cache when there).
 * `name` must be a C identifier. Release with kiln_ufunc_release. */
KILN_API kiln_status kiln_vectorize(kiln_context *ctx, const char *name, const char *signatures,
                                    const char *params, const char *body, const char *preamble,
                                    kiln_ufunc **out);
/* Waits for nothing; frees the compiled variants and staging buffers. NULL: no-op. */
KILN_API void kiln_ufunc_release(kiln_ufunc *f);
/* Where calls run: "cuda", "cpu" (one core), "parallel" (all cores), or NULL
 * / "" / "context" to follow the context's backend (the default). "cpu" and
 * "parallel" on a CUDA context run on the host (device inputs are copied). */
KILN_API kiln_status kiln_ufunc_set_target(kiln_ufunc *f, const char *target);
KILN_API int kiln_ufunc_nin(const kiln_ufunc *f);
KILN_API int kiln_ufunc_nout(const kiln_ufunc *f);

/* Applies f elementwise. args: nin inputs (arrays or scalars). outs: nout
 * slots; a NULL slot receives a new array (the caller releases it) of the
 * broadcast shape and the signature's output dtype, in host memory when the
 * array inputs are all host memory, else on the device (the "cpu" and
 * "parallel" targets on a CUDA context always give host memory);
 * kiln_array_memory says which, on both backends. A non-NULL slot is
 * written in place: it must have the broadcast shape, a dtype the result
 * casts to safely, and it may be an input only exactly (same data and
 * strides). Host inputs on a CUDA context travel in chunks through pinned
 * buffers, copies overlapping compute. Returns once the results are in place
 * for host outputs; device work is queued on the default stream. */
KILN_API kiln_status kiln_call(kiln_ufunc *f, const kiln_value *args, int nargs, kiln_array **outs);
/* kiln_call with a target for this call only (NULL: the ufunc's) and a
 * stream for device work (NULL: the default stream). */
KILN_API kiln_status kiln_call_ex(kiln_ufunc *f, const char *target, kiln_stream *stream,
                                  const kiln_value *args, int nargs, kiln_array **outs);

/* ------------------------------------------------------------------ generalized ufuncs */
/* Generalized ufuncs (NumPy gufuncs, Numba "guvectorize"): a body that works
 * on the core dims of its arguments, applied at every index of the loop dims
 * in front of them, which broadcast like NumPy's.
 *
 *   kiln_gufunc *herm;
 *   kiln_guvectorize(ctx, "herm", "void(f4[:], f4[:])", "(n)->(n)", "inp, out",
 *       "for (int i = 2; i < out.len; i++) out[i] = out[1]*out[i-1] - (i-1)*out[i-2];",
 *       NULL, &herm);
 *   kiln_gufunc_call(herm, KILN_ARGS(kiln_arr(X), kiln_arr(X)), NULL, NULL);  (in place)
 *   kiln_array *Y = NULL;                                 ("()->(n)": n from the call)
 *   kiln_gufunc_call(powers, KILN_ARGS(kiln_arr(x)), &Y, "n=4");
 *
 * type_signatures: "void(f4[:], f4[:])", several separated by ';' (the first
 *   whose inputs match exactly is used, else the first they cast to safely).
 *   One type per argument, inputs then outputs; "[:]" per core dim, none for
 *   a "()" argument. Types are anything kiln_dtype_parse takes.
 * layout: NumPy's generalized-ufunc signature: "(n)->(n)", "()->(n)",
 *   "(m,n),(n,p)->(m,p)", "(3),(3)->(3)" (fixed sizes >= 1), "(n),(n)->(),()",
 *   "->(n)" (no inputs), "(m?,n),(n,p?)->(m?,p?)" (optional dims, NumPy's
 *   meaning); up to 16 core dims per argument.
 * params: the arguments' names, inputs then outputs: "inp, out" or "a, b -> c".
 * body: CUDA C statements. An argument with core dims is a view: x[i], x(i),
 *   A(i, j) or A[i][j]; x.len (= shape[0]), x.shape[k], x.strides[k]
 *   (elements), x.ndim, x.size(). Input views are read-only. A "()" input is
 *   a plain value, a "()" output an assignable reference. float16 computes as
 *   float. preamble (may be NULL): __device__ helpers the body calls.
 * kiln_guvectorize compiles one module (disk-cached) holding, per type
 * signature, an any-layout kernel: core sizes and strides as parameters, up
 * to 3 loop dims after merging, a "()" input as an array or a value. It runs
 * the first calls of every layout, so they compile nothing, and compile
 * errors, with lines counted from the body's first line (file "<name>") or
 * the preamble's ("<name>.preamble"), surface at kiln_guvectorize. Once a
 * signature's any-layout kernel has served 2^26 elements (of each call's
 * largest operand; KILN_GUFUNC_ANY_LIMIT=n, read at kiln_guvectorize), and
 * for calls it cannot take (more loop dims, inputs cast from other dtypes),
 * a call compiles the kernel generated for its layout (on the GPU: rows
 * staged through registers or shared memory with coalesced accesses where
 * rows are packed, else a thread per loop index along the smallest stride;
 * on the CPU: a loop parallel over the loop dims; core sizes up to 64
 * compiled in). Past the limit that compile runs on a background thread
 * (one at a time per gufunc) while the any-layout kernel goes on serving the
 * calls, so none waits; kiln_gufunc_release waits for a running one;
 * KILN_TIER_UP=0 (read at kiln_guvectorize): the call compiles it.
 * KILN_GUFUNC_ANY_LIMIT=0: no any-layout kernels, each layout compiles at
 * its first call (and compile errors surface there).
 * `name` must be a C identifier. Release with kiln_gufunc_release. */
typedef struct kiln_gufunc kiln_gufunc;

KILN_API kiln_status kiln_guvectorize(kiln_context *ctx, const char *name, const char *type_signatures,
                                      const char *layout, const char *params, const char *body,
                                      const char *preamble, kiln_gufunc **out);
/* Frees the compiled variants. NULL: no-op. */
KILN_API void kiln_gufunc_release(kiln_gufunc *f);
KILN_API int kiln_gufunc_nin(const kiln_gufunc *f);
KILN_API int kiln_gufunc_nout(const kiln_gufunc *f);

/* Applies f. args: the nin inputs (arrays, or scalars for "()" inputs), or
 * all nin + nout arguments with the outputs (arrays) last, Numba style; then
 * outs is ignored. Otherwise outs has nout slots: a NULL slot receives a new
 * device array (loop shape + core shape, the signature's dtype; the caller
 * releases it), a non-NULL one is written: it must have the broadcast loop
 * shape and the signature's dtype exactly, and may be an input only exactly
 * (same data and strides: in place). A given output is also read on the GPU
 * fast paths, so a body may update it. dims (may be NULL): sizes of core dims
 * no input has, "n=4, m=3"; an output core dim found nowhere is an error.
 * Device work is queued on the default stream. */
KILN_API kiln_status kiln_gufunc_call(kiln_gufunc *f, const kiln_value *args, int nargs, kiln_array **outs,
                                      const char *dims);
/* kiln_gufunc_call on `stream` (NULL: the default stream). */
KILN_API kiln_status kiln_gufunc_call_ex(kiln_gufunc *f, kiln_stream *stream, const char *dims,
                                         const kiln_value *args, int nargs, kiln_array **outs);

/* ------------------------------------------------------------------ random numbers (src/random/) */
/* cuRAND's pseudo-random generators on kiln arrays, producing the very
 * numbers cuRAND produces, on both backends:
 *
 *   kiln_rng *rng;
 *   kiln_rng_create(ctx, KILN_RNG_XORWOW, 1234, &rng);
 *   kiln_rng_uniform(rng, x);                 (float32 or float64 array, values in (0, 1])
 *   kiln_rng_normal(rng, y, 0.0, 1.0);
 *   kiln_rng_release(rng);
 *
 * A generator has a seed, an offset and an ordering, as a cuRAND generator
 * made with curandCreateGenerator; each fill writes what curandGenerate*
 * writes for that state and advances it as cuRAND does (the offset by the
 * number of values, by half of it for XORWOW and MRG32k3a normals; on Philox
 * a fill of doubles or normals is defined as a fresh generator at the offset:
 * docs/random.md). On the CPU backend the numbers come from
 * kiln's own code (all cores, no libcurand needed); on CUDA XORWOW,
 * MRG32k3a (KILN_RNG_MRG_CUDA=curand: cuRAND's) and Philox uniform
 * doubles come from kiln's own kernels, which write cuRAND's values with
 * many more threads than cuRAND uses, the rest from cuRAND, loaded at run
 * time.
 * Guarantee (tests/test_random.c checks it against libcurand's host
 * generator for many seeds, offsets and lengths):
 *  - bits, uniform float32 and float64: bit for bit on both backends;
 *  - normal and log-normal: bit for bit with cuRAND's host generator on
 *    the CPU, with cuRAND's device generator on CUDA; the GPU uses the
 *    fast hardware sine/cosine in Box-Muller, so CPU and CUDA agree to |a-b| <= 2e-5 (1+|b|) (float32)
 *    and 1e-12 (1+|b|) (float64), which the tests enforce;
 *  - Poisson: kiln's own algorithm on the CPU, cuRAND's on CUDA: the same
 *    distribution, not the same samples (see docs/random.md).
 * Outputs may be any dtype-matching array: views and host-wrapped arrays
 * are filled through a contiguous temporary; size 0 is a no-op; odd lengths
 * work for every distribution (cuRAND itself wants even lengths for
 * normals). Fills are queued on the generator's stream (CUDA); on the CPU
 * they return when done. */
typedef struct kiln_rng kiln_rng;

typedef enum kiln_rng_type {
    KILN_RNG_XORWOW = 0,        /* cuRAND's default (CURAND_RNG_PSEUDO_XORWOW) */
    KILN_RNG_PHILOX4_32_10 = 1, /* CURAND_RNG_PSEUDO_PHILOX4_32_10 */
    KILN_RNG_MRG32K3A = 2       /* CURAND_RNG_PSEUDO_MRG32K3A */
} kiln_rng_type;

typedef enum kiln_rng_ordering {
    KILN_RNG_ORDERING_DEFAULT = 0, /* CURAND_ORDERING_PSEUDO_DEFAULT (= BEST) */
    KILN_RNG_ORDERING_LEGACY = 1   /* CURAND_ORDERING_PSEUDO_LEGACY: fixed across cuRAND releases */
} kiln_rng_ordering;

/* New generator of `type` on ctx with `seed`, offset 0, the default ordering
 * and the context's default stream. Release with kiln_rng_release (before
 * kiln_close(ctx)). KILN_ERR_INVALID_ARGUMENT for an unknown type. */
KILN_API kiln_status kiln_rng_create(kiln_context *ctx, kiln_rng_type type, uint64_t seed, kiln_rng **out);
/* Frees the generator (and its cuRAND generator). NULL is a no-op. */
KILN_API void kiln_rng_release(kiln_rng *rng);
/* Sets the seed and puts the offset back to 0. */
KILN_API kiln_status kiln_rng_set_seed(kiln_rng *rng, uint64_t seed);
/* Position in the generator's sequence, counted in 32-bit outputs as
 * cuRAND's curandSetGeneratorOffset counts it. */
KILN_API kiln_status kiln_rng_set_offset(kiln_rng *rng, uint64_t offset);
KILN_API kiln_status kiln_rng_offset(const kiln_rng *rng, uint64_t *offset);
KILN_API kiln_status kiln_rng_set_ordering(kiln_rng *rng, kiln_rng_ordering ordering);
/* Stream for the fills (NULL: the context's default). The stream must
 * belong to the generator's context and outlive its use by the generator. */
KILN_API kiln_status kiln_rng_set_stream(kiln_rng *rng, kiln_stream *stream);
/* "xorwow", "philox4_32_10", "mrg32k3a"; static storage ("unknown" else). */
KILN_API const char *kiln_rng_type_name(kiln_rng_type type);

/* Uniform values in (0, 1] into a float32 or float64 array (curandGenerateUniform / ...Double). */
KILN_API kiln_status kiln_rng_uniform(kiln_rng *rng, kiln_array *out);
/* Normal values (Box-Muller) with mean and stddev >= 0 into float32 or float64. */
KILN_API kiln_status kiln_rng_normal(kiln_rng *rng, kiln_array *out, double mean, double stddev);
/* exp of normal(mean, stddev) into float32 or float64. */
KILN_API kiln_status kiln_rng_lognormal(kiln_rng *rng, kiln_array *out, double mean, double stddev);
/* Poisson counts with mean lambda > 0 into uint32 (or int32). */
KILN_API kiln_status kiln_rng_poisson(kiln_rng *rng, kiln_array *out, double lambda);
/* Raw 32-bit outputs (curandGenerate) into uint32 or int32. cuRAND has no
 * 64-bit output for these generators, so uint64 is refused (KILN_ERR_DTYPE). */
KILN_API kiln_status kiln_rng_bits(kiln_rng *rng, kiln_array *out);
/* The in-kernel API: CUDA C text with cuRAND's device functions for
 * Philox4x32-10, MRG32k3a and XORWOW (kiln_curand_init_philox,
 * kiln_curand_philox, kiln_curand_uniform_philox, kiln_curand_normal_philox,
 * ..._mrg32k3a, ..._xorwow, and the stateless kiln_philox_uniform(seed,
 * index)) giving curand_kernel.h's values on both backends. Prepend it to a
 * kernel's source, or pass it as a ufunc's preamble. Static storage. */
KILN_API const char *kiln_rng_device_source(void);
/* XORWOW's skip-ahead tables for kiln_curand_init_xorwow: 131 matrices of
 * 800 uint32 (M^(2^k), cuRAND's column layout), 419200 bytes, in ctx's
 * memory (device memory on CUDA). Pass kiln_arr(*out) to the kernel as its
 * `const unsigned int *tables`; release the array when done. */
KILN_API kiln_status kiln_rng_xorwow_tables(kiln_context *ctx, kiln_array **out);

/* ------------------------------------------------------------------ FFT (src/fft/) */
/* Discrete Fourier transforms over kiln arrays: FFTW 3 on the CPU backend,
 * cuFFT on CUDA, both loaded at first use (a missing one is
 * KILN_ERR_LIBRARY_MISSING naming the package: libfftw3-double3 for float64,
 * libfftw3-single3 for float32 on Debian; the CUDA toolkit's libcufft).
 *
 *   kiln_array *F = NULL;
 *   kiln_fftn(img, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &F);   all axes
 *   kiln_fftn(F, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_INVERSE, &F);     in place
 *
 * Kinds: complex to complex (complex64/complex128 both sides), real to
 * complex (float32 -> complex64, float64 -> complex128; the last transform
 * axis has n/2+1 outputs, NumPy's rfftn) and complex to real (the inverse;
 * the last axis has n real outputs). Transforms run over any set of axes
 * (the others are a batch), any strides: layouts the library's advanced
 * layout cannot express (negative strides, strides that are not multiples of
 * the item size; on cuFFT also transform axes whose strides do not nest) are
 * copied to contiguous scratch once per call (kiln_fft_plan_copies says so);
 * more axes than the library takes at once (cuFFT: 3) run as several passes.
 * C2R always reads a copy of its input, because both libraries overwrite a
 * C2R input. Normalisation as NumPy's `norm`. The result equals NumPy's
 * fftn/rfftn/irfftn up to rounding. */
typedef enum kiln_fft_kind { KILN_FFT_C2C = 0, KILN_FFT_R2C = 1, KILN_FFT_C2R = 2 } kiln_fft_kind;
typedef enum kiln_fft_direction { KILN_FFT_FORWARD = -1, KILN_FFT_INVERSE = 1 } kiln_fft_direction;
typedef enum kiln_fft_norm {
    KILN_FFT_NORM_BACKWARD = 0, /* forward unscaled, inverse times 1/n (NumPy's default) */
    KILN_FFT_NORM_ORTHO = 1,    /* both times 1/sqrt(n) */
    KILN_FFT_NORM_FORWARD = 2   /* forward times 1/n, inverse unscaled */
} kiln_fft_norm;
/* "backward" (or NULL / ""), "ortho", "forward"; KILN_ERR_INVALID_ARGUMENT else. */
KILN_API kiln_status kiln_fft_norm_parse(const char *name, kiln_fft_norm *out);

typedef struct kiln_fft_plan kiln_fft_plan;

/* A plan for transforming arrays laid out like `in` and `out` (dtype, shape,
 * strides; in place when they are the same memory) over `axes` (naxes
 * entries, negative counts from the end, each at most once; NULL: all axes).
 * R2C must be KILN_FFT_FORWARD, C2R KILN_FFT_INVERSE; in place is C2C only.
 * Plans live in the context's cache: the same arguments again return the same
 * plan without planning. Release with kiln_fft_plan_release; a plan still
 * held when its context closes only fails (KILN_ERR_INVALID_ARGUMENT) and
 * frees on release. */
KILN_API kiln_status kiln_fft_plan_create(kiln_fft_kind kind, kiln_fft_direction direction,
                                          const kiln_array *in, const kiln_array *out, const int *axes,
                                          int naxes, kiln_fft_norm norm, kiln_fft_plan **plan);
/* Runs the plan on arrays of the plan's context laid out as the ones it was
 * made for (other data pointers are fine). Queued on `stream` (NULL: the
 * default stream) on CUDA; on the CPU it returns when done. */
KILN_API kiln_status kiln_fft_execute(kiln_fft_plan *plan, kiln_array *in, kiln_array *out,
                                      kiln_stream *stream);
/* Drops the caller's reference. NULL: no-op. */
KILN_API void kiln_fft_plan_release(kiln_fft_plan *plan);

/* One-call forms on the default stream (plans from the cache). *out NULL:
 * a new array (the caller releases it); else it is written and must have the
 * result's shape and dtype (for kiln_fftn it may be `in` itself: in place).
 * axes NULL: all axes. */
KILN_API kiln_status kiln_fftn(kiln_array *in, const int *axes, int naxes, kiln_fft_norm norm,
                               kiln_fft_direction direction, kiln_array **out);
/* Real input (float32/float64) to the half spectrum: the last axis of `axes`
 * has n/2+1 complex outputs. */
KILN_API kiln_status kiln_rfftn(kiln_array *in, const int *axes, int naxes, kiln_fft_norm norm,
                                kiln_array **out);
/* Half spectrum back to real: the last axis of `axes` gets `last_n` outputs
 * (0: 2*(m-1) for an input of length m there, NumPy's default); m must be
 * last_n/2+1. */
KILN_API kiln_status kiln_irfftn(kiln_array *in, const int *axes, int naxes, int64_t last_n,
                                 kiln_fft_norm norm, kiln_array **out);

/* Convolution through the FFT, as SciPy's signal.fftconvolve: a and b of
 * the same ndim, convolved along `axes` (NULL: all), the other axes equal
 * or 1 (broadcast). float32/float64/complex64/complex128 in any mix; the
 * result is complex if either input is, double if either is. Modes as
 * SciPy's: FULL (a + b - 1 along each convolved axis), SAME (a's length,
 * centred), VALID (|a - b| + 1; one operand must be at least as large as
 * the other along every convolved axis). *out NULL: a new array the caller
 * releases; else written, with exactly the result's shape and dtype. Both
 * operands are zero-padded to lengths made of 2, 3, 5 and 7; on the
 * default stream. CIRCULAR (kiln's own): a and b of the same length along
 * every convolved axis, not padded, ifftn(fftn(a) * fftn(b)) of that
 * length (what seed 001's padded steps compute). On CUDA the product is
 * fused into the inverse transform where cuFFT can (KILN_FFT_FUSE). */
typedef enum kiln_convolve_mode {
    KILN_CONVOLVE_FULL = 0,
    KILN_CONVOLVE_SAME = 1,
    KILN_CONVOLVE_VALID = 2,
    KILN_CONVOLVE_CIRCULAR = 3
} kiln_convolve_mode;
KILN_API kiln_status kiln_fft_convolve(kiln_array *a, kiln_array *b, kiln_convolve_mode mode, const int *axes,
                                       int naxes, kiln_array **out);

/* ------------------------------------------------------------------ linear algebra (src/blas/) */
/* Dense linear algebra on kiln arrays through the vendor BLAS, loaded at
 * run time: cuBLAS (CUDA toolkit, libcublas.so.13/.12) on a CUDA context, on
 * the array's stream; OpenBLAS through its CBLAS interface (Debian
 * libopenblas0) on the CPU, threads from KILN_NUM_THREADS (else all cores).
 * A missing library is KILN_ERR_LIBRARY_MISSING naming what to install.
 *
 * Arrays are row-major with any strides: transposed, sliced and sub-matrix
 * views become the library's transpose flags and leading dimensions without
 * a copy; a layout the library cannot express (negative or non-unit inner
 * strides, host arrays on a CUDA context) is copied once, and the copy shows
 * in KILN_PROFILE as a "blas layout copy" row next to the call's own. Dtypes: float32, float64, complex64,
 * complex128; on CUDA also float16 (tensor cores, float32 accumulation). float16 on the CPU backend is
 * KILN_ERR_UNSUPPORTED. bfloat16 on both: cuBLAS's Ex calls (CUDA_R_16BF,
 * float32 accumulation) on CUDA; on the CPU (OpenBLAS 0.3.21 has no sbgemm)
 * through float32 copies and SGEMM, rounded back once, the copies shown in
 * KILN_PROFILE. Sizes must fit the libraries' 32-bit ints.
 * Every call records a profiler row "blas <op> <dtype> [<provider>]" (its
 * GFLOP/s in the summary, its shapes and GFLOP in the trace). Device work is
 * asynchronous on `stream` (NULL: the default stream) except where a host
 * scalar is returned. */

/* A scalar coefficient; `im` is used by complex dtypes only. */
typedef struct kiln_blas_scalar {
    double re, im;
} kiln_blas_scalar;
static inline kiln_blas_scalar kiln_blas_scalar_of(double re, double im) {
    kiln_blas_scalar s;
    s.re = re;
    s.im = im;
    return s;
}
#define KILN_BLAS_SCALAR(re_, im_) kiln_blas_scalar_of((re_), (im_))

/* Options of kiln_matmul_ex / kiln_gemm (bitwise or). */
typedef enum kiln_blas_flags {
    KILN_BLAS_DEFAULT = 0,
    KILN_BLAS_ALLOW_TF32 = 1,    /* float32 on CUDA may use TF32 tensor cores (10-bit mantissa) */
    KILN_BLAS_FORCE_LIBRARY = 2, /* never kiln's own small-matrix kernel */
    KILN_BLAS_FORCE_KILN = 4     /* kiln's own small-matrix kernel whatever the batch, where it can take it */
} kiln_blas_flags;

/* What kiln_gemm / kiln_gemv apply to an operand: none, transpose, or
 * conjugate transpose (complex dtypes; on real ones KILN_BLAS_C is
 * KILN_BLAS_T, as in the BLAS). kiln_gemm passes a conjugate transpose to
 * the library as CblasConjTrans / CUBLAS_OP_C without a copy where the
 * operand is stored transposed in the library's column-major terms (a
 * row-major operand with a row-major c); otherwise conj(operand) is copied
 * once ("blas conjugate copy" in KILN_PROFILE). kiln_gemv never copies the
 * matrix: a transposed view goes as op C, a row-major one as
 * conj(y) = conj(alpha) a^T conj(x) + conj(beta) conj(y) (the vectors are
 * conjugated, "blas conjugate copy" / "in place" rows). */
typedef enum kiln_blas_op { KILN_BLAS_N = 0, KILN_BLAS_T = 1, KILN_BLAS_C = 2 } kiln_blas_op;

/* NumPy's matmul: (..., m, k) @ (..., k, n) -> (..., m, n), leading dims
 * broadcast; a 1-d `a` is (1, k) and a 1-d `b` (k, 1), the added dim removed
 * from the result. The result dtype is the first of float16 (CUDA, both
 * float16), bfloat16, float32, float64, complex64, complex128 that both inputs cast to
 * safely (at least one must be floating or complex; an input of another dtype
 * is converted once). *out NULL: a new device array (caller releases);
 * otherwise written in place: exactly the result's shape and dtype, and not
 * overlapping an input. Batches of 64 or more small float32/float64
 * matrices (every dim <= 8) run kiln's own gufunc kernel (faster there),
 * others one strided-batched library call (a batch whose strides do not
 * merge: one call over matrix addresses, or one per run); the profile says
 * which ran. */
KILN_API kiln_status kiln_matmul(kiln_array *a, kiln_array *b, kiln_array **out);
/* kiln_matmul on `stream` with kiln_blas_flags. */
KILN_API kiln_status kiln_matmul_ex(kiln_stream *stream, int flags, kiln_array *a, kiln_array *b,
                                    kiln_array **out);
/* c = alpha op_a(a) op_b(b) + beta c, a (..., m, k) after op_a, b (..., k, n)
 * after op_b, c (..., m, n) given, with the broadcast batch shape; one dtype
 * for all three. beta 0 ignores c's old contents (NaN included). */
KILN_API kiln_status kiln_gemm(kiln_stream *stream, int flags, kiln_blas_op op_a, kiln_blas_op op_b,
                               kiln_blas_scalar alpha, kiln_array *a, kiln_array *b, kiln_blas_scalar beta,
                               kiln_array *c);
/* y = alpha op(a) x + beta y: a 2-d, x and y 1-d of matching lengths. */
KILN_API kiln_status kiln_gemv(kiln_stream *stream, kiln_blas_op op, kiln_blas_scalar alpha, kiln_array *a,
                               kiln_array *x, kiln_blas_scalar beta, kiln_array *y);
/* Level 1 on 1-d arrays of one dtype (any stride). Results that are scalars
 * come back as host values: the call waits for the stream's work. */
/* *result = sum x_i y_i (no conjugation). */
KILN_API kiln_status kiln_dot(kiln_stream *stream, kiln_array *x, kiln_array *y, kiln_blas_scalar *result);
/* *result = sum conj(x_i) y_i (kiln_dot for real dtypes). */
KILN_API kiln_status kiln_vdot(kiln_stream *stream, kiln_array *x, kiln_array *y, kiln_blas_scalar *result);
/* y += alpha x. */
KILN_API kiln_status kiln_axpy(kiln_stream *stream, kiln_blas_scalar alpha, kiln_array *x, kiln_array *y);
/* x *= alpha. */
KILN_API kiln_status kiln_scal(kiln_stream *stream, kiln_blas_scalar alpha, kiln_array *x);
/* *result = sqrt(sum |x_i|^2), computed without overflow. */
KILN_API kiln_status kiln_nrm2(kiln_stream *stream, kiln_array *x, double *result);
/* The provider a context's calls go to: "cuBLAS (libcublas.so.13)",
 * "OpenBLAS (libopenblas.so.0; OpenBLAS 0.3.21 ...), 2 threads": *name gets
 * static storage.
 * KILN_ERR_LIBRARY_MISSING when it cannot be loaded. */
KILN_API kiln_status kiln_blas_provider(kiln_context *ctx, const char **name);

/* ------------------------------------------------------------------ dense solvers (src/linalg/) */
/* numpy.linalg on kiln arrays, through the vendor LAPACK loaded at run time:
 * cuSOLVER's dense API (CUDA toolkit, libcusolver.so.12/.11) on a CUDA
 * context, LAPACKE (Debian liblapacke, over OpenBLAS's LAPACK) on the CPU;
 * a missing library is KILN_ERR_LIBRARY_MISSING naming what to install.
 * Inputs are stacks of matrices (..., m, n) with any strides, float32,
 * float64, complex64 or complex128 (convert other dtypes first); every call
 * runs on each matrix of the leading (batch) dims, as NumPy does, and never
 * writes its inputs. Outputs are new contiguous device arrays the caller
 * releases. A matrix the routine cannot take (singular, not positive
 * definite, no convergence) is KILN_ERR_LINALG naming its batch index; the
 * calls wait for their work (they read each matrix's status back), so none
 * may be part of a graph capture. KILN_PROFILE shows one row per library
 * routine, "linalg <op> <routine> <dtype> [<provider>]" ("linalg solve getrf
 * float64 [cuSOLVER]"), and kiln's own kernels and copies beside it. docs/linalg.md tells which copies each
 * call makes. */

/* NumPy's solve: x with a x = b; a (..., n, n), b (n,) (one vector for
 * every matrix) or (..., n, k) with batch dims broadcast against a's; x has
 * b's shape with the broadcast batch. LU with partial pivoting. */
KILN_API kiln_status kiln_solve(kiln_array *a, kiln_array *b, kiln_array **x);
/* The inverse of each matrix of a (..., n, n), by LU. */
KILN_API kiln_status kiln_inv(kiln_array *a, kiln_array **out);
/* Lower-triangular L with a = L L^H for Hermitian positive-definite a
 * (..., n, n); only a's lower triangle is read, L's upper one is zero. */
KILN_API kiln_status kiln_cholesky(kiln_array *a, kiln_array **l);
/* numpy.linalg.qr modes, for a (..., m, n) and k = min(m, n): reduced gives
 * q (..., m, k) and r (..., k, n); complete q (..., m, m) and r (..., m, n);
 * r only r (..., k, n) (q may be NULL and is left untouched). */
typedef enum kiln_qr_mode { KILN_QR_REDUCED = 0, KILN_QR_COMPLETE = 1, KILN_QR_R = 2 } kiln_qr_mode;
/* a = q r with q's columns orthonormal and r upper triangular (Householder). */
KILN_API kiln_status kiln_qr(kiln_array *a, kiln_qr_mode mode, kiln_array **q, kiln_array **r);
/* a = u diag(s) vh for a (..., m, n): s (..., k) real, descending; with
 * compute_uv, u (..., m, m) and vh (..., n, n) when full_matrices, else
 * (..., m, k) and (..., k, n); without it u and vh may be NULL. */
KILN_API kiln_status kiln_svd(kiln_array *a, int full_matrices, int compute_uv, kiln_array **u,
                              kiln_array **s, kiln_array **vh);
/* Eigenvalues w (..., n), real and ascending, and, when v is not NULL,
 * eigenvectors as v's columns (..., n, n) of Hermitian a, of which only
 * the triangle uplo ('L', NumPy's default, or 'U') is read. */
KILN_API kiln_status kiln_eigh(kiln_array *a, char uplo, kiln_array **w, kiln_array **v);
/* NumPy's lstsq for a 2-d a (m, n) and b (m,) or (m, k): the minimum-norm x
 * minimising |b - a x|, through the SVD; singular values at or below
 * rcond * max(s) count as zero (rcond < 0: max(m, n) * the dtype's epsilon,
 * NumPy's default). residuals: the squared norms of b - a x per column
 * ((1,) for a 1-d b) when rank == n < m, else shape (0,); s: a's singular
 * values. x, residuals and s are new arrays. */
KILN_API kiln_status kiln_lstsq(kiln_array *a, kiln_array *b, double rcond, kiln_array **x,
                                kiln_array **residuals, int64_t *rank, kiln_array **s);
/* The determinant of each matrix of a (..., n, n): an array of a's batch
 * shape (0-d for one matrix), from the LU factors; 0 for singular ones. */
KILN_API kiln_status kiln_det(kiln_array *a, kiln_array **out);
/* det = sign * exp(logabsdet) without overflow: sign (a's dtype; |sign| = 1,
 * or 0 for a singular matrix, whose logabsdet is -inf) and logabsdet (real). */
KILN_API kiln_status kiln_slogdet(kiln_array *a, kiln_array **sign, kiln_array **logabsdet);
/* The library a context's linalg calls go to: "cuSOLVER (libcusolver.so.12)",
 * "LAPACKE (liblapacke.so.3) over OpenBLAS, 2 threads"; static storage.
 * KILN_ERR_LIBRARY_MISSING when it cannot be loaded. */
KILN_API kiln_status kiln_linalg_provider(kiln_context *ctx, const char **name);

/* ------------------------------------------------------------------ reductions and scans (src/reduce/) */
/* NumPy-style reductions and scans over any set of axes of any strided view,
 * on both backends, from kernels kiln generates per (operation, dtype,
 * layout) and caches like ufuncs.
 *
 *   kiln_array *total = NULL, *rows = NULL;
 *   kiln_sum(a, NULL, 0, 0, NULL, &total);            (every axis: a 0-d array)
 *   int ax = 1;
 *   kiln_sum(a, &ax, 1, 0, NULL, &rows);              (row sums of a matrix)
 *
 * axes: NULL means every axis; otherwise naxes distinct axes, negative ones
 *   counting from the end (-1 is the last). An axis out of range or given
 *   twice is KILN_ERR_INVALID_ARGUMENT.
 * keepdims: reduced axes stay as size-1 dims.
 * out: NULL, or an array of the result's shape exactly whose dtype the
 *   result casts to safely; any strides. *result (may be NULL when out is
 *   given) receives a new reference: the new array, or out retained.
 * Dtypes (NumPy's): sum/prod of bool and signed ints give int64, of
 *   unsigned ints uint64, of float16 float16 (accumulated in float32);
 *   min/max keep the dtype; argmin/argmax give int64 (the C-order index
 *   within the reduced elements); any/all give bool; mean/var/std of ints
 *   and bool give float64, of floats the same float (float16 computed in
 *   float32). Complex: sum, prod and mean only.
 * NaN: min/max propagate NaN; argmin/argmax give the first NaN.
 * Empty reductions give the identity (sum 0, prod 1, any false, all true,
 *   mean/var NaN); min/max/argmin/argmax of an empty axis (with a non-empty
 *   result) are KILN_ERR_INVALID_ARGUMENT.
 * Accuracy: floating sums are at least as accurate as pairwise summation
 *   (CPU: NumPy's pairwise scheme; CUDA: float16/float32 accumulate in
 *   float64), and every result is the same run to run on one device (fixed
 *   combination trees, no atomics).
 * Work is queued on opts->stream (NULL: the default stream); host-memory
 * inputs on a CUDA context are copied to the device first. */
typedef enum kiln_reduce_op {
    KILN_REDUCE_SUM = 0,
    KILN_REDUCE_PROD,
    KILN_REDUCE_MIN,
    KILN_REDUCE_MAX,
    KILN_REDUCE_ARGMIN,
    KILN_REDUCE_ARGMAX,
    KILN_REDUCE_ANY,
    KILN_REDUCE_ALL,
    KILN_REDUCE_MEAN,
    KILN_REDUCE_VAR,
    KILN_REDUCE_STD,
    KILN_REDUCE_OP_COUNT
} kiln_reduce_op;

/* Options of every reduction; `kiln_reduce_opts o = {0};` reduces every axis
 * into a new array on the default stream. */
typedef struct kiln_reduce_opts {
    const int *axes; /* NULL: every axis */
    int naxes;
    int keepdims;
    kiln_array *out; /* NULL: a new array */
    int ddof;        /* var/std: divide by n - ddof */
    kiln_stream *stream;
} kiln_reduce_opts;

/* Reduces `a` with op (opts may be NULL: every axis, new array). */
KILN_API kiln_status kiln_reduce(kiln_reduce_op op, kiln_array *a, const kiln_reduce_opts *opts,
                                 kiln_array **result);
/* Shorthands of kiln_reduce on the default stream. */
KILN_API kiln_status kiln_sum(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,
                              kiln_array **result);
KILN_API kiln_status kiln_prod(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,
                               kiln_array **result);
KILN_API kiln_status kiln_min(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,
                              kiln_array **result);
KILN_API kiln_status kiln_max(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,
                              kiln_array **result);
KILN_API kiln_status kiln_argmin(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,
                                 kiln_array **result);
KILN_API kiln_status kiln_argmax(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,
                                 kiln_array **result);
KILN_API kiln_status kiln_any(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,
                              kiln_array **result);
KILN_API kiln_status kiln_all(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,
                              kiln_array **result);
KILN_API kiln_status kiln_mean(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,
                               kiln_array **result);
KILN_API kiln_status kiln_var(kiln_array *a, const int *axes, int naxes, int ddof, int keepdims,
                              kiln_array *out, kiln_array **result);
KILN_API kiln_status kiln_std(kiln_array *a, const int *axes, int naxes, int ddof, int keepdims,
                              kiln_array *out, kiln_array **result);
/* The value of a one-element array (a full reduction) converted to double,
 * waiting for the work that makes it. */
KILN_API kiln_status kiln_array_item_f64(kiln_array *a, double *value);

/* User-defined reductions (CuPy's ReductionKernel), as CUDA C snippets:
 *
 *   kiln_reduction_spec l2 = {.in_params = "f4 x", .out_type = "f4", .acc_type = "double",
 *       .map_expr = "(double)x * x", .reduce_expr = "a + b", .post_expr = "sqrt(a)",
 *       .identity = "0"};
 *   kiln_reduction_kernel *norm;
 *   kiln_reduction_kernel_create(ctx, "l2norm", &l2, &norm);
 *   kiln_reduction_kernel_call(norm, KILN_ARGS(kiln_arr(x)), NULL, &r);
 *
 * in_params: "f4 x, f8 w": a kiln_dtype_parse type and a name per input;
 *   inputs are arrays (broadcast together like ufunc arguments, each dtype
 *   casting safely to its parameter's) or scalars.
 * acc_type: the accumulator's C type (a struct from the preamble is fine);
 *   NULL: the output's compute type.
 * map_expr: the accumulator value of one element, from the inputs' names and
 *   _i (long long: the C-order index within the reduced elements).
 * reduce_expr: combines accumulators a and b; it must be associative and
 *   commutative (the combination order is fixed per shape and device, so
 *   results repeat exactly). identity: reduce's identity.
 * post_expr: the output from the accumulator a and _n (long long: elements
 *   reduced); NULL: "a".
 * Each snippet compiles with its own line numbers: errors name
 * "<name>.map", "<name>.reduce", "<name>.post", "<name>.identity" or
 * "<name>.preamble". The same text runs on both backends. */
typedef struct kiln_reduction_spec {
    const char *in_params;
    const char *out_type;
    const char *acc_type;
    const char *map_expr;
    const char *reduce_expr;
    const char *post_expr;
    const char *identity;
    const char *preamble;
} kiln_reduction_spec;

typedef struct kiln_reduction_kernel kiln_reduction_kernel;

/* Checks the spec and compiles the kernel for contiguous inputs of the
 * declared dtypes (compile errors surface here). `name`: a C identifier.
 * Release with kiln_reduction_kernel_release. */
KILN_API kiln_status kiln_reduction_kernel_create(kiln_context *ctx, const char *name,
                                                  const kiln_reduction_spec *spec,
                                                  kiln_reduction_kernel **out);
/* Reduces the broadcast inputs over opts->axes (opts may be NULL: every
 * axis; ddof is ignored). Result as for kiln_reduce. */
KILN_API kiln_status kiln_reduction_kernel_call(kiln_reduction_kernel *k, const kiln_value *args, int nargs,
                                                const kiln_reduce_opts *opts, kiln_array **result);
KILN_API void kiln_reduction_kernel_release(kiln_reduction_kernel *k);

/* Reduce and accumulate with a binary ufunc made by kiln_vectorize (NumPy's
 * ufunc.reduce / ufunc.accumulate): its body is the operator (it must be
 * associative, and commutative for reduce) on the signature whose two
 * inputs and output share the dtype `a` casts to safely. identity: a C
 * expression, or NULL: an empty reduction is then an error. */
KILN_API kiln_status kiln_ufunc_reduce(kiln_ufunc *f, kiln_array *a, const char *identity,
                                       const kiln_reduce_opts *opts, kiln_array **result);
/* Inclusive scan with the ufunc's operator along `axis` (KILN_AXIS_FLAT: the
 * C-order flattened array). out/result as for kiln_scan. */
KILN_API kiln_status kiln_ufunc_accumulate(kiln_ufunc *f, kiln_array *a, int axis, kiln_array *out,
                                           kiln_array **result);

/* Scans (cumulative operations) along one axis. */
typedef enum kiln_scan_op { KILN_SCAN_SUM = 0, KILN_SCAN_PROD, KILN_SCAN_MIN, KILN_SCAN_MAX } kiln_scan_op;
/* axis value meaning "the C-order flattened array" (NumPy's axis=None). */
#define KILN_AXIS_FLAT (-1000000)

/* Inclusive (exclusive: 0 then element i is the op of elements < i, starting
 * from the identity) scan of `a` along axis. Dtypes as sum/prod for
 * SUM/PROD (float16/float32 sums run in float64, rounded once per element),
 * unchanged for MIN/MAX; MIN/MAX propagate NaN. out: NULL or an
 * array of the result's shape and a dtype the result casts to safely.
 * *result (may be NULL when out is given): a new reference. Queued on
 * `stream` (NULL: the default). */
KILN_API kiln_status kiln_scan(kiln_scan_op op, kiln_array *a, int axis, int exclusive, kiln_array *out,
                               kiln_stream *stream, kiln_array **result);
/* Inclusive shorthands (NumPy's cumsum, cumprod; cummin/cummax as
 * np.minimum.accumulate / np.maximum.accumulate). */
KILN_API kiln_status kiln_cumsum(kiln_array *a, int axis, kiln_array *out, kiln_array **result);
KILN_API kiln_status kiln_cumprod(kiln_array *a, int axis, kiln_array *out, kiln_array **result);
KILN_API kiln_status kiln_cummin(kiln_array *a, int axis, kiln_array *out, kiln_array **result);
KILN_API kiln_status kiln_cummax(kiln_array *a, int axis, kiln_array *out, kiln_array **result);

/* A scan with a user operator: `op_expr` combines a (the earlier elements)
 * and b (the later) of type `type` (a kiln_dtype_parse name) and must be
 * associative; identity (may be NULL: then only inclusive scans) is its
 * identity. Errors count lines from each snippet ("<name>.op", ...).
 * Release with kiln_scan_kernel_release. */
typedef struct kiln_scan_kernel kiln_scan_kernel;
KILN_API kiln_status kiln_scan_kernel_create(kiln_context *ctx, const char *name, const char *type,
                                             const char *op_expr, const char *identity, const char *preamble,
                                             kiln_scan_kernel **out);
KILN_API kiln_status kiln_scan_kernel_call(kiln_scan_kernel *k, kiln_array *a, int axis, int exclusive,
                                           kiln_array *out, kiln_array **result);
KILN_API void kiln_scan_kernel_release(kiln_scan_kernel *k);

/* ------------------------------------------------------------------ collectives (src/comm/) */
/* A communicator is a group of ranks, each a kiln context: CUDA contexts
 * talk through NCCL (libnccl.so.2, loaded at run time), CPU contexts through
 * MPI (when kiln was built with MPI: CMake found it, KILN_HAVE_MPI). A
 * communicator of one rank needs neither: its collectives are copies.
 *
 *   kiln_context *ctx; kiln_comm *comm;
 *   kiln_comm_open_env("auto", &ctx, &comm);      (under mpirun -np N, or alone)
 *   kiln_comm_allreduce(comm, x, x, KILN_COMM_SUM, NULL);   (in place, on the default stream)
 *   kiln_comm_release(comm); kiln_close(ctx);
 *
 * Collectives take contiguous arrays of the communicator's context and queue
 * the work on `stream` (NULL: the context's default stream), asynchronous
 * like kernels on CUDA; on the CPU they run inside the call. Counts are in
 * elements. Every rank must make the same calls in the same order with the
 * same counts, dtypes, ops and roots: kiln checks this before each collective
 * where it can (kiln_comm_set_checks) and fails with KILN_ERR_SHAPE or
 * KILN_ERR_DTYPE naming each rank's arguments. Dtypes: every dtype moves
 * (broadcast, all-gather, send/recv); reductions take int8, uint8, int32,
 * uint32, int64, uint64, float16, float32, float64 (NCCL's set, the same on
 * MPI), plus complex64/complex128 for KILN_COMM_SUM and KILN_COMM_AVG; KILN_COMM_AVG only
 * floating and complex dtypes. A peer that dies or stops answering makes
 * the others fail with KILN_ERR_COMM after the timeout (kiln_comm_set_timeout),
 * not hang; the communicator is then unusable (release it; MPI cannot
 * recover, so a program should then exit). */
typedef struct kiln_comm kiln_comm;

typedef enum kiln_comm_op {
    KILN_COMM_SUM = 0,
    KILN_COMM_PROD = 1,
    KILN_COMM_MIN = 2,
    KILN_COMM_MAX = 3,
    KILN_COMM_AVG = 4 /* the sum divided by the number of ranks */
} kiln_comm_op;

/* A communicator over the ranks of an MPI communicator: `mpi_comm` points at
 * an MPI_Comm (kiln duplicates it): `MPI_Comm w = MPI_COMM_WORLD;
 * kiln_comm_from_mpi(ctx, &w, &comm);` after MPI_Init. Collective: every
 * rank calls it with its own context. CUDA contexts get an NCCL communicator
 * whose unique id rank 0 broadcasts over MPI. KILN_ERR_UNSUPPORTED when kiln
 * was built without MPI. The program must use the MPI kiln was built with
 * (kiln_comm_mpi_library says which). Release with kiln_comm_release. */
KILN_API kiln_status kiln_comm_from_mpi(kiln_context *ctx, const void *mpi_comm, kiln_comm **out);
/* Convenience for programs started by mpirun (OMPI_COMM_WORLD_RANK/SIZE,
 * PMI_RANK/SIZE, PMIX_RANK): initialises MPI if nobody has, opens a context
 * on `target` ("auto", "cpu", "cuda": on CUDA the device is the local rank
 * modulo the device count; "cuda:N" is taken as given) and makes a
 * communicator over MPI_COMM_WORLD. Started alone (no mpirun), it gives a
 * communicator of one rank, with or without MPI. The caller releases *comm
 * first, then closes *ctx; releasing the last such communicator finalizes
 * MPI if kiln initialised it. */
KILN_API kiln_status kiln_comm_open_env(const char *target, kiln_context **ctx, kiln_comm **comm);
/* One process driving several GPUs (ncclCommInitAll): ctxs[i] are CUDA
 * contexts on distinct devices; comms[i] (n slots) becomes rank i's
 * communicator. Calls on several of them from one thread go between
 * kiln_comm_group_start and kiln_comm_group_end. n == 1 works on any context. */
KILN_API kiln_status kiln_comm_init_all(kiln_context *const *ctxs, int n, kiln_comm **comms);
/* Frees the communicator (the context stays open). NULL: no-op. */
KILN_API void kiln_comm_release(kiln_comm *comm);
KILN_API int kiln_comm_rank(const kiln_comm *comm);
KILN_API int kiln_comm_size(const kiln_comm *comm);
KILN_API kiln_context *kiln_comm_context(const kiln_comm *comm);
/* "nccl", "mpi" or "self" (one rank, no library); static storage. */
KILN_API const char *kiln_comm_transport(const kiln_comm *comm);
/* Whether the argument check before each collective runs (default 1: on
 * MPI one small MPI_Allreduce of the arguments; NCCL ranks of one process
 * compare on the host; NCCL ranks of several processes check over MPI).
 * 0 saves that round trip; mismatched calls then hang or corrupt (NCCL
 * itself cannot detect them). Must be the same on every rank. */
KILN_API kiln_status kiln_comm_set_checks(kiln_comm *comm, int enabled);
/* Seconds a rank waits for its peers before KILN_ERR_COMM (default 300, or
 * $KILN_COMM_TIMEOUT). */
KILN_API kiln_status kiln_comm_set_timeout(kiln_comm *comm, double seconds);
/* Waits until the communicator's work on `stream` is done, watching NCCL
 * for a peer's failure (ncclCommGetAsyncError) and the timeout; on either,
 * aborts the NCCL communicator and returns KILN_ERR_COMM. Prefer it to
 * kiln_stream_synchronize after collectives on CUDA. */
KILN_API kiln_status kiln_comm_wait(kiln_comm *comm, kiln_stream *stream);

/* Collectives called from one thread on several communicators of one
 * process (kiln_comm_init_all), and sends and receives that must progress
 * together (halo exchanges), go between these two: the work is queued at
 * kiln_comm_group_end (NCCL group; on MPI the sends and receives are posted
 * non-blocking and completed there). Nestable; per thread. */
KILN_API kiln_status kiln_comm_group_start(void);
KILN_API kiln_status kiln_comm_group_end(void);

/* recv[i] = op over ranks of send[i]. send == recv: in place. Same size and
 * dtype on every rank. */
KILN_API kiln_status kiln_comm_allreduce(kiln_comm *comm, kiln_array *send, kiln_array *recv, kiln_comm_op op,
                                         kiln_stream *stream);
/* recv = root's send on every rank. send is read on the root only (may be
 * NULL elsewhere; send == recv: in place). */
KILN_API kiln_status kiln_comm_broadcast(kiln_comm *comm, kiln_array *send, kiln_array *recv, int root,
                                         kiln_stream *stream);
/* recv on the root = op over ranks of send; recv may be NULL elsewhere. */
KILN_API kiln_status kiln_comm_reduce(kiln_comm *comm, kiln_array *send, kiln_array *recv, kiln_comm_op op,
                                      int root, kiln_stream *stream);
/* recv (size * n elements) = the ranks' sends in rank order. */
KILN_API kiln_status kiln_comm_allgather(kiln_comm *comm, kiln_array *send, kiln_array *recv,
                                         kiln_stream *stream);
/* recv (n elements) = op over ranks of send's block `rank` (send has size * n). */
KILN_API kiln_status kiln_comm_reduce_scatter(kiln_comm *comm, kiln_array *send, kiln_array *recv,
                                              kiln_comm_op op, kiln_stream *stream);
/* Point to point: `peer` must post the matching kiln_comm_recv/kiln_comm_send with the
 * same element count. A send and a receive that must overlap (each rank
 * sends to and receives from a neighbour) go inside one group. */
KILN_API kiln_status kiln_comm_send(kiln_comm *comm, kiln_array *a, int peer, kiln_stream *stream);
KILN_API kiln_status kiln_comm_recv(kiln_comm *comm, kiln_array *a, int peer, kiln_stream *stream);

/* dst = src between two contexts of one process (two GPUs: direct over the
 * peer link when the devices allow it, else staged by the driver; CPU
 * contexts: a memcpy). Same dtype and size, both contiguous; queued on
 * `stream` of dst's context. src's context must have finished writing src
 * (kiln_synchronize) before the call. */
KILN_API kiln_status kiln_array_copy_peer(kiln_array *dst, kiln_array *src, kiln_stream *stream);
/* The MPI library kiln was built with ("Open MPI v4.1.4, ..."), or NULL when
 * built without MPI; static storage. */
KILN_API const char *kiln_comm_mpi_library(void);

/* ------------------------------------------------------------------ driver layer */
/* What a CUDA programmer expects beside launches and copies: events that
 * order streams, host callbacks, occupancy, memory kinds, peers and graphs.
 * Each works on both backends; docs/driver.md says what each costs. On the
 * CPU backend every operation has finished when its call returns, so events
 * and streams are always ready and a wait never waits. */

/* Event flags: KILN_EVENT_DISABLE_TIMING makes an event that only orders
 * work: cheaper to record and to wait on, refused by kiln_event_elapsed_ms. */
#define KILN_EVENT_DEFAULT 0u
#define KILN_EVENT_DISABLE_TIMING 1u
/* kiln_event_create with flags (any other bit: KILN_ERR_INVALID_ARGUMENT). */
KILN_API kiln_status kiln_event_create_ex(kiln_context *ctx, unsigned flags, kiln_event **out);
/* KILN_OK when the work before the event's last record has finished (or it
 * was never recorded), KILN_ERR_NOT_READY while it runs. Never blocks. */
KILN_API kiln_status kiln_event_query(kiln_event *event);
/* Work queued on `stream` (NULL: default) after this call starts only once
 * the work before `event`'s last record has finished; the host does not
 * wait. The event may be recorded again at once. Same context only. */
KILN_API kiln_status kiln_stream_wait_event(kiln_stream *stream, kiln_event *event);
/* KILN_OK when everything queued on `stream` (NULL: default) has finished,
 * KILN_ERR_NOT_READY while some runs. Never blocks. */
KILN_API kiln_status kiln_stream_query(kiln_stream *stream);

/* A host function run in stream order: after the work queued before it,
 * before the work queued after it (cuLaunchHostFunc). It runs on a driver
 * thread (CUDA) or on the calling thread at once (CPU) and must not call
 * kiln on that context: on CUDA that deadlocks or fails. A failure of the
 * work before it (a device fault) means it never runs. */
typedef void (*kiln_host_fn)(void *user);
KILN_API kiln_status kiln_stream_add_callback(kiln_stream *stream, kiln_host_fn fn, void *user);

/* What a compiled kernel uses and allows. On the CPU: registers and local
 * bytes 0 (no such resource), static shared 0 (not recorded per kernel),
 * the block limits of kiln's emulation (1024 threads, 227 KiB shared). */
typedef struct kiln_kernel_resources {
    int registers;                   /* per thread */
    size_t static_shared_bytes;      /* __shared__ variables */
    size_t max_dynamic_shared_bytes; /* a launch may ask this much (kiln opts in past 48 KiB) */
    int max_threads_per_block;       /* for this kernel (registers limit it) */
    size_t local_bytes;              /* per thread: spills and stack */
} kiln_kernel_resources;
KILN_API kiln_status kiln_kernel_info(kiln_kernel *kernel, kiln_kernel_resources *out);
/* Blocks of `block_threads` threads with `dynamic_shared_bytes` each that
 * one multiprocessor holds at once (cuOccupancyMaxActiveBlocksPerMultiprocessor);
 * on the CPU 1 (a worker runs one block at a time), 0 when it does not fit. */
KILN_API kiln_status kiln_occupancy(kiln_kernel *kernel, int block_threads, size_t dynamic_shared_bytes,
                                    int *blocks_per_sm);
/* The block size that maximises occupancy (cuOccupancyMaxPotentialBlockSize),
 * at most block_limit threads (0: no limit), and the smallest grid that fills
 * the device at that size. On the CPU: 256 threads (fibers amortise a block
 * switch over this many) and one block per worker. */
KILN_API kiln_status kiln_occupancy_block_size(kiln_kernel *kernel, size_t dynamic_shared_bytes,
                                               int block_limit, int *min_grid, int *block_threads);
/* Sets the kernel's dynamic shared memory limit (up to the device's opt-in
 * limit less its static shared memory; past 48 KiB this is the opt-in) and,
 * when carveout_percent is 0 to 100, the share of L1 it prefers as shared
 * memory (-1: leave it). The kernel's other kiln_kernel handles see it too.
 * On the CPU the values are checked and the launch limits are unchanged. */
KILN_API kiln_status kiln_kernel_set_shared(kiln_kernel *kernel, size_t max_dynamic_shared_bytes,
                                            int carveout_percent);

/* Arrays of the other memory kinds. Mapped: pinned host memory that
 * kernels read and write over the bus (zero copy: no transfer, each access
 * pays the bus); managed: one address valid on host and device, pages
 * migrate on touch or on kiln_array_prefetch. Both have a host address
 * (kiln_array_host_data) the host may use once the device work touching
 * them has finished. Stream-ordered: device memory taken from the device's
 * pool on `stream` (cuMemAllocAsync), usable by work on that stream at once
 * without a device-wide synchronisation, and returned to the pool in stream
 * order at release. On the CPU all three are host memory. */
KILN_API kiln_status kiln_array_empty_mapped(kiln_context *ctx, kiln_dtype dtype, int ndim,
                                             const int64_t *shape, kiln_array **out);
KILN_API kiln_status kiln_array_empty_managed(kiln_context *ctx, kiln_dtype dtype, int ndim,
                                              const int64_t *shape, kiln_array **out);
KILN_API kiln_status kiln_array_empty_async(kiln_context *ctx, kiln_dtype dtype, int ndim,
                                            const int64_t *shape, kiln_stream *stream, kiln_array **out);
/* The host address of element 0 for host, mapped and managed arrays (and
 * every array on the CPU backend); NULL for device memory. */
KILN_API void *kiln_array_host_data(const kiln_array *a);
/* Managed arrays: migrates the pages to the device (to_device 1) or the host
 * (0) in order on `stream`; other kinds: KILN_ERR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_array_prefetch(kiln_array *a, int to_device, kiln_stream *stream);
typedef enum kiln_memory_advice {
    KILN_ADVISE_READ_MOSTLY = 1,       /* read-only copies on each processor that reads */
    KILN_ADVISE_PREFER_DEVICE = 2,     /* keep the pages on the device */
    KILN_ADVISE_PREFER_HOST = 3,       /* keep the pages in host memory */
    KILN_ADVISE_ACCESSED_BY_DEVICE = 4 /* map them into the device, avoiding faults */
} kiln_memory_advice;
/* A hint for a managed array (cuMemAdvise); a no-op on the CPU. */
KILN_API kiln_status kiln_array_advise(kiln_array *a, kiln_memory_advice advice);
/* Memory the device pool keeps after a synchronisation instead of handing
 * back to the system (kiln's default: all of it, UINT64_MAX; 0 returns it
 * all at each synchronisation). The CPU backend keeps no pool: checked only. */
KILN_API kiln_status kiln_pool_set_release_threshold(kiln_context *ctx, uint64_t bytes);

/* 1 in *can when ctx's device reads and writes peer's memory directly
 * (CUDA peer access over NVLink or PCIe); 0 otherwise, where a copy between
 * them (kiln_array_copy_peer) is staged through the host by the driver.
 * The same device, or two CPU contexts: 1. */
KILN_API kiln_status kiln_device_can_access_peer(kiln_context *ctx, kiln_context *peer, int *can);

/* Graphs: work queued on a stream between begin and end capture is recorded
 * instead of run, and replayed by kiln_graph_launch with one call (CUDA
 * graphs; on the CPU the recorded list, replayed without kiln's per-call
 * checks). Captured: kernel launches, ufunc and gufunc calls whose code is
 * already built, copies between device arrays and to or from host memory
 * of kiln_host_alloc, callbacks and, on CUDA, library calls that the vendor
 * lets capture. Refused with KILN_ERR_CAPTURE: a compile while the context
 * captures (call the ufunc once before), a synchronous host read or write
 * of an array the capture uses, a pageable copy, synchronising the
 * capturing stream, an allocation outside the stream-ordered pool (mapped,
 * managed), and on the CPU the libraries that run host code at once.
 * Arguments are frozen at capture: arrays by address, scalars by value;
 * arrays released during the capture live as long as the graph; kernels and
 * ufuncs it launches must. Capture needs a stream of kiln_stream_create
 * (docs/driver.md). */
typedef struct kiln_graph kiln_graph;
KILN_API kiln_status kiln_graph_begin_capture(kiln_stream *stream);
/* Ends the capture and gives the graph, ready to launch (the caller owns
 * it: kiln_graph_destroy). When the capture failed, ends it all the same
 * and returns the first failure. */
KILN_API kiln_status kiln_graph_end_capture(kiln_stream *stream, kiln_graph **out);
/* Replays the graph on `stream` (NULL: default), in order with its work. */
KILN_API kiln_status kiln_graph_launch(kiln_graph *graph, kiln_stream *stream);
/* Gives `graph` the arguments of `from`, a later capture of the same work
 * with other arguments: in place where the topology is the same
 * (cuGraphExecUpdate), else by instantiating `from` anew. Afterwards `from`
 * holds what `graph` held and is still the caller's to destroy. Neither
 * graph may be running. */
KILN_API kiln_status kiln_graph_update(kiln_graph *graph, kiln_graph *from);
/* Operations the graph holds. */
KILN_API int kiln_graph_node_count(const kiln_graph *graph);
/* Frees the graph; a launch already queued still runs. NULL is a no-op. */
KILN_API void kiln_graph_destroy(kiln_graph *graph);

/* ------------------------------------------------------------------ sorting (src/sort/) */
/* Sorting, NumPy's order: stable (equal keys keep their input order), NaN
 * after every number (NaNs equal among themselves), -0.0 equal to +0.0;
 * the values themselves come out unchanged (-0.0 stays -0.0, NaN payloads
 * stay). Keys: every integer and floating dtype (float16 and bfloat16
 * included) and bool; complex keys are KILN_ERR_DTYPE. A descending sort
 * (KILN_SORT_DESCENDING) is the exact reverse order of the keys with equal
 * keys still in input order, so NaN comes first. CUDA: kiln's onesweep
 * radix sort through NVRTC; CPU: kiln's parallel radix sort, merge sorts
 * for many short sequences (docs/sort.md). One call sorts at most
 * 2^32 - 1 elements.
 * Every call queues its work on `stream` (NULL: the default stream); host
 * arrays on a CUDA context are copied to the device first. `out` arrays
 * (may be NULL) must have the result's shape and dtype and may be the
 * input (in place); *result pointers (may be NULL when out is given) get a
 * new reference (out itself when given). */
#define KILN_SORT_DESCENDING 1

/* Sorts `a` along `axis` (negative counts from the end; KILN_AXIS_FLAT:
 * the C-order flattened array, a 1-d result) into out/result. */
KILN_API kiln_status kiln_sort(kiln_array *a, int axis, int flags, kiln_array *out, kiln_stream *stream,
                               kiln_array **result);
/* The int64 indices along `axis` that sort `a` (np.argsort(kind="stable")). */
KILN_API kiln_status kiln_argsort(kiln_array *a, int axis, int flags, kiln_array *out, kiln_stream *stream,
                                  kiln_array **result);
/* Sorts `keys` along axis and moves `values` (the same shape, any dtype)
 * with them: the value at each key's place is the one that came with it. */
KILN_API kiln_status kiln_sort_pairs(kiln_array *keys, kiln_array *values, int axis, int flags,
                                     kiln_array *keys_out, kiln_array *values_out, kiln_stream *stream,
                                     kiln_array **keys_result, kiln_array **values_result);
/* Sorts each segment of the 1-d `keys` on its own: segment s is
 * [offsets[s], offsets[s+1]); offsets: a 1-d int64 array starting at 0,
 * never decreasing, ending at the length of keys (empty segments are fine).
 * values (may be NULL) move with their keys as in kiln_sort_pairs. */
KILN_API kiln_status kiln_sort_segments(kiln_array *keys, kiln_array *values, kiln_array *offsets, int flags,
                                        kiln_array *keys_out, kiln_array *values_out, kiln_stream *stream,
                                        kiln_array **keys_result, kiln_array **values_result);
/* The k largest (largest 1) or smallest (0) elements along `axis`, in
 * sorted order (largest first when largest), with their int64 indices along
 * the axis; the result has a's shape with k along the axis. Ties: the lower
 * index first. NaN counts as the largest value. k <= the axis's length. */
KILN_API kiln_status kiln_topk(kiln_array *a, int64_t k, int axis, int largest, kiln_array *values_out,
                               kiln_array *indices_out, kiln_stream *stream, kiln_array **values_result,
                               kiln_array **indices_result);
/* np.unique of the flattened `a`: the sorted distinct values (NaNs one
 * value, -0.0 one value with +0.0: the first met stands for them); when
 * asked (non-NULL), the int64 index of each value's first occurrence, the
 * int64 inverse (for each element of flattened a, its value's place: 1-d)
 * and the int64 counts. Each is a new array the caller releases. */
KILN_API kiln_status kiln_unique(kiln_array *a, kiln_stream *stream, kiln_array **values, kiln_array **index,
                                 kiln_array **inverse, kiln_array **counts);
/* np.searchsorted: for each element of v, the int64 index in the 1-d
 * `sorted` (sorted ascending, or descending with KILN_SORT_DESCENDING in
 * flags) where it would go to keep the order: the first such place
 * (KILN_SIDE_LEFT) or the last (KILN_SIDE_RIGHT). v: any shape, the
 * dtype of sorted; the result has v's shape. */
typedef enum kiln_side { KILN_SIDE_LEFT = 0, KILN_SIDE_RIGHT = 1 } kiln_side;
KILN_API kiln_status kiln_searchsorted(kiln_array *sorted, kiln_array *v, kiln_side side, int flags,
                                       kiln_array *out, kiln_stream *stream, kiln_array **result);
/* ------------------------------------------------------------------ sparse matrices (src/sparse/) */
/* SciPy's sparse matrices on both backends: CSR, CSC (the transpose of a
 * CSR matrix, sharing its arrays) and COO, with int32 or int64 indices and
 * float32, float64, complex64 or complex128 values, over kiln arrays of the
 * matrix's context. Products (SpMV, SpMM) run on the device: cuSPARSE on
 * CUDA (libcusparse, loaded at first use), kiln's own CSR kernels on the
 * CPU. Checks and structural work (COO -> CSR, sums, dense <-> sparse) run
 * on the host over copies of the components. See docs/sparse.md. */
typedef struct kiln_sparse kiln_sparse;
typedef enum kiln_sparse_format {
    KILN_SPARSE_CSR = 0,
    KILN_SPARSE_CSC = 1,
    KILN_SPARSE_COO = 2
} kiln_sparse_format;

/* A rows x cols CSR matrix over indptr (rows + 1), indices and data (nnz
 * each, 1-d), checked as SciPy's check_format(full_check=True): dtypes,
 * lengths, indptr[0] = 0, indptr non-decreasing up to nnz, indices in
 * [0, cols). The matrix holds a reference to each array (a copy where one
 * is not contiguous); release it with kiln_sparse_release. */
KILN_API kiln_status kiln_sparse_csr(int64_t rows, int64_t cols, kiln_array *indptr, kiln_array *indices,
                                     kiln_array *data, kiln_sparse **out);
/* The same for CSC: indptr has cols + 1 entries, indices are row indices in
 * [0, rows). */
KILN_API kiln_status kiln_sparse_csc(int64_t rows, int64_t cols, kiln_array *indptr, kiln_array *indices,
                                     kiln_array *data, kiln_sparse **out);
/* A COO matrix: entry k is data[k] at (row[k], col[k]); entries may repeat
 * (they add up, as in SciPy). Same ownership as kiln_sparse_csr. */
KILN_API kiln_status kiln_sparse_coo(int64_t rows, int64_t cols, kiln_array *row, kiln_array *col,
                                     kiln_array *data, kiln_sparse **out);
/* The nonzeros of a 2-d dense array (exact zeros left out) in `format`
 * with index_dtype KILN_INT32 or KILN_INT64; values keep the array's dtype
 * (one of the four). A new matrix on the array's context. */
KILN_API kiln_status kiln_sparse_from_dense(kiln_array *dense, kiln_sparse_format format,
                                            kiln_dtype index_dtype, kiln_sparse **out);
/* A new (rows, cols) C-order device array holding the matrix, duplicates
 * summed; the caller releases it. */
KILN_API kiln_status kiln_sparse_to_dense(kiln_sparse *a, kiln_array **out);
/* The matrix's arrays: CSR/CSC indptr, indices, data; COO row, col, data.
 * Each non-NULL out gets a new reference (caller releases). */
KILN_API kiln_status kiln_sparse_arrays(kiln_sparse *a, kiln_array **indptr_or_row,
                                        kiln_array **indices_or_col, kiln_array **data);
/* Conversions, each a new matrix (a new reference to a when already in the
 * format). tocsr of a COO matrix sums duplicates and sorts the indices
 * (SciPy's tocsr); tocoo keeps the entries as stored. */
KILN_API kiln_status kiln_sparse_tocsr(kiln_sparse *a, kiln_sparse **out);
KILN_API kiln_status kiln_sparse_tocsc(kiln_sparse *a, kiln_sparse **out);
KILN_API kiln_status kiln_sparse_tocoo(kiln_sparse *a, kiln_sparse **out);
/* The transpose as a view over the same arrays: CSR <-> CSC, COO with rows
 * and columns swapped. A new matrix (caller releases). */
KILN_API kiln_status kiln_sparse_transpose(kiln_sparse *a, kiln_sparse **out);
KILN_API kiln_sparse *kiln_sparse_retain(kiln_sparse *a);
/* Drops one reference; the arrays go with the last one. NULL is a no-op. */
KILN_API void kiln_sparse_release(kiln_sparse *a);

KILN_API kiln_context *kiln_sparse_context(const kiln_sparse *a);
KILN_API kiln_sparse_format kiln_sparse_format_of(const kiln_sparse *a);
KILN_API int64_t kiln_sparse_rows(const kiln_sparse *a);
KILN_API int64_t kiln_sparse_cols(const kiln_sparse *a);
/* Stored entries (a COO matrix's duplicates each count). */
KILN_API int64_t kiln_sparse_nnz(const kiln_sparse *a);
KILN_API kiln_dtype kiln_sparse_dtype(const kiln_sparse *a);
KILN_API kiln_dtype kiln_sparse_index_dtype(const kiln_sparse *a);
/* SciPy's flags: indices sorted within each row (CSR) / column (CSC), or
 * COO entries in row-major order; canonical: sorted and no duplicates. */
KILN_API int kiln_sparse_has_sorted_indices(const kiln_sparse *a);
KILN_API int kiln_sparse_has_canonical_format(const kiln_sparse *a);

/* y = alpha a x + beta y on `stream` (NULL: default): x and y 1-d of a's
 * dtype, any stride; beta 0 ignores y's old contents. Asynchronous. */
KILN_API kiln_status kiln_sparse_spmv(kiln_stream *stream, kiln_blas_scalar alpha, kiln_sparse *a,
                                      kiln_array *x, kiln_blas_scalar beta, kiln_array *y);
/* c = alpha a b + beta c: b (cols, n) and c (rows, n) 2-d of a's dtype. */
KILN_API kiln_status kiln_sparse_spmm(kiln_stream *stream, kiln_blas_scalar alpha, kiln_sparse *a,
                                      kiln_array *b, kiln_blas_scalar beta, kiln_array *c);
/* SciPy's a @ b for a dense b: (cols,) -> (rows,), (cols, n) -> (rows, n),
 * in NumPy's result dtype of the two (b of any numeric dtype; converted
 * once where it differs). *out: a new device array (caller releases). */
KILN_API kiln_status kiln_sparse_matmul(kiln_sparse *a, kiln_array *b, kiln_array **out);
/* a + b of one shape: a canonical CSR matrix (CSC when both are CSC) in
 * their result dtype, int64 indices when either has them. */
KILN_API kiln_status kiln_sparse_add(kiln_sparse *a, kiln_sparse *b, kiln_sparse **out);
/* a * s for a scalar value (kiln_f64, kiln_c128, kiln_i32, ...): a's
 * format and dtype, made complex by a complex scalar (NumPy's rule for a
 * Python scalar). A new matrix. */
KILN_API kiln_status kiln_sparse_scale(kiln_sparse *a, kiln_value s, kiln_sparse **out);
/* Who computes a context's products: "cuSPARSE (libcusparse.so.12)" or
 * "kiln CSR kernels"; static storage. KILN_ERR_LIBRARY_MISSING when
 * cuSPARSE cannot be loaded on a CUDA context. */
KILN_API kiln_status kiln_sparse_provider(kiln_context *ctx, const char **name);

/* ================================================================== experimental
 * Diagnostics and test hooks, behind KILN_EXPERIMENTAL (as zstd keeps its
 * unstable API behind ZSTD_STATIC_LINKING_ONLY): what kiln generates, how a
 * plan runs, the settings table, and a reference generator to check kiln
 * against. Their names and shapes may change in any release. A program that
 * wants them defines KILN_EXPERIMENTAL before including kiln.h; the
 * library is always built with them. */
#ifdef KILN_EXPERIMENTAL

/* ---- generated source (src/ufunc, src/gufunc) */
/* The generated CUDA C source of the module a first call with these
 * arguments would run, for target "cuda" or "cpu" (whatever the context),
 * without compiling it: for kiln_compile_only and for reading. Contiguous
 * operands of a signature's dtypes show its mixed kernel; on CUDA later
 * calls move to the exact kernel (built on a background thread while the
 * mixed one serves; KILN_TIER_UP=0: in the call), which
 * KILN_UFUNC_MIXED_LIMIT=0 (read at kiln_vectorize) shows. outs as for kiln_call (NULL slots are not
 * allocated). *source: free with kiln_free. */
KILN_API kiln_status kiln_ufunc_source(kiln_ufunc *f, const char *target, const kiln_value *args, int nargs,
                                       kiln_array *const *outs, char **source);

/* The generated CUDA C source of the kernel made for the layout of a call
 * with these arguments (what it runs once the any-layout kernel has handed
 * over, or without one), for target "cuda" or "cpu" (whatever the context; NULL: the
 * context's), without compiling it or allocating outputs (NULL slots are
 * taken as new C-order arrays). *source: free with kiln_free. *kernel_name
 * (may be NULL; free with kiln_free) is "kiln_gu_<name>_<strategy>". */
KILN_API kiln_status kiln_gufunc_source(kiln_gufunc *f, const char *target, const char *dims,
                                        const kiln_value *args, int nargs, kiln_array *const *outs,
                                        char **source, char **kernel_name);
/* The generated CUDA C source of the module kiln_guvectorize compiles for
 * target "cuda" or "cpu" (NULL: the context's): per type signature, the
 * any-layout kernel "kiln_gu_<name>_<strategy>_any<sig>" that runs the
 * gufunc's first calls (docs/ufuncs.md). *source: free with kiln_free.
 * KILN_ERR_UNSUPPORTED when no signature has one (each would take more than
 * 128 kernel parameters). */
KILN_API kiln_status kiln_gufunc_any_source(kiln_gufunc *f, const char *target, char **source);

/* ---- library plans and references */
/* 1 when the plan gathers or scatters through contiguous scratch because the
 * library cannot express a layout; 0 when it runs on the arrays directly. */
KILN_API int kiln_fft_plan_copies(const kiln_fft_plan *plan);
/* For checking kiln against cuRAND: n uniform floats from cuRAND's own host
 * generator (libcurand loaded at run time, default ordering) at seed and
 * offset, into host memory. KILN_ERR_LIBRARY_MISSING without libcurand. */
KILN_API kiln_status kiln_rng_curand_host_uniform(kiln_rng_type type, uint64_t seed, uint64_t offset,
                                                  float *out, size_t n);

/* ---- settings: every KILN_* environment variable kiln reads (`kiln info`) */
/* One environment variable kiln reads (KILN_*). The strings are static,
 * except `value`, which is the environment's (NULL when unset). */
typedef struct kiln_setting_info {
    const char *name;          /* "KILN_NUM_THREADS" */
    const char *type;          /* "flag", "integer", "number", "choice", "text" or "path" */
    const char *default_value; /* what holds when it is unset */
    const char *doc;           /* one line */
    const char *value;
} kiln_setting_info;

/* How many variables kiln reads; kiln_setting_get describes each, 0 to
 * count - 1 (KILN_ERR_INVALID_ARGUMENT past the end). */
KILN_API int kiln_setting_count(void);
KILN_API kiln_status kiln_setting_get(int index, kiln_setting_info *out);
/* The value of variable `name` as the environment has it (NULL when unset),
 * for a name kiln reads; NULL and KILN_ERR_NOT_FOUND for any other name. */
KILN_API const char *kiln_setting_value(const char *name);

#endif /* KILN_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif
#endif /* KILN_H */
