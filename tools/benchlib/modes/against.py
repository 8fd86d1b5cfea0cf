"""--against REV: the same workloads on two builds in one run. REV's registryd and registry-bench are
built in release mode in a detached worktree (.bench-against/<sha>, removed at exit unless --keep,
reused with its .build when kept) and kept in .bench-against/bin/<sha> with the compiler's version,
so a later run against the same commit builds nothing. Each build loads its own data directory with
its own loader (same flags), both servers start once, and the workloads run interleaved: per
workload, N rounds of REV and HEAD, REV first in odd rounds, HEAD first in even ones.
"""

import os
import shutil
import subprocess
import time

import registryd

from .. import keys, report, servers, workloads
from ..dataset import bytes_on_disk, load, thousands
from ..options import COMPARED_WORKLOADS
from ..report import median
from ..run import BenchError, log

NOTES = """- Medians over the rounds; the range is the lowest and highest round. HEAD/REV above 1 means HEAD
  serves more requests per second; for p99, below 1 means HEAD answers faster. A change smaller than
  the ranges is within the noise of this machine.
"""


def git(run, *args):
    return subprocess.run(["git", "-C", run.repo, *args], stdout=subprocess.PIPE, text=True, check=True).stdout.strip()


def bench(run):
    options = run.options
    rev_bin, built = build_rev(run)
    size = int(options.devices or 100000)
    run.big_tokens = min(size, 10000)
    head = {"short": git(run, "rev-parse", "--short=7", "HEAD"), "sha": git(run, "rev-parse", "HEAD")}
    dirty = git(run, "status", "--porcelain", "--untracked-files=no")
    # Each build writes the data set in its own format (an older loader, its older schema), same flags.
    big = ["--big-activity-tokens", str(run.big_tokens)]
    rev_loaded = load(run, run.path("rev"), size, big, loader=os.path.join(rev_bin, "registry-bench"))
    head_loaded = load(run, run.path("head"), size, big)
    users = size // 5
    sample = min(users, 20000)
    keys.mint(run, sample, users // sample, workloads.needs_all_algorithms(options))
    sides = {"rev": servers.start_server(run, run.path("rev"), binary=os.path.join(rev_bin, "registryd")),
             "head": servers.start_server(run, run.path("head"))}
    loads = run_rounds(run, sides)
    sizes = {side: bytes_on_disk(run.path(side, "lmdb")) for side in sides}
    for server in sides.values():
        servers.stop_server(run, server)
    body = (summary(run, head, dirty, built, size, sample, sides, sizes, rev_loaded, head_loaded)
            + table(run, head["short"], loads))
    run.notes.append(NOTES)
    report.finish(run, body)


def run_rounds(run, sides):
    """Every selected workload, N rounds of both builds; returns {(side, name#round): load average before}."""
    loads = {}
    for name in COMPARED_WORKLOADS:
        if not run.options.selected(name):
            continue
        for r in range(1, int(run.options.rounds) + 1):
            # Odd rounds REV first, even rounds HEAD first: a cost of going first falls on both.
            for side in (("rev", "head") if r % 2 else ("head", "rev")):
                loads[(side, f"{name}#{r}")] = report.load_average().split()[0]
                workloads.run_named(run, side, f"{name}#{r}", name, sides[side])
    return loads


def build_rev(run):
    """REV's binaries (the directory holding them) and how they came to be."""
    sha = run.options.against_sha
    short = sha[:12]
    toolchain = subprocess.run(["swift", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True).stdout.splitlines()[0]
    bin_dir = os.path.join(run.repo, ".bench-against", "bin", short)
    if cached(bin_dir, toolchain):
        built = f"not built: the binaries of an earlier run (.bench-against/bin/{short})"
        log(f"REV {short}: {built}")
        return bin_dir, built
    tree = prepare_tree(run, sha, short)
    log(f"REV {short}: building registryd and registry-bench (release) in {tree}")
    started = time.monotonic()
    try:
        built_dir = registryd.build("release", ("registryd", "registry-bench"), root=tree, echo=True)
    except SystemExit:
        raise BenchError(f"building {run.options.against} ({short}) failed")
    keep_binaries(built_dir, bin_dir, toolchain)
    built = f"release build of registryd and registry-bench in {int(time.monotonic() - started)} s"
    log(f"REV {short}: {built}")
    return bin_dir, built


def cached(bin_dir, toolchain):
    try:
        with open(os.path.join(bin_dir, "toolchain")) as f:
            same = f.read().rstrip("\n") == toolchain
    except OSError:
        return False
    return same and all(os.access(os.path.join(bin_dir, b), os.X_OK) for b in ("registryd", "registry-bench"))


def prepare_tree(run, sha, short):
    """The detached worktree .bench-against/<short> at REV: reused when it is one, made anew otherwise."""
    tree = os.path.join(run.repo, ".bench-against", short)
    run.against_tree = tree
    if os.path.exists(tree) and not is_worktree_at(tree, sha):
        log(f"REV {short}: removing {tree} (not a worktree of {short})")
        if subprocess.run(["git", "-C", run.repo, "worktree", "remove", "--force", tree],
                          stderr=subprocess.DEVNULL).returncode != 0:
            shutil.rmtree(tree, ignore_errors=True)
    if os.path.exists(tree):
        log(f"REV {short}: reusing the worktree {tree} and its .build")
    else:
        subprocess.run(["git", "-C", run.repo, "worktree", "prune"], check=True)
        log(f"REV {short}: git worktree add --detach {tree}")
        subprocess.run(["git", "-C", run.repo, "worktree", "add", "--detach", tree, sha], stdout=2, check=True)
    return tree


def is_worktree_at(tree, sha):
    if not os.path.isfile(os.path.join(tree, ".git")):
        return False
    done = subprocess.run(["git", "-C", tree, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    return done.stdout.strip() == sha


def keep_binaries(built_dir, bin_dir, toolchain):
    """Copies the two binaries and the compiler's version line to bin_dir (through a .tmp, then a rename)."""
    shutil.rmtree(bin_dir, ignore_errors=True)
    shutil.rmtree(bin_dir + ".tmp", ignore_errors=True)
    os.makedirs(bin_dir + ".tmp")
    for name in ("registryd", "registry-bench"):
        shutil.copy2(os.path.join(built_dir, name), bin_dir + ".tmp")
    with open(os.path.join(bin_dir + ".tmp", "toolchain"), "w") as f:
        f.write(toolchain + "\n")
    os.rename(bin_dir + ".tmp", bin_dir)


def subject(run, rev):
    """A commit's subject, cut to 90 characters."""
    text = git(run, "show", "-s", "--format=%s", rev)
    return text[:89] + "…" if len(text) > 90 else text


def summary(run, head, dirty, built, size, sample, sides, sizes, rev_loaded, head_loaded):
    options = run.options
    sha = options.against_sha
    rounds = options.rounds
    return (f"## HEAD {head['short']} against REV {sha[:7]}\n\n"
            f"- REV (`--against {options.against}`): `{sha}`, \"{subject(run, sha)}\"; {built}\n"
            f"- HEAD: `{head['sha']}`{' with uncommitted changes' if dirty else ''}, \"{subject(run, 'HEAD')}\"; "
            f"this working tree, built above\n"
            f"- each build loaded its own data directory with its own `registry-bench load` (same flags: "
            f"{thousands(size)}\n"
            f"  devices, 5 per user, {thousands(run.big_tokens)} in \"big\"), and each server serves its own:\n"
            f"  REV {rev_loaded['seconds']} s, {sizes['rev']} bytes on disk, first /healthz after "
            f"{sides['rev'].start_ms:.1f} ms;\n"
            f"  HEAD {head_loaded['seconds']} s, {sizes['head']} bytes on disk, first /healthz after "
            f"{sides['head'].start_ms:.1f} ms\n"
            f"- both servers ran throughout, each idle while the other was measured; per workload, {rounds} "
            f"round{'' if rounds == '1' else 's'} of\n"
            f"  REV and HEAD (REV first in odd rounds, HEAD first in even ones), {options.duration} s each; the same "
            f"wrk script (this tree's) and JWTs ({thousands(sample)} users) for both\n\n")


def table(run, head_short, loads):
    """Per workload, each build's median req/s (range) and median p99, HEAD/REV and the change; then every round."""
    rev_label, head_label = f"REV {run.options.against_sha[:7]}", f"HEAD {head_short}"
    rows = [row for row in run.rows if row.section in ("rev", "head")]
    order = list(dict.fromkeys(row.name.split("#")[0] for row in rows))
    lines = [f"| workload | {rev_label} req/s, median (range) | {head_label} req/s, median (range) | HEAD/REV req/s | "
             f"change | {rev_label} p99 ms | {head_label} p99 ms | HEAD/REV p99 | rounds |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in order:
        of = {side: [row for row in rows if row.section == side and row.name.split("#")[0] == name]
              for side in ("rev", "head")}
        a, b = median(r.rps for r in of["rev"]), median(r.rps for r in of["head"])
        pa, pb = median(r.p99 for r in of["rev"]), median(r.p99 for r in of["head"])
        ratio = f"{b / a:.3f}" if a > 0 else "-"
        change = f"{100 * (b / a - 1):+.1f}%" if a > 0 else "-"
        pratio = f"{pb / pa:.2f}" if pa > 0 else "-"
        lines.append(f"| {name} | {rate(of['rev'])} | {rate(of['head'])} | {ratio} | {change} | {pa:.2f} | {pb:.2f} | "
                     f"{pratio} | {len(of['head'])} |")
    lines += ["", "Every round, in the order run:", "",
              "| workload | round | build | req/s | p50 ms | p99 ms | non-2xx | socket errors | peak RSS MiB | statuses | "
              "load avg (1 min) before |",
              "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for row in rows:
        name, r = row.name.split("#")
        lines.append(f"| {name} | {r} | {rev_label if row.section == 'rev' else head_label} | {float(row.rps):.0f} | "
                     f"{float(row.p50):.2f} | {float(row.p99):.2f} | {int(float(row.non2xx))} | "
                     f"{int(float(row.errors))} | {row.rss_kib / 1024:.0f} | {row.statuses} | "
                     f"{loads.get((row.section, row.name), '')} |")
    return "\n".join(lines) + "\n"


def rate(rows):
    """"median (lowest–highest)" req/s over the rounds, **FLAGGED** when any round had failures."""
    values = [float(r.rps) for r in rows]
    flagged = "**FLAGGED** " if any(r.flagged for r in rows) else ""
    return f"{flagged}{median(values):.0f} ({min(values):.0f}–{max(values):.0f})"
