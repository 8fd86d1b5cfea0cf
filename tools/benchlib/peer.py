"""The peer of `--compare-peer`: django-push-notifications (tools/peer/, a minimal Django project with the
library's DRF APNSDeviceViewSet) under gunicorn's sync workers on loopback, on the run's PostgreSQL server
(its own database, "peer"). Its packages are in a virtual environment tools/install-deps --peer makes
(pinned in tools/peer/requirements.txt); nothing of it is part of registryd.

Database.prepare(): the database, Django's migrations and N devices (tools/peer/load.py), then VACUUM
(ANALYZE) and CHECKPOINT; Gunicorn(...): one gunicorn (a worker count of --peer-workers), started until its
API root answers and every worker is up, its CPU (master and workers) and its stop.
"""

import os
import subprocess
import time

import registryd

from . import procfs
from .build import PG_BIN
from .run import BenchError, log
from .servers import get_status, show_log

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT = os.path.join(TOOLS, "peer")
VENV = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "registryd", "peer-venv")
PYTHON = os.path.join(VENV, "bin", "python")
DATABASE = "peer"
PACKAGES = ("django-push-notifications", "Django", "djangorestframework", "psycopg2", "gunicorn")


def installed_versions():
    """"django-push-notifications 3.3.0, Django 5.2.19, ..." from the peer's virtual environment."""
    code = ("from importlib import metadata\n"
            f"print(', '.join(p + ' ' + metadata.version(p) for p in {PACKAGES!r}))")
    done = subprocess.run([PYTHON, "-c", code], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise BenchError(f"the peer's packages are missing from {VENV} (tools/install-deps --peer)")
    return done.stdout.strip()


class Database:
    """The peer's database on the run's PostgreSQL server: .url, .env (for Django), .versions."""

    def __init__(self, run, pg):
        self.run = run
        self.pg = pg
        self.url = pg.url.rsplit("/", 1)[0] + "/" + DATABASE
        self.env = dict(os.environ, PEER_DATABASE_URL=self.url, DJANGO_SETTINGS_MODULE="peer.settings",
                        PYTHONDONTWRITEBYTECODE="1")
        self.versions = installed_versions()

    def prepare(self, size):
        """Django's migrations and `size` devices, then VACUUM (ANALYZE) and CHECKPOINT. Returns (load seconds,
        VACUUM seconds, CHECKPOINT seconds) as "%.1f"."""
        log(f"the peer: database {DATABASE}, Django's migrations, {size} devices through the ORM")
        self.pg.psql(f"CREATE DATABASE {DATABASE}")
        output = self.run.path("peer-load.out")
        with open(output, "w") as f:
            done = subprocess.run([PYTHON, os.path.join(PROJECT, "load.py"), str(size)], cwd=PROJECT, env=self.env,
                                  stdout=subprocess.PIPE, stderr=f, text=True)
        line = next((l for l in done.stdout.splitlines() if l.startswith("PEER ")), None)
        if done.returncode != 0 or line is None:
            show_log(output)
            raise BenchError("tools/peer/load.py failed")
        loaded = dict(field.split("=", 1) for field in line.split()[1:])
        if int(loaded["devices"]) != size:
            raise BenchError(f"the peer's database holds {loaded['devices']} devices, not {size}")
        vacuum = self.timed("VACUUM (ANALYZE)")
        checkpoint = self.timed("CHECKPOINT")
        log(f"the peer: {size} devices in {loaded['seconds']} s, VACUUM (ANALYZE) {vacuum} s, CHECKPOINT {checkpoint} s")
        return loaded["seconds"], vacuum, checkpoint

    def timed(self, sql):
        started = time.monotonic()
        done = subprocess.run([os.path.join(PG_BIN, "psql"), self.url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql],
                              stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            raise BenchError(f"psql failed on the peer's database: {sql}")
        return f"{time.monotonic() - started:.1f}"


class Gunicorn:
    """The peer served by gunicorn with `workers` sync workers: .url, .pid (the master), .workers."""

    def __init__(self, run, database, workers):
        self.run = run
        self.workers = workers
        port = registryd.free_port()
        self.log_path = run.path(f"peer-gunicorn-{workers}.log")
        command = [os.path.join(VENV, "bin", "gunicorn"), "--workers", str(workers), "--worker-class", "sync",
                   "--preload", "--bind", f"127.0.0.1:{port}", "--no-control-socket", "--error-logfile",
                   self.log_path, "peer.wsgi:application"]
        self.process = run.spawn(command, cwd=PROJECT, env=database.env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            if get_status(port, "/") == 200 and len(procfs.children(self.process.pid)) == workers:
                self.url = f"http://127.0.0.1:{port}"
                log(f"the peer: gunicorn pid {self.pid} on {self.url}, {workers} sync workers")
                return
            time.sleep(0.05)
        show_log(self.log_path)
        raise BenchError("the peer's gunicorn did not start")

    @property
    def pid(self):
        return self.process.pid

    def worker_pids(self):
        return procfs.children(self.pid) or [self.pid]

    def ticks(self):
        """CPU ticks of gunicorn: the master (and workers it reaped) and every live worker."""
        return procfs.cpu_ticks(self.pid, reaped=True) + sum(procfs.cpu_ticks(c) for c in procfs.children(self.pid))

    def stop(self):
        """SIGTERM to the master: its idle workers finish and exit."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
