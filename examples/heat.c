/* heat.c: the 2-d heat equation over any number of ranks, the grid split
 * in row bands with one halo row above and below each band, exchanged with
 * the neighbours by send/recv every step. Each point's update is the same
 * arithmetic whatever the split, so the result is bit-identical to the
 * one-rank run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_examples.h"
#include "example_util.h"

/* u, v: (rows + 2) x ny, row 0 and row rows+1 the halos. Row g of the
 * global grid is band row g - g0 + 1. Edges stay fixed. One launch updates
 * `count` band rows, `first`, `first + step`, ...: all of them (1, 1, rows),
 * the interior, which needs no halo (2, 1, rows - 2), or the two border rows
 * next to the halos (1, rows - 1, 2). */
const char kiln_heat_source[] =
    "extern \"C\" __global__ void heat_step(const double *u, double *v, long long rows, long long ny,\n"
    "                                       long long g0, long long nx, double a, long long first,\n"
    "                                       long long step, long long count) {\n"
    "    long long n = count * ny;\n"
    "    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n;\n"
    "         k += (long long)gridDim.x * blockDim.x) {\n"
    "        long long i = first + (k / ny) * step, j = k % ny, g = g0 + i - 1, at = i * ny + j;\n"
    "        double c = u[at];\n"
    "        if (g == 0 || g == nx - 1 || j == 0 || j == ny - 1)\n"
    "            v[at] = c;\n"
    "        else\n"
    "            v[at] = c + a * ((u[at - ny] + u[at + ny]) + (u[at - 1] + u[at + 1]) - 4.0 * c);\n"
    "    }\n"
    "}\n";

static const double heat_alpha = 0.2; /* a * dt / h^2: stable below 0.25 */

