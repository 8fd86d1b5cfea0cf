"""--scale N: the data set at 100,000 and at N devices (5 per user; JWTs for 20,000 users sampled
evenly), each in its own directory in turn: load time and rate, bytes on disk, time from starting
registryd to its first successful /healthz, then healthz, reregister-hs256, lookup and batch-lookup.
Needs about 1.3 KB of disk per device (checked first).
"""

import shutil

from .. import keys, report, servers, workloads
from ..dataset import bytes_on_disk, load
from ..run import BenchError

WORKLOADS = ["healthz", "reregister-hs256", "lookup", "batch-lookup"]


def bench(run):
    scale = int(run.options.scale)
    check_disk(run, scale)
    sizes = []
    stride = 1
    for size in (100000, scale):
        stride = measure_size(run, size, sizes)
    body = ("## Size\n\n"
            "| devices | users | activity tokens | load s | load devices/s | bytes on disk | bytes/device | "
            "start to first /healthz ms |\n"
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
            + "".join(size_row(*s) for s in sizes)
            + "\n## Rates at each size (ratios against /healthz at the same size)\n\n" + report.table(run.rows, "scale"))
    run.notes.append(f"""- Writes and reads address 20,000 users sampled evenly over the whole store (every {stride}-th user at
  the largest size), so they land on pages all over the B-trees, not on a hot corner.
- Load: `registry-bench load` through `LMDBRegistryStore.importRecords` (the import path), chunks of
  500 devices, 128 in flight, so one commit (one fsync) carries up to 64,000 devices.
""")
    report.finish(run, body)


def check_disk(run, scale):
    needed = scale * 2000 // 1024 // 1024
    free = shutil.disk_usage(run.repo).free // (1024 * 1024)
    if free < needed:
        raise BenchError(f"--scale {scale} needs about {needed} MiB of disk, {free} MiB free")


def measure_size(run, size, sizes):
    """Loads, serves and measures one size, then removes its data; returns the JWTs' user stride."""
    data = run.path(f"d{size}")
    loaded = load(run, data, size, ["--big-activity-tokens", "10000", "--parallel", "128"])
    users = size // 5
    sample = min(users, 20000)
    stride = users // sample
    keys.mint(run, sample, stride)
    size_bytes = bytes_on_disk(data + "/lmdb")
    server = servers.start_server(run, data)
    sizes.append((size, loaded["seconds"], loaded["devicesPerSecond"], size_bytes, server.start_ms,
                  loaded["activityTokens"]))
    for name in WORKLOADS:
        workloads.run_named(run, "scale", f"{name}@{label(size)}", name, server)
    servers.stop_server(run, server)
    shutil.rmtree(data)
    return stride


def label(size):
    """100000 -> 100k, 1000000 -> 1M"""
    return f"{size / 1000000:g}M" if size >= 1000000 else f"{size / 1000:g}k"


def size_row(size, seconds, per_second, size_bytes, start_ms, activity_tokens):
    return (f"| {size:.0f} | {size / 5:.0f} | {float(activity_tokens):.0f} | {float(seconds):.1f} | {float(per_second):.0f} | "
            f"{float(size_bytes):.0f} | {float(size_bytes) / size:.0f} | {start_ms:.1f} |\n")
