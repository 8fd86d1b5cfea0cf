"""tools/ha-test --delivery: one activity fan-out through the fake APNs while
the leaders are killed.

Both registryd nodes get the same --apns-* flags, pointed at ONE
tools/fake-apns (its key and CA in BASE/apns/). N activity tokens of
activity m1 (user uI, device dI, token token(I), as
Tests/registrydTests/DeliveryServing.swift makes them) are written by
`registryd import --store postgres`; one notification
{"target": {"activityId": "m1"}, "payload": {"aps": {"event": "update"}}}
is posted to the first node. The fake answers every token 200 after
--delivery-delay-ms and advertises --delivery-streams streams per connection,
so the fan-out lasts through the failovers. Afterwards: the notification is
polled until it is resolved and nothing is queued or sending (a dead node's
`sending` claims become `unknown` 2 minutes after they were claimed), every
delivery is read (page by page), and the fake's request log is compared with
them: no token answered 200 twice, every `delivered` delivery answered 200.
"""

import collections
import http.client
import json
import os
import subprocess
import threading
import time

import apnsfake  # tools/lib, on sys.path through ha_test.py
import registry

ACTIVITY = "m1"
TOPIC = "com.example.app"
TEAM_ID = "TEAM123456"
KEY_ID = "KEY1234567"
FINAL = ("delivered", "failed", "unknown", "expired", "cancelled")
STATES = ("queued", "sending") + FINAL
# registryd's --apns-request-timeout: the fake's answers come 6 s after the request
# (--delivery-delay-ms), later on a loaded 2-core machine; 10 s (the default) left
# hundreds of deliveries `unknown` with the fake's 200 on its way.
REQUEST_TIMEOUT = "30s"


def token(i):
    """DeliveryServing.token(i): a 32-byte APNs token, distinct for every i below 2^32."""
    return ("%08x" % i) * 8


class DeliveryError(Exception):
    pass


