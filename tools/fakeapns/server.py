"""tools/fake-apns's listeners: APNs' HTTP/2 provider API over TLS (hyper-h2 on asyncio).

Two listeners on 127.0.0.1, "production" and "sandbox", each TLS with ALPN
h2 only (a connection that does not pick h2 is closed), each advertising
SETTINGS_MAX_CONCURRENT_STREAMS 1000 as APNs does, with a 16 MiB connection
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
an error has the body {"reason": "..."} (plus "timestamp" when scripted)
and content-type application/json.

A stalled stream is reset (CANCEL) after --stall-seconds. An HTTP/2 protocol
error from the client ends its connection with GOAWAY PROTOCOL_ERROR.
"""
import asyncio
import json
import re
import sys
import time
import uuid

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hpack

from . import h2tuning

MAX_CONCURRENT_STREAMS = 1000
CONNECTION_WINDOW = 16 * 1024 * 1024
MAX_PAYLOAD = 4096
PATH_PREFIX = b"/3/device/"
PUSH_TYPES = frozenset(b"alert background liveactivity voip complication fileprovider mdm location "
                       b"pushtotalk widgets".split())
LIVEACTIVITY_SUFFIX = b".push-type.liveactivity"
PRIORITIES = {b"1": 1, b"5": 5, b"10": 10}
HEX = re.compile(rb"[0-9a-fA-F]{64,200}\Z")
UUID_RE = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
INTEGER = re.compile(rb"-?[0-9]{1,19}\Z")

# h2's own header validation is off both ways (it cost a sixth of each request): the
# checks above are what APNs answers, and a request missing a pseudo-header gets
# 405 or 404 from them rather than a connection error.
H2_CONFIG = h2.config.H2Configuration(client_side=False, header_encoding=None,
                                      validate_inbound_headers=False,
                                      validate_outbound_headers=False,
                                      normalize_outbound_headers=False)
EV_REQUEST = h2.events.RequestReceived
EV_DATA = h2.events.DataReceived
EV_ENDED = h2.events.StreamEnded
EV_RESET = h2.events.StreamReset
EV_WINDOW = h2.events.WindowUpdated
EV_SETTINGS = h2.events.RemoteSettingsChanged
EV_TERMINATED = h2.events.ConnectionTerminated


def _text(value):
    return None if value is None else value.decode("utf-8", "replace")


class Service:
    """What both listeners share: the checks' configuration, the script, the log."""

    def __init__(self, auth, topics, script, log, stall_seconds):
        self.auth = auth
        topics = [t.encode() for t in topics]
        self.topics = frozenset(topics + [t + LIVEACTIVITY_SUFFIX for t in topics]) if topics else None
        self.script = script
        self.log = log
        self.stall_seconds = stall_seconds

    def decide(self, environment, connection, headers, body, body_length):
        """(status, reason, answer or None, apns-id bytes) for one complete request; logs it."""
        record = {"time": time.time(), "environment": environment, "token": None, "status": None,
                  "reason": None, "action": None, "apnsId": None, "topic": None, "pushType": None,
                  "priority": None, "expiration": None, "collapseId": None, "payload": None,
                  "jwtIat": None, "connection": connection}
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
        if self.log is not None:
            self.log.write(record)
        return status, reason, answer, answer_id

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


class Stream:
    __slots__ = ("headers", "chunks", "length")

    def __init__(self, headers):
        self.headers = headers
        self.chunks = []
        self.length = 0


