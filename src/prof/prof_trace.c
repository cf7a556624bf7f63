/* prof_trace.c: the Chrome trace-event file (KILN_TRACE, kiln_profiler_write_trace).
 *
 * One JSON object {"traceEvents": [...]} of complete ("ph":"X") events with
 * ts/dur in microseconds from the profiler's start. pid is the process; each
 * host thread that called kiln has its own track (tid = OS thread id) holding
 * the API calls, and each stream has its own track (tid = PROF_STREAM_TID + n)
 * holding the work as it ran there. Perfetto and chrome://tracing open it.
 * Written to a temporary file and renamed, so a reader never sees half a
 * file (see kiln_prof_trace_write for what is not renamed over). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "prof/prof_internal.h"

/* Above any OS thread id (pid_max is at most 2^22). */
#define PROF_STREAM_TID 1000000000u
/* The rank's track: its collectives, as they ran on their streams. */
#define PROF_RANK_TID 2000000000u

/* Writes s as a JSON string: escapes quotes, backslashes and control
 * characters, and replaces bytes that are not UTF-8 (JSON must be). */
static void json_string(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        unsigned char c = *p;
        int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        int ok = len > 0 && !(len == 2 && c < 0xC2);
        for (int i = 1; ok && i < len; i++) ok = (p[i] & 0xC0) == 0x80;
        if (!ok) {
            fputs("\\ufffd", f);
            p++;
            continue;
        }
        if (len > 1) {
            fwrite(p, 1, (size_t)len, f);
            p += len;
            continue;
        }
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
        p++;
    }
    fputc('"', f);
}

static double finite_or_zero(double v) { return isfinite(v) ? v : 0.0; }

typedef struct trace_writer {
    FILE *f;
    const kiln_prof *p;
    int pid;
    int first;
} trace_writer;

