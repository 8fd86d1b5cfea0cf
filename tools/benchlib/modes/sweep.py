"""--sweep: 1,000,000 devices (--devices N: N) of which every second one was last seen 91-121 days ago (older than
the 90 d retention); a baseline reregister run on the live half, then POST /internal/v1/sweep while
wrk re-registers live devices: the sweep's duration and what it removed, and the upserts' p50/p99
during it beside the baseline.
"""

import time

from .. import api, keys, report, servers
from ..dataset import load
from ..run import log
from ..wrk import WrkRun, run_wrk

EXPIRED = {"BENCH_EXPIRE_EVERY": "2"}


def bench(run):
    size = int(run.options.devices or 1000000)
    data = run.path("sweep-data")
    loaded = load(run, data, size, ["--expire-every", "2", "--expired-age", str(90 * 86400),
                                    "--big-activity-tokens", str(min(10000, size))])
    # JWTs of every tenth user (5 devices each), as for the default 1,000,000: 20,000.
    keys.mint(run, max(1, size // 50), 10)
    server = servers.start_server(run, data)
    before = api.required_get(run, server, "/internal/v1/stats")
    hs256 = keys.key_file(run, "hs256.jwt")
    run_wrk(run, "sweep", "healthz", "get", server.url, "", [server.pid], {"BENCH_PATH": "/healthz"})
    run_wrk(run, "sweep", "reregister (no sweep)", "reregister", server.url, hs256, [server.pid], EXPIRED)
    during = WrkRun(run, "sweep", "reregister (during sweep)", "reregister", server.url, hs256, [server.pid],
                    EXPIRED, background=True)
    time.sleep(1)
    log("sweep: POST /internal/v1/sweep")
    answer, seconds = api.sweep(run, server)
    log(f"sweep answered after {seconds} s: {answer}")
    time.sleep(1)
    during.interrupt()
    during.finish()
    after = api.required_get(run, server, "/internal/v1/stats")
    metrics = api.internal_get(run, server, "/metrics")
    servers.stop_server(run, server)
    report.finish(run, body(run, loaded, answer, seconds, before, after, metrics))


def body(run, loaded, answer, seconds, before, after, metrics):
    text = (f"Data set: {loaded['devices']} devices over {loaded['users']} users, every second one\n"
            f"last seen 91-121 days ago (retention 90 d), loaded in {loaded['seconds']} s.\n\n"
            "| sweep | seconds | removed |\n"
            "| --- | ---: | --- |\n"
            f"| POST /internal/v1/sweep, wrk re-registering live devices meanwhile | {seconds} | `{answer}` |\n\n"
            "The \"during sweep\" row covers 1 s before the sweep started to 1 s after it answered.\n\n"
            + report.table(run.rows, "sweep") + "\n"
            f"- stats before: `{before}`\n"
            f"- stats after: `{after}`\n")
    total = api.metric_value(metrics, "registry_sweep_step_duration_seconds_sum")
    count = api.metric_value(metrics, "registry_sweep_step_duration_seconds_count")
    if count and count > 0:
        text += (f"- sweep steps (one writer command each, at most 16 expiry entries or 2 ms of deleting): "
                 f"{int(count)}, mean {1000 * (total or 0) / count:.1f} ms\n")
    return text

