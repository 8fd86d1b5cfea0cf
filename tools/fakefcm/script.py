"""The script file of tools/fake-fcm: what to answer a registration token, and the token endpoint.

    {"tokens": {"<registration token>": [ANSWER, ...], ...},
     "token_endpoint": [TOKEN_ANSWER, ...]}

Both parts are optional. Each list is consumed one answer per request, in
order; the last one repeats. A token not in the script gets 200; the token
endpoint without a list issues access tokens normally. Tokens match exactly
(FCM's registration tokens are case-sensitive).

ANSWER (messages:send, after the request passed every check):
    {"status": 200}                      200 {"name": "projects/<pid>/messages/<id>"}
    {"error": "UNREGISTERED"}            FCM's full error for that name (errors.SHORTHANDS):
                                         UNREGISTERED 404, INVALID_ARGUMENT 400, INVALID_TOKEN 400,
                                         SENDER_ID_MISMATCH 403, PERMISSION_DENIED 403,
                                         THIRD_PARTY_AUTH_ERROR 401, QUOTA_EXCEEDED 429,
                                         UNAVAILABLE 503, INTERNAL 500, UNAUTHENTICATED 401
        + "status": N, "message": "..."  override the shorthand's HTTP status or message
    {"status": 404}                      a status alone (not 200): Google's error body with that
                                         status's canonical name and no FcmError
    + "retryAfter": S                    adds retry-after: S (seconds)
    + "delayMs": N                       answers after N ms
    {"action": "reset"}          read the request, then RST_STREAM INTERNAL_ERROR (HTTP/1.1:
                                 close the connection, no answer)
    {"action": "goaway"}         read the request, then GOAWAY NO_ERROR with the last stream id
                                 below this one, and close (HTTP/1.1: close, no answer)
    {"action": "stall"}          read the request and never answer; after --stall-seconds
                                 RST_STREAM CANCEL (HTTP/1.1: close)
    {"action": "refuse"}         RST_STREAM REFUSED_STREAM: "not processed, send it again"
                                 (HTTP/1.1 has no such signal: close, no answer)
    {"action": "revoke_bearer"}  401 UNAUTHENTICATED (no FcmError), and the access token the
                                 request carried is revoked: later requests with it get 401 too

TOKEN_ANSWER (POST /token, before the assertion is checked):
    {"status": 200}                        check the assertion and issue as usual
        + "expiresIn": S                   ... an access token that lives S seconds
    {"status": 400, "error": "invalid_grant", "description": "..."}   any 4xx/5xx; error
                                           defaults to invalid_grant (4xx) or internal_failure (5xx)
    + "delayMs": N, and the actions reset, goaway, stall, refuse as above

The file is read at start (an invalid one stops the fake, exit 2) and again
whenever its mtime, size or inode changes (checked on every request); a
re-read starts every list from its first answer again. A re-read that fails
(a half-written file) keeps the previous script and says so on stderr. That
reading and re-reading is tools/fakeapns/scriptfile.py's, shared with fake-apns.
"""
from fakeapns.scriptfile import ScriptError, ScriptFile, check_list, load_json

from . import errors

SEND_ACTIONS = ("reset", "goaway", "stall", "refuse", "revoke_bearer")
TOKEN_ACTIONS = ("reset", "goaway", "stall", "refuse")
TOKEN_ENDPOINT = ("token_endpoint",)  # the table key of the token endpoint's list


def _check_common(answer, where, actions):
    """Checks action, status, delayMs; True when the answer is an action."""
    if not isinstance(answer, dict):
        raise ScriptError("%s: an answer must be an object" % where)
    delay = answer.get("delayMs")
    if delay is not None and (not isinstance(delay, (int, float)) or isinstance(delay, bool) or delay < 0):
        raise ScriptError("%s: delayMs must be a number >= 0" % where)
    action = answer.get("action")
    if action is not None:
        if action not in actions:
            raise ScriptError("%s: action must be one of %s" % (where, ", ".join(actions)))
        return True
    status = answer.get("status")
    if status is not None and (status.__class__ is not int or not 200 <= status <= 599):
        raise ScriptError("%s: status must be an integer 200-599" % where)
    return False


def _check_send(answer, where):
    if _check_common(answer, where, SEND_ACTIONS):
        return
    error = answer.get("error")
    if error is None and answer.get("status") is None:
        raise ScriptError("%s: give a status, an error or an action" % where)
    if error is not None and error not in errors.SHORTHANDS:
        raise ScriptError("%s: error must be one of %s" % (where, ", ".join(errors.SHORTHANDS)))
    if answer.get("message") is not None and not isinstance(answer["message"], str):
        raise ScriptError("%s: message must be a string" % where)
    retry = answer.get("retryAfter")
    if retry is not None and (retry.__class__ is not int or retry < 0):
        raise ScriptError("%s: retryAfter must be an integer >= 0 (seconds)" % where)


def _check_token(answer, where):
    if _check_common(answer, where, TOKEN_ACTIONS):
        return
    if answer.get("status") is None:
        raise ScriptError("%s: give a status or an action" % where)
    for member in ("error", "description"):
        if answer.get(member) is not None and not isinstance(answer[member], str):
            raise ScriptError("%s: %s must be a string" % (where, member))
    expires = answer.get("expiresIn")
    if expires is not None and (expires.__class__ is not int or expires < 0):
        raise ScriptError("%s: expiresIn must be an integer >= 0 (seconds)" % where)


def parse(text, name="script"):
    """{token: [answers], TOKEN_ENDPOINT: [answers]} from the script's JSON text."""
    doc = load_json(text, name)
    if not isinstance(doc, dict) or not isinstance(doc.get("tokens", {}), dict):
        raise ScriptError('%s: must be {"tokens": {TOKEN: [ANSWER, ...]}, "token_endpoint": [ANSWER, ...]}' % name)
    unknown = set(doc) - {"tokens", "token_endpoint"}
    if unknown:
        raise ScriptError("%s: unknown member %s" % (name, ", ".join(sorted(unknown))))
    table = {}
    for token, answers in doc.get("tokens", {}).items():
        table[token] = check_list(answers, "%s: tokens.%s" % (name, token), _check_send)
    if "token_endpoint" in doc:
        table[TOKEN_ENDPOINT] = check_list(doc["token_endpoint"], "%s: token_endpoint" % name, _check_token)
    return table


class Script(ScriptFile):
    """The script file (--script), or none (path None: every token answers 200, tokens are issued)."""

    def __init__(self, path):
        super().__init__(path, parse, "fake-fcm")

    def next_send(self, token):
        """The next scripted answer for a registration token, or None (answer 200)."""
        return self.next(token)

    def next_token_endpoint(self):
        """The token endpoint's next scripted answer, or None (check and issue)."""
        return self.next(TOKEN_ENDPOINT)
