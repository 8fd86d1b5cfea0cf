"""tools/fake-apns's listeners: APNs' HTTP/2 provider API over TLS (hyper-h2 on asyncio).

Two listeners on 127.0.0.1, "production" and "sandbox", each TLS with ALPN
h2 only (a connection that does not pick h2 is closed), each advertising
SETTINGS_MAX_CONCURRENT_STREAMS --max-streams (default 1000, as APNs does;
fewer makes a client wait for stream slots), with a 16 MiB connection
receive window. Every request is checked, in APNs' order:

    :method not POST                         405 MethodNotAllowed
    :path not /3/device/<token>              404 BadPath
    token not hex, or not 64-200 characters  400 BadDeviceToken
    no authorization                         403 MissingProviderToken
    token not bearer ES256 with kid/iss/signature right, or iat > 60 s ahead
                                             403 InvalidProviderToken
    iat older than 3600 s                    403 ExpiredProviderToken
    no apns-topic                            400 MissingTopic
    apns-topic not a --topic (or a --topic + ".push-type.liveactivity")
                                             400 TopicDisallowed
    apns-push-type absent or unknown         400 InvalidPushType
    liveactivity without the ".push-type.liveactivity" topic, or that topic
    with another push type                   400 BadTopic
    apns-priority not 1, 5 or 10             400 BadPriority
    apns-expiration not an integer           400 BadExpirationDate
    apns-collapse-id over 64 bytes           400 BadCollapseId
    apns-id not a canonical UUID             400 BadMessageId
    empty body                               400 PayloadEmpty
    body over 4096 bytes                     413 PayloadTooLarge
    body not a JSON object                   400 BadPayload (the fake's own reason)

then the script's next answer for (environment, token) (script.py), else 200
with an empty body. Every answer has apns-id (the request's, or a new UUID);
the sandbox's also have apns-unique-id (a new UUID each: the id Apple's
development environment gives for its delivery log); an error has the body
{"reason": "..."} (plus "timestamp" when scripted) and content-type
application/json.

The actions reset (RST_STREAM INTERNAL_ERROR), refuse (RST_STREAM
REFUSED_STREAM: not processed, RFC 9113 section 8.7), goaway (GOAWAY NO_ERROR
with {"reason":"Shutdown"}) and stall (RST_STREAM CANCEL after --stall-seconds),
flow control, and an HTTP/2 protocol error from the client ending its
connection with GOAWAY PROTOCOL_ERROR are h2connection.py's (shared with
tools/fake-fcm); the listener is tlslistener.py's.
"""
import asyncio
import json
import re
import sys
import time
import uuid

import h2.errors
import hpack

from . import h2connection, tlslistener

ALPN = ("h2",)
MAX_PAYLOAD = 4096
PATH_PREFIX = b"/3/device/"
PUSH_TYPES = frozenset(b"alert background liveactivity voip complication fileprovider mdm location "
                       b"pushtotalk widgets".split())
LIVEACTIVITY_SUFFIX = b".push-type.liveactivity"
PRIORITIES = {b"1": 1, b"5": 5, b"10": 10}
HEX = re.compile(rb"[0-9a-fA-F]{64,200}\Z")
UUID_RE = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
INTEGER = re.compile(rb"-?[0-9]{1,19}\Z")


def _text(value):
    return None if value is None else value.decode("utf-8", "replace")


