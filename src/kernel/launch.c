/* launch.c: checking a launch against the device and the kernel's declared
 * parameters, converting the arguments to the exact parameter types, and
 * handing them to the backend. Everything here runs on every launch, so it
 * allocates nothing and takes no lock. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "array/array.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernel/module.h"
#include "kernel/tier_up.h"
#include "prof/prof.h"

typedef union param_slot {
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
    float c64[2];
    double c128[2];
    void *ptr;
    unsigned char bytes[16];
} param_slot;

static const char *class_name(kiln_param_class c, size_t size, char *buf, size_t cap) {
    switch (c) {
    case KILN_PARAM_SIGNED: snprintf(buf, cap, "int%zu", size * 8); break;
    case KILN_PARAM_UNSIGNED: snprintf(buf, cap, "uint%zu", size * 8); break;
    case KILN_PARAM_FLOAT: snprintf(buf, cap, "float%zu", size * 8); break;
    case KILN_PARAM_BOOL: snprintf(buf, cap, "bool"); break;
    case KILN_PARAM_COMPLEX: snprintf(buf, cap, "complex%zu", size * 8); break;
    case KILN_PARAM_POINTER: snprintf(buf, cap, "pointer"); break;
    default: snprintf(buf, cap, "struct of %zu bytes", size); break;
    }
    return buf;
}

/* The dtype a scalar parameter of this class and size holds. */
static int param_dtype(kiln_param_class c, size_t size, kiln_dtype *out) {
    static const kiln_dtype ints[] = {KILN_INT8, KILN_INT16, KILN_INT32, KILN_INT64};
    static const kiln_dtype uints[] = {KILN_UINT8, KILN_UINT16, KILN_UINT32, KILN_UINT64};
    int lg = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : -1;
    switch (c) {
    case KILN_PARAM_BOOL: *out = KILN_BOOL; return 1;
    case KILN_PARAM_SIGNED:
        if (lg < 0) return 0;
        *out = ints[lg];
        return 1;
    case KILN_PARAM_UNSIGNED:
        if (lg < 0) return 0;
        *out = uints[lg];
        return 1;
    case KILN_PARAM_FLOAT:
        *out = size == 2 ? KILN_FLOAT16 : size == 4 ? KILN_FLOAT32 : KILN_FLOAT64;
        return size == 2 || size == 4 || size == 8;
    case KILN_PARAM_COMPLEX:
    case KILN_PARAM_OTHER: /* float2/double2 are laid out like complex */
        *out = size == 8 ? KILN_COMPLEX64 : KILN_COMPLEX128;
        return size == 8 || size == 16;
    default: return 0;
    }
}

/* Integers are converted when the value fits the parameter (so kiln_i32(n)
 * can feed a size_t), floats only by NumPy's safe casting (a double never
 * silently becomes a float). */
static int scalar_fits(const kiln_value *v, kiln_dtype to) {
    char fk = kiln_dtype_kind(v->dtype), tk = kiln_dtype_kind(to);
    if (kiln_dtype_can_cast(v->dtype, to)) return 1;
    int from_int = fk == 'i' || fk == 'u' || fk == 'b';
    if (from_int && (tk == 'i' || tk == 'u')) {
        size_t bits = kiln_dtype_size(to) * 8;
        if (fk == 'u' || fk == 'b') {
            return tk == 'u'
                       ? (bits == 64 || v->as.u < (UINT64_C(1) << bits))
                       : (v->as.u <= (uint64_t)(bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1));
        }
        if (tk == 'u') return v->as.i >= 0 && (bits == 64 || (uint64_t)v->as.i < (UINT64_C(1) << bits));
        if (bits == 64) return 1;
        int64_t lim = INT64_C(1) << (bits - 1);
        return v->as.i >= -lim && v->as.i < lim;
    }
    if (from_int && (tk == 'f' || tk == 'c')) { /* exactly representable? */
        double d = fk == 'i' ? (double)v->as.i : (double)v->as.u;
        int mant = to == KILN_BFLOAT16                            ? 8
                   : (to == KILN_FLOAT16)                         ? 11
                   : (to == KILN_FLOAT32 || to == KILN_COMPLEX64) ? 24
                                                                  : 53;
        return fabs(d) <= ldexp(1.0, mant);
    }
    return 0;
}

