/* bench_report.c: the table kiln_bench prints and its JSON twin. */
#include <string.h>

#include "bench.h"

static void rate(char *buf, size_t size, double amount, double ms) {
    if (amount > 0 && ms > 0)
        snprintf(buf, size, "%.1f", amount / (ms * 1e6)); /* per ms * 1e-6 = G per s */
    else
        snprintf(buf, size, "-");
}

void bench_print_rows(const bench_row *rows, int n, const char *backend) {
    printf("%-15s | %-7s | %-9s | %10s | %10s | %6s | %15s | %16s | %s\n", "workload", "backend", "size",
           "kiln ms", "native ms", "ratio", "GB/s kiln/nat", "GFLOP/s kiln/nat", "checked");
    printf("----------------+---------+-----------+------------+------------+--------+------------"
           "-----+------------------+--------\n");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        char native[32] = "n/a", ratio[32] = "-", gb[40], gf[40], a[16], b[16];
        if (r->have_native) {
            snprintf(native, sizeof native, "%.4f", r->native_ms);
            snprintf(ratio, sizeof ratio, "%.2f", r->native_ms > 0 ? r->kiln_ms / r->native_ms : 0);
        }
        rate(a, sizeof a, r->bytes, r->kiln_ms);
        rate(b, sizeof b, r->bytes, r->have_native ? r->native_ms : 0);
        snprintf(gb, sizeof gb, "%s / %s", a, b);
        rate(a, sizeof a, r->flops, r->kiln_ms);
        rate(b, sizeof b, r->flops, r->have_native ? r->native_ms : 0);
        snprintf(gf, sizeof gf, "%s / %s", a, b);
        const char *checked = !r->kiln_passed                       ? "kiln FAIL"
                              : r->have_native && !r->native_passed ? "native FAIL"
                              : r->have_native                      ? "both ok"
                                                                    : "kiln ok";
        printf("%-15s | %-7s | %-9lld | %10.4f | %10s | %6s | %15s | %16s | %s\n", r->name, backend,
               (long long)r->size, r->kiln_ms, native, ratio, gb, gf, checked);
    }
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        printf("  %s: kiln: %s\n", r->name, r->kiln_check);
        if (r->have_native)
            printf("  %s: native: %s\n", r->name, r->native_check);
        else if (r->native_note[0])
            printf("  %s: %s\n", r->name, r->native_note);
    }
    printf("  (on a GPU kiln and native take turns run by run; kernels under 0.25 ms run in\n"
           "  batches of 20 back to back per timed run on both sides, the figure per launch)\n");
}

/* JSON strings from our own messages: escape quotes, backslashes and
 * control characters. */
static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

