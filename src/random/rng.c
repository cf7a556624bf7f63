/* rng.c: the public random-number calls: argument checks, the destination
 * (direct, or a contiguous temporary copied into views and host arrays),
 * the provider of the context's backend, and the offset bookkeeping. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/error.h"
#include "random/rng_engine.h"
#include "random/rng_internal.h"

const char *kiln_rng_type_name(kiln_rng_type type) {
    switch (type) {
    case KILN_RNG_XORWOW: return "xorwow";
    case KILN_RNG_PHILOX4_32_10: return "philox4_32_10";
    case KILN_RNG_MRG32K3A: return "mrg32k3a";
    }
    return "unknown";
}

extern const char kiln_embedded_kiln_random[];

const char *kiln_rng_device_source(void) { return kiln_embedded_kiln_random; }

_Static_assert(sizeof(kiln_gf2_matrix) == 800 * sizeof(uint32_t), "XORWOW tables: 800 words per matrix");

kiln_status kiln_rng_xorwow_tables(kiln_context *ctx, kiln_array **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_rng_xorwow_tables: %s is NULL",
                              !ctx ? "ctx" : "out");
    kiln_status st = kiln_context_check(ctx);
    if (st != KILN_OK) return st;
    const kiln_gf2_matrix *powers = kiln_xorwow_powers();
    if (!powers)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                              "kiln_rng_xorwow_tables: no host memory for the tables");
    /* kiln_gf2_matrix is 160 columns of 5 words: the layout the device code reads */
    int64_t shape[1] = {(int64_t)KILN_XORWOW_POWERS * 800};
    return kiln_array_from_host(ctx, KILN_UINT32, 1, shape, powers,
                                sizeof(kiln_gf2_matrix) * KILN_XORWOW_POWERS, out);
}

static int valid_type(kiln_rng_type type) {
    return type == KILN_RNG_XORWOW || type == KILN_RNG_PHILOX4_32_10 || type == KILN_RNG_MRG32K3A;
}

kiln_status kiln_rng_create(kiln_context *ctx, kiln_rng_type type, uint64_t seed, kiln_rng **out) {
    if (!ctx || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_rng_create: %s is NULL", !ctx ? "ctx" : "out");
    kiln_status st = kiln_context_check(ctx);
    if (st != KILN_OK) return st;
    if (!valid_type(type))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_rng_create: unknown generator type %d (expected KILN_RNG_XORWOW, "
                              "KILN_RNG_PHILOX4_32_10 or KILN_RNG_MRG32K3A)",
                              (int)type);
    static const kiln_provider *const providers[] = {&kiln_rng_curand.base, &kiln_rng_host.base};
    const kiln_provider *provider;
    st = kiln_provider_select(ctx, providers, sizeof providers / sizeof providers[0], &provider);
    if (st != KILN_OK) return kiln_prefix_error(st, "kiln_rng_create: ");
    kiln_rng *rng = calloc(1, sizeof *rng);
    if (!rng) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_rng_create: out of host memory");
    rng->provider = (const kiln_rng_provider *)provider;
    rng->ctx = kiln_context_retain(ctx); /* kept alive until released, as every kiln object */
    rng->type = type;
    rng->seed = seed;
    rng->ordering = KILN_RNG_ORDERING_DEFAULT;
    *out = rng;
    return KILN_OK;
}

void kiln_rng_release(kiln_rng *rng) {
    if (!rng) return;
    if (rng->provider->forget) rng->provider->forget(rng);
    free(rng->positions);
    kiln_context_release(rng->ctx);
    free(rng);
}

#define CHECK_RNG(rng, fn)                                                                                   \
    do {                                                                                                     \
        if (!(rng)) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, fn ": rng is NULL");                    \
    } while (0)

kiln_status kiln_rng_set_seed(kiln_rng *rng, uint64_t seed) {
    CHECK_RNG(rng, "kiln_rng_set_seed");
    rng->seed = seed;
    rng->offset = 0;
    rng->positions_valid = 0;
    rng->restarts++; /* fresh states at the offset, in every provider */
    return KILN_OK;
}

