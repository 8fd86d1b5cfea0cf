"""What tools/fake-fcm answers, whatever the protocol: one Request in, one Answer out.

Routes (the query string is ignored):

    POST /token                                  Google's OAuth 2.0 token endpoint (oauth.py):
                                                 the script's next token_endpoint answer when it
                                                 has one, else the assertion checked and an
                                                 access token issued
    POST /v1/projects/<project>/messages:send    FCM's send, checked in this order:
        no authorization                         401 UNAUTHENTICATED "missing credential"
        not Bearer + a live access token          401 UNAUTHENTICATED "invalid credentials"
          of this fake (never issued, expired, or revoked; neither 401 has an FcmError)
        <project> not the project of the token's service account
                                                 403 PERMISSION_DENIED (no FcmError)
        body over 1 MiB                          413 INVALID_ARGUMENT
        body not JSON, not {"message": {...}} (validate_only aside), message.topic or
        message.condition set, no message.token, message.data not string values,
        message.android.ttl not a Duration ("3599s")
                                                 400 INVALID_ARGUMENT (FcmError INVALID_ARGUMENT and
                                                 a field violation, never on message.token)
        message.token empty or not a string      400 the "not a valid FCM registration token" error
      then the script's next answer for message.token, else
        200 {"name": "projects/<project>/messages/0:<microseconds>%<hex>"}
      (validate_only: true answers projects/<project>/messages/fake_message_id, as FCM does).
    anything else                                404 NOT_FOUND

Every request is logged (requestlog.RequestLog, one JSON line) when the
answer is decided, before any delayMs.
"""
import json
import re
import secrets
import time

from . import errors, oauth

MAX_BODY = 1024 * 1024
SEND_PATH = re.compile(r"/v1/projects/([^/]+)/messages:send\Z")
DURATION = re.compile(r"-?[0-9]+(\.[0-9]{1,9})?s\Z")
JSON_HEADERS = (("content-type", errors.CONTENT_TYPE),)
WWW_AUTHENTICATE = 'Bearer realm="https://accounts.google.com/"'


class Request:
    """One complete request: method and path as sent, header names in lower case (values str)."""

    __slots__ = ("method", "path", "headers", "body", "too_large", "http", "connection")

    def __init__(self, method, path, headers, body, too_large, http, connection):
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.too_large = too_large
        self.http = http              # "2" or "1.1"
        self.connection = connection  # the listener's connection counter, from 1


class Answer:
    """status + headers + body, or an action (reset, goaway, stall, refuse) the protocol carries out;
    delay: seconds to wait before answering."""

    __slots__ = ("status", "headers", "body", "action", "delay")

    def __init__(self, status=None, body=b"", headers=JSON_HEADERS, action=None, delay=0.0):
        self.status = status
        self.headers = headers
        self.body = body
        self.action = action
        self.delay = delay


def _delay(scripted):
    return (scripted.get("delayMs") or 0) / 1000.0 if scripted else 0.0


