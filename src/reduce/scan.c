/* scan.c: scans along one axis on both backends.
 *
 * A scan is M independent rows of length L (the scanned axis; the other dims
 * unravelled per row with their strides). Two strategies per backend:
 *   seq    one thread (CPU: one block per run of rows) per row, in order:
 *          many rows, or short ones (column scans are coalesced this way)
 *   tiled  CUDA: a single pass (read n, write n) whose tiles combine their
 *          predecessors in a fixed order, so float results do not depend on
 *          timing (scan_gpu.c). CPU: reduce-then-scan in three fixed passes
 *          over one contiguous piece per block (blocks there cannot wait for
 *          one another: they share a bounded worker pool).
 * Operators need only be associative: every combination keeps order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/text.h"
#include "kernel/module.h"
#include "reduce/scan_codegen.h"
#include "reduce/scan_gpu.h"

extern const char kiln_embedded_ufunc_common[];
extern const char kiln_embedded_reduce_common[];
extern const char kiln_embedded_reduce_gpu[];

static int count_lines(const kiln_text *t) {
    int n = 1;
    for (size_t i = 0; i < t->length; i++) n += t->data[i] == '\n';
    return n;
}

static void snippet(kiln_text *t, const sc_op *op, const char *part, const char *text) {
    if (op->user) kiln_text_printf(t, "\n#line 1 \"%s.%s\"\n", op->name, part);
    kiln_text_printf(t, "%s", text);
    if (op->user)
        kiln_text_printf(t, "\n#line %d \"kiln-scan-%s.cu\"\n", count_lines(t) + 1, op->name);
    else
        kiln_text_printf(t, "\n");
}

static int sc_args(const sc_plan *p, void *out, const void *in, void *aggr, int excl, kiln_value *a) {
    int n = 0;
    a[n++] = kiln_ptr(out, KILN_DTYPE_COUNT);
    a[n++] = kiln_ptr((void *)in, KILN_DTYPE_COUNT);
    a[n++] = kiln_ptr(aggr, KILN_DTYPE_COUNT);
    a[n++] = kiln_i32(excl);
    a[n++] = kiln_i64(p->M);
    a[n++] = kiln_i64(p->L);
    a[n++] = kiln_i64(p->sL);
    a[n++] = kiln_i64(p->oL);
    a[n++] = kiln_i64(p->T);
    a[n++] = kiln_i64(p->tile);
    a[n++] = kiln_i64(p->per);
    for (int d = 0; d < p->nd; d++) {
        a[n++] = kiln_i64(p->rshape[d]);
        a[n++] = kiln_i64(p->rin[d]);
        a[n++] = kiln_i64(p->rout[d]);
    }
    return n;
}

static void emit_operator(kiln_text *t, const sc_op *op, const sc_plan *p) {
    kiln_dtype vd = op->acc_f64 ? KILN_FLOAT64 : op->out_dtype;
    const char *vt = rd_compute_type(vd);
    char e[384];
    kiln_text_printf(t, "typedef %s kiln_sc_v;\n", vt);
    if (op->preamble && *op->preamble) snippet(t, op, "preamble", op->preamble);
    kiln_text_printf(t, "KILN_RD_FN kiln_sc_v kiln_sc_user(kiln_sc_v a, kiln_sc_v b) {\n    return ");
    snippet(t, op, "op", op->combine);
    kiln_text_printf(t, "    ;\n}\n");
    rd_load_expr(e, sizeof e, p->in_store, vd, "*(const kiln_sc_in *)kiln_p");
    kiln_text_printf(t, "typedef %s kiln_sc_in;\n", rd_storage_type(p->in_store));
    if (op->identity) {
        kiln_text_printf(
            t, "typedef kiln_sc_v kiln_sc_t;\nKILN_RD_FN kiln_sc_t kiln_sc_identity() {\n    return ");
        snippet(t, op, "identity", op->identity);
        kiln_text_printf(t, "    ;\n}\nKILN_RD_FN kiln_sc_t kiln_sc_op(kiln_sc_t a, kiln_sc_t b) { return "
                            "kiln_sc_user(a, b); }\n");
        kiln_text_printf(t, "KILN_RD_FN kiln_sc_t kiln_sc_load(const char *kiln_p) { return %s; }\n", e);
        rd_store_expr(e, sizeof e, vd, p->out_store, "kiln_v");
    } else {
        kiln_text_printf(
            t, "typedef kiln_rd_opt<kiln_sc_v> kiln_sc_t;\n"
               "KILN_RD_FN kiln_sc_t kiln_sc_identity() { return kiln_rd_opt_make(kiln_sc_v(), 0); }\n"
               "KILN_RD_FN kiln_sc_t kiln_sc_op(kiln_sc_t a, kiln_sc_t b) {\n"
               "    return !a.has ? b : !b.has ? a : kiln_rd_opt_make(kiln_sc_user(a.v, b.v), 1);\n}\n");
        kiln_text_printf(t,
                         "KILN_RD_FN kiln_sc_t kiln_sc_load(const char *kiln_p) { return "
                         "kiln_rd_opt_make<kiln_sc_v>(%s, 1); }\n",
                         e);
        rd_store_expr(e, sizeof e, vd, p->out_store, "kiln_v.v");
    }
    kiln_text_printf(
        t, "KILN_RD_FN void kiln_sc_store(char *kiln_p, kiln_sc_t kiln_v) { *(%s *)kiln_p = %s; }\n",
        rd_storage_type(p->out_store), e);
}

static void emit_seq(kiln_text *t, const sc_plan *p, int cuda) {
    kiln_text_printf(t, "__global__ void kiln_sc_seq(");
    sc_emit_params(t, p);
    kiln_text_printf(t, ") {\n    (void)kiln_aggr; (void)kiln_T; (void)kiln_tile;\n");
    if (cuda)
        kiln_text_printf(t, "    const long long kiln_m0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, "
                            "kiln_m1 = kiln_m0 + 1;\n");
    else
        kiln_text_printf(
            t, "    const long long kiln_m0 = (long long)blockIdx.x * kiln_per;\n"
               "    const long long kiln_m1 = kiln_M - kiln_m0 < kiln_per ? kiln_M : kiln_m0 + kiln_per;\n");
    kiln_text_printf(
        t, "    for (long long kiln_m = kiln_m0; kiln_m < kiln_m1 && kiln_m < kiln_M; kiln_m++) {\n");
    sc_emit_row_bases(t, p, "kiln_m");
    kiln_text_printf(t, "    kiln_sc_t kiln_acc = kiln_sc_identity();\n"
                        "    for (long long kiln_l = 0; kiln_l < kiln_L; kiln_l++) {\n"
                        "        const kiln_sc_t kiln_x = kiln_sc_load(kiln_pi + kiln_l * kiln_sL);\n"
                        "        if (kiln_excl) kiln_sc_store(kiln_po + kiln_l * kiln_oL, kiln_acc);\n"
                        "        kiln_acc = kiln_sc_op(kiln_acc, kiln_x);\n"
                        "        if (!kiln_excl) kiln_sc_store(kiln_po + kiln_l * kiln_oL, kiln_acc);\n"
                        "    }\n    }\n}\n");
}

/* CPU: a piece is cut into SC_CPU_CHAINS equal runs walked together, so the
 * running values are independent dependency chains (a float64 add's latency
 * would otherwise bound the loop); each run's total is kept, and its start
 * is the piece's prefix combined with the earlier runs' totals, in order. */
