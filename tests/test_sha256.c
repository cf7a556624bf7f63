/* test_sha256.c: kiln's SHA-256 (core/sha256.h, the disk cache's hash)
 * against FIPS 180-4's examples and against OpenSSL on random inputs of
 * every length around the block and padding boundaries, fed whole and in
 * random pieces. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the includes above first. */
#include <cmocka.h>
// clang-format on

#include "core/sha256.h"
#include "test_support.h"

static void hex(const unsigned char *d, char *out) {
    for (int i = 0; i < KILN_SHA256_BYTES; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void known_answers(void **state) {
    (void)state;
    static const struct {
        const char *text, *digest;
    } cases[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        unsigned char d[KILN_SHA256_BYTES];
        char h[2 * KILN_SHA256_BYTES + 1];
        kiln_sha256(cases[c].text, strlen(cases[c].text), d);
        hex(d, h);
        assert_string_equal(h, cases[c].digest);
    }
}

static void matches_openssl(void **state) {
    (void)state;
    test_rng rng = test_rng_for(__func__);
    unsigned char *buf = malloc(5000);
    for (size_t n = 0; n < 5000; n += n < 200 ? 1 : 97) {
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)test_uniform(&rng, 0, 256);
        unsigned char want[32], whole[32], pieces[32];
        unsigned int len = 32;
        EVP_Digest(buf, n, want, &len, EVP_sha256(), NULL);
        kiln_sha256(buf, n, whole);
        kiln_sha256_ctx h;
        kiln_sha256_init(&h);
        for (size_t at = 0; at < n;) {
            size_t take = (size_t)test_uniform(&rng, 0, 150);
            if (take > n - at) take = n - at;
            kiln_sha256_update(&h, buf + at, take);
            at += take;
        }
        kiln_sha256_final(&h, pieces);
        if (memcmp(want, whole, 32) != 0 || memcmp(want, pieces, 32) != 0)
            fail_msg("length %zu: kiln's digest differs from OpenSSL's", n);
    }
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_answers),
        cmocka_unit_test(matches_openssl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
