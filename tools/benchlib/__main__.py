"""`python3 -m benchlib ARGS`: what tools/bench runs."""

import sys

from .main import main

sys.exit(main(sys.argv[1:]))
