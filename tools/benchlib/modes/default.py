"""The default mode: one data set (--devices, default 100,000 over 20,000 users), one registryd on
it, and every workload of the table (or --only's) for --duration each; the report has the data
set, the table, the group-commit figures and the store's stats after the run.
"""

from .. import disk, keys, report, servers, workloads
from ..dataset import bytes_on_disk, load, thousands
from ..api import internal_get, metric_value
from ..wrk import run_wrk


def bench(run):
    options = run.options
    size = int(options.devices or 100000)
    data = run.path("d100k" if size == 100000 else f"d{size}")
    run.big_tokens = min(size, 10000)
    loaded = load(run, data, size, ["--big-activity-tokens", str(run.big_tokens)])
    users = size // 5
    sample = min(users, 20000)
    keys.mint(run, sample, users // sample, all_algorithms=True)
    server = servers.start_server(run, data)
    bounded = run_workloads(run, server)
    metrics = internal_get(run, server, "/metrics")
    stats = internal_get(run, server, "/internal/v1/stats")
    servers.stop_server(run, server)
    body = data_set_text(run, loaded, data, server) + "\n" + report.table(run.rows, "main")
    run.notes.append(group_commit_note(metrics))
    if bounded:
        run.notes.append(disk.bound_note(disk.fdatasync_rate(data), *bounded))
    run.notes.append(f"- store after the run: {stats}\n")
    run.notes.append(workload_notes(run, sample))
    report.finish(run, body)


# The launch upsert whose rate is set beside the disk's bound (disk.py).
BOUNDED = "reregister-hs256"


def run_workloads(run, server):
    """Every selected workload; returns (BOUNDED, its req/s, its mean group commit) when it ran."""
    nginx_url = servers.start_nginx(run) if run.options.selected("nginx") else None
    bounded = None
    for name in workloads.ORDER:
        if not run.options.selected(name):
            continue
        if name == "nginx":
            run_wrk(run, "main", "nginx", "get", nginx_url, "", servers.nginx_workers(run), {"BENCH_PATH": "/"})
        elif name == BOUNDED:
            before = batch_totals(internal_get(run, server, "/metrics"))
            row = workloads.run_named(run, "main", name, name, server)
            after = batch_totals(internal_get(run, server, "/metrics"))
            batches = after[1] - before[1]
            try:
                rps = float(row.rps)
            except ValueError:
                rps = 0.0
            if batches > 0 and rps > 0:
                bounded = (name, rps, (after[0] - before[0]) / batches)
        else:
            workloads.run_named(run, "main", name, name, server)
    return bounded


def batch_totals(metrics):
    """(writes, batches) the group commit has made so far."""
    return (metric_value(metrics, "registry_commit_batch_commands_sum") or 0,
            metric_value(metrics, "registry_commit_batch_commands_count") or 0)


def data_set_text(run, loaded, data, server):
    return (f"Data set: {loaded['devices']} devices over {loaded['users']} users,\n"
            f"{loaded['pushToStartTokens']} push-to-start tokens, {loaded['activityTokens']} activity tokens\n"
            f"(one per device, 100 devices per activity, and {thousands(run.big_tokens)} in \"big\"); "
            f"loaded through the store in\n"
            f"{loaded['seconds']} s ({loaded['devicesPerSecond']} devices/s); {bytes_on_disk(data + '/lmdb')} "
            f"bytes on disk;\n"
            f"first /healthz {server.start_ms:.1f} ms after registryd started.\n")


def group_commit_note(metrics):
    total = metric_value(metrics, "registry_commit_batch_commands_sum")
    count = metric_value(metrics, "registry_commit_batch_commands_count")
    if not count or count <= 0:
        return ""
    return (f"- group commit over the whole run: {int(count)} batches, mean {(total or 0) / count:.1f} writes per batch "
            f"(fsync each)\n")


def workload_notes(run, sample):
    pages = (run.big_tokens + 499) // 500
    return f"""- upsert-mix: 90% re-registration (same token, new sequence), 8% a new deviceId with a new token for an
  existing user, 2% a new token for an existing device; reregister-*: 100% re-registration, by JWT algorithm
  (the server caches 10,000 verified tokens; {thousands(sample)} users cycle through it).
- fanout: each request is one page of 500 tokens; the notes give whole walks ({pages} pages) per second.
- signout: each request deletes a different existing device with its tokens and leaves a tombstone.
"""
