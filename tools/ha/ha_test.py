"""tools/ha-test's driver (run by tools/ha-test with /usr/bin/python3, as root).

A three-node Patroni cluster (strict synchronous replication) under
concurrent writers; three failovers while they write: SIGKILL of the
leader's postmaster, again on the new leader, then SIGKILL of the whole
leader node (Patroni and postmaster). Measured per failover: the database's
failover time (kill until a separate probe's write commits on the new
leader) and the time without an acknowledged client write. Then every
acknowledged write is checked to be there. See tools/ha-test for the options.
"""

import argparse
import collections
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))

import cluster as clusterlib  # noqa: E402
import dbload  # noqa: E402
import delivery as deliverylib  # noqa: E402
import procs  # noqa: E402
import registry  # noqa: E402
import registryd  # noqa: E402  (tools/lib: build, free ports, start and stop registryd, mint-token)

RECOVERY_TIMEOUT = 90   # seconds from a kill until writes and a sync standby are back
REJOIN_TIMEOUT = 60     # then until every node not killed on purpose runs again


class Failure(Exception):
    pass


class Interrupted(BaseException):
    pass


T0 = time.monotonic()


def say(message):
    print("[%6.1f] %s" % (time.monotonic() - T0, message), flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="tools/ha-test", description=__doc__.split("\n\n")[1])
    p.add_argument("--db-only", action="store_true",
                   help="no registryd: the writers write straight to PostgreSQL (psycopg2)")
    p.add_argument("--bin", help="the registryd binary (default: this tree's, built in release mode)")
    p.add_argument("--writers", type=int, default=8, help="concurrent writers (default 8)")
    p.add_argument("--duration", type=float, default=5.0,
                   help="seconds of steady writing before the first failover and after each recovery (default 5)")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, data) after a passing run")
    p.add_argument("--delivery", action="store_true",
                   help="also an activity fan-out through one tools/fake-apns during the failovers, then its checks")
    p.add_argument("--delivery-tokens", type=int, default=20000, metavar="N",
                   help="activity tokens of the fan-out (default 20000)")
    p.add_argument("--delivery-delay-ms", type=int, default=6000, metavar="MS",
                   help="the fake answers every token 200 after MS ms (default 6000)")
    p.add_argument("--delivery-streams", type=int, default=1000, metavar="N",
                   help="the fake's --max-streams: streams per connection (default 1000, as APNs)")
    p.add_argument("--settle-timeout", type=float, default=600, metavar="S",
                   help="seconds after the failovers to wait for the notification to settle (default 600)")
    args = p.parse_args(argv)
    if args.delivery and args.db_only:
        p.error("--delivery needs registryd (not --db-only)")
    if args.delivery_tokens < 1 or args.delivery_streams < 1 or args.delivery_delay_ms < 0:
        p.error("--delivery-tokens and --delivery-streams must be at least 1, --delivery-delay-ms not negative")
    if args.writers < 1:
        p.error("--writers must be at least 1")
    if args.duration < 0:
        p.error("--duration must not be negative")
    if args.bin:
        args.bin = os.path.abspath(args.bin)   # registryd runs in its node's folder
    return args


def on_signal(signum, _frame):
    raise Interrupted(signal.Signals(signum).name)


def fmt(seconds):
    return "-" if seconds is None else "%.1f" % seconds


class Event:
    def __init__(self, number, kind):
        self.number = number
        self.kind = kind              # "postmaster" or "node"
        self.victim = None
        self.new_leader = None
        self.t_kill = None
        self.t_kill_wall = None
        self.db_failover = None       # kill -> the probe's first commit (sent after the kill)
        self.db_port = None
        self.write_gap = None         # the longest time without an acknowledged client write, from the kill
        self.write_back = None        # kill -> a client write acknowledged after the probe's first commit
        self.old_leader_until = None  # kill -> the probe's last commit on the killed leader (its backends outlive the postmaster)
        self.sync_back = None         # kill -> a new leader with a running Sync Standby (Patroni /cluster)
        self.all_back = None          # kill -> every node not killed on purpose runs
        self.errors = None            # Counter of client errors from this kill to the next
        self.fanout = None            # --delivery: the notification's latest counts at the kill

    @property
    def title(self):
        what = "SIGKILL postmaster" if self.kind == "postmaster" else "SIGKILL node (Patroni+postmaster)"
        return "%d %s of leader %s" % (self.number, what, self.victim or "?")


