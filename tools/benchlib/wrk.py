"""One wrk run of a bench: wrk with tools/bench-scripts/registry.lua, whose done() prints one line
"BENCH requests=N seconds=S rps=R p50_ms=... statuses=200:N,... pages=N walks=N tokens=N
signout_passes=P"; that line becomes one Row of the report.

The server's memory during the run: its peak RSS (VmHWM from /proc/PID/status, reset before the
run through clear_refs; it includes the LMDB pages mapped in) and its peak anonymous RSS (RssAnon
sampled every 0.2 s: heap and stacks).
"""

import os
import signal
import sys
import threading
import time

from . import procfs
from .dataset import fields, thousands
from .run import BenchError, Row, log

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench-scripts", "registry.lua")


class AnonSampler(threading.Thread):
    """The largest RssAnon (KiB) of one process, sampled every 0.2 s until stopped or the process is gone."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set() and os.path.exists(f"/proc/{self.pid}"):
            self.peak = max(self.peak, procfs.status_kib(self.pid, "RssAnon"))
            self.stopping.wait(0.2)

    def stop(self):
        self.stopping.set()
        self.join()
        return self.peak


class WrkRun:
    """wrk against `target` for --duration seconds (or, `background`, an hour: stop it with interrupt())."""

    def __init__(self, run, section, name, workload, target, jwt_file, pids, env, background=False):
        self.run = run
        self.section = section
        self.name = name
        self.pids = pids
        self.output = run.path(f"wrk-{section}-{name}.txt")
        seconds = 3600 if background else run.duration
        procfs.reset_peaks(pids)
        log(f"{section}: {name} ({seconds}s)")
        options = run.options
        environment = dict(os.environ, BENCH_WORKLOAD=workload, BENCH_DEVICES=str(run.data_devices),
                           BENCH_PER_USER="5", BENCH_THREADS=options.threads,
                           BENCH_SEQ_BASE=str(time.time_ns() // 1_000_000 * 1000), BENCH_RUN=str(int(time.time())),
                           BENCH_API_KEY=run.api_key, BENCH_JWT_FILE=jwt_file,
                           BENCH_USER_STRIDE=str(run.user_stride), BENCH_SAMPLED_USERS=str(run.sampled_users), **env)
        command = ["wrk", f"-t{options.threads}", f"-c{options.connections}", f"-d{seconds}s", "--timeout", "5s",
                   "-s", SCRIPT, target]
        with open(self.output, "w") as f:
            self.process = run.spawn(command, stdout=f, stderr=f, env=environment)
        self.sampler = AnonSampler(pids[0])
        self.sampler.start()

    def interrupt(self):
        """SIGINT: wrk stops and still prints its summary."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)

    def finish(self):
        """Waits for wrk, appends its Row to run.rows and returns it."""
        self.process.wait()
        with open(self.output, errors="replace") as f:
            text = f.read()
        line = next((l for l in text.splitlines() if l.startswith("BENCH ")), None)
        if line is None:
            print(text, end="", file=sys.stderr)
            raise BenchError(f"wrk printed no summary for {self.name}")
        rss = max(procfs.status_kib(pid, "VmHWM") for pid in self.pids)
        anon = self.sampler.stop()
        summary = fields(line)
        row = Row(self.section, self.name, summary.get("rps", ""), summary.get("p50_ms", ""),
                  summary.get("p99_ms", ""), summary.get("non2xx", ""), summary.get("socket_errors", ""), rss,
                  summary.get("statuses", ""), self.note(summary), anon, summary.get("requests", ""))
        self.run.rows.append(row)
        log(f"  {line[6:]}")
        return row

    def note(self, summary):
        """What a row's notes column says: a sign-out walk that wrapped, a fan-out's walks per second."""
        note = ""
        passes = summary.get("signout_passes", "")
        if self.name.split("#")[0] == "signout" and float(passes or 0) > 1:
            note = f"walk wrapped ({passes} passes): later deletes found nothing"
        if summary.get("walks") != "0" or summary.get("pages") != "0":
            tokens_per_second = float(summary.get("tokens", 0)) / float(summary.get("seconds", 1))
            big = self.run.big_tokens
            note = (f"{tokens_per_second:.0f} tokens/s = {tokens_per_second / big:.1f} walks of {thousands(big)} "
                    f"tokens/s ({int(float(summary.get('walks', 0)))} walks completed)")
        return note


def run_wrk(run, section, name, workload, target, jwt_file, pids, env):
    """One wrk run to its end; returns its Row."""
    return WrkRun(run, section, name, workload, target, jwt_file, pids, env).finish()
