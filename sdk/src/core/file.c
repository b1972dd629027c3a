/* Opening files for reading without hanging: a FIFO with no writer blocks a
 * plain open() for good, and a device (/dev/zero, a tty) reads for ever, so
 * every reader in fovea (the profile loader, the image loaders, the file://
 * sources, the tools) opens through fv__fopen_regular. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

const char *fv__file_kind(unsigned mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

int fv__fopen_regular(const char *path, FILE **out, const char **kind) {
    *out = NULL;
    if (kind) *kind = NULL;
    /* O_NONBLOCK: opening a FIFO returns at once instead of waiting for a
     * writer; it is cleared again before any read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        if (kind) *kind = fv__file_kind(st.st_mode);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return e;
    }
    *out = f;
    return 0;
}
