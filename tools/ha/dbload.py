"""Direct PostgreSQL clients of tools/ha-test (psycopg2, from Debian's
python3-psycopg2, which patroni depends on): the failover probe, the
--db-only writers and their verification, and error classification.

Times are time.monotonic() seconds.
"""

import collections
import re
import threading
import time

import psycopg2

# Server-side TCP keepalives are answered by the kernel of a live machine;
# these only bound how long a client waits on a peer whose machine vanished.
KEEPALIVES = "keepalives=1&keepalives_idle=2&keepalives_interval=1&keepalives_count=3"


def with_keepalives(url):
    return url + ("&" if "?" in url else "?") + KEEPALIVES


def classify_db_error(error, connecting):
    """A short kind for a psycopg2 error: where it happened and why, without ports or pids."""
    text = str(error)
    reasons = set()
    if "Connection refused" in text:
        reasons.add("refused")
    if "read-only" in text or "read only" in text:
        reasons.add("read-only")
    if "starting up" in text or "shutting down" in text or "recovery mode" in text or "not yet accepting" in text:
        reasons.add("starting/stopping")
    if "timeout expired" in text:
        reasons.add("timeout")
    if ("closed the connection" in text or "terminating connection" in text or "connection already closed" in text
            or "SSL SYSCALL" in text or "no connection to the server" in text or "server closed" in text):
        reasons.add("connection lost")
    if not reasons:
        first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
        first = re.sub(r"\d+", "N", first)[:70]
        reasons.add("%s: %s" % (type(error).__name__, first))
    return "%s (%s)" % ("db connect" if connecting else "db query", ", ".join(sorted(reasons)))


