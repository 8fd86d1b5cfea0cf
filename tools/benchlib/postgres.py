"""The private PostgreSQL of a --stores run: a fresh, durable PostgreSQL 15 in WORK/pg (tools/pg-server
start --durable through tools/lib/pgserver.py: fsync, synchronous_commit and full_page_writes on,
checked here), stopped and removed at exit whatever happens; the data set loaded through
`registry-bench load --postgres-url`; the server's CPU time and its cumulative counters.
"""

import os
import subprocess
import time

import pgserver

from . import procfs
from .build import PG_BIN
from .dataset import run_loader
from .run import BenchError, log

SETTINGS = """SELECT 'PostgreSQL ' || current_setting('server_version') || ' (' || string_agg(name || '=' ||
      CASE WHEN unit = '8kB' THEN pg_size_pretty(setting::bigint * 8192) WHEN unit = 'MB' THEN setting || ' MB'
           WHEN unit = 's' THEN setting || ' s' ELSE setting END, ', ' ORDER BY name) || ')'
    FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'commit_delay',
      'shared_buffers', 'max_wal_size', 'checkpoint_timeout', 'default_transaction_isolation', 'max_connections')"""
DURABILITY = "('fsync', 'synchronous_commit', 'full_page_writes')"
# Commits, rollbacks, WAL syncs (fsyncs), their total ms, WAL writes and bytes: cumulative counters. A
# backend hands its counters over at most once a second while busy and 10 s after it went idle.
# Over every database: with --against, REV's stores have a database of their own.
COUNTERS = """SELECT sum(d.xact_commit), sum(d.xact_rollback), w.wal_sync, w.wal_sync_time, w.wal_write, w.wal_bytes
          FROM pg_stat_database d, pg_stat_wal w GROUP BY w.wal_sync, w.wal_sync_time, w.wal_write, w.wal_bytes"""
# Row writes per table (cumulative; same hand-over delay): inserted, updated, of those HOT (no index entry
# written), deleted.
TABLE_COUNTERS = """SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables
          WHERE relname LIKE 'registry%' ORDER BY relname"""
STATEMENTS = """SELECT calls, total_exec_time, total_plan_time, rows, regexp_replace(query, '\\s+', ' ', 'g')
                  FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%'
                  ORDER BY total_exec_time + total_plan_time DESC LIMIT 15"""


