"""What tools/bench needs before a run: the Debian packages (tools/install-deps; PostgreSQL 15 for a
--stores run; wrk, nginx and openssl), and registryd and registry-bench built in release mode.
"""

import os
import shutil
import subprocess

import registryd

from .run import BenchError, log

PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
POLICY = "/usr/sbin/policy-rc.d"


def install(repo, postgres, peer=False):
    """Installs what is missing; `postgres`: the run needs PostgreSQL 15 (tools/install-deps --test); `peer`:
    django-push-notifications and gunicorn in their virtual environment (tools/install-deps --peer)."""
    subprocess.run([os.path.join(repo, "tools", "install-deps")], check=True)
    if postgres and not os.access(os.path.join(PG_BIN, "pg_ctl"), os.X_OK):
        log("installing PostgreSQL 15 (tools/install-deps --test)")
        subprocess.run([os.path.join(repo, "tools", "install-deps"), "--test"], check=True)
    if peer:
        subprocess.run([os.path.join(repo, "tools", "install-deps"), "--peer"], check=True)
    need = missing_packages()
    if need:
        install_packages(need)


def missing_packages():
    need = []
    if shutil.which("wrk") is None:
        need.append("wrk")
    if not os.access("/usr/sbin/nginx", os.X_OK) and shutil.which("nginx") is None:
        need.append("nginx-light")
    if shutil.which("openssl") is None:
        need.append("openssl")
    return need


def install_packages(need):
    log(f"installing {' '.join(need)}")
    # nginx's install script would start the system service on port 80: forbid it.
    policy_made = False
    if not os.path.exists(POLICY):
        with open(POLICY, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(POLICY, 0o755)
        policy_made = True
    try:
        installed = subprocess.run(["apt-get", "update", "-qq"]).returncode == 0 and subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *need],
            env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), stdout=2).returncode == 0
    finally:
        if policy_made:
            os.remove(POLICY)
    if not installed:
        raise BenchError(f"could not install {' '.join(need)}")


def nginx_binary():
    return shutil.which("nginx") or "/usr/sbin/nginx"


def build_binaries():
    """(registryd, registry-bench): this tree's release builds; SwiftPM's output goes to stderr."""
    log("building registryd and registry-bench (release)")
    bin_dir = registryd.build("release", ("registryd", "registry-bench"), echo=True)
    return os.path.join(bin_dir, "registryd"), os.path.join(bin_dir, "registry-bench")