static void begin_event(trace_writer *w, const char *name, const char *cat, double begin_ms, double dur_ms,
                        uint32_t tid) {
    fputs(w->first ? "\n" : ",\n", w->f);
    w->first = 0;
    double ts_us = finite_or_zero((begin_ms - w->p->t0_ms) * 1e3);
    double dur_us = finite_or_zero(dur_ms * 1e3);
    fputs("{\"name\":", w->f);
    json_string(w->f, name);
    fprintf(w->f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{",
            cat, ts_us, dur_us < 0 ? 0 : dur_us, w->pid, tid);
}

static void metadata(trace_writer *w, const char *what, uint32_t tid, const char *name, int sort_index) {
    fputs(w->first ? "\n" : ",\n", w->f);
    w->first = 0;
    fprintf(w->f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":", what, w->pid,
            tid);
    json_string(w->f, name);
    fputs("}}", w->f);
    if (sort_index >= 0)
        fprintf(w->f,
                ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"sort_"
                "index\":%d}}",
                w->pid, tid, sort_index);
}

static void write_record(trace_writer *w, const prof_record *r) {
    const kiln_prof *p = w->p;
    FILE *f = w->f;
    char name[96];
    const char *kind = kiln_prof_copy_kind_name(r->copy_kind);
    double host_ms = r->host_end_ms - r->host_begin_ms;
    uint32_t stream_tid = PROF_STREAM_TID + r->stream;
    switch ((prof_type)r->type) {
    case PROF_KERNEL:
        begin_event(w, "kiln_launch", "api", r->host_begin_ms, host_ms, r->host_tid);
        fputs("\"kernel\":", f);
        json_string(f, kiln_prof_string(p, r->name_id));
        fputs("}}", f);
        begin_event(w, kiln_prof_string(p, r->name_id), "kernel", r->dev_begin_ms, r->dev_ms, stream_tid);
        /* A library call has no dims of its own (its flops share their room). */
        const uint32_t none[3] = {0, 0, 0}, *grid = r->library ? none : r->grid,
                       *block = r->library ? none : r->block;
        fprintf(f, "\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared_bytes\":%llu,\"args\":", grid[0],
                grid[1], grid[2], block[0], block[1], block[2], (unsigned long long)r->shared_bytes);
        json_string(f, r->desc_id == PROF_NO_ID ? "" : kiln_prof_string(p, r->desc_id));
        fputs("}}", f);
        break;
    case PROF_COPY: {
        const char *memory =
            r->copy_kind == KILN_COPY_HOST_TO_DEVICE || r->copy_kind == KILN_COPY_DEVICE_TO_HOST
                ? (r->pinned ? "pinned" : "pageable")
                : "-";
        snprintf(name, sizeof name, "kiln copy %s", kind);
        begin_event(w, name, "api", r->host_begin_ms, host_ms, r->host_tid);
        fprintf(f, "\"bytes\":%llu}}", (unsigned long long)r->bytes);
        snprintf(name, sizeof name, "[memcpy %s]", kind);
        begin_event(w, name, "copy", r->dev_begin_ms, r->dev_ms, stream_tid);
        fprintf(f, "\"bytes\":%llu,\"direction\":\"%s\",\"memory\":\"%s\",\"GB/s\":%.3f}}",
                (unsigned long long)r->bytes, kind, memory,
                r->dev_ms > 0 ? finite_or_zero((double)r->bytes / r->dev_ms / 1e6) : 0.0);
        break;
    }
    case PROF_COLLECTIVE: {
        const char *coll = kiln_prof_string(p, r->name_id);
        snprintf(name, sizeof name, "kiln %s", coll);
        begin_event(w, name, "api", r->host_begin_ms, host_ms, r->host_tid);
        fprintf(f, "\"bytes\":%llu}}", (unsigned long long)r->bytes);
        snprintf(name, sizeof name, "[%s %s]", p->transport[0] ? p->transport : "comm", coll);
        begin_event(w, name, "collective", r->dev_begin_ms, r->dev_ms, PROF_RANK_TID + (uint32_t)p->rank);
        double algbw = r->dev_ms > 0 ? finite_or_zero((double)r->bytes / r->dev_ms / 1e6) : 0.0;
        fprintf(
            f,
            "\"bytes\":%llu,\"rank\":%d,\"ranks\":%d,\"stream\":%u,\"algbw GB/s\":%.3f,\"busbw GB/s\":%.3f}}",
            (unsigned long long)r->bytes, p->rank, p->nranks, r->stream, algbw,
            finite_or_zero(algbw * r->bus_factor));
        break;
    }
    case PROF_ALLOC:
        begin_event(w, "alloc", "alloc", r->host_begin_ms, host_ms, r->host_tid);
        fprintf(f, "\"bytes\":%llu}}", (unsigned long long)r->bytes);
        break;
    case PROF_COMPILE:
        begin_event(w, r->cache_hit ? "jit (cache hit)" : "jit (compile)", "jit", r->host_begin_ms, host_ms,
                    r->host_tid);
        fputs("\"module\":", f);
        json_string(f, kiln_prof_string(p, r->name_id));
        fprintf(f, ",\"cache\":\"%s\",\"compile_ms\":%.3f,\"load_ms\":%.3f}}", r->cache_hit ? "hit" : "miss",
                finite_or_zero(r->compile_ms), finite_or_zero(r->load_ms));
        break;
    }
}

/* Calls fn on every resolved record in order: kept chunks, then the resolved
 * part of the open ones. */
#define FOR_EACH_RECORD(p, r, body)                                                                          \
    do {                                                                                                     \
        const prof_chunk_list *lists_[2] = {&(p)->kept, &(p)->open};                                         \
        for (int l_ = 0; l_ < 2; l_++)                                                                       \
            for (const prof_chunk *c_ = lists_[l_]->head; c_; c_ = c_->next)                                 \
                for (uint32_t i_ = 0; i_ < c_->resolved; i_++) {                                             \
                    const prof_record *r = &c_->rec[i_];                                                     \
                    if (r->host_begin_ms < (p)->reset_ms) continue;                                          \
                    body;                                                                                    \
                }                                                                                            \
    } while (0)

/* The host threads that appear, each once, in order of first appearance. */
static uint32_t *host_threads(const kiln_prof *p, size_t *count) {
    size_t n = 0, cap = 8;
    uint32_t *tids = malloc(cap * sizeof *tids);
    if (!tids) return NULL;
    FOR_EACH_RECORD(p, r, {
        size_t k = 0;
        while (k < n && tids[k] != r->host_tid) k++;
        if (k == n) {
            if (n == cap) {
                uint32_t *m = realloc(tids, 2 * cap * sizeof *m);
                if (!m) break;
                tids = m;
                cap *= 2;
            }
            tids[n++] = r->host_tid;
        }
    });
    *count = n;
    return tids;
}

static void write_trace(trace_writer *w) {
    const kiln_prof *p = w->p;
    const kiln_context *ctx = p->ctx;
    char label[400];
    fputs("{\"traceEvents\":[", w->f);
    if (p->nranks > 0)
        snprintf(label, sizeof label, "kiln rank %d of %d (%s: %s)", p->rank, p->nranks, ctx->ops->name,
                 ctx->info.name);
    else
        snprintf(label, sizeof label, "kiln (%s: %s)", ctx->ops->name, ctx->info.name);
    metadata(w, "process_name", 0, label, -1);
    if (p->nranks > 0) {
        snprintf(label, sizeof label, "rank %d of %d: collectives (%s)", p->rank, p->nranks, p->transport);
        metadata(w, "thread_name", PROF_RANK_TID + (uint32_t)p->rank, label, 999);
    }
    size_t n_threads = 0;
    uint32_t *tids = host_threads(p, &n_threads);
    for (size_t i = 0; tids && i < n_threads; i++) {
        snprintf(label, sizeof label, "host thread %u", tids[i]);
        metadata(w, "thread_name", tids[i], label, (int)i);
    }
    free(tids);
    for (uint32_t s = 0; s < p->stream_count; s++) {
        if (s == 0)
            snprintf(label, sizeof label, "stream 0 (default)");
        else
            snprintf(label, sizeof label, "stream %u", s);
        metadata(w, "thread_name", PROF_STREAM_TID + s, label, 1000 + (int)s);
    }
    FOR_EACH_RECORD(p, r, write_record(w, r));
    fputs("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"backend\":", w->f);
    json_string(w->f, ctx->ops->name);
    fputs(",\"device\":", w->f);
    json_string(w->f, ctx->info.name);
    fprintf(w->f, ",\"kiln_version\":\"%s\",\"time_source\":\"%s\",\"dropped_records\":%llu}}\n",
            kiln_version_string(),
            p->timer == PROF_TIMER_CUPTI    ? "cupti activity"
            : p->timer == PROF_TIMER_EVENTS ? "device events"
                                            : "host wall clock",
            (unsigned long long)p->dropped_records);
}

/* Writes the trace to f and closes it; 0 and errno on failure. */
static int write_and_close(kiln_prof *p, FILE *f, int *err) {
    trace_writer w = {f, p, (int)getpid(), 1};
    write_trace(&w);
    int ok = fflush(f) == 0 && !ferror(f);
    *err = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        *err = errno;
    }
    return ok;
}

