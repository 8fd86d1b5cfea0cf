"""tools/api-fuzz: schemathesis against a live registryd, with both credentials (see tools/api-fuzz --help)."""

import argparse
import os
import random
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "faulttools"))
import harness  # noqa: E402  (Connection, the exit handlers)
from harness import registryd  # noqa: E402  (build, Registryd: started on port 0, stopped by its pid; mint_token)

TOOL = "api-fuzz"
DOCUMENT = os.path.join(REPO, "Sources", "RegistryHTTP", "OpenAPI", "openapi.json")
CONFIG = os.path.join(REPO, "tools", "api", "schemathesis.toml")  # credentials and checks
USER = "alice"  # the document's example user: the examples phase reads what seed() wrote


def seed(port, jwt):
    """Records under the document's examples (alice, 6A1F-IDFV, match-42), so reads answer more than `[]`."""
    connection = harness.Connection(port)
    auth = {"Authorization": f"Bearer {jwt}"}
    writes = [
        ("POST", "/v1/devices", {"deviceId": "6A1F-IDFV", "pushToken": "ab" * 32, "osVersion": "18.2",
                                 "appVersion": "2.1.0", "sequence": 1}),
        ("POST", "/v1/devices/push-to-start-token", {"deviceId": "6A1F-IDFV", "token": "cd" * 32}),
        ("POST", "/v1/activities/match-42/activity-token", {"deviceId": "6A1F-IDFV", "token": "ef" * 32}),
        ("POST", "/v1/devices", {"deviceId": "pixel-8", "platform": "fcm", "pushToken": "fcm:token_1.a-b",
                                 "environment": "sandbox"}),
    ]
    try:
        for method, path, body in writes:
            status, _, payload = connection.request(method, path, body, auth)
            if status not in (200, 201):
                raise SystemExit(f"{TOOL}: seeding {method} {path} answered {status}: {payload[:200]!r}")
    finally:
        connection.close()


def served_document(port):
    connection = harness.Connection(port)
    try:
        status, headers, payload = connection.request("GET", "/openapi.json")
    finally:
        connection.close()
    if status != 200 or not headers.get("content-type", "").startswith("application/json"):
        raise SystemExit(f"{TOOL}: GET /openapi.json answered {status} {headers.get('content-type')}")
    return payload


def main():
    parser = argparse.ArgumentParser(
        prog="tools/api-fuzz",
        description="Builds registryd, starts it on a fresh data directory on a free loopback port, checks "
                    "that it serves the document in the source tree, writes a few records, and runs "
                    "schemathesis against it: every operation of Sources/RegistryHTTP/OpenAPI/openapi.json "
                    "with the credential its `security` names (a device JWT from `registryd mint-token`, "
                    "the generated internal API key, or the generated read-only operator key). Fails on any 5xx, any answer the document does not "
                    "describe (status, content type, body schema, headers), invalid data accepted, an error "
                    "in the server log, or an unclean SIGTERM exit. Arguments after `--` go to "
                    "`schemathesis run`.")
    parser.add_argument("--config", choices=("debug", "release"), default="debug",
                        help="SwiftPM build configuration (default debug)")
    parser.add_argument("--max-examples", type=int, default=50,
                        help="test cases per operation and phase (default 50)")
    parser.add_argument("--phases", default="examples,coverage,fuzzing,stateful",
                        help="schemathesis phases (default examples,coverage,fuzzing,stateful)")
    parser.add_argument("--seed", type=int, default=None, help="schemathesis seed (default: random, printed)")
    parser.add_argument("--workers", default="1", help="schemathesis workers (default 1; 'auto' allowed)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory even when all is well")
    parser.add_argument("--schemathesis", default="schemathesis", help=argparse.SUPPRESS)
    parser.add_argument("extra", nargs="*", help="arguments for `schemathesis run` (after --)")
    args = parser.parse_args()
    if args.max_examples < 1:
        parser.error("--max-examples must be at least 1")

    harness.install_exit_handlers()
    started = time.monotonic()
    seed_value = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    binary = registryd.registryd_binary(args.config, log=lambda m: harness.log(TOOL, m))
    scratch = harness.scratch_directory("api-fuzz-")
    data_dir = os.path.join(scratch, "data")
    server_log = os.path.join(scratch, "server.log")
    problems = []
    server = None
    fuzz_seconds = 0.0
    try:
        server = registryd.Registryd(binary, data_dir, server_log)
        base_url = f"http://127.0.0.1:{server.port}"
        harness.log(TOOL, f"registryd (pid {server.pid}) listens on {base_url}, data in {data_dir}")
        with open(DOCUMENT, "rb") as f:
            if served_document(server.port) != f.read():
                problems.append("GET /openapi.json differs from Sources/RegistryHTTP/OpenAPI/openapi.json")
        jwt = registryd.mint_token(binary, data_dir, USER, ttl="4h")
        seed(server.port, jwt)

        environment = dict(os.environ, REGISTRYD_FUZZ_DEVICE_JWT=jwt,
                           REGISTRYD_FUZZ_INTERNAL_KEY=registryd.internal_api_key(data_dir),
                           REGISTRYD_FUZZ_OPERATOR_KEY=registryd.operator_key(data_dir))
        command = [args.schemathesis, "--config-file", CONFIG, "--no-color", "run", DOCUMENT,
                   "--url", base_url, "--phases", args.phases,
                   "--max-examples", str(args.max_examples), "--seed", str(seed_value),
                   "--workers", args.workers, "--generation-database", "none",
                   "--report", "junit", "--report-dir", os.path.join(scratch, "report"), *args.extra]
        harness.log(TOOL, f"seed {seed_value}, {args.max_examples} examples per operation, phases {args.phases}")
        fuzz_started = time.monotonic()
        # cwd: schemathesis and hypothesis write their working files there.
        result = subprocess.run(command, env=environment, cwd=scratch)
        fuzz_seconds = time.monotonic() - fuzz_started
        if result.returncode != 0:
            problems.append(f"schemathesis exit {result.returncode} (its report is above)")
        if not server.alive():
            problems.append(f"registryd died during the run: {registryd.describe_status(server.process.returncode)}")
        else:
            status, in_time = server.terminate()
            if status != 0 or not in_time:
                problems.append(f"registryd did not stop cleanly on SIGTERM: {registryd.describe_status(status)}")
    finally:
        registryd.kill_all()

    with open(server_log, "rb") as f:
        errors = [line.decode(errors="replace").rstrip() for line in f if b'"level":"error"' in line]
    if errors:
        problems.append(f"{len(errors)} error line(s) in the server log, the first: {errors[0][:300]}")

    total = time.monotonic() - started
    if problems:
        for problem in problems:
            harness.log(TOOL, f"problem: {problem}")
        harness.log(TOOL, f"FAILED in {total:.0f} s (schemathesis {fuzz_seconds:.0f} s, seed {seed_value}); "
                          f"kept {scratch} (server.log, report/)")
        sys.exit(1)
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    harness.log(TOOL, f"OK in {total:.0f} s (schemathesis {fuzz_seconds:.0f} s, seed {seed_value}): every "
                      f"answer matched the document, no 5xx, no error logged, clean exit")


if __name__ == "__main__":
    main()
