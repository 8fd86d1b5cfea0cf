"""Shared parts of tools/crash-test and tools/fault-test (Python 3 stdlib only).

Building, starting and stopping registryd and minting its JWTs are
tools/lib/registryd.py's; this module holds what the two drivers add:

- scratch_directory(): a fresh directory on the real disk
- install_exit_handlers(): a signal to the driver kills every server it started
- Connection:     one keep-alive HTTP/1.1 connection to 127.0.0.1
- Workload:       concurrent HTTP writers over loopback; every answer is
                  recorded with what it acknowledged, and a per-device model
                  keeps the latest acknowledged state (plus the one write that
                  may have been in flight when the server died)
- Workload.verify(): reads every device back through the internal API
                  (users/lookup and the activity fan-out) after a restart and
                  compares it with the model

Each writer thread owns its users and devices and sends one request at a
time per device with a strictly increasing `sequence`, tokens are never
reused (no one-owner moves), and users stay under the device cap and
devices under the activity cap, so the expected state of each device
follows from its acknowledged writes alone.
"""

import http.client
import json
import os
import random
import signal
import sys
import threading
import time
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "lib"))
import registryd  # noqa: E402  (the one way to build, start, stop registryd and mint its JWTs)


def log(tool, message):
    print(f"{tool}: {message}", flush=True)


def scratch_directory(prefix):
    """A fresh directory on the real disk (under .build/, which git ignores)."""
    import tempfile
    base = os.path.join(REPO, ".build", "faulttools")
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix=prefix, dir=base)


def install_exit_handlers():
    """SIGTERM/SIGINT/SIGHUP to the driver SIGKILL every server it started (by pid)."""
    def handler(signum, frame):
        registryd.kill_all()
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, handler)


class TransportError(Exception):
    """No HTTP answer: the request may or may not have been applied."""


