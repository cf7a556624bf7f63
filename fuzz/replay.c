/* replay.c: runs a fuzz target over files and folders of inputs (its
 * checked-in corpus) without libFuzzer, as an ordinary test in any build
 * (the model is zstd's tests/fuzz/regression_driver.c). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_input.h"

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    uint8_t *buf = malloc(KILN_FUZZ_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, KILN_FUZZ_MAX_BYTES + 1, f) : 0;
    fclose(f);
    if (!buf) return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    int inputs = 0, failures = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "no such input: %s\n", argv[i]);
            failures++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failures += run_file(argv[i]);
            inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            failures += run_file(path);
            inputs++;
        }
        if (d) closedir(d);
    }
    printf("%d inputs replayed, %d unreadable\n", inputs, failures);
    return failures != 0 || inputs == 0;
}
