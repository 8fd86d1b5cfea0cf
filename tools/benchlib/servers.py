"""The servers a bench run measures: registryd (started and stopped through tools/lib/registryd.py,
with the bench's keys and no sweep), and a private nginx answering `return 200` (own conf, pid and
logs in WORK/nginx, worker_processes auto), the ceiling of an HTTP server on this machine.
"""

import http.client
import os
import subprocess
import sys
import time

import registryd

from . import keys, procfs
from .run import BenchError, log

FIRST_HEALTHZ_TIMEOUT = 900   # seconds: a large data set takes a while to open


class Server:
    """A started registryd: .process (registryd.Registryd), .url, .pid, .start_ms (spawn to first 200 /healthz)."""

    def __init__(self, process, start_ms):
        self.process = process
        self.start_ms = start_ms

    @property
    def url(self):
        return self.process.url

    @property
    def pid(self):
        return self.process.pid


def start_server(run, data_dir, flags=(), binary=None, log_path=None):
    """registryd serve on DATA_DIR (`binary`: another build's), its log in `log_path` (default DATA_DIR/server.log)."""
    log_path = log_path or os.path.join(data_dir, "server.log")
    serve_flags = keys.serve_flags(run) + ["--sweep-interval", "3650d", *flags]
    try:
        process = registryd.Registryd(binary or run.registryd, data_dir, log_path, serve_flags, cwd=run.repo,
                                      start_timeout=FIRST_HEALTHZ_TIMEOUT)
    except RuntimeError:
        show_log(log_path)
        raise BenchError("registryd did not start")
    run.servers.append(process)
    start_ms = first_healthz_ms(process)
    if start_ms is None:
        show_log(log_path)
        raise BenchError("registryd did not start")
    server = Server(process, start_ms)
    log(f"registryd pid {server.pid} on {server.url}, first /healthz after {start_ms:.1f} ms")
    return server


def first_healthz_ms(process):
    """Milliseconds from spawning registryd to its first 200 on /healthz; None if it never answers."""
    deadline = time.monotonic() + FIRST_HEALTHZ_TIMEOUT
    while time.monotonic() < deadline and process.alive():
        if get_status(process.port, "/healthz") == 200:
            return (time.time_ns() - process.spawned_ns) / 1e6
        time.sleep(0.002)
    return None


def get_status(port, path, timeout=2):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        connection.request("GET", path)
        status = connection.getresponse().status
        connection.close()
        return status
    except (OSError, http.client.HTTPException):
        return None


def show_log(path):
    try:
        with open(path, errors="replace") as f:
            sys.stderr.write(f.read())
    except OSError:
        pass


def stop_server(run, server):
    """SIGTERM, and wait for it to drain and exit."""
    server.process.terminate()
    if server.process in run.servers:
        run.servers.remove(server.process)


NGINX_CONF = """worker_processes auto;
pid {dir}/nginx.pid;
daemon off;
error_log {dir}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {dir}/tmp/body;
  proxy_temp_path {dir}/tmp/proxy;
  fastcgi_temp_path {dir}/tmp/fastcgi;
  uwsgi_temp_path {dir}/tmp/uwsgi;
  scgi_temp_path {dir}/tmp/scgi;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{port};
    location / {{ default_type application/json; return 200 '{{"status":"ok"}}'; }}
  }}
}}
"""


def start_nginx(run):
    """Starts the private nginx; returns its URL. Sets run.nginx (stopped with SIGQUIT at exit)."""
    directory = run.path("nginx")
    os.makedirs(os.path.join(directory, "logs"))
    os.makedirs(os.path.join(directory, "tmp"))
    port = registryd.free_port()
    conf = os.path.join(directory, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(dir=directory, port=port))
    run.nginx = subprocess.Popen([run.nginx_bin, "-p", directory, "-c", conf, "-e",
                                  os.path.join(directory, "logs", "error.log")])
    for _ in range(200):
        status = get_status(port, "/")
        if status is not None and 200 <= status < 300:
            return f"http://127.0.0.1:{port}"
        time.sleep(0.05)
    show_log(os.path.join(directory, "logs", "error.log"))
    raise BenchError("nginx did not start")


def nginx_workers(run):
    """The pids whose memory a nginx row reports: the master's children (its workers), else the master."""
    return procfs.children(run.nginx.pid) or [run.nginx.pid]
