"""--relay: delivery fan-outs through registryd to tools/fake-apns and tools/fake-fcm, beside each fake's
own ceiling.

One data set (--devices, default 100,000, with 10,000 update tokens in activity "big": distinct
64-hex tokens, production), plus the Android and mixed users relay_fcm.py imports (10,000 users with
one FCM token each; 1,000 users with 5 APNs and 5 FCM devices each), one fake APNs and one fake FCM
(no script: every request 200; no log) and one registryd with delivery on through both (--apns-*
and --fcm-* pointing at the fakes, their CA). Then --rounds rounds (default 3), each of:

  h2load    h2load -n TOKENS -c 1 -m 1000 against the fake APNs' production port: the fake's ceiling
            at the stream concurrency registryd's APNs client uses (1 connection per host, up to 1000
            streams: APNsClientConfiguration's defaults), with the headers registryd sends
  fan-out   POST /internal/v1/notifications {"target": {"activityId": "big"}, ...}: the 202's time
            (it stores the activity's first page of 1,000 deliveries, the sender adds the rest),
            then GET /internal/v1/notifications/{id}?limit=1 every 10 ms until it is no longer
            resolving and queued + sending is 0: deliveries per second from the POST to the first
            poll that saw every delivery final, and the CPU registryd and the fakes used meanwhile
  FCM       h2load -n TOKENS -c 1 -m 100 on the fake FCM's messages:send (the streams it allows) with
            an access token from its /token and registryd's body; then the FCM fan-out: TOKENS / 1,000
            notifications of 1,000 Android users each ({"userIds": [...]}, the API's largest), posted
            back to back, timed from the first POST to the last final delivery
  mixed     one notification to the 1,000 mixed users with both `payload` and `fcm`: TOKENS tokens,
            half APNs and half FCM, all stored with the accept; its 202's time and deliveries/s
  lookup    wrk's "lookup" (GET /internal/v1/users/{u}/devices, the sender's lookup) for --duration
            seconds at rest, then again while a second APNs fan-out runs and while a second mixed
            fan-out runs (from just before the POST to its last final delivery): the p99s

(For APNs and for FCM, h2load and the lone fan-out swap order in even rounds.) The goals, as ratios
within the run: APNs and FCM fan-out rates >= 0.5 x h2load's against the same fake; the 202 of a
10,000-token notification under 200 ms, by activity and mixed; lookup p99 during an APNs and during
a mixed fan-out <= 1.5 x at rest. Each is judged on the medians over the rounds.
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
from . import relay_fcm
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
H2LOAD_TIMEOUT = 300          # seconds an h2load run may take (a fake that stops answering fails the run)
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
    population = relay_fcm.Population(run.big_tokens)
    import_seconds = relay_fcm.import_users(run, data, population)
    fake, p8 = start_fake(run)
    fcm = relay_fcm.FakeFCM(run, run.path("fake-fcm"), fake.cert_dir, FAKE_NICE)
    server = servers.start_server(run, data, delivery_flags(fake, p8)
                                  + relay_fcm.delivery_flags(fcm, REQUEST_TIMEOUT))
    fakes = Fakes(fake, fcm)
    h2load_command = h2load_command_for(run, fake, p8)
    fcm_h2load_command = relay_fcm.h2load_command(run, fcm, population.fcm_users)
    rounds = []
    for r in range(1, int(options.rounds) + 1):
        rounds.append(run_round(run, r, server, fakes, population, h2load_command, fcm_h2load_command))
    metrics = api.request(run, server, "GET", "/metrics")[1]
    servers.stop_server(run, server)
    fcm.stop()
    fake.stop()
    body = (setup_text(run, loaded, data, server, size, sample, fake, h2load_command, population, import_seconds,
                       fcm_h2load_command)
            + goals_table(rounds, population) + "\n" + rounds_table(rounds) + "\n" + fcm_table(rounds, population)
            + "\n" + mixed_table(rounds, population) + "\n" + lookup_table(rounds))
    run.notes.append(provider_note(metrics))
    run.notes.append(NOTES)
    report.finish(run, body)


class Fakes:
    """The two fakes: .apns (tools/fake-apns), .fcm (tools/fake-fcm)."""

    def __init__(self, apns, fcm):
        self.apns, self.fcm = apns, fcm


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
    """An h2load command as the report shows it: the bearer as JWT or ACCESS_TOKEN, the paths short."""
    words = []
    for word in command:
        word = re.sub(r"bearer \S+", "bearer JWT", word)
        word = re.sub(r"Bearer \S+", "Bearer ACCESS_TOKEN", word)
        word = re.sub(r"apns-expiration: \d+", "apns-expiration: NOW+3600", word)
        word = re.sub(r"https://127\.0\.0\.1:\d+", "https://127.0.0.1:PORT", word)
        if word.endswith(("payload.json", "h2load-uris.txt", "fcm-body.json")):
            word = os.path.basename(word)
        words.append(f"'{word}'" if " " in word else word)
    return " ".join(words)


def run_round(run, r, server, fakes, population, h2load_command, fcm_h2load_command):
    """h2load and the lone fan-out for APNs, then for FCM (h2load first in odd rounds), the lone mixed
    fan-out, the lookup at rest, and the lookup during an APNs and during a mixed fan-out."""
    figures = {"round": r, "load": report.load_average().split()[0]}
    activity = [activity_body()]
    steps = {
        "apns": [lambda: figures.update(h2load=h2load(run, fakes.apns, h2load_command, run.big_tokens, STREAMS,
                                                   "the fake APNs' production port")),
                 lambda: figures.update(apns=notify(run, server, fakes, activity, "APNs fan-out", run.big_tokens))],
        "fcm": [lambda: figures.update(fcm_h2load=h2load(run, fakes.fcm, fcm_h2load_command, population.fcm_users,
                                                         relay_fcm.STREAMS, "the fake FCM's messages:send")),
                lambda: figures.update(fcm=notify(run, server, fakes, population.fcm_bodies(), "FCM fan-out",
                                                  population.fcm_users))]}
    for provider in ("apns", "fcm"):
        for step in (steps[provider] if r % 2 else steps[provider][::-1]):
            step()
    figures["mixed"] = notify(run, server, fakes, population.mixed_bodies(), "mixed fan-out",
                              population.mixed_tokens)
    at_rest = workloads.run_named(run, "relay", f"lookup-at-rest#{r}", "lookup", server)
    during, figures["apns_during"] = lookup_during(
        run, f"lookup-during#{r}", server, lambda: notify(run, server, fakes, activity, "APNs fan-out beside wrk",
                                                          run.big_tokens))
    mixed, figures["mixed_during"] = lookup_during(
        run, f"lookup-during-mixed#{r}", server,
        lambda: notify(run, server, fakes, population.mixed_bodies(), "mixed fan-out beside wrk",
                       population.mixed_tokens))
    figures.update(p99_rest=float(at_rest.p99), p99_during=float(during.p99), p99_mixed=float(mixed.p99),
                   rps_rest=float(at_rest.rps), rps_during=float(during.rps), rps_mixed=float(mixed.rps),
                   lookup_flagged=at_rest.flagged or during.flagged or mixed.flagged)
    log(f"round {r}: APNs h2load {figures['h2load']['rate']:.0f}/s, fan-out {figures['apns']['rate']:.0f}/s "
        f"({figures['apns']['rate'] / figures['h2load']['rate']:.2f}), 202 in {figures['apns']['accept_ms']:.1f} ms; "
        f"FCM h2load {figures['fcm_h2load']['rate']:.0f}/s, fan-out {figures['fcm']['rate']:.0f}/s "
        f"({figures['fcm']['rate'] / figures['fcm_h2load']['rate']:.2f}); mixed 202 in "
        f"{figures['mixed']['accept_ms']:.1f} ms; lookup p99 {figures['p99_rest']:.2f} ms at rest, "
        f"{figures['p99_during']:.2f} ms during an APNs fan-out, {figures['p99_mixed']:.2f} ms during a mixed one")
    return figures


def h2load(run, fake, command, requests, streams, what):
    """A fake's ceiling: h2load's req/s (all must be 2xx), and the fake's CPU seconds meanwhile."""
    log(f"h2load -n {requests} -c 1 -m {streams} against {what}")
    ticks = procfs.cpu_ticks(fake.pid)
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=H2LOAD_TIMEOUT)
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else expired.stdout
        print((output or "")[-3000:], file=sys.stderr)
        raise BenchError(f"h2load against {what} did not finish in {H2LOAD_TIMEOUT} s")
    fake_cpu = (procfs.cpu_ticks(fake.pid) - ticks) / os.sysconf("SC_CLK_TCK")
    with open(run.path("h2load.txt"), "a") as f:
        f.write(done.stdout)
    rate = re.search(r"finished in ([0-9.]+)(m?s), ([0-9.]+) req/s", done.stdout)
    codes = re.search(r"status codes: (\d+) 2xx", done.stdout)
    if done.returncode != 0 or not rate or not codes or int(codes.group(1)) != requests:
        print(done.stdout[-3000:], file=sys.stderr)
        raise BenchError("h2load against a fake did not get a 2xx for every request")
    log(f"  h2load: {float(rate.group(3)):.0f} req/s")
    return {"rate": float(rate.group(3)), "fake_cpu": fake_cpu}


