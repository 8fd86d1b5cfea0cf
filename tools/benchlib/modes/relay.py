"""--relay: a delivery fan-out through registryd to tools/fake-apns, beside the fake's own ceiling.

One data set (--devices, default 100,000, with 10,000 update tokens in activity "big": distinct
64-hex tokens, production), one fake APNs (no script: every request 200; no log) and one registryd
with delivery on (--apns-* pointing both environments at the fake, --apns-ca-file its CA). Then
--rounds rounds (default 3), each of:

  h2load    h2load -n TOKENS -c 1 -m 1000 against the fake's production port: the fake's ceiling at
            the stream concurrency registryd's APNs client uses (1 connection per host, up to 1000
            streams: APNsClientConfiguration's defaults), with the headers registryd sends
  fan-out   POST /internal/v1/notifications {"target": {"activityId": "big"}, ...}: the 202's time,
            then GET /internal/v1/notifications/{id}?limit=1 every 10 ms until queued + sending is 0:
            deliveries per second from the POST to the first poll that saw every delivery final,
            and the CPU registryd and the fake used meanwhile
  lookup    wrk's "lookup" (GET /internal/v1/users/{u}/devices, the sender's lookup) for --duration
            seconds at rest, then again while a second fan-out runs (from just before its POST to
            its last final delivery): both p99s

(h2load and the lone fan-out swap order in even rounds.) The goals, as ratios within the run:
fan-out rate >= 0.5 x h2load's; the 202 of a 10,000-token notification under 200 ms; lookup p99
during a fan-out <= 1.5 x at rest. Each is judged on the medians over the rounds.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import apnsfake

from .. import TOOLS, api, keys, procfs, report, servers, workloads
from ..dataset import bytes_on_disk, load, thousands
from ..api import metric_value
from ..report import median
from ..run import BenchError, log
from ..wrk import WrkRun

TEAM_ID, KEY_ID = "BENCHTEAM1", "BENCHKEY01"
BUNDLE = "com.example.bench"
APP_ID = "default"            # the loader's devices are the default app's
ACTIVITY = "big"
STREAMS = 1000                # APNsClientConfiguration: maxStreamsPerConnection 1000, connectionsPerHost 1
# The fake stands in for APNs, which runs on Apple's machines, not beside registryd: at nice 19 it
# takes the CPU registryd, wrk and the server leave, rather than a fair share of the two cores
# (h2load measures it at the same niceness, so the rate ratio compares like with like).
FAKE_NICE = 19
# At nice 19 beside wrk's load the fake can take longer than APNs would to answer; registryd's
# default 10 s would turn those late answers into `unknown` deliveries, a fact about the fake.
REQUEST_TIMEOUT = "60s"
POLL_SECONDS = 0.01
FINAL_TIMEOUT = 300           # seconds a fan-out may take before the run gives up on it
PAYLOAD = {"aps": {"timestamp": 1700000000, "event": "update", "content-state": {"score": "2-1", "minute": 67}}}
APNS_ID = "123e4567-e89b-12d3-a456-426614174000"

GOAL_RATE, GOAL_ACCEPT_MS, GOAL_P99 = 0.5, 200.0, 1.5


def bench(run):
    options = run.options
    size = int(options.devices or 100000)
    run.big_tokens = min(size, 10000)
    ensure_tools()
    data = run.path("relay")
    loaded = load(run, data, size, ["--big-activity-tokens", str(run.big_tokens)])
    users = size // 5
    sample = min(users, 20000)
    keys.mint(run, sample, users // sample)
    fake, p8 = start_fake(run)
    server = servers.start_server(run, data, delivery_flags(fake, p8))
    h2load_command = h2load_command_for(run, fake, p8)
    rounds = []
    for r in range(1, int(options.rounds) + 1):
        rounds.append(run_round(run, r, server, fake, h2load_command))
    metrics = api.request(run, server, "GET", "/metrics")[1]
    servers.stop_server(run, server)
    fake.stop()
    body = (setup_text(run, loaded, data, server, size, sample, fake, h2load_command) + goals_table(rounds)
            + "\n" + rounds_table(rounds) + "\n" + lookup_table(rounds))
    run.notes.append(apns_note(metrics))
    run.notes.append(NOTES)
    report.finish(run, body)


def ensure_tools():
    """h2load and the fake's Python packages come with tools/install-deps --tools."""
    fake_ready = os.access("/usr/bin/python3", os.X_OK) and subprocess.run(
        ["/usr/bin/python3", "-c", "import h2, cryptography"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0
    if shutil.which("h2load") is None or not fake_ready:
        log("installing h2load and the fake APNs' packages (tools/install-deps --tools)")
        subprocess.run([os.path.join(TOOLS, "install-deps"), "--tools"], check=True)
    if shutil.which("h2load") is None:
        raise BenchError("h2load (nghttp2-client) is missing")


def start_fake(run):
    """A provider key, the fake's certificates, and the fake itself (stopped at exit as a child)."""
    key_dir = run.path("apns-key")
    p8, pub = apnsfake.make_key(key_dir)
    try:
        fake = apnsfake.FakeAPNs(run.path("fake-apns"), run.path("fake-apns", "certs"), auth_key=pub,
                                 team_id=TEAM_ID, key_id=KEY_ID, topics=[BUNDLE], spawn=run.spawn, nice=FAKE_NICE)
    except RuntimeError as error:
        servers.show_log(os.path.join(run.path("fake-apns"), "fake-apns.stderr"))
        raise BenchError(str(error))
    log(f"fake APNs pid {fake.pid}: production {fake.url('production')}, sandbox {fake.url('sandbox')}")
    return fake, p8


def delivery_flags(fake, p8):
    return ["--apns-key-file", p8, "--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID,
            "--apns-topic", f"{APP_ID}={BUNDLE}", "--apns-production-url", fake.url("production"),
            "--apns-sandbox-url", fake.url("sandbox"), "--apns-ca-file", fake.ca_file,
            "--apns-request-timeout", REQUEST_TIMEOUT]


def h2load_command_for(run, fake, p8):
    """h2load as registryd would send: one connection, STREAMS streams, the live-activity headers."""
    payload = run.path("payload.json")
    with open(payload, "w") as f:
        json.dump(PAYLOAD, f, separators=(",", ":"))
    # One URI per token, as registryd sends them (a path of its own each: HPACK cannot index it away);
    # the tokens are the loader's format, "d4", zeros, k in 16 hex digits.
    uris = run.path("h2load-uris.txt")
    with open(uris, "w") as f:
        for k in range(run.big_tokens):
            f.write(f"{fake.url('production')}/3/device/d4{'0' * 46}{k:016x}\n")
    token = apnsfake.provider_token(p8, TEAM_ID, KEY_ID)
    return ["h2load", "-n", str(run.big_tokens), "-c", "1", "-m", str(STREAMS),
            "-H", f"authorization: bearer {token}", "-H", f"apns-topic: {BUNDLE}.push-type.liveactivity",
            "-H", "apns-push-type: liveactivity", "-H", "apns-priority: 10",
            "-H", f"apns-expiration: {int(time.time()) + 3600}", "-H", f"apns-id: {APNS_ID}",
            "-d", payload, "-i", uris]


def shown(command):
    """The h2load command as the report shows it: the provider token as JWT, the paths short."""
    words = []
    for word in command:
        word = re.sub(r"bearer \S+", "bearer JWT", word)
        word = re.sub(r"apns-expiration: \d+", "apns-expiration: NOW+3600", word)
        word = re.sub(r"https://127\.0\.0\.1:\d+", "https://127.0.0.1:PORT", word)
        if word.endswith(("payload.json", "h2load-uris.txt")):
            word = os.path.basename(word)
        words.append(f"'{word}'" if " " in word else word)
    return " ".join(words)


def run_round(run, r, server, fake, h2load_command):
    figures = {"round": r, "load": report.load_average().split()[0]}
    steps = [lambda: figures.update(h2load(run, fake, h2load_command)),
             lambda: figures.update(fan_out(run, server, fake))]
    for step in (steps if r % 2 else steps[::-1]):
        step()
    at_rest = workloads.run_named(run, "relay", f"lookup-at-rest#{r}", "lookup", server)
    during, with_lookup = lookup_during_fan_out(run, r, server, fake)
    figures.update(p99_rest=float(at_rest.p99), p99_during=float(during.p99), rps_rest=float(at_rest.rps),
                   rps_during=float(during.rps), lookup_flagged=at_rest.flagged or during.flagged,
                   during_rate=with_lookup["rate"], during_seconds=with_lookup["seconds"],
                   during_accept_ms=with_lookup["accept_ms"],
                   during_delivered=with_lookup["delivered"])
    log(f"round {r}: h2load {figures['h2load']:.0f}/s, fan-out {figures['rate']:.0f}/s "
        f"({figures['rate'] / figures['h2load']:.2f}), 202 in {figures['accept_ms']:.1f} ms, lookup p99 "
        f"{figures['p99_rest']:.2f} ms at rest, {figures['p99_during']:.2f} ms during a fan-out")
    return figures


def h2load(run, fake, command):
    """The fake's ceiling: h2load's req/s (all must be 2xx), and the fake's CPU seconds meanwhile."""
    log(f"h2load -n {run.big_tokens} -c 1 -m {STREAMS} against the fake's production port")
    ticks = procfs.cpu_ticks(fake.pid)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    fake_cpu = (procfs.cpu_ticks(fake.pid) - ticks) / os.sysconf("SC_CLK_TCK")
    with open(run.path("h2load.txt"), "a") as f:
        f.write(done.stdout)
    rate = re.search(r"finished in ([0-9.]+)(m?s), ([0-9.]+) req/s", done.stdout)
    codes = re.search(r"status codes: (\d+) 2xx", done.stdout)
    if done.returncode != 0 or not rate or not codes or int(codes.group(1)) != run.big_tokens:
        print(done.stdout[-3000:], file=sys.stderr)
        raise BenchError("h2load against the fake did not get a 2xx for every request")
    log(f"  h2load: {float(rate.group(3)):.0f} req/s")
    return {"h2load": float(rate.group(3)), "h2load_fake_cpu": fake_cpu}


def fan_out(run, server, fake):
    """One notification to every token of ACTIVITY, timed from the POST to the last final delivery."""
    body = json.dumps({"target": {"activityId": ACTIVITY}, "appId": APP_ID, "payload": PAYLOAD})
    log(f"fan-out: POST /internal/v1/notifications to activity {ACTIVITY} ({thousands(run.big_tokens)} tokens)")
    conn = api.connection(server)
    try:
        conn.connect()
        registryd_ticks, fake_ticks = procfs.cpu_ticks(server.pid), procfs.cpu_ticks(fake.pid)
        started = time.monotonic()
        status, text = api.request(run, server, "POST", "/internal/v1/notifications", body, conn=conn)
        accept_ms = (time.monotonic() - started) * 1000
        if status != 202:
            raise BenchError(f"POST /internal/v1/notifications answered {status}: {text[:300]}")
        notification = json.loads(text)["notification"]
        counts = wait_final(run, server, notification["id"], conn)
        seconds = time.monotonic() - started
    finally:
        conn.close()
    tick = os.sysconf("SC_CLK_TCK")
    registryd_cpu = (procfs.cpu_ticks(server.pid) - registryd_ticks) / tick
    fake_cpu = (procfs.cpu_ticks(fake.pid) - fake_ticks) / tick
    total = sum(notification["counts"].values())
    log(f"  202 in {accept_ms:.1f} ms ({total} deliveries); final after {seconds:.2f} s: {counts}")
    return {"accept_ms": accept_ms, "seconds": seconds, "rate": run.big_tokens / seconds, "accepted": total,
            "delivered": counts.get("delivered", 0), "counts": counts, "registryd_cpu": registryd_cpu,
            "fake_cpu": fake_cpu}


def wait_final(run, server, notification_id, conn):
    """Polls the notification until nothing is queued or sending; returns its counts."""
    deadline = time.monotonic() + FINAL_TIMEOUT
    path = f"/internal/v1/notifications/{notification_id}?limit=1"
    while time.monotonic() < deadline:
        status, text = api.request(run, server, "GET", path, conn=conn)
        if status != 200:
            raise BenchError(f"GET {path} answered {status}: {text[:300]}")
        counts = json.loads(text)["notification"]["counts"]
        if counts.get("queued", 0) + counts.get("sending", 0) == 0:
            return counts
        time.sleep(POLL_SECONDS)
    raise BenchError(f"notification {notification_id} not final after {FINAL_TIMEOUT} s")


def lookup_during_fan_out(run, r, server, fake):
    """wrk's lookup from just before a fan-out's POST until its last delivery is final."""
    workload, _, extra = workloads.REGISTRYD["lookup"]
    background = WrkRun(run, "relay", f"lookup-during#{r}", workload, server.url, "", [server.pid], extra,
                        background=True)
    try:
        time.sleep(0.2)   # wrk's connections open
        figures = fan_out(run, server, fake)
    finally:
        background.interrupt()
    return background.finish(), figures


def setup_text(run, loaded, data, server, size, sample, fake, h2load_command):
    options = run.options
    h2load_version = report.first_line_of(["h2load", "--version"])
    return (f"## Delivery fan-out: {thousands(run.big_tokens)} tokens through registryd to tools/fake-apns\n\n"
            f"- data set: {loaded['devices']} devices over {loaded['users']} users, {thousands(run.big_tokens)} "
            f"update tokens in activity \"{ACTIVITY}\" (distinct 64-hex, production), loaded through the store in "
            f"{loaded['seconds']} s; {bytes_on_disk(data + '/lmdb')} bytes on disk before the rounds\n"
            f"- registryd: release, LMDB, sync on; delivery on: `--apns-key-file apns-key.p8 --apns-key-id {KEY_ID} "
            f"--apns-team-id {TEAM_ID} --apns-topic {APP_ID}={BUNDLE} --apns-production-url https://127.0.0.1:P "
            f"--apns-sandbox-url https://127.0.0.1:S --apns-ca-file certs/ca.pem`; its APNs client: 1 connection "
            f"per host, up to {STREAMS} streams\n"
            f"- the fake: `tools/fake-apns --cert-dir certs --auth-key apns-key.pub.pem --team-id {TEAM_ID} "
            f"--key-id {KEY_ID} --topic {BUNDLE}` (no script: every request 200; no log), one Python process\n"
            f"- fake's ceiling ({h2load_version}): `{shown(h2load_command)}` (h2load-uris.txt: "
            f"{thousands(run.big_tokens)} URIs https://127.0.0.1:PORT/3/device/TOKEN, a distinct token each)\n"
            f"- notification: `{{\"target\":{{\"activityId\":\"{ACTIVITY}\"}},\"appId\":\"{APP_ID}\","
            f"\"payload\":{json.dumps(PAYLOAD, separators=(',', ':'))}}}` (push type liveactivity, priority 10)\n"
            f"- lookup: wrk -t{options.threads} -c{options.connections} `GET /internal/v1/users/{{u}}/devices` over "
            f"{thousands(sample)} users, {options.duration} s at rest, and during a second fan-out of each round\n"
            f"- {options.rounds} rounds; h2load first in odd rounds, the lone fan-out first in even ones; everything "
            f"(registryd, the fake, h2load, wrk) on the same cores\n\n")


def verdict(ok):
    return "**pass**" if ok else "**FAIL**"


def goals_table(rounds):
    rate, ceiling = median(f["rate"] for f in rounds), median(f["h2load"] for f in rounds)
    accept = median(f["accept_ms"] for f in rounds)
    rest, during = median(f["p99_rest"] for f in rounds), median(f["p99_during"] for f in rounds)
    delivered_all = all(f["delivered"] == f["accepted"] and f["during_delivered"] == f["accepted"] for f in rounds)
    lookup_clean = not any(f["lookup_flagged"] for f in rounds)
    rate_ratio, p99_ratio = rate / ceiling, during / rest
    return ("### Goals (medians over the rounds)\n\n"
            "| goal | measured | target | result |\n| --- | ---: | ---: | --- |\n"
            f"| fan-out rate / h2load's against the same fake at {STREAMS} streams | {rate_ratio:.2f} "
            f"({rate:,.0f}/s over {ceiling:,.0f}/s) | ≥ {GOAL_RATE} | {verdict(rate_ratio >= GOAL_RATE)} |\n"
            f"| 202 for a {thousands(rounds[0]['accepted'])}-token notification | {accept:.1f} ms "
            f"(worst {max(f['accept_ms'] for f in rounds):.1f} ms) | < {GOAL_ACCEPT_MS:.0f} ms | "
            f"{verdict(accept < GOAL_ACCEPT_MS)} |\n"
            f"| lookup p99 during a fan-out / at rest | {p99_ratio:.2f} ({during:.2f} ms over {rest:.2f} ms) | "
            f"≤ {GOAL_P99} | {verdict(p99_ratio <= GOAL_P99 and lookup_clean)} |\n"
            f"| every delivery `delivered` (all fan-outs) | {'yes' if delivered_all else 'no'} | yes | "
            f"{verdict(delivered_all)} |\n")


def rounds_table(rounds):
    lines = ["Fan-out rounds (deliveries/s: tokens over the time from the POST to the first poll that saw none "
             "queued or sending; CPU seconds used meanwhile):", "",
             "| round | load avg before | h2load req/s | fake CPU s (h2load) | 202 ms | final after s | deliveries/s | "
             "/ h2load | delivered | registryd CPU s | fake CPU s |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in rounds:
        lines.append(f"| {f['round']} | {f['load']} | {f['h2load']:,.0f} | {f['h2load_fake_cpu']:.2f} | "
                     f"{f['accept_ms']:.1f} | {f['seconds']:.2f} | {f['rate']:,.0f} | {f['rate'] / f['h2load']:.2f} | "
                     f"{thousands(f['delivered'])} | {f['registryd_cpu']:.2f} | {f['fake_cpu']:.2f} |")
    lines.append(f"| median | | {median(f['h2load'] for f in rounds):,.0f} | | "
                 f"{median(f['accept_ms'] for f in rounds):.1f} | {median(f['seconds'] for f in rounds):.2f} | "
                 f"{median(f['rate'] for f in rounds):,.0f} | "
                 f"{median(f['rate'] for f in rounds) / median(f['h2load'] for f in rounds):.2f} | | | |")
    return "\n".join(lines) + "\n"


def lookup_table(rounds):
    lines = ["Lookup (wrk) at rest and during a second fan-out of the same round:", "",
             "| round | req/s at rest | p99 ms at rest | req/s during | p99 ms during | during / at rest p99 | "
             "that fan-out's 202 ms | its deliveries/s | delivered |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in rounds:
        flag = " **FLAGGED**" if f["lookup_flagged"] else ""
        lines.append(f"| {f['round']} | {f['rps_rest']:,.0f} | {f['p99_rest']:.2f} | {f['rps_during']:,.0f} | "
                     f"{f['p99_during']:.2f}{flag} | {f['p99_during'] / f['p99_rest']:.2f} | "
                     f"{f['during_accept_ms']:.1f} | {f['during_rate']:,.0f} | {thousands(f['during_delivered'])} |")
    lines.append(f"| median | {median(f['rps_rest'] for f in rounds):,.0f} | "
                 f"{median(f['p99_rest'] for f in rounds):.2f} | {median(f['rps_during'] for f in rounds):,.0f} | "
                 f"{median(f['p99_during'] for f in rounds):.2f} | "
                 f"{median(f['p99_during'] for f in rounds) / median(f['p99_rest'] for f in rounds):.2f} | "
                 f"{median(f['during_accept_ms'] for f in rounds):.1f} | {median(f['during_rate'] for f in rounds):,.0f} | |")
    return "\n".join(lines) + "\n"


def apns_note(metrics):
    """registryd's APNs request counts over the run, by status, from /metrics."""
    found = {}
    for line in metrics.splitlines():
        if line.startswith("registry_provider_requests_total{"):
            labels, _, value = line.rpartition(" ")
            status = re.search(r'status="([^"]*)"', labels)
            key = status.group(1) if status else labels
            found[key] = found.get(key, 0) + float(value)
    if not found:
        return ""
    counted = ", ".join(f"{status}: {value:,.0f}" for status, value in sorted(found.items()))
    text = f"- registryd's APNs requests over the run (registry_provider_requests_total by status): {counted}"
    total = metric_value(metrics, 'registry_provider_request_duration_seconds_sum{provider="apns"}')
    count = metric_value(metrics, 'registry_provider_request_duration_seconds_count{provider="apns"}')
    if count:
        text += f"; mean time from sending a request to its answer {1000 * (total or 0) / count:.0f} ms"
    return text + "\n"


NOTES = """- h2load's rate is the fake's ceiling at the same concurrency (one connection, 1000 streams), with the
  headers registryd sends; the fake is one Python process, so on 2 shared cores it, registryd's sender
  and the HTTP clients compete for CPU: compare ratios within the run, not absolute rates.
- A fan-out's time runs from the POST (accepting it writes every delivery in one transaction) to the
  first poll (every 10 ms, GET /internal/v1/notifications/{id}?limit=1) that saw nothing queued or
  sending; the rate is the tokens over that time. The 202 goal is judged on the lone fan-outs; the
  lookup table shows the 202 of the fan-out that ran beside wrk too.
- The lookup during a fan-out starts 0.2 s before the POST and stops when the fan-out is final, so a
  little of it is at rest; wrk runs closed-loop (each connection sends as soon as it is answered), so
  its p99 also measures how much CPU the fan-out leaves the HTTP server.
"""
