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
    and whether --against's REV build serves it (on a database of its own)."""
    name: str
    label: str
    pool: int
    rev: bool = False


@dataclasses.dataclass
class Options:
    duration: str = "10"
    threads: str = "2"
    connections: str = "64"
    out: str = "bench-results.md"
    scale: str = ""
    sweep: bool = False
    relay: bool = False
    only: str = ""
    keep: bool = False
    devices: str = ""
    against: str = ""
    rounds: str = ""
    stores: str = ""
    pg_pool: str = "16"
    pg_statements: bool = False
    command_line: str = "tools/bench"
    sides: list = dataclasses.field(default_factory=list)
    against_sha: str = ""

    @property
    def pg_sides(self):
        return sum(1 for side in self.sides if side.pool)

    def selected(self, workload):
        return not self.only or workload in self.only.split(",")


VALUED = {"--duration": "duration", "--threads": "threads", "--connections": "connections", "--out": "out",
          "--scale": "scale", "--only": "only", "--devices": "devices", "--against": "against",
          "--rounds": "rounds", "--stores": "stores", "--postgres-pool-size": "pg_pool"}
SWITCHES = {"--sweep": "sweep", "--relay": "relay", "--keep": "keep", "--pg-statements": "pg_statements"}


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
    if options.devices and (options.scale or options.sweep):
        raise UsageError("--devices sizes the default mode's data set, not --scale or --sweep")
    if options.devices and int(options.devices) % 5:
        raise UsageError("--devices wants a multiple of 5 (5 devices per user)")
    if options.rounds and not options.against and not options.stores and not options.relay:
        raise UsageError("--rounds goes with --against, --stores or --relay")
    if options.pg_statements and not options.stores:
        raise UsageError("--pg-statements goes with --stores (or --store postgres)")


def check_relay(options):
    if options.scale or options.sweep or options.against or options.stores:
        raise UsageError("--relay is a run of its own, not with --scale, --sweep, --against or --stores")
    if options.only:
        raise UsageError("--relay runs its own steps (h2load, fan-out, lookup); --only does not apply")
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
