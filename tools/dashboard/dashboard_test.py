"""tools/dashboard-test: the Grafana dashboard and the Prometheus rules against a real Prometheus
scraping a real registryd (see tools/dashboard-test --help)."""

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools", "lib"))
import apnsfake  # noqa: E402  (tools/fake-apns as a child)
import registryd  # noqa: E402  (build, Registryd: started on port 0, stopped by its pid; mint_tokens)

import load  # noqa: E402
import picture  # noqa: E402
import prometheus  # noqa: E402
import queries  # noqa: E402

TOOL = "dashboard-test"
DASHBOARD = os.path.join(REPO, "deploy", "grafana", "registryd.json")
RULES_DIR = os.path.join(REPO, "deploy", "prometheus")
RULES = os.path.join(RULES_DIR, "registryd-rules.yml")
RULE_TESTS = os.path.join(RULES_DIR, "registryd-rules.test.yml")
TEAM_ID, KEY_ID, BUNDLE = "TEAM123456", "KEY1234567", "com.example.scores"
# Grafana's $__rate_interval is at least four scrape intervals: 4 s here, rounded up.
RATE_INTERVAL = "5s"
STEP = "1s"
PICTURE_PANEL = "Requests by route"
# The alert the run must raise (the fake answers one token InvalidProviderToken); no other may be active.
EXPECTED_ALERT = ("RegistrydProviderConfigurationErrors", {"provider": "apns", "reason": "InvalidProviderToken"})


def log(message):
    print(f"{TOOL}: {message}", flush=True)


class Children:
    """Every process the run starts, stopped by pid at the end or on a signal."""

    def __init__(self):
        self.fake = None
        self.prometheus = None

    def stop(self):
        registryd.stop_all(timeout=10)
        for child in (self.prometheus, self.fake):
            if child is not None:
                try:
                    child.stop()
                except Exception:
                    pass


def check_rules():
    """promtool check rules, then promtool test rules (from the rules' folder, as the test file names them)."""
    ok = True
    for command, cwd in ((["promtool", "check", "rules", RULES], REPO),
                         (["promtool", "test", "rules", os.path.basename(RULE_TESTS)], RULES_DIR)):
        done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = [line for line in done.stdout.strip().splitlines() if line.strip()]
        if done.returncode != 0:
            ok = False
            log(f"{' '.join(command[:3])}: FAILED\n{done.stdout}")
        else:
            log(f"{' '.join(command[:3])}: {lines[-1].strip() if lines else 'ok'}")
    return ok


def start_everything(args, work, children):
    binary = registryd.registryd_binary(args.config, log=log)
    p8, pub = apnsfake.make_key(os.path.join(work, "apns-key"))
    fleet = load.Fleet()
    script_path = os.path.join(work, "fake-apns-script.json")
    with open(script_path, "w") as f:
        json.dump(fleet.script(), f)
    children.fake = apnsfake.FakeAPNs(os.path.join(work, "fake-apns"), os.path.join(work, "fake-apns", "certs"),
                                      auth_key=pub, team_id=TEAM_ID, key_id=KEY_ID,
                                      topics=[BUNDLE, BUNDLE + ".push-type.liveactivity"], script=script_path)
    data_dir = os.path.join(work, "data")
    flags = ["--sweep-interval", "2s",
             "--apns-key-file", p8, "--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID,
             "--apns-topic", f"default={BUNDLE}", "--apns-ca-file", children.fake.ca_file,
             "--apns-production-url", children.fake.url("production"),
             "--apns-sandbox-url", children.fake.url("sandbox")]
    server = registryd.Registryd(binary, data_dir, os.path.join(work, "registryd.log"), flags=flags)
    log(f"registryd ({args.config}) pid {server.pid} at {server.url}, delivery to the fake APNs pid {children.fake.pid}")
    key_file = os.path.join(data_dir, "secrets", "internal-api.key")
    for attempt in (1, 2, 3):
        folder = os.path.join(work, f"prometheus-{attempt}")
        os.makedirs(folder)
        try:
            children.prometheus = prometheus.Prometheus(folder, f"127.0.0.1:{server.port}", key_file, [RULES],
                                                        registryd.free_port())
            break
        except RuntimeError as error:  # another program took the port between the pick and the bind
            if attempt == 3:
                raise
            log(f"{error}; again on another port")
    log(f"prometheus pid {children.prometheus.pid} at {children.prometheus.url}, scraping every second")
    jwts = registryd.mint_tokens(binary, data_dir, fleet.users)
    return server, fleet, jwts, registryd.internal_api_key(data_dir)