kiln_status kiln_rng_set_offset(kiln_rng *rng, uint64_t offset) {
    CHECK_RNG(rng, "kiln_rng_set_offset");
    rng->offset = offset;
    rng->positions_valid = 0;
    rng->restarts++; /* fresh states at the offset, in every provider */
    return KILN_OK;
}

kiln_status kiln_rng_offset(const kiln_rng *rng, uint64_t *offset) {
    CHECK_RNG(rng, "kiln_rng_offset");
    if (!offset) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_rng_offset: offset is NULL");
    *offset = rng->offset;
    return KILN_OK;
}

kiln_status kiln_rng_set_ordering(kiln_rng *rng, kiln_rng_ordering ordering) {
    CHECK_RNG(rng, "kiln_rng_set_ordering");
    if (ordering != KILN_RNG_ORDERING_DEFAULT && ordering != KILN_RNG_ORDERING_LEGACY)
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "kiln_rng_set_ordering: unknown ordering %d (expected KILN_RNG_ORDERING_DEFAULT "
            "or KILN_RNG_ORDERING_LEGACY)",
            (int)ordering);
    if (ordering != rng->ordering) {
        rng->positions_valid = 0;
        rng->restarts++;
    }
    rng->ordering = ordering;
    return KILN_OK;
}

kiln_status kiln_rng_set_stream(kiln_rng *rng, kiln_stream *stream) {
    CHECK_RNG(rng, "kiln_rng_set_stream");
    if (stream && stream->ctx != rng->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_rng_set_stream: the stream belongs to another context");
    rng->stream = stream;
    return KILN_OK;
}

/* How far cuRAND moves its offset for a fill of n values: n, except for
 * XORWOW and MRG32k3a normals, where it counts pairs (measured with
 * libcurand's host generator; an odd n is filled as n + 1). */
static uint64_t offset_advance(const kiln_rng *rng, const kiln_rng_request *req, uint64_t n) {
    int normal = !req->poisson && req->dist >= KILN_DIST_NORMAL;
    if (normal && rng->type != KILN_RNG_PHILOX4_32_10) return (n + 1) / 2;
    return n;
}

/* Any zero stride over an axis longer than one means elements share memory. */
static int overlapping(const kiln_array *a, int *axis) {
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] > 1 && a->strides[d] == 0) {
            *axis = d;
            return 1;
        }
    return 0;
}

static kiln_status generate(kiln_rng *rng, kiln_array *out, const kiln_rng_request *req) {
    kiln_context *ctx = rng->ctx;
    int64_t n = kiln_array_size(out);
    if (n == 0) return KILN_OK;
    int axis = 0;
    if (overlapping(out, &axis))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: the output's elements overlap (stride 0 on axis %d of length %lld): "
                              "random values need one memory location each",
                              req->name, axis, (long long)out->shape[axis]);
    int direct = kiln_array_is_contiguous(out) && rng->provider->fills_in_place(out);
    kiln_array *temp = NULL;
    kiln_status st = KILN_OK;
    if (!direct) {
        st = kiln_array_empty(ctx, out->dtype, out->ndim, out->shape, &temp);
        if (st != KILN_OK)
            return kiln_prefix_error(st, "%s: temporary for a non-contiguous output", req->name);
    }
    kiln_array *dst = direct ? out : temp;
    st = rng->provider->generate(rng, req, dst->data, (size_t)n);
    if (st == KILN_OK && temp) {
        /* The copy runs on the default stream: wait for the generator's. */
        if (rng->stream) st = kiln_stream_synchronize(rng->stream);
        if (st == KILN_OK) st = kiln_array_assign(out, temp);
    }
    kiln_array_release(temp);
    if (st == KILN_OK) rng->offset += offset_advance(rng, req, (uint64_t)n);
    return st;
}

