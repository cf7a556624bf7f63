/* user.c: the operators users write: reduction kernels (CuPy's
 * ReductionKernel), scan kernels with a user operator, a binary ufunc's
 * reduce and accumulate, and the built-in scans (cumsum, ...). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "kernel/module.h"
#include "reduce/rd_provider.h"
#include "reduce/scan.h"
#include "ufunc/ufunc_types.h"

/* ---------------------------------------------------------------- helpers */

static int is_ident(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return 0;
    return 1;
}

/* Does text use the identifier id as a whole word? */
static int uses_word(const char *text, const char *id) {
    size_t n = strlen(id);
    for (const char *p = text; (p = strstr(p, id)) != NULL; p += n) {
        int before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = isalnum((unsigned char)p[n]) || p[n] == '_';
        if (!before && !after) return 1;
    }
    return 0;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* ---------------------------------------------------------------- reduction kernels */

struct kiln_reduction_kernel {
    kiln_context *ctx;
    rd_op op;
    char *texts[6]; /* owned copies of the snippets */
};

static kiln_status parse_in_params(const char *name, const char *text, rd_op *op) {
    if (!text || !*text)
        return kiln_set_error(KILN_ERR_SIGNATURE, "%s: in_params is empty, expected e.g. \"f4 x\"", name);
    const char *p = text;
    while (*p) {
        while (isspace((unsigned char)*p) || *p == ',') p++;
        if (!*p) break;
        if (op->nin == RD_MAX_IN)
            return kiln_set_error(KILN_ERR_SIGNATURE, "%s: more than %d inputs in \"%s\"", name, RD_MAX_IN,
                                  text);
        char type[32] = {0}, id[RD_NAME_MAX] = {0};
        size_t n = 0;
        while (*p && !isspace((unsigned char)*p) && *p != ',' && n + 1 < sizeof type) type[n++] = *p++;
        while (isspace((unsigned char)*p)) p++;
        n = 0;
        while (*p && !isspace((unsigned char)*p) && *p != ',' && n + 1 < sizeof id) id[n++] = *p++;
        while (isspace((unsigned char)*p)) p++;
        if (*p && *p != ',')
            return kiln_set_error(KILN_ERR_SIGNATURE,
                                  "%s: in_params \"%s\": expected \"type name\" pairs separated by ','", name,
                                  text);
        kiln_dtype t;
        if (kiln_dtype_parse(type, &t) != KILN_OK)
            return kiln_set_error(KILN_ERR_SIGNATURE, "%s: in_params \"%s\": unknown type \"%s\"", name, text,
                                  type);
        if (!is_ident(id))
            return kiln_set_error(KILN_ERR_SIGNATURE, "%s: in_params \"%s\": \"%s\" is not a C identifier",
                                  name, text, id);
        op->in_dtype[op->nin] = t;
        snprintf(op->in_name[op->nin], RD_NAME_MAX, "%s", id);
        op->nin++;
    }
    if (op->nin == 0)
        return kiln_set_error(KILN_ERR_SIGNATURE, "%s: in_params \"%s\" names no input", name, text);
    return KILN_OK;
}

void kiln_reduction_kernel_release(kiln_reduction_kernel *k) {
    if (!k) return;
    for (int i = 0; i < 6; i++) free(k->texts[i]);
    kiln_context_release(k->ctx);
    free(k);
}

kiln_status kiln_reduction_kernel_create(kiln_context *ctx, const char *name, const kiln_reduction_spec *spec,
                                         kiln_reduction_kernel **out) {
    if (!ctx || !spec || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_reduction_kernel_create: NULL argument");
    if (!is_ident(name) || strlen(name) >= RD_NAME_MAX)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_reduction_kernel_create: name \"%s\" is not a C identifier",
                              name ? name : "(null)");
    const char *need[] = {spec->out_type, spec->map_expr, spec->reduce_expr, spec->identity};
    const char *what[] = {"out_type", "map_expr", "reduce_expr", "identity"};
    for (int i = 0; i < 4; i++)
        if (!need[i] || !*need[i])
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: %s is missing", name, what[i]);
    kiln_reduction_kernel *k = calloc(1, sizeof *k);
    if (!k) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    k->ctx = kiln_context_retain(ctx); /* kept alive until released, as every kiln object */
    rd_op *op = &k->op;
    snprintf(op->name, sizeof op->name, "%s", name);
    kiln_status s = parse_in_params(name, spec->in_params, op);
    if (s == KILN_OK && kiln_dtype_parse(spec->out_type, &op->out_dtype) != KILN_OK)
        s = kiln_set_error(KILN_ERR_SIGNATURE, "%s: unknown out_type \"%s\"", name, spec->out_type);
    if (s != KILN_OK) {
        kiln_reduction_kernel_release(k);
        return s;
    }
    snprintf(op->acc_type, sizeof op->acc_type, "%s",
             spec->acc_type ? spec->acc_type : rd_compute_type(op->out_dtype));
    k->texts[0] = dup_or_null(spec->map_expr);
    k->texts[1] = dup_or_null(spec->reduce_expr);
    k->texts[2] = dup_or_null(spec->post_expr);
    k->texts[3] = dup_or_null(spec->identity);
    k->texts[4] = dup_or_null(spec->preamble);
    op->map = k->texts[0];
    op->reduce = k->texts[1];
    op->post = k->texts[2];
    op->identity = k->texts[3];
    op->preamble = k->texts[4];
    op->user = 1;
    op->has_identity = 1;
    op->uses_index = uses_word(op->map, "_i");
    /* compile the variant for contiguous inputs of the declared dtypes now,
     * so that errors in the snippets surface here */
    rd_plan p;
    memset(&p, 0, sizeof p);
    p.backend = ctx->ops->kind;
    p.prov = rd_provider_for(p.backend);
    if (!p.prov) {
        kiln_reduction_kernel_release(k);
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: kiln has no reduction kernels for the %s backend",
                              name, ctx->ops->name);
    }
    p.nin = op->nin;
    for (int i = 0; i < op->nin; i++) p.store[i] = op->in_dtype[i];
    p.out_store = op->out_dtype;
    p.ndo = 0;
    p.ndr = 1;
    p.layout = RD_INNER;
    p.vec = 1;
    p.group = RD_GPU_BLOCK;
    char *src = rd_generate(op, &p);
    kiln_kernel *kk = NULL;
    char msg[160];
    snprintf(msg, sizeof msg,
             "%s: the reduction did not compile (lines below count from each snippet's first line):\n", name);
    s = src ? rd_cached_kernel(ctx, src, name, "kiln_rd_main", msg, &kk)
            : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    free(src);
    if (s != KILN_OK) {
        kiln_reduction_kernel_release(k);
        return s;
    }
    *out = k;
    return KILN_OK;
}

