/* test_gufunc_parse.c: the gufunc text parsers against tables of valid and
 * invalid inputs: layout signatures (NumPy's grammar), type signatures,
 * parameter names and dim sizes. Errors must point at the offending column. */
#include <stdio.h>
#include <string.h>

#include "gufunc/gufunc.h"
#include "test_support.h"

typedef struct layout_case {
    const char *text;
    int nin, nout, ndims;
    const char *normalised;
} layout_case;

static const layout_case valid_layouts[] = {
    {"(n)->(n)", 1, 1, 1, "(n)->(n)"},
    {"(n) ->(n)", 1, 1, 1, "(n)->(n)"},
    {"()->(n)", 1, 1, 1, "()->(n)"},
    {"(),()->(n)", 2, 1, 1, "(),()->(n)"},
    {"(m,n),(n,p)->(m,p)", 2, 1, 3, "(m,n),(n,p)->(m,p)"},
    {" ( m , n ) , ( n , p ) -> ( m , p ) ", 2, 1, 3, "(m,n),(n,p)->(m,p)"},
    {"(3),(3)->(3)", 2, 1, 1, "(3),(3)->(3)"},
    {"(n,3)->(n)", 1, 1, 2, "(n,3)->(n)"},
    {"(n),(n)->(),()", 2, 2, 1, "(n),(n)->(),()"},
    {"()->()", 1, 1, 0, "()->()"},
    {"(n,n)->()", 1, 1, 1, "(n,n)->()"},
    {"(i_1,_j)->(_j)", 1, 1, 2, "(i_1,_j)->(_j)"},
    {"(a,b,c,d)->(d,c,b,a)", 1, 1, 4, "(a,b,c,d)->(d,c,b,a)"},
    {"(n)->(n),(n),(m)", 1, 3, 2, "(n)->(n),(n),(m)"},
};

typedef struct bad_case {
    const char *text;
    int column; /* 1-based column of the caret */
    const char *needle;
} bad_case;

static const bad_case invalid_layouts[] = {
    {"", 1, "empty"},
    {"   ", 4, "empty"},
    {"(n)", 4, "expected '->'"},
    {"(n)->", 6, "at least one output"},
    {"(n->(n)", 3, "expected ',' or ')'"},
    {"(n,)->(n)", 4, "expected a dim name or size"},
    {"(,n)->(n)", 2, "expected a dim name or size"},
    {"(n)(m)->(n)", 4, "expected ',', '->'"},
    {"(n)->(n)->(n)", 9, "second '->'"},
    {"(n) -> (n) x", 12, "expected ',', '->'"},
    {"(3n)->(n)", 3, "name cannot start with a digit"},
    {"(n|1)->(n)", 3, "'|1' is not supported"},
    {"(n-1)->(n)", 3, "expected ',' or ')'"},
    {"n->n", 1, "expected '('"},
    {"(n)->(n", 8, "expected ',' or ')'"},
    {"(n),->(n)", 5, "expected '('"},
    {"(a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q)->()", 34, "more than 16 core dims"},
    {"(n) => (n)", 5, "expected ',', '->'"},
    {"(n)-(n)", 4, "expected ',', '->'"},
    {"(1234567890123456789)->()", 2, "too large"},
    {"([n])->(n)", 2, "expected a dim name or size"},
};

static void test_valid_layouts(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof valid_layouts / sizeof *valid_layouts; i++) {
        const layout_case *c = &valid_layouts[i];
        gu_layout l;
        if (gu_parse_layout(c->text, &l) != KILN_OK)
            fail_msg("\"%s\" rejected: %s", c->text, kiln_last_error());
        assert_int_equal(l.nin, c->nin);
        assert_int_equal(l.nout, c->nout);
        assert_int_equal(l.ndims, c->ndims);
        assert_string_equal(l.text, c->normalised);
    }
}

static void test_layout_details(void **state) {
    (void)state;
    gu_layout l;
    TEST_OK(gu_parse_layout("(m,n),(n,p)->(m,p)", &l));
    assert_int_equal(l.core_nd[0], 2);
    assert_int_equal(l.core_dim[0][1], l.core_dim[1][0]); /* n shared */
    assert_int_equal(l.core_dim[2][0], l.core_dim[0][0]); /* m */
    assert_int_equal(l.core_dim[2][1], l.core_dim[1][1]); /* p */
    TEST_OK(gu_parse_layout("(3),(3)->(3)", &l));
    assert_int_equal(l.dim_fixed[l.core_dim[0][0]], 3);
    assert_int_equal(l.core_nd[2], 1);
    TEST_OK(gu_parse_layout("(n,2)->(2,n)", &l));
    assert_int_equal(l.ndims, 2);
    assert_int_equal(l.dim_fixed[l.core_dim[0][1]], 2);
    assert_int_equal(l.dim_fixed[l.core_dim[0][0]], -1);
}

