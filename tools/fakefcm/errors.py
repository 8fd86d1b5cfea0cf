"""Google's error bodies, as fcm.googleapis.com and oauth2.googleapis.com send them.

FCM (google.rpc.Status in JSON, pretty-printed as Google does):

    {"error": {"code": 404, "message": "Requested entity was not found.",
               "status": "NOT_FOUND",
               "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                            "errorCode": "UNREGISTERED"}]}}

SHORTHANDS maps what a script's {"error": NAME} says to such a body (and its
HTTP status). Two names are not FcmError codes: INVALID_TOKEN is the
INVALID_ARGUMENT FCM gives for a registration token it does not accept (the
FcmError plus a google.rpc.BadRequest field violation on message.token), and
UNAUTHENTICATED is the 401 of a refused access token, which has no FcmError
(neither has PERMISSION_DENIED).

OAuth (RFC 6749 section 5.2): {"error": "invalid_grant", "error_description": "..."}.
"""
import json

FCM_ERROR = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
CONTENT_TYPE = "application/json; charset=UTF-8"

# Google's canonical status for an HTTP status (google.rpc.Code), for bodies with no other.
CANONICAL = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
             409: "ABORTED", 413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
             500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}

BEARER_REFUSED = ("Request had invalid authentication credentials. Expected OAuth 2 access token, login "
                  "cookie or other valid authentication credential. "
                  "See https://developers.google.com/identity/sign-in/web/devconsole-project.")
BEARER_MISSING = ("Request is missing required authentication credential. Expected OAuth 2 access token, "
                  "login cookie or other valid authentication credential. "
                  "See https://developers.google.com/identity/sign-in/web/devconsole-project.")
INVALID_TOKEN_MESSAGE = "The registration token is not a valid FCM registration token"
TOKEN_VIOLATION = {"@type": BAD_REQUEST,
                   "fieldViolations": [{"field": "message.token", "description": "Invalid registration token"}]}

# NAME: (HTTP status, Google status, message, FcmError code or None, further details)
SHORTHANDS = {
    "UNREGISTERED": (404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED", ()),
    "INVALID_ARGUMENT": (400, "INVALID_ARGUMENT", "Request contains an invalid argument.", "INVALID_ARGUMENT", ()),
    "INVALID_TOKEN": (400, "INVALID_ARGUMENT", INVALID_TOKEN_MESSAGE, "INVALID_ARGUMENT", (TOKEN_VIOLATION,)),
    "SENDER_ID_MISMATCH": (403, "PERMISSION_DENIED", "SenderId mismatch", "SENDER_ID_MISMATCH", ()),
    "PERMISSION_DENIED": (403, "PERMISSION_DENIED", "The caller does not have permission", None, ()),
    "THIRD_PARTY_AUTH_ERROR": (401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service",
                               "THIRD_PARTY_AUTH_ERROR", ()),
    "QUOTA_EXCEEDED": (429, "RESOURCE_EXHAUSTED", "Quota exceeded for sending messages.", "QUOTA_EXCEEDED", ()),
    "UNAVAILABLE": (503, "UNAVAILABLE", "The service is currently unavailable.", "UNAVAILABLE", ()),
    "INTERNAL": (500, "INTERNAL", "Internal error encountered.", "INTERNAL", ()),
    "UNAUTHENTICATED": (401, "UNAUTHENTICATED", BEARER_REFUSED, None, ()),
}


def encode(doc):
    """Google pretty-prints its JSON answers (2 spaces, a final newline)."""
    return (json.dumps(doc, indent=2) + "\n").encode()


def google(code, message, status=None, fcm_error=None, details=()):
    """The body of a Google API error: code is the HTTP status; status defaults to its canonical name."""
    error = {"code": code, "message": message, "status": status or CANONICAL.get(code, "UNKNOWN")}
    listed = ([{"@type": FCM_ERROR, "errorCode": fcm_error}] if fcm_error else []) + list(details)
    if listed:
        error["details"] = listed
    return encode({"error": error})


def shorthand(name, status=None, message=None):
    """(HTTP status, body) of a script's {"error": NAME}; status and message override the usual ones."""
    code, google_status, usual, fcm_error, details = SHORTHANDS[name]
    return status or code, google(status or code, message or usual, google_status, fcm_error, details)


# The message of a scripted status given alone (no "error", no "message").
STATUS_MESSAGES = {400: "Request contains an invalid argument.", 401: BEARER_REFUSED,
                   403: "The caller does not have permission", 404: "Requested entity was not found.",
                   429: "Resource has been exhausted (e.g. check quota).", 500: "Internal error encountered.",
                   503: "The service is currently unavailable.", 504: "The request timed out."}


def bad_request(message, field=None):
    """400 INVALID_ARGUMENT about the request: an FcmError INVALID_ARGUMENT and a google.rpc.BadRequest
    violation on field (none when field is None). Never on message.token, which says the token is bad."""
    violation = {"description": message} if field is None else {"field": field, "description": message}
    return google(400, message, "INVALID_ARGUMENT", "INVALID_ARGUMENT",
                  ({"@type": BAD_REQUEST, "fieldViolations": [violation]},))


def oauth(error, description=None):
    """An OAuth 2.0 error body (the token endpoint's)."""
    doc = {"error": error}
    if description is not None:
        doc["error_description"] = description
    return encode(doc)
