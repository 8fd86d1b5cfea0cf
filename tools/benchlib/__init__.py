"""tools/bench, the HTTP benchmark of registryd, as a Python 3 package (standard library only).

The launcher tools/bench runs `python3 -m benchlib` with tools/ on the path. The modules:

  main        the command: options, install and build, one mode, cleanup; exit status
  options     the command line and its checks; help.txt is what --help prints
  run         one run's work area, log lines, rows and notes, and the cleanup at exit
  build       installs what is missing, builds registryd and registry-bench (release)
  keys        the HS256 secret, internal key, RSA and EC keys, and the device JWTs
  dataset     `registry-bench load` into a data directory, and the loader's summary line
  servers     registryd (through tools/lib/registryd.py) and a private nginx
  api         the requests the bench makes itself: /metrics, stats, the sweep
  wrk         one wrk run with tools/bench-scripts/registry.lua, the server's memory, one Row
  procfs      what it reads from /proc: children, VmHWM and RssAnon, CPU ticks
  workloads   the table's workloads and how each is run
  report      the Markdown report: header, the rates table, notes, figures (median, commas)
  postgres    the private PostgreSQL of --stores: start, load, CPU ticks, counters
  peer        --compare-peer's django-push-notifications (tools/peer/) under gunicorn: its database, its servers
  modes/      one module per mode: default, scale, sweep, against, stores, relay (relay_fcm: its FCM and
              mixed fan-outs), accept
"""

import os
import sys

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, os.path.join(TOOLS, "lib"))  # registryd.py, pgserver.py: shared by the tools