/* Common checks; *f64 tells float64 from float32 where the dist has both. */
static kiln_status check_fill(kiln_rng *rng, kiln_array *out, const char *name, int kind_float, int *f64) {
    if (!rng) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: rng is NULL", name);
    if (!out) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: out is NULL", name);
    kiln_status st = kiln_context_check(rng->ctx);
    if (st != KILN_OK) return st;
    if (out->ctx != rng->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: the array belongs to another context than the generator", name);
    kiln_dtype t = out->dtype;
    if (kind_float) {
        if (t != KILN_FLOAT32 && t != KILN_FLOAT64)
            return kiln_set_error(KILN_ERR_DTYPE, "%s: the output must be float32 or float64, not %s", name,
                                  kiln_dtype_name(t));
        *f64 = t == KILN_FLOAT64;
    } else if (t != KILN_UINT32 && t != KILN_INT32) {
        return kiln_set_error(KILN_ERR_DTYPE, "%s: the output must be uint32 (or int32), not %s%s", name,
                              kiln_dtype_name(t),
                              t == KILN_UINT64 || t == KILN_INT64
                                  ? " (cuRAND has no 64-bit output for its pseudo-random generators)"
                                  : "");
    }
    return KILN_OK;
}

kiln_status kiln_rng_uniform(kiln_rng *rng, kiln_array *out) {
    int f64 = 0;
    kiln_status st = check_fill(rng, out, "kiln_rng_uniform", 1, &f64);
    if (st != KILN_OK) return st;
    kiln_rng_request req = {f64 ? KILN_DIST_UNIFORM_F64 : KILN_DIST_UNIFORM,      0, 0, 1, 0,
                            f64 ? "kiln_rng_uniform_f64" : "kiln_rng_uniform_f32"};
    return generate(rng, out, &req);
}

static kiln_status check_normal_params(const char *name, double mean, double stddev) {
    if (!(stddev >= 0) || !isfinite(stddev) || !isfinite(mean))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: stddev must be finite and >= 0 and mean finite, got mean %g, stddev %g",
                              name, mean, stddev);
    return KILN_OK;
}

kiln_status kiln_rng_normal(kiln_rng *rng, kiln_array *out, double mean, double stddev) {
    int f64 = 0;
    kiln_status st = check_fill(rng, out, "kiln_rng_normal", 1, &f64);
    if (st == KILN_OK) st = check_normal_params("kiln_rng_normal", mean, stddev);
    if (st != KILN_OK) return st;
    kiln_rng_request req = {f64 ? KILN_DIST_NORMAL_F64 : KILN_DIST_NORMAL,      0, mean, stddev, 0,
                            f64 ? "kiln_rng_normal_f64" : "kiln_rng_normal_f32"};
    return generate(rng, out, &req);
}

kiln_status kiln_rng_lognormal(kiln_rng *rng, kiln_array *out, double mean, double stddev) {
    int f64 = 0;
    kiln_status st = check_fill(rng, out, "kiln_rng_lognormal", 1, &f64);
    if (st == KILN_OK) st = check_normal_params("kiln_rng_lognormal", mean, stddev);
    if (st != KILN_OK) return st;
    kiln_rng_request req = {f64 ? KILN_DIST_LOGNORMAL_F64 : KILN_DIST_LOGNORMAL,      0, mean, stddev, 0,
                            f64 ? "kiln_rng_lognormal_f64" : "kiln_rng_lognormal_f32"};
    return generate(rng, out, &req);
}

kiln_status kiln_rng_poisson(kiln_rng *rng, kiln_array *out, double lambda) {
    int unused = 0;
    kiln_status st = check_fill(rng, out, "kiln_rng_poisson", 0, &unused);
    if (st != KILN_OK) return st;
    /* Counts near 2^32 would not fit uint32; 1e9 keeps them far below. */
    if (!(lambda > 0) || !(lambda <= 1e9))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_rng_poisson: lambda must be in (0, 1e9], got %g", lambda);
    kiln_rng_request req = {KILN_DIST_BITS, 1, 0, 0, lambda, "kiln_rng_poisson"};
    return generate(rng, out, &req);
}

kiln_status kiln_rng_bits(kiln_rng *rng, kiln_array *out) {
    int unused = 0;
    kiln_status st = check_fill(rng, out, "kiln_rng_bits", 0, &unused);
    if (st != KILN_OK) return st;
    kiln_rng_request req = {KILN_DIST_BITS, 0, 0, 1, 0, "kiln_rng_bits"};
    return generate(rng, out, &req);
}
