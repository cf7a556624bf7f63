/* cpu_kpath.c: which path each kernel takes (see cpu_fission.h).
 *
 * The source is split into tokens; top-level definitions are found by
 * their shape (`name ( ... ) {`), macros by their #define lines. A kernel
 * needs barriers when its body, a macro it uses or a function it calls
 * (by name, through any depth) uses a barrier or warp primitive. Names are
 * compared without overload resolution, which can only add barriers.
 * Barriers the scan cannot attribute (in included headers or -D values)
 * keep every kernel on fibers, as before per-kernel paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_fission.h"
#include "backend/cpu/cpu_internal.h"
#include "core/settings.h"

static int tok_eq(const kiln_ctoks *c, int i, const char *s, int n) {
    return c->t[i].len == n && strncmp(c->text + c->t[i].start, s, (size_t)n) == 0;
}

const kpath_macro *kpath_macro_of(const kpath_unit *u, int i) {
    if (!kiln_ctok_ident(&u->tk, i)) return NULL;
    for (int m = 0; m < u->macro_count; m++)
        if (tok_eq(&u->tk, i, u->tk.text + u->macros[m].start, u->macros[m].len)) return &u->macros[m];
    return NULL;
}

const kpath_fn *kpath_fn_named(const kpath_unit *u, int i) {
    if (!kiln_ctok_ident(&u->tk, i)) return NULL;
    for (int f = 0; f < u->fn_count; f++) {
        const kiln_ctok *n = &u->tk.t[u->fns[f].name];
        if (tok_eq(&u->tk, i, u->tk.text + n->start, n->len)) return &u->fns[f];
    }
    return NULL;
}

/* #define lines: the name and what its body does. */
static int find_macros(kpath_unit *u) {
    const kiln_ctoks *c = &u->tk;
    for (int i = 0; i < c->n; i++) {
        if (c->t[i].kind != CTOK_PP) continue;
        const char *p = c->text + c->t[i].start + 1, *end = c->text + c->t[i].start + c->t[i].len;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (end - p < 7 || strncmp(p, "define", 6) != 0 || (p[6] != ' ' && p[6] != '\t')) continue;
        p += 7;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        const char *name = p;
        while (p < end && (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                           (*p >= '0' && *p <= '9')))
            p++;
        if (p == name) continue;
        kpath_macro *m = realloc(u->macros, (size_t)(u->macro_count + 1) * sizeof *m);
        if (!m) return -1;
        u->macros = m;
        m = &u->macros[u->macro_count++];
        m->start = (int)(name - c->text);
        m->len = (int)(p - name);
        m->flags = 0;
        char *body = strndup(p, (size_t)(end - p));
        kiln_ctoks b;
        if (!body || kiln_ctok_split(body, &b) != 0) {
            free(body);
            return -1;
        }
        for (int k = 0; k < b.n; k++) {
            if (b.t[k].kind != CTOK_IDENT) continue;
            const char *s = body + b.t[k].start;
            size_t n = (size_t)b.t[k].len;
            if (kiln_ctok_barrier_name(s, n)) m->flags |= KPATH_MACRO_BARRIER;
            if ((n == 6 && !strncmp(s, "return", 6)) || (n == 5 && !strncmp(s, "break", 5)) ||
                (n == 8 && !strncmp(s, "continue", 8)) || (n == 4 && !strncmp(s, "goto", 4)))
                m->flags |= KPATH_MACRO_CONTROL;
            if (n == 9 && !strncmp(s, "threadIdx", 9)) m->flags |= KPATH_MACRO_VARYING;
        }
        kiln_ctok_free(&b);
        free(body);
    }
    /* Macros naming other macros inherit what those do. */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < c->n; i++) {
            if (c->t[i].kind != CTOK_PP) continue;
            for (int m = 0; m < u->macro_count; m++) {
                if (u->macros[m].start < c->t[i].start || u->macros[m].start >= c->t[i].start + c->t[i].len)
                    continue;
                /* words of this #define line after the name */
                const char *p = c->text + u->macros[m].start + u->macros[m].len;
                const char *end = c->text + c->t[i].start + c->t[i].len;
                for (int o = 0; o < u->macro_count; o++) {
                    if (o == m) continue;
                    const char *w = c->text + u->macros[o].start;
                    int wl = u->macros[o].len;
                    for (const char *q = p; q + wl <= end; q++) {
                        if (strncmp(q, w, (size_t)wl) != 0) continue;
                        char before = q[-1], after = q + wl < end ? q[wl] : ' ';
                        int ib = before == '_' || (before >= '0' && before <= '9') ||
                                 ((before | 32) >= 'a' && (before | 32) <= 'z');
                        int ia = after == '_' || (after >= '0' && after <= '9') ||
                                 ((after | 32) >= 'a' && (after | 32) <= 'z');
                        if (ib || ia) continue;
                        unsigned add = u->macros[o].flags & ~u->macros[m].flags;
                        if (add) {
                            u->macros[m].flags |= add;
                            changed = 1;
                        }
                        break;
                    }
                }
            }
        }
    }
    return 0;
}

