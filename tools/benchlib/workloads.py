"""The workloads of the bench table, in the order they run (reads first, sign-out last: it deletes),
and how each one is run against a registryd: registry.lua's workload, the JWT file (none for the
internal API, which takes the internal key) and its environment.
"""

from . import keys
from .wrk import run_wrk

ORDER = ["healthz", "nginx", "lookup", "batch-lookup", "fanout", "upsert-mix", "activity", "reregister-hs256",
         "reregister-rs256", "reregister-es256", "signout"]

# name: (registry.lua workload, JWT file in WORK/keys or None, extra environment)
REGISTRYD = {
    "healthz": ("get", None, {"BENCH_PATH": "/healthz"}),
    "lookup": ("lookup", None, {}),
    "batch-lookup": ("batch-lookup", None, {"BENCH_BATCH": "100"}),
    "fanout": ("fanout", None, {"BENCH_ACTIVITY": "big", "BENCH_PAGE_LIMIT": "500"}),
    "upsert-mix": ("upsert-mix", "hs256.jwt", {}),
    "activity": ("activity", "hs256.jwt", {}),
    "reregister-hs256": ("reregister", "hs256.jwt", {}),
    "reregister-rs256": ("reregister", "rs256.jwt", {}),
    "reregister-es256": ("reregister", "es256.jwt", {}),
    "signout": ("signout", "hs256.jwt", {}),
}


def run_named(run, section, label, name, server, env=None):
    """The registryd workload NAME (any of the table's but nginx) against `server`, its row labelled LABEL."""
    workload, jwts, extra = REGISTRYD[name]
    jwt_file = keys.key_file(run, jwts) if jwts else ""
    return run_wrk(run, section, label, workload, server.url, jwt_file, [server.pid], {**extra, **(env or {})})


def needs_all_algorithms(options):
    """Whether the chosen workloads need RS256 and ES256 JWTs (some seconds of RSA signing)."""
    chosen = options.only.split(",")
    return "reregister-rs256" in chosen or "reregister-es256" in chosen