static void scalar_store(const kiln_value *v, kiln_dtype to, param_slot *slot) {
    char fk = kiln_dtype_kind(v->dtype);
    double re = fk == 'i' ? (double)v->as.i : (fk == 'u' || fk == 'b') ? (double)v->as.u : v->as.c[0];
    double im = fk == 'c' ? v->as.c[1] : 0.0;
    int64_t iv = fk == 'i' ? v->as.i : (int64_t)v->as.u;
    memset(slot, 0, sizeof *slot);
    switch (to) {
    case KILN_BOOL: slot->u8 = iv != 0; break;
    case KILN_INT8: slot->i8 = (int8_t)iv; break;
    case KILN_INT16: slot->i16 = (int16_t)iv; break;
    case KILN_INT32: slot->i32 = (int32_t)iv; break;
    case KILN_INT64: slot->i64 = iv; break;
    case KILN_UINT8: slot->u8 = (uint8_t)iv; break;
    case KILN_UINT16: slot->u16 = (uint16_t)iv; break;
    case KILN_UINT32: slot->u32 = (uint32_t)iv; break;
    case KILN_UINT64: slot->u64 = (uint64_t)iv; break;
    case KILN_FLOAT16:
    case KILN_BFLOAT16: {
        uint16_t h = kiln_half_bits_of(to, (float)re);
        memcpy(slot->bytes, &h, 2);
        break;
    }
    case KILN_FLOAT32: slot->f32 = (float)re; break;
    case KILN_FLOAT64: slot->f64 = re; break;
    case KILN_COMPLEX64:
        slot->c64[0] = (float)re;
        slot->c64[1] = (float)im;
        break;
    case KILN_COMPLEX128:
        slot->c128[0] = re;
        slot->c128[1] = im;
        break;
    default: break;
    }
}

/* The kiln.h helper that makes a value of dtype t, for error messages. */
static const char *value_helper(kiln_dtype t) {
    static const char *const names[KILN_DTYPE_COUNT] = {
        "kiln_bool()", "kiln_i8()",  "kiln_i16()", "kiln_i32()",  "kiln_i64()",
        "kiln_u8()",   "kiln_u16()", "kiln_u32()", "kiln_u64()",  "a float16 value",
        "kiln_f32()",  "kiln_f64()", "kiln_c64()", "kiln_c128()", "kiln_bf16()"};
    return (unsigned)t < KILN_DTYPE_COUNT ? names[t] : "a matching value";
}

/* A vector pointee (float4 *) takes an array of its lane type (float32),
 * and a 2-lane float one also the complex type of the same layout
 * (float2 * a complex64 array, double2 * a complex128 one). */
static int vector_pointee_matches(const kiln_param_info *p, kiln_dtype dt) {
    size_t lane = p->pointee_size / (size_t)p->pointee_lanes;
    char k = kiln_dtype_kind(dt);
    if (k == (char)p->pointee_lane_cls && kiln_dtype_size(dt) == lane) return 1;
    return p->pointee_lanes == 2 && p->pointee_lane_cls == KILN_PARAM_FLOAT && k == 'c' &&
           kiln_dtype_size(dt) == 2 * lane;
}

/* Alignment CUDA's vector types have (the CPU prelude's are the same):
 * 3 lanes as one lane, else the whole vector up to 16 bytes. */
static size_t vector_alignment(const kiln_param_info *p) {
    size_t lane = p->pointee_size / (size_t)p->pointee_lanes;
    if (p->pointee_lanes == 3) return lane;
    return p->pointee_size < 16 ? p->pointee_size : 16;
}

/* Checks an array or typed pointer against a vector pointee: dtype, a whole
 * number of vectors, aligned data. */
static kiln_status check_vector_pointee(const kiln_kernel *k, int i, const kiln_param_info *p, kiln_dtype dt,
                                        const kiln_array *a, const void *ptr) {
    char lane[16], want[64];
    size_t lane_size = p->pointee_size / (size_t)p->pointee_lanes;
    class_name(p->pointee_lane_cls, lane_size, lane, sizeof lane);
    snprintf(want, sizeof want, "a %d-lane vector of %s (%s%d)", p->pointee_lanes, lane,
             p->pointee_lane_cls == KILN_PARAM_FLOAT ? (lane_size == 8 ? "double" : "float") : lane,
             p->pointee_lanes);
    if (!vector_pointee_matches(p, dt))
        return kiln_set_error(KILN_ERR_ARG_TYPE,
                              "argument %d of %s: the kernel takes a pointer to %s, got %s of %s; pass an "
                              "array of %s",
                              i, k->name, want, a ? "an array" : "a pointer", kiln_dtype_name(dt), lane);
    if (a && kiln_dtype_kind(dt) != 'c' && kiln_array_size(a) % p->pointee_lanes != 0)
        return kiln_set_error(
            KILN_ERR_ARG_TYPE,
            "argument %d of %s: the kernel takes a pointer to %s; the array's %lld elements "
            "of %s are not a whole number of %d-lane vectors",
            i, k->name, want, (long long)kiln_array_size(a), kiln_dtype_name(dt), p->pointee_lanes);
    size_t align = vector_alignment(p);
    if ((uintptr_t)ptr % align != 0)
        return kiln_set_error(KILN_ERR_ARG_TYPE,
                              "argument %d of %s: the kernel takes a pointer to %s, which needs %zu-byte "
                              "alignment; the data is at an address %zu bytes past a multiple of %zu",
                              i, k->name, want, align, (size_t)((uintptr_t)ptr % align), align);
    return KILN_OK;
}

