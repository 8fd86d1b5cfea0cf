/*
 * faultshim: an LD_PRELOAD library that makes ONE I/O call on LMDB's data
 * file fail, so tools/fault-test can check what registryd does after a
 * failed commit. Inert unless armed; never used by the product.
 *
 * Build: cc -shared -fPIC -O2 -o faultshim.so faultshim.c -ldl
 *
 * Environment (read once, at the first intercepted call):
 *   FAULTSHIM_OP       sync  : fdatasync/fsync on the data file fail
 *                      write : a page write (pwrite/pwrite64/write/writev/pwritev)
 *                              on the data file's plain fd fails
 *                      meta  : the meta-page write (the data file's O_DSYNC fd) fails
 *   FAULTSHIM_ERRNO    EIO (default) or ENOSPC
 *   FAULTSHIM_TRIGGER  a path: the shim is armed once this file exists
 *                      (unset: armed from the start)
 *   FAULTSHIM_SKIP     matching calls to let through after arming (default 0)
 *   FAULTSHIM_FILE     the file name to hit (default "data.mdb")
 *   FAULTSHIM_DELAY_MS the failing call first sleeps this long (default 0), as a
 *                      dying disk does before it reports EIO; it also gives
 *                      concurrent requests time to queue behind the failing commit
 *   FAULTSHIM_LOG      a path: one line per event (fired, and every later
 *                      successful sync or write on the data file), with
 *                      CLOCK_MONOTONIC nanoseconds, so the driver can compare
 *                      them with its own time.monotonic_ns()
 *
 * Which fd is the data file is decided per call by readlink on
 * /proc/self/fd/N (so a closed and reused fd number is never mistaken),
 * and only once armed. LMDB (0.9.x, mdb.c) writes dirty pages through
 * me_fd with pwrite or writev, syncs it with fdatasync (fsync on some
 * filesystems), then writes the meta page through me_mfd, a second fd on
 * the same file opened with O_DSYNC: `write` and `meta` tell them apart by
 * that flag. Exactly one call fails (compare-and-swap), whatever the thread.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum op_kind { KIND_SYNC, KIND_WRITE };
enum target { TARGET_SYNC, TARGET_WRITE, TARGET_META, TARGET_NONE };

static int configured;          /* 0: not yet, 1: done */
static enum target target = TARGET_NONE;
static int fail_errno = EIO;
static const char *trigger_path;
static const char *log_path;
static const char *file_name = "data.mdb";
static long skip_remaining;
static long delay_ms;
static int armed;               /* set once the trigger file was seen */
static int fired;               /* set by the one call that failed */

static void configure(void) {
    if (__atomic_load_n(&configured, __ATOMIC_ACQUIRE)) return;
    const char *op = getenv("FAULTSHIM_OP");
    if (op && strcmp(op, "sync") == 0) target = TARGET_SYNC;
    else if (op && strcmp(op, "write") == 0) target = TARGET_WRITE;
    else if (op && strcmp(op, "meta") == 0) target = TARGET_META;
    const char *e = getenv("FAULTSHIM_ERRNO");
    if (e && strcmp(e, "ENOSPC") == 0) fail_errno = ENOSPC;
    trigger_path = getenv("FAULTSHIM_TRIGGER");
    log_path = getenv("FAULTSHIM_LOG");
    const char *f = getenv("FAULTSHIM_FILE");
    if (f && *f) file_name = f;
    const char *s = getenv("FAULTSHIM_SKIP");
    skip_remaining = s ? strtol(s, NULL, 10) : 0;
    const char *d = getenv("FAULTSHIM_DELAY_MS");
    delay_ms = d ? strtol(d, NULL, 10) : 0;
    if (!trigger_path) armed = 1;
    __atomic_store_n(&configured, 1, __ATOMIC_RELEASE);
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Appends one line with raw syscalls, so logging never re-enters the shim. */
static void log_line(const char *fmt, ...) {
    if (!log_path) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n <= 0) return;
    if (n >= (int)sizeof line) n = sizeof line - 1;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return;
    syscall(SYS_write, fd, line, (size_t)n);
    syscall(SYS_close, fd);
}

