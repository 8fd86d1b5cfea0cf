"""The one way the tools run registryd (Python 3 standard library only).

- free_port(), free_ports(): loopback TCP ports nobody listens on right now
- build():      `swift build` of registryd (and any other product); returns the bin
                directory (registryd_binary(): registryd's path)
- Registryd:    one `registryd serve` child on 127.0.0.1, its port read from its
                `"event":"listening"` log line (it binds port 0, so no other
                program can take the port between a pick and the bind);
                stopped only through its own pid (SIGTERM, wait, SIGKILL)
- mint_token(), mint_tokens(): device JWTs from `registryd mint-token`,
                signed with the secret the server uses
- internal_api_key(): the internal API key serve generated in DIR/secrets/

Used by tools/bench, tools/crash-test, tools/fault-test, tools/api-fuzz, tools/dashboard-test,
tools/fairness and tools/ha-test. A tool imports it after putting tools/lib
on sys.path.
"""

import concurrent.futures
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWIFT_BIN = "/opt/swift/usr/bin"
LOOPBACK = "127.0.0.1"
# Levels that hide the info-level "listening" line this module waits for.
QUIET_LEVELS = ("warning", "error")


def free_port():
    """One TCP port on 127.0.0.1 that nothing listens on now (bound to port 0, then released)."""
    return free_ports(1)[0]


def free_ports(count, avoid=()):
    """`count` distinct free TCP ports on 127.0.0.1, none of `avoid`.

    Every socket stays bound until all are chosen, so the ports differ from
    each other; another program could still take one before its user binds
    it (that start then fails). A registryd needs none of these: it binds
    port 0 itself.
    """
    held, ports = [], []
    try:
        while len(ports) < count:
            s = socket.socket()
            s.bind((LOOPBACK, 0))
            held.append(s)
            port = s.getsockname()[1]
            if port not in avoid:
                ports.append(port)
    finally:
        for s in held:
            s.close()
    return ports


def swift_environment():
    """os.environ with the toolchain's bin directory on PATH when swift is not found there."""
    environment = dict(os.environ)
    if shutil.which("swift") is None and os.path.isdir(SWIFT_BIN):
        environment["PATH"] = SWIFT_BIN + os.pathsep + environment.get("PATH", "")
    return environment


def build(config="release", products=("registryd",), root=REPO, echo=False, log=None):
    """`swift build -c CONFIG --product P` for each product in `root`; returns the bin directory.

    With `echo`, SwiftPM's output goes to stderr as it comes; without, it is
    kept and only its tail is shown when the build fails. Raises SystemExit
    naming the product that failed.
    """
    environment = swift_environment()
    started = time.monotonic()
    for product in products:
        command = ["swift", "build", "-c", config, "--product", product]
        if log:
            log(f"building {product} ({config}): {' '.join(command)}")
        if echo:
            done = subprocess.run(command, cwd=root, env=environment, stdout=sys.stderr, stderr=sys.stderr)
        else:
            done = subprocess.run(command, cwd=root, env=environment, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if done.returncode != 0:
                sys.stdout.write(done.stdout[-4000:])
        if done.returncode != 0:
            raise SystemExit(f"building {product} ({config}) in {root} failed (exit {done.returncode})")
    bin_dir = subprocess.run(["swift", "build", "-c", config, "--show-bin-path"], cwd=root, env=environment,
                             stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    if log:
        log(f"built in {time.monotonic() - started:.1f} s: {bin_dir}")
    return bin_dir


def registryd_binary(config="release", log=None):
    """Builds registryd alone (quietly) and returns the path of the binary."""
    return os.path.join(build(config, ("registryd",), log=log), "registryd")


def clean_environment(extra=None):
    """os.environ without REGISTRY_* (a developer's settings), FAULTSHIM_* and LD_PRELOAD, plus `extra`."""
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("REGISTRY_", "FAULTSHIM_")) and name != "LD_PRELOAD"}
    environment.update(extra or {})
    return environment


def read_secret(path):
    """A key or secret file's text without its final newline."""
    with open(path, "rb") as f:
        value = f.read()
    return (value[:-1] if value.endswith(b"\n") else value).decode()


def internal_api_key(data_dir):
    """The internal API key `registryd serve` generated in DATA_DIR/secrets/."""
    return read_secret(os.path.join(data_dir, "secrets", "internal-api.key"))


def operator_key(data_dir):
    """The read-only operator key `registryd serve` generated in DATA_DIR/secrets/."""
    return read_secret(os.path.join(data_dir, "secrets", "operator.key"))


def mint_token(binary, data_dir, user, ttl="1h", flags=(), timeout=60):
    """A device JWT for `user` from `registryd mint-token` (HS256, the secret serve uses with the same flags)."""
    command = [binary, "mint-token", "--data-dir", data_dir, "--user", user, "--ttl", ttl, *flags]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                          env=clean_environment())
    token = done.stdout.strip()
    if done.returncode != 0 or token.count(".") != 2:
        raise RuntimeError(f"registryd mint-token --user {user}: exit {done.returncode}: {done.stderr.strip()}")
    return token


