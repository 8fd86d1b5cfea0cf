#ifndef REGISTRYD_CGLIBCEXTRAS_SHIM_H
#define REGISTRYD_CGLIBCEXTRAS_SHIM_H

/*
 * glibc calls Swift's Glibc module does not import: prctl(2) is C-variadic
 * and <sys/prctl.h> is not in the module, so the one use registryd has is
 * wrapped here with a fixed parameter list.
 */

#include <sys/prctl.h>

/** prctl(PR_SET_DUMPABLE, dumpable): 0 on success, -1 with errno set. */
static inline int registryd_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

#endif
