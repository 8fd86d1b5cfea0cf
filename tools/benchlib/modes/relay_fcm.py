"""--relay's FCM and mixed parts: tools/fake-fcm, its access token, the Android users, their bodies.

Beside the loader's data set (every device APNs), `registryd import` writes two groups of users in
export lines (the format of `registryd export`; Tests/registrydTests/DeliveryServing.swift's
importFCMTokens):

  FCM users    f00000000 ... (TOKENS of them, default 10,000), device "a0", platform fcm, one FCM
               registration token each (FCM's shape: an instance id, ":APA91b", 136 more characters)
  mixed users  m00000000 ... (TOKENS / 10 of them, default 1,000), devices d0-d4 APNs (distinct
               64-hex push tokens, production) and d5-d9 FCM: one {"userIds": [...]} target of
               1,000 of them (the API's limit per notification) is TOKENS tokens, half each

An FCM fan-out is TOKENS / 1,000 notifications of 1,000 FCM users each, posted back to back (the
largest userIds target is 1,000 users, and each holds one Android device); a mixed fan-out is one
notification to every mixed user. tools/fake-fcm (no script: every send 200; no log) runs at the
fake APNs' niceness, on the fake APNs' certificate folder (one CA for both), with the service
account `tools/fake-fcm --make-service-account` wrote; registryd gets --fcm-service-account
default=FILE, --fcm-url and --fcm-token-url on the fake, --fcm-ca-file its CA. h2load measures the
fake's ceiling: -c 1 -m STREAMS (the fake's SETTINGS_MAX_CONCURRENT_STREAMS, 100 by default;
registryd's client keeps up to 1000 requests in flight, and libcurl opens as many streams as the
server allows) on messages:send, with an access token the bench gets from the fake's /token
(an RS256 JWT-bearer assertion signed with `openssl dgst -sha256 -sign`, standard library otherwise)
and the body registryd sends for one token.
"""

import base64
import json
import os
import ssl
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import children  # tools/lib

from .. import TOOLS
from ..run import BenchError, log

FAKE = os.path.join(TOOLS, "fake-fcm")
STREAMS = 100                 # tools/fake-fcm's SETTINGS_MAX_CONCURRENT_STREAMS (its default)
USERS_PER_NOTIFICATION = 1000  # the API's limit of a {"userIds": [...]} target
MIXED_APNS, MIXED_FCM = 5, 5  # devices of each mixed user (the API's cap is 20 devices per user)
FCM_BODY = {"data": {"score": "2-1", "minute": "67"}}
APNS_ALERT = {"aps": {"alert": {"title": "Goal!", "body": "2-1"}}}
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def fcm_user(i):
    return f"f{i:08d}"


def mixed_user(i):
    return f"m{i:08d}"


def fcm_token(k):
    """An FCM registration token: an instance id, ':APA91b', then 136 hex characters (154 in all)."""
    return f"f{k:010d}:APA91b" + f"{k:08x}" * 17


def apns_token(k):
    """A 64-hex APNs token of its own prefix (the loader's are a1, b2, c3, d4)."""
    return f"e5{k:062x}"


