"""tools/fake-fcm's listener: TLS on 127.0.0.1, ALPN h2 and http/1.1 on one port.

The server certificate is tools/fakeapns/certs.py's (localhost and
127.0.0.1, signed by the private CA of --cert-dir). A connection that
negotiated h2 is served by http2.py; one that negotiated http/1.1, or no
ALPN at all, by http1.py. Connections are numbered from 1 in the order they
were accepted (the log's "connection").
"""
import asyncio
import ssl

from . import http1, http2


def tls_context(server_pem, server_key):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(server_pem, server_key)
    context.set_alpn_protocols(["h2", "http/1.1"])
    return context


class Listener:
    def __init__(self, service, max_streams):
        self.service = service
        self.max_streams = max_streams
        self.connections = 0
        self.handlers = set()
        self.server = None

    async def start(self, context, port):
        """Listens; returns the port (a free one when port is 0)."""
        self.server = await asyncio.start_server(self._connected, "127.0.0.1", port, ssl=context,
                                                 backlog=1024, limit=http1.HEAD_LIMIT)
        return self.server.sockets[0].getsockname()[1]

    async def _connected(self, reader, writer):
        ssl_object = writer.get_extra_info("ssl_object")
        alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
        self.connections += 1
        kind = http2.Connection if alpn == "h2" else http1.Connection
        handler = kind(self, reader, writer, self.connections)
        self.handlers.add(handler)
        try:
            await handler.run()
        finally:
            self.handlers.discard(handler)

    def close(self):
        """Stops accepting; every open connection is shut down (h2: GOAWAY NO_ERROR first)."""
        self.server.close()
        for handler in list(self.handlers):
            handler.shut_down()