#define SC_CPU_CHAINS 4

/* kiln_q: run length; kiln_n[j]: elements of run j; kiln_k1: all runs full
 * below it. */
static const char cpu_runs[] =
    "    const long long kiln_l0 = kiln_t * kiln_tile;\n"
    "    const long long kiln_l1 = kiln_L - kiln_l0 < kiln_tile ? kiln_L : kiln_l0 + kiln_tile;\n"
    "    const long long kiln_q = (kiln_l1 - kiln_l0 + 3) / 4;\n"
    "    long long kiln_n[4], kiln_k1 = kiln_q;\n"
    "    for (int kiln_j = 0; kiln_j < 4; kiln_j++) {\n"
    "        const long long kiln_r = kiln_l1 - kiln_l0 - kiln_j * kiln_q;\n"
    "        kiln_n[kiln_j] = kiln_r < 0 ? 0 : kiln_r < kiln_q ? kiln_r : kiln_q;\n"
    "        if (kiln_n[kiln_j] < kiln_k1) kiln_k1 = kiln_n[kiln_j];\n"
    "    }\n"
    "#define KILN_SC_AT(j, k) (kiln_l0 + (long long)(j) * kiln_q + (k))\n";

static void emit_cpu_tiled(kiln_text *t, const sc_plan *p) {
    /* pass 1: each run of each block's piece reduced in order */
    kiln_text_printf(t, "__global__ void kiln_sc_tiles(");
    sc_emit_params(t, p);
    kiln_text_printf(t, ") {\n    (void)kiln_out; (void)kiln_excl; (void)kiln_oL; (void)kiln_per;\n"
                        "    const long long kiln_m = blockIdx.x / kiln_T, kiln_t = blockIdx.x %% kiln_T;\n");
    sc_emit_row_bases(t, p, "kiln_m");
    kiln_text_puts(t, cpu_runs);
    kiln_text_printf(
        t,
        "    kiln_sc_t kiln_a[4];\n"
        "    for (int kiln_j = 0; kiln_j < 4; kiln_j++) kiln_a[kiln_j] = kiln_sc_identity();\n"
        "    for (long long kiln_k = 0; kiln_k < kiln_k1; kiln_k++)\n"
        "        for (int kiln_j = 0; kiln_j < 4; kiln_j++)\n"
        "            kiln_a[kiln_j] = kiln_sc_op(kiln_a[kiln_j], kiln_sc_load(kiln_pi + KILN_SC_AT(kiln_j, "
        "kiln_k) * kiln_sL));\n"
        "    for (int kiln_j = 0; kiln_j < 4; kiln_j++)\n"
        "        for (long long kiln_k = kiln_k1; kiln_k < kiln_n[kiln_j]; kiln_k++)\n"
        "            kiln_a[kiln_j] = kiln_sc_op(kiln_a[kiln_j], kiln_sc_load(kiln_pi + KILN_SC_AT(kiln_j, "
        "kiln_k) * kiln_sL));\n"
        "    for (int kiln_j = 0; kiln_j < 4; kiln_j++) kiln_aggr[blockIdx.x * 4 + kiln_j] = "
        "kiln_a[kiln_j];\n"
        "    (void)kiln_po;\n}\n");
    /* pass 2: a row's runs in order: each run's slot becomes its start */
    kiln_text_printf(t, "__global__ void kiln_sc_prefix(");
    sc_emit_params(t, p);
    kiln_text_printf(t, ") {\n    (void)kiln_out; (void)kiln_in; (void)kiln_excl; (void)kiln_M; "
                        "(void)kiln_L; (void)kiln_sL;\n"
                        "    (void)kiln_oL; (void)kiln_tile; (void)kiln_per;\n"
                        "    kiln_sc_t *kiln_a = kiln_aggr + (long long)blockIdx.x * kiln_T * 4;\n"
                        "    kiln_sc_t kiln_acc = kiln_sc_identity();\n"
                        "    for (long long kiln_i = 0; kiln_i < kiln_T * 4; kiln_i++) {\n"
                        "        const kiln_sc_t kiln_x = kiln_a[kiln_i];\n"
                        "        kiln_a[kiln_i] = kiln_acc;\n"
                        "        kiln_acc = kiln_sc_op(kiln_acc, kiln_x);\n    }\n");
    for (int d = 0; d < p->nd; d++)
        kiln_text_printf(t, "    (void)kiln_rs%d; (void)kiln_ri%d; (void)kiln_ro%d;\n", d, d, d);
    kiln_text_printf(t, "}\n");
    /* pass 3: the runs rescanned together from their starts */
    kiln_text_printf(t, "__global__ void kiln_sc_apply(");
    sc_emit_params(t, p);
    kiln_text_printf(t, ") {\n    (void)kiln_per;\n"
                        "    const long long kiln_m = blockIdx.x / kiln_T, kiln_t = blockIdx.x %% kiln_T;\n");
    sc_emit_row_bases(t, p, "kiln_m");
    kiln_text_puts(t, cpu_runs);
    kiln_text_printf(
        t, "    kiln_sc_t kiln_a[4];\n"
           "    for (int kiln_j = 0; kiln_j < 4; kiln_j++) kiln_a[kiln_j] = kiln_aggr[blockIdx.x * 4 + "
           "kiln_j];\n"
           "#define KILN_SC_STEP(j, k)                                                          \\\n"
           "    {                                                                               \\\n"
           "        const long long kiln_l = KILN_SC_AT(j, k);                                  \\\n"
           "        const kiln_sc_t kiln_x = kiln_sc_load(kiln_pi + kiln_l * kiln_sL);          \\\n"
           "        if (kiln_excl) kiln_sc_store(kiln_po + kiln_l * kiln_oL, kiln_a[j]);        \\\n"
           "        kiln_a[j] = kiln_sc_op(kiln_a[j], kiln_x);                                  \\\n"
           "        if (!kiln_excl) kiln_sc_store(kiln_po + kiln_l * kiln_oL, kiln_a[j]);       \\\n"
           "    }\n"
           "    for (long long kiln_k = 0; kiln_k < kiln_k1; kiln_k++)\n"
           "        for (int kiln_j = 0; kiln_j < 4; kiln_j++) KILN_SC_STEP(kiln_j, kiln_k)\n"
           "    for (int kiln_j = 0; kiln_j < 4; kiln_j++)\n"
           "        for (long long kiln_k = kiln_k1; kiln_k < kiln_n[kiln_j]; kiln_k++) KILN_SC_STEP(kiln_j, "
           "kiln_k)\n"
           "#undef KILN_SC_STEP\n}\n");
    kiln_text_printf(t, "#undef KILN_SC_AT\n");
}

