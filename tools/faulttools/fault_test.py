"""tools/fault-test: what registryd does when LMDB's data file fails once (see tools/fault-test --help)."""

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
import urllib.parse

import harness
from harness import registryd

TOOL = "fault-test"

# name: (FAULTSHIM_OP, FAULTSHIM_ERRNO, fatal). Fatal: a failed commit (EIO)
# fails the batch, stops writes, answers 503 and exits for the supervisor.
# ENOSPC is judged by --enospc-expect: registryd treats it like EIO (the
# default), since LMDB returns the same errno from a page write and from the
# fsync and nothing after a failed fsync can be trusted.
SCENARIOS = {
    "fdatasync-eio": ("sync", "EIO", True),
    "pwrite-eio": ("write", "EIO", True),
    "pwrite-enospc": ("write", "ENOSPC", False),
    "fdatasync-enospc": ("sync", "ENOSPC", False),
    "meta-eio": ("meta", "EIO", True),
}
DEFAULT_SCENARIOS = ["fdatasync-eio", "pwrite-eio", "meta-eio", "pwrite-enospc", "fdatasync-enospc"]


def build_shim(scratch_base):
    source = os.path.join(harness.REPO, "tools", "faultshim", "faultshim.c")
    output = os.path.join(scratch_base, "faultshim.so")
    command = ["cc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-o", output, source, "-ldl"]
    harness.log(TOOL, "building the shim: " + " ".join(command))
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        raise SystemExit(f"{TOOL}: shim build failed")
    return output


def read_shim_log(path):
    """(fired event or None, [later successful syncs], [later successful writes]) on the data file."""
    fired, syncs, writes = None, [], []
    if not os.path.exists(path):
        return fired, syncs, writes
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
            if words[0] == "fired":
                fired = fields
            elif words[0] == "after":
                (syncs if fields.get("op") in ("fdatasync", "fsync") else writes).append(fields)
    return fired, syncs, writes


def probe(port, method, path, key=None):
    connection = harness.Connection(port, timeout=5.0)
    try:
        status, _, _ = connection.request(method, path, None, {"Authorization": "Bearer " + key} if key else {})
        return str(status)
    except harness.TransportError:
        return "no answer"
    finally:
        connection.close()