static int pointee_matches(const kiln_param_info *p, kiln_dtype dt) {
    if (p->pointee_size == 0 || p->pointee_cls == KILN_PARAM_OTHER) return 1; /* void*, struct* */
    if (kiln_dtype_size(dt) != p->pointee_size) return 0;
    char k = kiln_dtype_kind(dt);
    return (char)p->pointee_cls == k;
}

static kiln_status convert_arg(const kiln_kernel *k, int i, const kiln_value *v, param_slot *slot,
                               kiln_stream *stream) {
    const kiln_param_info *p = &k->params[i];
    char want[48];
    class_name(p->cls, p->size, want, sizeof want);
    kiln_context *ctx = k->module->ctx;
    if (p->cls == KILN_PARAM_POINTER) {
        kiln_dtype dt = v->dtype;
        void *ptr = NULL;
        if (v->kind == KILN_VALUE_ARRAY) {
            const kiln_array *a = v->as.array;
            if (!a) return kiln_set_error(KILN_ERR_ARG_TYPE, "argument %d of %s: array is NULL", i, k->name);
            if (a->ctx != ctx)
                return kiln_set_error(KILN_ERR_ARG_TYPE,
                                      "argument %d of %s: array belongs to another context", i, k->name);
            if (a->memory == KILN_MEMORY_HOST && !kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_MEMORY))
                return kiln_set_error(KILN_ERR_ARG_TYPE,
                                      "argument %d of %s: array is in host memory; a %s kernel needs "
                                      "device memory (kiln_array_copy it first)",
                                      i, k->name, ctx->ops->name);
            dt = a->dtype;
            ptr = a->data;
            if (stream) kiln_array_note_stream(v->as.array, stream);
        } else if (v->kind == KILN_VALUE_POINTER) {
            ptr = v->as.pointer;
            if (dt == KILN_DTYPE_COUNT) {
                slot->ptr = ptr;
                return KILN_OK;
            }
        } else {
            return kiln_set_error(KILN_ERR_ARG_TYPE,
                                  "argument %d of %s: the kernel takes a pointer, got a %s scalar; "
                                  "pass kiln_arr(array)",
                                  i, k->name, kiln_dtype_name(v->dtype));
        }
        if (p->pointee_cls == KILN_PARAM_VECTOR) {
            kiln_status vs =
                check_vector_pointee(k, i, p, dt, v->kind == KILN_VALUE_ARRAY ? v->as.array : NULL, ptr);
            if (vs != KILN_OK) return vs;
        } else if (!pointee_matches(p, dt)) {
            char pointee[48];
            return kiln_set_error(
                KILN_ERR_ARG_TYPE, "argument %d of %s: the kernel takes a pointer to %s, got an array of %s",
                i, k->name, class_name(p->pointee_cls, p->pointee_size, pointee, sizeof pointee),
                kiln_dtype_name(dt));
        }
        slot->ptr = ptr;
        return KILN_OK;
    }
    if (v->kind != KILN_VALUE_SCALAR)
        return kiln_set_error(KILN_ERR_ARG_TYPE, "argument %d of %s: the kernel takes a %s scalar, got %s", i,
                              k->name, want, v->kind == KILN_VALUE_ARRAY ? "an array" : "a pointer");
    /* A struct of 1, 2, 4 or 8 bytes by value (an empty tag type such as
     * CUB's identity decomposer is 1 byte) takes an unsigned integer of its
     * size: its bytes, as the struct's. */
    if (p->cls == KILN_PARAM_OTHER && (unsigned)v->dtype < KILN_DTYPE_COUNT &&
        kiln_dtype_kind(v->dtype) == 'u' && kiln_dtype_size(v->dtype) == p->size) {
        scalar_store(v, v->dtype, slot);
        return KILN_OK;
    }
    kiln_dtype to;
    if (!param_dtype(p->cls, p->size, &to) || (unsigned)v->dtype >= KILN_DTYPE_COUNT)
        return kiln_set_error(KILN_ERR_ARG_TYPE, "argument %d of %s: kiln cannot pass a %s by value", i,
                              k->name, want);
    if (p->cls == KILN_PARAM_OTHER && kiln_dtype_kind(v->dtype) != 'c')
        return kiln_set_error(KILN_ERR_ARG_TYPE,
                              "argument %d of %s: the kernel takes a %s (passed like %s), got %s", i, k->name,
                              want, kiln_dtype_name(to), kiln_dtype_name(v->dtype));
    if (!scalar_fits(v, to))
        return kiln_set_error(KILN_ERR_ARG_TYPE,
                              "argument %d of %s: the kernel takes %s, got %s; that conversion could "
                              "lose information (pass %s)",
                              i, k->name, kiln_dtype_name(to), kiln_dtype_name(v->dtype), value_helper(to));
    scalar_store(v, to, slot);
    return KILN_OK;
}