static char *sc_generate(const sc_op *op, const sc_plan *p) {
    kiln_text t = {0};
    int cuda = p->backend == KILN_BACKEND_CUDA;
    kiln_text_printf(&t, "#line 1 \"kiln-scan-%s.cu\"\n// kiln scan %s, %s kernels, %s, %d row dims\n",
                     op->name, op->name, cuda ? "cuda" : "cpu", p->tiled ? "tiled" : "sequential rows",
                     p->nd);
    kiln_text_puts(&t, kiln_embedded_ufunc_common);
    kiln_text_puts(&t, kiln_embedded_reduce_common);
    if (cuda) kiln_text_puts(&t, kiln_embedded_reduce_gpu);
    kiln_text_printf(&t, "\n#line %d \"kiln-scan-%s.cu\"\n", count_lines(&t) + 1, op->name);
    emit_operator(&t, op, p);
    emit_seq(&t, p, cuda);
    if (p->chain) sc_emit_gpu_columns(&t, p);
    if (p->tiled) {
        if (cuda)
            sc_emit_gpu_onepass(&t, p);
        else
            emit_cpu_tiled(&t, p);
    }
    return kiln_text_take(&t);
}

/* CUDA single pass: 256 threads, items per thread as many as fit a tile's
 * staging in shared memory (about 33 KiB: 4 blocks per SM), measured on an
 * H100 for 2^28 float32 (tile 8192: 1.08 x CUB; 4096: 0.88; 6144: 0.99),
 * 16-byte accesses where every row allows. Values are not kept in
 * registers between the two passes over a tile (read again from shared
 * memory), so the item count costs no registers. */