def run_scenario(name, binary, shim, args, rng):
    op, errno_name, fatal = SCENARIOS[name]
    expected = "exit" if fatal else args.enospc_expect
    say = lambda message: harness.log(TOOL, f"[{name}] {message}")
    scratch = harness.scratch_directory(f"fault-{name}-")
    data_dir = os.path.join(scratch, "data")
    trigger = os.path.join(scratch, "arm")
    shim_log = os.path.join(scratch, "shim.log")
    server_log = os.path.join(scratch, "server.log")
    violations = []
    figures = {"name": name, "check": "not run", "exit": "not run", "lost": None}
    workload = harness.Workload(TOOL, args.writers, seed=rng.getrandbits(64))
    env = {"LD_PRELOAD": shim, "FAULTSHIM_OP": op, "FAULTSHIM_ERRNO": errno_name,
           "FAULTSHIM_TRIGGER": trigger, "FAULTSHIM_LOG": shim_log, "FAULTSHIM_DELAY_MS": str(args.fault_delay_ms)}
    try:
        server = registryd.Registryd(binary, data_dir, server_log, env=env)
        jwts = registryd.mint_tokens(binary, data_dir, workload.users(), ttl="4h")
        key = registryd.internal_api_key(data_dir)
        stop, threads = workload.start_writers(server.port, jwts, label="load")
        warm_until = time.monotonic() + args.warmup_max
        time.sleep(0.2)
        while workload.count("acked") < args.warmup_writes and time.monotonic() < warm_until and server.alive():
            time.sleep(0.01)
        acked_before = workload.count("acked")
        armed_at = time.monotonic()
        open(trigger, "w").close()
        say(f"armed the shim ({op} -> {errno_name} on data.mdb) after {acked_before} acknowledged writes")

        deadline = time.monotonic() + 10.0
        while workload.first_refusal_ns is None and time.monotonic() < deadline and server.alive():
            time.sleep(0.002)
        first_503_at = time.monotonic() if workload.first_refusal_ns is not None else None
        if first_503_at is None:
            violations.append("no write was answered 503 within 10 s of arming the shim")

        # Does the server end by itself (the fatal path) or keep serving?
        figures["healthz"] = probe(server.port, "GET", "/healthz") if server.alive() else "no answer"
        status = server.wait(args.exit_timeout if expected == "exit" else args.after_seconds)
        ended_at = time.monotonic()
        if status is None:
            figures["policy"] = "serve"
            figures["healthz"] = probe(server.port, "GET", "/healthz")
            user = next(iter(workload.devices))[0]
            figures["read"] = probe(server.port, "GET",
                                    f"/internal/v1/users/{urllib.parse.quote(user, safe='')}/devices", key)
            stop.set()
            for t in threads:
                t.join(30)
            status, in_time = server.terminate()
            figures["exit"] = ("kept serving; SIGTERM: " + registryd.describe_status(status)
                               + ("" if in_time else " (SIGKILL: no stop in 30 s)"))
            if status != 0 or not in_time:
                violations.append(f"SIGTERM after {errno_name}: {figures['exit']} (exit 0 expected)")
            if figures["healthz"] != "200" or figures["read"] != "200":
                violations.append(f"the server kept running after {errno_name} but /healthz answered "
                                  f"{figures['healthz']} and a sender read {figures['read']} (200 expected)")
        else:
            figures["policy"] = "exit"
            stop.set()
            figures["exit"] = "exited by itself: " + registryd.describe_status(status)
            if first_503_at is not None:
                figures["exit"] += f", {ended_at - first_503_at:.1f} s after the first 503"
            if status <= 0:
                violations.append(f"after {errno_name} the server ended with {registryd.describe_status(status)}; "
                                  f"a supervisor needs a non-zero exit")
            if figures["healthz"] not in ("503", "no answer"):
                violations.append(f"/healthz answered {figures['healthz']} after the failure (503 expected)")
        if expected != "either" and figures["policy"] != expected:
            if expected == "exit":
                violations.append(f"the server did not exit within {args.exit_timeout:.0f} s of {errno_name}")
            else:
                violations.append(f"after {errno_name} the server exited instead of failing the batch with 503 "
                                  f"and keeping serving reads (--enospc-expect exit, the default, accepts this)")
        for t in threads:
            t.join(30)
        if any(t.is_alive() for t in threads):
            violations.append("a writer thread did not finish")

        fired, syncs_after, writes_after = read_shim_log(shim_log)
        if fired is None:
            violations.append("the shim never fired: no fault was injected (see " + shim_log + ")")
            fired_ns = None
        else:
            fired_ns = int(fired["t_ns"])
            say(f"injected: {fired['op']}(fd {fired['fd']}) -> {fired['errno']}, "
                f"{(fired_ns / 1e9 - armed_at):.3f} s after arming")
        figures["syncs_after"] = len(syncs_after)
        figures["writes_after"] = len(writes_after)

        with workload.lock:
            writes = list(workload.writes)
        acked = [r for r in writes if r.get("outcome") == "acked"]
        figures["acked"] = len(acked)
        figures["refused"] = sum(1 for r in writes if r.get("outcome") == "refused")
        figures["unknown"] = sum(1 for r in writes if r.get("outcome") == "unknown")
        figures["unexpected"] = len(workload.unexpected)
        first_503 = workload.first_refusal_ns
        figures["acked_sent_after_fault"] = sum(1 for r in acked if fired_ns is not None and r["sent_ns"] > fired_ns)
        figures["acked_after_first_503"] = sum(1 for r in acked if first_503 is not None
                                               and r["received_ns"] > first_503)
        # Answers that arrived after the first commit that followed the fault: those
        # writes were (almost surely) in it; answers of batches committed before the
        # fault may still arrive after the first 503, so that figure alone proves nothing.
        first_commit_after = int(syncs_after[0]["t_ns"]) if syncs_after else None
        figures["acked_after_commit_after_fault"] = sum(
            1 for r in acked if first_commit_after is not None and r["received_ns"] > first_commit_after)
        if workload.unexpected:
            sample = "; ".join(f"{s} on {k}: {b}" for s, k, b in workload.unexpected[:3])
            violations.append(f"{len(workload.unexpected)} answers outside the contract (sample: {sample})")
        if workload.retry_after_missing:
            violations.append(f"{workload.retry_after_missing} answers 503 without Retry-After")
        if figures.get("policy") == "exit" and (figures["syncs_after"] or figures["acked_sent_after_fault"]):
            violations.append(
                f"WRITES ACKNOWLEDGED AFTER THE FAILURE: the server committed {figures['syncs_after']} more "
                f"transaction(s) to data.mdb after the failed commit (shim log: successful fdatasync after the "
                f"fault) and answered 2xx to {figures['acked_after_commit_after_fault']} write(s) after that "
                f"commit ({figures['acked_after_first_503']} 2xx received after the first 503, "
                f"{figures['acked_sent_after_fault']} for requests sent after the fault). Nothing may commit or be "
                f"acknowledged after a failed commit (see GroupCommitWriter: commands queued behind a failed "
                f"batch must fail too)")

        # A healthy disk: restart without the shim, everything acknowledged must be there.
        server = registryd.Registryd(binary, data_dir, server_log)
        result = workload.verify(server.port, key)
        figures.update(lost=result["lost"], verified=result["verified"], refused_present=result["refused_present"],
                       phantoms=result["phantoms"])
        for line in result["problems"]:
            violations.append("after restart: " + line)
        status, in_time = server.terminate()
        if status != 0 or not in_time:
            violations.append(f"healthy restart, SIGTERM: {registryd.describe_status(status)}")
        check = subprocess.run([binary, "check", "--data-dir", data_dir], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=300)
        lines = check.stdout.strip().splitlines()
        figures["check"] = f"exit {check.returncode}: {lines[-1] if lines else ''}"
        if check.returncode != 0:
            violations.append(f"registryd check failed: {check.stdout.strip()}")
    except Exception as error:  # a harness failure is a failed run, never a pass
        violations.append(f"harness error: {type(error).__name__}: {error}")
    finally:
        registryd.kill_all()

    say(f"writes acknowledged {figures.get('acked')}, refused (503) {figures.get('refused')}, "
        f"no answer {figures.get('unknown')}, other answers {figures.get('unexpected')}")
    say(f"data.mdb after the fault: {figures.get('syncs_after')} successful fdatasync (commits), "
        f"{figures.get('writes_after')} page/meta writes; 2xx answers: {figures.get('acked_after_commit_after_fault')} "
        f"after a post-fault commit, {figures.get('acked_sent_after_fault')} for requests sent after the fault, "
        f"{figures.get('acked_after_first_503')} received after the first 503 (may include earlier batches)")
    say(f"server: /healthz after the failure {figures.get('healthz')}"
        + (f", sender read {figures['read']}" if "read" in figures else "") + f"; {figures['exit']}")
    say(f"after a restart on a healthy disk: verified {figures.get('verified')}, lost {figures['lost']}, "
        f"refused but present {figures.get('refused_present')}; registryd check {figures['check']}")
    figures["violations"] = violations
    figures["scratch"] = scratch
    for line in violations:
        say("VIOLATION " + line)
    if violations:
        say(f"FAILED (data kept in {scratch})")
    else:
        say("passed")
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return figures


