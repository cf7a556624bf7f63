/* builtin_reductions.c: NumPy's reductions as rd_ops (dtype rules, identities, NaN
 * handling) and the public calls that run them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "reduce/reduce.h"

static const char *const op_names[KILN_REDUCE_OP_COUNT] = {"sum", "prod", "min",  "max", "argmin", "argmax",
                                                           "any", "all",  "mean", "var", "std"};

/* The largest (hi) or smallest value of t's compute type, as C text. */
static const char *extreme(kiln_dtype t, int hi) {
    switch (t) {
    case KILN_BOOL: return hi ? "true" : "false";
    case KILN_INT8: return hi ? "(int8_t)127" : "(int8_t)-128";
    case KILN_INT16: return hi ? "(int16_t)32767" : "(int16_t)-32768";
    case KILN_INT32: return hi ? "2147483647" : "(-2147483647 - 1)";
    case KILN_INT64: return hi ? "9223372036854775807LL" : "(-9223372036854775807LL - 1)";
    case KILN_UINT8: return hi ? "(uint8_t)255" : "(uint8_t)0";
    case KILN_UINT16: return hi ? "(uint16_t)65535" : "(uint16_t)0";
    case KILN_UINT32: return hi ? "4294967295u" : "0u";
    case KILN_UINT64: return hi ? "18446744073709551615ull" : "0ull";
    case KILN_FLOAT64: return hi ? "(double)INFINITY" : "-(double)INFINITY";
    default: return hi ? "INFINITY" : "-INFINITY";
    }
}

/* NumPy's sum/prod result dtype. */
static kiln_dtype sum_dtype(kiln_dtype t) {
    switch (kiln_dtype_kind(t)) {
    case 'b':
    case 'i': return KILN_INT64;
    case 'u': return KILN_UINT64;
    default: return t;
    }
}

/* mean/var result dtype: ints and bool give float64. */
static kiln_dtype float_dtype(kiln_dtype t) {
    char k = kiln_dtype_kind(t);
    return k == 'f' || k == 'c' ? t : KILN_FLOAT64;
}

