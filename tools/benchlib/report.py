"""The Markdown report of a bench run: its header (command, machine, load), the rates table of the
default, --scale and --sweep modes, the notes and the closing lines; written to --out and printed.
Also the figures the comparison tables use: median, lowest, highest, and numbers with commas.
"""

import os
import platform
import shutil
import subprocess
import sys
import time

from .run import log


def median(values):
    ordered = sorted(float(v) for v in values)
    n = len(ordered)
    return ordered[(n - 1) // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def commas(x):
    """12345.6 -> 12,346"""
    return f"{float(x):,.0f}"


def load_average():
    """The 1, 5 and 15 minute load averages as /proc/loadavg gives them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def size_of(name):
    """The size suffix of a row name: "lookup@100k" -> "@100k"; "" without one."""
    return name[name.index("@"):] if "@" in name else ""


def table(rows, section):
    """The rows of `section` as Markdown. Ratios are against the clean healthz row of the same size:
    a name "x@100k" is compared with "healthz@100k"."""
    rows = [row for row in rows if row.section == section]
    base = {size_of(row.name): float(row.rps) for row in rows if row.name.startswith("healthz") and not row.flagged}
    lines = ["| workload | req/s | p50 ms | p99 ms | non-2xx | socket errors | peak RSS MiB | peak anon MiB | "
             "vs /healthz | statuses | notes |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for row in rows:
        rps = float(row.rps)
        rate = f"**FLAGGED** ({rps:.0f}/s with failures)" if row.flagged else f"{rps:.0f}"
        b = base.get(size_of(row.name))
        ratio = "-" if row.flagged or b is None else f"{rps / b:.3f}"
        lines.append(f"| {row.name} | {rate} | {float(row.p50):.2f} | {float(row.p99):.2f} | {int(float(row.non2xx))} | "
                     f"{int(float(row.errors))} | {row.rss_kib / 1024:.0f} | {row.anon_kib / 1024:.0f} | {ratio} | "
                     f"{row.statuses} | {row.note} |")
    return "\n".join(lines) + "\n"


def first_line_of(command):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return (done.stdout.splitlines() or [""])[0]


def machine_line(run):
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(": ", 1)[1].strip() for line in f if line.startswith("model name")), "")
    with open("/proc/meminfo") as f:
        mem_kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal"))
    disk = subprocess.run(["df", "-h", run.repo], stdout=subprocess.PIPE, text=True).stdout.splitlines()[1].split()[0]
    wrk_words = first_line_of(["wrk", "-v"]).split()
    wrk = "wrk " + (wrk_words[1] if len(wrk_words) > 1 else "")
    nginx = first_line_of([run.nginx_bin, "-v"]).split(": ")[-1] if shutil.which(run.nginx_bin) else ""
    return (f"{len(os.sched_getaffinity(0))} cores ({cpu}), {mem_kib / 1048576:.0f} GiB, kernel {platform.release()}, "
            f"disk {disk}, {wrk}, {nginx}")


def head_short(repo):
    done = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def header(run):
    options = run.options
    return (f"# registryd HTTP benchmark\n\n"
            f"`{options.command_line}` — {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
            f"commit {head_short(run.repo)}\n\n"
            f"- machine: {machine_line(run)}\n"
            f"- load: wrk -t{options.threads} -c{options.connections}, {options.duration} s per workload, over "
            f"loopback, wrk and the server on the same cores\n"
            f"- server: release registryd, LMDB with sync on (every acknowledged write fsynced), data on the real disk\n"
            f"- machine load average (1, 5, 15 min) at start: {run.load_at_start}; at the end: {load_average()} "
            f"(other work on the machine makes numbers noisy)\n\n")


FOOTER = """Rows marked **FLAGGED** had non-2xx answers or socket errors (statuses column): their rate is not
a clean measurement. Peak RSS is the server's VmHWM during that run (reset before it), mapped LMDB
pages included (file-backed, shared with the page cache); peak anon is the largest RssAnon sampled
every 0.2 s (heap and stacks). For nginx: the largest worker's VmHWM, the first worker's RssAnon.
"""


def finish(run, body):
    """Writes header, `body`, the notes and the footer to --out (relative to the repository) and prints it."""
    text = header(run) + body + "\n" + "".join(run.notes) + "\n" + FOOTER
    with open(run.path("report.md"), "w") as f:
        f.write(text)
    shutil.copy(run.path("report.md"), run.options.out)
    sys.stdout.write("\n" + text)
    sys.stdout.flush()
    log(f"wrote {run.options.out}")
