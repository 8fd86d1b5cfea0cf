"""A connection of tools/fake-fcm that negotiated http/1.1 (or no ALPN at all).

Requests are read one after another on a persistent connection (HTTP/1.1's
default; "connection: close", or HTTP/1.0 without keep-alive, ends it after
the answer). A body comes with content-length or chunked transfer coding;
"expect: 100-continue" gets its interim 100 first. Answers are in order, so
a delayed or stalled answer holds the requests behind it (as any HTTP/1.1
server's would).

HTTP/1.1 has no stream to reset: the actions reset, goaway and refuse close
the connection after reading the request, without an answer; stall holds it
for --stall-seconds, then closes it.

A head over 64 KiB gets 431, a request line or header that does not parse
400; both close the connection.
"""
import asyncio
import email.utils
import http
import sys

from . import service as svc

HEAD_LIMIT = 65536


class BadRequest(Exception):
    pass


def _reason(status):
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Status %d" % status


class Connection:
    def __init__(self, listener, reader, writer):
        self.service = listener.service
        self.reader = reader
        self.writer = writer
        self.number = 0  # the listener's count, from 1 (the log's "connection"), set once accepted

    async def run(self):
        try:
            while await self._one():
                pass
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.writer.close()

    async def _one(self):
        """Reads and answers one request; False when the connection is to be closed."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False  # the client closed the connection between requests
        except asyncio.LimitOverrunError:
            await self._write_simple(431)
            return False
        try:
            method, path, version, headers = self._parse_head(head)
            if headers.get("expect", "").lower() == "100-continue":
                self.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            body, too_large = await self._body(headers)
        except BadRequest:
            await self._write_simple(400)
            return False
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        keep_alive = "keep-alive" in tokens if version == "HTTP/1.0" else "close" not in tokens

        request = svc.Request(method, path, headers, body, too_large, "1.1", self.number)
        try:
            answer = self.service.handle(request)
        except Exception as e:  # never let one request take the connection down
            print("fake-fcm: internal error: %r" % e, file=sys.stderr, flush=True)
            answer = svc.Answer(500, b"")
        if answer.action == "stall":
            await asyncio.sleep(self.service.stall_seconds)
            return False
        if answer.action is not None:  # reset, goaway, refuse: close without an answer
            return False
        if answer.delay:
            await asyncio.sleep(answer.delay)
        self._write(answer.status, answer.headers, answer.body, keep_alive)
        await self.writer.drain()
        return keep_alive

    @staticmethod
    def _parse_head(head):
        try:
            lines = head[:-4].decode("latin-1").split("\r\n")
            method, path, version = lines[0].split(" ")
        except ValueError:
            raise BadRequest()
        if not version.startswith("HTTP/1."):
            raise BadRequest()
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                raise BadRequest()
            headers[name.lower()] = value.strip()
        return method, path, version, headers

    async def _body(self, headers):
        """(body, too_large): a body over service.MAX_BODY is read and dropped."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return await self._chunked()
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            raise BadRequest()
        if length < 0:
            raise BadRequest()
        if length <= svc.MAX_BODY:
            return await self.reader.readexactly(length), False
        while length > 0:
            length -= len(await self.reader.readexactly(min(length, 65536)))
        return b"", True

    async def _chunked(self):
        chunks, size_read = [], 0
        while True:
            line = await self.reader.readuntil(b"\r\n")
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise BadRequest()
            if size == 0:
                while (await self.reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                too_large = size_read > svc.MAX_BODY
                return (b"" if too_large else b"".join(chunks)), too_large
            data = await self.reader.readexactly(size + 2)
            size_read += size
            if size_read <= svc.MAX_BODY:
                chunks.append(data[:-2])

    def _write(self, status, headers, body, keep_alive):
        lines = ["HTTP/1.1 %d %s" % (status, _reason(status)),
                 "date: " + email.utils.formatdate(usegmt=True)]
        lines += ["%s: %s" % (name, value) for name, value in headers]
        lines.append("content-length: %d" % len(body))
        if not keep_alive:
            lines.append("connection: close")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    async def _write_simple(self, status):
        self._write(status, (), b"", False)
        await self.writer.drain()

    def shut_down(self):
        """The fake is stopping: the connection is dropped (a request in flight gets no answer)."""
        try:
            self.writer.transport.abort()
        except AttributeError:
            pass  # asyncio's TLS transport after the peer already went away: nothing left to drop
