"""The TLS listener of tools/fake-apns and tools/fake-fcm: 127.0.0.1, numbered connections, one shutdown.

Both fakes listen the same way (TLS 1.2 or later with certs.py's server
certificate, the ALPN protocols they speak, a backlog of 1024), number
their connections from 1 in the order they were accepted (the log's
"connection") and, when they stop, shut every open connection down, so that
part lives here once. A subclass (fake-apns's server.Listener, fake-fcm's
listener.Listener) says how a connection is served (`_serve`); each
connection registers with `accept` and leaves with `forget`, and has
shut_down().
"""
import ssl

HOST = "127.0.0.1"
BACKLOG = 1024


def tls_context(server_pem, server_key, alpn):
    """The server's TLS: certificate and key files, TLS 1.2 or later, the ALPN protocols in alpn."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(server_pem, server_key)
    context.set_alpn_protocols(list(alpn))
    return context


class Listener:
    def __init__(self, service):
        self.service = service
        self.connections = 0   # connections accepted so far
        self.open = set()      # those not yet gone
        self.server = None

    async def start(self, context, port):
        """Listens on HOST; returns the port (a free one when port is 0)."""
        self.server = await self._serve(context, port)
        return self.server.sockets[0].getsockname()[1]

    def _serve(self, context, port):
        """The awaitable that makes the asyncio server (loop.create_server, asyncio.start_server)."""
        raise NotImplementedError

    def accept(self, connection):
        """A new connection: kept until forget(connection); returns its number (from 1)."""
        self.connections += 1
        self.open.add(connection)
        return self.connections

    def forget(self, connection):
        self.open.discard(connection)

    def close(self):
        """Stops accepting; every open connection is shut down (HTTP/2: GOAWAY NO_ERROR first)."""
        self.server.close()
        for connection in list(self.open):
            connection.shut_down()
