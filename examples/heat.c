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
 * global grid is band row g - g0 + 1. Edges stay fixed. */
const char kiln_heat_source[] =
    "extern \"C\" __global__ void heat_step(const double *u, double *v, long long rows, long long ny,\n"
    "                                       long long g0, long long nx, double a) {\n"
    "    long long n = rows * ny;\n"
    "    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n;\n"
    "         k += (long long)gridDim.x * blockDim.x) {\n"
    "        long long i = k / ny + 1, j = k % ny, g = g0 + i - 1, at = i * ny + j;\n"
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

/* The halos of buffer k from the neighbours, in one group so that the
 * sends and receives progress together. */
static int exchange(kiln_comm *comm, heat_band *b, int k) {
    int rank = kiln_comm_rank(comm), size = kiln_comm_size(comm);
    if (size == 1) return KILN_OK;
    EXAMPLE_TRY(kiln_comm_group_start());
    int s = KILN_OK;
    if (rank > 0) {
        if (s == KILN_OK) s = kiln_send(comm, b->send_up[k], rank - 1, NULL);
        if (s == KILN_OK) s = kiln_recv(comm, b->halo_up[k], rank - 1, NULL);
    }
    if (rank < size - 1) {
        if (s == KILN_OK) s = kiln_send(comm, b->send_down[k], rank + 1, NULL);
        if (s == KILN_OK) s = kiln_recv(comm, b->halo_down[k], rank + 1, NULL);
    }
    int e = kiln_comm_group_end();
    return s != KILN_OK ? s : e;
}

/* Runs `steps` steps of the band of `comm`'s rank; *result = buffer index
 * holding the last step. */
static int heat_run(kiln_comm *comm, kiln_kernel *k, int64_t nx, int64_t ny, int steps, int64_t row0,
                    int64_t rows, heat_band *b, int *result) {
    kiln_context *ctx = kiln_comm_context(comm);
    EXAMPLE_TRY(band_make(ctx, nx, ny, row0, rows, b));
    kiln_device_info info;
    int s = kiln_device_info_get(ctx, &info);
    int64_t n = rows * ny, blocks = (n + 255) / 256, most = (int64_t)info.multiprocessors * 32;
    if (blocks > most) blocks = most;
    if (blocks < 1) blocks = 1;
    int cur = 0;
    for (int t = 0; t < steps && s == KILN_OK; t++) {
        s = exchange(comm, b, cur);
        if (s == KILN_OK)
            s = kiln_launch(k, KILN_DIM((uint32_t)blocks), KILN_DIM(256), 0, NULL,
                            KILN_ARGS(kiln_arr(b->u[cur]), kiln_arr(b->u[1 - cur]), kiln_i64(rows),
                                      kiln_i64(ny), kiln_i64(row0), kiln_i64(nx), kiln_f64(heat_alpha)));
        cur = 1 - cur;
    }
    if (s == KILN_OK) s = kiln_comm_wait(comm, NULL);
    *result = cur;
    return s;
}

/* The first row and row count of `rank`'s band: the rows spread evenly. */
static void band_of(int64_t nx, int rank, int size, int64_t *row0, int64_t *rows) {
    int64_t base = nx / size, extra = nx % size;
    *rows = base + (rank < extra ? 1 : 0);
    *row0 = rank * base + (rank < extra ? rank : extra);
}

static int compare(kiln_comm *comm, kiln_kernel *k, const kiln_heat_result *r, const double *mine,
                   int64_t *differ) {
    kiln_context *ctx = kiln_comm_context(comm);
    kiln_comm *self = NULL;
    heat_band whole;
    int cur = 0;
    EXAMPLE_TRY(kiln_comm_init_all(&ctx, 1, &self));
    int s = heat_run(self, k, r->nx, r->ny, (int)r->steps, 0, r->nx, &whole, &cur);
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
    if (s == KILN_OK || whole.u[0]) band_release(&whole);
    kiln_comm_release(self);
    return s;
}