kiln_status kiln_reduction_kernel_call(kiln_reduction_kernel *k, const kiln_value *args, int nargs,
                                       const kiln_reduce_opts *opts, kiln_array **result) {
    static const kiln_reduce_opts none = {0};
    if (!k) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_reduction_kernel_call: NULL kernel");
    if (!opts) opts = &none;
    return rd_execute(&k->op, k->ctx, args, nargs, opts->axes, opts->naxes, opts->keepdims, opts->out,
                      opts->stream, result);
}

/* ---------------------------------------------------------------- built-in scans */

static kiln_dtype sum_dtype(kiln_dtype t) {
    char k = kiln_dtype_kind(t);
    return k == 'b' || k == 'i' ? KILN_INT64 : k == 'u' ? KILN_UINT64 : t;
}

kiln_status kiln_scan(kiln_scan_op op, kiln_array *a, int axis, int exclusive, kiln_array *out,
                      kiln_stream *stream, kiln_array **result) {
    static const char *const names[] = {"cumsum", "cumprod", "cummin", "cummax"};
    if ((int)op < 0 || op > KILN_SCAN_MAX)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_scan: unknown op %d", (int)op);
    if (!a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL array", names[op]);
    sc_op o;
    memset(&o, 0, sizeof o);
    snprintf(o.name, sizeof o.name, "%s", names[op]);
    o.in_dtype = a->dtype;
    char k = kiln_dtype_kind(a->dtype);
    if (k == 'c' && op >= KILN_SCAN_MIN)
        return kiln_set_error(KILN_ERR_DTYPE,
                              "%s: complex arrays are not ordered; cumsum and cumprod take them", names[op]);
    switch (op) {
    case KILN_SCAN_SUM:
        o.out_dtype = sum_dtype(a->dtype);
        o.combine = "a + b";
        o.identity = "kiln_sc_v()";
        o.acc_f64 = kiln_dtype_is_half(a->dtype) || a->dtype == KILN_FLOAT32;
        break;
    case KILN_SCAN_PROD:
        o.out_dtype = sum_dtype(a->dtype);
        o.combine = "a * b";
        o.identity = "kiln_sc_v(1)";
        break;
    default:
        o.out_dtype = a->dtype;
        o.combine = op == KILN_SCAN_MIN ? "kiln_rd_min(a, b)" : "kiln_rd_max(a, b)";
        o.identity = NULL; /* replaced below */
        break;
    }
    /* as reductions do: a wider out is the dtype the running sum or product is kept in */
    if (op == KILN_SCAN_SUM || op == KILN_SCAN_PROD) o.out_dtype = rd_accumulation_dtype(o.out_dtype, out);
    if (op == KILN_SCAN_MIN || op == KILN_SCAN_MAX) {
        /* the extreme of the value type, written out per dtype */
        static const char *const hi[KILN_DTYPE_COUNT] = {"true",
                                                         "(int8_t)127",
                                                         "(int16_t)32767",
                                                         "2147483647",
                                                         "9223372036854775807LL",
                                                         "(uint8_t)255",
                                                         "(uint16_t)65535",
                                                         "4294967295u",
                                                         "18446744073709551615ull",
                                                         "INFINITY",
                                                         "INFINITY",
                                                         "(double)INFINITY",
                                                         [KILN_BFLOAT16] = "INFINITY"};
        static const char *const lo[KILN_DTYPE_COUNT] = {"false",
                                                         "(int8_t)-128",
                                                         "(int16_t)-32768",
                                                         "(-2147483647 - 1)",
                                                         "(-9223372036854775807LL - 1)",
                                                         "(uint8_t)0",
                                                         "(uint16_t)0",
                                                         "0u",
                                                         "0ull",
                                                         "-INFINITY",
                                                         "-INFINITY",
                                                         "-(double)INFINITY",
                                                         [KILN_BFLOAT16] = "-INFINITY"};
        o.identity = op == KILN_SCAN_MIN ? hi[a->dtype] : lo[a->dtype];
    }
    return sc_execute(&o, a, axis, exclusive, out, stream, result);
}

kiln_status kiln_cumsum(kiln_array *a, int axis, kiln_array *out, kiln_array **result) {
    return kiln_scan(KILN_SCAN_SUM, a, axis, 0, out, NULL, result);
}
kiln_status kiln_cumprod(kiln_array *a, int axis, kiln_array *out, kiln_array **result) {
    return kiln_scan(KILN_SCAN_PROD, a, axis, 0, out, NULL, result);
}
kiln_status kiln_cummin(kiln_array *a, int axis, kiln_array *out, kiln_array **result) {
    return kiln_scan(KILN_SCAN_MIN, a, axis, 0, out, NULL, result);
}
kiln_status kiln_cummax(kiln_array *a, int axis, kiln_array *out, kiln_array **result) {
    return kiln_scan(KILN_SCAN_MAX, a, axis, 0, out, NULL, result);
}

/* ---------------------------------------------------------------- scan kernels */

struct kiln_scan_kernel {
    kiln_context *ctx;
    sc_op op;
    char *texts[3];
};

void kiln_scan_kernel_release(kiln_scan_kernel *k) {
    if (!k) return;
    for (int i = 0; i < 3; i++) free(k->texts[i]);
    kiln_context_release(k->ctx);
    free(k);
}

kiln_status kiln_scan_kernel_create(kiln_context *ctx, const char *name, const char *type,
                                    const char *op_expr, const char *identity, const char *preamble,
                                    kiln_scan_kernel **out) {
    if (!ctx || !out || !type || !op_expr)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_scan_kernel_create: NULL argument");
    if (!is_ident(name) || strlen(name) >= RD_NAME_MAX)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_scan_kernel_create: name \"%s\" is not a C identifier",
                              name ? name : "(null)");
    kiln_dtype t;
    if (kiln_dtype_parse(type, &t) != KILN_OK)
        return kiln_set_error(KILN_ERR_SIGNATURE, "%s: unknown type \"%s\"", name, type);
    kiln_scan_kernel *k = calloc(1, sizeof *k);
    if (!k) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    k->ctx = kiln_context_retain(ctx); /* kept alive until released, as every kiln object */
    snprintf(k->op.name, sizeof k->op.name, "%s", name);
    k->op.in_dtype = t;
    k->op.out_dtype = t;
    k->op.user = 1;
    k->texts[0] = strdup(op_expr);
    k->texts[1] = dup_or_null(identity);
    k->texts[2] = dup_or_null(preamble);
    k->op.combine = k->texts[0];
    k->op.identity = k->texts[1];
    k->op.preamble = k->texts[2];
    /* compile once for a small contiguous array now: errors surface here */
    int64_t n = 2;
    kiln_array *probe = NULL, *r = NULL;
    kiln_status s = kiln_array_zeros(ctx, t, 1, &n, &probe);
    if (s == KILN_OK) s = sc_execute(&k->op, probe, 0, 0, NULL, NULL, &r);
    kiln_array_release(r);
    kiln_array_release(probe);
    if (s != KILN_OK) {
        kiln_scan_kernel_release(k);
        return s;
    }
    *out = k;
    return KILN_OK;
}

