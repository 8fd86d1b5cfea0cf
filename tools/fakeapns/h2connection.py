"""One server-side HTTP/2 connection of a fake (hyper-h2 on asyncio), for tools/fake-apns and tools/fake-fcm.

The two fakes differ in what a request is answered, not in how HTTP/2
carries a request in and an answer or an action out, so that part lives
here once. A subclass (fake-apns's server.APNsProtocol, fake-fcm's
http2.Connection) sets `transport`, calls `_open` and then `receive` with
what it reads, and says what a request gets: `_request(sid, stream)` decides
and hands the outcome to `_carry`, which calls back `_answer(sid, ...)` to
write an answer (through `_send`).

What this class does:
- advertises SETTINGS_MAX_CONCURRENT_STREAMS (the subclass's number) and
  MAX_HEADER_LIST_SIZE 64 KiB, and opens a 16 MiB connection receive window
  (h2tuning.Connection: hyper-h2 with the fakes' speed-ups);
- collects a stream's headers (as h2 gives them: a list of bytes pairs) and
  body (a body over `max_body` bytes is counted, not kept), and hands the
  stream to `_request` once the client ends it; a stream the client resets
  is forgotten, with any answer waiting for it;
- carries out what was decided (`_carry`):
      an action in `reset_codes`   RST_STREAM with that code ("reset":
                                   INTERNAL_ERROR; both fakes add "refuse":
                                   REFUSED_STREAM)
      goaway   GOAWAY NO_ERROR (with `goaway_data`) and the last stream id
               below this one, then the connection is closed
      stall    nothing, then RST_STREAM CANCEL after the service's
               stall_seconds
      else     the answer, after `delay` seconds when that is not 0;
- an answer's body that does not fit the client's flow-control window waits
  for a WINDOW_UPDATE (or SETTINGS) that makes room;
- an HTTP/2 protocol error from the client ends the connection with GOAWAY
  PROTOCOL_ERROR; a bug in handling the events ends this connection with
  GOAWAY INTERNAL_ERROR, never the fake; a GOAWAY from the client closes it;
- shut_down (the fake is stopping): GOAWAY NO_ERROR, then the connection is
  dropped.
"""
import asyncio
import sys

import h2.config
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from . import h2tuning

CONNECTION_WINDOW = 16 * 1024 * 1024
MAX_HEADER_LIST_SIZE = 65536

# h2's own header validation is off both ways (it cost a sixth of each request in fake-apns):
# each fake checks requests as the service it fakes does, and a request missing a
# pseudo-header gets that service's 404 or 405 rather than a connection error.
H2_CONFIG = h2.config.H2Configuration(client_side=False, header_encoding=None,
                                      validate_inbound_headers=False,
                                      validate_outbound_headers=False,
                                      normalize_outbound_headers=False)
# h2 emits these exact classes (no subclasses), so `event.__class__ is` is isinstance, only faster.
EV_REQUEST = h2.events.RequestReceived
EV_DATA = h2.events.DataReceived
EV_ENDED = h2.events.StreamEnded
EV_RESET = h2.events.StreamReset
EV_WINDOW = h2.events.WindowUpdated
EV_SETTINGS = h2.events.RemoteSettingsChanged
EV_TERMINATED = h2.events.ConnectionTerminated


class Stream:
    """A request being received: h2's header list, the body's chunks (up to max_body) and its length."""

    __slots__ = ("headers", "chunks", "length")

    def __init__(self, headers):
        self.headers = headers
        self.chunks = []
        self.length = 0


