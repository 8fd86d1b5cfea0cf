"""A throwaway three-node PostgreSQL 15 cluster managed by Patroni, with one
etcd (v3 API), all on 127.0.0.1 in one temporary folder.

Layout of BASE:
  etcd/            etcd's data (fresh per run: etcd keeps /service/<scope>/* forever)
  etcd.log
  nK/              node K's folder (owned by postgres, 0700): patroni.yml, pgpass,
                   the Unix socket, patroni.log, pglog/postgresql.log, data/
Patroni runs as postgres (pg_ctl refuses root) through `runuser -u postgres`;
runuser forks, so the Patroni pid we signal is runuser's child. Postmasters
are reparented away from Patroni and outlive it: they are found and stopped
through data/postmaster.pid.
"""

import json
import os
import pwd
import secrets
import signal
import string
import subprocess
import time
import urllib.request

import procs
import registryd  # tools/lib, on sys.path through ha_test.py

HERE = os.path.dirname(os.path.abspath(__file__))
PG_BIN = "/usr/lib/postgresql/15/bin"
SCOPE = "registryd-ha"


class ClusterError(Exception):
    pass


def http_json(url, timeout=1.0):
    """GET url and decode its JSON body; None on any failure."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.loads(response.read().decode())
    except Exception:
        return None


class Node:
    def __init__(self, cluster, index, pg_port, rest_port):
        self.cluster = cluster
        self.name = "n%d" % index
        self.pg_port = pg_port
        self.rest_port = rest_port
        self.dir = os.path.join(cluster.base, self.name)
        self.data_dir = os.path.join(self.dir, "data")
        self.config = os.path.join(self.dir, "patroni.yml")
        self.log = os.path.join(self.dir, "patroni.log")
        self.pg_log = os.path.join(self.dir, "pglog", "postgresql.log")
        self.runuser = None   # the Popen of `runuser -u postgres -- patroni ...`
        self.patroni_pid = None
        self.down = False     # killed on purpose (the whole node): not expected back

    def write_config(self, etcd_port, passwords):
        with open(os.path.join(HERE, "patroni.yml.in")) as f:
            template = string.Template(f.read())
        text = template.substitute(
            scope=SCOPE, name=self.name, rest_port=self.rest_port, pg_port=self.pg_port,
            etcd_port=etcd_port, data_dir=self.data_dir, node_dir=self.dir,
            superuser_password=passwords["superuser"], replication_password=passwords["replication"],
            rewind_password=passwords["rewind"])
        postgres = pwd.getpwnam("postgres")
        os.makedirs(os.path.join(self.dir, "pglog"))
        with open(self.config, "w") as f:
            f.write(text)
        for path in (self.dir, os.path.join(self.dir, "pglog"), self.config):
            os.chown(path, postgres.pw_uid, postgres.pw_gid)
        os.chmod(self.dir, 0o700)
        os.chmod(self.config, 0o600)

    def start(self):
        log = open(self.log, "ab")
        self.runuser = subprocess.Popen(
            ["runuser", "-u", "postgres", "--", "/usr/bin/patroni", self.config],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            cwd=self.dir, start_new_session=True)
        log.close()
        self.cluster.started_pids.append(("runuser (%s)" % self.name, self.runuser.pid))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            kids = procs.children(self.runuser.pid)
            if kids:
                self.patroni_pid = kids[0]
                self.cluster.started_pids.append(("patroni %s" % self.name, self.patroni_pid))
                return
            if self.runuser.poll() is not None:
                raise ClusterError("%s: runuser exited with %s (see %s)" % (self.name, self.runuser.returncode, self.log))
            time.sleep(0.02)
        raise ClusterError("%s: no patroni process under runuser %d after 10 s" % (self.name, self.runuser.pid))

    def postmaster(self):
        return procs.postmaster_pid(self.data_dir)

    def kill_postmaster(self):
        """SIGKILL of this node's postmaster; returns its pid (None when it was not running).
        Its backends and walsenders live on until they next wait; they are
        remembered, and stopped at the end if they still run."""
        pid = self.postmaster()
        if pid is not None:
            self.remember_orphans(pid)
            os.kill(pid, signal.SIGKILL)
        return pid

    def remember_orphans(self, postmaster):
        for p in procs.children(postmaster):
            self.cluster.orphans.append(("postgres process of %s" % self.name, p, procs.start_time(p)))

    def kill_whole(self):
        """SIGKILL of Patroni, its postmaster and every process of that postmaster
        (backends and walsenders outlive a killed postmaster and keep serving
        the connections they have), as a machine that dies."""
        pid = self.postmaster()
        backends = procs.children(pid) if pid is not None else []
        if pid is not None:
            self.remember_orphans(pid)
        if self.patroni_pid and procs.running(self.patroni_pid):
            os.kill(self.patroni_pid, signal.SIGKILL)
        for p in ([pid] if pid is not None else []) + backends:
            procs.signal_pid(p, signal.SIGKILL)
        self.down = True
        if self.runuser is not None:
            try:
                self.runuser.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def stop(self, log=print):
        if self.patroni_pid:
            # TERM: Patroni stops its postgres (about 6 s) and exits.
            procs.stop_pid(self.patroni_pid, "patroni %s" % self.name, grace=20, log=log)
        if self.runuser is not None:
            if self.runuser.poll() is None:
                procs.stop_pid(self.runuser.pid, "runuser (%s)" % self.name, grace=5, log=log)
            self.runuser.poll()
        procs.stop_postmaster(self.data_dir, self.name, log=log)


class Cluster:
    """etcd and three Patroni nodes; `started_pids` lists what was started."""

    def __init__(self, base, log=print):
        self.base = base
        self.log = log
        self.started_pids = []
        self.orphans = []     # (name, pid, start time): processes of a killed postmaster
        ports = registryd.free_ports(8, avoid=procs.RESERVED_PORTS)
        self.etcd_client_port, self.etcd_peer_port = ports[0], ports[1]
        self.nodes = [Node(self, i + 1, ports[2 + 2 * i], ports[3 + 2 * i]) for i in range(3)]
        self.passwords = {k: secrets.token_hex(16) for k in ("superuser", "replication", "rewind")}
        self.etcd = None
        self.etcd_log = os.path.join(base, "etcd.log")

    # -- URLs ---------------------------------------------------------------

    def url(self, database, extra="target_session_attrs=read-write&connect_timeout=2"):
        """The multi-host URL every client uses (the superuser, over TCP with its password)."""
        hosts = ",".join("127.0.0.1:%d" % n.pg_port for n in self.nodes)
        return "postgresql://postgres:%s@%s/%s?%s" % (self.passwords["superuser"], hosts, database, extra)

    def node_url(self, node, database):
        return "postgresql://postgres:%s@127.0.0.1:%d/%s?connect_timeout=2" % (
            self.passwords["superuser"], node.pg_port, database)

    def node_by_port(self, port):
        for n in self.nodes:
            if n.pg_port == port:
                return n
        return None

    def node_by_name(self, name):
        for n in self.nodes:
            if n.name == name:
                return n
        return None

    # -- start --------------------------------------------------------------

    def start(self):
        etcd_dir = os.path.join(self.base, "etcd")
        os.makedirs(etcd_dir, mode=0o700)
        client = "http://127.0.0.1:%d" % self.etcd_client_port
        peer = "http://127.0.0.1:%d" % self.etcd_peer_port
        log = open(self.etcd_log, "ab")
        self.etcd = subprocess.Popen(
            ["/usr/bin/etcd", "--name", "e1", "--data-dir", etcd_dir,
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", "e1=" + peer, "--initial-cluster-state", "new",
             "--initial-cluster-token", "registryd-ha-%d" % os.getpid()],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.started_pids.append(("etcd", self.etcd.pid))
        deadline = time.monotonic() + 15
        while True:
            health = http_json(client + "/health")
            if health and health.get("health") == "true":
                break
            if self.etcd.poll() is not None:
                raise ClusterError("etcd exited with %s (see %s)" % (self.etcd.returncode, self.etcd_log))
            if time.monotonic() > deadline:
                raise ClusterError("etcd not healthy after 15 s (see %s)" % self.etcd_log)
            time.sleep(0.1)
        os.chmod(self.base, 0o755)   # postgres must reach its node folders
        for n in self.nodes:
            n.write_config(self.etcd_client_port, self.passwords)
        for n in self.nodes:
            n.start()

    # -- state --------------------------------------------------------------

    def state(self):
        """Patroni's /cluster, asked of each live node in turn; None when none answers."""
        for n in self.nodes:
            if n.down:
                continue
            data = http_json("http://127.0.0.1:%d/cluster" % n.rest_port, timeout=1.0)
            if data and "members" in data:
                return data
        return None

    @staticmethod
    def summary(state):
        if not state:
            return "no answer from any Patroni"
        return ", ".join("%s %s/%s" % (m["name"], m.get("role"), m.get("state")) for m in state["members"])

    def healthy(self, state, all_running=False):
        """The leader's name when there is a running leader and a running `Sync Standby`
        (with all_running: and every node not killed on purpose runs), else None."""
        if not state:
            return None
        members = state["members"]
        leader = [m for m in members if m.get("role") == "leader" and m.get("state") == "running"]
        sync = [m for m in members if m.get("role") == "sync_standby" and m.get("state") == "running"]
        if len(leader) != 1 or not sync:
            return None
        if all_running:
            live = {n.name for n in self.nodes if not n.down}
            up = {m["name"] for m in members if m.get("state") == "running"}
            if not live <= up:
                return None
        return leader[0]["name"]

    def wait_healthy(self, timeout, all_running=False, stop=None):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if stop is not None and stop():
                break
            last = self.state()
            leader = self.healthy(last, all_running)
            if leader:
                return self.node_by_name(leader)
            time.sleep(0.1)
        raise ClusterError("no leader with a sync standby%s after %.0f s (last seen: %s)" % (
            " and all nodes running" if all_running else "", timeout, self.summary(last)))

    # -- stop ---------------------------------------------------------------

    def stop(self):
        """Stops everything this cluster started, by pid: the replicas' Patronis
        (in parallel; each TERM stops its postgres, and a sync standby waits
        for the leader to release it), then the leader's, leftover
        postmasters and processes of killed postmasters, then etcd."""
        leader = self.healthy(self.state()) if self.etcd is not None and self.etcd.poll() is None else None
        waves = [[n for n in self.nodes if n.name != leader], [n for n in self.nodes if n.name == leader]]
        for wave in waves:
            for n in wave:
                if n.patroni_pid and procs.running(n.patroni_pid):
                    procs.signal_pid(n.patroni_pid, signal.SIGTERM)
            for n in wave:
                n.stop(log=self.log)
        for name, pid, started in self.orphans:
            if procs.running(pid) and procs.start_time(pid) == started:
                procs.stop_pid(pid, name, grace=5, log=self.log)
        if self.etcd is not None:
            if self.etcd.poll() is None:
                procs.stop_pid(self.etcd.pid, "etcd", grace=10, log=self.log)
            self.etcd.poll()

    def leftovers(self):
        """What still runs of what we started (should be nothing after stop)."""
        left = [(name, pid) for name, pid in self.started_pids if procs.running(pid)]
        left += [(name, pid) for name, pid, started in self.orphans
                 if procs.running(pid) and procs.start_time(pid) == started]
        for n in self.nodes:
            pid = n.postmaster()
            if pid is not None:
                left.append(("postmaster %s" % n.name, pid))
        return left