static void test_invalid_layouts(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof invalid_layouts / sizeof *invalid_layouts; i++) {
        const bad_case *c = &invalid_layouts[i];
        gu_layout l;
        kiln_status s = gu_parse_layout(c->text, &l);
        if (s != KILN_ERR_SIGNATURE)
            fail_msg("\"%s\": expected KILN_ERR_SIGNATURE, got %s (%s)", c->text, kiln_status_string(s),
                     kiln_last_error());
        const char *msg = kiln_last_error();
        if (!test_contains(msg, c->needle))
            fail_msg("\"%s\": message lacks \"%s\": %s", c->text, c->needle, msg);
        char col[32];
        snprintf(col, sizeof col, "at column %d", c->column);
        if (!test_contains(msg, col)) fail_msg("\"%s\": expected %s: %s", c->text, col, msg);
        /* The caret line: two spaces, column-1 spaces, '^' at the end. */
        const char *caret = strrchr(msg, '\n');
        assert_non_null(caret);
        caret++;
        assert_int_equal((int)strlen(caret), 2 + c->column);
        assert_int_equal(caret[strlen(caret) - 1], '^');
    }
    gu_layout l;
    TEST_FAILS_WITH(gu_parse_layout(NULL, &l), KILN_ERR_SIGNATURE, "NULL");
}