/* 1 when fd is the data file (name match), 0 otherwise. */
static int is_data_file(int fd) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    size_t len = strlen(file_name);
    if ((size_t)n < len + 1) return 0;
    return path[n - len - 1] == '/' && strcmp(path + n - len, file_name) == 0;
}

static int is_dsync(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_DSYNC) == O_DSYNC;
}

static int is_armed(void) {
    if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE)) return 1;
    struct stat st;
    if (trigger_path && stat(trigger_path, &st) == 0) {
        __atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
        log_line("armed t_ns=%lld\n", now_ns());
        return 1;
    }
    return 0;
}

/*
 * Called before each intercepted call. Returns 1 when this call must fail
 * (errno is then set), 0 when it goes through. `name` is for the log.
 */
static int should_fail(int fd, enum op_kind kind, const char *name) {
    configure();
    if (target == TARGET_NONE) return 0;
    if (__atomic_load_n(&fired, __ATOMIC_ACQUIRE)) return 0;
    if (!is_armed()) return 0;
    if (!is_data_file(fd)) return 0;
    int matches;
    switch (target) {
    case TARGET_SYNC: matches = kind == KIND_SYNC; break;
    case TARGET_WRITE: matches = kind == KIND_WRITE && !is_dsync(fd); break;
    case TARGET_META: matches = kind == KIND_WRITE && is_dsync(fd); break;
    default: matches = 0;
    }
    if (!matches) return 0;
    if (__atomic_fetch_sub(&skip_remaining, 1, __ATOMIC_ACQ_REL) > 0) return 0;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&fired, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return 0;
    long long began = now_ns();
    if (delay_ms > 0) {
        struct timespec pause = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
    }
    log_line("fired op=%s fd=%d errno=%s began_ns=%lld t_ns=%lld\n", name, fd,
             fail_errno == ENOSPC ? "ENOSPC" : "EIO", began, now_ns());
    errno = fail_errno;
    return 1;
}

/* After the fault: every successful sync or write on the data file is logged. */
static void after(int fd, const char *name, long long rc) {
    if (!__atomic_load_n(&fired, __ATOMIC_ACQUIRE)) return;
    if (rc < 0 || !is_data_file(fd)) return;
    log_line("after op=%s fd=%d dsync=%d rc=%lld t_ns=%lld\n", name, fd, is_dsync(fd), rc, now_ns());
}

#define REAL(name) \
    static __typeof__(name) *real_##name; \
    if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

int fdatasync(int fd) {
    REAL(fdatasync);
    if (should_fail(fd, KIND_SYNC, "fdatasync")) return -1;
    int rc = real_fdatasync(fd);
    after(fd, "fdatasync", rc);
    return rc;
}

int fsync(int fd) {
    REAL(fsync);
    if (should_fail(fd, KIND_SYNC, "fsync")) return -1;
    int rc = real_fsync(fd);
    after(fd, "fsync", rc);
    return rc;
}

ssize_t write(int fd, const void *buf, size_t count) {
    REAL(write);
    /* stdio and sockets also come here: cheap checks first (see should_fail). */
    if (should_fail(fd, KIND_WRITE, "write")) return -1;
    ssize_t rc = real_write(fd, buf, count);
    after(fd, "write", rc);
    return rc;
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    REAL(pwrite);
    if (should_fail(fd, KIND_WRITE, "pwrite")) return -1;
    ssize_t rc = real_pwrite(fd, buf, count, offset);
    after(fd, "pwrite", rc);
    return rc;
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset) {
    REAL(pwrite64);
    if (should_fail(fd, KIND_WRITE, "pwrite64")) return -1;
    ssize_t rc = real_pwrite64(fd, buf, count, offset);
    after(fd, "pwrite64", rc);
    return rc;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    REAL(writev);
    if (should_fail(fd, KIND_WRITE, "writev")) return -1;
    ssize_t rc = real_writev(fd, iov, iovcnt);
    after(fd, "writev", rc);
    return rc;
}

ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    REAL(pwritev);
    if (should_fail(fd, KIND_WRITE, "pwritev")) return -1;
    ssize_t rc = real_pwritev(fd, iov, iovcnt, offset);
    after(fd, "pwritev", rc);
    return rc;
}