class Service:
    def __init__(self, accounts, script, log, token_lifetime, stall_seconds):
        self.accounts_by_kid = {a.key_id: a for a in accounts}
        self.script = script
        self.log = log
        self.token_lifetime = token_lifetime
        self.stall_seconds = stall_seconds
        self.tokens = oauth.AccessTokens()
        self.audiences = []

    def listening_on(self, port):
        """The port is known: the token URLs an assertion's aud may name."""
        self.audiences = ["https://127.0.0.1:%d/token" % port, "https://localhost:%d/token" % port]

    def handle(self, request):
        path = request.path.split("?", 1)[0]
        if path == "/token":
            record, answer = self._token(request)
        else:
            match = SEND_PATH.match(path)
            if match:
                record, answer = self._send(request, match.group(1))
            else:
                record = {"endpoint": "other", "method": request.method, "path": request.path, "status": None,
                          "time": time.time(), "http": request.http, "error": "NOT_FOUND", "action": None,
                          "connection": request.connection}
                answer = Answer(404, errors.google(404, "Method not found."))
        record["status"] = answer.status
        if answer.action is not None:
            record["action"] = answer.action
        if self.log is not None:
            self.log.write(record)
        return answer

    # -- POST /token --------------------------------------------------------
    def _token(self, request):
        record = {"endpoint": "token", "status": None, "kid": None, "iss": None, "time": time.time(),
                  "http": request.http, "error": None, "action": None, "bearer": None,
                  "connection": request.connection}
        if request.method != "POST":
            record["error"] = "invalid_request"
            return record, Answer(405, errors.oauth("invalid_request", "The token endpoint takes POST only"))
        scripted = self.script.next_token_endpoint()
        try:
            grant = oauth.verify(request.body, self.accounts_by_kid, self.audiences)
            refusal = None
        except oauth.GrantError as e:
            grant, refusal = e.grant, e
        record["kid"], record["iss"] = grant.kid, grant.iss
        if scripted is not None and scripted.get("action"):
            return record, Answer(action=scripted["action"])
        delay = _delay(scripted)
        if scripted is not None and scripted["status"] != 200:
            status = scripted["status"]
            error = scripted.get("error") or ("invalid_grant" if status < 500 else "internal_failure")
            record["error"] = error
            return record, Answer(status, errors.oauth(error, scripted.get("description")), delay=delay)
        if refusal is not None:
            record["error"] = refusal.error
            return record, Answer(400, errors.oauth(refusal.error, refusal.description), delay=delay)
        lifetime = scripted.get("expiresIn") if scripted is not None else None
        lifetime = self.token_lifetime if lifetime is None else lifetime
        bearer = self.tokens.issue(grant.account, lifetime)
        record["bearer"] = bearer[:8]
        body = errors.encode({"access_token": bearer, "expires_in": lifetime, "token_type": "Bearer"})
        return record, Answer(200, body, delay=delay)

    # -- POST /v1/projects/<project>/messages:send ----------------------------
    def _send(self, request, project):
        record = {"endpoint": "send", "token": None, "project": project, "bearer": None, "status": None,
                  "message": None, "time": time.time(), "http": request.http, "error": None, "action": None,
                  "connection": request.connection}
        doc = None
        if not request.too_large:
            try:
                doc = json.loads(request.body)
            except (ValueError, UnicodeDecodeError):
                doc = None
        message = doc.get("message") if isinstance(doc, dict) else None
        if isinstance(message, dict):
            record["message"] = message
            if isinstance(message.get("token"), str):
                record["token"] = message["token"]

        if request.method != "POST":
            record["error"] = "NOT_FOUND"
            return record, Answer(404, errors.google(404, "Method not found."))
        authorization = request.headers.get("authorization")
        if authorization is None:
            record["error"] = "UNAUTHENTICATED"
            return record, Answer(401, errors.google(401, errors.BEARER_MISSING),
                                  JSON_HEADERS + (("www-authenticate", WWW_AUTHENTICATE),))
        scheme, _, bearer = authorization.strip().partition(" ")
        bearer = bearer.strip()
        record["bearer"] = bearer[:8]
        account = self.tokens.account(bearer) if scheme.lower() == "bearer" else None
        if account is None:
            record["error"] = "UNAUTHENTICATED"
            return record, Answer(401, errors.google(401, errors.BEARER_REFUSED), JSON_HEADERS + (
                ("www-authenticate", WWW_AUTHENTICATE + ', error="invalid_token"'),))
        if project != account.project_id:
            record["error"] = "PERMISSION_DENIED"
            return record, Answer(403, errors.google(
                403, "Permission 'cloudmessaging.messages.create' denied on resource "
                     "'//cloudresourcemanager.googleapis.com/projects/%s' (or it may not exist)." % project))
        if request.too_large:
            record["error"] = "INVALID_ARGUMENT"
            return record, Answer(413, errors.google(
                413, "Request payload size exceeds the limit: %d bytes." % MAX_BODY, "INVALID_ARGUMENT"))
        refusal = self._check_body(doc)
        if refusal is not None:
            record["error"] = "INVALID_ARGUMENT"
            return record, Answer(400, refusal)
        if doc.get("validate_only") is True:
            return record, Answer(200, errors.encode({"name": "projects/%s/messages/fake_message_id" % project}))
        return record, self._scripted(record, project, message["token"], bearer)

    @staticmethod
    def _check_body(doc):
        """None when the body is a send FCM takes (with a token target), else the 400 body."""
        if not isinstance(doc, dict):
            return errors.bad_request("Invalid JSON payload received. The body must be a JSON object.")
        for name in doc:
            if name not in ("message", "validate_only"):
                return errors.bad_request('Invalid JSON payload received. Unknown name "%s": Cannot find field.'
                                          % name)
        message = doc.get("message")
        if not isinstance(message, dict):
            return errors.bad_request("Request contains an invalid argument: no message.", "message")
        others = [t for t in ("topic", "condition") if t in message]
        if others:
            if "token" in message:
                return errors.bad_request("Invalid value at 'message' (oneof), oneof field 'target' is already "
                                          "set. Cannot set '%s'" % others[0], "message")
            return errors.bad_request("fake-fcm sends to message.token only, not message.%s" % others[0],
                                      "message.%s" % others[0])
        if "token" not in message:
            return errors.bad_request("Recipient of the message is not set.", "message")
        if not isinstance(message["token"], str) or not message["token"]:
            return errors.shorthand("INVALID_TOKEN")[1]
        data = message.get("data")
        if data is not None:
            if not isinstance(data, dict):
                return errors.bad_request("Invalid value at 'message.data': must be a map of strings",
                                          "message.data")
            for i, value in enumerate(data.values()):
                if not isinstance(value, str):
                    where = "message.data[%d].value" % i
                    return errors.bad_request("Invalid value at '%s' (TYPE_STRING), %s"
                                              % (where, json.dumps(value)), where)
        android = message.get("android")
        if isinstance(android, dict) and "ttl" in android:
            ttl = android["ttl"]
            if not isinstance(ttl, str) or not DURATION.match(ttl):
                return errors.bad_request("Invalid value at 'message.android.ttl' "
                                          "(type.googleapis.com/google.protobuf.Duration), %s" % json.dumps(ttl),
                                          "message.android.ttl")
        return None

    def _scripted(self, record, project, token, bearer):
        scripted = self.script.next_send(token)
        if scripted is None or (scripted.get("status") == 200 and scripted.get("error") is None
                                and scripted.get("action") is None):
            name = "projects/%s/messages/0:%d%%%s" % (project, int(time.time() * 1e6), secrets.token_hex(8))
            return Answer(200, errors.encode({"name": name}), delay=_delay(scripted))
        action = scripted.get("action")
        if action == "revoke_bearer":
            # The answer is the one a refused access token gets; the token is refused from now on.
            self.tokens.revoke(bearer)
            record["error"] = "UNAUTHENTICATED"
            record["action"] = action
            status, body = errors.shorthand("UNAUTHENTICATED")
            return Answer(status, body, delay=_delay(scripted))
        if action is not None:
            return Answer(action=action)
        error = scripted.get("error")
        if error is not None:
            status, body = errors.shorthand(error, scripted.get("status"), scripted.get("message"))
            record["error"] = error
        else:
            status = scripted["status"]
            record["error"] = errors.CANONICAL.get(status, "UNKNOWN")
            body = errors.google(status, scripted.get("message") or errors.STATUS_MESSAGES.get(
                status, "The request failed (HTTP %d)." % status))
        headers = JSON_HEADERS
        if scripted.get("retryAfter") is not None:
            headers = headers + (("retry-after", str(scripted["retryAfter"])),)
        return Answer(status, body, headers, delay=_delay(scripted))