def as_owner(command):
    """The command as the server's owner: postgres when we are root (pg_ctl refuses root)."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class Postgres:
    """The run's PostgreSQL server: .url, .dir, .settings (version and durability settings, one line);
    .rev_url, the database of --against's REV build, when it has one."""

    def __init__(self, run):
        self.run = run
        self.dir = run.path("pg")
        self.url = ""
        self.rev_url = ""
        self.settings = ""

    def psql(self, sql, url=None):
        """The rows of one statement, tab-separated, without the final newline."""
        done = subprocess.run([os.path.join(PG_BIN, "psql"), url or self.url, "-X", "-q", "-A", "-t", "-F", "\t",
                               "-v", "ON_ERROR_STOP=1", "-c", sql], stdout=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise BenchError(f"psql failed on: {sql.split()[0]} ...")
        return done.stdout.rstrip("\n")

    def start(self, statements):
        """Starts the server, WAL I/O timing on; with `statements` restarted once with pg_stat_statements."""
        os.chmod(self.run.work, 0o711)   # the server runs as postgres and must reach WORK/pg
        self.run.pg_dir = self.dir
        log(f"starting a private PostgreSQL (tools/pg-server start {self.dir} --durable)")
        self.url = pgserver.start(self.dir, durable=True)
        self.psql("ALTER SYSTEM SET track_wal_io_timing = on")
        if statements:
            self.load_statements_extension()
        self.psql("SELECT pg_reload_conf()")
        self.check_durable()
        self.settings = self.psql(SETTINGS)
        log(f"{self.url}: {self.settings}")

    def load_statements_extension(self):
        self.psql("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        subprocess.run(as_owner([os.path.join(PG_BIN, "pg_ctl"), "restart", "-D", self.dir, "-w", "-t", "60", "-s",
                                 "-m", "fast", "-l", os.path.join(self.dir, "server.log")]),
                       stdout=subprocess.DEVNULL, check=True)
        self.psql("CREATE EXTENSION pg_stat_statements")
        self.psql("ALTER SYSTEM SET pg_stat_statements.track_planning = on")

    def check_durable(self):
        durable = self.psql("SELECT current_setting('fsync') || current_setting('synchronous_commit') || "
                            "current_setting('full_page_writes')")
        if durable != "ononon":
            found = self.psql(f"SELECT string_agg(name || '=' || setting, ' ') FROM pg_settings WHERE name IN {DURABILITY}")
            raise BenchError(f"PostgreSQL is not durable: {found}")

    def load(self, size, loader=None, url=None, data="pg-data"):
        """The data set through PostgresRegistryStore.importRecords (`loader`: another build's registry-bench,
        into the database at `url`, its keys in WORK/`data`), then VACUUM (ANALYZE) and CHECKPOINT.
        Returns (the loader's summary, VACUUM seconds, CHECKPOINT seconds), seconds as "%.1f"."""
        run = self.run
        url = url or self.url
        log(f"loading {size} devices into {url} through importRecords (50-device chunks, 4 transactions at once)")
        loaded = run_loader(run, [loader or run.registry_bench, "load", "--dir", run.path(data), "--postgres-url", url,
                                  "--devices", str(size), "--per-user", "5", "--big-activity-tokens", str(run.big_tokens),
                                  "--postgres-pool-size", "4", "--chunk", "50"],
                            run.path(data + "-load.out"), "registry-bench load --postgres-url")
        vacuum = self.timed("VACUUM (ANALYZE)", url)
        checkpoint = self.timed("CHECKPOINT", url)
        log(f"VACUUM (ANALYZE) {vacuum} s, CHECKPOINT {checkpoint} s")
        return loaded, vacuum, checkpoint

    def add_rev_database(self):
        """A second database, registry_rev, for --against's REV build: its own schema version and load."""
        self.psql("CREATE DATABASE registry_rev")
        self.rev_url = self.url.rpartition("/")[0] + "/registry_rev"
        return self.rev_url

    def timed(self, sql, url=None):
        started = time.monotonic()
        self.psql(sql, url)
        return f"{time.monotonic() - started:.1f}"

    def database_bytes(self):
        return self.psql("SELECT pg_database_size(current_database())")

    def ticks(self):
        """CPU ticks of the whole server: the postmaster, the children it reaped, and every live child
        (backends, WAL writer, checkpointer, autovacuum)."""
        try:
            with open(os.path.join(self.dir, "postmaster.pid")) as f:
                postmaster = int(f.readline())
        except (OSError, ValueError):
            return 0
        return procfs.cpu_ticks(postmaster, reaped=True) + sum(procfs.cpu_ticks(c) for c in procfs.children(postmaster))

    def counters(self):
        """[commits, rollbacks, WAL syncs, WAL sync ms, WAL writes, WAL bytes] (cumulative)."""
        return [float(v) for v in self.psql(COUNTERS).split("\t")]

    def table_counters(self):
        """{table: [inserted, updated, HOT updated, deleted]} (cumulative)."""
        totals = {}
        for url in filter(None, (self.url, self.rev_url)):
            for line in self.psql(TABLE_COUNTERS, url).splitlines():
                if line:
                    row = line.split("\t")
                    totals[row[0]] = [a + float(b) for a, b in zip(totals.get(row[0], [0, 0, 0, 0]), row[1:])]
        return totals

    def reset_statements(self):
        self.psql("SELECT pg_stat_statements_reset()")

    def statements(self):
        """The 15 costliest statements since the reset: [(calls, exec ms, plan ms, rows, query)]."""
        return [line.split("\t") for line in self.psql(STATEMENTS).splitlines() if line]


def delta(before, after):
    return [b - a for a, b in zip(before, after)]