kiln_status kiln_scan_kernel_call(kiln_scan_kernel *k, kiln_array *a, int axis, int exclusive,
                                  kiln_array *out, kiln_array **result) {
    if (!k) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_scan_kernel_call: NULL kernel");
    if (a && a->ctx != k->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: the array belongs to another context",
                              k->op.name);
    return sc_execute(&k->op, a, axis, exclusive, out, NULL, result);
}

/* ---------------------------------------------------------------- ufunc reduce / accumulate */

/* The signature T(T,T) that a's dtype matches exactly, else casts to. */
static kiln_status ufunc_binary_sig(kiln_ufunc *f, kiln_dtype have, const char *what, kiln_dtype *t) {
    if (f->nin != 2 || f->nout != 1)
        return kiln_set_error(KILN_ERR_SIGNATURE,
                              "%s: ufunc %s has %d inputs and %d outputs; reduce and accumulate "
                              "need a binary ufunc (2 inputs, 1 output)",
                              what, f->name, f->nin, f->nout);
    for (int pass = 0; pass < 2; pass++)
        for (int s = 0; s < f->nsig; s++) {
            const uf_signature *g = &f->sigs[s];
            if (g->in[0] != g->in[1] || g->in[0] != g->out[0]) continue;
            if (pass == 0 ? have == g->in[0] : kiln_dtype_can_cast(have, g->in[0])) {
                *t = g->in[0];
                return KILN_OK;
            }
        }
    return kiln_set_error(KILN_ERR_DTYPE,
                          "%s: ufunc %s has no signature T(T,T) that %s casts to (signatures: %s)", what,
                          f->name, kiln_dtype_name(have), f->sig_list);
}

