"""A private Prometheus (Debian's `prometheus` binary) for tools/dashboard-test, and its HTTP API.

- Prometheus:  one `prometheus` child on 127.0.0.1 with its own configuration and TSDB in a
               folder of the caller's, scraping one registryd every second with the internal
               API key as its bearer credential and evaluating the given rule files every
               second; stopped only through its own pid
- The query helpers return the API's `data` member and raise PrometheusError on an error
  answer, so a caller can name the query that failed.

Standard library only. The configuration is written as JSON, which YAML reads as it is.
"""

import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import children  # tools/lib, on sys.path

LOOPBACK = "127.0.0.1"
BINARY = "prometheus"


class PrometheusError(Exception):
    pass


class Prometheus:
    """`prometheus` on a free loopback port, scraping `target` (host:port) as job "registryd".

    `api_key_file` is read by Prometheus itself (credentials_file), so the key never
    appears in its configuration. The constructor returns once /-/ready answers 200,
    and raises RuntimeError when the process exits first or takes longer than
    `start_timeout`.
    """

    def __init__(self, folder, target, api_key_file, rule_files, port, interval="1s", start_timeout=30.0):
        self.folder = folder
        self.port = port
        self.log_path = os.path.join(folder, "prometheus.log")
        config_path = os.path.join(folder, "prometheus.yml")
        config = {
            "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
            "rule_files": [os.path.abspath(path) for path in rule_files],
            "scrape_configs": [{
                "job_name": "registryd",
                "metrics_path": "/metrics",
                "authorization": {"type": "Bearer", "credentials_file": os.path.abspath(api_key_file)},
                "static_configs": [{"targets": [target]}],
            }],
        }
        with open(config_path, "w") as f:
            json.dump(config, f, indent=2)
        command = [BINARY, f"--config.file={config_path}", f"--storage.tsdb.path={os.path.join(folder, 'tsdb')}",
                   f"--web.listen-address={LOOPBACK}:{port}", "--storage.tsdb.retention.time=1h",
                   "--log.level=warn"]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=folder)
        deadline = time.monotonic() + start_timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode} before it was ready "
                                   f"(log: {self.log_path})")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"prometheus was not ready within {start_timeout:.0f} s (log: {self.log_path})")
            time.sleep(0.1)

    @property
    def url(self):
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def pid(self):
        return self.process.pid

    def stop(self, timeout=10.0):
        """SIGTERM by pid, wait, SIGKILL after `timeout`; returns the exit status."""
        return children.stop(self.process, timeout)

    def api(self, path, **parameters):
        """GET /api/v1/PATH?parameters; the answer's `data`."""
        query = urllib.parse.urlencode(parameters, doseq=True)
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                document = json.load(answer)
        except urllib.error.HTTPError as error:
            try:
                document = json.load(error)
            except ValueError:
                raise PrometheusError(f"HTTP {error.code} from {path}")
        if document.get("status") != "success":
            raise PrometheusError(f"{document.get('errorType')}: {document.get('error')}")
        return document["data"]

    def query(self, expr, at=None):
        """An instant query: the result list."""
        parameters = {"query": expr}
        if at is not None:
            parameters["time"] = f"{at:.3f}"
        return self.api("query", **parameters)["result"]

    def query_range(self, expr, start, end, step):
        """A range query: the matrix's series, each {"metric": {...}, "values": [[t, "v"], ...]}."""
        return self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=step)["result"]

    def label_values(self, label, match):
        return self.api(f"label/{urllib.parse.quote(label)}/values", **{"match[]": match})

    def rule_groups(self):
        return self.api("rules")["groups"]

    def alerts(self):
        return self.api("alerts")["alerts"]

    def last_scrape_time(self, job):
        """When the last sample of `job`'s `up` was taken (epoch seconds), or None."""
        result = self.query(f'timestamp(up{{job="{job}"}})')
        return max((float(series["value"][1]) for series in result), default=None)
