#ifndef REGISTRYD_CGLIBCEXTRAS_SHIM_H
#define REGISTRYD_CGLIBCEXTRAS_SHIM_H

/*
 * glibc calls Swift's Glibc module does not import: prctl(2) and
 * syscall(2) are C-variadic and <sys/prctl.h> is not in the module, so the
 * uses registryd has are wrapped here with fixed parameter lists.
 */

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/** prctl(PR_SET_DUMPABLE, dumpable): 0 on success, -1 with errno set. */
static inline int registryd_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

/**
 * Lowers (or raises) the calling thread's scheduling priority, not the
 * process's: on Linux a nice value belongs to a thread, and setpriority(2)
 * with the thread's own id (gettid, here through syscall(2), which is
 * C-variadic) sets that thread's alone. 0 on success, -1 with errno set.
 */
static inline int registryd_set_thread_niceness(int niceness) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), niceness);
}

#endif