class Service:
    """What both listeners share: the checks' configuration, the script, the log."""

    def __init__(self, auth, topics, script, log, stall_seconds, max_streams):
        self.auth = auth
        topics = [t.encode() for t in topics]
        self.topics = frozenset(topics + [t + LIVEACTIVITY_SUFFIX for t in topics]) if topics else None
        self.script = script
        self.log = log
        self.stall_seconds = stall_seconds
        self.max_streams = max_streams

    def decide(self, environment, connection, headers, body, body_length):
        """(status, reason, answer or None, apns-id bytes, apns-unique-id bytes or None) for one
        complete request; logs it."""
        record = {"time": time.time(), "environment": environment, "token": None, "status": None,
                  "reason": None, "action": None, "apnsId": None, "topic": None, "pushType": None,
                  "priority": None, "expiration": None, "collapseId": None, "payload": None,
                  "jwtIat": None, "connection": connection, "uniqueId": None}
        apns_id = headers.get(b"apns-id")
        if apns_id is None or not UUID_RE.match(apns_id):
            answer_id = str(uuid.uuid4()).encode()
        else:
            answer_id = apns_id
        record["apnsId"] = answer_id.decode()
        status, reason, answer = self._check(record, headers, body, body_length)
        if status is None:
            answer = self.script.next_answer(environment, record["token"].lower())
            if answer is None:
                status = 200
            else:
                status = answer.get("status")
                reason = answer.get("reason")
                record["action"] = answer.get("action")
        record["status"] = status
        record["reason"] = reason
        unique_id = None
        if environment == "sandbox" and record["action"] is None:
            unique_id = str(uuid.uuid4()).encode()
            record["uniqueId"] = unique_id.decode()
        if self.log is not None:
            self.log.write(record)
        return status, reason, answer, answer_id, unique_id

    def _check(self, record, headers, body, body_length):
        """(status, reason, None) for a rejected request, (None, None, None) for one that passes."""
        if headers.get(b":method") != b"POST":
            return 405, "MethodNotAllowed", None
        path = headers.get(b":path") or b""
        if not path.startswith(PATH_PREFIX) or b"/" in path[len(PATH_PREFIX):] or len(path) == len(PATH_PREFIX):
            return 404, "BadPath", None
        token = path[len(PATH_PREFIX):]
        record["token"] = _text(token)
        if not HEX.match(token):
            return 400, "BadDeviceToken", None
        topic = headers.get(b"apns-topic")
        push_type = headers.get(b"apns-push-type")
        priority = headers.get(b"apns-priority")
        expiration = headers.get(b"apns-expiration")
        collapse_id = headers.get(b"apns-collapse-id")
        record["topic"] = _text(topic)
        record["pushType"] = _text(push_type)
        record["priority"] = PRIORITIES.get(priority, _text(priority))
        record["expiration"] = (int(expiration) if expiration is not None and INTEGER.match(expiration)
                                else _text(expiration))
        record["collapseId"] = _text(collapse_id)

        reason, iat = self.auth.check(headers.get(b"authorization"))
        record["jwtIat"] = iat
        if reason is not None:
            return 403, reason, None
        if topic is None:
            return 400, "MissingTopic", None
        if self.topics is not None and topic not in self.topics:
            return 400, "TopicDisallowed", None
        if push_type not in PUSH_TYPES:
            return 400, "InvalidPushType", None
        if (push_type == b"liveactivity") != topic.endswith(LIVEACTIVITY_SUFFIX):
            return 400, "BadTopic", None
        if priority is not None and priority not in PRIORITIES:
            return 400, "BadPriority", None
        if expiration is not None and not INTEGER.match(expiration):
            return 400, "BadExpirationDate", None
        if collapse_id is not None and len(collapse_id) > 64:
            return 400, "BadCollapseId", None
        apns_id = headers.get(b"apns-id")
        if apns_id is not None and not UUID_RE.match(apns_id):
            return 400, "BadMessageId", None
        if body_length == 0:
            return 400, "PayloadEmpty", None
        if body_length > MAX_PAYLOAD:
            return 413, "PayloadTooLarge", None
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return 400, "BadPayload", None
        if not isinstance(payload, dict):
            return 400, "BadPayload", None
        record["payload"] = payload
        return None, None, None


class APNsProtocol(h2connection.H2Connection, asyncio.Protocol):
    """One HTTP/2 connection of one listener: a request in, service.decide, its answer out."""

    program = "fake-apns"
    max_body = MAX_PAYLOAD
    reset_codes = {"reset": h2.errors.ErrorCodes.INTERNAL_ERROR, "refuse": h2.errors.ErrorCodes.REFUSED_STREAM}
    goaway_data = b'{"reason":"Shutdown"}'

    def __init__(self, listener):
        super().__init__(listener.service)
        self.listener = listener

    # -- asyncio ------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
            self.closed = True
            transport.close()
            return
        self.number = self.listener.accept(self)
        self._open(self.service.max_streams)

    def connection_lost(self, exc):
        self.listener.forget(self)
        self._drop()

    def pause_writing(self):
        self.transport.pause_reading()

    def resume_writing(self):
        if not self.closed:
            self.transport.resume_reading()

    def data_received(self, data):
        self.receive(data)

    # -- one request --------------------------------------------------------
    def _request(self, sid, stream):
        body = b"".join(stream.chunks) if stream.length <= MAX_PAYLOAD else b""
        headers = dict(stream.headers)
        try:
            status, reason, answer, apns_id, unique_id = self.service.decide(
                self.listener.environment, self.number, headers, body, stream.length)
        except Exception as e:  # never let one request take the connection down
            print("fake-apns: internal error: %r" % e, file=sys.stderr, flush=True)
            status, reason, answer, apns_id, unique_id = 500, "InternalServerError", None, str(uuid.uuid4()).encode(), None
        if answer is None:
            self._answer(sid, status, reason, None, apns_id, unique_id)
            return
        self._carry(sid, answer.get("action"), (answer.get("delayMs") or 0) / 1000.0,
                    status, reason, answer, apns_id, unique_id)

    def _answer(self, sid, status, reason, answer, apns_id, unique_id):
        # apns-id differs on every answer: never indexed, so it does not churn the HPACK table.
        headers = [(b":status", str(status).encode()), hpack.NeverIndexedHeaderTuple(b"apns-id", apns_id)]
        if unique_id is not None:
            headers.append(hpack.NeverIndexedHeaderTuple(b"apns-unique-id", unique_id))
        body = None
        if reason is not None or (answer is not None and "timestamp" in answer):
            doc = {"reason": reason}
            if answer is not None:
                timestamp = answer.get("timestamp")
                if timestamp == "now":
                    timestamp = int(time.time() * 1000)
                if timestamp is not None:
                    doc["timestamp"] = timestamp
            body = json.dumps(doc, separators=(",", ":")).encode()
            headers.append((b"content-type", b"application/json"))
            headers.append((b"content-length", str(len(body)).encode()))
        if answer is not None and answer.get("retryAfter") is not None:
            headers.append((b"retry-after", str(answer["retryAfter"]).encode()))
        self._send(sid, headers, body)


class Listener(tlslistener.Listener):
    """The "production" or the "sandbox" listener (ALPN h2 only)."""

    def __init__(self, environment, service):
        super().__init__(service)
        self.environment = environment

    def _serve(self, context, port):
        return asyncio.get_running_loop().create_server(lambda: APNsProtocol(self), tlslistener.HOST, port,
                                                        ssl=context, backlog=tlslistener.BACKLOG)