def mint_tokens(binary, data_dir, users, ttl="1h", flags=(), parallel=4):
    """{user: JWT} for every user, one `registryd mint-token` each, `parallel` at once."""
    users = list(users)
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        tokens = pool.map(lambda user: mint_token(binary, data_dir, user, ttl, flags), users)
        return dict(zip(users, tokens))


class Registryd:
    """One `registryd serve` child listening on 127.0.0.1; every stop goes through its pid.

    `flags` go to serve after --data-dir and --listen 127.0.0.1:0; its
    stdout and stderr are appended to `log_path` (a restart may share the
    file: only lines after the start are read). The constructor returns once
    the server logged that it listens (its store is open by then), and
    raises RuntimeError when it exits first or takes longer than
    `start_timeout`. `new_session` keeps a terminal's Ctrl-C from reaching
    it: the tool stops it itself.
    """

    live = set()  # every Registryd still running, so a tool's exit path can stop them

    def __init__(self, binary, data_dir, log_path, flags=(), env=None, cwd=REPO, start_timeout=60.0,
                 new_session=False):
        level = _flag_value(flags, "--log-level") or (env or {}).get("REGISTRY_LOG_LEVEL")
        if level in QUIET_LEVELS:
            raise ValueError(f"--log-level {level} hides the info line that tells the port")
        self.binary = binary
        self.data_dir = data_dir
        self.log_path = log_path
        self.port = None
        self.log_offset = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        self.command = [binary, "serve", "--data-dir", data_dir, "--listen", f"{LOOPBACK}:0", *flags]
        self.spawned_ns = time.time_ns()
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            env=clean_environment(env), cwd=cwd, start_new_session=new_session)
        Registryd.live.add(self)
        started = time.monotonic()
        self._wait_listening(start_timeout)
        self.start_seconds = time.monotonic() - started

    @property
    def pid(self):
        return self.process.pid

    @property
    def url(self):
        return f"http://{LOOPBACK}:{self.port}"

    def _wait_listening(self, timeout):
        deadline = time.monotonic() + timeout
        with open(self.log_path, "rb") as f:
            f.seek(self.log_offset)
            pending = b""
            while time.monotonic() < deadline:
                exited = self.process.poll() is not None
                pending += f.read()
                lines = pending.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if self._take_address(line):
                        return
                if exited:
                    Registryd.live.discard(self)
                    raise RuntimeError(f"registryd exited with {self.process.returncode} before listening "
                                       f"(log: {self.log_path})")
                time.sleep(0.002)
        self.kill()
        raise RuntimeError(f"registryd did not listen within {timeout:.0f} s (log: {self.log_path})")

    def _take_address(self, line):
        """Sets the port from a "listening" log line; False for any other line."""
        try:
            event = json.loads(line)
        except ValueError:
            return False
        if not isinstance(event, dict) or event.get("event") != "listening":
            return False
        host, port = event["address"].rsplit(":", 1)
        if host != LOOPBACK:
            self.kill()
            raise RuntimeError(f"registryd listens on {host}, not loopback")
        self.port = int(port)
        return True

    def alive(self):
        return self.process.poll() is None

    def kill(self):
        """SIGKILL by pid, then reap. Returns the exit status (negative: the signal)."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        status = self.process.wait()
        Registryd.live.discard(self)
        return status

    def terminate(self, timeout=30.0):
        """SIGTERM (drains requests in flight), wait up to `timeout`, else SIGKILL.
        Returns (status, stopped_in_time)."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
        try:
            status = self.process.wait(timeout)
            in_time = True
        except subprocess.TimeoutExpired:
            status = self.kill()
            in_time = False
        Registryd.live.discard(self)
        return status, in_time

    def wait(self, timeout):
        """Waits for the process to end by itself; None on timeout."""
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        Registryd.live.discard(self)
        return status


def stop_all(timeout=30.0):
    """SIGTERM, then SIGKILL after `timeout`, to every Registryd still running."""
    for server in list(Registryd.live):
        try:
            server.terminate(timeout)
        except Exception:
            pass


def kill_all():
    """SIGKILL to every Registryd still running (a test's exit path: nothing left to drain)."""
    for server in list(Registryd.live):
        try:
            server.kill()
        except Exception:
            pass


def describe_status(status):
    if status is None:
        return "still running"
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exit {status}"


def _flag_value(flags, name):
    flags = list(flags)
    for i, flag in enumerate(flags):
        if flag == name and i + 1 < len(flags):
            return flags[i + 1]
        if flag.startswith(name + "="):
            return flag.split("=", 1)[1]
    return None
