"""Provider-token (JWT) checks for tools/fake-apns, as APNs makes them.

A token is `authorization: bearer <header>.<claims>.<signature>` (base64url,
no padding). The header must say alg ES256 and kid = --key-id, the claims
iss = --team-id and an integer iat, and the signature (raw R||S, 64 bytes, as
JWS has it; turned into DER for python3-cryptography) must verify with the
--auth-key public key. Whatever is not configured (no --auth-key, no
--team-id, no --key-id) is not checked.

Each distinct token string is parsed and verified once: the outcome (its iat,
or "InvalidProviderToken") is cached by the string, so a provider reusing one
token for an hour costs one ECDSA verification. Only the age checks (iat older
than 3600 s: ExpiredProviderToken; more than 60 s ahead: InvalidProviderToken)
run on every request.
"""
import base64
import json
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

MAX_AGE = 3600
MAX_AHEAD = 60
CACHE_LIMIT = 100_000
INVALID = "InvalidProviderToken"


def b64url(data):
    if isinstance(data, str):
        data = data.encode("ascii")
    return base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))


def load_public_key(path):
    with open(path, "rb") as f:
        data = f.read()
    if b"PRIVATE KEY" in data:  # a .p8 works too: its public half verifies
        key = serialization.load_pem_private_key(data, password=None).public_key()
    else:
        key = serialization.load_pem_public_key(data)
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise ValueError("%s: not a P-256 key" % path)
    return key


class Auth:
    def __init__(self, public_key=None, team_id=None, key_id=None):
        self.public_key = public_key
        self.team_id = team_id
        self.key_id = key_id
        self.cache = {}

    def check(self, authorization):
        """authorization: the header's bytes or None. Returns (reason or None, iat or None)."""
        if authorization is None:
            return "MissingProviderToken", None
        outcome = self.cache.get(authorization)
        if outcome is None:
            outcome = self._verify(authorization)
            if len(self.cache) >= CACHE_LIMIT:
                self.cache.clear()
            self.cache[authorization] = outcome
        if outcome.__class__ is str:
            return outcome, None
        age = time.time() - outcome
        if age > MAX_AGE:
            return "ExpiredProviderToken", outcome
        if age < -MAX_AHEAD:
            return INVALID, outcome
        return None, outcome

    def _verify(self, authorization):
        """The token's iat when it is well formed and verifies, else INVALID."""
        try:
            scheme, _, token = authorization.strip().partition(b" ")
            if scheme.lower() != b"bearer":
                return INVALID
            parts = token.strip().split(b".")
            if len(parts) != 3:
                return INVALID
            header = json.loads(b64url(parts[0]))
            claims = json.loads(b64url(parts[1]))
            signature = b64url(parts[2])
            if not isinstance(header, dict) or not isinstance(claims, dict):
                return INVALID
            if header.get("alg") != "ES256":
                return INVALID
            if self.key_id is not None and header.get("kid") != self.key_id:
                return INVALID
            if self.team_id is not None and claims.get("iss") != self.team_id:
                return INVALID
            iat = claims.get("iat")
            if iat.__class__ is not int:
                return INVALID
            if self.public_key is not None:
                if len(signature) != 64:
                    return INVALID
                der = encode_dss_signature(int.from_bytes(signature[:32], "big"),
                                           int.from_bytes(signature[32:], "big"))
                self.public_key.verify(der, parts[0] + b"." + parts[1], ec.ECDSA(hashes.SHA256()))
            return iat
        except (ValueError, TypeError, UnicodeDecodeError, InvalidSignature):
            return INVALID
