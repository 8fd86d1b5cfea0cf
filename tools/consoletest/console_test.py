"""tools/console-test: the operator console in a real browser, against a real registryd (see --help)."""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request

from selenium.webdriver.common.keys import Keys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools", "lib"))
import apnsfake  # noqa: E402  (tools/fake-apns as a child, its provider key)
import pgserver  # noqa: E402  (a private PostgreSQL through tools/pg-server)
import registryd  # noqa: E402  (build, Registryd on port 0 stopped by its pid, mint_tokens, internal_api_key)
from browser import Browser  # noqa: E402
import fill as filling  # noqa: E402

TOOL = "console-test"
TEAM_ID, KEY_ID, BUNDLE = "TEAM123456", "KEY1234567", "com.example.app"
CSP_PARTS = ("default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "base-uri 'none'",
             "form-action 'none'", "frame-ancestors 'none'", "require-trusted-types-for 'script'")
PAGES = ("overview", "user", "activity", "notifications", "notification", "removals")


def log(message):
    print(f"{TOOL}: {message}", flush=True)


class Check:
    """Collects failed checks of one store's run instead of stopping at the first."""

    def __init__(self, store):
        self.store = store
        self.problems = []
        self.passed = 0

    def equal(self, what, seen, expected):
        if seen == expected:
            self.passed += 1
        else:
            self.problems.append(f"[{self.store}] {what}: the console shows {seen!r}, the API says {expected!r}")

    def true(self, what, condition):
        if condition:
            self.passed += 1
        else:
            self.problems.append(f"[{self.store}] {what}")


def check_headers(check, base_url):
    """The console's three files: their types and the headers that confine the page."""
    for path, kind in (("/console", "text/html"), ("/console/app.js", "text/javascript"), ("/console/app.css", "text/css")):
        with urllib.request.urlopen(base_url + path, timeout=10) as response:
            headers = {k.lower(): v for k, v in response.headers.items()}
        check.true(f"{path} is {kind}", headers.get("content-type", "").startswith(kind))
        csp = headers.get("content-security-policy", "")
        check.true(f"{path} has the CSP (got {csp!r})", all(part in csp for part in CSP_PARTS))
        check.equal(f"{path} X-Content-Type-Options", headers.get("x-content-type-options"), "nosniff")
        check.equal(f"{path} Referrer-Policy", headers.get("referrer-policy"), "no-referrer")
        check.equal(f"{path} Cache-Control", headers.get("cache-control"), "no-store")


def check_key(check, browser, operator_key, internal_key, device_jwt):
    """No key: the key panel, asking for the operator key. A wrong key, or a device's token: a message that
    says which, and no data. The internal key works too; forgotten, the operator key, which the pages then use."""
    browser.load()
    browser.wait(lambda: browser.driver.find_element("id", "key-panel").is_displayed(), "the key panel")
    check.true("the key panel asks for the operator key", "Operator key" in browser.text("#key-panel h2")
               and "operator.key" in browser.text("#key-panel"))
    for wrong, words in (("not-the-key-" + "x" * 20, "refused this key"), (device_jwt, "device token")):
        browser.driver.find_element("id", "key-input").send_keys(wrong + Keys.ENTER)
        browser.wait(lambda: words in browser.text("#key-message"), f"the message for a wrong key ({words!r})")
        check.true(f"a wrong key shows no data ({words!r})", browser.texts("[data-figure]") == [])
    for name, key in (("internal", internal_key), ("operator", operator_key)):
        if name == "operator":
            browser.driver.find_element("id", "forget").click()
            browser.wait(lambda: browser.driver.find_element("id", "key-panel").is_displayed(), "the key panel after forgetting")
        browser.driver.find_element("id", "key-input").send_keys(key + Keys.ENTER)
        browser.wait(lambda: not browser.driver.find_element("id", "key-panel").is_displayed()
                     and browser.driver.execute_script("return document.getElementById('page').dataset.page") == "overview"
                     and browser.texts("[data-figure]") != [], f"the overview after the {name} key")
        check.true(f"the {name} key hides the key panel", not browser.driver.find_element("id", "key-panel").is_displayed())


