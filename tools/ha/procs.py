"""Processes for tools/ha-test: watched and stopped by pid.

Standard library only. Every process a run starts is stopped by its own pid
(never by name); a postmaster is found through its data_dir/postmaster.pid,
since it outlives the Patroni that started it. Free ports come from
tools/lib/registryd.py (free_ports, avoiding RESERVED_PORTS).
"""

import os
import signal
import time

# The default ports of etcd, PostgreSQL and Patroni's REST API: never picked,
# so a stray system service cannot be mistaken for ours (or hit by our kills).
RESERVED_PORTS = {2379, 2380, 5432, 8008}


def running(pid):
    """Whether `pid` runs; a zombie (exited, not yet reaped) counts as gone."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_exit(pid, seconds):
    """Waits up to `seconds` for `pid` to exit; True once it is gone."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not running(pid):
            return True
        time.sleep(0.01)
    return not running(pid)


def signal_pid(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def stop_pid(pid, name, first=signal.SIGTERM, grace=10.0, log=print):
    """`first`, then SIGKILL after `grace` seconds; returns once `pid` is gone (or 3 s after the KILL)."""
    if not running(pid):
        return
    signal_pid(pid, first)
    if wait_exit(pid, grace):
        return
    log("%s (pid %d) still running %.0f s after %s; SIGKILL" % (name, pid, grace, signal.Signals(first).name))
    signal_pid(pid, signal.SIGKILL)
    if not wait_exit(pid, 3):
        log("%s (pid %d) did not exit after SIGKILL" % (name, pid))


def children(pid):
    """The pids whose parent is `pid`."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        pass
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                found.append(int(entry))
    return found


def start_time(pid):
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22),
    which tells a process from a later one that reuses its pid; None when gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def postmaster_pid(data_dir):
    """The pid in data_dir/postmaster.pid, only when that process is alive and
    is the postgres of this data_dir (a stale file's pid may have been reused)."""
    try:
        with open(os.path.join(data_dir, "postmaster.pid")) as f:
            pid = int(f.readline().strip())
    except (OSError, ValueError):
        return None
    if not running(pid):
        return None
    try:
        with open("/proc/%d/comm" % pid) as f:
            if f.read().strip() != "postgres":
                return None
    except OSError:
        return None
    if data_dir.rstrip("/") not in cmdline(pid):
        return None
    return pid


def stop_postmaster(data_dir, name, log=print):
    """Fast shutdown (SIGINT), SIGQUIT after 10 s, SIGKILL after 3 more (as tools/pg-server)."""
    pid = postmaster_pid(data_dir)
    if pid is None:
        return
    signal_pid(pid, signal.SIGINT)
    if wait_exit(pid, 10):
        return
    log("%s: postmaster %d still running 10 s after SIGINT; SIGQUIT" % (name, pid))
    signal_pid(pid, signal.SIGQUIT)
    if wait_exit(pid, 3):
        return
    log("%s: postmaster %d still running; SIGKILL" % (name, pid))
    signal_pid(pid, signal.SIGKILL)
    wait_exit(pid, 3)
