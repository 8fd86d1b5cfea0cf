"""tools/crash-test: every acknowledged write survives SIGKILL (see tools/crash-test --help)."""

import argparse
import os
import random
import shutil
import subprocess
import sys
import time

import harness
from harness import registryd

TOOL = "crash-test"


def main():
    parser = argparse.ArgumentParser(
        prog="tools/crash-test",
        description="Starts registryd on a fresh data directory, writes to it over loopback HTTP from "
                    "concurrent writers, SIGKILLs it at a random moment, restarts it on the same data "
                    "directory and checks that every acknowledged (2xx) write is there; at the end "
                    "`registryd check` must pass. Exit 1 on any lost write or other violation.")
    parser.add_argument("--cycles", type=int, default=200, help="kill/restart cycles (default 200)")
    parser.add_argument("--writers", type=int, default=6, help="concurrent writer threads (default 6)")
    parser.add_argument("--min-delay", type=float, default=0.05, help="shortest run before the kill, s (default 0.05)")
    parser.add_argument("--max-delay", type=float, default=0.5, help="longest run before the kill, s (default 0.5)")
    parser.add_argument("--config", choices=("release", "debug"), default="release",
                        help="SwiftPM build configuration (default release)")
    parser.add_argument("--time-limit", type=float, default=900.0,
                        help="start no cycle after this many seconds (default 900)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    parser.add_argument("--keep", action="store_true", help="keep the data directory even when all is well")
    args = parser.parse_args()
    if args.cycles < 1 or args.writers < 1 or not 0 < args.min_delay <= args.max_delay:
        parser.error("need --cycles >= 1, --writers >= 1 and 0 < --min-delay <= --max-delay")

    harness.install_exit_handlers()
    started = time.monotonic()
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    rng = random.Random(seed)
    binary = registryd.registryd_binary(args.config, log=lambda m: harness.log(TOOL, m))
    scratch = harness.scratch_directory("crash-")
    data_dir = os.path.join(scratch, "data")
    server_log = os.path.join(scratch, "server.log")
    harness.log(TOOL, f"seed {seed}, {args.cycles} cycles, {args.writers} writers, kill after "
                      f"{args.min_delay}-{args.max_delay} s, data in {data_dir}")

    violations = []
    workload = harness.Workload(TOOL, args.writers, seed=rng.getrandbits(64))
    totals = {"verified": 0, "lost": 0, "refused_present": 0, "phantoms": 0,
              "in_flight_applied": 0, "in_flight_not_applied": 0}
    kill_statuses = {}
    cycles_done = 0
    writing_seconds = 0.0
    restarts = []
    server = None
    check_line = "not run"
    try:
        server = registryd.Registryd(binary, data_dir, server_log)
        jwts = registryd.mint_tokens(binary, data_dir, workload.users(), ttl="4h")
        key = registryd.internal_api_key(data_dir)
        for cycle in range(args.cycles):
            if time.monotonic() - started > args.time_limit:
                harness.log(TOOL, f"time limit of {args.time_limit:.0f} s reached after {cycles_done} cycles")
                break
            stop, threads = workload.start_writers(server.port, jwts, label=cycle)
            delay = rng.uniform(args.min_delay, args.max_delay)
            time.sleep(delay)
            if not server.alive():
                violations.append(f"cycle {cycle}: the server ended by itself before the kill "
                                  f"({registryd.describe_status(server.wait(0))}; log: {server_log})")
            status = server.kill()
            writing_seconds += delay
            kill_statuses[status] = kill_statuses.get(status, 0) + 1
            stop.set()
            for t in threads:
                t.join(30)
            if any(t.is_alive() for t in threads):
                violations.append(f"cycle {cycle}: a writer thread did not finish within 30 s of the kill")
                break
            server = registryd.Registryd(binary, data_dir, server_log)
            restarts.append(server.start_seconds)
            result = workload.verify(server.port, key)
            cycles_done += 1
            for k in totals:
                totals[k] += result[k]
            for line in result["problems"]:
                violations.append(f"cycle {cycle}: {line}")
            if args.cycles <= 10 or (cycle + 1) % 25 == 0 or result["problems"]:
                harness.log(TOOL, f"cycle {cycle + 1}: killed after {delay:.3f} s; acknowledged so far "
                                  f"{workload.count('acked')}, verified {totals['verified']}, lost {totals['lost']}")
        status, in_time = server.terminate()
        if not in_time or status != 0:
            violations.append(f"final SIGTERM: {registryd.describe_status(status)}"
                              + ("" if in_time else " (did not stop within 30 s)"))
        check = subprocess.run([binary, "check", "--data-dir", data_dir], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=300)
        check_line = f"exit {check.returncode}: {check.stdout.strip().splitlines()[-1] if check.stdout.strip() else ''}"
        if check.returncode != 0:
            violations.append(f"registryd check failed ({check_line}):\n{check.stdout.strip()}")
    except Exception as error:  # a harness failure is a failed run, never a pass
        violations.append(f"harness error: {type(error).__name__}: {error}")
    finally:
        registryd.kill_all()

    elapsed = time.monotonic() - started
    if workload.unexpected:
        sample = "; ".join(f"{s} on {k}: {b}" for s, k, b in workload.unexpected[:5])
        violations.append(f"{len(workload.unexpected)} answers outside the contract (sample: {sample})")
    if totals["lost"]:
        violations.append(f"{totals['lost']} acknowledged writes lost")
    by_kind = {}
    for record in workload.writes:
        if record.get("outcome") == "acked":
            by_kind[record["op"]["kind"]] = by_kind.get(record["op"]["kind"], 0) + 1
    acked = workload.count("acked")
    unknown = workload.count("unknown")
    kills = ", ".join(f"{n} x {registryd.describe_status(s)}" for s, n in sorted(kill_statuses.items()))
    print(f"{TOOL}: cycles                 {cycles_done} of {args.cycles} ({kills or 'none'})")
    print(f"{TOOL}: acknowledged writes    {acked} ("
          + ", ".join(f"{k} {by_kind.get(k, 0)}" for k, _ in harness.Workload.WEIGHTS) + ")")
    print(f"{TOOL}: verified               {totals['verified']}")
    print(f"{TOOL}: lost                   {totals['lost']}")
    print(f"{TOOL}: in flight at the kill  {unknown} (applied {totals['in_flight_applied']}, "
          f"not applied {totals['in_flight_not_applied']})")
    print(f"{TOOL}: refused, unexpected    {workload.count('refused')}, {len(workload.unexpected)}")
    print(f"{TOOL}: write rate             {acked / writing_seconds if writing_seconds else 0:.0f} acknowledged/s "
          f"over {writing_seconds:.1f} s of writing")
    if restarts:
        print(f"{TOOL}: restart to listening   mean {1000 * sum(restarts) / len(restarts):.0f} ms, "
              f"max {1000 * max(restarts):.0f} ms")
    print(f"{TOOL}: registryd check        {check_line}")
    print(f"{TOOL}: elapsed                {elapsed:.1f} s (seed {seed}, {args.config} build)")
    if violations:
        for line in violations[:50]:
            print(f"{TOOL}: VIOLATION {line}")
        if len(violations) > 50:
            print(f"{TOOL}: ... and {len(violations) - 50} more")
        print(f"{TOOL}: data kept in {scratch}")
        print(f"{TOOL}: FAILED: {len(violations)} violation(s), {totals['lost']} of {acked} acknowledged writes "
              f"lost over {cycles_done} SIGKILL cycles")
        return 1
    if args.keep:
        print(f"{TOOL}: data kept in {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{TOOL}: OK: {cycles_done} SIGKILL cycles, {acked} acknowledged writes, {totals['verified']} verified, "
          f"0 lost, check passed, {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
