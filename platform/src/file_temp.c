/* Temporary files of fovea's atomic writes (image saves: "<dir>/.<name>.tmp-
 * <pid>-<n>", renamed over the file when complete).
 *
 * The SDK installs no signal handlers. Instead, every temporary being
 * written is listed here, so that a program's own handler can remove them
 * (fv_file_temporaries_remove, async-signal-safe); and a temporary left by
 * a process that no longer exists (SIGKILL, a crash, a power cut) is
 * removed by the next save into the same directory. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include "platform_internal.h"

#define SLOTS    32
#define PATH_CAP 4096

static char slot_path[SLOTS][PATH_CAP];
static volatile sig_atomic_t slot_state[SLOTS]; /* 0 free, 1 being set, 2 listed */

int fv__temp_listed(const char *tmp) {
    if (strlen(tmp) >= PATH_CAP) return -1;
    for (int i = 0; i < SLOTS; i++) {
        sig_atomic_t expect = 0;
        if (!__atomic_compare_exchange_n(&slot_state[i], &expect, 1, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_RELAXED))
            continue;
        strcpy(slot_path[i], tmp);
        __atomic_store_n(&slot_state[i], 2, __ATOMIC_RELEASE);
        return i;
    }
    return -1; /* more saves at once than slots: this one is not listed */
}

void fv__temp_unlisted(int slot) {
    if (slot >= 0 && slot < SLOTS) __atomic_store_n(&slot_state[slot], 0, __ATOMIC_RELEASE);
}

void fv_file_temporaries_remove(void) {
    for (int i = 0; i < SLOTS; i++)
        if (__atomic_load_n(&slot_state[i], __ATOMIC_ACQUIRE) == 2) unlink(slot_path[i]);
}

/* ".<name>.tmp-<pid>-<n>": the pid, or 0 when name is not one of ours. */
static long temp_pid(const char *name) {
    if (name[0] != '.') return 0;
    const char *t = strstr(name, ".tmp-");
    while (t && strstr(t + 1, ".tmp-"))
        t = strstr(t + 1, ".tmp-"); /* the last one: names may contain ".tmp-" */
    if (!t || t == name) return 0;
    char *end = NULL;
    errno = 0;
    long pid = strtol(t + 5, &end, 10);
    if (errno || pid <= 0 || *end != '-') return 0;
    const char *n = end + 1;
    if (!*n) return 0;
    for (; *n; n++)
        if (*n < '0' || *n > '9') return 0;
    return pid;
}

/* The directory swept last by this thread: a sequence of saves into one
 * directory reads it once, not once a frame. */
static _Thread_local char swept_dir[PATH_CAP];

void fv__temp_sweep(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[PATH_CAP];
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    if (n >= sizeof dir) return;
    memcpy(dir, path, n);
    dir[n] = 0;
    if (strcmp(dir, swept_dir) == 0) return;
    snprintf(swept_dir, sizeof swept_dir, "%s", dir);
    DIR *d = opendir(n ? dir : ".");
    if (!d) return;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = temp_pid(e->d_name);
        if (pid == 0 || pid == (long)self) continue;
        if (pid > INT_MAX || (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) {
            char p[PATH_CAP + 256];
            snprintf(p, sizeof p, "%s%s", dir, e->d_name);
            unlink(p); /* a process that no longer exists left it */
        }
    }
    closedir(d);
}
