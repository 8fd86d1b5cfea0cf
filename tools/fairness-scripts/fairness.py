"""The two phases of tools/fairness: a trickle of other users' launch
upserts alone, then beside one user keeping N writes in flight; prints the
trickle's latency percentiles per phase and the hot user's answers."""
import argparse
import http.client
import json
import threading
import time


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--jwts", required=True)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--hot", type=int, default=64)
    parser.add_argument("--rate", type=float, default=200)
    args = parser.parse_args()
    with open(args.jwts) as f:
        jwts = [line.strip() for line in f if line.strip()]
    hot_jwt, other_jwts = jwts[0], jwts[1:]
    lock = threading.Lock()

    # Warm up: every user's first registration creates rows; not measured.
    trickle(args.port, other_jwts, 2, args.rate, [], lock)

    alone = []
    trickle(args.port, other_jwts, args.seconds, args.rate, alone, lock)
    p99_alone = report("alone", alone, None)

    stop = threading.Event()
    statuses = {}
    workers = hot_user(args.port, hot_jwt, args.hot, stop, statuses, lock)
    time.sleep(1)
    beside = []
    trickle(args.port, other_jwts, args.seconds, args.rate, beside, lock)
    stop.set()
    for w in workers:
        w.join()
    p99_hot = report("with-hot", beside, statuses)
    print("p99 with the hot user / p99 alone: %.2f (goal: at most 2)" % (p99_hot / p99_alone), flush=True)


if __name__ == "__main__":
    main()