def main():
    parser = argparse.ArgumentParser(
        prog="tools/fault-test",
        description="Runs registryd under concurrent HTTP writes with an LD_PRELOAD shim (tools/faultshim) "
                    "that makes ONE fdatasync or page write on LMDB's data.mdb fail, then checks: no write "
                    "answered 2xx that did not commit, none after the failure, 503s with Retry-After, and a "
                    "non-zero exit by the server itself after EIO and (by default, see --enospc-expect) "
                    "ENOSPC; after a restart without the shim nothing acknowledged is missing and "
                    "`registryd check` passes. Exit 1 on any violation.")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS),
                        help="run only this scenario (repeatable); default: " + ", ".join(DEFAULT_SCENARIOS))
    parser.add_argument("--writers", type=int, default=8, help="concurrent writer threads (default 8)")
    parser.add_argument("--warmup-writes", type=int, default=300,
                        help="acknowledged writes before the shim is armed (default 300)")
    parser.add_argument("--warmup-max", type=float, default=10.0, help="longest warm-up, s (default 10)")
    parser.add_argument("--after-seconds", type=float, default=3.0,
                        help="load kept after the first 503 when the server is expected to survive, s (default 3)")
    parser.add_argument("--fault-delay-ms", type=int, default=100,
                        help="the failing call first sleeps this long, as a dying disk does, so requests "
                             "queue behind the failing commit (default 100)")
    parser.add_argument("--enospc-expect", choices=("serve", "exit", "either"), default="exit",
                        help="after ENOSPC the server exits like after EIO (the default: LMDB does not say "
                             "whether a page write or the fsync failed, so nothing after it is trusted), or "
                             "keeps serving; either: report which")
    parser.add_argument("--exit-timeout", type=float, default=20.0,
                        help="how long a server may take to exit after EIO, s (default 20)")
    parser.add_argument("--config", choices=("release", "debug"), default="release",
                        help="SwiftPM build configuration (default release)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    parser.add_argument("--keep", action="store_true", help="keep data directories even when all is well")
    args = parser.parse_args()
    scenarios = args.scenario or DEFAULT_SCENARIOS

    harness.install_exit_handlers()
    started = time.monotonic()
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    rng = random.Random(seed)
    binary = registryd.registryd_binary(args.config, log=lambda m: harness.log(TOOL, m))
    shim_dir = harness.scratch_directory("shim-")
    shim = build_shim(shim_dir)
    harness.log(TOOL, f"seed {seed}, scenarios {', '.join(scenarios)}, {args.writers} writers")
    results = []
    try:
        for name in scenarios:
            results.append(run_scenario(name, binary, shim, args, rng))
    finally:
        registryd.kill_all()
        shutil.rmtree(shim_dir, ignore_errors=True)
    elapsed = time.monotonic() - started

    print(f"{TOOL}: {'scenario':<16} {'acked':>6} {'refused':>7} {'commits after':>13} {'2xx after':>9} "
          f"{'lost':>5}  server after the fault; check")
    for f in results:
        commits, after = f.get("syncs_after", "-"), f.get("acked_after_commit_after_fault", "-")
        if f.get("policy") == "serve":
            commits, after = f"({commits})", f"({after})"
        print(f"{TOOL}: {f['name']:<16} {f.get('acked', '-'):>6} {f.get('refused', '-'):>7} {commits:>13} "
              f"{after:>9} {f['lost'] if f['lost'] is not None else '-':>5}  {f['exit']}; check {f['check']}")
    print(f"{TOOL}: commits after = transactions committed to data.mdb after the failed one; 2xx after = writes "
          f"answered 2xx after such a commit" + ("; (n): the server kept serving, so writing goes on by design"
                                               if any(f.get("policy") == "serve" for f in results) else ""))
    failed = [f for f in results if f["violations"]]
    print(f"{TOOL}: elapsed {elapsed:.1f} s (seed {seed}, {args.config} build)")
    if failed:
        print(f"{TOOL}: FAILED: " + "; ".join(f"{f['name']}: {len(f['violations'])} violation(s)" for f in failed))
        return 1
    print(f"{TOOL}: OK: {len(results)} fault scenario(s), every acknowledged write present, none acknowledged "
          f"after a failure, check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