class Connection:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1."""

    def __init__(self, port, timeout=15.0):
        self.port = port
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, body=None, headers=None):
        headers = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            payload = response.read()
            return response.status, dict((k.lower(), v) for k, v in response.getheaders()), payload
        except (OSError, http.client.HTTPException) as error:
            self.close()
            raise TransportError(f"{type(error).__name__}: {error}") from None

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None


def absent_state():
    return {"present": False, "push": None, "pts": None, "os": None, "seq": None, "acts": {}}


def apply_op(state, provenance, op, write_id):
    """The device state after `op` is applied, with which write set each field."""
    state = {**state, "acts": dict(state["acts"])}
    provenance = dict(provenance)
    kind = op["kind"]
    if kind == "signOut":
        return absent_state(), {"present": write_id, "acts": write_id}
    if not state["present"]:
        state = {**absent_state(), "present": True}
        provenance = {field: write_id for field in ("present", "push", "pts", "os", "seq", "acts")}
    state["seq"] = op["seq"]
    provenance["seq"] = write_id
    if kind == "upsert":
        state["push"], state["os"] = op["token"], op["os"]
        provenance["push"] = provenance["os"] = write_id
    elif kind == "pushToStart":
        state["pts"] = op["token"]
        provenance["pts"] = write_id
    elif kind == "activity":
        state["acts"][op["activity"]] = op["token"]
        provenance["act:" + op["activity"]] = write_id
    return state, provenance


def compare(expected, provenance, observed):
    """Mismatched fields of one device, each with the write that set it."""
    problems = []
    if expected["present"] != observed["present"]:
        problems.append(("present", expected["present"], observed["present"], provenance.get("present")))
    if expected["present"] and observed["present"]:
        for field in ("push", "pts", "os", "seq"):
            if expected[field] != observed[field]:
                problems.append((field, expected[field], observed[field], provenance.get(field)))
    for activity in sorted(set(expected["acts"]) | set(observed["acts"])):
        want, got = expected["acts"].get(activity), observed["acts"].get(activity)
        if want != got:
            problems.append(("activity " + activity, want, got,
                             provenance.get("act:" + activity, provenance.get("acts"))))
    return problems


class Device:
    def __init__(self, user, device_id):
        self.user = user
        self.device_id = device_id
        self.next_seq = 1
        self.state = absent_state()
        self.provenance = {}
        self.in_flight = None   # (op, write id) without an answer: applied or not
        self.pending = []       # acknowledged write ids not yet verified
        self.refused = []       # refused writes (503) since the last verification
        self.blocked = False    # an unanswered write: no more writes until verified


class Workload:
    """Writers, the ledger of every answer, the per-device model, and verification."""

    WEIGHTS = (("upsert", 40), ("pushToStart", 20), ("activity", 25), ("signOut", 15))

    def __init__(self, tool, writers, users_per_writer=4, devices_per_user=8, activities_per_writer=4, seed=None):
        self.tool = tool
        self.random = random.Random(seed)
        self.run = "%08x" % self.random.getrandbits(32)
        self.writers = writers
        self.devices = {}       # (user, deviceId) -> Device
        self.by_writer = []
        self.activities = []
        for w in range(writers):
            owned = []
            for u in range(users_per_writer):
                user = f"{tool}-{self.run}-w{w}-u{u}"
                for d in range(devices_per_user):
                    device = Device(user, f"dev-{d}")
                    self.devices[(user, device.device_id)] = device
                    owned.append(device)
            activities = [f"{tool}-{self.run}-w{w}-a{a}" for a in range(activities_per_writer)]
            self.activities += activities
            self.by_writer.append((owned, activities))
        self.lock = threading.Lock()
        self.token_counter = 0
        self.writes = []        # every write, in the order its answer (or failure) came
        self.refused_tokens = {}
        self.unexpected = []    # (status, body) answers outside the contract's success/503
        self.retry_after_missing = 0
        self.first_refusal_ns = None

    # -- writing -------------------------------------------------------------

    def new_token(self, writer):
        with self.lock:
            self.token_counter += 1
            n = self.token_counter
        return f"{self.run}{writer:04x}{n:052x}"

    def next_op(self, writer, device, activities, rng):
        kinds, weights = zip(*self.WEIGHTS)
        kind = rng.choices(kinds, weights)[0]
        op = {"kind": kind, "seq": device.next_seq}
        device.next_seq += 1
        if kind == "upsert":
            op["token"] = self.new_token(writer)
            op["os"] = f"18.{rng.randrange(100)}"
        elif kind in ("pushToStart", "activity"):
            op["token"] = self.new_token(writer)
            if kind == "activity":
                op["activity"] = rng.choice(activities)
        return op

    @staticmethod
    def request_for(device, op):
        if op["kind"] == "upsert":
            return "POST", "/v1/devices", {"deviceId": device.device_id, "pushToken": op["token"],
                                           "osVersion": op["os"], "appVersion": "1.0", "sequence": op["seq"]}
        if op["kind"] == "pushToStart":
            return "POST", "/v1/devices/push-to-start-token", {
                "deviceId": device.device_id, "token": op["token"], "sequence": op["seq"]}
        if op["kind"] == "activity":
            return "POST", f"/v1/activities/{urllib.parse.quote(op['activity'], safe='')}/activity-token", {
                "deviceId": device.device_id, "token": op["token"], "sequence": op["seq"]}
        return "DELETE", f"/v1/devices/{urllib.parse.quote(device.device_id, safe='')}?sequence={op['seq']}", None

    SUCCESS = {"upsert": (200, 201), "pushToStart": (200,), "activity": (200,), "signOut": (204,)}

    def users(self):
        return sorted({user for user, _ in self.devices})

    def writer_loop(self, writer, port, jwts, stop, label, pause_after_refusal=0.005):
        """Writes until `stop` is set or the server stops answering."""
        rng = random.Random(self.random.getrandbits(64) ^ writer)
        owned, activities = self.by_writer[writer]
        connection = Connection(port)
        try:
            while not stop.is_set():
                candidates = [d for d in owned if not d.blocked]
                if not candidates:
                    return
                device = rng.choice(candidates)
                op = self.next_op(writer, device, activities, rng)
                method, path, body = self.request_for(device, op)
                headers = {"Authorization": "Bearer " + jwts[device.user]}
                record = {"device": (device.user, device.device_id), "op": op, "label": label,
                          "sent_ns": time.monotonic_ns()}
                try:
                    status, response_headers, payload = connection.request(method, path, body, headers)
                except TransportError as error:
                    record.update(outcome="unknown", status=None, received_ns=time.monotonic_ns(), error=str(error))
                    with self.lock:
                        record["id"] = len(self.writes)
                        self.writes.append(record)
                        device.in_flight = (op, record["id"])
                        device.blocked = True
                    return
                record.update(status=status, received_ns=time.monotonic_ns())
                with self.lock:
                    record["id"] = len(self.writes)
                    self.writes.append(record)
                    if status in self.SUCCESS[op["kind"]]:
                        record["outcome"] = "acked"
                        device.state, device.provenance = apply_op(device.state, device.provenance, op, record["id"])
                        device.pending.append(record["id"])
                    elif status == 503:
                        record["outcome"] = "refused"
                        device.refused.append((record["id"], op["kind"]))
                        if "token" in op:
                            self.refused_tokens[op["token"]] = record["id"]
                        if "retry-after" not in response_headers:
                            self.retry_after_missing += 1
                        if self.first_refusal_ns is None:
                            self.first_refusal_ns = record["received_ns"]
                    else:
                        record["outcome"] = "unexpected"
                        self.unexpected.append((status, op["kind"], payload[:200].decode("utf-8", "replace")))
                if record["outcome"] == "refused" and pause_after_refusal:
                    time.sleep(pause_after_refusal)
        finally:
            connection.close()

    def start_writers(self, port, jwts, label):
        """One thread per writer; `jwts` maps each of users() to its device JWT."""
        stop = threading.Event()
        threads = [threading.Thread(target=self.writer_loop, args=(w, port, jwts, stop, label), daemon=True)
                   for w in range(self.writers)]
        for t in threads:
            t.start()
        return stop, threads

    def count(self, outcome, label=None):
        with self.lock:
            return sum(1 for r in self.writes if r.get("outcome") == outcome and (label is None or r["label"] == label))

    # -- reading back --------------------------------------------------------

    def observe(self, port, key):
        """Every device of the workload's users, as the internal API shows it."""
        connection = Connection(port, timeout=60.0)
        auth = {"Authorization": "Bearer " + key}
        users = self.users()
        observed = {}
        extra_fields = []
        try:
            for start in range(0, len(users), 1000):
                status, _, payload = connection.request("POST", "/internal/v1/users/lookup",
                                                        {"userIds": users[start:start + 1000]}, auth)
                if status != 200:
                    raise RuntimeError(f"users/lookup answered {status}: {payload[:200]!r}")
                for user, views in json.loads(payload)["users"].items():
                    for view in views:
                        observed[(user, view["deviceId"])] = {
                            "present": True, "push": view["pushToken"], "pts": view["pushToStartToken"],
                            "os": view["osVersion"], "seq": view["sequence"], "acts": {},
                            "activityCount": view["activityCount"]}
            for activity in self.activities:
                cursor = None
                while True:
                    query = "limit=1000" + (f"&cursor={urllib.parse.quote(cursor, safe='')}" if cursor else "")
                    status, _, payload = connection.request(
                        "GET", f"/internal/v1/activities/{urllib.parse.quote(activity, safe='')}/tokens?{query}",
                        None, auth)
                    if status != 200:
                        raise RuntimeError(f"activity fan-out answered {status}: {payload[:200]!r}")
                    page = json.loads(payload)
                    for entry in page["tokens"]:
                        key_ = (entry["userId"], entry["deviceId"])
                        if key_ not in observed:
                            observed[key_] = {**absent_state(), "activityCount": 0}
                            extra_fields.append(f"{key_}: activity token {activity} without a device record")
                        observed[key_]["acts"][activity] = entry["token"]
                    cursor = page["nextCursor"]
                    if cursor is None:
                        break
            # The per-user read the push sender uses must agree with the batch lookup.
            for user in self.random.sample(users, min(3, len(users))):
                status, _, payload = connection.request(
                    "GET", f"/internal/v1/users/{urllib.parse.quote(user, safe='')}/devices", None, auth)
                if status != 200:
                    raise RuntimeError(f"users/{{u}}/devices answered {status}: {payload[:200]!r}")
                single = {(user, v["deviceId"]): (v["pushToken"], v["pushToStartToken"], v["osVersion"], v["sequence"])
                          for v in json.loads(payload)["devices"]}
                batch = {k: (v["push"], v["pts"], v["os"], v["seq"]) for k, v in observed.items()
                         if k[0] == user and v["present"]}
                if single != batch:
                    extra_fields.append(f"{user}: users/{{u}}/devices and users/lookup disagree")
        finally:
            connection.close()
        for key_, state in observed.items():
            if state["present"] and state["activityCount"] != len(state["acts"]):
                extra_fields.append(f"{key_}: activityCount {state['activityCount']} but "
                                    f"{len(state['acts'])} activity tokens in the fan-out")
        return observed, extra_fields

    def verify(self, port, key):
        """Compares every device with the model. Returns a dict of figures and problem lines.

        A device whose last write had no answer may show that write or not;
        what it shows is then taken as its state. Refused (503) writes must
        not show."""
        observed, problems = self.observe(port, key)
        result = {"verified": 0, "lost": 0, "refused_present": 0, "phantoms": 0, "problems": problems,
                  "devices": len(self.devices), "in_flight_applied": 0, "in_flight_not_applied": 0}
        for key_ in observed:
            if key_ not in self.devices:
                result["phantoms"] += 1
                problems.append(f"{key_}: a device no writer ever touched")
        with self.lock:
            for key_, device in self.devices.items():
                seen = observed.get(key_, absent_state())
                candidates = [(device.state, device.provenance, None)]
                if device.in_flight is not None:
                    op, write_id = device.in_flight
                    state, provenance = apply_op(device.state, device.provenance, op, write_id)
                    candidates.append((state, provenance, write_id))
                mismatches, in_flight_id = min(((compare(s, p, seen), w) for s, p, w in candidates),
                                               key=lambda pair: len(pair[0]))
                lost_ids = set()
                for field, want, got, write_id in mismatches:
                    refused_id = self.refused_tokens.get(got) if isinstance(got, str) else None
                    if field == "present" and got is False:
                        refused_id = next((w for w, kind in device.refused if kind == "signOut"), None)
                    if refused_id is not None:
                        result["refused_present"] += 1
                        problems.append(f"{key_}: {field} shows the effect of write #{refused_id}, "
                                        f"which was answered 503")
                    else:
                        lost_ids.add(write_id)
                        problems.append(f"{key_}: {field} expected {want!r} (write #{write_id}), found {got!r}")
                lost_ids.discard(None)
                lost_ids.discard(in_flight_id)
                # A field last confirmed by an earlier verification that changed since: lost too.
                result["lost"] += 1 if "verified" in lost_ids else 0
                result["lost"] += len([w for w in device.pending if w in lost_ids])
                result["verified"] += len([w for w in device.pending if w not in lost_ids])
                if device.in_flight is not None and not mismatches:
                    result["in_flight_applied" if in_flight_id is not None else "in_flight_not_applied"] += 1
                # What a restarted server shows is the truth from here on.
                device.state = {k: v for k, v in seen.items() if k != "activityCount"}
                device.state.setdefault("acts", {})
                if not device.state["present"]:
                    device.state = absent_state() if not device.state["acts"] else device.state
                device.provenance = {f: "verified" for f in ("present", "push", "pts", "os", "seq", "acts")}
                device.in_flight = None
                device.pending = []
                device.refused = []
                device.blocked = False
        return result