def check_pages(check, browser, api, ids, shots, refresh):
    """Each page's figures against the API's own answers; a screenshot of each."""
    def shot(name):
        if shots:
            browser.screenshot(os.path.join(shots, f"console-{name}.png"))

    browser.show("overview", "overview")
    stats = api.get("/internal/v1/stats")
    for name in ("devices", "pushTokens", "pushToStartTokens", "activityTokens", "tombstones"):
        check.equal(f"overview {name}", browser.figure(name), stats["counts"][name])
    queue = api.get("/internal/v1/deliveries/queue")
    check.equal("overview queued", browser.figure("queued"), queue["queued"])
    removals = api.get("/internal/v1/removals?bucket=hour&buckets=24")["totals"]
    verdict = browser.texts(".verdicts li")[0]
    check.true(f"overview names the feedback removals of 24 h ({removals['reasons']['feedback']}): {verdict!r}",
               f"APNs and FCM removed {removals['reasons']['feedback']} token(s)" in verdict)
    check.true("overview draws its charts", all(browser.driver.find_elements("css selector", f"svg[data-chart={c}] rect")
                                                 for c in ("tokens-by-kind", "removals", "deliveries-by-state")))
    if refresh:
        # The overview refreshes by itself: a device registered now shows up without a reload.
        before = browser.figure("devices")
        status, _ = api.request("POST", "/v1/devices", {"deviceId": "late-phone"}, credential=refresh)
        check.equal("a late registration", status, 201)
        browser.timeout, timeout = 15.0, browser.timeout
        browser.wait(lambda: browser.figure("devices") == before + 1, "the overview to refresh by itself")
        browser.timeout = timeout
        check.passed += 1
    shot("overview")

    browser.show("user/alice", "user")
    devices = api.get("/internal/v1/users/alice/devices?view=operator")["devices"]
    history = api.get("/internal/v1/users/alice/history?limit=100")["events"]
    check.equal("alice's devices", sorted(browser.attributes("[data-device]", "data-device")),
                sorted(d["deviceId"] for d in devices))
    check.equal("alice's history events", len(browser.driver.find_elements("css selector", "[data-list=history] li")), len(history))
    shown = browser.text("[data-list=history]")
    check.true("alice's timeline shows each fingerprint", all(e["tokenFingerprint"] in shown for e in history))
    shot("user")

    browser.show(f"activity/{filling.ACTIVITY}", "activity")
    counts = api.get(f"/internal/v1/activities/{filling.ACTIVITY}/token-counts")
    fan_out = api.get(f"/internal/v1/activities/{filling.ACTIVITY}/tokens?limit=1000")["tokens"]
    check.equal("activity tokens", browser.figure("activityTokens"), counts["tokens"])
    check.equal("activity tokens against the fan-out", counts["tokens"], len(fan_out))
    for environment in ("production", "sandbox"):
        check.equal(f"activity {environment}", browser.figure(environment), counts["environments"][environment])
        check.equal(f"activity {environment} against the fan-out", counts["environments"][environment],
                    sum(1 for t in fan_out if t["environment"] == environment))
    shot("activity")

    browser.show("notifications", "notifications")
    listed = api.get("/internal/v1/notifications?limit=20")["notifications"]
    check.equal("notifications listed", browser.attributes("[data-notification]", "data-notification"), [n["id"] for n in listed])
    check.equal("the fill's notifications listed", set(n["id"] for n in listed), set(ids))
    shot("notifications")

    first = ids[0]
    browser.driver.find_element("css selector", f"[data-notification='{first}']").click()
    browser.wait(lambda: browser.driver.execute_script("return document.getElementById('page').dataset.page") == "notification",
                 "a notification's page after a click")
    shown = api.get(f"/internal/v1/notifications/{first}")
    for state, n in shown["notification"]["counts"].items():
        check.equal(f"notification {state}", browser.figure(state), n)
    rows = browser.driver.find_elements("css selector", "table tbody tr")
    check.equal("deliveries listed", len(rows), len(shown["deliveries"]))
    check.equal("each delivery's platform", browser.attributes("table tbody [data-platform]", "data-platform"),
                [d["platform"] for d in shown["deliveries"]])
    check.true("an FCM delivery among them (the Android phone's)", any(d["platform"] == "fcm" for d in shown["deliveries"]))
    reasons = {d["reason"] for d in shown["deliveries"] if d["reason"]}
    page_text = browser.text("#page")
    check.true(f"delivery reasons shown ({sorted(reasons)})", reasons and all(r in page_text for r in reasons))
    check.true("the Android phone's delivery failed at accept (platform_not_configured)",
               "platform_not_configured" in reasons)
    check.true("the page draws deliveries by platform",
               browser.driver.find_elements("css selector", "svg[data-chart=delivery-platforms] rect"))
    shot("notification")

    browser.show("removals/hour-48", "removals")
    totals = api.get("/internal/v1/removals?bucket=hour&buckets=48")["totals"]
    check.equal("removals", browser.figure("removed"), totals["removed"])
    for reason, n in totals["reasons"].items():
        check.equal(f"removals {reason}", int(browser.text(f"[data-reason={reason}]").replace(",", "")), n)
    for reason, n in totals["feedbackReasons"].items():
        check.equal(f"removals feedback {reason}", int(browser.text(f"[data-feedback-reason={reason}]").replace(",", "")), n)
    shot("removals")


