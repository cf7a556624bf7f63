/* cache_deps.c: the files a compile reads, for the cache key.
 *
 * kiln follows the source's #include lines itself, the way the compilers
 * do: an absolute path as it is, a quoted name first beside the file that
 * includes it, then in each -I folder in order; every header found is read
 * and followed in turn. The key then covers the contents of every header
 * the compile can read, at any depth, whatever folder it sits in. Asking the
 * compiler instead (-MD, NVRTC's dependency output) would tell only after
 * compiling, which is what a cache lookup must avoid, and the two backends'
 * lists would differ in form.
 *
 * Conditional sections are not evaluated: a header behind an #if that is
 * off is still hashed, so editing it costs a recompile, never a stale hit.
 * A name found nowhere is hashed as missing, so creating it later changes
 * the key. An #include whose name is a macro cannot be followed: the -I
 * folders' listings (names, sizes, modification times) stay in the key for
 * those (cache.c). */
#include "jit/cache_deps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"

#define MAX_DEPTH 40
#define MAX_FILES 2000
#define MAX_FILE_BYTES ((size_t)64 << 20)

typedef struct dep_walk {
    kiln_sha256_ctx *md;
    const kiln_compile_request *req;
    char **seen; /* real paths already hashed */
    int nseen;
} dep_walk;

static void digest_field(kiln_sha256_ctx *md, const char *tag, const void *data, size_t n) {
    kiln_sha256_update(md, tag, strlen(tag));
    kiln_sha256_update(md, &n, sizeof n);
    if (n) kiln_sha256_update(md, data, n);
}

/* Where the compiler would find `name`; 0 when nowhere. */
static int resolve(const dep_walk *w, const char *name, int quoted, const char *from_dir, char *out,
                   size_t cap) {
    if (name[0] == '/') {
        if ((size_t)snprintf(out, cap, "%s", name) >= cap) return 0;
        return kiln_is_regular_file(out);
    }
    if (quoted && from_dir && (size_t)snprintf(out, cap, "%s/%s", from_dir, name) < cap &&
        kiln_is_regular_file(out))
        return 1;
    for (int i = 0; i < w->req->include_count; i++)
        if ((size_t)snprintf(out, cap, "%s/%s", w->req->include_dirs[i], name) < cap &&
            kiln_is_regular_file(out))
            return 1;
    return 0;
}

static void walk_text(dep_walk *w, const char *text, const char *from_dir, int depth);

static void walk_file(dep_walk *w, const char *path, int depth) {
    char *real = realpath(path, NULL);
    if (!real) return;
    for (int i = 0; i < w->nseen; i++)
        if (strcmp(w->seen[i], real) == 0) {
            free(real);
            return; /* hashed already (and include guards make a second read a no-op) */
        }
    if (w->nseen >= MAX_FILES) {
        free(real);
        return;
    }
    char **grown = realloc(w->seen, (size_t)(w->nseen + 1) * sizeof *grown);
    if (!grown) {
        free(real);
        return;
    }
    w->seen = grown;
    w->seen[w->nseen++] = real;
    size_t size = 0;
    char *text = kiln_read_regular_file(real, MAX_FILE_BYTES, &size);
    digest_field(w->md, "dep", real, strlen(real));
    if (!text) {
        digest_field(w->md, "unreadable", NULL, 0);
        return;
    }
    digest_field(w->md, "contents", text, size);
    char *dir = strdup(real), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = '\0';
    if (dir && depth < MAX_DEPTH) walk_text(w, text, dir[0] ? dir : "/", depth + 1);
    free(dir);
    free(text);
}

static void walk_text(dep_walk *w, const char *text, const char *from_dir, int depth) {
    for (const char *p = text; p && *p;) {
        const char *line = p;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
        while (*line == ' ' || *line == '\t') line++;
        if (*line != '#') continue;
        line++;
        while (*line == ' ' || *line == '\t') line++;
        if (strncmp(line, "include", 7) != 0) continue;
        line += 7;
        if (strncmp(line, "_next", 5) == 0) line += 5;
        while (*line == ' ' || *line == '\t') line++;
        char close = *line == '"' ? '"' : *line == '<' ? '>' : '\0';
        if (!close) continue; /* a macro: covered by the -I listings */
        const char *start = line + 1, *end = start;
        while (*end && *end != close && *end != '\n') end++;
        if (*end != close || end == start || (size_t)(end - start) >= 1024) continue;
        char name[1024], path[4096];
        memcpy(name, start, (size_t)(end - start));
        name[end - start] = '\0';
        if (resolve(w, name, close == '"', from_dir, path, sizeof path))
            walk_file(w, path, depth);
        else
            digest_field(w->md, "missing", name, strlen(name));
    }
}

void kiln_cache_digest_includes(kiln_sha256_ctx *md, const kiln_compile_request *req) {
    dep_walk w = {md, req, NULL, 0};
    /* The source itself has no folder of its own: the backends compile it
     * from a private temporary one, so quoted names go to the -I folders. */
    walk_text(&w, req->source, NULL, 0);
    for (int i = 0; i < w.nseen; i++) free(w.seen[i]);
    free(w.seen);
}
