"""--stores LIST (--store postgres = --stores lmdb,postgres): the same workloads on registryd over LMDB
and over PostgreSQL (one private durable server; every PostgreSQL store a registryd with its own pool
size, all sharing one database as nodes of one registry do) in one run, in rounds with the first
store rotating. With --compare-peer, django-push-notifications under gunicorn (benchlib.peer) on the same
server takes its turn in the launch upsert's rounds. The report: per workload each store's median req/s
and p99, the ratio to LMDB and to the peer's launch upserts measured in the run (without --compare-peer,
to the quoted 240 upserts/s); every round with the CPU the server and PostgreSQL used; PostgreSQL's
commits, rollbacks, WAL flushes and rows written; with --pg-statements, its statements.
"""

import os
import time

from .. import keys, procfs, report, servers, workloads
from . import against
from ..dataset import bytes_on_disk, load, thousands
from ..options import COMPARED_WORKLOADS, PEER_WORKLOAD
from ..peer import Database as PeerDatabase, Gunicorn
from ..postgres import Postgres, delta
from ..report import commas, median
from ..run import log
from ..wrk import run_wrk

# Without --compare-peer: django-push-notifications' durable upserts/s on PostgreSQL 15 on these machines,
# a quoted figure (`--compare-peer` measures it in the run instead: see docs/performance.md for where 240
# came from). The launch upsert's goal on PostgreSQL is 10 times the peer's rate.
DJANGO_UPSERTS = 240
WRITE_WORKLOADS = ("upsert-mix", "reregister-hs256", "reregister-rs256", "reregister-es256")
COUNTER_WAIT = 11   # seconds until idle connections have handed their counters over

NOTES_COMMON = """- Medians over the rounds; the range is the lowest and highest round. "÷ LMDB" above 1 means that store
  serves more requests per second than LMDB.
"""
NOTES_QUOTED = f"""- "÷ {DJANGO_UPSERTS}/s (quoted)" (upsert workloads only) compares with django-push-notifications' {DJANGO_UPSERTS}
  durable upserts/s on PostgreSQL 15 on these machines, a quoted figure not measured in this run
  (`--compare-peer` measures the peer instead); the launch upsert's goal on PostgreSQL is 10 times it.
"""
NOTES_PEER = """- "÷ peer (measured in this run)" (upsert workloads only) divides by the median launch-upsert rate of
  django-push-notifications in this run: tools/peer/ under gunicorn (sync workers) on the same PostgreSQL
  server, its own database, the same number of devices, POST /device/apns/ re-registering an existing
  token (registry.lua's peer workload), in the reregister-hs256 rounds beside the stores, each server
  idle while another is measured; with several worker counts, the best of them. The peer takes any caller
  (no authentication), where registryd verifies a device JWT on every write. The launch upsert's goal on
  PostgreSQL is 10 times the peer's rate.
"""
NOTES_DURABLE = """- Every write is durable before its 2xx: LMDB fsyncs each group commit; PostgreSQL commits each write as
  its own transaction with fsync and synchronous_commit on (concurrent commits may share one WAL flush).
"""


class Round:
    """One store's run of one workload: its Row, the load average before, CPU ticks, PostgreSQL figures."""

    def __init__(self, side, workload, number, load):
        self.side, self.workload, self.number, self.load = side, workload, number, load
        self.row = None
        self.registryd_ticks = 0
        self.pg_ticks = None
        self.pg_delta = None        # --pg-statements: counters over the round
        self.statements = None      # --pg-statements: the round's costliest statements


