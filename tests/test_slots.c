/* test_slots.c: context slots (core/context.h): made once on first use,
 * emptied by kiln_slot_take, closed stage by stage and newest first at
 * kiln_close, destroyed newest first at the last release. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "test_support.h"

static char events[512]; /* "close:B destroy:A ..." in the order they came */
static int creates;

static void note(const char *what, const char *name) {
    size_t n = strlen(events);
    snprintf(events + n, sizeof events - n, "%s%s:%s", n ? " " : "", what, name);
}

static void on_close(kiln_context *ctx, void *state);
static void on_close_take(kiln_context *ctx, void *state);
static void destroy(kiln_context *ctx, void *state);

static const kiln_slot_class release_a = {"A", KILN_SLOT_CLOSE_RELEASE, on_close_take, destroy};
static const kiln_slot_class stop_b = {"B", KILN_SLOT_CLOSE_STOP, on_close, destroy};
static const kiln_slot_class report_c = {"C", KILN_SLOT_CLOSE_REPORT, on_close, destroy};
static const kiln_slot_class release_d = {"D", KILN_SLOT_CLOSE_RELEASE, on_close, destroy};
static const kiln_slot_class destroy_only_e = {"E", KILN_SLOT_CLOSE_RELEASE, NULL, destroy};

/* The state is a copy of the class's name, so that the callbacks can say
 * whose state they were handed. */
static kiln_status create(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    creates++;
    *state = strdup(((const kiln_slot_class *)arg)->name);
    return *state ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of memory");
}

static kiln_status create_fails(kiln_context *ctx, void *arg, void **state) {
    (void)ctx;
    (void)arg;
    (void)state;
    return kiln_set_error(KILN_ERR_INTERNAL, "the test's create fails");
}

static void on_close(kiln_context *ctx, void *state) {
    (void)ctx;
    note("close", state);
}

static void on_close_take(kiln_context *ctx, void *state) {
    note("close", state);
    void *taken = kiln_slot_take(ctx, &release_a);
    assert_ptr_equal(taken, state);
    free(taken);
}

static void destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    note("destroy", state);
    free(state);
}

static void *get(kiln_context *ctx, const kiln_slot_class *cls) {
    void *state = NULL;
    TEST_OK(kiln_slot_get(ctx, cls, create, (void *)cls, &state));
    return state;
}

static void test_made_once_and_taken(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    creates = 0;
    events[0] = '\0';
    assert_null(kiln_slot_peek(ctx, &release_a));
    void *a = get(ctx, &release_a);
    assert_ptr_equal(get(ctx, &release_a), a);
    assert_ptr_equal(kiln_slot_peek(ctx, &release_a), a);
    assert_int_equal(creates, 1);
    /* emptied, then made again in the same slot */
    assert_ptr_equal(kiln_slot_take(ctx, &release_a), a);
    free(a);
    assert_null(kiln_slot_peek(ctx, &release_a));
    assert_null(kiln_slot_take(ctx, &release_a));
    void *again = NULL;
    TEST_FAILS_WITH(kiln_slot_get(ctx, &release_a, create_fails, NULL, &again), KILN_ERR_INTERNAL,
                    "the test's create fails");
    assert_null(kiln_slot_peek(ctx, &release_a));
    a = get(ctx, &release_a);
    assert_int_equal(creates, 2);
    kiln_close(ctx);
    assert_string_equal(events, "close:A"); /* taken by its on_close: no destroy */
}

static void test_close_order(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    events[0] = '\0';
    /* created A, B, C, D, E: closed by stage (B; C; then D, A newest
     * first), destroyed newest first (A emptied itself) */
    get(ctx, &release_a);
    get(ctx, &stop_b);
    get(ctx, &report_c);
    get(ctx, &release_d);
    get(ctx, &destroy_only_e);
    kiln_close(ctx);
    assert_string_equal(events, "close:B close:C close:D close:A destroy:E destroy:D destroy:C destroy:B");
}

static void test_destroy_waits_for_the_last_reference(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    events[0] = '\0';
    get(ctx, &report_c);
    kiln_context_retain(ctx); /* as an object made on it would */
    kiln_close(ctx);
    assert_string_equal(events, "close:C");
    kiln_context_release(ctx);
    assert_string_equal(events, "close:C destroy:C");
}

static void test_slots_run_out_with_a_message(void **state) {
    (void)state;
    static kiln_slot_class many[KILN_CONTEXT_SLOTS + 1]; /* distinct addresses, one name */
    for (int k = 0; k <= KILN_CONTEXT_SLOTS; k++)
        many[k] = (kiln_slot_class){"many", KILN_SLOT_CLOSE_RELEASE, NULL, destroy};
    kiln_context *ctx = test_open();
    events[0] = '\0';
    int used = atomic_load(&ctx->nslots), i = 0;
    void *s = NULL;
    for (; used + i < KILN_CONTEXT_SLOTS; i++)
        TEST_OK(kiln_slot_get(ctx, &many[i], create, (void *)&many[i], &s));
    TEST_FAILS_WITH(kiln_slot_get(ctx, &many[i], create, (void *)&many[i], &s), KILN_ERR_INTERNAL,
                    "no free context slot for many");
    kiln_close(ctx);
    int destroyed = 0;
    for (const char *p = events; (p = strstr(p, "destroy:many")); p++) destroyed++;
    assert_int_equal(destroyed, i);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_made_once_and_taken),
        cmocka_unit_test(test_close_order),
        cmocka_unit_test(test_destroy_waits_for_the_last_reference),
        cmocka_unit_test(test_slots_run_out_with_a_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
