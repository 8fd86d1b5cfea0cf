"""--accept: accepting a large notification must not stall the API.

One data set (--devices, default 100,000; activity "big" holds an update token of every device:
distinct 64-hex tokens, production) and tools/fake-apns as --relay starts it (nice 19, no script:
every request 200; no log). Then --rounds rounds (default 3), each on a registryd (LMDB, sync on,
APNs delivery on to the fake) started for the round on the same data, so that no round's memory
carries an earlier one's:

  at rest     wrk's launch upsert (reregister-hs256) for --duration seconds: its p99; then
              registryd's VmRSS and RssAnon, idle for 1 s
  memory      four POST /internal/v1/notifications to the activity at once, VmRSS and RssAnon
              sampled every 100 ms (and VmHWM, reset before) until every delivery of the four is
              final: the peaks
  expansion   wrk's launch upsert from 0.2 s before one such POST until the notification is no
              longer resolving (the 202 stores its first page of 1,000 deliveries, the sender adds
              the others a page at a time): the 202's time, the expansion's, and the p99; then the
              queue drains
  window      the same for --duration seconds from 0.2 s before a second such POST (the expansion and
              the first seconds of sending): the p99; then the queue drains

Every delivery must end `delivered`. The goals, on the medians over the rounds: upsert p99 during an
accept <= 2 x at rest (both windows); peak RSS during four concurrent accepts <= 1.5 x at rest.
"""

import concurrent.futures
import json
import os
import threading
import time

from .. import api, keys, procfs, report, servers, workloads
from . import relay
from ..dataset import bytes_on_disk, load, thousands
from ..report import median
from ..run import BenchError, log
from ..wrk import WrkRun

UPSERT = "reregister-hs256"   # the launch upsert
CONCURRENT = 4
POLL_SECONDS = 0.02
SAMPLE_SECONDS = 0.1
EXPAND_TIMEOUT = 300          # seconds an expansion may take before the run gives up on it
GOAL_P99, GOAL_RSS = 2.0, 1.5