static int is_qualifier(const kiln_ctoks *c, int i) {
    return kiln_ctok_is(c, i, "const") || kiln_ctok_is(c, i, "noexcept") || kiln_ctok_is(c, i, "override") ||
           kiln_ctok_is(c, i, "final") || kiln_ctok_is(c, i, "volatile");
}

static int range_has(const kiln_ctoks *c, int a, int b, const char *s) {
    for (int i = a; i < b; i++)
        if (kiln_ctok_is(c, i, s)) return 1;
    return 0;
}

/* Function definitions at declaration level (file, namespace, extern "C"
 * and class scopes). */
static int find_functions(kpath_unit *u) {
    const kiln_ctoks *c = &u->tk;
    int decl = 0, scoped_depth = 0;
    int stack[64], depth = 0; /* per entered brace: 1 = namespace or class */
    for (int i = 0; i < c->n; i++) {
        if (c->t[i].kind == CTOK_PP) {
            decl = i + 1;
            continue;
        }
        if (kiln_ctok_is(c, i, ";")) {
            decl = i + 1;
            continue;
        }
        if (kiln_ctok_is(c, i, "}")) {
            if (depth > 0) scoped_depth -= stack[--depth];
            decl = i + 1;
            continue;
        }
        if (!kiln_ctok_is(c, i, "{")) continue;
        int j = i - 1;
        while (j >= decl && is_qualifier(c, j)) j--;
        int name = j >= decl && kiln_ctok_is(c, j, ")") ? c->t[j].match - 1 : -1;
        if (name >= decl && kiln_ctok_ident(c, name) && !kiln_ctok_is(c, name, "__attribute__") &&
            !kiln_ctok_is(c, name, "__launch_bounds__")) {
            kpath_fn *f = realloc(u->fns, (size_t)(u->fn_count + 1) * sizeof *f);
            if (!f) return -1;
            u->fns = f;
            f = &u->fns[u->fn_count++];
            memset(f, 0, sizeof *f);
            f->name = name;
            f->lparen = name + 1;
            f->lbrace = i;
            f->via = -1;
            f->is_global = range_has(c, decl, name, "__global__");
            f->is_template = range_has(c, decl, name, "template");
            f->scoped = scoped_depth > 0;
            i = c->t[i].match;
            decl = i + 1;
            continue;
        }
        int enter = range_has(c, decl, i, "namespace") || range_has(c, decl, i, "struct") ||
                    range_has(c, decl, i, "class") || range_has(c, decl, i, "union");
        if (enter || range_has(c, decl, i, "extern")) {
            if (depth == 64) return -1;
            stack[depth++] = enter;
            scoped_depth += enter;
            decl = i + 1;
            continue;
        }
        i = c->t[i].match; /* an initialiser, an enum: nothing to find inside */
    }
    return 0;
}

