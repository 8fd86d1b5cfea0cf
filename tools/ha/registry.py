"""registryd nodes on the Patroni cluster, their HTTP writers and the check
that every acknowledged write is there (tools/ha-test without --db-only).

Two `registryd serve --store postgres` nodes share one multi-host URL and the
same secrets: the first generates DIR/secrets/{token-keys,internal-api.key,
operator.key,jwt-hs256.secret} on its first start; the second is given those files with
--token-key-file, --internal-api-key-file, --operator-key-file and --jwt-hs256-secret-file.
"""

import datetime
import hashlib
import http.client
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.parse

import registryd  # tools/lib, on sys.path through ha_test.py

REQUEST_TIMEOUT = 10.0   # seconds a writer waits for one answer
DEVICES_PER_USER = 10    # under the default cap of 20 devices per user: nothing is evicted


class RegistryError(Exception):
    pass


def push_token(run_id, user, device, sequence):
    """The push token sent with `sequence`: 64 lowercase hex, unique per (user, device,
    sequence); a token two records sent would move between them (one owner per token)."""
    return hashlib.sha256(("%s/%s/%s/%d" % (run_id, user, device, sequence)).encode()).hexdigest()


class RegistryNode:
    def __init__(self, binary, name, base, url, secrets_from=None, extra_flags=()):
        self.binary = binary
        self.name = name
        self.dir = os.path.join(base, name)
        self.data_dir = os.path.join(self.dir, "data")
        self.port = None   # known once started: registryd binds port 0
        self.url = url
        self.log = os.path.join(self.dir, "registryd.log")
        self.secrets_from = secrets_from   # the node whose generated secrets this one uses
        self.server = None
        self.extra_flags = list(extra_flags)   # e.g. the --apns-* flags of tools/ha-test --delivery

    @property
    def secrets_dir(self):
        return os.path.join(self.data_dir, "secrets")

    def secret_flags(self):
        source = self.secrets_from or self
        return ["--token-key-file", os.path.join(source.secrets_dir, "token-keys"),
                "--internal-api-key-file", os.path.join(source.secrets_dir, "internal-api.key"),
                "--operator-key-file", os.path.join(source.secrets_dir, "operator.key"),
                "--jwt-hs256-secret-file", os.path.join(source.secrets_dir, "jwt-hs256.secret")]

    def serve_flags(self):
        """The first node takes the store from flags; the others from REGISTRY_STORE and
        REGISTRY_POSTGRES_URL (both ways are exercised, and the password stays out of ps)."""
        if self.secrets_from is None:
            return ["--store", "postgres", "--postgres-url", self.url] + self.extra_flags, {}
        return self.secret_flags() + self.extra_flags, {"REGISTRY_STORE": "postgres", "REGISTRY_POSTGRES_URL": self.url}

    def describe(self):
        flags, env = self.serve_flags()
        command = self.server.command if self.server else [self.binary, "serve"] + flags
        shown = " ".join(c if c != self.url else "URL" for c in command[1:])
        extra = " (REGISTRY_STORE=postgres REGISTRY_POSTGRES_URL=URL)" if env else ""
        return "registryd " + shown + extra

    def start(self, started_pids, timeout=30):
        """Starts the node in its own session (the driver stops it) and waits until /healthz answers 200."""
        os.makedirs(self.dir, exist_ok=True)
        flags, env = self.serve_flags()
        deadline = time.monotonic() + timeout
        try:
            self.server = registryd.Registryd(self.binary, self.data_dir, self.log, flags, env=env, cwd=self.dir,
                                              start_timeout=timeout, new_session=True)
        except RuntimeError as e:
            raise RegistryError("registryd %s: %s: %s" % (self.name, e, tail(self.log, 5)))
        self.port = self.server.port
        started_pids.append(("registryd %s" % self.name, self.server.pid))
        while time.monotonic() < deadline:
            if not self.server.alive():
                raise RegistryError("registryd %s exited with %s at start: %s" % (
                    self.name, self.server.process.returncode, tail(self.log, 5)))
            if self.healthz() == 200:
                return
            time.sleep(0.1)
        raise RegistryError("registryd %s: /healthz not 200 %d s after start: %s" % (self.name, timeout, tail(self.log, 5)))

    def healthz(self):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            conn.request("GET", "/healthz")
            status = conn.getresponse().status
            conn.close()
            return status
        except (OSError, http.client.HTTPException):
            return None

    def stop(self, log=print):
        """SIGTERM (drains requests in flight, exit 0), SIGKILL after 15 s."""
        if self.server is None:
            return None
        status, in_time = self.server.terminate(15)
        if not in_time:
            log("registryd %s (pid %d) still running 15 s after SIGTERM; SIGKILL" % (self.name, self.server.pid))
        return status


