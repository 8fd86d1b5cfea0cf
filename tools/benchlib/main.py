"""tools/bench's command: reads the options, installs and builds what is missing, makes the work
area and keys, runs one mode, and stops and removes everything it started at exit.

Exit status: 0 (also when a row is flagged), 1 when the tool itself fails, 2 on a bad command line,
130 when interrupted.
"""

import os
import signal
import subprocess
import sys

from . import REPO, build, keys, report
from .modes import accept, against, default, relay, scale, stores, sweep
from .options import UsageError, parse
from .run import BenchError, Run


def interrupted(signum, frame):
    raise SystemExit(130)


def choose_mode(options):
    if options.scale:
        return scale
    if options.sweep:
        return sweep
    if options.stores:
        return stores
    if options.against:
        return against
    if options.relay:
        return relay
    if options.accept:
        return accept
    return default


def main(argv):
    os.chdir(REPO)
    load_at_start = report.load_average()
    try:
        options = parse(argv, REPO)
    except UsageError as error:
        print(f"tools/bench: {error}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    run = None
    try:
        build.install(REPO, postgres=options.pg_sides > 0, peer=options.compare_peer)
        os.environ["PATH"] = "/opt/swift/usr/bin" + os.pathsep + os.environ.get("PATH", "")
        registryd, registry_bench = build.build_binaries()
        run = Run(options, REPO, registryd, registry_bench, build.nginx_binary())
        run.load_at_start = load_at_start
        keys.make_keys(run)
        choose_mode(options).bench(run)
        return 0
    except BenchError as error:
        print(f"tools/bench: {error}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as error:
        print(f"tools/bench: {' '.join(map(str, error.cmd))} failed (exit {error.returncode})", file=sys.stderr)
        return 1
    finally:
        if run is not None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            run.cleanup()
