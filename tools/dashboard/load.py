"""The load tools/dashboard-test puts on registryd, so that every series of its dashboard moves.

- Client:        one keep-alive HTTP/1.1 connection to 127.0.0.1 (JSON in, status and JSON out)
- Fleet:         the users, devices and tokens of the run (tokens derived from their names), and
                 the fake APNs script that gives some of them APNs' refusals
- Load.setup():  registers every device (a few hundred) with a push token, and an update
                 token of one activity on each user's first device
- Load.steady(): for `seconds`, from `threads` threads (each writing its own users' devices):
                 upserts, the sender's reads (a user's devices, users/lookup, the activity
                 fan-out), device reads, stats, a few 4xx (unknown device, wrong credential,
                 stale sequence); every ~0.7 s a notification to a user or the activity; once, a
                 feedback removal and a sweep
Every answer's status is counted; a status outside what the call expects is an error.

Standard library only.
"""

import hashlib
import http.client
import json
import random
import threading
import time
import urllib.parse

ACTIVITY = "match-42"
# Between two requests of one reader: enough traffic for every rate, without taking the machine.
PAUSE = 0.01


class Client:
    def __init__(self, port, timeout=30.0):
        self.port = port
        self.timeout = timeout
        self.connection = None

    def request(self, method, path, body=None, bearer=None):
        headers = {}
        data = None
        if bearer:
            headers["Authorization"] = f"Bearer {bearer}"
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                if self.connection is None:
                    self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                self.connection.request(method, path, body=data, headers=headers)
                answer = self.connection.getresponse()
                payload = answer.read()
                if answer.getheader("Connection", "").lower() == "close":
                    self.close()
                try:
                    document = json.loads(payload) if payload else None
                except ValueError:
                    document = None
                return answer.status, document
            except (http.client.HTTPException, ConnectionError):
                self.close()
                if attempt == 2:
                    raise

    def close(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def token_for(*parts):
    """A 32-byte APNs token (64 hex digits) derived from `parts`."""
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


class Fleet:
    """`users` users of `devices` devices each; device 0 of each user also holds an update token."""

    def __init__(self, users=24, devices=12):
        self.users = [f"user-{u:02d}" for u in range(users)]
        self.devices = [f"device-{d:02d}" for d in range(devices)]

    def environment(self, device):
        return "sandbox" if device.endswith(("1", "3")) else "production"

    def push_token(self, user, device):
        return token_for("push", user, device)

    def activity_token(self, user):
        return token_for("activity", user)

    def script(self):
        """tools/fake-apns's script: a 410, a configuration error, a BadDeviceToken in both
        environments, and a 429 then 200; every other token answers 200."""
        return {"tokens": {
            self.push_token(self.users[1], self.devices[0]): [{"status": 410, "reason": "Unregistered", "timestamp": "now"}],
            self.push_token(self.users[2], self.devices[0]): [{"status": 403, "reason": "InvalidProviderToken"}],
            self.push_token(self.users[3], self.devices[0]): [{"status": 400, "reason": "BadDeviceToken"}],
            self.push_token(self.users[4], self.devices[0]): [{"status": 429, "reason": "TooManyRequests", "retryAfter": 1},
                                                              {"status": 200}],
            self.push_token(self.users[5], self.devices[0]): [{"status": 200, "delayMs": 40}],
        }}

    @property
    def feedback_token(self):
        """The token removed through POST /internal/v1/feedback (never the target of a notification)."""
        return self.push_token(self.users[-1], self.devices[-1])


class LoadError(Exception):
    pass


class Load:
    def __init__(self, port, api_key, jwts, fleet):
        self.port = port
        self.api_key = api_key
        self.jwts = jwts
        self.fleet = fleet
        self.statuses = {}
        self.errors = []
        self.lock = threading.Lock()
        self.sequences = {}

    def _count(self, label, status, expected):
        with self.lock:
            self.statuses[(label, status)] = self.statuses.get((label, status), 0) + 1
            if status not in expected and len(self.errors) < 20:
                self.errors.append(f"{label} answered {status}, expected {sorted(expected)}")

    def _call(self, client, label, method, path, body=None, bearer=None, expected=(200,)):
        status, document = client.request(method, path, body, bearer)
        self._count(label, status, set(expected))
        return status, document

    def _next_sequence(self, user, device):
        with self.lock:
            value = self.sequences.get((user, device), 0) + 1
            self.sequences[(user, device)] = value
            return value

    def _register(self, client, user, device):
        body = {"deviceId": device, "pushToken": self.fleet.push_token(user, device),
                "environment": self.fleet.environment(device), "osVersion": "18.2", "appVersion": "2.1.0",
                "sequence": self._next_sequence(user, device)}
        self._call(client, "register", "POST", "/v1/devices", body, self.jwts[user], (200, 201))

    def setup(self, threads=4):
        """Every device of every user, then the activity tokens; returns the number of registrations."""
        pairs = [(user, device) for user in self.fleet.users for device in self.fleet.devices]

        def work(share):
            client = Client(self.port)
            try:
                for user, device in share:
                    self._register(client, user, device)
            finally:
                client.close()

        self._in_threads(work, [pairs[i::threads] for i in range(threads)])
        client = Client(self.port)
        try:
            for user in self.fleet.users:
                self._call(client, "activity token", "POST", f"/v1/activities/{ACTIVITY}/activity-token",
                           {"deviceId": self.fleet.devices[0], "token": self.fleet.activity_token(user)},
                           self.jwts[user])
        finally:
            client.close()
        self._check()
        return len(pairs)

    def steady(self, seconds, threads=3):
        """Mixed traffic for `seconds`, plus notifications, one feedback removal and one sweep."""
        stop = time.monotonic() + seconds
        notifications = []

        def reader(seed):
            # Each reader writes only its own users' devices, so their sequences rise in order.
            rng = random.Random(seed)
            own = self.fleet.users[seed::threads]
            client = Client(self.port)
            try:
                while time.monotonic() < stop:
                    self._one_request(client, rng, own)
                    time.sleep(PAUSE)
            finally:
                client.close()

        def sender():
            client = Client(self.port)
            try:
                rounds = 0
                while time.monotonic() < stop:
                    rounds += 1
                    if rounds == 3:
                        self._call(client, "feedback", "POST", "/internal/v1/feedback",
                                   {"token": self.fleet.feedback_token, "reason": "Unregistered",
                                    "timestamp": int(time.time() * 1000)}, self.api_key)
                    if rounds == 5:
                        self._call(client, "sweep", "POST", "/internal/v1/sweep", {}, self.api_key)
                    notifications.append(self._notify(client, rounds))
                    time.sleep(0.7)
            finally:
                client.close()

        self._in_threads(lambda seed: reader(seed) if seed >= 0 else sender(), list(range(threads)) + [-1])
        self._check()
        return [n for n in notifications if n]

    def _notify(self, client, round_number):
        users = self.fleet.users
        if round_number % 4 == 0:
            body = {"target": {"activityId": ACTIVITY},
                    "payload": {"aps": {"event": "update", "timestamp": int(time.time()),
                                        "content-state": {"score": f"{round_number}-1"}}}}
        else:
            # users 1-5 (the scripted answers) first, then the others in turn
            user_round = round_number - round_number // 4
            user = users[1 + (user_round - 1) % (len(users) - 1)]
            body = {"target": {"userId": user}, "payload": {"aps": {"alert": {"title": "Goal!", "body": "2-1"}}},
                    "collapseId": ACTIVITY}
        status, document = self._call(client, "notification", "POST", "/internal/v1/notifications", body,
                                      self.api_key, (202,))
        return (document or {}).get("notification", {}).get("id") if status == 202 else None

    def _one_request(self, client, rng, own):
        users, devices = self.fleet.users, self.fleet.devices
        user = rng.choice(own)
        quoted = urllib.parse.quote(user, safe="")
        pick = rng.random()
        if pick < 0.25:
            self._register(client, user, rng.choice(devices))
        elif pick < 0.45:
            self._call(client, "user devices", "GET", f"/internal/v1/users/{quoted}/devices", bearer=self.api_key)
        elif pick < 0.55:
            self._call(client, "lookup", "POST", "/internal/v1/users/lookup",
                       {"userIds": rng.sample(users, 5)}, self.api_key)
        elif pick < 0.65:
            self._call(client, "activity tokens", "GET", f"/internal/v1/activities/{ACTIVITY}/tokens?limit=500",
                       bearer=self.api_key)
        elif pick < 0.80:
            self._call(client, "own devices", "GET", "/v1/devices", bearer=self.jwts[user])
        elif pick < 0.85:
            self._call(client, "stats", "GET", "/internal/v1/stats", bearer=self.api_key)
        elif pick < 0.90:
            self._call(client, "unknown device", "GET", "/v1/devices/no-such-device", bearer=self.jwts[user],
                       expected=(404,))
        elif pick < 0.95:
            self._call(client, "wrong key", "GET", f"/internal/v1/users/{quoted}/devices", bearer="not-the-key",
                       expected=(401,))
        else:
            device = rng.choice(devices)
            self._call(client, "stale sequence", "POST", "/v1/devices",
                       {"deviceId": device, "sequence": 0, "environment": self.fleet.environment(device)},
                       self.jwts[user], expected=(409,))

    def _in_threads(self, work, arguments):
        failures = []

        def run(argument):
            try:
                work(argument)
            except Exception as error:  # a transport error ends the run with its message
                failures.append(f"{type(error).__name__}: {error}")

        threads = [threading.Thread(target=run, args=(argument,), daemon=True) for argument in arguments]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise LoadError("; ".join(failures[:3]))

    def _check(self):
        if self.errors:
            raise LoadError("unexpected answers: " + "; ".join(self.errors[:5]))

    def summary(self):
        total = sum(self.statuses.values())
        by_status = {}
        for (_, status), n in self.statuses.items():
            by_status[status] = by_status.get(status, 0) + n
        return total, dict(sorted(by_status.items()))
