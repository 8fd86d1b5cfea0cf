"""tools/fake-fcm's listener: TLS on 127.0.0.1, ALPN h2 and http/1.1 on one port.

The server certificate is tools/fakeapns/certs.py's (localhost and
127.0.0.1, signed by the private CA of --cert-dir). A connection that
negotiated h2 is served by http2.py; one that negotiated http/1.1, or no
ALPN at all, by http1.py. Connections are numbered from 1 in the order they
were accepted (the log's "connection"); that numbering, the TLS context and
the shutdown of every open connection are tools/fakeapns/tlslistener.py's,
shared with fake-apns.
"""
import asyncio

from fakeapns import tlslistener

from . import http1, http2

ALPN = ("h2", "http/1.1")


class Listener(tlslistener.Listener):
    def __init__(self, service, max_streams):
        super().__init__(service)
        self.max_streams = max_streams

    def _serve(self, context, port):
        return asyncio.start_server(self._connected, tlslistener.HOST, port, ssl=context,
                                    backlog=tlslistener.BACKLOG, limit=http1.HEAD_LIMIT)

    async def _connected(self, reader, writer):
        ssl_object = writer.get_extra_info("ssl_object")
        alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
        kind = http2.Connection if alpn == "h2" else http1.Connection
        handler = kind(self, reader, writer)
        handler.number = self.accept(handler)
        try:
            await handler.run()
        finally:
            self.forget(handler)