/* The ufunc's body as `kiln_uf_op(a, b)`, after its own preamble; lines
 * count from the body's first line (file "<name>"). */
static char *ufunc_operator(kiln_ufunc *f, kiln_dtype t) {
    const char *ct = rd_compute_type(t);
    size_t cap = strlen(f->body) + (f->preamble ? strlen(f->preamble) : 0) + 1024;
    char *s = malloc(cap);
    if (!s) return NULL;
    if (f->return_style)
        snprintf(s, cap, "%s\nKILN_RD_FN %s kiln_uf_op(%s %s, %s %s) {\n#line 1 \"%s\"\n%s\n}\n",
                 f->preamble ? f->preamble : "", ct, ct, f->in_names[0], ct, f->in_names[1], f->name,
                 f->body);
    else
        snprintf(s, cap,
                 "%s\nKILN_RD_FN %s kiln_uf_op(%s %s, %s %s) {\n    %s %s = %s();\n#line 1 \"%s\"\n%s\n    "
                 "return %s;\n}\n",
                 f->preamble ? f->preamble : "", ct, ct, f->in_names[0], ct, f->in_names[1], ct,
                 f->out_names[0], ct, f->name, f->body, f->out_names[0]);
    return s;
}

kiln_status rd_ufunc_reduce_op(kiln_ufunc *f, kiln_dtype have, const char *identity, rd_ufunc_op *u) {
    memset(u, 0, sizeof *u);
    kiln_dtype t;
    kiln_status s = ufunc_binary_sig(f, have, "kiln_ufunc_reduce", &t);
    if (s != KILN_OK) return s;
    rd_op *op = &u->op;
    snprintf(op->name, sizeof op->name, "%s", f->name);
    op->nin = 1;
    op->in_dtype[0] = t;
    snprintf(op->in_name[0], RD_NAME_MAX, "x");
    op->out_dtype = t;
    op->user = 1;
    const char *ct = rd_compute_type(t);
    if (!(u->preamble = ufunc_operator(f, t)))
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    op->preamble = u->preamble;
    if (identity) {
        snprintf(op->acc_type, sizeof op->acc_type, "%s", ct);
        snprintf(u->identity, sizeof u->identity, "(%s)(%s)", ct, identity);
        op->map = "x";
        op->reduce = "kiln_uf_op(a, b)";
        op->has_identity = 1;
    } else { /* no identity: the accumulator carries "has a value" */
        snprintf(op->acc_type, sizeof op->acc_type, "kiln_rd_opt<%s>", ct);
        snprintf(u->identity, sizeof u->identity, "kiln_rd_opt_make<%s>(%s(), 0)", ct, ct);
        snprintf(u->map, sizeof u->map, "kiln_rd_opt_make<%s>(x, 1)", ct);
        op->map = u->map;
        op->reduce = "!a.has ? b : !b.has ? a : kiln_rd_opt_make(kiln_uf_op(a.v, b.v), 1)";
        op->post = "a.v";
    }
    op->identity = u->identity;
    return KILN_OK;
}