kiln_status rd_builtin_op(kiln_reduce_op op, kiln_dtype t, int ddof, rd_op *o) {
    memset(o, 0, sizeof *o);
    if ((int)op < 0 || op >= KILN_REDUCE_OP_COUNT)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_reduce: unknown operation %d", (int)op);
    if ((int)t < 0 || t >= KILN_DTYPE_COUNT)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: invalid dtype %d", op_names[op], (int)t);
    snprintf(o->name, sizeof o->name, "%s", op_names[op]);
    o->nin = 1;
    o->in_dtype[0] = t;
    snprintf(o->in_name[0], sizeof o->in_name[0], "x");
    o->has_identity = 1;
    char k = kiln_dtype_kind(t);
    const char *ct = rd_compute_type(t);
    int complex_ok = op == KILN_REDUCE_SUM || op == KILN_REDUCE_PROD || op == KILN_REDUCE_MEAN ||
                     op == KILN_REDUCE_ANY || op == KILN_REDUCE_ALL;
    if (k == 'c' && !complex_ok)
        return kiln_set_error(KILN_ERR_DTYPE,
                              "%s: %s is not supported for complex arrays (sum, prod, mean, any, all are)",
                              op_names[op], kiln_dtype_name(t));
    switch (op) {
    case KILN_REDUCE_SUM:
    case KILN_REDUCE_PROD:
        o->out_dtype = sum_dtype(t);
        snprintf(o->acc_type, sizeof o->acc_type, "%s", rd_compute_type(o->out_dtype));
        o->identity = op == KILN_REDUCE_SUM ? "kiln_rd_acc()" : "kiln_rd_acc(1)";
        o->map = "(kiln_rd_acc)x";
        o->reduce = op == KILN_REDUCE_SUM ? "a + b" : "a * b";
        o->gpu_acc_f64 = op == KILN_REDUCE_SUM && (kiln_dtype_is_half(t) || t == KILN_FLOAT32);
        break;
    case KILN_REDUCE_MIN:
    case KILN_REDUCE_MAX:
        o->out_dtype = t;
        snprintf(o->acc_type, sizeof o->acc_type, "%s", ct);
        o->identity = extreme(t, op == KILN_REDUCE_MIN);
        o->map = "x";
        o->reduce = op == KILN_REDUCE_MIN ? "kiln_rd_min(a, b)" : "kiln_rd_max(a, b)";
        o->has_identity = 0;
        break;
    case KILN_REDUCE_ARGMIN:
    case KILN_REDUCE_ARGMAX:
        o->out_dtype = KILN_INT64;
        snprintf(o->acc_type, sizeof o->acc_type, "kiln_rd_arg<%s>", ct);
        o->identity = "kiln_rd_arg_none<decltype(kiln_rd_acc().v)>()";
        o->map = "kiln_rd_arg_make(x, _i)";
        o->reduce =
            op == KILN_REDUCE_ARGMIN ? "kiln_rd_arg_pick(a, b, true)" : "kiln_rd_arg_pick(a, b, false)";
        o->step = op == KILN_REDUCE_ARGMIN ? "kiln_rd_arg_step(a, x, _i, true)"
                                           : "kiln_rd_arg_step(a, x, _i, false)";
        o->arg = op == KILN_REDUCE_ARGMIN ? 1 : 2;
        o->post = "(long long)a.i";
        o->uses_index = 1;
        o->has_identity = 0;
        break;
    case KILN_REDUCE_ANY:
    case KILN_REDUCE_ALL:
        o->out_dtype = KILN_BOOL;
        snprintf(o->acc_type, sizeof o->acc_type, "int");
        o->identity = op == KILN_REDUCE_ANY ? "0" : "1";
        o->map = "(int)(x != decltype(x)())";
        o->reduce = op == KILN_REDUCE_ANY ? "a | b" : "a & b";
        o->post = "a != 0";
        break;
    case KILN_REDUCE_MEAN:
        o->out_dtype = float_dtype(t);
        snprintf(o->acc_type, sizeof o->acc_type, "%s", rd_compute_type(o->out_dtype));
        o->identity = "kiln_rd_acc()";
        o->map = "(kiln_rd_acc)x";
        o->reduce = "a + b";
        o->post = t == KILN_COMPLEX64 ? "a / (float)_n" : "a / (double)_n";
        o->gpu_acc_f64 = kiln_dtype_is_half(t) || t == KILN_FLOAT32;
        break;
    case KILN_REDUCE_VAR:
    case KILN_REDUCE_STD:
        o->out_dtype = float_dtype(t);
        snprintf(o->acc_type, sizeof o->acc_type, "kiln_rd_moments<double>");
        o->identity = "kiln_rd_moments_make<double>(0.0, 0.0, 0.0)";
        o->map = "kiln_rd_moments_make<double>(1.0, (double)x, 0.0)";
        o->reduce = "kiln_rd_moments_merge(a, b)";
        /* NumPy divides by max(n - ddof, 0): ddof >= n gives inf (or NaN for
         * 0/0), never a negative variance; a negative ddof is accepted and
         * divides by n + |ddof|. ddof is compiled in (codegen.c defines
         * KILN_RD_DDOF): one variant per ddof used. */
        o->post = op == KILN_REDUCE_VAR ? "kiln_rd_ddof_div(a.m2, a.n - (double)KILN_RD_DDOF)"
                                        : "sqrt(kiln_rd_ddof_div(a.m2, a.n - (double)KILN_RD_DDOF))";
        o->uses_ddof = 1;
        o->ddof = ddof;
        break;
    default: break;
    }
    return KILN_OK;
}

/* NumPy accumulates a reduction in its out's dtype when one is given:
 * mean(float32 data, out=float64) sums in float64. Where out is wider than
 * the result (it takes the result safely), the sum, product or mean loads,
 * accumulates and divides in out's dtype. */
void rd_widen_to_out(rd_op *o, const kiln_array *out) {
    kiln_dtype wide = rd_accumulation_dtype(o->out_dtype, out);
    if (wide == o->out_dtype) return;
    o->out_dtype = wide;
    o->in_dtype[0] = wide;
    snprintf(o->acc_type, sizeof o->acc_type, "%s", rd_compute_type(wide));
    if (o->post) o->post = wide == KILN_COMPLEX64 ? "a / (float)_n" : "a / (double)_n";
}