class H2Connection:
    """The HTTP/2 side of one connection; see the module's docstring for what a subclass adds."""

    program = "fake"       # what starts its lines on stderr
    max_body = 0           # bytes of a body kept; a longer one is only counted
    reset_codes = {"reset": h2.errors.ErrorCodes.INTERNAL_ERROR}
    goaway_data = None     # the GOAWAY's additional data for the action goaway

    def __init__(self, service):
        self.service = service  # has stall_seconds
        self.loop = asyncio.get_running_loop()
        self.transport = None
        self.conn = None
        self.number = 0      # the listener's count, from 1 (the log's "connection")
        self.streams = {}    # stream id -> Stream being received
        self.timers = {}     # stream id -> TimerHandle of a delayed or stalled answer
        self.pending = {}    # stream id -> body waiting for the client's flow-control window
        self.closed = False

    # -- to be given by a subclass ---------------------------------------------
    def _request(self, sid, stream):
        """Decides the answer to the complete request on stream sid and calls _carry."""
        raise NotImplementedError

    def _answer(self, sid, *answer):
        """Writes an answer (what _carry was given after delay) with _send."""
        raise NotImplementedError

    # -- the connection ---------------------------------------------------------
    def _open(self, max_streams):
        """The server's preface: SETTINGS, and the connection window opened to CONNECTION_WINDOW."""
        conn = h2tuning.Connection(H2_CONFIG)
        conn.local_settings = h2.settings.Settings(client=False, initial_values={
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: max_streams,
            h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_LIST_SIZE,
        })
        conn.initiate_connection()
        conn.increment_flow_control_window(CONNECTION_WINDOW - 65535)
        self.conn = conn
        self._flush()

    def receive(self, data):
        """Bytes read from the client: their events handled, what they call for written."""
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
            print("%s: internal error on connection %d: %r" % (self.program, self.number, e),
                  file=sys.stderr, flush=True)
            self._abort(h2.errors.ErrorCodes.INTERNAL_ERROR)

    def _events(self, conn, events):
        max_body = self.max_body
        for event in events:
            if self.closed:
                return
            kind = event.__class__
            if kind is EV_REQUEST:
                self.streams[event.stream_id] = Stream(event.headers)
            elif kind is EV_DATA:
                sid = event.stream_id
                if event.flow_controlled_length:
                    conn.acknowledge_received_data(event.flow_controlled_length, sid)
                stream = self.streams.get(sid)
                if stream is not None:
                    if stream.length <= max_body:
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

    def _drop(self):
        """The connection is over: every timer cancelled, every stream forgotten."""
        self.closed = True
        for timer in self.timers.values():
            timer.cancel()
        self.timers.clear()
        self.streams.clear()
        self.pending.clear()

    def shut_down(self):
        """The fake is stopping: GOAWAY NO_ERROR, then the connection is dropped."""
        if not self.closed and self.conn is not None:
            self._abort(h2.errors.ErrorCodes.NO_ERROR)
        self._drop()
        try:
            self.transport.abort()
        except AttributeError:
            pass  # asyncio's TLS transport after the peer already went away: nothing left to drop

    # -- one stream -------------------------------------------------------------
    def _carry(self, sid, action, delay, *answer):
        """Carries out what was decided for stream sid: an action, else _answer(sid, *answer),
        after delay seconds when delay is not 0."""
        if action in self.reset_codes:
            self._reset(sid, self.reset_codes[action])
        elif action == "goaway":
            self.closed = True
            self.conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR,
                                       additional_data=self.goaway_data, last_stream_id=max(0, sid - 2))
            self._flush()
            self.transport.close()
        elif action == "stall":
            self.timers[sid] = self.loop.call_later(self.service.stall_seconds, self._stall_over, sid)
        elif delay:
            self.timers[sid] = self.loop.call_later(delay, self._delayed, sid, answer)
        else:
            self._answer(sid, *answer)

    def _delayed(self, sid, answer):
        self.timers.pop(sid, None)
        if not self.closed:
            self._answer(sid, *answer)
            self._flush()

    def _stall_over(self, sid):
        self.timers.pop(sid, None)
        if not self.closed:
            self._reset(sid, h2.errors.ErrorCodes.CANCEL)
            self._flush()

    def _forget(self, sid):
        self.streams.pop(sid, None)
        self.pending.pop(sid, None)
        timer = self.timers.pop(sid, None)
        if timer is not None:
            timer.cancel()

    def _reset(self, sid, code):
        try:
            self.conn.reset_stream(sid, error_code=code)
            self.conn.ended += 1  # h2tuning's count of the streams the fake ended
        except h2.exceptions.StreamClosedError:
            pass

    def _send(self, sid, headers, body):
        """An answer: headers, and body (None or b"": none) now or once the client's window has room."""
        conn = self.conn
        try:
            if not body:
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
