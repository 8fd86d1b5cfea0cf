"""The command line of tools/bench: parsing, the checks of the old bash tool
(same messages, exit status 2), and the stores a --stores list names.

help.txt beside this file is what --help prints.
"""

import dataclasses
import os
import re
import subprocess
import sys

HELP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "help.txt")

# Workloads two builds or two stores can be compared on: not nginx (no registryd in it), not signout (a
# second round would find the first round's devices already gone).
COMPARED_WORKLOADS = ["healthz", "lookup", "batch-lookup", "fanout", "upsert-mix", "activity", "reregister-hs256",
                      "reregister-rs256", "reregister-es256"]
COMPARED_DEFAULT = "lookup,upsert-mix,reregister-hs256"


class UsageError(Exception):
    """A bad command line: printed as `tools/bench: MESSAGE`, exit status 2."""


@dataclasses.dataclass
class Side:
    """One store of a --stores run: name (lmdb, pgN, pgN-rev), label, PostgreSQL pool size (0 for LMDB),
    and whether --against's REV build serves it (on a database of its own); or, `peer`, the peer of
    --compare-peer (name "peer", pool 0)."""
    name: str
    label: str
    pool: int
    rev: bool = False
    peer: bool = False


@dataclasses.dataclass
class Options:
    duration: str = "10"
    threads: str = "2"
    connections: str = "64"
    out: str = "bench-results.md"
    scale: str = ""
    sweep: bool = False
    relay: bool = False
    accept: bool = False
    only: str = ""
    keep: bool = False
    devices: str = ""
    against: str = ""
    rounds: str = ""
    stores: str = ""
    pg_pool: str = "16"
    pg_statements: bool = False
    compare_peer: bool = False
    peer_workers: str = ""
    command_line: str = "tools/bench"
    sides: list = dataclasses.field(default_factory=list)
    peers: list = dataclasses.field(default_factory=list)   # --compare-peer: a Side per --peer-workers count
    against_sha: str = ""

    @property
    def pg_sides(self):
        return sum(1 for side in self.sides if side.pool)

    def selected(self, workload):
        return not self.only or workload in self.only.split(",")


VALUED = {"--duration": "duration", "--threads": "threads", "--connections": "connections", "--out": "out",
          "--scale": "scale", "--only": "only", "--devices": "devices", "--against": "against",
          "--rounds": "rounds", "--stores": "stores", "--postgres-pool-size": "pg_pool",
          "--peer-workers": "peer_workers"}
SWITCHES = {"--sweep": "sweep", "--relay": "relay", "--accept": "accept", "--keep": "keep", "--pg-statements": "pg_statements",
            "--compare-peer": "compare_peer"}
# The peer's gunicorn sync workers by default. On 2 shared cores no count was best every time (2, 4 and 8 each
# won a run); fewer cost less CPU per request, more ride out a busy machine's stalls: 4 sits between
# (--peer-workers 2,4,8 measures several, and the ratios are then to the best of them).
PEER_WORKERS = "4"
PEER_WORKLOAD = "reregister-hs256"   # the launch upsert, the one workload the peer is measured on


def parse(argv, repo):
    """Options from argv, checked; raises UsageError. --help prints help.txt and exits 0."""
    options = Options(command_line="tools/bench" + ("".join(" " + a for a in argv)))
    read_flags(options, list(argv))
    check_numbers(options)
    check_modes(options)
    if options.against:
        check_against(options, repo)
    if options.stores:
        check_stores(options)
    if options.relay:
        check_relay(options)
    if options.accept:
        check_accept(options)
    return options


def read_flags(options, args):
    while args:
        flag = args.pop(0)
        if flag in ("-h", "--help"):
            with open(HELP) as f:
                sys.stdout.write(f.read())
            sys.exit(0)
        if flag in SWITCHES:
            setattr(options, SWITCHES[flag], True)
        elif flag in VALUED or flag == "--store":
            if not args:
                raise UsageError(f"{flag} wants a value")
            value = args.pop(0)
            if flag == "--store":
                read_store(options, value)
            else:
                setattr(options, VALUED[flag], value)
        else:
            raise UsageError(f"unknown argument '{flag}' (see tools/bench --help)")


def read_store(options, value):
    if value == "postgres":
        options.stores = "lmdb,postgres"
    elif value != "lmdb":
        raise UsageError(f"--store is lmdb or postgres, not '{value}'")


def check_numbers(options):
    given = [value for value in (options.scale, options.devices, options.rounds) if value]
    for value in [options.duration, options.threads, options.connections, options.pg_pool] + given:
        if not re.fullmatch(r"[1-9][0-9]*", value):
            raise UsageError(f"'{value}' is not a positive whole number")