def bench(run):
    options = run.options
    size = int(options.devices or 100000)
    run.big_tokens = size
    relay.ensure_tools()
    data = run.path("accept")
    loaded = load(run, data, size, ["--big-activity-tokens", str(size)])
    users = size // 5
    sample = min(users, 20000)
    keys.mint(run, sample, users // sample)
    on_disk = bytes_on_disk(data + "/lmdb")
    fake, p8 = relay.start_fake(run)
    rounds = []
    for r in range(1, int(options.rounds) + 1):
        server = servers.start_server(run, data, relay.delivery_flags(fake, p8))
        rounds.append(run_round(run, r, server))
        servers.stop_server(run, server)
    fake.stop()
    report.finish(run, setup_text(run, loaded, on_disk, sample) + goals_table(run, rounds) + "\n"
                  + upserts_table(rounds) + "\n" + memory_table(rounds))


def run_round(run, r, server):
    figures = {"round": r, "load": report.load_average().split()[0]}
    rest = workloads.run_named(run, "accept", f"at-rest#{r}", UPSERT, server)
    figures["memory"] = memory(run, server)
    expansion, figures["expansion"] = upserts_during_accept(run, f"during-expansion#{r}", server, fixed=False)
    window, figures["window"] = upserts_during_accept(run, f"during-{run.duration}s#{r}", server, fixed=True)
    figures.update(p99_rest=float(rest.p99), p99_expansion=float(expansion.p99), p99_window=float(window.p99),
                   rps_rest=float(rest.rps), rps_expansion=float(expansion.rps), rps_window=float(window.rps),
                   flagged=rest.flagged or expansion.flagged or window.flagged)
    m = figures["memory"]
    log(f"round {r}: upsert p99 {figures['p99_rest']:.2f} ms at rest, {figures['p99_expansion']:.2f} ms during the "
        f"expansion ({figures['p99_expansion'] / figures['p99_rest']:.2f}), {figures['p99_window']:.2f} ms in the "
        f"{run.duration} s from the POST ({figures['p99_window'] / figures['p99_rest']:.2f}); RSS {m['rss_rest'] / 1024:.0f} "
        f"MiB at rest, {m['rss_peak'] / 1024:.0f} MiB peak during {CONCURRENT} accepts "
        f"({m['rss_peak'] / m['rss_rest']:.2f})")
    return figures


def post(run, server, conn=None):
    """One POST /internal/v1/notifications to the activity: (id, the 202's ms, deliveries it stored)."""
    started = time.monotonic()
    status, text = api.request(run, server, "POST", "/internal/v1/notifications", relay.activity_body(), conn=conn)
    accept_ms = (time.monotonic() - started) * 1000
    if status != 202:
        raise BenchError(f"POST /internal/v1/notifications answered {status}: {text[:300]}")
    notification = json.loads(text)["notification"]
    return notification["id"], accept_ms, sum(notification["counts"].values())


def wait_expanded(run, server, notification_id, conn):
    """Polls the notification until it is no longer resolving (every page of the activity stored)."""
    deadline = time.monotonic() + EXPAND_TIMEOUT
    path = f"/internal/v1/notifications/{notification_id}?limit=1"
    while time.monotonic() < deadline:
        status, text = api.request(run, server, "GET", path, conn=conn)
        if status != 200:
            raise BenchError(f"GET {path} answered {status}: {text[:300]}")
        if not json.loads(text)["notification"].get("resolving"):
            return
        time.sleep(POLL_SECONDS)
    raise BenchError(f"notification {notification_id} still resolving after {EXPAND_TIMEOUT} s")


def drain(run, server, ids):
    """Waits until every delivery of the notifications is final; their deliveries `delivered`."""
    conn = api.connection(server)
    try:
        counts = [relay.wait_final(run, server, notification_id, conn) for notification_id in ids]
    finally:
        conn.close()
    total = sum(sum(c.values()) for c in counts)
    if total != run.big_tokens * len(ids):
        raise BenchError(f"{total} deliveries once resolved, not {run.big_tokens * len(ids)}")
    return sum(c.get("delivered", 0) for c in counts)


def upserts_during_accept(run, label, server, fixed):
    """wrk's launch upsert from 0.2 s before a POST to the activity until the expansion ends, or (`fixed`)
    for --duration seconds; then the queue drains. Returns (wrk's Row, the accept's figures)."""
    workload, jwts, extra = workloads.REGISTRYD[UPSERT]
    wrk = WrkRun(run, "accept", label, workload, server.url, keys.key_file(run, jwts), [server.pid], extra,
                 background=not fixed)
    conn = api.connection(server)
    try:
        time.sleep(0.2)   # wrk's connections open
        posted = time.monotonic()
        notification_id, accept_ms, stored = post(run, server, conn)
        wait_expanded(run, server, notification_id, conn)
        expanded_s = time.monotonic() - posted
    finally:
        conn.close()
    if not fixed:
        wrk.interrupt()
    row = wrk.finish()
    log(f"  202 in {accept_ms:.1f} ms ({stored} deliveries), expanded after {expanded_s:.2f} s")
    delivered = drain(run, server, [notification_id])
    return row, {"accept_ms": accept_ms, "stored": stored, "expanded_s": expanded_s, "delivered": delivered}


class MemorySampler(threading.Thread):
    """The largest VmRSS and RssAnon (KiB) of one process, sampled every SAMPLE_SECONDS until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.rss = self.anon = 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            self.rss = max(self.rss, procfs.status_kib(self.pid, "VmRSS"))
            self.anon = max(self.anon, procfs.status_kib(self.pid, "RssAnon"))
            self.stopping.wait(SAMPLE_SECONDS)

    def stop(self):
        self.stopping.set()
        self.join()
        return self


def sampled(pid, seconds):
    sampler = MemorySampler(pid)
    sampler.start()
    time.sleep(seconds)
    return sampler.stop()


def memory(run, server):
    """RSS idle for 1 s, then its peaks from CONCURRENT POSTs at once until all their deliveries are final (the
    first notifications of this registryd)."""
    log(f"memory: {CONCURRENT} POST /internal/v1/notifications at once")
    rest = sampled(server.pid, 1.0)
    procfs.reset_peaks([server.pid])
    peak = MemorySampler(server.pid)
    peak.start()
    started = time.monotonic()
    barrier = threading.Barrier(CONCURRENT)

    def accept():
        barrier.wait()
        return post(run, server)

    with concurrent.futures.ThreadPoolExecutor(CONCURRENT) as pool:
        accepted = [future.result() for future in [pool.submit(accept) for _ in range(CONCURRENT)]]
    delivered = drain(run, server, [notification_id for notification_id, _, _ in accepted])
    final_s = time.monotonic() - started
    peak.stop()
    rss_peak = max(peak.rss, procfs.status_kib(server.pid, "VmHWM"))
    accepts = [accept_ms for _, accept_ms, _ in accepted]
    log(f"  202s in {', '.join(f'{ms:.1f}' for ms in accepts)} ms; final after {final_s:.1f} s; VmRSS "
        f"{rest.rss} -> {rss_peak} KiB, RssAnon {rest.anon} -> {peak.anon} KiB")
    return {"rss_rest": rest.rss, "rss_peak": rss_peak, "anon_rest": rest.anon, "anon_peak": peak.anon,
            "accepts": accepts, "final_s": final_s, "delivered": delivered}


def med(rounds, key, inner=None):
    return median(f[key][inner] if inner else f[key] for f in rounds)


def verdict(ok):
    return "**pass**" if ok else "**FAIL**"


def goals_table(run, rounds):
    rest, expansion, window = med(rounds, "p99_rest"), med(rounds, "p99_expansion"), med(rounds, "p99_window")
    rss_rest, rss_peak = med(rounds, "memory", "rss_rest"), med(rounds, "memory", "rss_peak")
    anon_rest, anon_peak = med(rounds, "memory", "anon_rest"), med(rounds, "memory", "anon_peak")
    clean = not any(f["flagged"] for f in rounds)
    delivered = all(f[k]["delivered"] == run.big_tokens * (CONCURRENT if k == "memory" else 1)
                    for f in rounds for k in ("expansion", "window", "memory"))
    tokens = thousands(run.big_tokens)
    return ("### Goals (medians over the rounds)\n\n"
            "| goal | measured | target | result |\n| --- | ---: | ---: | --- |\n"
            f"| upsert p99 during a {tokens}-token accept (POST to the end of its expansion) / at rest | "
            f"{expansion / rest:.2f} ({expansion:.2f} ms over {rest:.2f} ms) | ≤ {GOAL_P99} | "
            f"{verdict(expansion / rest <= GOAL_P99 and clean)} |\n"
            f"| upsert p99 in the {run.duration} s from such a POST (expansion and sending) / at rest | "
            f"{window / rest:.2f} ({window:.2f} ms over {rest:.2f} ms) | ≤ {GOAL_P99} | "
            f"{verdict(window / rest <= GOAL_P99 and clean)} |\n"
            f"| peak RSS during {CONCURRENT} concurrent {tokens}-token accepts, to their last delivery / at rest | "
            f"{rss_peak / rss_rest:.2f} ({rss_peak / 1024:.0f} MiB over {rss_rest / 1024:.0f} MiB) | ≤ {GOAL_RSS} | "
            f"{verdict(rss_peak / rss_rest <= GOAL_RSS)} |\n"
            f"| (its anonymous part, RssAnon: heap and stacks) | {anon_peak / anon_rest:.2f} "
            f"({anon_peak / 1024:.0f} MiB over {anon_rest / 1024:.0f} MiB) | | |\n"
            f"| every delivery `delivered` | {'yes' if delivered else 'no'} | yes | {verdict(delivered)} |\n")


def upserts_table(rounds):
    lines = ["Upserts (wrk's reregister-hs256) at rest, from 0.2 s before a POST to the end of its expansion, and "
             "for --duration s from 0.2 s before a second POST:", "",
             "| round | load avg before | req/s at rest | p99 ms | 202 ms | expanded after s | req/s | p99 ms | "
             "/ at rest | 202 ms | expanded after s | req/s | p99 ms | / at rest |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in rounds:
        flag = " **FLAGGED**" if f["flagged"] else ""
        e, w = f["expansion"], f["window"]
        lines.append(f"| {f['round']} | {f['load']} | {f['rps_rest']:,.0f} | {f['p99_rest']:.2f}{flag} | "
                     f"{e['accept_ms']:.1f} | {e['expanded_s']:.2f} | {f['rps_expansion']:,.0f} | "
                     f"{f['p99_expansion']:.2f} | {f['p99_expansion'] / f['p99_rest']:.2f} | {w['accept_ms']:.1f} | "
                     f"{w['expanded_s']:.2f} | {f['rps_window']:,.0f} | {f['p99_window']:.2f} | "
                     f"{f['p99_window'] / f['p99_rest']:.2f} |")
    rest = med(rounds, "p99_rest")
    lines.append(f"| median | | {med(rounds, 'rps_rest'):,.0f} | {rest:.2f} | {med(rounds, 'expansion', 'accept_ms'):.1f} "
                 f"| {med(rounds, 'expansion', 'expanded_s'):.2f} | {med(rounds, 'rps_expansion'):,.0f} | "
                 f"{med(rounds, 'p99_expansion'):.2f} | {med(rounds, 'p99_expansion') / rest:.2f} | "
                 f"{med(rounds, 'window', 'accept_ms'):.1f} | {med(rounds, 'window', 'expanded_s'):.2f} | "
                 f"{med(rounds, 'rps_window'):,.0f} | {med(rounds, 'p99_window'):.2f} | "
                 f"{med(rounds, 'p99_window') / rest:.2f} |")
    return "\n".join(lines) + "\n"


def memory_table(rounds):
    lines = [f"Memory: registryd idle for 1 s after the upserts at rest, then {CONCURRENT} POSTs to the activity at once, sampled every "
             f"{SAMPLE_SECONDS * 1000:.0f} ms until every delivery is final (MiB):", "",
             "| round | VmRSS at rest | peak | / at rest | RssAnon at rest | peak | / at rest | 202s ms (worst) | "
             "final after s |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in rounds:
        m = f["memory"]
        lines.append(f"| {f['round']} | {m['rss_rest'] / 1024:.0f} | {m['rss_peak'] / 1024:.0f} | "
                     f"{m['rss_peak'] / m['rss_rest']:.2f} | {m['anon_rest'] / 1024:.0f} | {m['anon_peak'] / 1024:.0f} | "
                     f"{m['anon_peak'] / m['anon_rest']:.2f} | {max(m['accepts']):.1f} | {m['final_s']:.1f} |")
    return "\n".join(lines) + "\n"


def setup_text(run, loaded, on_disk, sample):
    options = run.options
    tokens = thousands(run.big_tokens)
    return (f"## Accepting a large notification: {tokens}-token accepts beside the launch upsert\n\n"
            f"- data set: {loaded['devices']} devices over {loaded['users']} users, each with an update token in "
            f"activity \"{relay.ACTIVITY}\" ({tokens} distinct 64-hex tokens), loaded through the store in "
            f"{loaded['seconds']} s; {on_disk} bytes on disk before the rounds\n"
            f"- registryd: started for each round on the same data; release, LMDB, sync on; APNs delivery to tools/fake-apns (nice {relay.FAKE_NICE}, every "
            f"request 200, no log) as --relay starts them, `--apns-request-timeout {relay.REQUEST_TIMEOUT}`, "
            f"`--max-queued-deliveries` at its default\n"
            f"- each accept: `POST /internal/v1/notifications {relay.activity_body()}` (the 202 stores the first "
            f"page of deliveries, the sender adds the rest a page at a time; `GET /internal/v1/notifications/{{id}}` "
            f"every {POLL_SECONDS * 1000:.0f} ms shows when it is no longer resolving); after each, the run waits "
            f"until every delivery is final\n"
            f"- upserts: wrk -t{options.threads} -c{options.connections} {UPSERT} (POST /v1/devices, 100% "
            f"re-registration, HS256 JWTs of {thousands(sample)} users) for {options.duration} s at rest, from 0.2 s "
            f"before a POST to the end of its expansion, and for {options.duration} s from 0.2 s before a second POST\n"
            f"- memory: VmRSS and RssAnon of /proc/PID/status sampled every {SAMPLE_SECONDS * 1000:.0f} ms, idle for "
            f"1 s after the upserts at rest, then from {CONCURRENT} POSTs made at once (the round's first) until "
            f"their last delivery is final (VmHWM, reset before, counted too); VmRSS includes the LMDB pages mapped "
            f"in\n"
            f"- {options.rounds} rounds; everything (registryd, the fake, wrk) on the same cores\n\n")