static void test_typesigs(void **state) {
    (void)state;
    gu_typesig sigs[GU_MAX_SIGS];
    int n = 0;
    TEST_OK(gu_parse_typesigs("void(f4[:], f4[:])", sigs, &n));
    assert_int_equal(n, 1);
    assert_int_equal(sigs[0].nargs, 2);
    assert_int_equal(sigs[0].dtype[0], KILN_FLOAT32);
    assert_int_equal(sigs[0].ndim[1], 1);
    TEST_OK(gu_parse_typesigs(
        "void(f8[:,:], f8[:,:], f8[:,:]); void(float32[:, :], float32[:,:], float32[:,::1])", sigs, &n));
    assert_int_equal(n, 2);
    assert_int_equal(sigs[1].dtype[2], KILN_FLOAT32);
    assert_int_equal(sigs[1].ndim[2], 2);
    TEST_OK(gu_parse_typesigs("(f8, int64, f8[:])", sigs, &n));
    assert_int_equal(sigs[0].ndim[0], 0);
    assert_int_equal(sigs[0].dtype[1], KILN_INT64);
    TEST_OK(gu_parse_typesigs("void(f2[:], c8[:], c16); ", sigs, &n));
    assert_int_equal(n, 1);
    assert_int_equal(sigs[0].dtype[0], KILN_FLOAT16);

    static const bad_case bad[] = {
        {"", 1, "empty"},
        {"void", 5, "expected '('"},
        {"f4(f4[:])", 1, "returns nothing"},
        {"void(f4[:], f5[:])", 13, "unknown type \"f5\""},
        {"void(f4[:], f4[:]", 18, "expected ',' or ')'"},
        {"void(f4[;])", 9, "expected ':'"},
        {"void(f4[:,])", 11, "expected ':'"},
        {"void(f4[:] f4[:])", 12, "expected ',' or ')'"},
        {"void()", 6, "at least one argument"},
        {"void(f4[:]) void(f8[:])", 13, "expected ';'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kiln_status s = gu_parse_typesigs(bad[i].text, sigs, &n);
        if (s != KILN_ERR_SIGNATURE)
            fail_msg("\"%s\": expected KILN_ERR_SIGNATURE, got %s", bad[i].text, kiln_status_string(s));
        if (!test_contains(kiln_last_error(), bad[i].needle))
            fail_msg("\"%s\": message lacks \"%s\": %s", bad[i].text, bad[i].needle, kiln_last_error());
        char col[32];
        snprintf(col, sizeof col, "at column %d", bad[i].column);
        if (!test_contains(kiln_last_error(), col))
            fail_msg("\"%s\": expected %s: %s", bad[i].text, col, kiln_last_error());
    }
}

static void test_typesig_layout_arity(void **state) {
    (void)state;
    gu_layout l;
    gu_typesig sigs[GU_MAX_SIGS];
    int n;
    TEST_OK(gu_parse_layout("(n)->(n)", &l));
    TEST_OK(gu_parse_typesigs("void(f4[:])", sigs, &n));
    TEST_FAILS_WITH(gu_check_typesigs(&l, sigs, n), KILN_ERR_SIGNATURE,
                    "has 1 argument but the layout signature \"(n)->(n)\" has 2");
    TEST_OK(gu_parse_typesigs("void(f4[:], f4[:], f4)", sigs, &n));
    TEST_FAILS_WITH(gu_check_typesigs(&l, sigs, n), KILN_ERR_SIGNATURE, "has 3 arguments");
    TEST_OK(gu_parse_typesigs("void(f4[:,:], f4[:])", sigs, &n));
    TEST_FAILS_WITH(gu_check_typesigs(&l, sigs, n), KILN_ERR_SIGNATURE, "argument 0 is 2-d");
    TEST_OK(gu_parse_layout("()->(n)", &l));
    TEST_OK(gu_parse_typesigs("void(f8, f8[:]); void(f4, f4[:])", sigs, &n));
    TEST_OK(gu_check_typesigs(&l, sigs, n));
    TEST_OK(gu_parse_typesigs("void(f8[:], f8[:])", sigs, &n));
    TEST_FAILS_WITH(gu_check_typesigs(&l, sigs, n), KILN_ERR_SIGNATURE, "gives it 0 core dims");
}

static void test_params_and_dims(void **state) {
    (void)state;
    char names[GU_MAX_OPS][GU_NAME_MAX];
    TEST_OK(gu_parse_params("inp, out", 2, names));
    assert_string_equal(names[1], "out");
    TEST_OK(gu_parse_params(" a , b -> c ", 3, names));
    assert_string_equal(names[2], "c");
    TEST_FAILS_WITH(gu_parse_params("a, b", 3, names), KILN_ERR_ARG_COUNT, "names 2 arguments");
    TEST_FAILS_WITH(gu_parse_params("a, b, c", 2, names), KILN_ERR_ARG_COUNT, "more than the 2");
    TEST_FAILS_WITH(gu_parse_params("a, a", 2, names), KILN_ERR_SIGNATURE, "named twice");
    TEST_FAILS_WITH(gu_parse_params("a, 1b", 2, names), KILN_ERR_SIGNATURE, "column 4");
    TEST_FAILS_WITH(gu_parse_params("a, kiln_x", 2, names), KILN_ERR_SIGNATURE, "reserved");
    TEST_FAILS_WITH(gu_parse_params(NULL, 2, names), KILN_ERR_INVALID_ARGUMENT, "expected 2 names");

    gu_layout l;
    int64_t sizes[GU_MAX_DIMS];
    TEST_OK(gu_parse_layout("(),(m)->(n,m)", &l));
    TEST_OK(gu_parse_dims(&l, "n=4", sizes));
    int n_dim = l.core_dim[2][0];
    assert_int_equal(sizes[n_dim], 4);
    assert_int_equal(sizes[l.core_dim[1][0]], -1);
    TEST_OK(gu_parse_dims(&l, " n = 7 , m=2 ", sizes));
    assert_int_equal(sizes[n_dim], 7);
    TEST_OK(gu_parse_dims(&l, NULL, sizes));
    TEST_FAILS_WITH(gu_parse_dims(&l, "k=4", sizes), KILN_ERR_SIGNATURE, "\"k\" is not a dim");
    TEST_FAILS_WITH(gu_parse_dims(&l, "n=", sizes), KILN_ERR_SIGNATURE, "expected a size");
    TEST_FAILS_WITH(gu_parse_dims(&l, "n 4", sizes), KILN_ERR_SIGNATURE, "expected '='");
    TEST_FAILS_WITH(gu_parse_dims(&l, "n=4 m=3", sizes), KILN_ERR_SIGNATURE, "expected ','");
    TEST_FAILS_WITH(gu_parse_dims(&l, "n=4, n=5", sizes), KILN_ERR_SIGNATURE, "given twice");
    TEST_FAILS_WITH(gu_parse_dims(&l, "n=-1", sizes), KILN_ERR_SIGNATURE, "column 3");
}

/* Every prefix and single-character mutation of valid signatures must parse
 * or fail cleanly (no crash, a status, a message with a caret). */
static void test_layout_mutations_never_crash(void **state) {
    (void)state;
    static const char alphabet[] = "(),->n3 ?|_x";
    for (size_t i = 0; i < sizeof valid_layouts / sizeof *valid_layouts; i++) {
        char buf[128];
        const char *src = valid_layouts[i].text;
        size_t n = strlen(src);
        for (size_t cut = 0; cut <= n; cut++) {
            snprintf(buf, sizeof buf, "%.*s", (int)cut, src);
            gu_layout l;
            kiln_status s = gu_parse_layout(buf, &l);
            assert_true(s == KILN_OK || s == KILN_ERR_SIGNATURE);
        }
        for (size_t pos = 0; pos < n; pos++)
            for (size_t a = 0; a < sizeof alphabet - 1; a++) {
                snprintf(buf, sizeof buf, "%s", src);
                buf[pos] = alphabet[a];
                gu_layout l;
                kiln_status s = gu_parse_layout(buf, &l);
                assert_true(s == KILN_OK || s == KILN_ERR_SIGNATURE);
                if (s != KILN_OK) assert_true(test_contains(kiln_last_error(), "^"));
            }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_layouts),
        cmocka_unit_test(test_layout_details),
        cmocka_unit_test(test_invalid_layouts),
        cmocka_unit_test(test_typesigs),
        cmocka_unit_test(test_typesig_layout_arity),
        cmocka_unit_test(test_params_and_dims),
        cmocka_unit_test(test_layout_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
