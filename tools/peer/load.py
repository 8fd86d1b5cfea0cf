"""Prepares the peer's database for `tools/bench --compare-peer`: Django's migrations, then N APNs devices
through the ORM (bulk_create, 5,000 rows a transaction), device k holding the push token registry.lua
gives registryd's device k ("a1", zeros, k in 16 hex digits). The bench then runs VACUUM (ANALYZE)
and CHECKPOINT, as it does after loading registryd's data set.

  PEER_DATABASE_URL=postgresql://... PEER_VENV/bin/python tools/peer/load.py N

Prints one line: "PEER devices=N seconds=S".
"""

import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "peer.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from push_notifications.models import APNSDevice  # noqa: E402

BATCH = 5000


def token(k):
    """registry.lua's hex_token("a1", k)."""
    return "a1" + "0" * 46 + f"{k >> 32:08x}{k & 0xFFFFFFFF:08x}"


def device(k):
    """What registry.lua's peer workload sends for device k: the same fields the device was created with."""
    return APNSDevice(registration_id=token(k), device_id=uuid.UUID(int=k), name=f"d{k % 5}",
                      application_id="bench", active=True)


def main():
    count = int(sys.argv[1])
    call_command("migrate", verbosity=0)
    started = time.monotonic()
    for first in range(0, count, BATCH):
        with transaction.atomic():
            APNSDevice.objects.bulk_create([device(k) for k in range(first, min(count, first + BATCH))])
    print(f"PEER devices={APNSDevice.objects.count()} seconds={time.monotonic() - started:.1f}", flush=True)


if __name__ == "__main__":
    main()
