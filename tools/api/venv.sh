# Sourced by tools/api-validate, tools/api-fuzz and tools/console-test: the Python virtual
# environment they share, in ${XDG_CACHE_HOME:-~/.cache}/registryd/venv,
# created on first use (python3 -m venv: Debian's python3-venv, which
# tools/install-deps --test installs). Versions are pinned so that a run
# means the same on every machine.
API_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/registryd/venv"

# api_venv NAME==VERSION...: creates the venv when it is missing or has no
# working pip, then pip-installs only the packages not already at that version.
api_venv() {
  if ! "$API_VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    echo "creating the Python virtual environment $API_VENV" >&2
    rm -rf "$API_VENV"
    mkdir -p "$(dirname "$API_VENV")"
    if ! python3 -m venv "$API_VENV"; then
      rm -rf "$API_VENV"
      echo "python3 -m venv failed (on Debian: tools/install-deps --test installs python3-venv)" >&2
      return 1
    fi
  fi
  local missing
  missing=$("$API_VENV/bin/python" - "$@" <<'PY'
import sys
from importlib import metadata
for requirement in sys.argv[1:]:
    name, _, version = requirement.partition("==")
    try:
        if metadata.version(name) == version:
            continue
    except metadata.PackageNotFoundError:
        pass
    print(requirement)
PY
)
  if [ -n "$missing" ]; then
    echo "pip install:" $missing >&2
    # shellcheck disable=SC2086  # one requirement per word
    "$API_VENV/bin/python" -m pip install --quiet --disable-pip-version-check $missing >&2
  fi
}
