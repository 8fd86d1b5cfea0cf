"""A private PostgreSQL 15 for a tool's run, through tools/pg-server (Python 3 stdlib only).

- start(directory, durable): initdb and start one in `directory`; returns its URL
- stop(directory): stops it by the pid in its postmaster.pid and removes `directory`

tools/pg-server holds the rules (trust auth on loopback only, a free port,
run as postgres when root); this module only calls it, so tools/bench and
tools/fairness start theirs the same way.
"""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PG_SERVER = os.path.join(REPO, "tools", "pg-server")


def start(directory, durable=True):
    """Starts a fresh server in `directory` (fsync on with `durable`); returns postgresql://…/registry."""
    command = [PG_SERVER, "start", directory] + (["--durable"] if durable else [])
    output = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True).stdout
    return output.strip().splitlines()[-1]


def stop(directory, quiet=False):
    """Stops the server of `directory` and removes it; True when tools/pg-server succeeded.
    Its messages go to stderr, or nowhere when `quiet`."""
    stdout, stderr = (subprocess.DEVNULL, subprocess.DEVNULL) if quiet else (sys.stderr, None)
    return subprocess.run([PG_SERVER, "stop", directory], stdout=stdout, stderr=stderr).returncode == 0