def tail(path, lines):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(line.rstrip() for line in f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def log_entries(node, containing=None):
    """The JSON objects of a node's log, line by line (only lines holding
    `containing`, when given, are parsed); none when the log cannot be read."""
    try:
        with open(node.log, errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return
    for line in lines:
        if containing is not None and not any(text in line for text in containing):
            continue
        try:
            yield json.loads(line)
        except ValueError:
            continue


def log_causes(nodes):
    """registryd's own account of its errors: [(epoch seconds, node, cause)] from
    each node's JSON log lines of level error (a 503's reason among them)."""
    found = []
    for node in nodes:
        for entry in log_entries(node):
            if entry.get("level") != "error":
                continue
            reason = str(entry.get("reason", entry.get("error", entry.get("msg", ""))))
            if "40001" in reason or "40P01" in reason:
                cause = "serialization failure/deadlock (40001/40P01) after the pool's retries"
            elif "connectFailed" in reason and "read-only" in reason:
                cause = "no read-write server among the hosts yet (connect failed, read-only)"
            elif "connectFailed" in reason:
                cause = "connect failed (%s)" % ("refused" if "refused" in reason else re.sub(r"\d+", "N", reason)[:50])
            elif "commitOutcomeUnknown" in reason:
                cause = "connection lost during COMMIT (outcome unknown)"
            else:
                cause = re.sub(r"\d+", "N", "%s: %s" % (entry.get("event", "?"), reason))[:90]
            try:
                at = datetime.datetime.strptime(entry["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=datetime.timezone.utc).timestamp()
            except (KeyError, ValueError):
                continue
            if entry.get("during"):   # delivery_sender_error: what the sender was doing
                cause = "%s: %s" % (re.sub(r"\d+", "N", str(entry["during"])), cause)
            found.append((at, node.name, "%s %s: %s" % (node.name, entry.get("event", "?"), cause)))
    return found


def mint_token(node, user):
    """A device JWT for `user` signed with the HS256 secret every node is given."""
    try:
        return registryd.mint_token(node.binary, node.data_dir, user, ttl="2h", flags=[
            "--jwt-hs256-secret-file", os.path.join(node.secrets_dir, "jwt-hs256.secret")], timeout=30)
    except RuntimeError as e:
        raise RegistryError(str(e))


def classify_http_error(error):
    if isinstance(error, ConnectionRefusedError):
        return "http connect refused"
    if isinstance(error, (socket.timeout, TimeoutError)):
        return "http timeout (%.0f s)" % REQUEST_TIMEOUT
    if isinstance(error, (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected)):
        return "http connection closed without an answer"
    return "http %s" % type(error).__name__


class HTTPWriter(threading.Thread):
    """Launch upserts (POST /v1/devices) of one user's devices, alternating
    between the registryd nodes; each device's sequence only grows and each
    write carries a new push token."""

    def __init__(self, index, nodes, jwt, run_id, recorder, stop):
        super().__init__(name="http-writer-%d" % index, daemon=True)
        self.index = index
        self.user = "ha-user-%d" % index
        self.nodes = nodes
        self.jwt = jwt
        self.run_id = run_id
        self.recorder = recorder
        self.stop = stop
        self.connections = {}

    def connection(self, node):
        conn = self.connections.get(node.name)
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=REQUEST_TIMEOUT)
            self.connections[node.name] = conn
        return conn

    def drop(self, node):
        conn = self.connections.pop(node.name, None)
        if conn is not None:
            conn.close()

    def run(self):
        n = 0
        while not self.stop.is_set():
            n += 1
            node = self.nodes[(self.index + n) % len(self.nodes)]
            device = "d%d" % (n % DEVICES_PER_USER)
            body = json.dumps({"deviceId": device, "pushToken": push_token(self.run_id, self.user, device, n),
                               "platform": "apns", "sequence": n})
            start = time.monotonic()
            reused = node.name in self.connections
            try:
                conn = self.connection(node)
                conn.request("POST", "/v1/devices", body=body, headers={
                    "Authorization": "Bearer " + self.jwt, "Content-Type": "application/json"})
                response = conn.getresponse()
                payload = response.read()
                end = time.monotonic()
                if 200 <= response.status < 300:
                    self.recorder.ack((self.user, device), n, start, end)
                else:
                    code = ""
                    try:
                        code = json.loads(payload)["error"]["code"]
                    except Exception:
                        pass
                    self.recorder.error("%s: HTTP %d %s" % (node.name, response.status, code), start, end)
                    if response.status == 503:
                        self.stop.wait(0.05)
                    if response.getheader("Connection", "").lower() == "close":
                        self.drop(node)
            except (OSError, http.client.HTTPException) as e:
                kind = classify_http_error(e)
                if reused and "closed" in kind:
                    kind += " (a reused keep-alive connection)"
                self.recorder.error("%s: %s" % (node.name, kind), start, time.monotonic())
                self.drop(node)
                self.stop.wait(0.05)
        for name in list(self.connections):
            self.connections.pop(name).close()


def internal_devices(node, api_key, user):
    conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=30)
    conn.request("GET", "/internal/v1/users/%s/devices" % urllib.parse.quote(user, safe=""),
                 headers={"Authorization": "Bearer " + api_key})
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    if response.status != 200:
        raise RegistryError("GET /internal/v1/users/%s/devices on %s: HTTP %d %s" % (
            user, node.name, response.status, payload[:200]))
    return json.loads(payload)["devices"]


def verify_acknowledged(nodes, api_key, acked, run_id):
    """Every acknowledged (user, device) at or past its acknowledged sequence,
    holding the push token sent with the stored sequence. Each user is read
    from both nodes (they share one database). Returns (lost, wrong):
    lost = [(user, device, acked sequence, stored sequence or None, node)],
    wrong = [(user, device, what is wrong, node)]."""
    lost, wrong = [], []
    users = sorted({user for user, _ in acked})
    for node in nodes:
        for user in users:
            views = {v["deviceId"]: v for v in internal_devices(node, api_key, user)}
            for (u, device), sequence in sorted(acked.items()):
                if u != user:
                    continue
                view = views.get(device)
                stored = None if view is None else view.get("sequence")
                if stored is None or stored < sequence:
                    lost.append((user, device, sequence, stored, node.name))
                    continue
                expected = push_token(run_id, user, device, stored)
                if view.get("pushToken") != expected:
                    wrong.append((user, device, "sequence %d holds another push token than the one sent with it" % stored,
                                  node.name))
    return lost, wrong


def run_check(binary, node, leader_url, timeout=180):
    """`registryd check --store postgres --postgres-url URL` (the leader's own URL), with
    the shared token keys; returns (exit status or None, its output)."""
    command = [binary, "check", "--store", "postgres", "--postgres-url", leader_url,
               "--data-dir", node.data_dir, "--token-key-file", os.path.join(node.secrets_dir, "token-keys")]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout
    return result.returncode, (result.stdout + result.stderr).strip()
