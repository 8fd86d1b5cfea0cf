"""One run of tools/bench: its work area (.bench-data.XXXXXX in the repository, on the real disk,
not tmpfs), its log lines, the rows and notes its report is made of, and the cleanup at exit that
stops everything it started (by pid) and removes the work area unless --keep.
"""

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pgserver


class BenchError(Exception):
    """The tool itself failed: printed as `tools/bench: MESSAGE`, exit status 1."""


def log(message):
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclasses.dataclass
class Row:
    """One wrk run as the tables show it; numbers as wrk's script printed them."""
    section: str
    name: str
    rps: str
    p50: str
    p99: str
    non2xx: str
    errors: str
    rss_kib: int
    statuses: str
    note: str
    anon_kib: int
    requests: str

    @property
    def flagged(self):
        return float(self.non2xx) > 0 or float(self.errors) > 0


class Run:
    """What one invocation holds: options, binaries, the work area and what to stop at exit."""

    def __init__(self, options, repo, registryd, registry_bench, nginx_bin):
        self.options = options
        self.repo = repo
        self.registryd = registryd
        self.registry_bench = registry_bench
        self.nginx_bin = nginx_bin
        self.load_at_start = ""
        self.work = tempfile.mkdtemp(prefix=".bench-data.", dir=repo)
        self.keys = os.path.join(self.work, "keys")
        self.rows = []
        self.notes = []            # text blocks, each ending in a newline
        self.children = []         # Popen: loaders and wrk, terminated at exit
        self.servers = []          # registryd.Registryd, SIGTERM at exit
        self.nginx = None          # Popen of nginx's master, SIGQUIT at exit
        self.pg_dir = None         # the private PostgreSQL, stopped at exit (--keep or not)
        self.against_tree = None   # the --against worktree, removed at exit unless --keep
        self.api_key = ""
        self.data_devices = 0      # the loaded data set's size, which registry.lua addresses
        self.sampled_users = 0     # JWTs minted: users 0, stride, 2 * stride, ...
        self.user_stride = 1
        self.big_tokens = 10000    # tokens in activity "big" (the fan-out walk)

    @property
    def duration(self):
        return int(self.options.duration)

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def spawn(self, command, **kwargs):
        """A child process stopped at exit if still running (loaders, wrk)."""
        process = subprocess.Popen(command, **kwargs)
        self.children.append(process)
        return process

    def cleanup(self):
        for process in self.children:
            if process.poll() is None:
                process.terminate()
                process.wait()
        for server in list(self.servers):
            server.terminate()
        self.servers = []
        # The private PostgreSQL server goes after the registryd servers that use it, --keep or not.
        if self.pg_dir:
            if not pgserver.stop(self.pg_dir):
                log(f"could not stop PostgreSQL in {self.pg_dir}")
        self.remove_against_tree()
        if self.nginx is not None and self.nginx.poll() is None:
            self.nginx.send_signal(signal.SIGQUIT)
            self.nginx.wait()
        if self.options.keep:
            log(f"kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    def remove_against_tree(self):
        tree = self.against_tree
        if not tree or not os.path.exists(tree):
            return
        if self.options.keep:
            log(f"kept {tree}")
            return
        removed = subprocess.run(["git", "-C", self.repo, "worktree", "remove", "--force", tree],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        if not removed:
            shutil.rmtree(tree, ignore_errors=True)
            subprocess.run(["git", "-C", self.repo, "worktree", "prune"])