static kiln_status check_config(const kiln_kernel *k, const kiln_launch_config *c) {
    const kiln_device_info *d = &k->module->ctx->info;
    static const char axis[3] = {'x', 'y', 'z'};
    uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
    for (int i = 0; i < 3; i++) {
        if (c->block[i] > (uint32_t)d->max_block_dim[i])
            return kiln_set_error(
                KILN_ERR_LAUNCH_CONFIG,
                "launching %s: block.%c = %u exceeds the device limit of %d (maxBlockDim%c)", k->name,
                axis[i], c->block[i], d->max_block_dim[i], 'X' + i);
        if (c->grid[i] > (uint32_t)d->max_grid_dim[i])
            return kiln_set_error(KILN_ERR_LAUNCH_CONFIG,
                                  "launching %s: grid.%c = %u exceeds the device limit of %d (maxGridDim%c)",
                                  k->name, axis[i], c->grid[i], d->max_grid_dim[i], 'X' + i);
    }
    if (threads > (uint64_t)d->max_threads_per_block)
        return kiln_set_error(KILN_ERR_LAUNCH_CONFIG,
                              "launching %s: block (%u,%u,%u) has %llu threads; the device allows at most "
                              "%d per block (maxThreadsPerBlock)",
                              k->name, c->block[0], c->block[1], c->block[2], (unsigned long long)threads,
                              d->max_threads_per_block);
    size_t shared = c->shared_bytes + k->static_shared_bytes;
    if (shared > d->max_shared_bytes_per_block_optin)
        return kiln_set_error(KILN_ERR_LAUNCH_CONFIG,
                              "launching %s: %zu bytes of shared memory (%zu dynamic + %zu static) exceed "
                              "the device limit of %zu per block (sharedMemPerBlockOptin)",
                              k->name, shared, c->shared_bytes, k->static_shared_bytes,
                              d->max_shared_bytes_per_block_optin);
    return KILN_OK;
}

/* describe_args writes by hand: a few snprintf per argument would cost as
 * much as the profiler's own record. */
static void describe_put(char *buf, size_t cap, size_t *n, const char *text) {
    while (*text && *n + 1 < cap) buf[(*n)++] = *text++;
}

static void describe_put_int(char *buf, size_t cap, size_t *n, int64_t v) {
    char digits[24];
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do digits[k++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0) digits[k++] = '-';
    while (k > 0 && *n + 1 < cap) buf[(*n)++] = digits[--k];
}

/* "f4(1024,), f4, i4": each argument's dtype code, with the shape for arrays
 * (kiln_shape_format's layout), for the profiler's trace. */
static void describe_args(const kiln_value *args, int nargs, char *buf, size_t cap) {
    size_t n = 0;
    for (int i = 0; i < nargs && n + 1 < cap; i++) {
        const kiln_value *v = &args[i];
        if (i) describe_put(buf, cap, &n, ", ");
        if (v->kind == KILN_VALUE_ARRAY && v->as.array) {
            const kiln_array *a = v->as.array;
            describe_put(buf, cap, &n, kiln_dtype_code(a->dtype));
            describe_put(buf, cap, &n, "(");
            for (int d = 0; d < a->ndim; d++) {
                if (d) describe_put(buf, cap, &n, ", ");
                describe_put_int(buf, cap, &n, a->shape[d]);
            }
            describe_put(buf, cap, &n, a->ndim == 1 ? ",)" : ")");
        } else {
            describe_put(buf, cap, &n, v->kind == KILN_VALUE_POINTER ? "ptr" : kiln_dtype_code(v->dtype));
        }
    }
    buf[n] = '\0';
}