def check_leaks(check, browser, base_url, tokens):
    """No request left for another origin, no answer and no page held a token, the page ran under its CSP."""
    requests = browser.requests()
    others = [url for _, _, url in requests if not (url.startswith(base_url + "/") or url.startswith("data:"))]
    check.true(f"every request stays on {base_url} ({len(requests)} made; others: {others[:3]})", requests and not others)
    check.true("the console read no sender view (devices only with view=operator)",
               all("view=operator" in url for _, _, url in requests if url.endswith("/devices") or "/devices?" in url))
    responses = browser.responses()
    page = [r for r in responses.values() if r[0] == base_url + "/console"]
    check.true("the page was served with its CSP", page and "require-trusted-types-for" in page[0][2].get("content-security-policy", ""))
    # As written (FCM tokens are mixed case), and hex tokens in either case.
    lowered = sorted({variant for t in tokens for variant in (t, t.lower(), t.upper())})
    read = 0
    for request_id, (url, _, _) in responses.items():
        body = browser.body(request_id)
        if body is None:
            continue
        read += 1
        found = [t for t in lowered if t in body]
        check.true(f"{url} carried no token (found {len(found)})", not found)
    check.true(f"the answers were read ({read} of {len(responses)})", read >= len(responses) // 2)
    source = browser.source()
    check.true("no token in the page", not any(t in source for t in lowered))
    violations = [m["message"] for m in browser.console if "Content Security Policy" in m["message"]
                  or "Trusted Type" in m["message"]]
    check.true(f"no CSP violation ({violations[:2]})", not violations)
    # Chrome logs the refused reads of the wrong-key step (401, 403) as errors; nothing else may be one.
    errors = [m["message"] for m in browser.console if m["level"] == "SEVERE"
              and "(Unauthorized)" not in m["message"] and "(Forbidden)" not in m["message"]]
    check.true(f"no error in the page's console ({errors[:2]})", not errors)


def run_store(store, binary, scratch, shots, refresh):
    check = Check(store)
    work = os.path.join(scratch, store)
    os.makedirs(work)
    started = time.monotonic()
    # Under /tmp: tools/pg-server runs the server as postgres when root, which must reach its folder.
    pg_dir = tempfile.mkdtemp(prefix="registryd-console-pg-") if store == "postgres" else None
    fake = server = browser = None
    try:
        store_flags = []
        if pg_dir:
            store_flags = ["--store", "postgres", "--postgres-url", pgserver.start(pg_dir, durable=False)]
        fill, devices = filling.plan()
        script = os.path.join(work, "apns-script.json")
        with open(script, "w") as f:
            json.dump(fill.script, f)
        p8, public_key = apnsfake.make_key(os.path.join(work, "apns-key"))
        fake = apnsfake.FakeAPNs(os.path.join(work, "fake-apns"), os.path.join(work, "fake-apns", "certs"),
                                 auth_key=public_key, team_id=TEAM_ID, key_id=KEY_ID, topics=[BUNDLE], script=script)
        data_dir = os.path.join(work, "data")
        server = registryd.Registryd(binary, data_dir, os.path.join(work, "server.log"), flags=[
            *store_flags, "--apps", filling.SCORES,
            "--apns-key-file", p8, "--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID, "--apns-topic", f"default={BUNDLE}",
            "--apns-production-url", fake.url("production"), "--apns-sandbox-url", fake.url("sandbox"),
            "--apns-ca-file", fake.ca_file])
        key = registryd.internal_api_key(data_dir)
        jwts = registryd.mint_tokens(binary, data_dir, filling.USERS)
        api = filling.Client(server.port, key)
        filling.fill(api, jwts, fill, devices)
        ids = filling.notify(api)
        log(f"[{store}] registryd (pid {server.pid}) on {server.url} filled: {len(devices)} devices, "
            f"{len(fill.tokens)} tokens, {len(ids)} notifications ({time.monotonic() - started:.1f} s)")
        check_headers(check, server.url)
        browser = Browser(server.url)
        check_key(check, browser, registryd.operator_key(data_dir), key, jwts["alice"])
        check_pages(check, browser, api, ids, shots, jwts["judy"] if refresh else None)
        check_leaks(check, browser, server.url, fill.tokens)
        api.close()
    except Exception as error:  # a page that never rendered, a refused fill: reported like a failed check
        check.problems.append(f"[{store}] {type(error).__name__}: {error}")
    finally:
        if browser:
            browser.close()
        if server:
            status, in_time = server.terminate()
            check.true(f"registryd stopped cleanly ({registryd.describe_status(status)})", status == 0 and in_time)
        if fake:
            fake.stop()
        if pg_dir:
            pgserver.stop(pg_dir, quiet=True)
    log(f"[{store}] {check.passed} checks passed, {len(check.problems)} failed in {time.monotonic() - started:.1f} s")
    return check


def main():
    parser = argparse.ArgumentParser(
        prog="tools/console-test",
        description="Builds registryd, starts it on each store (LMDB, and PostgreSQL through tools/pg-server) with "
                    "delivery pointed at tools/fake-apns, fills it through the API (users, devices of two apps, "
                    "push-to-start and activity tokens, removals, notifications), and opens every console page in "
                    "headless Chromium: each page's figures are read from the page and compared with the API's "
                    "answers; a wrong key shows a message; every request stays on registryd's origin; no answer "
                    "and no page holds a token; the CSP is served and nothing violates it.")
    parser.add_argument("--config", choices=("debug", "release"), default="debug",
                        help="SwiftPM build configuration (default debug)")
    parser.add_argument("--store", choices=("lmdb", "postgres", "both"), default="both", help="default both")
    parser.add_argument("--screenshots", metavar="DIR",
                        help="save a PNG of each page there (the first store's run), e.g. docs/images")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory even when all is well")
    args = parser.parse_args()

    started = time.monotonic()
    binary = registryd.registryd_binary(args.config, log=log)
    base = os.path.join(REPO, ".build", "console-test")
    os.makedirs(base, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="run-", dir=base)
    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)
    stores = ("lmdb", "postgres") if args.store == "both" else (args.store,)
    checks = []
    try:
        for i, store in enumerate(stores):
            checks.append(run_store(store, binary, scratch, args.screenshots if i == 0 else None, refresh=i == 0))
    finally:
        registryd.kill_all()
    problems = [p for c in checks for p in c.problems]
    passed = sum(c.passed for c in checks)
    total = time.monotonic() - started
    if problems:
        for problem in problems:
            log(f"problem: {problem}")
        log(f"FAILED in {total:.0f} s: {len(problems)} of {passed + len(problems)} checks; kept {scratch}")
        sys.exit(1)
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    log(f"OK in {total:.0f} s: {passed} checks passed on {', '.join(stores)}")


if __name__ == "__main__":
    main()