double kiln_example_profile_ms(const char *summary, const char *name) {
    size_t len = strlen(name);
    for (const char *line = summary; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (n > len + 2 && memcmp(line + n - len, name, len) == 0 && line[n - len - 1] == ' ') {
            const char *pct = memchr(line, '%', n);
            double v = 0;
            char unit[4] = "";
            if (pct && sscanf(pct + 1, "%lf%3[a-z]", &v, unit) == 2)
                return strcmp(unit, "ns") == 0   ? v * 1e-6
                       : strcmp(unit, "us") == 0 ? v * 1e-3
                       : strcmp(unit, "s") == 0  ? v * 1e3
                                                 : v;
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

typedef struct heat_band {
    kiln_array *u[2];
    kiln_array *send_up[2], *send_down[2], *halo_up[2], *halo_down[2]; /* row views of u[b] */
} heat_band;

static void band_release(heat_band *b) {
    for (int k = 0; k < 2; k++) {
        kiln_array_release(b->send_up[k]), kiln_array_release(b->send_down[k]);
        kiln_array_release(b->halo_up[k]), kiln_array_release(b->halo_down[k]);
        kiln_array_release(b->u[k]);
    }
}

static double start_value(int64_t g, int64_t j, int64_t nx, int64_t ny) {
    return sin(M_PI * (double)g / (double)(nx - 1)) * sin(M_PI * (double)j / (double)(ny - 1));
}

/* Rows [row0, row0 + rows) with halos; the sine mode, halos included, so
 * even an unexchanged halo would hold the right first values. */
static int band_make(kiln_context *ctx, int64_t nx, int64_t ny, int64_t row0, int64_t rows, heat_band *b) {
    memset(b, 0, sizeof *b);
    int64_t shape[2] = {rows + 2, ny};
    size_t count = (size_t)(rows + 2) * (size_t)ny;
    double *h = example_alloc(count * sizeof *h, "heat band");
    if (!h) return KILN_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < rows + 2; i++) {
        int64_t g = row0 + i - 1;
        for (int64_t j = 0; j < ny; j++) h[i * ny + j] = g < 0 || g >= nx ? 0 : start_value(g, j, nx, ny);
    }
    int s = KILN_OK;
    for (int k = 0; k < 2 && s == KILN_OK; k++) {
        s = kiln_array_from_host(ctx, KILN_FLOAT64, 2, shape, h, count * sizeof *h, &b->u[k]);
        if (s == KILN_OK) s = kiln_array_slice(b->u[k], 0, 0, 1, 1, &b->halo_up[k]);
        if (s == KILN_OK) s = kiln_array_slice(b->u[k], 0, 1, 2, 1, &b->send_up[k]);
        if (s == KILN_OK) s = kiln_array_slice(b->u[k], 0, rows, rows + 1, 1, &b->send_down[k]);
        if (s == KILN_OK) s = kiln_array_slice(b->u[k], 0, rows + 1, rows + 2, 1, &b->halo_down[k]);
    }
    free(h);
    if (s != KILN_OK) band_release(b);
    return s;
}

/* The halos of buffer k of every local rank from its neighbours, each on
 * its rank's halo stream, in one group so that the sends and receives
 * progress together (and, on one process driving several GPUs, so that
 * NCCL sees every rank's part). */
static int exchange(kiln_comm **comms, heat_band *b, kiln_stream **halo, int local, int k) {
    int size = kiln_comm_size(comms[0]);
    EXAMPLE_TRY(kiln_comm_group_start());
    int s = KILN_OK;
    for (int l = 0; l < local && s == KILN_OK; l++) {
        kiln_comm *comm = comms[l];
        int rank = kiln_comm_rank(comm);
        if (rank > 0) {
            if (s == KILN_OK) s = kiln_comm_send(comm, b[l].send_up[k], rank - 1, halo[l]);
            if (s == KILN_OK) s = kiln_comm_recv(comm, b[l].halo_up[k], rank - 1, halo[l]);
        }
        if (rank < size - 1) {
            if (s == KILN_OK) s = kiln_comm_send(comm, b[l].send_down[k], rank + 1, halo[l]);
            if (s == KILN_OK) s = kiln_comm_recv(comm, b[l].halo_down[k], rank + 1, halo[l]);
        }
    }
    int e = kiln_comm_group_end();
    return s != KILN_OK ? s : e;
}

/* The first row and row count of `rank`'s band: the rows spread evenly. */
static void band_of(int64_t nx, int rank, int size, int64_t *row0, int64_t *rows) {
    int64_t base = nx / size, extra = nx % size;
    *rows = base + (rank < extra ? 1 : 0);
    *row0 = rank * base + (rank < extra ? rank : extra);
}

/* The most blocks a launch on ctx needs (32 per multiprocessor, the loop
 * strides over the rest). Asked once per run: the query costs a context
 * switch and a dozen driver calls, more than a launch. */
static int64_t heat_most_blocks(kiln_context *ctx) {
    kiln_device_info info;
    return kiln_device_info_get(ctx, &info) == KILN_OK ? (int64_t)info.multiprocessors * 32 : 1024;
}

/* Band rows first, first + step, ... (count of them) of u[cur] into u[1 - cur]. */
static int heat_rows(int64_t most, kiln_kernel *k, heat_band *b, int cur, int64_t rows, int64_t ny,
                     int64_t row0, int64_t nx, int64_t first, int64_t step, int64_t count,
                     kiln_stream *stream) {
    if (count <= 0) return KILN_OK;
    int64_t blocks = (count * ny + 255) / 256;
    if (blocks > most) blocks = most;
    return kiln_launch(k, KILN_DIM((uint32_t)blocks), KILN_DIM(256), 0, stream,
                       KILN_ARGS(kiln_arr(b->u[cur]), kiln_arr(b->u[1 - cur]), kiln_i64(rows), kiln_i64(ny),
                                 kiln_i64(row0), kiln_i64(nx), kiln_f64(heat_alpha), kiln_i64(first),
                                 kiln_i64(step), kiln_i64(count)));
}

/* The local ranks' bands; the caller releases the first *made of them. */
static int heat_bands(kiln_comm **comms, int local, int64_t nx, int64_t ny, heat_band *b, int *made) {
    int size = kiln_comm_size(comms[0]), s = KILN_OK;
    *made = 0;
    for (int l = 0; l < local && s == KILN_OK; l++) {
        int64_t row0, rows;
        band_of(nx, kiln_comm_rank(comms[l]), size, &row0, &rows);
        s = band_make(kiln_comm_context(comms[l]), nx, ny, row0, rows, &b[l]);
        if (s == KILN_OK) (*made)++;
    }
    return s;
}

/* Each rank's streams and events for the overlapped steps. */
typedef struct heat_flow {
    kiln_stream *compute, *halo;
    kiln_event *border_done, *halo_done; /* ordering: no timing */
    kiln_event **waited;                 /* per step: before and after the wait for the halo (timed) */
    int steps;
} heat_flow;

static void flow_release(heat_flow *f) {
    for (int i = 0; f->waited && i < 2 * f->steps; i++) kiln_event_release(f->waited[i]);
    free(f->waited);
    kiln_event_release(f->border_done);
    kiln_event_release(f->halo_done);
    kiln_stream_release(f->compute);
    kiln_stream_release(f->halo);
    memset(f, 0, sizeof *f);
}

static int flow_make(kiln_context *ctx, int steps, heat_flow *f) {
    memset(f, 0, sizeof *f);
    int s = kiln_stream_create(ctx, &f->compute);
    if (s == KILN_OK) s = kiln_stream_create(ctx, &f->halo);
    if (s == KILN_OK) s = kiln_event_create_ex(ctx, KILN_EVENT_DISABLE_TIMING, &f->border_done);
    if (s == KILN_OK) s = kiln_event_create_ex(ctx, KILN_EVENT_DISABLE_TIMING, &f->halo_done);
    if (s == KILN_OK && steps > 0) {
        f->waited = calloc((size_t)steps * 2, sizeof *f->waited);
        if (!f->waited) s = KILN_ERR_OUT_OF_MEMORY;
        f->steps = steps;
        for (int i = 0; i < 2 * steps && s == KILN_OK; i++) s = kiln_event_create(ctx, &f->waited[i]);
    }
    if (s != KILN_OK) flow_release(f);
    return s;
}

/* `steps` steps of the local ranks' bands; *result = the buffer holding
 * the last step; wait_ms[l] = how long rank l's compute stream stood idle
 * for its halo rows.
 *
 * With more than one rank, a step overlaps the halo exchange with the
 * interior: the halo stream waits for the previous step's border rows, then
 * sends them and receives the neighbours' into the halos, while the compute
 * stream updates the interior rows, which read no halo; the compute stream
 * then waits for the halos and updates the two border rows. Every point
 * gets the same arithmetic as in the one-launch step, so the result is
 * bit-identical to one rank's. */
static int heat_run(kiln_comm **comms, kiln_kernel **k, int local, int64_t nx, int64_t ny, int steps,
                    int measure, heat_band *b, int *result, double *wait_ms) {
    int size = kiln_comm_size(comms[0]), s = KILN_OK;
    int64_t row0[HEAT_MAX_LOCAL], rows[HEAT_MAX_LOCAL], most[HEAT_MAX_LOCAL];
    heat_flow f[HEAT_MAX_LOCAL];
    kiln_stream *halo[HEAT_MAX_LOCAL];
    int flows = 0;
    for (int l = 0; l < local; l++) {
        band_of(nx, kiln_comm_rank(comms[l]), size, &row0[l], &rows[l]);
        most[l] = heat_most_blocks(kiln_comm_context(comms[l]));
        wait_ms[l] = 0;
    }
    for (int l = 0; l < local && s == KILN_OK && size > 1; l++) {
        s = flow_make(kiln_comm_context(comms[l]), measure ? steps : 0, &f[l]);
        if (s == KILN_OK) halo[l] = f[l].halo, flows++;
        /* The first step's border rows come from band_make, already done. */
        if (s == KILN_OK) s = kiln_event_record(f[l].border_done, f[l].compute);
    }
    int cur = 0;
    for (int t = 0; t < steps && s == KILN_OK; t++) {
        if (size == 1) {
            s = heat_rows(most[0], k[0], &b[0], cur, rows[0], ny, row0[0], nx, 1, 1, rows[0], NULL);
            cur = 1 - cur;
            continue;
        }
        for (int l = 0; l < local && s == KILN_OK; l++) {
            s = kiln_stream_wait_event(f[l].halo, f[l].border_done);
            if (s == KILN_OK)
                s = heat_rows(most[l], k[l], &b[l], cur, rows[l], ny, row0[l], nx, 2, 1, rows[l] - 2,
                              f[l].compute);
            if (s == KILN_OK && f[l].waited) s = kiln_event_record(f[l].waited[2 * t], f[l].compute);
        }
        if (s == KILN_OK) s = exchange(comms, b, halo, local, cur);
        for (int l = 0; l < local && s == KILN_OK; l++) {
            s = kiln_event_record(f[l].halo_done, f[l].halo);
            if (s == KILN_OK) s = kiln_stream_wait_event(f[l].compute, f[l].halo_done);
            if (s == KILN_OK && f[l].waited) s = kiln_event_record(f[l].waited[2 * t + 1], f[l].compute);
            if (s == KILN_OK)
                s = heat_rows(most[l], k[l], &b[l], cur, rows[l], ny, row0[l], nx, 1,
                              rows[l] > 1 ? rows[l] - 1 : 1, rows[l] > 1 ? 2 : 1, f[l].compute);
            if (s == KILN_OK) s = kiln_event_record(f[l].border_done, f[l].compute);
        }
        cur = 1 - cur;
    }
    for (int l = 0; l < local && s == KILN_OK; l++) s = kiln_comm_wait(comms[l], flows ? f[l].halo : NULL);
    for (int l = 0; l < flows && s == KILN_OK; l++) s = kiln_stream_synchronize(f[l].compute);
    for (int l = 0; l < flows && s == KILN_OK; l++)
        for (int t = 0; f[l].waited && t < steps && s == KILN_OK; t++) {
            float ms = 0;
            s = kiln_event_elapsed_ms(f[l].waited[2 * t], f[l].waited[2 * t + 1], &ms);
            wait_ms[l] += ms;
        }
    for (int l = 0; l < flows; l++) flow_release(&f[l]);
    *result = cur;
    return s;
}

/* Differences of `mine` (rank r's band with halos) from a one-rank run of
 * the whole grid on the same context. */
static int compare(kiln_comm *comm, kiln_kernel *k, const kiln_heat_result *r, const double *mine,
                   int64_t *differ) {
    kiln_context *ctx = kiln_comm_context(comm);
    kiln_comm *self = NULL;
    heat_band whole;
    int cur = 0, made = 0;
    EXAMPLE_TRY(kiln_comm_init_all(&ctx, 1, &self));
    int s = heat_bands(&self, 1, r->nx, r->ny, &whole, &made);
    double wait_ms = 0;
    if (s == KILN_OK) s = heat_run(&self, &k, 1, r->nx, r->ny, (int)r->steps, 0, &whole, &cur, &wait_ms);
    size_t count = (size_t)(r->nx + 2) * (size_t)r->ny;
    double *ref = s == KILN_OK ? example_alloc(count * sizeof *ref, "heat one-rank grid") : NULL;
    if (s == KILN_OK && !ref) s = KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = kiln_array_to_host(whole.u[cur], ref, count * sizeof *ref);
    if (s == KILN_OK) {
        *differ = 0;
        const double *band = ref + (size_t)(r->row0 + 1) * (size_t)r->ny;
        for (size_t i = 0; i < (size_t)(r->rows * r->ny); i++)
            *differ += memcmp(&band[i], &mine[(size_t)r->ny + i], sizeof(double)) != 0;
    }
    free(ref);
    if (made) band_release(&whole);
    kiln_comm_release(self);
    return s;
}

/* Rank l's error against the closed form, and (check) its differences from
 * one rank. */
static int heat_check(kiln_comm *comm, kiln_kernel *k, heat_band *b, int cur, int check_one_rank,
                      kiln_heat_result *out) {
    size_t count = (size_t)(out->rows + 2) * (size_t)out->ny;
    int64_t nx = out->nx, ny = out->ny;
    double *h = example_alloc(count * sizeof *h, "heat result");
    if (!h) return KILN_ERR_OUT_OF_MEMORY;
    int s = kiln_array_to_host(b->u[cur], h, count * sizeof *h);
    double err = 0;
    out->differ_one_rank = -1;
    if (s == KILN_OK) {
        /* lambda of the lowest sine mode under this stencil: exact for the
         * discrete equation, so only rounding separates it from u. */
        double sx = sin(M_PI / (2.0 * (double)(nx - 1))), sy = sin(M_PI / (2.0 * (double)(ny - 1)));
        double decay = pow(1 - 4 * heat_alpha * (sx * sx + sy * sy), (double)out->steps);
        for (int64_t i = 0; i < out->rows; i++)
            for (int64_t j = 0; j < ny; j++) {
                double e =
                    fabs(h[(size_t)((i + 1) * ny + j)] - decay * start_value(out->row0 + i, j, nx, ny));
                if (e > err || e != e) err = e;
            }
        out->max_err_closed = err;
        if (check_one_rank) s = compare(comm, k, out, h, &out->differ_one_rank);
    }
    free(h);
    return s;
}

/* The worst error and difference count over all ranks, on every rank. */
static int heat_verdict(kiln_comm **comms, int local, kiln_heat_result *out, int check_one_rank) {
    kiln_array *v[HEAT_MAX_LOCAL] = {NULL};
    int64_t shape = 2;
    int s = KILN_OK;
    for (int l = 0; l < local && s == KILN_OK; l++) {
        double both[2] = {out[l].max_err_closed,
                          (double)(out[l].differ_one_rank > 0 ? out[l].differ_one_rank : 0)};
        s = kiln_array_from_host(kiln_comm_context(comms[l]), KILN_FLOAT64, 1, &shape, both, sizeof both,
                                 &v[l]);
    }
    if (s == KILN_OK && local > 1) s = kiln_comm_group_start();
    for (int l = 0; l < local && s == KILN_OK; l++)
        s = kiln_comm_allreduce(comms[l], v[l], v[l], KILN_COMM_MAX, NULL);
    if (s == KILN_OK && local > 1) s = kiln_comm_group_end();
    for (int l = 0; l < local && s == KILN_OK; l++) {
        double both[2];
        s = kiln_array_to_host(v[l], both, sizeof both);
        if (s != KILN_OK) break;
        double tol = 1e-12 * (1.0 + (double)out[l].steps);
        out[l].max_err_closed = both[0];
        out[l].passed = both[0] <= tol && both[1] == 0;
        int n = snprintf(out[l].check, sizeof out[l].check,
                         "max err %.2g vs the exact decay of the sine mode (tol %.1g)", both[0], tol);
        if (check_one_rank && n > 0 && (size_t)n < sizeof out[l].check)
            snprintf(out[l].check + n, sizeof out[l].check - (size_t)n, "; %s the 1-rank run",
                     both[1] == 0 ? "bit-identical to" : "DIFFERS from");
    }
    for (int l = 0; l < local; l++) kiln_array_release(v[l]);
    return s;
}

/* One halo exchange of buffer 0 on the default streams, waited for: wall ms. */
static int heat_connect(kiln_comm **comms, heat_band *b, int local, double *ms) {
    kiln_stream *streams[HEAT_MAX_LOCAL] = {NULL};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int s = exchange(comms, b, streams, local, 0);
    for (int l = 0; l < local && s == KILN_OK; l++) s = kiln_comm_wait(comms[l], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    return s;
}

/* measure: the time split (profiler and timed events); else the wall time
 * alone, with nothing added to the steps. */
static int heat_local(kiln_comm **comms, int local, int64_t nx, int64_t ny, int steps, int check_one_rank,
                      int measure, kiln_heat_result *out) {
    int size = kiln_comm_size(comms[0]);
    if (local < 1 || local > HEAT_MAX_LOCAL || nx < 3 || ny < 3 || nx < size || steps < 0) {
        fprintf(
            stderr,
            "heat: grid %lld x %lld, %d steps on %d ranks (%d here): need at least 3 x 3, a row per rank, "
            "1..%d ranks in one process\n",
            (long long)nx, (long long)ny, steps, size, local, HEAT_MAX_LOCAL);
        return KILN_ERR_INVALID_ARGUMENT;
    }
    kiln_kernel *k[HEAT_MAX_LOCAL] = {NULL};
    int profiling[HEAT_MAX_LOCAL] = {0};
    int s = KILN_OK;
    for (int l = 0; l < local && s == KILN_OK; l++) {
        kiln_context *ctx = kiln_comm_context(comms[l]);
        memset(&out[l], 0, sizeof out[l]);
        out[l].nx = nx, out[l].ny = ny, out[l].steps = steps;
        band_of(nx, kiln_comm_rank(comms[l]), size, &out[l].row0, &out[l].rows);
        s = kiln_kernel_from_source(ctx, kiln_heat_source, "heat_step", NULL, &k[l]);
        if (s == KILN_OK) s = kiln_jit_wait(ctx); /* time the -O3 build (CPU) */
        /* The split of the time comes from kiln's profiler: the kernels'
         * row and the halo groups' "sendrecv" row of each rank's summary. */
        profiling[l] = kiln_profiler_enabled(ctx);
        if (s == KILN_OK && !profiling[l] && measure) s = kiln_profiler_start(ctx);
    }
    heat_band b[HEAT_MAX_LOCAL];
    int cur = 0, made = 0;
    if (s == KILN_OK) s = heat_bands(comms, local, nx, ny, b, &made);
    for (int l = 0; l < local && s == KILN_OK; l++) s = kiln_synchronize(kiln_comm_context(comms[l]));
    /* NCCL connects two ranks at their first exchange (tens to hundreds of
     * ms); one exchange before the clock starts keeps that out of the
     * steps' time, reported on its own. Every halo already holds its first
     * value, so exchanging them again changes nothing. */
    double connect_ms = 0;
    if (s == KILN_OK && size > 1) s = heat_connect(comms, b, local, &connect_ms);
    for (int l = 0; l < local && s == KILN_OK && measure; l++)
        s = kiln_profiler_reset(kiln_comm_context(comms[l]));
    struct timespec t0, t1;
    double wait_ms[HEAT_MAX_LOCAL] = {0};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (s == KILN_OK) s = heat_run(comms, k, local, nx, ny, steps, measure, b, &cur, wait_ms);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int l = 0; l < local && s == KILN_OK; l++) {
        kiln_context *ctx = kiln_comm_context(comms[l]);
        out[l].total_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
        out[l].connect_ms = connect_ms;
        if (!measure) continue;
        char *summary = NULL, row[64];
        s = kiln_profiler_summary(ctx, &summary);
        if (s != KILN_OK) break;
        out[l].compute_ms = kiln_example_profile_ms(summary, "heat_step");
        snprintf(row, sizeof row, "[%s sendrecv]", kiln_comm_transport(comms[l]));
        out[l].halo_ms = kiln_example_profile_ms(summary, row);
        out[l].halo_wait_ms = wait_ms[l];
        kiln_free(summary);
    }
    for (int l = 0; l < local; l++)
        if (k[l] && !profiling[l] && measure) (void)kiln_profiler_stop(kiln_comm_context(comms[l]));
    for (int l = 0; l < local && s == KILN_OK; l++)
        s = heat_check(comms[l], k[l], &b[l], cur, check_one_rank, &out[l]);
    for (int l = 0; l < made; l++) band_release(&b[l]);
    for (int l = 0; l < local; l++) kiln_kernel_release(k[l]);
    if (s != KILN_OK) return s;
    return heat_verdict(comms, local, out, check_one_rank);
}

int kiln_example_heat_local(kiln_comm **comms, int local, int64_t nx, int64_t ny, int steps,
                            int check_one_rank, kiln_heat_result *out) {
    return heat_local(comms, local, nx, ny, steps, check_one_rank, 1, out);
}

int kiln_example_heat_unmeasured(kiln_comm **comms, int local, int64_t nx, int64_t ny, int steps,
                                 kiln_heat_result *out) {
    return heat_local(comms, local, nx, ny, steps, 0, 0, out);
}

int kiln_example_heat(kiln_comm *comm, int64_t nx, int64_t ny, int steps, int check_one_rank,
                      kiln_heat_result *out) {
    return kiln_example_heat_local(&comm, 1, nx, ny, steps, check_one_rank, out);
}