def bench(run):
    options = run.options
    sides = options.sides
    size = int(options.devices or 100000)
    run.big_tokens = min(size, 10000)
    facts = {"size": size}
    if any(side.pool == 0 for side in sides):
        facts["lmdb"] = load(run, run.path("lmdb-data"), size, ["--big-activity-tokens", str(run.big_tokens)])
        facts["lmdb_bytes"] = bytes_on_disk(run.path("lmdb-data", "lmdb"))
    run.data_devices = size
    pg = None
    if options.against:
        run.rev_bin, facts["rev_built"] = against.build_rev(run)
    if options.pg_sides:
        pg = Postgres(run)
        pg.start(options.pg_statements)
        facts["pg_load"] = pg.load(size)
        facts["pg_bytes"] = pg.database_bytes()
        if options.against:
            facts["pg_rev_load"] = pg.load(size, loader=os.path.join(run.rev_bin, "registry-bench"),
                                           url=pg.add_rev_database(), data="pg-rev-data")
    users = size // 5
    facts["sample"] = min(users, 20000)
    keys.mint(run, facts["sample"], users // facts["sample"], workloads.needs_all_algorithms(options))
    peer = None
    if options.compare_peer:
        peer = PeerDatabase(run, pg)
        facts["peer_load"] = peer.prepare(size)
    started = [start_side(run, side, pg) for side in sides]
    peers = [(side, Gunicorn(run, peer, int(side.name[len("peer"):]))) for side in options.peers]
    totals_start = (pg.counters(), pg.table_counters()) if pg else None
    rounds = run_rounds(run, started, pg, peers)
    totals_end = None
    if pg:
        log(f"waiting {COUNTER_WAIT} s for PostgreSQL's counters")
        time.sleep(COUNTER_WAIT)
        totals_end = (pg.counters(), pg.table_counters())
    for _, server in started:
        servers.stop_server(run, server)
    for _, gunicorn in peers:
        gunicorn.stop()
    body = (summary(run, facts, pg, started, peer) + stores_table(run, rounds)
            + (totals(totals_start, totals_end, peer) if pg else "") + statements_report(run, rounds))
    run.notes.append(NOTES_COMMON + (NOTES_PEER if peer else NOTES_QUOTED) + NOTES_DURABLE)
    report.finish(run, body)


def start_side(run, side, pg):
    """(side, its registryd): LMDB on the loaded directory, PostgreSQL with the load's token keys."""
    if side.pool == 0:
        return side, servers.start_server(run, run.path("lmdb-data"))
    data = "pg-rev-data" if side.rev else "pg-data"
    flags = ["--store", "postgres", "--postgres-url", pg.rev_url if side.rev else pg.url,
             "--postgres-pool-size", str(side.pool), "--token-key-file", run.path(data, "secrets", "token-keys")]
    binary = os.path.join(run.rev_bin, "registryd") if side.rev else None
    return side, servers.start_server(run, run.path(data), flags, binary=binary,
                                      log_path=run.path(data, f"server-{side.name}.log"))


def run_rounds(run, started, pg, peers):
    """Every selected workload, --rounds rounds of every store (and in the launch upsert's, of the peer);
    round r starts with store (r - 1) mod n and the others follow in turn, so over n rounds each goes first
    once and the machine's drift falls on all."""
    options = run.options
    rounds = []
    for workload in COMPARED_WORKLOADS:
        if not options.selected(workload):
            continue
        turns = started + (peers if workload == PEER_WORKLOAD else [])
        for r in range(1, int(options.rounds) + 1):
            for k in range(len(turns)):
                side, server = turns[(r - 1 + k) % len(turns)]
                rounds.append(measure(run, side, server, workload, r, pg if side.pool or side.peer else None))
    return rounds


def server_ticks(side, server):
    return server.ticks() if side.peer else procfs.cpu_ticks(server.pid)


def measure(run, side, server, workload, number, pg):
    """One round of one store or of the peer, with its CPU ticks and PostgreSQL's (and with --pg-statements,
    for a PostgreSQL store, PostgreSQL's view of it)."""
    statements = pg is not None and run.options.pg_statements and not side.peer
    if statements:
        pg.reset_statements()
        counters_before = pg.counters()
    result = Round(side, workload, number, report.load_average().split()[0])
    registryd_before = server_ticks(side, server)
    pg_before = pg.ticks() if pg else None
    label = f"{workload}#{number}"
    if side.peer:
        result.row = run_wrk(run, side.name, label, "peer", server.url, "", server.worker_pids(), {})
    else:
        result.row = workloads.run_named(run, side.name, label, workload, server)
    result.registryd_ticks = server_ticks(side, server) - registryd_before
    if pg:
        result.pg_ticks = pg.ticks() - pg_before
    if statements:
        result.statements = pg.statements()
        log(f"  waiting {COUNTER_WAIT} s for PostgreSQL's counters")
        time.sleep(COUNTER_WAIT)
        result.pg_delta = delta(counters_before, pg.counters())
    return result


def summary(run, facts, pg, started, peer):
    options = run.options
    size, sample = facts["size"], facts["sample"]
    lines = [f"## registryd on {', '.join(side.label for side in options.sides)}, interleaved", "",
             f"- data set: {thousands(size)} devices over {thousands(size // 5)} users, 5 per user, each with push, "
             f"push-to-start",
             f"  and activity tokens, {thousands(run.big_tokens)} in \"big\"; the same records in every store"]
    if "lmdb" in facts:
        lines.append(f"- LMDB: `registry-bench load` (importRecords, group commits) in {facts['lmdb']['seconds']} s, "
                     f"{facts['lmdb_bytes']} bytes on disk")
    if pg:
        loaded, vacuum, checkpoint = facts["pg_load"]
        lines += [f"- {pg.settings}; a fresh cluster (tools/pg-server start --durable) in the work area, on the same "
                  f"disk as LMDB's",
                  "- PostgreSQL load: `registry-bench load --postgres-url` (PostgresRegistryStore.importRecords, the "
                  "path of",
                  "  `registryd import --store postgres`; 50-device chunks, one transaction each, 4 at once) in",
                  f"  {loaded['seconds']} s ({loaded['devicesPerSecond']} devices/s, {loaded['retries']} chunks "
                  f"retried),",
                  f"  then VACUUM (ANALYZE) {vacuum} s and CHECKPOINT {checkpoint} s; database {facts['pg_bytes']} bytes"]
    if options.against:
        loaded, vacuum, checkpoint = facts["pg_rev_load"]
        lines += [f"- REV {options.against_sha[:7]} ({facts['rev_built']}): its own database (registry_rev) on the "
                  f"same server, loaded",
                  f"  by its own `registry-bench load` in {loaded['seconds']} s, VACUUM (ANALYZE) {vacuum} s, "
                  f"CHECKPOINT {checkpoint} s; this tree is {git_head(run)}"]
    for side, server in started:
        flags = f" --store postgres --postgres-pool-size {side.pool}" if side.pool else ""
        lines.append(f"- {side.label}: `registryd serve{flags}`, first /healthz after {server.start_ms:.1f} ms")
    if peer:
        loaded, vacuum, checkpoint = facts["peer_load"]
        workers = ", ".join(side.name[len("peer"):] for side in options.peers)
        age = os.environ.get("PEER_CONN_MAX_AGE")
        connections = (f"CONN_MAX_AGE={age} from PEER_CONN_MAX_AGE{' (a new connection per request)' if age == '0' else ''}"
                       if age else "one persistent connection per worker")
        lines += [f"- the peer ({peer.versions}): tools/peer/ under gunicorn, {workers} sync workers",
                  f"  (--preload), DEBUG off, no authentication (APNSDeviceViewSet), {connections}, autocommit;",
                  f"  database `peer` on the same PostgreSQL server: {thousands(facts['size'])} devices through "
                  f"Django's ORM (bulk_create) in {loaded} s,",
                  f"  then VACUUM (ANALYZE) {vacuum} s and CHECKPOINT {checkpoint} s; measured in the {PEER_WORKLOAD} "
                  f"rounds only:",
                  "  POST /device/apns/ with a registered token and its fields (an update of that device, "
                  "UPDATE_ON_DUPLICATE_REG_ID)"]
    plural = "" if options.rounds == "1" else "s"
    lines += [f"- every server ran throughout, each idle while another was measured; per workload, {options.rounds} "
              f"round{plural}",
              f"  of every store{' (and the peer)' if peer else ''}, {options.duration} s each, the first one "
              f"rotating; the same wrk script, JWTs ({thousands(sample)} users) and keys for every store", ""]
    return "\n".join(lines) + "\n"


class Reference:
    """What the upsert rates are divided by: the peer's median launch upsert in this run (with several worker
    counts, the highest median), or the quoted 240/s."""

    def __init__(self, rounds, peers):
        rates = {side.name: median(float(r.row.rps) for r in rounds if r.side is side) for side in peers}
        self.measured = bool(rates)
        self.rate, self.flagged, self.words = DJANGO_UPSERTS, False, ""
        if self.measured:
            best = max(peers, key=lambda side: rates[side.name])
            self.rate = rates[best.name]
            self.flagged = any(r.row.flagged for r in rounds if r.side is best)
            self.words = f"{best.label}’s {commas(self.rate)} req/s measured in this run"
        else:
            self.words = f"django-push-notifications’ {DJANGO_UPSERTS}/s (quoted, not measured in this run)"
        self.head = "peer (measured in this run)" if self.measured else f"{DJANGO_UPSERTS}/s (quoted)"


def git_head(run):
    head = against.git(run, "rev-parse", "--short=7", "HEAD")
    return head + (" with uncommitted changes" if against.git(run, "status", "--porcelain", "--untracked-files=no") else "")


def stores_table(run, rounds):
    """Per workload each store's (and the peer's) median req/s (range) and p99, ratios to LMDB and to the
    peer's measured rate (or the quoted 240/s); the launch upsert goal per PostgreSQL store; then every
    round with its CPU per request."""
    sides = run.options.sides
    shown = sides + run.options.peers
    base = next((side for side in sides if side.name == "lmdb"), None)
    order = list(dict.fromkeys(r.workload for r in rounds))
    reference = Reference(rounds, run.options.peers)
    lines = [comparison_head(sides, shown, base, reference)]
    ratios = len(sides) - 1 if base else 0
    lines.append("| --- |" + " ---: | ---: |" * len(shown) + " ---: |" * ratios + " ---: |" * len(sides))
    medians = {}
    for workload in order:
        lines.append(comparison_row(sides, shown, base, workload, rounds, medians, reference))
    lines.append("")
    for side in sides:
        if side.pool and PEER_WORKLOAD in order:
            lines.append(goal_line(side, rounds, medians, reference))
    for side in sides:
        twin = next((t for t in sides if t.rev and t.name == side.name + "-rev"), None)
        if twin:
            ratios = ", ".join(f"{w} {medians[side.name, w] / medians[twin.name, w]:.3f}"
                               for w in order if medians[twin.name, w] > 0)
            lines.append(f"- {side.label} ÷ {twin.label} (median req/s): {ratios}")
    if reference.measured:
        lines.append(cpu_line(run, shown, rounds))
    lines.append("")
    lines += every_round(run, rounds)
    return "\n".join(lines) + "\n"


def comparison_head(sides, shown, base, reference):
    head = "| workload |" + "".join(f" {s.label} req/s, median (range) | {s.label} p99 ms |" for s in shown)
    if base:
        head += "".join(f" {s.label} ÷ LMDB |" for s in sides if s is not base)
    return head + "".join(f" {s.label} ÷ {reference.head} |" for s in sides)


def of(rounds, side, workload):
    return [r for r in rounds if r.side is side and r.workload == workload]


def comparison_row(sides, shown, base, workload, rounds, medians, reference):
    line = f"| {workload} |"
    for side in shown:
        mine = of(rounds, side, workload)
        if not mine:
            line += " - | - |"
            continue
        rates = [float(r.row.rps) for r in mine]
        medians[side.name, workload] = median(rates)
        flagged = "**FLAGGED** " if any(r.row.flagged for r in mine) else ""
        line += (f" {flagged}{commas(median(rates))} ({commas(min(rates))}–{commas(max(rates))}) | "
                 f"{median(r.row.p99 for r in mine):.2f} |")
    if base:
        m = medians[base.name, workload]
        line += "".join(f" {medians[s.name, workload] / m:.3f} |" if m > 0 else " - |" for s in sides if s is not base)
    for side in sides:
        usable = workload in WRITE_WORKLOADS and reference.rate > 0
        line += f" {medians[side.name, workload] / reference.rate:.1f}× |" if usable else " - |"
    return line


def goal_line(side, rounds, medians, reference):
    v = medians[side.name, PEER_WORKLOAD]
    flagged = any(r.row.flagged for r in of(rounds, side, PEER_WORKLOAD)) or reference.flagged
    met = "met" if v >= 10 * reference.rate and not flagged else "not met"
    return (f"- Launch upsert ({PEER_WORKLOAD}) on {side.label}: {commas(v)} req/s, {v / reference.rate:.1f}× "
            f"{reference.words}; goal ≥ 10× ({commas(10 * reference.rate)}/s): **{met}**")


def cpu_ms(run, r):
    """(server, PostgreSQL) CPU ms per request of a round; PostgreSQL None for LMDB."""
    n = float(r.row.rps) * run.duration
    tick = os.sysconf("SC_CLK_TCK")
    if n <= 0:
        return 0.0, None
    return 1000 * r.registryd_ticks / tick / n, (1000 * r.pg_ticks / tick / n if r.pg_ticks is not None else None)


def cpu_line(run, shown, rounds):
    """The CPU per launch upsert of every store and peer (medians over the rounds): a figure less moved than
    the rates by other work on the machine, which slows the peer's few synchronous workers the most."""
    parts = []
    for side in shown:
        mine = [cpu_ms(run, r) for r in of(rounds, side, PEER_WORKLOAD)]
        if not mine:
            continue
        server = median(m[0] for m in mine)
        if mine[0][1] is None:
            parts.append(f"{side.label} {server:.2f} ms")
        else:
            pg = median(m[1] for m in mine)
            parts.append(f"{side.label} {server:.2f} + {pg:.2f} = {server + pg:.2f} ms")
    return (f"- CPU per launch upsert ({PEER_WORKLOAD}), the server’s + PostgreSQL’s, medians over the rounds: "
            + "; ".join(parts))


def every_round(run, rounds):
    tick = os.sysconf("SC_CLK_TCK")
    seconds = run.duration
    peer = any(r.side.peer for r in rounds)
    server = "registryd’s own (the peer’s rows: gunicorn’s master and workers)" if peer else "registryd’s own"
    lines = [f"Every round, in the order run. CPU: {server}, and the PostgreSQL server’s (postmaster, backends,",
             "WAL writer, checkpointer), per request and in cores busy over the round (of 2; wrk uses the rest):", "",
             f"| workload | round | store | req/s | p50 ms | p99 ms | non-2xx | socket errors | "
             f"{'server' if peer else 'registryd'} CPU ms/req | "
             f"PostgreSQL CPU ms/req | cores busy ({'server' if peer else 'registryd'} + PostgreSQL) | peak RSS MiB | "
             "statuses | "
             "load avg (1 min) before |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for r in rounds:
        row = r.row
        n = float(row.rps) * seconds
        registryd_ms = f"{1000 * r.registryd_ticks / tick / n:.3f}" if n > 0 else "-"
        pg_ms = f"{1000 * r.pg_ticks / tick / n:.3f}" if r.pg_ticks is not None and n > 0 else "-"
        busy = f"{(r.registryd_ticks + (r.pg_ticks or 0)) / tick / seconds:.2f}"
        lines.append(f"| {r.workload} | {r.number} | {r.side.label} | {float(row.rps):.0f} | {float(row.p50):.2f} | "
                     f"{float(row.p99):.2f} | {int(float(row.non2xx))} | {int(float(row.errors))} | {registryd_ms} | "
                     f"{pg_ms} | {busy} | {row.rss_kib / 1024:.0f} | {row.statuses} | {r.load} |")
    return lines


def totals(start, end, peer):
    """PostgreSQL's commits, rollbacks and WAL over all its rounds, and the rows written per table."""
    d = delta(start[0], end[0])
    whose = "; WAL figures are the server's, the peer's rounds included" if peer else ""
    lines = ["",
             f"PostgreSQL over all its rounds (pg_stat_database of registryd's database, pg_stat_wal{whose}): "
             f"{int(d[0])} commits (a read is one too), "
             f"{int(d[1])} rollbacks",
             f"(conflicts the store retries, and aborted attempts), {int(d[2])} WAL flushes (fsync), "
             f"{d[3] / d[2] if d[2] > 0 else 0:.3f} ms each on average,",
             f"{int(d[4])} WAL writes, {d[5] / 1e6:.0f} MB of WAL.",
             "",
             "Rows written over all PostgreSQL rounds (pg_stat_user_tables; a HOT update writes no index entry):",
             "",
             "| table | inserted | updated | of which HOT | deleted |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for table, after in end[1].items():
        changes = delta(start[1].get(table, [0, 0, 0, 0]), after)
        lines.append(f"| {table} | " + " | ".join(str(int(c)) for c in changes) + " |")
    return "\n".join(lines) + "\n"


def statements_report(run, rounds):
    """With --pg-statements: per PostgreSQL round its commits, rollbacks and WAL flushes per request; then the
    last round's statements per store and workload."""
    measured = [r for r in rounds if r.pg_delta is not None]
    if not measured:
        return ""
    lines = ["", "### PostgreSQL per round (counters read 11 s after each round, once its connections handed them over)",
             "",
             "| store | workload | round | requests | commits per request | rollbacks per request | WAL flushes per "
             "request | commits per WAL flush | mean WAL flush ms |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in measured:
        lines.append(round_counters_row(r))
    lines += ["", "(a read commits too: each is one implicit transaction)"]
    last = int(run.options.rounds)
    for side in run.options.sides:
        for workload in COMPARED_WORKLOADS:
            chosen = [r for r in measured if r.side is side and r.workload == workload and r.number == last]
            if side.pool and chosen and chosen[0].statements:
                lines += ["", f"#### {side.label}, {workload}, round {last}: statements (pg_stat_statements)", ""]
                lines += statements_table(chosen[0].statements, float(chosen[0].row.requests or 0))
    return "\n".join(lines) + "\n"


def round_counters_row(r):
    d, n = r.pg_delta, float(r.row.requests or 0)
    per = lambda value, digits: f"{value / n if n else 0:.{digits}f}"
    flushes = d[2]
    return (f"| {r.side.label} | {r.workload} | {r.number} | {int(n)} | {per(d[0], 2)} | {per(d[1], 3)} | "
            f"{per(d[2], 3)} | {f'{d[0] / flushes:.1f}' if flushes else '-'} | "
            f"{f'{d[3] / flushes:.3f}' if flushes else '-'} |")


def statements_table(statements, requests):
    """A round's statements (pg_stat_statements) per request, as Markdown lines."""
    total = sum(float(s[1]) + float(s[2]) for s in statements)
    lines = [f"{int(requests)} requests; database time (execution + planning) "
             f"{total / requests if requests > 0 else 0:.3f} ms per request", "",
             "| statement | calls per request | mean execution ms | mean planning ms | share of database time |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for calls, execution, planning, _, query in statements:
        calls, execution, planning = float(calls), float(execution), float(planning)
        text = query.replace("|", "\\|")
        text = text[:109] + "…" if len(text) > 110 else text
        lines.append(f"| `{text}` | {calls / requests if requests > 0 else 0:.2f} | "
                     f"{execution / calls if calls else 0:.4f} | {planning / calls if calls else 0:.4f} | "
                     f"{100 * (execution + planning) / total if total > 0 else 0:.1f}% |")
    return lines
