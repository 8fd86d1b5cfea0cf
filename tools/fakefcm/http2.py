"""A connection of tools/fake-fcm that negotiated h2 (hyper-h2 on asyncio streams).

The fake advertises SETTINGS_MAX_CONCURRENT_STREAMS --max-streams (default
100, what Google's front ends advertise) and opens a 16 MiB connection
receive window. A request is answered once its stream ends (the token is in
the body); service.py decides, tools/fakeapns/h2connection.py (shared with
fake-apns) carries the answer or the action:

    reset    RST_STREAM INTERNAL_ERROR
    goaway   GOAWAY NO_ERROR with the last stream id below this one, then close
    stall    nothing, then RST_STREAM CANCEL after --stall-seconds
    refuse   RST_STREAM REFUSED_STREAM (the stream was not processed)

An HTTP/2 protocol error from the client ends the connection with GOAWAY
PROTOCOL_ERROR; a bug here ends the connection (INTERNAL_ERROR), never the fake.
"""
import sys

import h2.errors

from fakeapns import h2connection

from . import service as svc

READ_SIZE = 65536


class Connection(h2connection.H2Connection):
    program = "fake-fcm"
    max_body = svc.MAX_BODY
    reset_codes = {"reset": h2.errors.ErrorCodes.INTERNAL_ERROR, "refuse": h2.errors.ErrorCodes.REFUSED_STREAM}

    def __init__(self, listener, reader, writer):
        super().__init__(listener.service)
        self.max_streams = listener.max_streams
        self.reader = reader
        self.writer = writer
        self.transport = writer.transport

    async def run(self):
        self._open(self.max_streams)
        try:
            while not self.closed:
                data = await self.reader.read(READ_SIZE)
                if not data:
                    break
                self.receive(data)
                if self.closed:
                    break
                await self.writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._drop()
            self.writer.close()

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
        self._carry(sid, answer.action, answer.delay, answer)

    def _answer(self, sid, answer):
        headers = [(b":status", str(answer.status).encode())]
        headers += [(name.encode(), value.encode()) for name, value in answer.headers]
        headers.append((b"content-length", str(len(answer.body)).encode()))
        self._send(sid, headers, answer.body)
