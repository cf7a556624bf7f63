/* prof_summary.c: the summary printed at exit or on request, laid out like
 * nvprof's "Profiling result" (Type, Time(%), Time, Calls, Avg, Min, Max,
 * Name), followed by copies by direction with achieved bandwidth and a line
 * for the JIT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof/prof_cupti.h"
#include "prof/prof_internal.h"

void kiln_prof_format_time(double ms, char *buf, size_t cap) {
    static const struct {
        double scale;
        const char *unit;
    } units[] = {{1e6, "ns"}, {1e3, "us"}, {1.0, "ms"}, {1e-3, "s"}};
    int u = 0;
    if (ms >= 1e3)
        u = 3;
    else if (ms >= 1.0)
        u = 2;
    else if (ms >= 1e-3)
        u = 1;
    double v = ms * units[u].scale;
    if (u == 0) {
        snprintf(buf, cap, "%.0f%s", v, units[u].unit);
        return;
    }
    /* Five significant digits, as nvprof: 2.8544ms, 787.77us, 11.418ms. */
    int decimals = v >= 100 ? 2 : v >= 10 ? 3 : 4;
    snprintf(buf, cap, "%.*f%s", decimals, v, units[u].unit);
}

static void format_bytes(double bytes, char *buf, size_t cap) {
    static const char *units[] = {"B", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%.0f%s", bytes, units[u]);
    else
        snprintf(buf, cap, "%.3f%s", bytes, units[u]);
}

typedef struct summary_row {
    const char *name;
    const prof_stat *stat;
} summary_row;

static const char *const copy_row_names[4] = {"[memcpy HtoD]", "[memcpy DtoH]", "[memcpy DtoD]",
                                              "[memcpy HtoH]"};

static int by_total_time_desc(const void *a, const void *b) {
    const summary_row *x = a, *y = b;
    if (x->stat->total_ms != y->stat->total_ms) return x->stat->total_ms < y->stat->total_ms ? 1 : -1;
    return strcmp(x->name, y->name);
}

static void print_row(FILE *f, const char *type, double percent, const prof_stat *s, const char *name) {
    char total[32], avg[32], lo[32], hi[32];
    kiln_prof_format_time(s->total_ms, total, sizeof total);
    kiln_prof_format_time(s->calls ? s->total_ms / (double)s->calls : 0, avg, sizeof avg);
    kiln_prof_format_time(s->min_ms, lo, sizeof lo);
    kiln_prof_format_time(s->max_ms, hi, sizeof hi);
    fprintf(f, "%16s %7.2f%% %9s %9lld %9s %9s %9s  %s", type, percent, total, (long long)s->calls, avg, lo,
            hi, name);
    if (s->flops > 0 && s->total_ms > 0) fprintf(f, "  (%.4g GFLOP/s)", s->flops / (s->total_ms * 1e6));
    fputc('\n', f);
}

/* Kernels and copies, most time first, as nvprof's "GPU activities". */
static void print_activities(FILE *f, kiln_prof *p) {
    size_t cap = p->kernel_cap + 4 + PROF_COLLECTIVE_KINDS, n = 0;
    char coll_names[PROF_COLLECTIVE_KINDS][48];
    summary_row *rows = calloc(cap, sizeof *rows);
    prof_stat copy_by_dir[4];
    memset(copy_by_dir, 0, sizeof copy_by_dir);
    if (!rows) {
        fprintf(f, "(out of memory listing the activities)\n");
        return;
    }
    for (uint32_t id = 0; id < p->kernel_cap; id++)
        if (p->kernels[id].calls) {
            rows[n].name = kiln_prof_string(p, id);
            rows[n++].stat = &p->kernels[id];
        }
    for (int k = 0; k < 4; k++) {
        prof_stat *d = &copy_by_dir[k];
        for (int pin = 0; pin < 2; pin++) {
            const prof_stat *s = &p->copies[k][pin];
            if (!s->calls) continue;
            if (!d->calls || s->min_ms < d->min_ms) d->min_ms = s->min_ms;
            if (!d->calls || s->max_ms > d->max_ms) d->max_ms = s->max_ms;
            d->calls += s->calls;
            d->total_ms += s->total_ms;
            d->bytes += s->bytes;
        }
        if (!d->calls) continue;
        rows[n].name = copy_row_names[k];
        rows[n++].stat = d;
    }
    for (int k = 0; k < PROF_COLLECTIVE_KINDS; k++) {
        if (!p->colls[k].calls) continue;
        snprintf(coll_names[k], sizeof coll_names[k], "[%s %s]", p->transport[0] ? p->transport : "comm",
                 kiln_prof_string(p, p->coll_name[k]));
        rows[n].name = coll_names[k];
        rows[n++].stat = &p->colls[k];
    }
    qsort(rows, n, sizeof *rows, by_total_time_desc);
    double total = 0;
    for (size_t i = 0; i < n; i++) total += rows[i].stat->total_ms;
    const char *type = p->timer != PROF_TIMER_HOST ? "GPU activities:" : "CPU activities:";
    if (n == 0) fprintf(f, "%16s  (no kernel launches or copies recorded)\n", type);
    for (size_t i = 0; i < n; i++)
        print_row(f, i == 0 ? type : "", total > 0 ? 100.0 * rows[i].stat->total_ms / total : 0, rows[i].stat,
                  rows[i].name);
    if (p->allocs.calls) print_row(f, "API calls:", 100.0, &p->allocs, "[alloc]");
    free(rows);
}

static void print_copies(FILE *f, const kiln_prof *p) {
    int any = 0;
    for (int k = 0; k < 4; k++)
        for (int pin = 0; pin < 2; pin++) {
            const prof_stat *s = &p->copies[k][pin];
            if (!s->calls) continue;
            if (!any++)
                fprintf(f, "==kiln== Copies by direction:\n%16s %9s %9s %14s %10s %10s %10s\n", "Direction",
                        "Memory", "Calls", "Bytes", "Avg size", "Time", "GB/s");
            char avg[32], time[32], rate[32];
            format_bytes((double)s->bytes / (double)s->calls, avg, sizeof avg);
            kiln_prof_format_time(s->total_ms, time, sizeof time);
            if (s->total_ms > 0)
                snprintf(rate, sizeof rate, "%.2f", (double)s->bytes / s->total_ms / 1e6);
            else
                snprintf(rate, sizeof rate, "-");
            /* A copy within host memory has no pageable/pinned distinction. */
            const char *memory = k == KILN_COPY_DEVICE_TO_DEVICE || k == KILN_COPY_HOST_TO_HOST ? "-"
                                 : pin                                                          ? "pinned"
                                                                                                : "pageable";
            fprintf(f, "%16s %9s %9lld %14llu %10s %10s %10s\n", kiln_prof_copy_kind_name(k), memory,
                    (long long)s->calls, (unsigned long long)s->bytes, avg, time, rate);
        }
}

/* nccl-tests' figures: algorithm bandwidth = bytes / time, bus bandwidth =
 * algbw times the collective's factor (2(n-1)/n all-reduce, (n-1)/n
 * all-gather and reduce-scatter, 1 broadcast, reduce, send/recv). */
static void print_collectives(FILE *f, const kiln_prof *p) {
    int any = 0;
    for (int k = 0; k < PROF_COLLECTIVE_KINDS; k++) {
        const prof_stat *s = &p->colls[k];
        if (!s->calls) continue;
        if (!any++)
            fprintf(f,
                    "==kiln== Collectives of rank %d of %d (%s):\n%16s %9s %14s %10s %10s %10s %11s %11s\n",
                    p->rank, p->nranks, p->transport, "Collective", "Calls", "Bytes", "Avg size", "Time",
                    "Avg", "algbw GB/s", "busbw GB/s");
        char avg_size[32], time[32], avg[32], alg[32], bus[32];
        format_bytes((double)s->bytes / (double)s->calls, avg_size, sizeof avg_size);
        kiln_prof_format_time(s->total_ms, time, sizeof time);
        kiln_prof_format_time(s->total_ms / (double)s->calls, avg, sizeof avg);
        if (s->total_ms > 0) {
            double algbw = (double)s->bytes / s->total_ms / 1e6;
            snprintf(alg, sizeof alg, "%.3f", algbw);
            snprintf(bus, sizeof bus, "%.3f", algbw * p->coll_factor[k]);
        } else {
            snprintf(alg, sizeof alg, "-");
            snprintf(bus, sizeof bus, "-");
        }
        fprintf(f, "%16s %9lld %14llu %10s %10s %10s %11s %11s\n", kiln_prof_string(p, p->coll_name[k]),
                (long long)s->calls, (unsigned long long)s->bytes, avg_size, time, avg, alg, bus);
    }
}

static void print_allocs_and_jit(FILE *f, const kiln_prof *p) {
    char bytes[32], time[32], compile[32], load[32];
    if (p->allocs.calls) {
        format_bytes((double)p->allocs.bytes, bytes, sizeof bytes);
        kiln_prof_format_time(p->allocs.total_ms, time, sizeof time);
        fprintf(f, "==kiln== Allocations: %lld, %llu bytes (%s), %s host time\n", (long long)p->allocs.calls,
                (unsigned long long)p->allocs.bytes, bytes, time);
    }
    long long compiled = (long long)p->compiles.calls, hits = (long long)p->cache_hits.calls;
    kiln_prof_format_time(p->compiles.total_ms + p->cache_hits.total_ms, compile, sizeof compile);
    kiln_prof_format_time(p->load_ms, load, sizeof load);
    fprintf(f, "==kiln== JIT: %lld module%s: %lld compiled, %lld cache hit%s; compile %s, load %s\n",
            compiled + hits, compiled + hits == 1 ? "" : "s", compiled, hits, hits == 1 ? "" : "s", compile,
            load);
    if (p->cache_rejects)
        fprintf(f, "==kiln== JIT: %lld cache entr%s refused and rebuilt (last: %s)\n",
                (long long)p->cache_rejects, p->cache_rejects == 1 ? "y" : "ies", p->last_reject);
}

/* Which clock the times come from, and why that one. */
static void print_timer(FILE *f, const kiln_prof *p) {
    switch (p->timer) {
    case PROF_TIMER_CUPTI:
        fprintf(f, "==kiln== Timer: cupti (device start/end from CUPTI activity records, %s)\n",
                p->cupti_library);
        break;
    case PROF_TIMER_EVENTS:
        fprintf(f, "==kiln== Timer: events (device time between events recorded around each operation%s%s)\n",
                p->timer_note[0] ? "; " : "", p->timer_note);
        break;
    case PROF_TIMER_HOST:
        fprintf(f, "==kiln== Timer: host (wall time of each call; %s)\n",
                kiln_backend_has(p->ctx->ops, KILN_BACKEND_CAP_HOST_EXECUTION)
                    ? "the CPU backend runs the work inside the call"
                    : "neither CUPTI nor device events could be used");
        break;
    }
}

/* Which streams kiln looked for CUPTI's records on, and which it saw them
 * on: when the two differ, the stream ids are to blame for lost times. */
static void print_cupti_streams(FILE *f, kiln_prof *p) {
    uint32_t seen[16];
    kiln_prof_cupti_lock();
    int n = kiln_prof_cupti_streams_seen_locked(p->cupti_context_id, seen, 16);
    kiln_prof_cupti_unlock();
    fprintf(f, "==kiln== Note: kiln's streams have CUPTI ids");
    for (uint32_t s = 0; s < p->stream_count && s < 16; s++)
        if (p->dev_streams[s].known)
            fprintf(f, " %d", p->dev_streams[s].id == PROF_NO_ID ? -1 : (int)p->dev_streams[s].id);
    fprintf(f, "; CUPTI records of context %d came on streams",
            p->cupti_context_id == PROF_NO_ID ? -1 : (int)p->cupti_context_id);
    for (int i = 0; i < n; i++) fprintf(f, " %u", seen[i]);
    fprintf(f, "\n");
}

char *kiln_prof_summary_text(kiln_prof *p) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return NULL;
    const kiln_context *ctx = p->ctx;
    fprintf(f, "==kiln== Profiling result (pid %d): backend %s, device \"%s\"", (int)getpid(), ctx->ops->name,
            ctx->info.name);
    if (p->nranks > 0) fprintf(f, ", rank %d of %d (%s)", p->rank, p->nranks, p->transport);
    fputc('\n', f);
    print_timer(f, p);
    fprintf(f, "%16s %8s %9s %9s %9s %9s %9s  %s\n", "Type", "Time(%)", "Time", "Calls", "Avg", "Min", "Max",
            "Name");
    print_activities(f, p);
    print_copies(f, p);
    print_collectives(f, p);
    print_allocs_and_jit(f, p);
    if (p->events_failed) fprintf(f, "==kiln== Note: device events ran out; later times are host times\n");
    if (p->timer == PROF_TIMER_CUPTI) {
        kiln_prof_cupti_lock();
        unsigned long long dropped = (unsigned long long)kiln_prof_cupti_dropped_locked();
        kiln_prof_cupti_unlock();
        if (p->cupti_lost || dropped)
            fprintf(
                f,
                "==kiln== Note: CUPTI gave no times for %llu operation%s (host times used, none for kernels "
                "without a trace); it dropped %llu "
                "records in this process\n",
                (unsigned long long)p->cupti_lost, p->cupti_lost == 1 ? "" : "s", dropped);
        if (p->cupti_lost) print_cupti_streams(f, p);
    }
    if (p->dropped_records)
        fprintf(
            f,
            "==kiln== Note: the trace keeps the first %zu records; %llu later ones are counted here only\n",
            p->kept_records, (unsigned long long)p->dropped_records);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
