"""What a bench reads from /proc about the processes it measures: children, memory figures, CPU time.

CPU time is in clock ticks (os.sysconf("SC_CLK_TCK") a second): a process's own (all its threads),
or with `reaped` also that of the children it has waited for.
"""

import os


def stat_fields(pid):
    """The fields of /proc/PID/stat after "pid (comm) ": [state, ppid, ...]; [] when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def children(pid):
    """The pids whose parent is `pid` (as pgrep -P)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(entry)
            if len(fields) > 1 and fields[1] == str(pid):
                found.append(int(entry))
    return sorted(found)


def cpu_ticks(pid, reaped=False):
    """utime + stime (and with `reaped` cutime + cstime) of `pid`; 0 when it is gone."""
    fields = stat_fields(pid)
    if len(fields) < 15:
        return 0
    used = int(fields[11]) + int(fields[12])
    return used + int(fields[13]) + int(fields[14]) if reaped else used


def status_kib(pid, key):
    """A KiB figure (VmHWM, RssAnon) of /proc/PID/status; 0 when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def reset_peaks(pids):
    """Resets VmHWM (the peak RSS) of each process (clear_refs 5)."""
    for pid in pids:
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