static void close_barriers(kpath_unit *u) {
    const kiln_ctoks *c = &u->tk;
    for (int f = 0; f < u->fn_count; f++) {
        kpath_fn *fn = &u->fns[f];
        for (int i = fn->lbrace; i <= c->t[fn->lbrace].match && !fn->barrier; i++) {
            if (c->t[i].kind != CTOK_IDENT) continue;
            const kpath_macro *m = kpath_macro_of(u, i);
            if (kiln_ctok_barrier_name(c->text + c->t[i].start, (size_t)c->t[i].len) ||
                (m && (m->flags & KPATH_MACRO_BARRIER)))
                fn->barrier = fn->direct = 1, fn->via = i;
        }
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int f = 0; f < u->fn_count; f++) {
            kpath_fn *fn = &u->fns[f];
            for (int i = fn->lbrace; i <= c->t[fn->lbrace].match && !fn->barrier; i++) {
                const kpath_fn *g = kpath_fn_named(u, i);
                if (g && g != fn && g->barrier) {
                    fn->barrier = 1;
                    fn->via = i;
                    changed = 1;
                }
            }
        }
    }
}

int kpath_unit_scan(kpath_unit *u, const char *text) {
    memset(u, 0, sizeof *u);
    if (kiln_ctok_split(text, &u->tk) != 0) return -1;
    if (!u->tk.balanced || find_macros(u) != 0 || find_functions(u) != 0) return -1;
    close_barriers(u);
    return 0;
}

void kpath_unit_free(kpath_unit *u) {
    kiln_ctok_free(&u->tk);
    free(u->macros);
    free(u->fns);
    memset(u, 0, sizeof *u);
}

static void say(kiln_cpu_kernel_plan *p, kiln_cpu_path path, const char *fmt, const char *a, int an) {
    p->path = path;
    snprintf(p->why, sizeof p->why, fmt, an, a);
}

/* The last component of a kernel name (`ns::k<int>` -> `k`). */
static void base_name(const char *name, const char **s, int *n) {
    const char *lt = strchr(name, '<');
    const char *end = lt ? lt : name + strlen(name);
    const char *b = end;
    while (b > name && b[-1] != ':') b--;
    *s = b;
    *n = (int)(end - b);
}

/* The module's #include lines and the request's defines, scanned by the
 * whole-module scan: barriers there cannot be attributed to a kernel. */
static int hidden_barriers(const kpath_unit *u, const kiln_compile_request *req) {
    kiln_text t = {0};
    for (int i = 0; i < u->tk.n; i++) {
        const kiln_ctok *k = &u->tk.t[i];
        const char *p = u->tk.text + k->start + 1;
        while (*p == ' ' || *p == '\t') p++;
        if (k->kind != CTOK_PP || strncmp(p, "include", 7) != 0) continue;
        kiln_text_add(&t, u->tk.text + k->start, (size_t)k->len);
        kiln_text_puts(&t, "\n");
    }
    kiln_text_puts(&t, "");
    char *includes = kiln_text_take(&t);
    if (!includes) return 1;
    kiln_compile_request copy = *req;
    copy.source = includes;
    int barriers = 1;
    char *prepared = kiln_cpu_source_prepare(&copy, &barriers);
    free(prepared);
    free(includes);
    return prepared ? barriers : 1;
}

static int forced_fibers(const kiln_compile_request *req) {
    for (int i = 0; i < req->define_count; i++) {
        const char *d = req->defines[i];
        if (strncmp(d, "KILN_CPU_FIBERS", 15) == 0 && (d[15] == '\0' || d[15] == '=')) return 1;
    }
    return 0;
}

