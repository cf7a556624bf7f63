/* scan_codegen.c: the pieces of source every scan kernel shares, on both
 * backends: its parameter list and the bases of its row. */
#include "reduce/scan_codegen.h"

#include "reduce/reduce.h"

void sc_emit_params(kiln_text *t, const sc_plan *p) {
    kiln_text_printf(
        t,
        "%s *kiln_out, const %s *kiln_in, kiln_sc_t *kiln_aggr, int kiln_excl, long long kiln_M, "
        "long long kiln_L, long long kiln_sL, long long kiln_oL, long long kiln_T, long long kiln_tile, "
        "long long kiln_per",
        rd_storage_type(p->out_store), rd_storage_type(p->in_store));
    for (int d = 0; d < p->nd; d++)
        kiln_text_printf(t, ", long long kiln_rs%d, long long kiln_ri%d, long long kiln_ro%d", d, d, d);
}

/* kiln_pi / kiln_po: the row's first element in and out. */
void sc_emit_row_bases(kiln_text *t, const sc_plan *p, const char *row) {
    kiln_text_printf(t,
                     "    const char *kiln_pi = (const char *)kiln_in; char *kiln_po = (char *)kiln_out;\n");
    if (p->nd == 0) {
        kiln_text_printf(t, "    (void)%s;\n", row);
        return;
    }
    kiln_text_printf(t, "    { long long kiln_q = %s;\n", row);
    for (int d = p->nd - 1; d >= 0; d--)
        kiln_text_printf(
            t,
            "      { const long long kiln_c = kiln_q %% kiln_rs%d; kiln_q /= kiln_rs%d; kiln_pi += "
            "kiln_c * kiln_ri%d; kiln_po += kiln_c * kiln_ro%d; }\n",
            d, d, d, d);
    kiln_text_printf(t, "    }\n");
}
