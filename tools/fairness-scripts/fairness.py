"""tools/fairness: does one user with many writes in flight starve the others?

Starts a private durable PostgreSQL (tools/pg-server start --durable) and one
`registryd serve --store postgres` on it (--postgres-pool-size N, default 16),
then runs two phases of S seconds each (default 15) over HTTP on loopback:
  alone     a steady trickle of launch upserts from 64 other users, R per
            second in all (default 200), each request timed;
  with-hot  the same trickle, while one user keeps N writes in flight at
            once (default 64: N connections each sending the next launch
            upsert of that user as soon as the last one answered).
Prints, per phase, the trickle's p50/p95/p99 and the hot user's answers by
status, and the ratio of the trickle's p99 with the hot user to without
(the goal: at most 2). --binary runs another registryd build (for example
one built from an older commit) instead of this tree's.
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import pgserver  # noqa: E402  (the private PostgreSQL)
import registryd  # noqa: E402  (build, Registryd, mint_tokens)

OTHER_USERS = 64


def upsert(connection, jwt, device, token):
    body = json.dumps({"deviceId": device, "pushToken": token})
    started = time.perf_counter()
    connection.request("POST", "/v1/devices", body=body,
                       headers={"Authorization": "Bearer " + jwt, "Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status, time.perf_counter() - started


def trickle(port, jwts, seconds, rate, latencies, lock):
    """rate requests a second in all, spread over 8 threads, each user its own devices."""
    threads = 8
    interval = threads / rate

    def run(index):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        deadline = time.perf_counter() + seconds
        n = 0
        next_at = time.perf_counter()
        while time.perf_counter() < deadline:
            user = (index + n * threads) % len(jwts)
            status, elapsed = upsert(connection, jwts[user], "phone%d" % (n % 3), "%064x" % (index * 1_000_000 + n))
            with lock:
                latencies.append((status, elapsed))
            n += 1
            next_at += interval
            pause = next_at - time.perf_counter()
            if pause > 0:
                time.sleep(pause)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def hot_user(port, jwt, inflight, stop, statuses, lock):
    def run(index):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        n = 0
        while not stop.is_set():
            status, _ = upsert(connection, jwt, "hot%d" % (index % 8), "%064x" % (10**12 + index * 1_000_000 + n))
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
            n += 1

    workers = [threading.Thread(target=run, args=(i,)) for i in range(inflight)]
    for w in workers:
        w.start()
    return workers


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(round(p / 100 * (len(sorted_values) - 1))))]


def report(name, latencies, hot_statuses):
    ok = sorted(e for s, e in latencies if s in (200, 201))
    others = {}
    for s, _ in latencies:
        others[s] = others.get(s, 0) + 1
    p50, p95, p99 = (percentile(ok, p) * 1000 for p in (50, 95, 99))
    line = "%-9s trickle: %5d requests %s, p50 %6.1f ms, p95 %6.1f ms, p99 %6.1f ms" % (
        name, len(latencies), dict(sorted(others.items())), p50, p95, p99)
    if hot_statuses is not None:
        line += "; hot user: %s" % dict(sorted(hot_statuses.items()))
    print(line, flush=True)
    return p99


def arguments():
    parser = argparse.ArgumentParser(prog="tools/fairness", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=15, help="seconds per phase (default 15)")
    parser.add_argument("--hot", type=int, default=64, help="the hot user's writes in flight (default 64)")
    parser.add_argument("--pool-size", type=int, default=16, help="registryd's --postgres-pool-size (default 16)")
    parser.add_argument("--rate", type=float, default=200, help="the trickle's requests per second (default 200)")
    parser.add_argument("--config", choices=("release", "debug"), default="release",
                        help="SwiftPM build configuration (default release)")
    parser.add_argument("--binary", help="the registryd to run (default: this tree's, built here)")
    return parser.parse_args()


def measure(port, jwts, seconds, hot, rate):
    """The warm-up, the trickle alone, then beside the hot user; prints each phase and the ratio."""
    hot_jwt, other_jwts = jwts[0], jwts[1:]
    lock = threading.Lock()

    # Warm up: every user's first registration creates rows; not measured.
    trickle(port, other_jwts, 2, rate, [], lock)

    alone = []
    trickle(port, other_jwts, seconds, rate, alone, lock)
    p99_alone = report("alone", alone, None)

    stop = threading.Event()
    statuses = {}
    workers = hot_user(port, hot_jwt, hot, stop, statuses, lock)
    time.sleep(1)
    beside = []
    trickle(port, other_jwts, seconds, rate, beside, lock)
    stop.set()
    for w in workers:
        w.join()
    p99_hot = report("with-hot", beside, statuses)
    print("p99 with the hot user / p99 alone: %.2f (goal: at most 2)" % (p99_hot / p99_alone), flush=True)


def main():
    args = arguments()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # the finally below still runs
    binary = args.binary or registryd.registryd_binary(args.config)
    work = tempfile.mkdtemp(prefix="registryd-fairness.", dir="/tmp")
    # The server's own folder under /tmp: tools/pg-server hands it to the postgres user.
    pg = tempfile.mkdtemp(prefix="registryd-fairness-pg.", dir="/tmp")
    server = None
    try:
        url = pgserver.start(pg, durable=True)
        data_dir = os.path.join(work, "data")
        log_path = os.path.join(work, "server.log")
        try:
            server = registryd.Registryd(binary, data_dir, log_path, [
                "--store", "postgres", "--postgres-url", url, "--postgres-pool-size", str(args.pool_size)])
        except RuntimeError:
            with open(log_path, errors="replace") as f:
                sys.stderr.write(f.read())
            raise SystemExit("tools/fairness: registryd did not start")
        users = ["hot"] + ["other%d" % i for i in range(OTHER_USERS)]
        tokens = registryd.mint_tokens(binary, data_dir, users, ttl="1h")
        measure(server.port, [tokens[user] for user in users], args.seconds, args.hot, args.rate)
    finally:
        if server is not None:
            server.terminate()
        pgserver.stop(pg, quiet=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
