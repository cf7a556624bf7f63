/* cpu_fission_template.c: template kernels on loop fission
 * (cpu_fission_impl.h). The transformed body stays a template on the
 * kernel's own template parameters (after kiln's kiln_probe and
 * kiln_small, so that defaults still work), and so do the functions that
 * hold its __shared__ variables; each instantiation the program asks for
 * gets its entry point (KILN_CPU_EXPORT_FISSION_T, kiln_cpu_fission.cuh)
 * with the template arguments as the program wrote them. The analysis is
 * of the template's text: a template parameter is a constant, uniform
 * across the block like any other name that is not a local. */
#include "backend/cpu/cpu_fission_impl.h"

int fis_read_template(fis *f) {
    f->tpl_a = f->tpl_b = -1;
    f->tpl_count = 0;
    if (!f->fn->is_template) return 0;
    int ds = f->fn->name;
    while (ds > 0 && !is(f, ds - 1, ";") && !is(f, ds - 1, "}") && !is(f, ds - 1, "{") &&
           f->c->t[ds - 1].kind != CTOK_PP)
        ds--;
    int t = ds;
    while (t < f->fn->name && !is(f, t, "template")) t++;
    if (t == f->fn->name || !is(f, t + 1, "<")) return fail(f, "a template header kiln cannot read", t);
    int depth = 0, gt = -1;
    for (int i = t + 1; i < f->fn->name && gt < 0; i++) {
        if (is(f, i, "(") || is(f, i, "[")) i = match(f, i);
        if (is(f, i, "<")) depth++;
        if (is(f, i, ">")) depth--;
        if (is(f, i, ">>")) depth -= 2;
        if (depth == 0) gt = i;
    }
    if (gt < 0) return fail(f, "a template header kiln cannot read", t);
    f->tpl_a = t + 2;
    f->tpl_b = gt;
    int last = -1, deflt = 0;
    for (int i = f->tpl_a; i <= gt; i++) {
        if (is(f, i, "(") || is(f, i, "[")) {
            i = match(f, i);
            continue;
        }
        if (is(f, i, "...")) return fail(f, "a template kernel with a parameter pack", i);
        if (is(f, i, "=")) deflt = 1;
        if (ident(f, i) && !deflt) last = i;
        if (is(f, i, ",") || i == gt) {
            if (last < 0) return fail(f, "an unnamed template parameter", i);
            if (f->tpl_count == 16) return fail(f, "more than 16 template parameters", i);
            f->tpl_names[f->tpl_count++] = last;
            last = -1;
            deflt = 0;
        }
    }
    return 0;
}

void fis_put_template_params(fis *f, int first) {
    if (f->tpl_a < 0) return;
    if (!first) fis_put(f, ", ");
    fis_put_toks(f, f->tpl_a, f->tpl_b);
    fis_put(f, "\n");
}

void fis_put_template_args(fis *f) {
    if (f->tpl_a < 0) return;
    fis_put(f, "<");
    for (int k = 0; k < f->tpl_count; k++) {
        if (k) fis_put(f, ", ");
        fis_put_tok(f, f->tpl_names[k]);
    }
    fis_put(f, ">");
}
