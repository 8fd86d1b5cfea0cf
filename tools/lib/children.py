"""Stopping a child process the Python tools started (tools/fake-apns, a private Prometheus): by its
own pid only, never by name, so nothing else on the machine is touched. A tool imports it after
putting tools/lib on sys.path."""

import os
import signal
import subprocess


def stop(process, timeout=10.0):
    """SIGTERM by pid, wait, SIGKILL after `timeout`; returns the exit status."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        return process.wait()
