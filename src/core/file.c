/* file.c: reading the files a source names (includes, dependencies). */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

char *kiln_read_regular_file(const char *path, size_t max_bytes, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= (uint64_t)max_bytes &&
        (buf = malloc((size_t)st.st_size + 1)) != NULL) {
        size_t done = 0;
        while (done < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + done, (size_t)st.st_size - done);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            done += (size_t)r;
        }
        buf[done] = '\0';
        if (size) *size = done;
    }
    close(fd);
    return buf;
}

int kiln_is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