def activity_body():
    return json.dumps({"target": {"activityId": ACTIVITY}, "appId": APP_ID, "payload": PAYLOAD})


def notify(run, server, fakes, bodies, what, tokens):
    """POST /internal/v1/notifications of each body, back to back on one connection, then polls each
    until final: every 202's time (and how many deliveries it held: an activity's first page of 1,000
    only), and the seconds from the first POST to the last final delivery. `tokens`: how many
    deliveries the bodies must come to once resolved (the run fails otherwise)."""
    log(f"{what}: {len(bodies)} POST /internal/v1/notifications")
    conn = api.connection(server)
    try:
        conn.connect()
        pids = (server.pid, fakes.apns.pid, fakes.fcm.pid)
        ticks = [procfs.cpu_ticks(pid) for pid in pids]
        started = time.monotonic()
        accepts, notifications = [], []
        for body in bodies:
            posted = time.monotonic()
            status, text = api.request(run, server, "POST", "/internal/v1/notifications", body, conn=conn)
            accepts.append((time.monotonic() - posted) * 1000)
            if status != 202:
                raise BenchError(f"POST /internal/v1/notifications answered {status}: {text[:300]}")
            notifications.append(json.loads(text)["notification"])
        counts = {}
        for notification in notifications:
            for state, n in wait_final(run, server, notification["id"], conn).items():
                counts[state] = counts.get(state, 0) + n
        seconds = time.monotonic() - started
    finally:
        conn.close()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = [(procfs.cpu_ticks(pid) - before) / tick for pid, before in zip(pids, ticks)]
    at_accept = sum(sum(n["counts"].values()) for n in notifications)
    total = sum(counts.values())
    log(f"  202 in {', '.join(f'{ms:.1f}' for ms in accepts)} ms ({at_accept} deliveries in the 202s); final after "
        f"{seconds:.2f} s: {counts}")
    if total != tokens:
        raise BenchError(f"{what}: {total} deliveries once resolved, not {tokens}")
    return {"accept_ms": accepts[0], "accepts": accepts, "seconds": seconds, "rate": total / seconds,
            "at_accept": at_accept, "accepted": total, "delivered": counts.get("delivered", 0), "counts": counts,
            "registryd_cpu": cpu[0], "apns_cpu": cpu[1], "fcm_cpu": cpu[2]}