int bench_write_json(const char *path, const char *backend, const char *device, const bench_row *rows, int n,
                     const bench_gu_row *gu, int ngu, const bench_launch_cost *launch,
                     const bench_compile_cost *compile) {
    FILE *f = fopen(path, "w");
    if (!f) return KILN_ERR_IO;
    fprintf(f, "{\n  \"kiln_version\": ");
    json_string(f, kiln_version_string());
    fprintf(f, ",\n  \"backend\": ");
    json_string(f, backend);
    fprintf(f, ",\n  \"device\": ");
    json_string(f, device);
    fprintf(f, ",\n  \"workloads\": [");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_string(f, r->name);
        fprintf(f,
                ", \"size\": %lld, \"bytes\": %.0f, \"flops\": %.0f, \"kiln_ms\": %.6f, "
                "\"kiln_min_ms\": %.6f, \"kiln_passed\": %s, \"kiln_check\": ",
                (long long)r->size, r->bytes, r->flops, r->kiln_ms, r->kiln_min_ms,
                r->kiln_passed ? "true" : "false");
        json_string(f, r->kiln_check);
        if (r->have_native) {
            fprintf(f,
                    ", \"native_ms\": %.6f, \"native_min_ms\": %.6f, \"ratio\": %.4f, "
                    "\"native_passed\": %s, \"native_check\": ",
                    r->native_ms, r->native_min_ms, r->native_ms > 0 ? r->kiln_ms / r->native_ms : 0,
                    r->native_passed ? "true" : "false");
            json_string(f, r->native_check);
        } else {
            fprintf(f, ", \"native_ms\": null, \"native_note\": ");
            json_string(f, r->native_note);
        }
        fputc('}', f);
    }
    fprintf(f, "\n  ]");
    /* The guvectorize rows (gufunc_bench.c): bytes = 2 x rows x 16. */
    fprintf(f, ",\n  \"gufunc\": [");
    for (int i = 0; i < ngu; i++) {
        const bench_gu_row *r = &gu[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_string(f, r->name);
        fprintf(f,
                ", \"rows\": %lld, \"cols\": %lld, \"bytes\": %.0f, \"flops\": %.0f, "
                "\"batch\": %d, \"target_ratio\": %.2f, \"ceiling_gbs\": %.0f, \"kiln_ms\": %.6f, "
                "\"kiln_min_ms\": %.6f, \"kiln_gbs\": %.1f, \"kiln_passed\": %s, \"kiln_check\": ",
                (long long)r->rows, (long long)r->cols, r->bytes, r->flops, r->batch, r->target,
                r->ceiling_gbs, r->kiln_ms, r->kiln_min_ms,
                r->kiln_ms > 0 ? r->bytes / (r->kiln_ms * 1e6) : 0, r->kiln_passed ? "true" : "false");
        json_string(f, r->kiln_check);
        if (r->any_ms >= 0) fprintf(f, ", \"any_layout_ms\": %.6f", r->any_ms);
        if (r->have_native) {
            fprintf(f, ", \"native_kernel\": ");
            json_string(f, r->native_kernel);
            fprintf(f,
                    ", \"native_ms\": %.6f, \"native_min_ms\": %.6f, \"native_gbs\": %.1f, "
                    "\"ratio\": %.4f, \"native_passed\": %s, \"native_check\": ",
                    r->native_ms, r->native_min_ms, r->native_ms > 0 ? r->bytes / (r->native_ms * 1e6) : 0,
                    r->native_ms > 0 ? r->kiln_ms / r->native_ms : 0, r->native_passed ? "true" : "false");
            json_string(f, r->native_check);
            if (r->cuda) { /* every CUDA kernel timed; "native" is the fastest coalesced one */
                static const char *const names[KILN_NATIVE_HERMITE_VARIANTS] = {"float4", "float4_x4",
                                                                                "rows"};
                fprintf(f, ", \"native_variants_ms\": {");
                for (int v = 0, first = 1; v < KILN_NATIVE_HERMITE_VARIANTS; v++) {
                    if (r->variant_ms[v] < 0) continue;
                    fprintf(f, "%s\"%s\": %.6f", first ? "" : ", ", names[v], r->variant_ms[v]);
                    first = 0;
                }
                fputc('}', f);
            }
        } else {
            fprintf(f, ", \"native_ms\": null, \"native_note\": ");
            json_string(f, r->note);
        }
        fputc('}', f);
    }
    fprintf(f, "\n  ]");
    if (launch && launch->launches) {
        fprintf(f,
                ",\n  \"launch\": {\"launches\": %d, \"kiln_enqueue_us\": %.3f, "
                "\"kiln_total_us\": %.3f",
                launch->launches, launch->kiln_enqueue_us, launch->kiln_total_us);
        if (launch->have_native)
            fprintf(f, ", \"native_enqueue_us\": %.3f, \"native_total_us\": %.3f", launch->native_enqueue_us,
                    launch->native_total_us);
        fputc('}', f);
    }
    if (compile && compile->ok)
        fprintf(f,
                ",\n  \"compile\": {\"cold_open_ms\": %.3f, \"cold_first_ms\": %.3f, "
                "\"cold_next_ms\": %.3f, \"warm_open_ms\": %.3f, \"warm_first_ms\": %.3f, "
                "\"warm_next_ms\": %.3f, \"nvrtc_first_ms\": %.3f, \"nvrtc_next_ms\": %.3f, "
                "\"module_ms\": %.3f, \"module_proc_ms\": %.3f, \"module_o3_ms\": %.3f}",
                compile->cold_open_ms, compile->cold_first_ms, compile->cold_next_ms, compile->warm_open_ms,
                compile->warm_first_ms, compile->warm_next_ms,
                compile->nvrtc_ok ? compile->nvrtc_first_ms : 0.0,
                compile->nvrtc_ok ? compile->nvrtc_next_ms : 0.0, compile->module_first_ms,
                compile->module_proc_ms[0], compile->module_o3_ok ? compile->module_o3_ms : 0.0);
    fprintf(f, "\n}\n");
    return fclose(f) == 0 ? KILN_OK : KILN_ERR_IO;
}
