"""The data set of a bench run: `registry-bench load` writes it straight through the store (the
records `registryd import` would write, in big group commits), and prints one summary line,
"loaded devices=N users=N ... seconds=S devicesPerSecond=R ...", which Loaded reads.

Device k belongs to user k / 5 and holds a push, a push-to-start and an activity token;
tools/bench-scripts/registry.lua addresses the same numbering.
"""

import subprocess

from .run import BenchError, log


class Loaded(dict):
    """The loader's summary line as {key: value}; .line is the line itself."""

    def __init__(self, line):
        super().__init__(fields(line))
        self.line = line


def fields(line):
    """{key: value} of the key=value words of a line (the first of a repeated key wins)."""
    found = {}
    for word in line.split(" "):
        key, sep, value = word.partition("=")
        if sep and key not in found:
            found[key] = value
    return found


def load(run, directory, devices, flags=(), loader=None):
    """Loads `devices` devices (5 per user) into DIRECTORY/lmdb with `loader` (default: this tree's
    registry-bench); returns its summary. Sets run.data_devices."""
    log(f"loading {devices} devices into {directory}")
    summary = run_loader(run, [loader or run.registry_bench, "load", "--dir", f"{directory}/lmdb",
                               "--devices", str(devices), "--per-user", "5", *flags],
                         run.path("load.out"), "registry-bench load")
    run.data_devices = devices
    return summary


def run_loader(run, command, output, what):
    """Runs a loader to its end (stopped at exit if interrupted) and returns its summary line."""
    with open(output, "w") as f:
        process = run.spawn(command, stdout=f)
        if process.wait() != 0:
            raise BenchError(f"{what} failed")
    with open(output) as f:
        lines = [line.rstrip("\n") for line in f if line.startswith("loaded ")]
    if not lines:
        raise BenchError(f"{what} printed no summary")
    log(lines[0])
    return Loaded(lines[0])


def thousands(n):
    """100000 -> 100,000"""
    return f"{int(n):,}"


def bytes_on_disk(path):
    """`du -sb PATH`: the apparent size of everything under PATH."""
    return subprocess.run(["du", "-sb", path], stdout=subprocess.PIPE, text=True, check=True).stdout.split()[0]