kiln_status kiln_reduce(kiln_reduce_op op, kiln_array *a, const kiln_reduce_opts *opts, kiln_array **result) {
    static const kiln_reduce_opts none = {0};
    if (!opts) opts = &none;
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_reduce: NULL array");
    rd_op o;
    kiln_status s = rd_builtin_op(op, a->dtype, opts->ddof, &o);
    if (s != KILN_OK) return s;
    if (op == KILN_REDUCE_SUM || op == KILN_REDUCE_PROD || op == KILN_REDUCE_MEAN)
        rd_widen_to_out(&o, opts->out);
    return rd_execute(&o, a->ctx, KILN_ARGS(kiln_arr(a)), opts->axes, opts->naxes, opts->keepdims, opts->out,
                      opts->stream, result);
}

#define RD_SHORTHAND_(fn, OP)                                                                                \
    kiln_status fn(kiln_array *a, const int *axes, int naxes, int keepdims, kiln_array *out,                 \
                   kiln_array **result) {                                                                    \
        kiln_reduce_opts o = {0};                                                                            \
        o.axes = axes;                                                                                       \
        o.naxes = naxes;                                                                                     \
        o.keepdims = keepdims;                                                                               \
        o.out = out;                                                                                         \
        return kiln_reduce(OP, a, &o, result);                                                               \
    }
RD_SHORTHAND_(kiln_sum, KILN_REDUCE_SUM)
RD_SHORTHAND_(kiln_prod, KILN_REDUCE_PROD)
RD_SHORTHAND_(kiln_min, KILN_REDUCE_MIN)
RD_SHORTHAND_(kiln_max, KILN_REDUCE_MAX)
RD_SHORTHAND_(kiln_argmin, KILN_REDUCE_ARGMIN)
RD_SHORTHAND_(kiln_argmax, KILN_REDUCE_ARGMAX)
RD_SHORTHAND_(kiln_any, KILN_REDUCE_ANY)
RD_SHORTHAND_(kiln_all, KILN_REDUCE_ALL)
RD_SHORTHAND_(kiln_mean, KILN_REDUCE_MEAN)
#undef RD_SHORTHAND_

kiln_status kiln_var(kiln_array *a, const int *axes, int naxes, int ddof, int keepdims, kiln_array *out,
                     kiln_array **result) {
    kiln_reduce_opts o = {axes, naxes, keepdims, out, ddof, NULL};
    return kiln_reduce(KILN_REDUCE_VAR, a, &o, result);
}

kiln_status kiln_std(kiln_array *a, const int *axes, int naxes, int ddof, int keepdims, kiln_array *out,
                     kiln_array **result) {
    kiln_reduce_opts o = {axes, naxes, keepdims, out, ddof, NULL};
    return kiln_reduce(KILN_REDUCE_STD, a, &o, result);
}

kiln_status kiln_array_item_f64(kiln_array *a, double *value) {
    if (!a || !value) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_array_item_f64: NULL argument");
    if (kiln_array_size(a) != 1)
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_array_item_f64: the array has %lld elements, expected 1",
                              (long long)kiln_array_size(a));
    union {
        unsigned char b[16];
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        float f;
        double d;
    } u;
    memset(&u, 0, sizeof u);
    kiln_status s = kiln_array_to_host(a, u.b, kiln_dtype_size(a->dtype));
    if (s != KILN_OK) return s;
    switch (a->dtype) {
    case KILN_BOOL: *value = u.u8 != 0; break;
    case KILN_INT8: *value = u.i8; break;
    case KILN_INT16: *value = u.i16; break;
    case KILN_INT32: *value = u.i32; break;
    case KILN_INT64: *value = (double)u.i64; break;
    case KILN_UINT8: *value = u.u8; break;
    case KILN_UINT16: *value = u.u16; break;
    case KILN_UINT32: *value = u.u32; break;
    case KILN_UINT64: *value = (double)u.u64; break;
    case KILN_FLOAT16:
    case KILN_BFLOAT16: *value = kiln_half_value_of(a->dtype, u.u16); break;
    case KILN_FLOAT32:
    case KILN_COMPLEX64: *value = u.f; break;
    default: *value = u.d; break;
    }
    return KILN_OK;
}