class Run:
    def __init__(self, args):
        self.args = args
        self.base = tempfile.mkdtemp(prefix="registryd-ha.", dir="/tmp")
        self.cluster = clusterlib.Cluster(self.base, log=say)
        self.recorder = dbload.Recorder()
        self.stop_writers = threading.Event()
        self.writers = []
        self.probe = None
        self.events = []
        self.t_load = None
        self.lost = None
        self.wrong = None             # registryd: acknowledged devices holding another token than their sequence's
        self.checks = []              # (label, ok)
        self.nodes = []               # registryd nodes
        self.run_id = os.path.basename(self.base)
        self.started_pids = []        # registryd's
        self.exit_statuses = {}
        self.delivery = None          # --delivery: deliverylib.Delivery

    # -- phases ---------------------------------------------------------------

    def start_cluster(self):
        say("starting etcd and 3 Patroni nodes in %s" % self.base)
        t = time.monotonic()
        self.cluster.start()
        leader = self.cluster.wait_healthy(90, all_running=True)
        say("cluster up in %.1f s: %s" % (time.monotonic() - t, self.cluster.summary(self.cluster.state())))
        dbload.setup_databases(self.cluster.url, lambda db: [(n.name, self.cluster.node_url(n, db)) for n in self.cluster.nodes])
        say("databases registry and ha_probe created on leader %s" % leader.name)

    def start_registryd(self):
        url = self.cluster.url("registry")
        extra = []
        if self.args.delivery:
            self.delivery = deliverylib.Delivery(self.base, self.args.delivery_tokens, self.args.delivery_delay_ms,
                                                 self.args.delivery_streams, log=say)
            self.delivery.start_fake(self.started_pids)
            extra = self.delivery.serve_flags()
        first = registry.RegistryNode(self.args.bin, "r1", self.base, url, extra_flags=extra)
        second = registry.RegistryNode(self.args.bin, "r2", self.base, url, secrets_from=first, extra_flags=extra)
        for node in (first, second):
            t = time.monotonic()
            self.nodes.append(node)
            node.start(self.started_pids)
            say("registryd %s on 127.0.0.1:%d, healthy %.1f s after start: %s" % (
                node.name, node.port, time.monotonic() - t, node.describe()))
        with open(os.path.join(first.secrets_dir, "internal-api.key")) as f:
            self.api_key = f.read().rstrip("\n")
        if self.delivery is not None:
            self.delivery.import_tokens(self.args.bin, first, url)

    def start_fanout(self):
        self.delivery.post(self.nodes, self.api_key)
        self.delivery.wait_started()

    def start_load(self):
        self.probe = dbload.Probe(self.cluster.url("ha_probe"))
        self.probe.start()
        if not self.args.db_only:
            jwts = [registry.mint_token(self.nodes[0], "ha-user-%d" % i) for i in range(self.args.writers)]
        for i in range(self.args.writers):
            if self.args.db_only:
                w = dbload.DBWriter(i, self.cluster.url("ha_probe"), self.recorder, self.stop_writers)
            else:
                w = registry.HTTPWriter(i, self.nodes, jwts[i], self.run_id, self.recorder, self.stop_writers)
            self.writers.append(w)
            w.start()
        self.t_load = time.monotonic()
        say("%d writers and the probe started" % len(self.writers))

    def steady(self):
        end = time.monotonic() + self.args.duration
        while time.monotonic() < end:
            time.sleep(0.1)
        say("%d writes acknowledged so far" % self.recorder.ack_count)

    def failover(self, kind):
        event = Event(len(self.events) + 1, kind)
        self.events.append(event)
        victim = self.cluster.wait_healthy(REJOIN_TIMEOUT, all_running=True)
        event.victim = victim.name
        waited = time.monotonic()
        while self.recorder.first_ack_after(time.monotonic() - 2) is None:
            if time.monotonic() - waited > 30:
                raise Failure("event %d: no acknowledged client write in the last 30 s before the kill (errors: %s)" % (
                    event.number, dict(self.recorder.errors_between(waited, time.monotonic()).most_common(3))))
            time.sleep(0.1)
        event.t_kill = time.monotonic()
        event.t_kill_wall = time.time()
        if self.delivery is not None:
            event.fanout = self.delivery.snapshot()
        if kind == "postmaster":
            pid = victim.kill_postmaster()
            if pid is None:
                raise Failure("event %d: leader %s has no postmaster to kill" % (event.number, victim.name))
            say("event %d: SIGKILL postmaster %d of leader %s" % (event.number, pid, victim.name))
        else:
            victim.kill_whole()
            say("event %d: SIGKILL Patroni %s and its postmaster (leader %s)" % (event.number, victim.patroni_pid, victim.name))
        t_kill = event.t_kill
        deadline = t_kill + RECOVERY_TIMEOUT
        while time.monotonic() < deadline:
            now = time.monotonic()
            if event.db_failover is None:
                found = self.probe.first_success_after(t_kill, not_port=victim.pg_port)
                if found:
                    event.db_failover = found[0] - t_kill
                    node = self.cluster.node_by_port(found[1])
                    event.db_port = node.name if node else str(found[1])
                    say("event %d: the probe committed on %s %.2f s after the kill" % (event.number, event.db_port, event.db_failover))
            if event.sync_back is None:
                leader = self.cluster.healthy(self.cluster.state())
                if leader and leader != victim.name:
                    event.sync_back = time.monotonic() - t_kill
                    event.new_leader = leader
                    say("event %d: leader %s with a sync standby %.2f s after the kill" % (event.number, leader, event.sync_back))
            if event.db_failover is not None and event.write_back is None:
                end = self.recorder.first_ack_after(t_kill + event.db_failover)
                if end is not None:
                    event.write_back = end - t_kill
            if event.db_failover is not None and event.write_back is not None and event.sync_back is not None:
                break
            time.sleep(max(0.0, 0.05 - (time.monotonic() - now)))
        else:
            raise Failure("event %d: not recovered %d s after the kill (probe %s, client writes %s, sync standby %s; cluster: %s)" % (
                event.number, RECOVERY_TIMEOUT, fmt(event.db_failover), fmt(event.write_back), fmt(event.sync_back),
                self.cluster.summary(self.cluster.state())))
        self.cluster.wait_healthy(REJOIN_TIMEOUT, all_running=True)
        event.all_back = time.monotonic() - t_kill
        say("event %d: all live nodes running %.1f s after the kill: %s" % (
            event.number, event.all_back, self.cluster.summary(self.cluster.state())))
        self.steady()
        event.write_gap = self.recorder.longest_gap(t_kill, time.monotonic())
        last = self.probe.last_success_on(victim.pg_port, t_kill)
        event.old_leader_until = None if last is None else last - t_kill
        say("event %d: longest time without an acknowledged client write %.2f s%s" % (
            event.number, event.write_gap, "" if last is None else
            "; the killed leader's surviving backend still committed the probe's writes until %.2f s" % event.old_leader_until))

    def stop_load(self):
        self.stop_writers.set()
        for w in self.writers:
            w.join(15)
            if w.is_alive():
                say("%s still busy 15 s after stop" % w.name)
        if self.probe is not None:
            self.probe.stop.set()
            self.probe.join(15)
        t_end = time.monotonic()
        for i, event in enumerate(self.events):
            until = self.events[i + 1].t_kill if i + 1 < len(self.events) else t_end
            event.errors = self.recorder.errors_between(event.t_kill, until)
        say("writers stopped: %d writes acknowledged, %d errors" % (self.recorder.ack_count, len(self.recorder.errors)))

    def verify(self):
        leader = self.cluster.wait_healthy(REJOIN_TIMEOUT)
        if self.args.db_only:
            lost = dbload.lost_db_writes(self.cluster.url("ha_probe"), self.recorder.acked)
            self.lost = len(lost)
            for key, acked, stored in lost[:20]:
                say("LOST: %s acknowledged at sequence %d, stored %s" % (key, acked, stored))
        else:
            lost, wrong = registry.verify_acknowledged(self.nodes, self.api_key, self.recorder.acked, self.run_id)
            self.lost = len({(u, d) for u, d, _, _, _ in lost})
            self.wrong = len({(u, d) for u, d, _, _ in wrong})
            for user, device, acked, stored, node in lost[:20]:
                say("LOST: %s/%s acknowledged at sequence %d; %s answers %s" % (
                    user, device, acked, node, "no device" if stored is None else "sequence %s" % stored))
            for user, device, what, node in wrong[:20]:
                say("WRONG: %s/%s on %s: %s" % (user, device, node, what))
            self.checks.append(("acknowledged devices hold the token sent with their sequence", not wrong))
            status, output = registry.run_check(self.args.bin, self.nodes[0], self.cluster.node_url(leader, "registry"))
            say("registryd check --store postgres (leader %s): exit %s" % (leader.name, status))
            for line in output.splitlines()[-15:]:
                print("    " + line)
            self.checks.append(("registryd check --store postgres on leader %s: exit %s" % (leader.name, status), status == 0))

    def compare_databases(self):
        """After registryd stopped: a running node rewrites its heartbeat row in
        registry_nodes, so a comparison while it runs may catch a replica between two."""
        leader = self.cluster.wait_healthy(REJOIN_TIMEOUT)
        live = {n.name: n for n in self.cluster.nodes if not n.down}
        for database in (["ha_probe"] if self.args.db_only else ["registry", "ha_probe"]):
            digests = dbload.node_digests({name: self.cluster.node_url(n, database) for name, n in live.items()},
                                          self.cluster.node_url(leader, database), database)
            same = len(set(digests.values())) == 1 and not any(str(v).startswith(("error", "not caught")) for v in digests.values())
            self.checks.append(("database %s identical on %s" % (database, ", ".join(sorted(live))) if same
                                else "database %s DIFFERS between nodes: %s" % (database, digests), same))

    def stop_registryd(self):
        for node in self.nodes:
            if node.server is not None:
                self.exit_statuses[node.name] = node.stop(log=say)
        if self.nodes:
            say("registryd exit statuses after SIGTERM: %s" % ", ".join("%s %s" % kv for kv in sorted(self.exit_statuses.items())))

    def registryd_log_findings(self):
        """What the registryd logs show: lines by level, the superuser password if it leaked."""
        findings = []
        for node in self.nodes:
            try:
                with open(node.log, errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            levels = {}
            for line in text.splitlines():
                level = "other"
                try:
                    level = json.loads(line).get("level", "other")
                except ValueError:
                    pass
                levels[level] = levels.get(level, 0) + 1
            findings.append("%s log lines by level: %s" % (node.name, ", ".join("%s %d" % kv for kv in sorted(levels.items()))))
            if self.cluster.passwords["superuser"] in text:
                findings.append("%s: its log CONTAINS the database password (from --postgres-url)" % node.name)
        return findings

    # -- report ---------------------------------------------------------------

    def report(self):
        client = "db-only writers" if self.args.db_only else "registryd writes"
        rows = [("event", "new leader", "db failover s", "s without %s" % ("db-writer write" if self.args.db_only else "registryd write"),
                 "sync standby back s", "all running s", "old leader committed until s")]
        for e in self.events:
            rows.append((e.title, e.new_leader or "-", fmt(e.db_failover), fmt(e.write_gap), fmt(e.sync_back), fmt(e.all_back),
                         fmt(e.old_leader_until)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        print()
        print("tools/ha-test results (%d %s, %s):" % (self.args.writers, client, "strict synchronous replication, 1 sync standby"))
        for j, r in enumerate(rows):
            print("  " + " | ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
            if j == 0:
                print("  " + "-+-".join("-" * w for w in widths))
        print()
        print("client errors by kind, from each kill to the next (and before the first):")
        if self.events:
            before = self.recorder.errors_between(0, self.events[0].t_kill)
            buckets = [("before event 1", before)] + [("event %d" % e.number, e.errors or {}) for e in self.events]
        else:
            buckets = [("all", self.recorder.errors_between(0, float("inf")))]
        for label, counter in buckets:
            if not counter:
                print("  %-15s none" % label)
            for n, (kind, count) in enumerate(sorted(counter.items(), key=lambda kv: -kv[1])):
                print("  %-15s %6d  %s" % (label if n == 0 else "", count, kind))
        if self.nodes:
            print()
            print("registryd's logged errors by cause (the reasons behind its 503s), same windows:")
            causes = registry.log_causes(self.nodes)
            edges = [e.t_kill_wall for e in self.events]
            for label, lo, hi in self.windows(edges):
                counter = collections.Counter(cause for at, _, cause in causes if lo <= at < hi)
                if not counter:
                    print("  %-15s none" % label)
                for n, (kind, count) in enumerate(sorted(counter.items(), key=lambda kv: -kv[1])):
                    print("  %-15s %6d  %s" % (label if n == 0 else "", count, kind))
        if self.probe is not None and self.probe.errors:
            print("probe errors (not client errors): %s" % ", ".join(
                "%d %s" % (c, k) for k, c in sorted(self.probe.errors.items(), key=lambda kv: -kv[1])))
        print()
        print("acknowledged writes:        %d (%d distinct keys)" % (self.recorder.ack_count, len(self.recorder.acked)))
        print("client errors:              %d" % len(self.recorder.errors))
        print("acknowledged writes lost:   %s" % ("-" if self.lost is None else self.lost))
        if self.wrong is not None:
            print("acknowledged devices with a wrong token: %d" % self.wrong)
        for label, ok in self.checks:
            print("check:                      %s: %s" % (label, "ok" if ok else "FAILED"))
        if self.exit_statuses:
            print("registryd exit after SIGTERM: %s" % ", ".join("%s %s" % kv for kv in sorted(self.exit_statuses.items())))
        for finding in self.registryd_log_findings():
            print(finding)
        if self.delivery is not None:
            self.delivery.report(self.events)

    def settle_fanout(self):
        say("waiting for notification %s to settle (up to %.0f s; a dead node's sending claims become unknown "
            "2 minutes after they were claimed)" % (self.delivery.notification_id, self.args.settle_timeout))
        self.delivery.wait_settled(self.args.settle_timeout)
        mid = [e for e in self.events if e.fanout is not None and (
            e.fanout["resolving"] or e.fanout["counts"].get("queued", 0) or e.fanout["counts"].get("sending", 0))]
        self.checks.append(("the fan-out was running at each kill (%d of %d)" % (len(mid), len(self.events)),
                            len(mid) == len(self.events)))
        self.checks += self.delivery.verify()

    def windows(self, edges):
        """(label, start, end) of the time before the first event and of each event until the next."""
        if not edges:
            return [("all", float("-inf"), float("inf"))]
        out = [("before event 1", float("-inf"), edges[0])]
        for i, lo in enumerate(edges):
            out.append(("event %d" % (i + 1), lo, edges[i + 1] if i + 1 < len(edges) else float("inf")))
        return out

    # -- cleanup --------------------------------------------------------------

    def shutdown(self):
        self.stop_writers.set()
        if self.probe is not None:
            self.probe.stop.set()
        if not self.exit_statuses:
            self.stop_registryd()
        if self.delivery is not None:
            self.delivery.stop_fake()
        self.cluster.stop()
        left = self.cluster.leftovers()
        left += [(name, pid) for name, pid in self.started_pids if procs.running(pid)]
        for name, pid in left:
            say("still running after stop: %s (pid %d)" % (name, pid))
        return not left

    def logs(self):
        paths = [node.log for node in self.nodes] + [self.cluster.etcd_log]
        if self.delivery is not None:
            paths += [self.delivery.request_log, self.delivery.fake.stderr_path if self.delivery.fake else ""]
        for n in self.cluster.nodes:
            paths += [n.log, n.pg_log]
        return paths


def main(argv):
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("tools/ha-test: run as root (Patroni runs as postgres through runuser)", file=sys.stderr)
        return 2
    if not args.db_only and not args.bin:
        args.bin = registryd.registryd_binary("release", log=say)
    if not args.db_only and not os.access(args.bin, os.X_OK):
        print("tools/ha-test: --bin %s is not an executable" % args.bin, file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    run = Run(args)
    passed = False
    reason = None
    try:
        run.start_cluster()
        if not args.db_only:
            run.start_registryd()
        run.start_load()
        if args.delivery:
            run.start_fanout()
        run.steady()
        for kind in ("postmaster", "postmaster", "node"):
            run.failover(kind)
        run.stop_load()
        if args.delivery:
            run.settle_fanout()
        run.verify()
        run.stop_registryd()
        run.compare_databases()
        run.report()
        failed_checks = [label for label, ok in run.checks if not ok]
        passed = run.lost == 0 and not failed_checks
        if not passed:
            reason = "%d acknowledged writes lost" % run.lost if run.lost else "check failed: %s" % "; ".join(failed_checks)
    except Interrupted as e:
        reason = "interrupted (%s)" % e
    except (Failure, clusterlib.ClusterError, registry.RegistryError, deliverylib.DeliveryError, RuntimeError) as e:
        reason = str(e)
    except Exception as e:  # a bug here still stops what we started
        import traceback
        traceback.print_exc()
        reason = "%s: %s" % (type(e).__name__, e)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        say("stopping everything started (by pid)")
        clean = run.shutdown()
    if not clean:
        passed = False
        reason = reason or "processes left running"
    if passed and not args.keep:
        shutil.rmtree(run.base, ignore_errors=True)
    else:
        print("kept %s (remove it when done); logs:" % run.base)
        for path in run.logs():
            print("  " + path)
    if passed:
        print("tools/ha-test: PASSED")
        return 0
    print("tools/ha-test: FAILED: %s" % reason)
    return 130 if reason and reason.startswith("interrupted") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