/* The dtype whose signature reduces or accumulates a: NumPy takes the loop
 * of out's dtype when out is given (add.reduce(float32, out=float64) adds in
 * float64), so out's where the ufunc has T(T,T) for it and a casts to it,
 * else a's own. */
static kiln_dtype loop_dtype(const kiln_ufunc *f, kiln_dtype have, const kiln_array *out) {
    if (!out || out->dtype == have || !kiln_dtype_can_cast(have, out->dtype) || f->nin != 2 || f->nout != 1)
        return have;
    for (int i = 0; i < f->nsig; i++) {
        const uf_signature *g = &f->sigs[i];
        if (g->in[0] == out->dtype && g->in[1] == out->dtype && g->out[0] == out->dtype) return out->dtype;
    }
    return have;
}

kiln_status kiln_ufunc_reduce(kiln_ufunc *f, kiln_array *a, const char *identity,
                              const kiln_reduce_opts *opts, kiln_array **result) {
    static const kiln_reduce_opts none = {0};
    if (!f || !a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_ufunc_reduce: NULL argument");
    if (!opts) opts = &none;
    rd_ufunc_op *u = malloc(sizeof *u);
    if (!u) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_status s = rd_ufunc_reduce_op(f, loop_dtype(f, a->dtype, opts->out), identity, u);
    if (s == KILN_OK)
        s = rd_execute(&u->op, a->ctx, KILN_ARGS(kiln_arr(a)), opts->axes, opts->naxes, opts->keepdims,
                       opts->out, opts->stream, result);
    free(u->preamble);
    free(u);
    return s;
}

const rd_op *rd_kernel_op(const kiln_reduction_kernel *k) { return &k->op; }
const sc_op *sc_kernel_op(const kiln_scan_kernel *k) { return &k->op; }

kiln_status kiln_ufunc_accumulate(kiln_ufunc *f, kiln_array *a, int axis, kiln_array *out,
                                  kiln_array **result) {
    if (!f || !a) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_ufunc_accumulate: NULL argument");
    kiln_dtype t;
    kiln_status s = ufunc_binary_sig(f, loop_dtype(f, a->dtype, out), "kiln_ufunc_accumulate", &t);
    if (s != KILN_OK) return s;
    sc_op op;
    memset(&op, 0, sizeof op);
    snprintf(op.name, sizeof op.name, "%s", f->name);
    op.in_dtype = t;
    op.out_dtype = t;
    op.user = 1;
    op.combine = "kiln_uf_op(a, b)";
    char *pre = ufunc_operator(f, t);
    if (!pre) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    op.preamble = pre;
    s = sc_execute(&op, a, axis, 0, out, NULL, result);
    free(pre);
    return s;
}