class APNsProtocol(asyncio.Protocol):
    """One HTTP/2 connection of one listener."""

    def __init__(self, listener):
        self.listener = listener
        self.service = listener.service
        self.loop = asyncio.get_running_loop()
        self.transport = None
        self.conn = None
        self.number = 0
        self.streams = {}
        self.timers = {}
        self.pending = {}   # stream id -> body waiting for the client's flow-control window
        self.closed = False

    # -- asyncio ------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
            self.closed = True
            transport.close()
            return
        self.listener.connections += 1
        self.number = self.listener.connections
        self.listener.protocols.add(self)
        conn = h2tuning.Connection(H2_CONFIG)
        conn.local_settings = h2.settings.Settings(client=False, initial_values={
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS,
            h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 65536,
        })
        conn.initiate_connection()
        conn.increment_flow_control_window(CONNECTION_WINDOW - 65535)
        self.conn = conn
        self._flush()

    def connection_lost(self, exc):
        self.listener.protocols.discard(self)
        self.closed = True
        for timer in self.timers.values():
            timer.cancel()
        self.timers.clear()
        self.streams.clear()
        self.pending.clear()

    def pause_writing(self):
        self.transport.pause_reading()

    def resume_writing(self):
        if not self.closed:
            self.transport.resume_reading()

    def data_received(self, data):
        if self.closed:
            return
        conn = self.conn
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self._abort(h2.errors.ErrorCodes.PROTOCOL_ERROR)
            return
        try:
            self._events(conn, events)
        except Exception as e:  # a bug here ends this connection, never the fake
            print("fake-apns: internal error on connection %d: %r" % (self.number, e), file=sys.stderr, flush=True)
            self._abort(h2.errors.ErrorCodes.INTERNAL_ERROR)

    def _events(self, conn, events):
        for event in events:
            if self.closed:
                return
            kind = event.__class__
            if kind is EV_REQUEST:
                self.streams[event.stream_id] = Stream(dict(event.headers))
            elif kind is EV_DATA:
                sid = event.stream_id
                if event.flow_controlled_length:
                    conn.acknowledge_received_data(event.flow_controlled_length, sid)
                stream = self.streams.get(sid)
                if stream is not None:
                    if stream.length <= MAX_PAYLOAD:
                        stream.chunks.append(event.data)
                    stream.length += len(event.data)
            elif kind is EV_ENDED:
                stream = self.streams.pop(event.stream_id, None)
                if stream is not None:
                    self._request(event.stream_id, stream)
            elif kind is EV_RESET:
                self._forget(event.stream_id)
            elif kind is EV_WINDOW or kind is EV_SETTINGS:
                if self.pending:
                    self._send_pending()
            elif kind is EV_TERMINATED:
                self.closed = True
                self._flush()
                self.transport.close()
                return
        self._flush()

    # -- HTTP/2 -------------------------------------------------------------
    def _flush(self):
        data = self.conn.data_to_send()
        if data and not self.transport.is_closing():
            self.transport.write(data)

    def _abort(self, code):
        self.closed = True
        try:
            self.conn.close_connection(error_code=code)
            self._flush()
        except h2.exceptions.ProtocolError:
            pass
        self.transport.close()

    def shut_down(self):
        """The fake is stopping: GOAWAY NO_ERROR, then the connection is dropped."""
        if not self.closed:
            self._abort(h2.errors.ErrorCodes.NO_ERROR)
        self.transport.abort()

    def _forget(self, sid):
        self.streams.pop(sid, None)
        self.pending.pop(sid, None)
        timer = self.timers.pop(sid, None)
        if timer is not None:
            timer.cancel()

    def _request(self, sid, stream):
        body = b"".join(stream.chunks) if stream.length <= MAX_PAYLOAD else b""
        try:
            status, reason, answer, apns_id = self.service.decide(
                self.listener.environment, self.number, stream.headers, body, stream.length)
        except Exception as e:  # never let one request take the connection down
            print("fake-apns: internal error: %r" % e, file=sys.stderr, flush=True)
            status, reason, answer, apns_id = 500, "InternalServerError", None, str(uuid.uuid4()).encode()
        if answer is None:
            self._answer(sid, status, reason, None, apns_id)
            return
        action = answer.get("action")
        if action == "reset":
            self._reset(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
        elif action == "goaway":
            self.closed = True
            self.conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR,
                                       additional_data=b'{"reason":"Shutdown"}',
                                       last_stream_id=max(0, sid - 2))
            self._flush()
            self.transport.close()
        elif action == "stall":
            self.timers[sid] = self.loop.call_later(self.service.stall_seconds, self._stall_over, sid)
        else:
            delay = answer.get("delayMs")
            if delay:
                self.timers[sid] = self.loop.call_later(delay / 1000.0, self._delayed, sid, status, reason,
                                                        answer, apns_id)
            else:
                self._answer(sid, status, reason, answer, apns_id)

    def _delayed(self, sid, status, reason, answer, apns_id):
        self.timers.pop(sid, None)
        if not self.closed:
            self._answer(sid, status, reason, answer, apns_id)
            self._flush()

    def _stall_over(self, sid):
        self.timers.pop(sid, None)
        if not self.closed:
            self._reset(sid, h2.errors.ErrorCodes.CANCEL)
            self._flush()

    def _reset(self, sid, code):
        try:
            self.conn.reset_stream(sid, error_code=code)
            self.conn.ended += 1
        except h2.exceptions.StreamClosedError:
            pass

    def _answer(self, sid, status, reason, answer, apns_id):
        # apns-id differs on every answer: never indexed, so it does not churn the HPACK table.
        headers = [(b":status", str(status).encode()), hpack.NeverIndexedHeaderTuple(b"apns-id", apns_id)]
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
        conn = self.conn
        try:
            if body is None:
                conn.send_headers(sid, headers, end_stream=True)
                conn.ended += 1
                return
            conn.send_headers(sid, headers)
            if conn.local_flow_control_window(sid) >= len(body):
                conn.send_data(sid, body, end_stream=True)
                conn.ended += 1
            else:
                self.pending[sid] = body
        except h2.exceptions.StreamClosedError:
            self.pending.pop(sid, None)

    def _send_pending(self):
        for sid, body in list(self.pending.items()):
            try:
                if self.conn.local_flow_control_window(sid) >= len(body):
                    del self.pending[sid]
                    self.conn.send_data(sid, body, end_stream=True)
                    self.conn.ended += 1
            except h2.exceptions.StreamClosedError:
                self.pending.pop(sid, None)


class Listener:
    def __init__(self, environment, service):
        self.environment = environment
        self.service = service
        self.connections = 0
        self.protocols = set()
        self.server = None

    async def start(self, ssl_context, port):
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: APNsProtocol(self), "127.0.0.1", port,
                                               ssl=ssl_context, backlog=1024)
        return self.server.sockets[0].getsockname()[1]

    def close(self):
        self.server.close()
        for protocol in list(self.protocols):
            protocol.shut_down()
