"""Google service-account files for tools/fake-fcm.

make(DIR, project_id, client_email) writes DIR/service-account.json, the JSON
file Google's console hands out for a service account (an RSA 2048 key as
PKCS#8 PEM, its id, the account's email and the URLs), mode 0600, and
DIR/service-account.pub.pem (the public half, SubjectPublicKeyInfo PEM).

load(FILE) reads such a file back into an Account: what the token endpoint
needs to verify an assertion (kid, iss, public key) and what messages:send
needs to check the project in the path.
"""
import json
import os
import secrets
import urllib.parse

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

DEFAULT_PROJECT = "registry-test"
DEFAULT_EMAIL = "registryd@registry-test.iam.gserviceaccount.com"
FILE_NAME = "service-account.json"
PUBLIC_NAME = "service-account.pub.pem"


class Account:
    """One service account: the project its tokens may send to, and how its assertions verify."""

    def __init__(self, path, project_id, key_id, client_email, public_key):
        self.path = path
        self.project_id = project_id
        self.key_id = key_id
        self.client_email = client_email
        self.public_key = public_key


def _write(path, data, mode):
    """Atomically (a temporary file, then a rename), created with mode."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)  # whatever the umask did
    os.replace(tmp, path)


def make(directory, project_id=DEFAULT_PROJECT, client_email=DEFAULT_EMAIL):
    """Writes service-account.json (0600) and service-account.pub.pem in directory; returns their paths."""
    os.makedirs(directory, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode("ascii")
    doc = {
        "type": "service_account",
        "project_id": project_id,
        "private_key_id": secrets.token_hex(20),
        "private_key": pem,
        "client_email": client_email,
        "client_id": str(10 ** 20 + secrets.randbelow(9 * 10 ** 20)),  # 21 digits, as Google's are
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/"
                                + urllib.parse.quote(client_email, safe=""),
        "universe_domain": "googleapis.com",
    }
    path = os.path.join(directory, FILE_NAME)
    public = os.path.join(directory, PUBLIC_NAME)
    _write(path, (json.dumps(doc, indent=2) + "\n").encode(), 0o600)
    _write(public, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)
    return path, public


def load(path):
    """The Account of a service-account JSON file; ValueError naming the file when it is not one."""
    with open(path, "rb") as f:
        try:
            doc = json.loads(f.read())
        except ValueError as e:
            raise ValueError("%s: not JSON: %s" % (path, e))
    if not isinstance(doc, dict) or doc.get("type") != "service_account":
        raise ValueError('%s: not a service-account file (no "type": "service_account")' % path)
    for member in ("project_id", "private_key_id", "private_key", "client_email"):
        if not isinstance(doc.get(member), str) or not doc[member]:
            raise ValueError("%s: %s missing" % (path, member))
    try:
        key = serialization.load_pem_private_key(doc["private_key"].encode(), password=None)
    except (ValueError, TypeError) as e:
        raise ValueError("%s: private_key is not an unencrypted PEM key: %s" % (path, e))
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("%s: private_key is not an RSA key" % path)
    return Account(path, doc["project_id"], doc["private_key_id"], doc["client_email"], key.public_key())
