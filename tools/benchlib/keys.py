"""The keys of a bench run, in WORK/keys: an HS256 secret, an internal API key, an RSA-2048 and a
P-256 key (openssl), and the device JWTs `registry-bench mint-jwts` signs with them (one file per
algorithm, line s + 1 for user s * stride) plus the JWKS the server is given.
"""

import glob
import os
import subprocess

import registryd


def make_keys(run):
    """Writes the secrets and keys (mode 600) and sets run.api_key."""
    keys = run.keys
    os.makedirs(keys)
    for name in ("hs256.secret", "internal.key"):
        with open(os.path.join(keys, name), "w") as f:
            subprocess.run(["openssl", "rand", "-hex", "32"], stdout=f, check=True)
    for algorithm, option, name in (("RSA", "rsa_keygen_bits:2048", "rsa.der"),
                                    ("EC", "ec_paramgen_curve:P-256", "ec.der")):
        subprocess.run(["openssl", "genpkey", "-algorithm", algorithm, "-pkeyopt", option, "-outform", "DER",
                        "-out", os.path.join(keys, name)], stderr=subprocess.DEVNULL, check=True)
    for name in os.listdir(keys):
        os.chmod(os.path.join(keys, name), 0o600)
    run.api_key = registryd.read_secret(os.path.join(keys, "internal.key"))


def mint(run, users, stride, all_algorithms=False):
    """JWTs of users 0, stride, 2 * stride, ... (`users` of them): HS256, and with `all_algorithms`
    also RS256 and ES256 (some seconds of RSA signing). The JWKS is always written."""
    for old in glob.glob(os.path.join(run.keys, "*.jwt")):
        os.remove(old)
    keys = run.keys
    rsa = ["--rsa-key", os.path.join(keys, "rsa.der")] if all_algorithms else []
    subprocess.run([run.registry_bench, "mint-jwts", "--users", str(users), "--stride", str(stride), "--ttl", "86400",
                    "--out-dir", keys, "--hs256-secret", os.path.join(keys, "hs256.secret"), *rsa,
                    "--ec-key", os.path.join(keys, "ec.der")], check=True)
    if not all_algorithms and os.path.exists(os.path.join(keys, "es256.jwt")):
        os.remove(os.path.join(keys, "es256.jwt"))
    run.sampled_users, run.user_stride = users, stride


def key_file(run, name):
    return os.path.join(run.keys, name)


def serve_flags(run):
    """The key flags every bench server gets."""
    return ["--jwt-hs256-secret-file", key_file(run, "hs256.secret"), "--jwt-jwks-file", key_file(run, "jwks.json"),
            "--internal-api-key-file", key_file(run, "internal.key")]
