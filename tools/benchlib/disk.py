"""The disk's own bound on durable writes, measured in the same run as the workloads: how many
fdatasync calls a second this disk completes on a file beside the data directory, one 4 KiB page
rewritten before each (what a small LMDB commit asks of it).

An LMDB commit syncs twice (its data pages, then its meta page), so the disk allows about half as
many commits a second; a group commit of B writes then bounds durable writes at B x that.
"""

import os
import time


def fdatasync_rate(directory, seconds=3.0):
    """fdatasync calls per second on a scratch file in `directory` (removed afterwards)."""
    path = os.path.join(directory, ".bench-fdatasync-probe")
    page = os.urandom(4096)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for index in range(64):
            os.pwrite(fd, page, index * 4096)
        os.fsync(fd)
        calls = 0
        started = time.monotonic()
        deadline = started + seconds
        while time.monotonic() < deadline:
            os.pwrite(fd, page, (calls % 64) * 4096)
            os.fdatasync(fd)
            calls += 1
        return calls / (time.monotonic() - started)
    finally:
        os.close(fd)
        os.unlink(path)


def bound_note(sync_rate, workload, rps, batch):
    """The report's line: a workload's rate beside the disk's bound at the batch size it reached."""
    commits = sync_rate / 2
    bound = commits * batch
    fraction = rps / bound if bound > 0 else 0
    return (f"- disk bound: fdatasync {sync_rate:,.0f}/s on this disk (a 4 KiB page rewritten before each, beside "
            f"the data directory), so about {commits:,.0f} LMDB commits/s (two syncs each); {workload} reached "
            f"{rps:,.0f} req/s at a mean group commit of {batch:.1f} writes: {fraction:.2f} of the "
            f"{bound:,.0f} writes/s that batch size allows\n")