void kiln_cpu_plan_kernels(const char *source, const kiln_compile_request *req, int module_barriers,
                           int fission, kiln_cpu_kernel_plan *plans, kiln_text *gen) {
    for (int k = 0; k < req->kernel_count; k++)
        say(&plans[k], module_barriers ? KILN_CPU_PATH_FIBERS : KILN_CPU_PATH_LOOP,
            module_barriers ? "%.*sthe source could not be analysed" : "%.*sno barriers", "", 0);
    if (!module_barriers) return; /* the common case: nothing to decide */
    if (forced_fibers(req)) {
        for (int k = 0; k < req->kernel_count; k++)
            say(&plans[k], KILN_CPU_PATH_FIBERS, "%.*sKILN_CPU_FIBERS is defined", "", 0);
        return;
    }
    kpath_unit u;
    memset(&u, 0, sizeof u);
    if (kiln_ctok_split(source, &u.tk) != 0) return;
    int hidden = -1;
    if (u.tk.balanced && find_macros(&u) == 0 && find_functions(&u) == 0) {
        close_barriers(&u);
        hidden = hidden_barriers(&u, req);
    }
    /* per function: 0 not transformed yet, 1 on fission, 2 not (a template
     * kernel is transformed once for all its instantiations) */
    int *tried = calloc((size_t)u.fn_count + 1, sizeof *tried);
    char(*whys)[200] = calloc((size_t)u.fn_count + 1, sizeof *whys);
    if (!tried || !whys) hidden = -1;
    for (int k = 0; hidden >= 0 && k < req->kernel_count; k++) {
        /* the kernel as the program names it (`MatrixMulCUDA<16>`), not
         * kiln's symbol for it */
        const char *expr = req->kernel_exprs ? req->kernel_exprs[k] : req->kernel_names[k];
        const char *name;
        int n;
        base_name(expr, &name, &n);
        const kpath_fn *fn = NULL;
        for (int f = 0; f < u.fn_count && !fn; f++)
            if (u.fns[f].is_global && tok_eq(&u.tk, u.fns[f].name, name, n)) fn = &u.fns[f];
        kiln_cpu_kernel_plan *p = &plans[k];
        const char *lt = strchr(expr, '<'), *gt = strrchr(expr, '>');
        if (hidden) {
            say(p, KILN_CPU_PATH_FIBERS, "%.*sa barrier in an included header or a -D value", "", 0);
        } else if (!fn) {
            say(p, KILN_CPU_PATH_FIBERS, "kiln's scanner found no definition of %.*s", name, n);
        } else if (!fn->barrier) {
            say(p, KILN_CPU_PATH_LOOP, "%.*sno barriers", "", 0);
        } else if (fn->scoped) {
            int *files = NULL, *lines = kiln_cpu_token_lines(&u.tk, &files);
            snprintf(p->why, sizeof p->why,
                     "loop fission handles only kernels at file scope (%.*s, line %d, is "
                     "in a namespace or class)",
                     n, name, lines ? lines[fn->name] : 0);
            p->path = KILN_CPU_PATH_FIBERS;
            free(lines);
            free(files);
        } else if (fn->is_template && (!lt || !gt || gt < lt)) {
            say(p, KILN_CPU_PATH_FIBERS, "%.*sa template kernel named without its template arguments", "", 0);
        } else if (!fission) {
            say(p, KILN_CPU_PATH_FIBERS,
                "%.*sloop fission is off (KILN_CPU_FISSION=0, or its code failed to compile)", "", 0);
        } else {
            int fi = (int)(fn - u.fns);
            if (!tried[fi])
                tried[fi] = kiln_cpu_fission(&u, fn, req->name ? req->name : "kernel.cu", gen, whys[fi],
                                             sizeof whys[fi]) == 0
                                ? 1
                                : 2;
            const char *why = whys[fi];
            if (tried[fi] == 1) {
                char *targs = fn->is_template ? strndup(lt + 1, (size_t)(gt - lt - 1)) : NULL;
                kiln_cpu_fission_entry(gen, req->kernel_names[k], u.tk.text + u.tk.t[fn->name].start,
                                       u.tk.t[fn->name].len, targs);
                free(targs);
                say(p, KILN_CPU_PATH_FISSION,
                    why[0] ? "barriers in structured, uniform control flow; %.*s"
                           : "%.*sbarriers in structured, uniform control flow",
                    why, (int)strlen(why));
            } else
                say(p, KILN_CPU_PATH_FIBERS, "loop fission: %.*s", why, (int)strlen(why));
        }
    }
    free(tried);
    free(whys);
    /* A debugging aid: the transformed kernels as compiled. */
    if (gen->length && kiln_setting_string("KILN_CPU_FISSION_DUMP")) fprintf(stderr, "%s\n", gen->data);
    kiln_ctok_free(&u.tk);
    free(u.macros);
    free(u.fns);
}
