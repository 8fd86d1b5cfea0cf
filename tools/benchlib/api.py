"""The registryd requests a bench makes itself (besides wrk's): /metrics, stats and the sweep, each
with the internal API key; metric_value() reads a figure from /metrics.
"""

import http.client
import time
import urllib.parse

from .run import BenchError


def connection(server, timeout=60):
    """A keep-alive connection to `server`, for a caller that sends many requests on it."""
    address = urllib.parse.urlparse(server.url)
    return http.client.HTTPConnection(address.hostname, address.port, timeout=timeout)


def request(run, server, method, path, body=None, timeout=60, conn=None):
    """(status, body text) of one request with the internal key, on `conn` when given (left open),
    else on a connection of its own; raises OSError when nothing answers."""
    own = conn is None
    conn = conn or connection(server, timeout)
    headers = {"Authorization": f"Bearer {run.api_key}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace").rstrip("\n")
    finally:
        if own:
            conn.close()


def internal_get(run, server, path):
    """The answer's body, or "" when it is not a 2xx (or nothing answered)."""
    try:
        status, text = request(run, server, "GET", path)
    except (OSError, http.client.HTTPException):
        return ""
    return text if 200 <= status < 300 else ""


def required_get(run, server, path):
    """The answer's body; the run fails when it is not a 2xx."""
    text = internal_get(run, server, path)
    if not text:
        raise BenchError(f"GET {path} failed")
    return text


def sweep(run, server):
    """POST /internal/v1/sweep (waits up to an hour): (first line of the answer, seconds as "%.6f")."""
    started = time.monotonic()
    try:
        status, text = request(run, server, "POST", "/internal/v1/sweep", body="{}", timeout=3600)
    except (OSError, http.client.HTTPException) as error:
        raise BenchError(f"POST /internal/v1/sweep: {error}")
    if not 200 <= status < 300:
        raise BenchError(f"POST /internal/v1/sweep answered {status}")
    return text.split("\n")[0], f"{time.monotonic() - started:.6f}"


def metric_value(metrics, name):
    """The last sample of a metric (any labels) in Prometheus text, or None."""
    value = None
    for line in metrics.splitlines():
        if line.startswith(name):
            words = line.split()
            value = float(words[1]) if len(words) > 1 else value
    return value
