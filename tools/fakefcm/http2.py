"""A connection of tools/fake-fcm that negotiated h2 (hyper-h2 on asyncio streams).

The fake advertises SETTINGS_MAX_CONCURRENT_STREAMS --max-streams (default
100, what Google's front ends advertise) and opens a 16 MiB connection
receive window. A request is answered once its stream ends (the token is in
the body); service.py decides, this file carries the answer or the action:

    reset    RST_STREAM INTERNAL_ERROR
    goaway   GOAWAY NO_ERROR with the last stream id below this one, then close
    stall    nothing, then RST_STREAM CANCEL after --stall-seconds
    refuse   RST_STREAM REFUSED_STREAM (the stream was not processed)

An HTTP/2 protocol error from the client ends the connection with GOAWAY
PROTOCOL_ERROR; a bug here ends the connection (INTERNAL_ERROR), never the fake.
"""
import asyncio
import sys

import h2.config
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from fakeapns import h2tuning

from . import service as svc

CONNECTION_WINDOW = 16 * 1024 * 1024
READ_SIZE = 65536

# h2's own header validation is off both ways (as in fake-apns): a request missing a
# pseudo-header gets service.py's 404 rather than a connection error.
H2_CONFIG = h2.config.H2Configuration(client_side=False, header_encoding=None,
                                      validate_inbound_headers=False,
                                      validate_outbound_headers=False,
                                      normalize_outbound_headers=False)
RESET_CODES = {"reset": h2.errors.ErrorCodes.INTERNAL_ERROR, "refuse": h2.errors.ErrorCodes.REFUSED_STREAM}


class Stream:
    __slots__ = ("headers", "chunks", "length")

    def __init__(self, headers):
        self.headers = headers
        self.chunks = []
        self.length = 0


class Connection:
    def __init__(self, listener, reader, writer, number):
        self.service = listener.service
        self.max_streams = listener.max_streams
        self.reader = reader
        self.writer = writer
        self.number = number
        self.loop = asyncio.get_running_loop()
        self.conn = None
        self.streams = {}   # stream id -> Stream being received
        self.timers = {}    # stream id -> TimerHandle of a delayed or stalled answer
        self.pending = {}   # stream id -> body waiting for the client's flow-control window
        self.closed = False

    async def run(self):
        conn = h2tuning.Connection(H2_CONFIG)
        conn.local_settings = h2.settings.Settings(client=False, initial_values={
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.max_streams,
            h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 65536,
        })
        conn.initiate_connection()
        conn.increment_flow_control_window(CONNECTION_WINDOW - 65535)
        self.conn = conn
        self._flush()
        try:
            while not self.closed:
                data = await self.reader.read(READ_SIZE)
                if not data:
                    break
                try:
                    events = conn.receive_data(data)
                except h2.exceptions.ProtocolError:
                    self._abort(h2.errors.ErrorCodes.PROTOCOL_ERROR)
                    break
                try:
                    self._events(events)
                except Exception as e:  # a bug here ends this connection, never the fake
                    print("fake-fcm: internal error on connection %d: %r" % (self.number, e),
                          file=sys.stderr, flush=True)
                    self._abort(h2.errors.ErrorCodes.INTERNAL_ERROR)
                    break
                self._flush()
                await self.writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._close()

    def _events(self, events):
        conn = self.conn
        for event in events:
            if self.closed:
                return
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = Stream(event.headers)
            elif isinstance(event, h2.events.DataReceived):
                if event.flow_controlled_length:
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                stream = self.streams.get(event.stream_id)
                if stream is not None:
                    if stream.length <= svc.MAX_BODY:
                        stream.chunks.append(event.data)
                    stream.length += len(event.data)
            elif isinstance(event, h2.events.StreamEnded):
                stream = self.streams.pop(event.stream_id, None)
                if stream is not None:
                    self._request(event.stream_id, stream)
            elif isinstance(event, h2.events.StreamReset):
                self._forget(event.stream_id)
            elif isinstance(event, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
                if self.pending:
                    self._send_pending()
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.closed = True
                return

    # -- one request ----------------------------------------------------------
    def _request(self, sid, stream):
        headers = {}
        for name, value in stream.headers:
            headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        too_large = stream.length > svc.MAX_BODY
        request = svc.Request(headers.get(":method", ""), headers.get(":path", ""), headers,
                              b"" if too_large else b"".join(stream.chunks), too_large, "2", self.number)
        try:
            answer = self.service.handle(request)
        except Exception as e:  # never let one request take the connection down
            print("fake-fcm: internal error: %r" % e, file=sys.stderr, flush=True)
            answer = svc.Answer(500, b"")
        action = answer.action
        if action in RESET_CODES:
            self._reset(sid, RESET_CODES[action])
        elif action == "goaway":
            self.closed = True
            self.conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR, last_stream_id=max(0, sid - 2))
            self._flush()
            self.writer.close()
        elif action == "stall":
            self.timers[sid] = self.loop.call_later(self.service.stall_seconds, self._stall_over, sid)
        elif answer.delay:
            self.timers[sid] = self.loop.call_later(answer.delay, self._delayed, sid, answer)
        else:
            self._answer(sid, answer)

    def _delayed(self, sid, answer):
        self.timers.pop(sid, None)
        if not self.closed:
            self._answer(sid, answer)
            self._flush()

    def _stall_over(self, sid):
        self.timers.pop(sid, None)
        if not self.closed:
            self._reset(sid, h2.errors.ErrorCodes.CANCEL)
            self._flush()

    def _answer(self, sid, answer):
        headers = [(b":status", str(answer.status).encode())]
        headers += [(name.encode(), value.encode()) for name, value in answer.headers]
        headers.append((b"content-length", str(len(answer.body)).encode()))
        conn = self.conn
        try:
            if not answer.body:
                conn.send_headers(sid, headers, end_stream=True)
                conn.ended += 1  # h2tuning's count of streams the fake ended
                return
            conn.send_headers(sid, headers)
            if conn.local_flow_control_window(sid) >= len(answer.body):
                conn.send_data(sid, answer.body, end_stream=True)
                conn.ended += 1
            else:
                self.pending[sid] = answer.body
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

    def _reset(self, sid, code):
        try:
            self.conn.reset_stream(sid, error_code=code)
            self.conn.ended += 1
        except h2.exceptions.StreamClosedError:
            pass

    # -- the connection -------------------------------------------------------
    def _flush(self):
        data = self.conn.data_to_send()
        if data and not self.writer.is_closing():
            self.writer.write(data)

    def _forget(self, sid):
        self.streams.pop(sid, None)
        self.pending.pop(sid, None)
        timer = self.timers.pop(sid, None)
        if timer is not None:
            timer.cancel()

    def _abort(self, code):
        self.closed = True
        try:
            self.conn.close_connection(error_code=code)
            self._flush()
        except h2.exceptions.ProtocolError:
            pass
        self.writer.close()

    def _close(self):
        self.closed = True
        for timer in self.timers.values():
            timer.cancel()
        self.timers.clear()
        self.streams.clear()
        self.pending.clear()
        self.writer.close()

    def shut_down(self):
        """The fake is stopping: GOAWAY NO_ERROR, then the connection is dropped."""
        if not self.closed and self.conn is not None:
            self._abort(h2.errors.ErrorCodes.NO_ERROR)
        self._close()
        try:
            self.writer.transport.abort()
        except AttributeError:
            pass  # asyncio's TLS transport after the peer already went away: nothing left to drop