class Population:
    """The imported users: .fcm_users, .mixed_users, and the bodies of each fan-out."""

    def __init__(self, tokens):
        self.fcm_users = tokens
        self.mixed_users = max(1, tokens // (MIXED_APNS + MIXED_FCM))

    @property
    def mixed_tokens(self):
        return self.mixed_users * (MIXED_APNS + MIXED_FCM)

    def fcm_bodies(self):
        """The FCM fan-out: notifications of up to 1,000 FCM users each."""
        bodies = []
        for start in range(0, self.fcm_users, USERS_PER_NOTIFICATION):
            users = [fcm_user(i) for i in range(start, min(start + USERS_PER_NOTIFICATION, self.fcm_users))]
            bodies.append(json.dumps({"target": {"userIds": users}, "appId": "default", "fcm": FCM_BODY}))
        return bodies

    def mixed_bodies(self):
        """The mixed fan-out: one notification to every mixed user (at most 1,000), both bodies."""
        users = [mixed_user(i) for i in range(min(self.mixed_users, USERS_PER_NOTIFICATION))]
        return [json.dumps({"target": {"userIds": users}, "appId": "default", "payload": APNS_ALERT,
                            "fcm": FCM_BODY})]


def export_line(user, device, platform, token, now_ms):
    return json.dumps({"device": {
        "userId": user, "deviceId": device, "platform": platform, "environment": "production",
        "osVersion": "14" if platform == "fcm" else "18.2", "appVersion": "2.1.0", "createdAt": now_ms,
        "lastSeenAt": now_ms, "sequence": None,
        "pushToken": {"token": token, "environment": "production", "updatedAt": now_ms},
        "pushToStartToken": None, "activityTokens": []}}, separators=(",", ":")) + "\n"


def import_users(run, data, population):
    """`registryd import` of the FCM and mixed users into DATA (before registryd serves it); seconds."""
    path = run.path("fcm-users.jsonl")
    now_ms = int(time.time() * 1000)
    with open(path, "w") as f:
        for i in range(population.fcm_users):
            f.write(export_line(fcm_user(i), "a0", "fcm", fcm_token(i), now_ms))
        for i in range(population.mixed_users):
            for d in range(MIXED_APNS + MIXED_FCM):
                k = i * (MIXED_APNS + MIXED_FCM) + d
                if d < MIXED_APNS:
                    f.write(export_line(mixed_user(i), f"d{d}", "apns", apns_token(k), now_ms))
                else:
                    f.write(export_line(mixed_user(i), f"d{d}", "fcm", fcm_token(1_000_000 + k), now_ms))
    lines = population.fcm_users + population.mixed_tokens
    log(f"registryd import: {population.fcm_users:,} FCM users (one FCM token each) and "
        f"{population.mixed_users:,} mixed users ({MIXED_APNS} APNs + {MIXED_FCM} FCM devices each)")
    started = time.monotonic()
    done = subprocess.run([run.registryd, "import", "--data-dir", data, "--from", path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0 or f"imported {lines} records" not in done.stdout:
        raise BenchError(f"registryd import failed: {done.stdout[-500:]}{done.stderr[-1500:]}")
    log(f"  {done.stdout.strip()} in {seconds:.2f} s")
    return seconds


class FakeFCM:
    """One tools/fake-fcm on 127.0.0.1 (its port from --ready-file), at niceness `nice`."""

    def __init__(self, run, work, cert_dir, nice):
        os.makedirs(work, exist_ok=True)
        account_dir = os.path.join(work, "account")
        subprocess.run([FAKE, "--make-service-account", account_dir], stdout=subprocess.DEVNULL, check=True)
        self.account_file = os.path.join(account_dir, "service-account.json")
        with open(self.account_file) as f:
            self.account = json.load(f)
        self.cert_dir = cert_dir
        ready = os.path.join(work, "fake-fcm.ready")
        self.stderr_path = os.path.join(work, "fake-fcm.stderr")
        command = ["nice", "-n", str(nice), FAKE, "--cert-dir", cert_dir, "--service-account", self.account_file,
                   "--ready-file", ready, "--max-streams", str(STREAMS)]
        with open(self.stderr_path, "w") as stderr:
            self.process = run.spawn(command, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr)
        deadline = time.monotonic() + 30
        while not os.path.exists(ready):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise BenchError(f"tools/fake-fcm did not start (see {self.stderr_path})")
            time.sleep(0.02)
        with open(ready) as f:
            self.port = json.load(f)["port"]
        log(f"fake FCM pid {self.pid}: {self.url}")

    @property
    def pid(self):
        return self.process.pid

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self):
        return os.path.join(self.cert_dir, "ca.pem")

    @property
    def send_path(self):
        return f"/v1/projects/{self.account['project_id']}/messages:send"

    def stop(self):
        return children.stop(self.process)

    def access_token(self):
        """An access token from the fake's /token: the JWT-bearer grant, RS256 signed with openssl."""
        audience = f"{self.url}/token"
        now = int(time.time())
        header = _b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": self.account["private_key_id"]},
                                 separators=(",", ":")).encode())
        claims = _b64(json.dumps({"iss": self.account["client_email"], "scope": SCOPE, "aud": audience,
                                  "iat": now, "exp": now + 3600}, separators=(",", ":")).encode())
        signing_input = f"{header}.{claims}"
        fd, key_file = tempfile.mkstemp(prefix="sa-key.", dir=os.path.dirname(self.account_file))
        try:
            os.write(fd, self.account["private_key"].encode())
            os.close(fd)
            signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_file],
                                       input=signing_input.encode(), stdout=subprocess.PIPE, check=True).stdout
        finally:
            os.remove(key_file)
        form = urllib.parse.urlencode({"grant_type": GRANT, "assertion": f"{signing_input}.{_b64(signature)}"})
        request = urllib.request.Request(audience, data=form.encode(),
                                         headers={"content-type": "application/x-www-form-urlencoded"})
        context = ssl.create_default_context(cafile=self.ca_file)
        try:
            with urllib.request.urlopen(request, context=context, timeout=30) as answer:
                return json.load(answer)["access_token"]
        except (OSError, ValueError, KeyError) as error:
            raise BenchError(f"the fake FCM's /token refused the bench's grant: {error}")


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def delivery_flags(fake, request_timeout):
    return ["--fcm-service-account", f"default={fake.account_file}", "--fcm-url", fake.url,
            "--fcm-token-url", f"{fake.url}/token", "--fcm-ca-file", fake.ca_file,
            "--fcm-request-timeout", request_timeout]


def h2load_command(run, fake, requests):
    """h2load as registryd sends to FCM: one connection, STREAMS streams, its headers and one token's body."""
    body = run.path("fcm-body.json")
    message = {"message": {"token": fcm_token(0), "android": {"ttl": "3599s"}, **FCM_BODY}}
    with open(body, "w") as f:
        json.dump(message, f, separators=(",", ":"))
    return ["h2load", "-n", str(requests), "-c", "1", "-m", str(STREAMS),
            "-H", f"authorization: Bearer {fake.access_token()}",
            "-H", "content-type: application/json; charset=utf-8", "-d", body, fake.url + fake.send_path]