static void gpu_onepass_shape(const sc_op *op, const kiln_array *a, const kiln_array *dst, sc_plan *p) {
    kiln_dtype vd = op->acc_f64 ? KILN_FLOAT64 : op->out_dtype;
    int64_t vsize = (int64_t)kiln_dtype_size(vd) + (op->identity ? 0 : 8);
    int64_t in = (int64_t)kiln_dtype_size(p->in_store), out = (int64_t)kiln_dtype_size(p->out_store);
    int64_t stage = in + (in == out ? 0 : out); /* in place when the sizes match */
    p->block = RD_GPU_BLOCK;
    p->items = 32;
    while (p->items > 4 && ((int64_t)p->block * p->items * 33 / 32 * stage > 40960 || p->items * vsize > 256))
        p->items /= 2;
    p->group = p->block; /* a thread per earlier tile; 2^28 float32: a link per 2^21 elements */
    p->tile = (int64_t)p->block * p->items;
    int vin_ok = p->sL == in && ((uintptr_t)a->data % 16) == 0, vout_ok = p->oL == out;
    if (dst) vout_ok = vout_ok && ((uintptr_t)dst->data % 16) == 0;
    for (int d = 0; d < p->nd; d++) {
        vin_ok = vin_ok && p->rin[d] % 16 == 0;
        vout_ok = vout_ok && p->rout[d] % 16 == 0;
    }
    p->vin = vin_ok && in < 16 ? (int)(16 / in) : 1;
    p->vout = vout_ok && out < 16 ? (int)(16 / out) : 1;
    if (p->vin > p->items) p->vin = p->items;
    if (p->vout > p->items) p->vout = p->items;
}