def wait_final(run, server, notification_id, conn):
    """Polls the notification until it is resolved (an activity's pages all added) and nothing is queued
    or sending; returns its counts."""
    deadline = time.monotonic() + FINAL_TIMEOUT
    path = f"/internal/v1/notifications/{notification_id}?limit=1"
    while time.monotonic() < deadline:
        status, text = api.request(run, server, "GET", path, conn=conn)
        if status != 200:
            raise BenchError(f"GET {path} answered {status}: {text[:300]}")
        notification = json.loads(text)["notification"]
        counts = notification["counts"]
        if not notification.get("resolving") and counts.get("queued", 0) + counts.get("sending", 0) == 0:
            return counts
        time.sleep(POLL_SECONDS)
    raise BenchError(f"notification {notification_id} not final after {FINAL_TIMEOUT} s")


def lookup_during(run, label, server, fan_out):
    """wrk's lookup from just before a fan-out's first POST until its last delivery is final."""
    workload, _, extra = workloads.REGISTRYD["lookup"]
    background = WrkRun(run, "relay", label, workload, server.url, "", [server.pid], extra, background=True)
    try:
        time.sleep(0.2)   # wrk's connections open
        figures = fan_out()
    finally:
        background.interrupt()
    return background.finish(), figures


def setup_text(run, loaded, data, server, size, sample, fake, h2load_command, population, import_seconds,
               fcm_h2load_command):
    options = run.options
    h2load_version = report.first_line_of(["h2load", "--version"])
    fcm_target = f"{relay_fcm.USERS_PER_NOTIFICATION:,}" if population.fcm_users >= relay_fcm.USERS_PER_NOTIFICATION \
        else f"{population.fcm_users:,}"
    return (f"## Delivery fan-out: {thousands(run.big_tokens)} tokens through registryd to tools/fake-apns and "
            f"tools/fake-fcm\n\n"
            f"- data set: {loaded['devices']} devices over {loaded['users']} users, {thousands(run.big_tokens)} "
            f"update tokens in activity \"{ACTIVITY}\" (distinct 64-hex, production), loaded through the store in "
            f"{loaded['seconds']} s; then `registryd import` of {thousands(population.fcm_users)} Android users "
            f"(platform fcm, one FCM registration token of 154 characters each) and "
            f"{thousands(population.mixed_users)} mixed users ({relay_fcm.MIXED_APNS} APNs devices and "
            f"{relay_fcm.MIXED_FCM} FCM devices each) in {import_seconds:.1f} s; "
            f"{bytes_on_disk(data + '/lmdb')} bytes on disk before the rounds\n"
            f"- registryd: release, LMDB, sync on; delivery on: `--apns-key-file apns-key.p8 --apns-key-id {KEY_ID} "
            f"--apns-team-id {TEAM_ID} --apns-topic {APP_ID}={BUNDLE} --apns-production-url https://127.0.0.1:P "
            f"--apns-sandbox-url https://127.0.0.1:S --apns-ca-file certs/ca.pem --fcm-service-account "
            f"{APP_ID}=service-account.json --fcm-url https://127.0.0.1:F --fcm-token-url https://127.0.0.1:F/token "
            f"--fcm-ca-file certs/ca.pem`, both request timeouts {REQUEST_TIMEOUT}; its APNs and FCM clients: "
            f"1 connection per host, up to {STREAMS} requests in flight each\n"
            f"- the fakes, each one Python process at nice {FAKE_NICE}, one CA: `tools/fake-apns --cert-dir certs "
            f"--auth-key apns-key.pub.pem --team-id {TEAM_ID} --key-id {KEY_ID} --topic {BUNDLE}` and "
            f"`tools/fake-fcm --cert-dir certs --service-account service-account.json --max-streams "
            f"{relay_fcm.STREAMS}` (its default), no script (every request 200), no log\n"
            f"- APNs ceiling ({h2load_version}): `{shown(h2load_command)}` (h2load-uris.txt: "
            f"{thousands(run.big_tokens)} URIs https://127.0.0.1:PORT/3/device/TOKEN, a distinct token each)\n"
            f"- FCM ceiling: `{shown(fcm_h2load_command)}` (fcm-body.json: the body registryd sends for one token, "
            f"`{json.dumps({'message': {'token': 'T', 'android': {'ttl': '3599s'}, **relay_fcm.FCM_BODY}}, separators=(',', ':'))}`; "
            f"the access token from the fake's /token for an RS256 JWT-bearer assertion)\n"
            f"- APNs fan-out: `{{\"target\":{{\"activityId\":\"{ACTIVITY}\"}},\"appId\":\"{APP_ID}\","
            f"\"payload\":{json.dumps(PAYLOAD, separators=(',', ':'))}}}` (push type liveactivity, priority 10)\n"
            f"- FCM fan-out: {len(population.fcm_bodies())} notifications posted back to back, each "
            f"`{{\"target\":{{\"userIds\":[{fcm_target} Android users]}},\"appId\":\"{APP_ID}\","
            f"\"fcm\":{json.dumps(relay_fcm.FCM_BODY, separators=(',', ':'))}}}` (1,000 users is the largest "
            f"userIds target)\n"
            f"- mixed fan-out: one `{{\"target\":{{\"userIds\":[{thousands(population.mixed_users)} mixed users]}},"
            f"\"appId\":\"{APP_ID}\",\"payload\":{json.dumps(relay_fcm.APNS_ALERT, separators=(',', ':'))},"
            f"\"fcm\":{json.dumps(relay_fcm.FCM_BODY, separators=(',', ':'))}}}`: "
            f"{thousands(population.mixed_tokens)} tokens, half APNs (alert), half FCM\n"
            f"- lookup: wrk -t{options.threads} -c{options.connections} `GET /internal/v1/users/{{u}}/devices` over "
            f"{thousands(sample)} users, {options.duration} s at rest, and during a second APNs fan-out and a second "
            f"mixed fan-out of each round\n"
            f"- {options.rounds} rounds; for APNs and for FCM, h2load first in odd rounds, the lone fan-out first in "
            f"even ones; then the lone mixed fan-out; everything (registryd, the fakes, h2load, wrk) on the same "
            f"cores\n\n")