class Recorder:
    """Acknowledged writes and errors of the writers, thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}          # key -> highest acknowledged sequence
        self.ack_count = 0
        self.ack_times = []      # (start, end) of each acknowledged write, in completion order
        self.errors = []         # (start, end, kind)
        self.sent = {}           # (key, sequence) -> what was written (a token), when it matters

    def ack(self, key, sequence, start, end):
        with self.lock:
            if sequence > self.acked.get(key, -1):
                self.acked[key] = sequence
            self.ack_count += 1
            self.ack_times.append((start, end))

    def error(self, kind, start, end):
        with self.lock:
            self.errors.append((start, end, kind))

    def first_ack_after(self, t):
        """End time of the first acknowledged write sent at or after t; None if none yet."""
        with self.lock:
            best = None
            for start, end in reversed(self.ack_times):
                if end < t:
                    break
                if start >= t and (best is None or end < best):
                    best = end
            return best

    def longest_gap(self, t0, t1):
        """The longest time in [t0, t1] with no write acknowledged (completed)."""
        with self.lock:
            ends = sorted(end for _, end in self.ack_times if t0 < end <= t1)
        gap, previous = 0.0, t0
        for end in ends + [t1]:
            gap = max(gap, end - previous)
            previous = end
        return gap

    def errors_between(self, t0, t1):
        """Errors that happened (the request failed) in [t0, t1)."""
        with self.lock:
            return collections.Counter(kind for _, end, kind in self.errors if t0 <= end < t1)


class Probe(threading.Thread):
    """One client writing a row every ~50 ms straight to PostgreSQL through the
    multi-host URL: when, after a kill, the new leader first commits a write.
    No statement_timeout: a cancelled wait for the sync standby would commit
    locally and look acknowledged."""

    def __init__(self, url):
        super().__init__(name="probe", daemon=True)
        self.url = with_keepalives(url)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.successes = []   # (start, end, server port)
        self.errors = collections.Counter()

    def first_success_after(self, t, not_port=None):
        """(end, port) of the first commit sent at or after t (on another server
        than not_port); None if none yet."""
        with self.lock:
            for start, end, port in self.successes:
                if start >= t and port != not_port:
                    return end, port
        return None

    def last_success_on(self, port, t):
        """End of the last commit sent at or after t on port; None if none."""
        with self.lock:
            ends = [end for start, end, p in self.successes if p == port and start >= t]
        return max(ends) if ends else None

    def run(self):
        conn = None
        while not self.stop.is_set():
            start = time.monotonic()
            connecting = conn is None
            try:
                if conn is None:
                    conn = psycopg2.connect(self.url)
                    connecting = False
                with conn.cursor() as cur:
                    cur.execute("INSERT INTO probe (port) VALUES (inet_server_port())")
                conn.commit()
                end = time.monotonic()
                with self.lock:
                    self.successes.append((start, end, conn.info.port))
                self.stop.wait(0.05)
            except psycopg2.Error as e:
                with self.lock:
                    self.errors[classify_db_error(e, connecting)] += 1
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:
                        pass
                    conn = None
                self.stop.wait(0.05)
        if conn is not None:
            conn.close()


class DBWriter(threading.Thread):
    """--db-only: upserts of (key, sequence) straight to PostgreSQL; the same
    shape as registryd's launch upsert (a row per device, a higher sequence
    replaces a lower one)."""

    KEYS = 10

    def __init__(self, index, url, recorder, stop):
        super().__init__(name="db-writer-%d" % index, daemon=True)
        self.index = index
        self.url = with_keepalives(url)
        self.recorder = recorder
        self.stop = stop

    def run(self):
        conn = None
        sequence = 0
        while not self.stop.is_set():
            sequence += 1
            key = "w%d-k%d" % (self.index, sequence % self.KEYS)
            start = time.monotonic()
            connecting = conn is None
            try:
                if conn is None:
                    conn = psycopg2.connect(self.url)
                    connecting = False
                with conn.cursor() as cur:
                    cur.execute(
                        "INSERT INTO writes (key, sequence) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                        "SET sequence = GREATEST(writes.sequence, EXCLUDED.sequence)", (key, sequence))
                conn.commit()
                self.recorder.ack(key, sequence, start, time.monotonic())
            except psycopg2.Error as e:
                self.recorder.error(classify_db_error(e, connecting), start, time.monotonic())
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:
                        pass
                    conn = None
                self.stop.wait(0.05)
        if conn is not None:
            conn.close()


def setup_databases(url_of, node_urls_of):
    """Creates `registry` (registryd's) and `ha_probe` (the probe's and the
    --db-only writers' tables) on the leader, and waits until every node has
    them; url_of(db) is the multi-host URL, node_urls_of(db) [(node, URL)]."""
    conn = psycopg2.connect(url_of("postgres"))
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE registry")
        cur.execute("CREATE DATABASE ha_probe")
    conn.close()
    wait_databases(node_urls_of("registry") + node_urls_of("ha_probe"))
    conn = psycopg2.connect(url_of("ha_probe"))
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE probe (n bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), port int)")
        cur.execute("CREATE TABLE writes (key text PRIMARY KEY, sequence bigint NOT NULL)")
    conn.commit()
    conn.close()


def wait_databases(node_urls, timeout=30):
    """Waits until each node (a replica replays CREATE DATABASE later) takes a
    connection to its database: libpq does not try the next host of a
    multi-host URL after a server's FATAL such as "database ... does not exist"."""
    deadline = time.monotonic() + timeout
    for name, url in node_urls:
        while True:
            try:
                psycopg2.connect(url).close()
                break
            except psycopg2.Error as e:
                if time.monotonic() > deadline:
                    raise RuntimeError("node %s: no connection to %s after %d s: %s" % (
                        name, url.rsplit("/", 1)[1].split("?")[0], timeout, str(e).strip()))
                time.sleep(0.1)


def lost_db_writes(url, acked):
    """Acknowledged (key, sequence) whose row is absent or holds a lower sequence."""
    conn = psycopg2.connect(url)
    with conn.cursor() as cur:
        cur.execute("SELECT key, sequence FROM writes")
        stored = dict(cur.fetchall())
    conn.close()
    return [(k, s, stored.get(k)) for k, s in sorted(acked.items()) if stored.get(k, -1) < s]


def node_digests(node_urls, leader_url, database, timeout=30):
    """Once every running node has replayed the leader's WAL position: each
    node's digest of every table of the public schema of the database (row
    counts and an md5 of the rows' text in order), {node: digest or error}."""
    conn = psycopg2.connect(leader_url)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT pg_current_wal_lsn()")
        target = cur.fetchone()[0]
        cur.execute("SELECT quote_ident(table_name) FROM information_schema.tables "
                    "WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name")
        tables = [row[0] for row in cur.fetchall()]
    conn.close()
    if not tables:
        return {name: "no tables" for name in node_urls}
    query = "SELECT " + " || ' ' || ".join(
        "(SELECT '%s:' || count(*) || ':' || coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM %s t)"
        % (table.replace("'", "''"), table) for table in tables)
    result = {}
    for name, url in node_urls.items():
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn = psycopg2.connect(url)
                conn.autocommit = True
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_is_in_recovery()")
                    if cur.fetchone()[0]:
                        cur.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,))
                        caught_up = cur.fetchone()[0]
                    else:
                        caught_up = True
                    if caught_up:
                        cur.execute(query)
                        result[name] = cur.fetchone()[0]
                conn.close()
                if name in result:
                    break
            except psycopg2.Error as e:
                if time.monotonic() > deadline:
                    result[name] = "error: %s" % str(e).strip().splitlines()[0]
                    break
            if time.monotonic() > deadline:
                result[name] = "not caught up after %d s" % timeout
                break
            time.sleep(0.2)
    return result