/* A path that exists and is not a regular file (/dev/null, a FIFO, a
 * terminal) is written in place: replacing it would turn a device node into
 * a file. A regular file (or a new one) is replaced atomically through a
 * temporary made with mkstemp (O_EXCL, mode 0600, unpredictable name) in the
 * same folder, so a link planted under a guessable name is never followed. */
kiln_status kiln_prof_trace_write(kiln_prof *p, const char *path) {
    struct stat st;
    int err = 0;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            err = errno;
            if (fd >= 0) close(fd);
            return kiln_set_error(KILN_ERR_IO, "cannot write the trace to %s: %s", path, strerror(err));
        }
        if (!write_and_close(p, f, &err))
            return kiln_set_error(KILN_ERR_IO, "cannot write the trace to %s: %s", path, strerror(err));
        return KILN_OK;
    }
    size_t len = strlen(path);
    char *tmp = malloc(len + 16);
    if (!tmp) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "writing the trace %s: out of host memory", path);
    snprintf(tmp, len + 16, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        err = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        return kiln_set_error(KILN_ERR_IO, "cannot write the trace to %s: %s", path, strerror(err));
    }
    /* mkstemp's 0600 is right for a new trace; a replaced one keeps its mode. */
    if (stat(path, &st) == 0) (void)fchmod(fd, st.st_mode & 07777);
    int ok = write_and_close(p, f, &err);
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        (void)unlink(tmp);
        free(tmp);
        return kiln_set_error(KILN_ERR_IO, "cannot write the trace to %s: %s", path, strerror(err));
    }
    free(tmp);
    return KILN_OK;
}