def verdict(ok):
    return "**pass**" if ok else "**FAIL**"


def med(rounds, *path):
    """The median over the rounds of figures[path[0]][path[1]]... ."""
    def value(f):
        for key in path:
            f = f[key]
        return f
    return median(value(f) for f in rounds)


FAN_OUTS = ("apns", "fcm", "mixed", "apns_during", "mixed_during")


def goals_table(rounds, population):
    rate, ceiling = med(rounds, "apns", "rate"), med(rounds, "h2load", "rate")
    fcm_rate, fcm_ceiling = med(rounds, "fcm", "rate"), med(rounds, "fcm_h2load", "rate")
    accept, mixed_accept = med(rounds, "apns", "accept_ms"), med(rounds, "mixed", "accept_ms")
    rest, during, mixed = med(rounds, "p99_rest"), med(rounds, "p99_during"), med(rounds, "p99_mixed")
    delivered_all = all(f[k]["delivered"] == f[k]["accepted"] for f in rounds for k in FAN_OUTS)
    lookup_clean = not any(f["lookup_flagged"] for f in rounds)
    rate_ratio, fcm_ratio, p99_ratio, mixed_ratio = rate / ceiling, fcm_rate / fcm_ceiling, during / rest, mixed / rest
    return ("### Goals (medians over the rounds)\n\n"
            "| goal | measured | target | result |\n| --- | ---: | ---: | --- |\n"
            f"| APNs fan-out rate / h2load's against the same fake at {STREAMS} streams | {rate_ratio:.2f} "
            f"({rate:,.0f}/s over {ceiling:,.0f}/s) | ≥ {GOAL_RATE} | {verdict(rate_ratio >= GOAL_RATE)} |\n"
            f"| 202 for a {thousands(rounds[0]['apns']['accepted'])}-token notification (activity; the 202 stores "
            f"{thousands(rounds[0]['apns']['at_accept'])} of its deliveries) | {accept:.1f} ms "
            f"(worst {max(f['apns']['accept_ms'] for f in rounds):.1f} ms) | < {GOAL_ACCEPT_MS:.0f} ms | "
            f"{verdict(accept < GOAL_ACCEPT_MS)} |\n"
            f"| lookup p99 during an APNs fan-out / at rest | {p99_ratio:.2f} ({during:.2f} ms over {rest:.2f} ms) | "
            f"≤ {GOAL_P99} | {verdict(p99_ratio <= GOAL_P99 and lookup_clean)} |\n"
            f"| FCM fan-out rate / h2load's against the same fake at {relay_fcm.STREAMS} streams | {fcm_ratio:.2f} "
            f"({fcm_rate:,.0f}/s over {fcm_ceiling:,.0f}/s) | ≥ {GOAL_RATE} | {verdict(fcm_ratio >= GOAL_RATE)} |\n"
            f"| 202 for a {thousands(rounds[0]['mixed']['accepted'])}-token mixed notification "
            f"({thousands(population.mixed_users)} users, half APNs, half FCM; the 202 stores "
            f"{thousands(rounds[0]['mixed']['at_accept'])}) | {mixed_accept:.1f} ms "
            f"(worst {max(f['mixed']['accept_ms'] for f in rounds):.1f} ms) | < {GOAL_ACCEPT_MS:.0f} ms | "
            f"{verdict(mixed_accept < GOAL_ACCEPT_MS)} |\n"
            f"| lookup p99 during a mixed fan-out / at rest | {mixed_ratio:.2f} ({mixed:.2f} ms over {rest:.2f} ms) | "
            f"≤ {GOAL_P99} | {verdict(mixed_ratio <= GOAL_P99 and lookup_clean)} |\n"
            f"| every delivery `delivered` (all fan-outs) | {'yes' if delivered_all else 'no'} | yes | "
            f"{verdict(delivered_all)} |\n")