/* The plan of scanning a (device-resident) along axis (already normalised)
 * into dst (contiguous, a's shape; NULL: assumed aligned). */
static void sc_make_plan(kiln_context *ctx, const sc_op *op, kiln_backend_kind backend, const kiln_array *a,
                         int axis, const kiln_array *dst, kiln_dtype out_store, sc_plan *p) {
    memset(p, 0, sizeof *p);
    p->backend = backend;
    p->in_store = a->dtype;
    p->out_store = out_store;
    int64_t ostr[KILN_MAX_DIMS];
    kiln_contiguous_strides(a->ndim, a->shape, kiln_dtype_size(out_store), ostr);
    p->L = a->shape[axis];
    p->sL = a->strides[axis];
    p->oL = ostr[axis];
    p->M = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (d == axis || a->shape[d] == 1) continue;
        p->rshape[p->nd] = a->shape[d];
        p->rin[p->nd] = a->strides[d];
        p->rout[p->nd] = ostr[d];
        p->nd++;
        p->M *= a->shape[d];
    }
    int units = ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 1;
    if (backend == KILN_BACKEND_CUDA) {
        /* the single pass for long rows that are few or contiguous (a thread
         * per row would read with the row's stride, uncoalesced); a row
         * shorter than a tile is one block, with no waiting */
        gpu_onepass_shape(op, a, dst, p);
        int contiguous_rows = p->sL == (int64_t)kiln_dtype_size(a->dtype);
        p->tiled = contiguous_rows ? p->L >= 1024 : p->L >= 4096 && p->M < (int64_t)units * 64;
        p->T = (p->L + p->tile - 1) / p->tile;
        if (p->M * p->T >= ((int64_t)1 << 31)) p->tiled = 0; /* one grid dimension of tiles */
        p->per = 1;
        /* neighbouring scans side by side in memory (columns): blocks of
         * them in chunks of rows, the sequential scan's bits. Where the
         * single pass would take few long strided rows, it reads a 32-byte
         * sector per element (8x the bytes of float32) but never waits; the
         * column scan moves the bytes once but waits one link (a few us)
         * per chunk of rows, so it is taken from 2048 scans on (estimated:
         * the link time equals the single pass's extra traffic near 1500
         * scans). */
        if (!p->tiled || p->M >= 2048) {
            sc_plan c = *p;
            if (sc_columns_fit(&c, kiln_dtype_size(p->in_store), kiln_dtype_size(p->out_store))) {
                *p = c;
                p->tiled = 0;
                p->chain = 1;
            }
        }
    } else {
        int64_t tasks = (int64_t)units * 4;
        p->tiled = p->M < tasks && p->L >= 65536;
        p->T = p->tiled ? (tasks + p->M - 1) / p->M : 1;
        p->tile = p->tiled ? (p->L + p->T - 1) / p->T : p->L;
        if (p->tiled) p->T = (p->L + p->tile - 1) / p->tile;
        p->per = (p->M + tasks - 1) / tasks;
        if (p->per < 1) p->per = 1;
    }
}

/* The column scan: its counter and flags zeroed, then one block per
 * (chunk, tile of scans). */
static kiln_status sc_launch_columns(kiln_context *ctx, const sc_op *op, const sc_plan *p, const char *src,
                                     void *out, const void *in, int excl, kiln_stream *stream,
                                     kiln_value *args) {
    char what[160];
    snprintf(what, sizeof what, "%s: the column scan did not compile:\n", op->name);
    kiln_kernel *k1 = NULL, *k2 = NULL;
    kiln_status s = rd_cached_kernel(ctx, src, op->name, "kiln_sc_colinit", what, &k1);
    if (s == KILN_OK) s = rd_cached_kernel(ctx, src, op->name, "kiln_sc_columns", what, &k2);
    if (s != KILN_OK) return s;
    kiln_array *ws = NULL;
    int64_t bytes = sc_columns_workspace_bytes(p);
    s = kiln_array_empty(ctx, KILN_UINT8, 1, &bytes, &ws);
    if (s != KILN_OK) return s;
    if (stream) kiln_array_note_stream(ws, stream);
    int n = sc_args(p, out, in, ws->data, excl, args);
    int64_t words = bytes / 4, blocks = (words + 255) / 256;
    s = kiln_launch(k1, KILN_DIM((uint32_t)(blocks < 1024 ? blocks : 1024)), KILN_DIM(256), 0, stream, args,
                    n);
    if (s == KILN_OK)
        s = kiln_launch(k2, KILN_DIM((uint32_t)(p->T * p->per)), KILN_DIM((uint32_t)p->block), 0, stream,
                        args, n);
    kiln_array_release(ws);
    return s;
}

