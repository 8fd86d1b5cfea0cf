"""tools/fake-apns as a child of a Python tool, and provider tokens signed without python3-cryptography
(Python 3 standard library plus the openssl command).

- make_key(dir):        `tools/fake-apns --make-key DIR`: DIR/apns-key.p8 and DIR/apns-key.pub.pem
- FakeAPNs:             one `tools/fake-apns --cert-dir ...` child on 127.0.0.1 (both ports read from
                        its --ready-file); .ca_file, .url(environment), .pid; stop() is SIGTERM by pid
- provider_token():     an APNs provider token (ES256 JWT: kid, iss, iat) signed with the .p8 through
                        `openssl dgst -sha256 -sign`, its DER signature turned into JOSE's raw R||S

Used by tools/bench --relay and tools/dashboard-test. A tool imports it after putting tools/lib on sys.path.
"""

import base64
import json
import os
import subprocess
import time

import children  # tools/lib, on sys.path

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKE = os.path.join(TOOLS, "fake-apns")


def make_key(directory):
    """Writes DIR/apns-key.p8 and DIR/apns-key.pub.pem; returns their paths."""
    subprocess.run([FAKE, "--make-key", directory], stdout=subprocess.DEVNULL, check=True)
    return os.path.join(directory, "apns-key.p8"), os.path.join(directory, "apns-key.pub.pem")


class FakeAPNs:
    """One tools/fake-apns on 127.0.0.1 (production and sandbox listeners on free ports).

    `spawn` starts the command (default subprocess.Popen; a tool passes its own, so the child is
    stopped at its exit too). `nice` runs it at that niceness; `extra` are more flags (`--max-streams N`). The constructor returns once the ready file names both ports; it
    raises RuntimeError when the fake exits first or takes longer than `start_timeout`.
    """

    def __init__(self, work, cert_dir, auth_key=None, team_id=None, key_id=None, topics=(), script=None,
                 log=None, spawn=subprocess.Popen, start_timeout=30.0, nice=0, extra=()):
        os.makedirs(work, exist_ok=True)
        self.ready_file = os.path.join(work, "fake-apns.ready")
        self.stderr_path = os.path.join(work, "fake-apns.stderr")
        self.cert_dir = cert_dir
        command = [FAKE, "--cert-dir", cert_dir, "--ready-file", self.ready_file]
        for flag, value in (("--auth-key", auth_key), ("--team-id", team_id), ("--key-id", key_id),
                            ("--script", script), ("--log", log)):
            if value:
                command += [flag, value]
        for topic in topics:
            command += ["--topic", topic]
        command += list(extra)
        if nice:
            command = ["nice", "-n", str(nice)] + command
        with open(self.stderr_path, "w") as stderr:
            self.process = spawn(command, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr)
        deadline = time.monotonic() + start_timeout
        while not os.path.exists(self.ready_file):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"tools/fake-apns did not start (see {self.stderr_path})")
            time.sleep(0.02)
        with open(self.ready_file) as f:
            self.ports = json.load(f)

    @property
    def pid(self):
        return self.process.pid

    @property
    def ca_file(self):
        return os.path.join(self.cert_dir, "ca.pem")

    def url(self, environment="production"):
        return f"https://127.0.0.1:{self.ports[environment]}"

    def stop(self, timeout=10.0):
        """SIGTERM by pid (GOAWAY, log flushed), wait, SIGKILL after `timeout`; returns the exit status."""
        return children.stop(self.process, timeout)


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _der_integers(der):
    """(r, s) of a DER ECDSA-Sig-Value: SEQUENCE { INTEGER r, INTEGER s } (short or long lengths)."""
    def length(at):
        first = der[at]
        if first < 0x80:
            return first, at + 1
        count = first & 0x7F
        return int.from_bytes(der[at + 1:at + 1 + count], "big"), at + 1 + count

    if der[0] != 0x30:
        raise ValueError("not a DER ECDSA signature")
    _, at = length(1)
    values = []
    for _ in range(2):
        if der[at] != 0x02:
            raise ValueError("not a DER ECDSA signature")
        size, at = length(at + 1)
        values.append(int.from_bytes(der[at:at + size], "big"))
        at += size
    return values


def provider_token(p8_path, team_id, key_id, iat=None):
    """An ES256 provider token {"alg": "ES256", "kid": KID}.{"iss": TEAM, "iat": now} signed with the .p8."""
    header = _b64(json.dumps({"alg": "ES256", "kid": key_id}, separators=(",", ":")).encode())
    claims = _b64(json.dumps({"iss": team_id, "iat": int(time.time()) if iat is None else iat},
                             separators=(",", ":")).encode())
    signing_input = f"{header}.{claims}"
    der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", p8_path], input=signing_input.encode(),
                         stdout=subprocess.PIPE, check=True).stdout
    r, s = _der_integers(der)
    return f"{signing_input}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