def check_modes(options):
    if options.scale and options.sweep:
        raise UsageError("--scale and --sweep are separate runs")
    if options.scale and int(options.scale) % 5:
        raise UsageError("--scale wants a multiple of 5 (5 devices per user)")
    if options.devices and options.scale:
        raise UsageError("--devices sizes the default mode's and --sweep's data set, not --scale's")
    if options.devices and int(options.devices) % 5:
        raise UsageError("--devices wants a multiple of 5 (5 devices per user)")
    if options.rounds and not options.against and not options.stores and not options.relay and not options.accept:
        raise UsageError("--rounds goes with --against, --stores, --relay or --accept")
    if options.pg_statements and not options.stores:
        raise UsageError("--pg-statements goes with --stores (or --store postgres)")
    if options.compare_peer and not options.stores:
        raise UsageError("--compare-peer goes with --stores (or --store postgres)")
    if options.peer_workers and not options.compare_peer:
        raise UsageError("--peer-workers goes with --compare-peer")


def check_relay(options):
    if options.scale or options.sweep or options.against or options.stores:
        raise UsageError("--relay is a run of its own, not with --scale, --sweep, --against or --stores")
    if options.only:
        raise UsageError("--relay runs its own steps (h2load, fan-out, lookup); --only does not apply")
    options.rounds = options.rounds or "3"


def check_accept(options):
    if options.scale or options.sweep or options.against or options.stores or options.relay:
        raise UsageError("--accept is a run of its own, not with --scale, --sweep, --against, --stores or --relay")
    if options.only:
        raise UsageError("--accept runs its own steps (the launch upsert and the accepts); --only does not apply")
    options.rounds = options.rounds or "3"


def check_compared_workloads(options, flag):
    for workload in options.only.split(","):
        if workload not in COMPARED_WORKLOADS:
            raise UsageError(f"{flag} runs {','.join(COMPARED_WORKLOADS)}; not '{workload}'")


def check_stores(options):
    if options.scale or options.sweep:
        raise UsageError("--stores runs the default mode's workloads, not --scale or --sweep")
    for entry in options.stores.split(","):
        side = store_side(entry, int(options.pg_pool))
        if any(s.name == side.name for s in options.sides):
            raise UsageError(f"--stores names {side.label} twice")
        options.sides.append(side)
        # --against: each PostgreSQL store served by REV's build too, right after this tree's.
        if options.against and side.pool:
            options.sides.append(Side(side.name + "-rev", f"{side.label} at {options.against_sha[:7]}", side.pool,
                                      rev=True))
    if options.against and not options.pg_sides:
        raise UsageError("--stores with --against wants a PostgreSQL store")
    if not options.sides:
        raise UsageError("--stores names no store")
    if options.pg_statements and not options.pg_sides:
        raise UsageError("--pg-statements wants a PostgreSQL store")
    options.rounds = options.rounds or "3"
    options.only = options.only or COMPARED_DEFAULT
    check_compared_workloads(options, "--stores")
    if options.compare_peer:
        if not options.pg_sides:
            raise UsageError("--compare-peer wants a PostgreSQL store (the peer runs on the same server)")
        if PEER_WORKLOAD not in options.only.split(","):
            raise UsageError(f"--compare-peer measures the launch upsert: --only must include {PEER_WORKLOAD}")
        options.peer_workers = options.peer_workers or PEER_WORKERS
        for entry in options.peer_workers.split(","):
            if not re.fullmatch(r"[1-9][0-9]*", entry) or int(entry) > 64:
                raise UsageError(f"--peer-workers takes worker counts of 1 to 64, not '{entry}'")
            side = Side(f"peer{entry}", f"django-push-notifications ({entry} workers)", 0, peer=True)
            if any(p.name == side.name for p in options.peers):
                raise UsageError(f"--peer-workers names {entry} twice")
            options.peers.append(side)


def store_side(entry, default_pool):
    if entry == "lmdb":
        return Side("lmdb", "LMDB", 0)
    if entry == "postgres":
        return Side(f"pg{default_pool}", f"PostgreSQL (pool {default_pool})", default_pool)
    if entry.startswith("postgres/"):
        pool = entry[len("postgres/"):]
        if not re.fullmatch(r"[1-9][0-9]*", pool) or int(pool) > 200:
            raise UsageError(f"--stores: '{entry}' wants a pool of 1 to 200 connections")
        return Side(f"pg{pool}", f"PostgreSQL (pool {pool})", int(pool))
    raise UsageError(f"--stores takes lmdb, postgres and postgres/N, not '{entry}'")


def check_against(options, repo):
    if options.scale or options.sweep:
        raise UsageError("--against runs the default mode's workloads, not --scale or --sweep")
    found = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "--quiet", options.against + "^{commit}"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if found.returncode != 0:
        raise UsageError(f"--against '{options.against}' is not a commit of this repository")
    options.against_sha = found.stdout.strip()
    options.rounds = options.rounds or "3"
    options.only = options.only or COMPARED_DEFAULT
    check_compared_workloads(options, "--against")