static kiln_status sc_launch(kiln_context *ctx, const sc_op *op, const sc_plan *p, const char *src, void *out,
                             const void *in, int excl, kiln_stream *stream) {
    char what[160];
    snprintf(what, sizeof what,
             "%s: the scan did not compile (lines below count from each snippet's first line):\n", op->name);
    kiln_kernel *k = NULL;
    kiln_status s = rd_cached_kernel(ctx, src, op->name, "kiln_sc_seq", what, &k);
    if (s != KILN_OK || p->M == 0 || p->L == 0) return s;
    kiln_value args[KILN_MAX_PARAMS];
    int cuda = p->backend == KILN_BACKEND_CUDA;
    if (p->chain) return sc_launch_columns(ctx, op, p, src, out, in, excl, stream, args);
    if (!p->tiled) {
        int n = sc_args(p, out, in, NULL, excl, args);
        if (cuda)
            return kiln_launch(k, KILN_DIM((uint32_t)((p->M + 255) / 256)), KILN_DIM(256), 0, stream, args,
                               n);
        return kiln_launch(k, KILN_DIM((uint32_t)((p->M + p->per - 1) / p->per)), KILN_DIM(1), 0, stream,
                           args, n);
    }
    kiln_kernel *k1 = NULL, *k2 = NULL, *k3 = NULL;
    s = rd_cached_kernel(ctx, src, op->name, cuda ? "kiln_sc_init" : "kiln_sc_tiles", what, &k1);
    if (s == KILN_OK)
        s = rd_cached_kernel(ctx, src, op->name, cuda ? "kiln_sc_onepass" : "kiln_sc_prefix", what, &k2);
    if (s == KILN_OK && !cuda) s = rd_cached_kernel(ctx, src, op->name, "kiln_sc_apply", what, &k3);
    if (s != KILN_OK) return s;
    /* CUDA: the single pass's workspace; CPU: one scan value per run of a piece (every
     * scan value type kiln makes is at most SC_SLOT_BYTES) */
    kiln_array *aggr = NULL;
    int64_t bytes = cuda ? sc_onepass_workspace_bytes(p) : p->M * p->T * SC_CPU_CHAINS * SC_SLOT_BYTES;
    s = kiln_array_empty(ctx, KILN_UINT8, 1, &bytes, &aggr);
    if (s != KILN_OK) return s;
    if (stream) kiln_array_note_stream(aggr, stream);
    int n = sc_args(p, out, in, aggr->data, excl, args);
    if (cuda) {
        int64_t words = bytes / 16, blocks = (words + 255) / 256;
        s = kiln_launch(k1, KILN_DIM((uint32_t)(blocks < 1024 ? blocks : 1024)), KILN_DIM(256), 0, stream,
                        args, n);
        if (s == KILN_OK)
            s = kiln_launch(k2, KILN_DIM((uint32_t)(p->M * p->T)), KILN_DIM((uint32_t)p->block), 0, stream,
                            args, n);
    } else {
        kiln_dim3 tiles = KILN_DIM((uint32_t)(p->T * p->M));
        s = kiln_launch(k1, tiles, KILN_DIM(1), 0, stream, args, n);
        if (s == KILN_OK) s = kiln_launch(k2, KILN_DIM((uint32_t)p->M), KILN_DIM(1), 0, stream, args, n);
        if (s == KILN_OK) s = kiln_launch(k3, tiles, KILN_DIM(1), 0, stream, args, n);
    }
    kiln_array_release(aggr);
    return s;
}

