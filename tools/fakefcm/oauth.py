"""Google's OAuth 2.0 token endpoint for tools/fake-fcm: the JWT-bearer grant (RFC 7523).

A client posts the form
    grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>
and the JWT (base64url header.claims.signature) must have:
    header  alg RS256, kid = the private_key_id of a --service-account
    claims  iss = that account's client_email
            scope = https://www.googleapis.com/auth/firebase.messaging (among
                    others, space-separated)
            aud = the token URL the client used: https://127.0.0.1:PORT/token
                  or https://localhost:PORT/token
            iat within 5 minutes of now (either way)
            exp after now, and at most iat + 3600
    signature RSASSA-PKCS1-v1_5 SHA-256 with the account's key.
A grant that passes gets a new access token; one that does not, 400
invalid_grant with the reason (a wrong grant_type: 400 unsupported_grant_type).

AccessTokens remembers what was issued (bearer -> account, expiry) until it
expires or a script's {"action": "revoke_bearer"} revokes it.
"""
import base64
import json
import secrets
import time
import urllib.parse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
CLOCK_SKEW = 300
MAX_LIFETIME = 3600


class GrantError(Exception):
    """A refused grant: the OAuth error code and its description."""

    def __init__(self, error, description):
        super().__init__(description)
        self.error = error
        self.description = description


def _b64url(text):
    data = text.encode("ascii")
    return base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_form(body):
    """The (grant_type, assertion) of an application/x-www-form-urlencoded body."""
    try:
        form = urllib.parse.parse_qs(body.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        form = {}
    return form.get("grant_type", [None])[0], form.get("assertion", [None])[0]


class Grant:
    """What one assertion said, as far as it could be read (the log shows kid and iss even when refused)."""

    def __init__(self):
        self.kid = None
        self.iss = None
        self.aud = None
        self.account = None


def verify(body, accounts_by_kid, audiences, now=None):
    """The Grant of a token request's form body; raises GrantError when it is refused.

    The Grant comes back through the exception too (GrantError.grant) for the log.
    """
    grant = Grant()
    try:
        _verify(grant, body, accounts_by_kid, audiences, time.time() if now is None else now)
    except GrantError as e:
        e.grant = grant
        raise
    return grant


def _verify(grant, body, accounts_by_kid, audiences, now):
    grant_type, assertion = parse_form(body)
    if grant_type != GRANT_TYPE:
        raise GrantError("unsupported_grant_type", "Invalid grant_type: %s" % (grant_type or ""))
    if not assertion:
        raise GrantError("invalid_request", "Missing required parameter: assertion")
    parts = assertion.split(".")
    if len(parts) != 3:
        raise GrantError("invalid_grant", "Invalid JWT: not three base64url parts")
    try:
        header = json.loads(_b64url(parts[0]))
        claims = json.loads(_b64url(parts[1]))
        signature = _b64url(parts[2])
    except (ValueError, UnicodeError):
        raise GrantError("invalid_grant", "Invalid JWT: a part is not base64url JSON")
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise GrantError("invalid_grant", "Invalid JWT: header and claims must be JSON objects")
    grant.kid, grant.iss, grant.aud = header.get("kid"), claims.get("iss"), claims.get("aud")

    if header.get("alg") != "RS256":
        raise GrantError("invalid_grant", "Invalid JWT: alg must be RS256")
    account = accounts_by_kid.get(grant.kid) if isinstance(grant.kid, str) else None
    if account is None:
        raise GrantError("invalid_grant", "Invalid JWT Signature.")  # Google's answer to an unknown kid
    try:
        account.public_key.verify(signature, (parts[0] + "." + parts[1]).encode("ascii"),
                                  padding.PKCS1v15(), hashes.SHA256())
    except (InvalidSignature, ValueError):
        raise GrantError("invalid_grant", "Invalid JWT Signature.")
    if grant.iss != account.client_email:
        raise GrantError("invalid_grant", "Invalid JWT: iss is not the client_email of key %s" % grant.kid)
    scope = claims.get("scope")
    if not isinstance(scope, str) or SCOPE not in scope.split():
        raise GrantError("invalid_grant", "Invalid JWT: scope must include %s" % SCOPE)
    if grant.aud not in audiences:
        raise GrantError("invalid_grant", "Invalid JWT: Failed audience check. The right audience is %s"
                         % audiences[0])
    iat, exp = claims.get("iat"), claims.get("exp")
    if not _number(iat) or not _number(exp):
        raise GrantError("invalid_grant", "Invalid JWT: iat and exp must be numbers")
    if abs(iat - now) > CLOCK_SKEW or exp <= now or exp > iat + MAX_LIFETIME:
        raise GrantError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                                          "reasonable timeframe. Check your iat and exp values in the JWT claim.")
    grant.account = account


class AccessTokens:
    """The access tokens issued: bearer -> (account, expiry in epoch seconds)."""

    PRUNE_EVERY = 1024

    def __init__(self):
        self.live = {}
        self.issued = 0

    def issue(self, account, lifetime):
        bearer = secrets.token_urlsafe(48)
        self.live[bearer] = (account, time.time() + lifetime)
        self.issued += 1
        if self.issued % self.PRUNE_EVERY == 0:
            now = time.time()
            self.live = {b: v for b, v in self.live.items() if v[1] > now}
        return bearer

    def account(self, bearer):
        """The account a live bearer was issued to, or None (never issued, expired or revoked)."""
        entry = self.live.get(bearer)
        if entry is None or entry[1] <= time.time():
            return None
        return entry[0]

    def revoke(self, bearer):
        self.live.pop(bearer, None)