def rounds_table(rounds):
    lines = ["APNs fan-out rounds (deliveries/s: tokens over the time from the POST to the first poll that saw none "
             "queued or sending; CPU seconds used meanwhile):", "",
             "| round | load avg before | h2load req/s | fake CPU s (h2load) | 202 ms | final after s | deliveries/s | "
             "/ h2load | delivered | registryd CPU s | fake CPU s |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in rounds:
        a, h = f["apns"], f["h2load"]
        lines.append(f"| {f['round']} | {f['load']} | {h['rate']:,.0f} | {h['fake_cpu']:.2f} | "
                     f"{a['accept_ms']:.1f} | {a['seconds']:.2f} | {a['rate']:,.0f} | {a['rate'] / h['rate']:.2f} | "
                     f"{thousands(a['delivered'])} | {a['registryd_cpu']:.2f} | {a['apns_cpu']:.2f} |")
    lines.append(f"| median | | {med(rounds, 'h2load', 'rate'):,.0f} | | {med(rounds, 'apns', 'accept_ms'):.1f} | "
                 f"{med(rounds, 'apns', 'seconds'):.2f} | {med(rounds, 'apns', 'rate'):,.0f} | "
                 f"{med(rounds, 'apns', 'rate') / med(rounds, 'h2load', 'rate'):.2f} | | | |")
    return "\n".join(lines) + "\n"


def fcm_table(rounds, population):
    lines = [f"FCM fan-out rounds ({len(population.fcm_bodies())} notifications of up to "
             f"{relay_fcm.USERS_PER_NOTIFICATION:,} Android users posted back to back; deliveries/s from the first "
             "POST to the first poll that saw all of them final):", "",
             "| round | h2load req/s | fake CPU s (h2load) | 202s ms (median, worst) | final after s | deliveries/s | "
             "/ h2load | delivered | registryd CPU s | fake CPU s |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in rounds:
        a, h = f["fcm"], f["fcm_h2load"]
        lines.append(f"| {f['round']} | {h['rate']:,.0f} | {h['fake_cpu']:.2f} | {median(a['accepts']):.1f}, "
                     f"{max(a['accepts']):.1f} | {a['seconds']:.2f} | {a['rate']:,.0f} | {a['rate'] / h['rate']:.2f} | "
                     f"{thousands(a['delivered'])} | {a['registryd_cpu']:.2f} | {a['fcm_cpu']:.2f} |")
    lines.append(f"| median | {med(rounds, 'fcm_h2load', 'rate'):,.0f} | | | {med(rounds, 'fcm', 'seconds'):.2f} | "
                 f"{med(rounds, 'fcm', 'rate'):,.0f} | "
                 f"{med(rounds, 'fcm', 'rate') / med(rounds, 'fcm_h2load', 'rate'):.2f} | | | |")
    return "\n".join(lines) + "\n"


def mixed_table(rounds, population):
    lines = [f"Mixed fan-out rounds (one notification to {thousands(population.mixed_users)} users, "
             f"{thousands(population.mixed_tokens)} tokens, half APNs and half FCM):", "",
             "| round | 202 ms | final after s | deliveries/s | delivered | registryd CPU s | fake APNs CPU s | "
             "fake FCM CPU s |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in rounds:
        a = f["mixed"]
        lines.append(f"| {f['round']} | {a['accept_ms']:.1f} | {a['seconds']:.2f} | {a['rate']:,.0f} | "
                     f"{thousands(a['delivered'])} | {a['registryd_cpu']:.2f} | {a['apns_cpu']:.2f} | "
                     f"{a['fcm_cpu']:.2f} |")
    lines.append(f"| median | {med(rounds, 'mixed', 'accept_ms'):.1f} | {med(rounds, 'mixed', 'seconds'):.2f} | "
                 f"{med(rounds, 'mixed', 'rate'):,.0f} | | | | |")
    return "\n".join(lines) + "\n"


def lookup_table(rounds):
    lines = ["Lookup (wrk) at rest, during a second APNs fan-out and during a second mixed fan-out of the same round "
             "(each with that fan-out's 202, deliveries/s and deliveries `delivered`):", "",
             "| round | req/s at rest | p99 ms at rest | req/s during APNs | p99 ms | / at rest | 202 ms | deliveries/s "
             "| delivered | req/s during mixed | p99 ms | / at rest | 202 ms | deliveries/s | delivered |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in rounds:
        flag = " **FLAGGED**" if f["lookup_flagged"] else ""
        a, m = f["apns_during"], f["mixed_during"]
        lines.append(f"| {f['round']} | {f['rps_rest']:,.0f} | {f['p99_rest']:.2f}{flag} | {f['rps_during']:,.0f} | "
                     f"{f['p99_during']:.2f} | {f['p99_during'] / f['p99_rest']:.2f} | {a['accept_ms']:.1f} | "
                     f"{a['rate']:,.0f} | {thousands(a['delivered'])} | {f['rps_mixed']:,.0f} | {f['p99_mixed']:.2f} | "
                     f"{f['p99_mixed'] / f['p99_rest']:.2f} | {m['accept_ms']:.1f} | {m['rate']:,.0f} | "
                     f"{thousands(m['delivered'])} |")
    rest = med(rounds, "p99_rest")
    lines.append(f"| median | {med(rounds, 'rps_rest'):,.0f} | {rest:.2f} | {med(rounds, 'rps_during'):,.0f} | "
                 f"{med(rounds, 'p99_during'):.2f} | {med(rounds, 'p99_during') / rest:.2f} | "
                 f"{med(rounds, 'apns_during', 'accept_ms'):.1f} | {med(rounds, 'apns_during', 'rate'):,.0f} | | "
                 f"{med(rounds, 'rps_mixed'):,.0f} | {med(rounds, 'p99_mixed'):.2f} | "
                 f"{med(rounds, 'p99_mixed') / rest:.2f} | {med(rounds, 'mixed_during', 'accept_ms'):.1f} | "
                 f"{med(rounds, 'mixed_during', 'rate'):,.0f} | |")
    return "\n".join(lines) + "\n"


def provider_note(metrics):
    """registryd's provider request counts over the run, by provider and status, from /metrics."""
    found = {}
    for line in metrics.splitlines():
        if line.startswith("registry_provider_requests_total{"):
            labels, _, value = line.rpartition(" ")
            provider = re.search(r'provider="([^"]*)"', labels)
            status = re.search(r'status="([^"]*)"', labels)
            key = (provider.group(1) if provider else "?", status.group(1) if status else labels)
            found[key] = found.get(key, 0) + float(value)
    if not found:
        return ""
    counted = ", ".join(f"{provider} {status}: {value:,.0f}" for (provider, status), value in sorted(found.items()))
    text = f"- registryd's provider requests over the run (registry_provider_requests_total): {counted}"
    for provider in ("apns", "fcm"):
        total = metric_value(metrics, f'registry_provider_request_duration_seconds_sum{{provider="{provider}"}}')
        count = metric_value(metrics, f'registry_provider_request_duration_seconds_count{{provider="{provider}"}}')
        if count:
            text += (f"; {provider}: mean time from sending a request to its answer "
                     f"{1000 * (total or 0) / count:.0f} ms")
    return text + "\n"


NOTES = """- h2load's rate is each fake's ceiling at registryd's concurrency (one connection; 1000 streams to the fake
  APNs, the 100 the fake FCM allows), with the headers registryd sends; each fake is one Python process,
  so on 2 shared cores the fakes, registryd's sender and the HTTP clients compete for CPU: compare
  ratios within the run, not absolute rates.
- A fan-out's time runs from the (first) POST to the first poll (every 10 ms, GET
  /internal/v1/notifications/{id}?limit=1) that saw the notification resolved and nothing queued or
  sending; the rate is the tokens over that time. A userIds target's deliveries are all written with
  the accept, in one transaction; an activity's first page of 1,000 is, the sender adding the rest. The FCM fan-out is several notifications because
  a userIds target holds at most 1,000 users and an Android user here holds one token. The 202 goals
  are judged on the lone fan-outs; the lookup table shows the 202s of the fan-outs beside wrk too.
- The lookup during a fan-out starts 0.2 s before the POST and stops when the fan-out is final, so a
  little of it is at rest; wrk runs closed-loop (each connection sends as soon as it is answered), so
  its p99 also measures how much CPU the fan-out leaves the HTTP server.
"""