/* describe_args for the profiler's kiln_prof_args. */
typedef struct launch_args {
    const kiln_value *args;
    int nargs;
} launch_args;

static void describe_launch_args(const void *data, char *buf, size_t cap) {
    const launch_args *a = data;
    describe_args(a->args, a->nargs, buf, cap);
}

static uint64_t key_mix(uint64_t h, uint64_t v) {
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* A key of what describe_args writes (each argument's kind, dtype and
 * shape), so that the profiler describes a launch like a recent one no
 * more: never 0. */
static uint64_t args_key(const kiln_value *args, int nargs) {
    uint64_t h = key_mix(0x9e3779b97f4a7c15ull, (uint64_t)nargs);
    for (int i = 0; i < nargs; i++) {
        const kiln_value *v = &args[i];
        if (v->kind == KILN_VALUE_ARRAY && v->as.array) {
            const kiln_array *a = v->as.array;
            h = key_mix(h, 0x1000u | (uint64_t)a->dtype << 16 | (uint64_t)a->ndim << 32);
            for (int d = 0; d < a->ndim; d++) h = key_mix(h, (uint64_t)a->shape[d]);
        } else {
            h = key_mix(h, (uint64_t)v->kind << 8 | (uint64_t)v->dtype << 16);
        }
    }
    return h ? h : 1;
}

static kiln_status launch(kiln_kernel *k, kiln_dim3 grid, kiln_dim3 block, size_t shared_bytes,
                          kiln_stream *stream, const kiln_value *args, int nargs, int cooperative) {
    if (!k) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_launch: kernel is NULL");
    if (!args && nargs > 0)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_launch: args is NULL with nargs %d", nargs);
    kiln_context *ctx = k->module->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (stream && stream->ctx != ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_launch: stream belongs to another context");
    if (nargs != k->param_count || (nargs > 0 && !args))
        return kiln_set_error(KILN_ERR_ARG_COUNT, "%s takes %d argument%s, got %d", k->name, k->param_count,
                              k->param_count == 1 ? "" : "s", nargs);
    kiln_launch_config cfg = {{grid.x ? grid.x : 1, grid.y ? grid.y : 1, grid.z ? grid.z : 1},
                              {block.x ? block.x : 1, block.y ? block.y : 1, block.z ? block.z : 1},
                              shared_bytes};
    if (cooperative && !ctx->ops->launch_cooperative)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the %s backend has no cooperative launch",
                              ctx->ops->name);
    s = check_config(k, &cfg);
    if (s != KILN_OK) return s;
    param_slot slots[KILN_MAX_PARAMS];
    void *ptrs[KILN_MAX_PARAMS];
    for (int i = 0; i < nargs; i++) {
        s = convert_arg(k, i, &args[i], &slots[i], stream);
        if (s != KILN_OK) return s;
        ptrs[i] = &slots[i];
    }
    kiln_backend_stream *impl = kiln_stream_impl(stream);
    /* a quick build's tier-up starts now */
    kiln_tier_up_module_note_launch(k->module->ctx, k->module, &k->module->tier_up_armed);
    kiln_prof_op *op = NULL;
    if (KILN_PROF_ON(ctx)) {
        /* described by the profiler only for a trace, and only when it has
         * not seen such arguments lately */
        launch_args la = {args, nargs};
        kiln_prof_args pa = {0, describe_launch_args, &la};
        if (KILN_PROF_WANTS_ARGS(ctx)) pa.key = args_key(args, nargs);
        op = kiln_prof_launch_begin(ctx, k->name, &cfg, impl, &pa);
    }
    s = (cooperative ? ctx->ops->launch_cooperative : ctx->ops->launch)(ctx->state, k->impl, &cfg, impl,
                                                                        ptrs);
    if (op) kiln_prof_end(ctx, op);
    if (s != KILN_OK) kiln_prefix_error(s, "launching %s: ", k->name);
    return kiln_context_note(ctx, s);
}

kiln_status kiln_launch(kiln_kernel *k, kiln_dim3 grid, kiln_dim3 block, size_t shared_bytes,
                        kiln_stream *stream, const kiln_value *args, int nargs) {
    return launch(k, grid, block, shared_bytes, stream, args, nargs, 0);
}

kiln_status kiln_launch_cooperative(kiln_kernel *k, kiln_dim3 grid, kiln_dim3 block, size_t shared_bytes,
                                    kiln_stream *stream, const kiln_value *args, int nargs) {
    return launch(k, grid, block, shared_bytes, stream, args, nargs, 1);
}