int kiln_example_heat(kiln_comm *comm, int64_t nx, int64_t ny, int steps, int check_one_rank,
                      kiln_heat_result *out) {
    memset(out, 0, sizeof *out);
    int rank = kiln_comm_rank(comm), size = kiln_comm_size(comm);
    if (nx < 3 || ny < 3 || nx < size || steps < 0) {
        fprintf(stderr, "heat: grid %lld x %lld, %d steps on %d ranks: need at least 3 x 3, a row per rank\n",
                (long long)nx, (long long)ny, steps, size);
        return KILN_ERR_INVALID_ARGUMENT;
    }
    kiln_context *ctx = kiln_comm_context(comm);
    out->nx = nx, out->ny = ny, out->steps = steps;
    band_of(nx, rank, size, &out->row0, &out->rows);
    kiln_kernel *k = NULL;
    EXAMPLE_TRY(kiln_kernel_from_source(ctx, kiln_heat_source, "heat_step", NULL, &k));

    /* The split of the time comes from kiln's profiler: the kernels' row and
     * the halo groups' "sendrecv" row of this rank's summary. */
    int profiling = kiln_profiler_enabled(ctx);
    if (!profiling) EXAMPLE_TRY(kiln_profiler_start(ctx));
    EXAMPLE_TRY(kiln_profiler_reset(ctx));
    heat_band b;
    int cur = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int s = heat_run(comm, k, nx, ny, steps, out->row0, out->rows, &b, &cur);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->total_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    char *summary = NULL;
    if (s == KILN_OK) s = kiln_profiler_summary(ctx, &summary);
    if (s == KILN_OK) {
        char row[64];
        out->compute_ms = kiln_example_profile_ms(summary, "heat_step");
        snprintf(row, sizeof row, "[%s sendrecv]", kiln_comm_transport(comm));
        out->halo_ms = kiln_example_profile_ms(summary, row);
    }
    kiln_free(summary);
    if (!profiling) (void)kiln_profiler_stop(ctx);

    size_t count = (size_t)(out->rows + 2) * (size_t)ny;
    double *h = s == KILN_OK ? example_alloc(count * sizeof *h, "heat result") : NULL;
    if (s == KILN_OK && !h) s = KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = kiln_array_to_host(b.u[cur], h, count * sizeof *h);
    if (s == KILN_OK || b.u[0]) band_release(&b);
    double err = 0;
    out->differ_one_rank = -1;
    if (s == KILN_OK) {
        /* lambda of the lowest sine mode under this stencil: exact for the
         * discrete equation, so only rounding separates it from u. */
        double sx = sin(M_PI / (2.0 * (double)(nx - 1))), sy = sin(M_PI / (2.0 * (double)(ny - 1)));
        double decay = pow(1 - 4 * heat_alpha * (sx * sx + sy * sy), steps);
        for (int64_t i = 0; i < out->rows; i++)
            for (int64_t j = 0; j < ny; j++) {
                double e =
                    fabs(h[(size_t)((i + 1) * ny + j)] - decay * start_value(out->row0 + i, j, nx, ny));
                if (e > err || e != e) err = e;
            }
        if (check_one_rank) s = compare(comm, k, out, h, &out->differ_one_rank);
    }
    free(h);
    kiln_kernel_release(k);
    if (s != KILN_OK) return s;

    /* Every rank's worst error and differences, on every rank. */
    int64_t shape = 2;
    double both[2] = {err, (double)(out->differ_one_rank > 0 ? out->differ_one_rank : 0)};
    kiln_array *v = NULL;
    EXAMPLE_TRY(kiln_array_from_host(ctx, KILN_FLOAT64, 1, &shape, both, sizeof both, &v));
    s = kiln_allreduce(comm, v, v, KILN_MAX, NULL);
    if (s == KILN_OK) s = kiln_array_to_host(v, both, sizeof both);
    kiln_array_release(v);
    if (s != KILN_OK) return s;
    out->max_err_closed = both[0];
    double tol = 1e-12 * (1.0 + (double)steps);
    out->passed = both[0] <= tol && both[1] == 0;
    int n = snprintf(out->check, sizeof out->check,
                     "max err %.2g vs the exact decay of the sine mode (tol %.1g)", both[0], tol);
    if (check_one_rank && n > 0 && (size_t)n < sizeof out->check)
        snprintf(out->check + n, sizeof out->check - (size_t)n, "; %s the 1-rank run",
                 both[1] == 0 ? "bit-identical to" : "DIFFERS from");
    return KILN_OK;
}