def wait_for_scrapes(prom, after, count=2, timeout=15.0):
    """Until Prometheus has scraped registryd `count` times after `after` (epoch seconds; 0: once
    at all)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = prom.last_scrape_time("registryd")
        if last is not None and (count == 0 or last >= after + count - 0.5):
            return True
        time.sleep(0.2)
    return False


def finite_points(series):
    return [(float(t), float(v)) for t, v in series["values"] if math.isfinite(float(v))]


def check_queries(prom, doc, start, end, verbose=False):
    """Every panel query over [start, end]: returns (failures, results by panel title)."""
    problems = queries.check_shape(doc)
    instance_variable = queries.variables(doc)["instance"]
    variable_query = queries.variable_query(instance_variable)
    # label_values(METRIC, LABEL), as Grafana asks for it
    metric, label = [part.strip() for part in variable_query[len("label_values("):-1].split(",")]
    instances = prom.label_values(label, metric)
    if not instances:
        problems.append(f"the instance variable ({variable_query}) has no value")
    values = {"__rate_interval": RATE_INTERVAL, "__interval": STEP, "__range": f"{int(end - start)}s",
              "instance": queries.regex_value(instances or ["none"]), "datasource": "prometheus"}
    results = {}
    targets = queries.targets(doc)
    for title, ref, expr in targets:
        query = queries.substitute(expr, values)
        left = queries.unresolved(query)
        if left:
            problems.append(f"{title} [{ref}]: unknown variable(s) {', '.join(left)}")
            continue
        try:
            matrix = prom.query_range(query, start, end, STEP)
        except prometheus.PrometheusError as error:
            problems.append(f"{title} [{ref}]: {error}\n    {query}")
            continue
        with_data = [series for series in matrix if finite_points(series)]
        if verbose:
            log(f"  {title} [{ref}]: {len(with_data)} series with data, e.g. "
                f"{with_data[0]['metric'] if with_data else '-'}")
        if not with_data:
            problems.append(f"{title} [{ref}]: no data ({len(matrix)} series, no finite value)\n    {query}")
        results.setdefault(title, []).append((ref, with_data))
    log(f"{len(targets)} queries of {len(results)} panels evaluated over {end - start:.0f} s "
        f"(instance {', '.join(instances)}, $__rate_interval {RATE_INTERVAL}, step {STEP})")
    return problems, results


def check_rule_health(prom, timeout=10.0):
    """Every rule of the file loaded and evaluated without error (/api/v1/rules)."""
    expected = set()
    with open(RULES) as f:
        for line in f:
            if line.strip().startswith("- alert:"):
                expected.add(line.split(":", 1)[1].strip())
    deadline = time.monotonic() + timeout
    while True:
        rules = [rule for group in prom.rule_groups() for rule in group["rules"]]
        unevaluated = [rule["name"] for rule in rules if rule.get("health") == "unknown"]
        if not unevaluated or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    problems = []
    names = {rule["name"] for rule in rules}
    for missing in sorted(expected - names):
        problems.append(f"rule {missing} is not loaded")
    for rule in rules:
        if rule.get("health") != "ok":
            problems.append(f"rule {rule['name']}: health {rule.get('health')} {rule.get('lastError', '')}".rstrip())
    log(f"{len(rules)} rules loaded, {sum(rule.get('health') == 'ok' for rule in rules)} healthy")
    return problems


def check_alerts(prom):
    """The run raises the configuration-error alert (pending: its `for` is longer than the run), and nothing else."""
    name, labels = EXPECTED_ALERT
    active = prom.alerts()
    shown = ", ".join(f"{a['labels'].get('alertname')}{{{a['labels'].get('provider', '')} {a['labels'].get('reason', '')}}}"
                      f" {a['state']}".replace("{ ", "{") for a in active) or "none"
    log(f"active alerts: {shown}")
    problems = []
    if not any(a["labels"].get("alertname") == name and all(a["labels"].get(k) == v for k, v in labels.items())
               for a in active):
        problems.append(f"{name} {labels} is not active after APNs answered InvalidProviderToken")
    for alert in active:
        if alert["labels"].get("alertname") != name:
            problems.append(f"unexpected alert {alert['labels'].get('alertname')} ({alert['state']}): "
                            f"{alert.get('annotations', {}).get('summary', '')}")
    return problems


def draw_picture(doc, results, path):
    panel = next(p for p in doc["panels"] if p.get("title") == PICTURE_PANEL)
    target = panel["targets"][0]
    unit = {"reqps": "requests per second", "s": "seconds"}.get(panel["fieldConfig"]["defaults"].get("unit"), "")
    series = [(picture.legend(target.get("legendFormat"), s["metric"]), finite_points(s))
              for ref, matrix in results.get(PICTURE_PANEL, []) if ref == target["refId"] for s in matrix]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    picture.draw(path, f"registryd dashboard: {PICTURE_PANEL}", unit, series,
                 subtitle=f"tools/dashboard-test: {target['expr']}  ($__rate_interval = {RATE_INTERVAL})")
    log(f"picture of {PICTURE_PANEL!r} written to {path}")


def main():
    parser = argparse.ArgumentParser(
        prog="tools/dashboard-test",
        description="Checks deploy/prometheus/registryd-rules.yml (promtool check rules, promtool test rules "
                    "registryd-rules.test.yml), then starts a registryd delivering to tools/fake-apns and a "
                    "private Prometheus (Debian's prometheus, loopback, 1 s scrapes, the rules loaded) that "
                    "scrapes it, puts load on registryd (a few hundred registrations, the sender's reads, a "
                    "feedback removal, a sweep, notification fan-outs with scripted APNs refusals), and "
                    "evaluates every query of deploy/grafana/registryd.json over the run through Prometheus's "
                    "HTTP API: fails when one returns no data (naming the panel), when a rule is not healthy, "
                    "or when an alert other than the expected APNs configuration error is raised.")
    parser.add_argument("--config", choices=("debug", "release"), default="debug",
                        help="SwiftPM build configuration of registryd (default debug)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of steady load (default 10)")
    parser.add_argument("--picture", metavar="PNG",
                        help=f"also draw the {PICTURE_PANEL!r} panel's results as a PNG at this path")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder even when all is well")
    parser.add_argument("--verbose", action="store_true", help="one line per query: its series with data")
    args = parser.parse_args()

    started = time.monotonic()
    failures = []
    if not check_rules():
        failures.append("promtool")
    doc = queries.load(DASHBOARD)
    shape = queries.check_shape(doc)
    for problem in shape:
        log(f"dashboard: {problem}")
    if shape:
        failures.append("dashboard shape")

    work = tempfile.mkdtemp(prefix="registryd-dashboard-test.")
    children = Children()

    def on_signal(signum, frame):
        children.stop()
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)

    try:
        server, fleet, jwts, api_key = start_everything(args, work, children)
        prom = children.prometheus
        # Prometheus applies a new target a few seconds after it starts: load only once it scrapes.
        if not wait_for_scrapes(prom, time.time(), count=0, timeout=20):
            raise RuntimeError("Prometheus did not scrape registryd within 20 s")
        traffic = load.Load(server.port, api_key, jwts, fleet)
        load_start = time.time()
        registrations = traffic.setup()
        notifications = traffic.steady(args.seconds)
        load_end = time.time()
        total, by_status = traffic.summary()
        log(f"load: {registrations} devices registered, {total} requests in {load_end - load_start:.1f} s "
            f"({', '.join(f'{n} x {s}' for s, n in by_status.items())}), {len(notifications)} notifications")
        if not wait_for_scrapes(prom, load_end):
            failures.append("scrapes")
            log("Prometheus did not scrape registryd after the load")
        problems, results = check_queries(prom, doc, load_start - 2, time.time(), args.verbose)
        problems += check_rule_health(prom)
        problems += check_alerts(prom)
        for problem in problems:
            log(f"FAILED: {problem}")
        if problems:
            failures.append("prometheus")
        if args.picture and not problems:
            draw_picture(doc, results, args.picture)
        if not server.alive():
            failures.append("registryd")
            log(f"registryd exited ({registryd.describe_status(server.process.returncode)})")
        status, in_time = server.terminate(timeout=20)
        if status != 0 or not in_time:
            failures.append("registryd")
            log(f"registryd stopped with {registryd.describe_status(status)}"
                + ("" if in_time else " (SIGKILL after 20 s)"))
    except (RuntimeError, load.LoadError, prometheus.PrometheusError, OSError) as error:
        failures.append("run")
        log(f"FAILED: {error}")
    finally:
        children.stop()

    elapsed = time.monotonic() - started
    if failures:
        log(f"FAILED ({', '.join(failures)}) in {elapsed:.0f} s; logs kept in {work}")
        return 1
    if args.keep:
        log(f"scratch folder kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    log(f"OK in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