kiln_status sc_execute(const sc_op *op, kiln_array *a0, int axis, int exclusive, kiln_array *out,
                       kiln_stream *stream, kiln_array **result) {
    if (!a0) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: NULL array", op->name);
    kiln_context *ctx = a0->ctx;
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!out && !result)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: give an output array or a result pointer",
                              op->name);
    if (exclusive && !op->identity)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: an exclusive scan needs an identity, the operator has none", op->name);
    if (a0->dtype != op->in_dtype && !kiln_dtype_can_cast(a0->dtype, op->in_dtype))
        return kiln_set_error(KILN_ERR_DTYPE, "%s: the array is %s, which does not cast safely to %s",
                              op->name, kiln_dtype_name(a0->dtype), kiln_dtype_name(op->in_dtype));
    kiln_array *a = NULL, *made = NULL, *tmp = NULL;
    int flat = axis == KILN_AXIS_FLAT;
    if (!flat && (axis < -a0->ndim || axis >= a0->ndim || a0->ndim == 0))
        return kiln_set_error(
            KILN_ERR_INVALID_ARGUMENT,
            "%s: axis %d is out of range for an array of %d dim%s (valid: %d..%d, or KILN_AXIS_FLAT)",
            op->name, axis, a0->ndim, a0->ndim == 1 ? "" : "s", -a0->ndim, a0->ndim - 1);
    if (!flat && axis < 0) axis += a0->ndim;
    s = rd_device_input(ctx, a0, &a);
    if (s == KILN_OK && flat) {
        int64_t n = kiln_array_size(a);
        kiln_array *c = NULL, *r = NULL;
        if (!kiln_array_is_contiguous(a)) {
            s = kiln_array_copy(a, &c);
        } else
            c = kiln_array_retain(a);
        if (s == KILN_OK) s = kiln_array_reshape(c, 1, &n, &r);
        kiln_array_release(c);
        kiln_array_release(a);
        a = r;
        axis = 0;
    }
    if (s != KILN_OK) {
        kiln_array_release(a);
        return s;
    }
    if (out) s = rd_check_out(op->name, out, op->out_dtype, a->ndim, a->shape);
    kiln_array *dst = out;
    if (s == KILN_OK) s = rd_destination(ctx, out, op->out_dtype, a->ndim, a->shape, &made, &tmp, &dst);
    char *src = NULL;
    if (s == KILN_OK) {
        sc_plan p;
        sc_make_plan(ctx, op, ctx->ops->kind, a, axis, dst, dst->dtype, &p);
        /* a repeated call finds its module by key, without generating text */
        uint64_t key[2] = {1469598103934665603ull, 0x6a09e667f3bcc908ull};
        rd_key_str(key, "scan");
        rd_key_str(key, op->name);
        rd_key_str(key, op->combine);
        rd_key_str(key, op->identity);
        rd_key_str(key, op->preamble);
        int ints[] = {(int)op->in_dtype,
                      (int)op->out_dtype,
                      op->user,
                      op->acc_f64,
                      (int)p.backend,
                      (int)p.in_store,
                      (int)p.out_store,
                      p.tiled,
                      p.chain,
                      p.nd,
                      p.block,
                      p.items,
                      p.group,
                      p.vin,
                      p.vout};
        rd_key_add(key, ints, sizeof ints);
        const char *text = rd_cache_source_for_key(ctx, key);
        if (!text) {
            text = src = sc_generate(op, &p);
            if (!src) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        if (s == KILN_OK) s = sc_launch(ctx, op, &p, text, dst->data, a->data, exclusive, stream);
        if (s == KILN_OK && src) rd_cache_set_key(ctx, src, key);
    }
    s = rd_finish(s, out, tmp, made, result);
    free(src);
    kiln_array_release(a);
    return s;
}

kiln_status sc_source_for(const sc_op *op, kiln_backend_kind backend, kiln_array *a, int axis,
                          char **source) {
    if (axis < 0) axis += a->ndim;
    sc_plan p;
    sc_make_plan(a->ctx, op, backend, a, axis, NULL, op->out_dtype, &p);
    if (backend == KILN_BACKEND_CUDA && p.L >= 2 && !p.chain) { /* show every kernel */
        p.tiled = 1;
        p.T = (p.L + p.tile - 1) / p.tile;
    }
    *source = sc_generate(op, &p);
    return *source ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
}