def request(port, method, path, key, body=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Authorization": "Bearer " + key}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class Delivery:
    def __init__(self, base, tokens, delay_ms, streams, log=print):
        self.dir = os.path.join(base, "apns")
        self.tokens = tokens
        self.delay_ms = delay_ms
        self.streams = streams
        self.say = log
        self.fake = None
        self.request_log = os.path.join(self.dir, "requests.jsonl")
        self.script = os.path.join(self.dir, "script.json")
        self.notification_id = None
        self.t_post = None            # monotonic time of the 202
        self.t_settled = None
        self.first_delivered_at = None
        self.final_counts = None
        self.latest = None            # (monotonic time, counts, resolving) of the monitor's last good read
        self.poll_errors = collections.Counter()
        self.stop_monitor = threading.Event()
        self.monitor = None
        self.nodes = None
        self.key = None
        self.results = {}             # figures for the report
        self.problems = []            # lines of evidence

    # -- setup ------------------------------------------------------------------

    def start_fake(self, started_pids):
        os.makedirs(self.dir, exist_ok=True)
        self.p8, self.pub = apnsfake.make_key(self.dir)
        answer = [{"status": 200, "delayMs": self.delay_ms}]
        with open(self.script, "w") as f:
            json.dump({"tokens": {token(i): answer for i in range(self.tokens)}}, f)
        self.fake = apnsfake.FakeAPNs(self.dir, os.path.join(self.dir, "certs"), auth_key=self.pub, team_id=TEAM_ID,
                                      key_id=KEY_ID, topics=[TOPIC], script=self.script, log=self.request_log,
                                      extra=["--max-streams", str(self.streams)])
        started_pids.append(("fake-apns", self.fake.pid))
        self.say("fake APNs (pid %d) on 127.0.0.1:%d (production), %d streams per connection, every token 200 after %d ms" % (
            self.fake.pid, self.fake.ports["production"], self.streams, self.delay_ms))

    def serve_flags(self):
        return ["--apns-key-file", self.p8, "--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID,
                "--apns-topic", "default=" + TOPIC,
                "--apns-production-url", self.fake.url("production"), "--apns-sandbox-url", self.fake.url("sandbox"),
                "--apns-ca-file", self.fake.ca_file, "--apns-request-timeout", REQUEST_TIMEOUT]

    def import_tokens(self, binary, node, url):
        """`registryd import --store postgres` of N export lines (DeliveryServing.importActivityTokens')."""
        now = int(time.time() * 1000)
        path = os.path.join(self.dir, "records.jsonl")
        with open(path, "w") as f:
            for i in range(self.tokens):
                f.write(json.dumps({"device": {
                    "userId": "u%d" % i, "deviceId": "d%d" % i, "platform": "apns", "environment": "production",
                    "osVersion": None, "appVersion": None, "createdAt": now, "lastSeenAt": now, "sequence": None,
                    "pushToken": None, "pushToStartToken": None,
                    "activityTokens": [{"activityId": ACTIVITY, "token": token(i), "environment": "production",
                                        "updatedAt": now}]}}, separators=(",", ":")) + "\n")
        t = time.monotonic()
        command = [binary, "import", "--store", "postgres", "--postgres-url", url, "--data-dir", node.data_dir,
                   "--token-key-file", os.path.join(node.secrets_dir, "token-keys"), "--from", path]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise DeliveryError("registryd import: exit %d: %s" % (result.returncode, (result.stdout + result.stderr)[-500:]))
        self.results["import_seconds"] = time.monotonic() - t
        self.say("registryd import --store postgres: %s (%.1f s)" % (
            (result.stdout + result.stderr).strip().splitlines()[-1], self.results["import_seconds"]))

    # -- the notification -------------------------------------------------------

    def post(self, nodes, key):
        self.nodes, self.key = nodes, key
        body = {"target": {"activityId": ACTIVITY}, "payload": {"aps": {"event": "update"}}}
        t = time.monotonic()
        status, payload = request(nodes[0].port, "POST", "/internal/v1/notifications", key, body)
        if status != 202:
            raise DeliveryError("POST /internal/v1/notifications on %s: HTTP %d %s" % (nodes[0].name, status, payload[:300]))
        self.t_post = time.monotonic()
        self.notification_id = json.loads(payload)["notification"]["id"]
        self.say("notification %s accepted by %s in %.0f ms (activity %s, %d tokens)" % (
            self.notification_id, nodes[0].name, (self.t_post - t) * 1000, ACTIVITY, self.tokens))
        self.monitor = threading.Thread(target=self.watch, name="delivery-monitor", daemon=True)
        self.monitor.start()

    def read(self, node):
        """(counts, resolving) of the notification on `node`, or raises."""
        status, payload = request(node.port, "GET", "/internal/v1/notifications/%s?limit=1" % self.notification_id,
                                  self.key, timeout=10)
        if status != 200:
            raise DeliveryError("HTTP %d" % status)
        notification = json.loads(payload)["notification"]
        return notification.get("counts", {}), notification.get("resolving", True)

    def watch(self):
        """Reads the counts twice a second (from either node); logs them every 10 s."""
        n = 0
        last_said = 0.0
        while not self.stop_monitor.is_set():
            node = self.nodes[n % len(self.nodes)]
            n += 1
            try:
                counts, resolving = self.read(node)
                now = time.monotonic()
                self.latest = (now, counts, resolving)
                if self.first_delivered_at is None and counts.get("delivered", 0) > 0:
                    self.first_delivered_at = now
                if self.t_settled is None and not resolving and counts.get("queued", 0) == 0 and counts.get("sending", 0) == 0:
                    self.t_settled = now
                if now - last_said >= 10:
                    last_said = now
                    self.say("fan-out: %s" % self.describe(counts, resolving))
            except (OSError, http.client.HTTPException, ValueError, KeyError, DeliveryError) as e:
                self.poll_errors["%s: %s" % (node.name, type(e).__name__ if not isinstance(e, DeliveryError) else e)] += 1
            self.stop_monitor.wait(0.5)

    @staticmethod
    def describe(counts, resolving):
        shown = ", ".join("%s %d" % (s, counts.get(s, 0)) for s in STATES if counts.get(s, 0))
        return "%s%s" % (shown or "nothing yet", " (resolving)" if resolving else "")

    def wait_started(self, timeout=60):
        """Until the fake has answered some deliveries (the fan-out runs)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.latest and self.latest[1].get("delivered", 0) > 0:
                self.say("fan-out running: %s" % self.describe(self.latest[1], self.latest[2]))
                return
            time.sleep(0.2)
        raise DeliveryError("no delivery delivered %d s after the notification (last: %s; poll errors %s)" % (
            timeout, self.latest, dict(self.poll_errors)))

    def snapshot(self):
        """The latest counts and how old they are, for an event's kill."""
        if self.latest is None:
            return None
        at, counts, resolving = self.latest
        return {"age": time.monotonic() - at, "counts": dict(counts), "resolving": resolving}

    def wait_settled(self, timeout):
        """Until resolving is false and nothing is queued or sending (a dead node's claims
        become unknown 2 minutes after they were claimed)."""
        t = time.monotonic()
        deadline = t + timeout
        while time.monotonic() < deadline:
            if self.t_settled is not None:
                break
            time.sleep(0.5)
        self.stop_monitor.set()
        self.monitor.join(5)
        for node in self.nodes:   # read it once more from each node
            try:
                counts, resolving = self.read(node)
            except Exception as e:   # noqa: BLE001  (reported, not fatal)
                self.problems.append("final read on %s failed: %s" % (node.name, e))
                continue
            self.final_counts = counts
            self.final_resolving = resolving
        if self.t_settled is None:
            self.problems.append("NOT SETTLED %.0f s after the failovers: %s" % (
                timeout, self.describe(self.final_counts or {}, getattr(self, "final_resolving", True))))
            return False
        self.results["settle_after_post"] = self.t_settled - self.t_post
        self.say("notification %s settled %.1f s after it was accepted: %s" % (
            self.notification_id, self.results["settle_after_post"], self.describe(self.final_counts, False)))
        return True

    # -- checks -----------------------------------------------------------------

    def deliveries(self, node):
        found = []
        cursor = None
        while True:
            path = "/internal/v1/notifications/%s?limit=1000%s" % (self.notification_id, "" if cursor is None else "&cursor=" + cursor)
            status, payload = request(node.port, "GET", path, self.key)
            if status != 200:
                raise DeliveryError("GET %s on %s: HTTP %d %s" % (path, node.name, status, payload[:200]))
            page = json.loads(payload)
            found += page.get("deliveries", [])
            cursor = page.get("nextCursor")
            if not cursor:
                return found

    def stop_fake(self):
        if self.fake is not None and self.fake.process.poll() is None:
            status = self.fake.stop()
            self.say("fake APNs stopped (exit %s)" % status)

    def verify(self):
        """Compares the deliveries with the fake's log. Returns [(label, ok)]."""
        checks = []
        deliveries = self.deliveries(self.nodes[0])
        self.stop_fake()   # flushes its log
        by_state = collections.Counter(d.get("state") for d in deliveries)
        self.results["by_state"] = by_state
        self.results["deliveries"] = len(deliveries)
        index_of = {token(i): i for i in range(self.tokens)}
        answers = collections.defaultdict(list)   # token -> [(status, action, time, connection)]
        other = 0
        with open(self.request_log) as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                t = (entry.get("token") or "").lower()
                if t not in index_of:
                    other += 1
                    continue
                answers[t].append((entry.get("status"), entry.get("action"), entry.get("time"), entry.get("connection")))
        requests = sum(len(v) for v in answers.values())
        twice = {t: v for t, v in answers.items() if sum(1 for a in v if a[0] == 200) > 1}
        retried = {t: v for t, v in answers.items() if len(v) > 1 and t not in twice}
        self.results.update(requests=requests, other_requests=other, duplicates=len(twice), retried=len(retried),
                            tokens_reached=len(answers))
        holder = {}
        for d in deliveries:
            user = d.get("userId", "")
            if user.startswith("u") and user[1:].isdigit():
                holder[token(int(user[1:]))] = d
        delivered_no_200 = [d for t, d in holder.items() if d.get("state") == "delivered"
                            and not any(a[0] == 200 for a in answers.get(t, []))]
        # the other way: answered 200, but the registry says something else (e.g. unknown after a lost settlement)
        answered_not_delivered = collections.Counter(d.get("state") for t, d in holder.items()
                                                     if d.get("state") != "delivered" and any(a[0] == 200 for a in answers.get(t, [])))
        never_sent = collections.Counter(d.get("state") for t, d in holder.items() if t not in answers)
        self.results.update(delivered_no_200=len(delivered_no_200), answered_not_delivered=answered_not_delivered,
                            never_sent=never_sent)
        for t, v in list(twice.items())[:10]:
            d = holder.get(t, {})
            self.problems.append("TOKEN ANSWERED 200 TWICE: %s (u%d/d%d, delivery %s, state %s): %s" % (
                t[:16] + "...", index_of[t], index_of[t], d.get("id"), d.get("state"), v))
        for d in delivered_no_200[:10]:
            self.problems.append("DELIVERED WITHOUT A 200 FROM THE FAKE: %s" % json.dumps(d))
        missing_holders = self.tokens - len(holder)
        checks.append(("%d deliveries for %d tokens" % (len(deliveries), self.tokens), len(deliveries) == self.tokens and missing_holders == 0))
        checks.append(("no token answered 200 twice (%d)" % len(twice), not twice))
        checks.append(("no delivery left queued or sending (%d queued, %d sending)" % (by_state["queued"], by_state["sending"]),
                       by_state["queued"] == 0 and by_state["sending"] == 0 and self.t_settled is not None))
        checks.append(("every delivered delivery was answered 200 by the fake (%d not)" % len(delivered_no_200), not delivered_no_200))
        counts = self.final_counts or {}
        same = all(counts.get(s, 0) == by_state.get(s, 0) for s in STATES)
        checks.append(("the notification's counts match its deliveries' states", same))
        if not same:
            self.problems.append("counts %s vs deliveries %s" % (counts, dict(by_state)))
        return checks

    def sender_log(self):
        """From the registryd logs: settlement writes the store refused ("settle N
        deliveries (try K, trying again)") and deliveries whose settlement was given up
        at a stop ("settle N deliveries (given up: ...)"), deliveries_abandoned lines
        (stale sending claims made unknown) and delivery_unknown lines by reason."""
        settle_failed = 0
        settle_retried = 0
        abandoned = []
        unknown = collections.Counter()
        for node in self.nodes or []:
            for entry in registry.log_entries(node, containing=('"delivery_', '"deliveries_')):
                event = entry.get("event")
                during = str(entry.get("during", ""))
                if event == "delivery_sender_error" and during.startswith("settle "):
                    if "given up" not in during:
                        settle_retried += 1
                        continue
                    try:
                        settle_failed += int(during.split()[1])
                    except (IndexError, ValueError):
                        pass
                elif event == "deliveries_abandoned":
                    abandoned.append((node.name, entry.get("ts"), entry.get("count", 0)))
                elif event == "delivery_unknown":
                    unknown[str(entry.get("reason"))] += 1
        return settle_failed, settle_retried, abandoned, unknown

    def report(self, events):
        r = self.results
        print()
        print("delivery fan-out (notification %s, activity %s, %d tokens, fake: 200 after %d ms, %d streams per connection):" % (
            self.notification_id, ACTIVITY, self.tokens, self.delay_ms, self.streams))
        rows = [("event", "kill at s after 202", "delivered", "unknown", "failed", "queued", "sending", "resolving")]
        for e in events:
            snap = getattr(e, "fanout", None)
            if snap is None:
                rows.append((e.title, "-", "-", "-", "-", "-", "-", "-"))
                continue
            c = snap["counts"]
            rows.append((e.title, "%.1f" % (e.t_kill - self.t_post),
                         *("%d" % c.get(s, 0) for s in ("delivered", "unknown", "failed", "queued", "sending")),
                         "yes" if snap["resolving"] else "no"))
        if self.final_counts is not None:
            c = self.final_counts
            rows.append(("settled" if self.t_settled else "last read",
                         "%.1f" % (self.t_settled - self.t_post) if self.t_settled else "-",
                         *("%d" % c.get(s, 0) for s in ("delivered", "unknown", "failed", "queued", "sending")),
                         "yes" if getattr(self, "final_resolving", True) else "no"))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for j, row in enumerate(rows):
            print("  " + " | ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)))
            if j == 0:
                print("  " + "-+-".join("-" * w for w in widths))
        print()
        if "by_state" in r:
            print("deliveries by state:        %s (%d in all)" % (
                ", ".join("%s %d" % (s, r["by_state"].get(s, 0)) for s in STATES if r["by_state"].get(s, 0)), r["deliveries"]))
            print("requests the fake got:      %d for %d of the %d tokens (%d other)" % (
                r["requests"], r["tokens_reached"], self.tokens, r["other_requests"]))
            print("tokens answered 200 twice:  %d" % r["duplicates"])
            print("tokens sent more than once without a second 200: %d" % r["retried"])
            print("delivered without a 200:    %d" % r["delivered_no_200"])
            print("answered 200 but not delivered, by state: %s" % (
                ", ".join("%s %d" % kv for kv in sorted(r["answered_not_delivered"].items())) or "none"))
            print("never reached the fake, by state: %s" % (
                ", ".join("%s %d" % kv for kv in sorted(r["never_sent"].items())) or "none"))
        settle_failed, settle_retried, abandoned, unknown = self.sender_log()
        print("settlement writes the store refused and were tried again: %d" % settle_retried)
        print("settlements given up at a stop (delivery_sender_error \"settle N deliveries (given up...)\"): %d deliveries" % settle_failed)
        print("stale sending claims made unknown (deliveries_abandoned): %d%s" % (
            sum(c for _, _, c in abandoned), "".join("\n    %s %s count %s" % a for a in abandoned)))
        for reason, count in unknown.most_common():
            print("delivery_unknown lines: %d  %s" % (count, reason))
        if "settle_after_post" in r:
            print("settled:                    %.1f s after the 202 (the last kill at %.1f s)" % (
                r["settle_after_post"], events[-1].t_kill - self.t_post if events else 0))
        if self.poll_errors:
            print("notification reads that failed (during failovers): %s" % ", ".join(
                "%d %s" % (c, k) for k, c in self.poll_errors.most_common(5)))
        for line in self.problems:
            print(line)
