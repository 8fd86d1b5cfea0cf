"""tools/fake-apns's code: a fake of APNs' HTTP/2 provider API for tests and the benchmark.

- certs.py:      the private CA and the server certificate (--cert-dir), the
                 provider key pair (--make-key)
- auth.py:       provider-token (JWT ES256) checks, each token string verified once
- script.py:     the script file's format (scripted answers per token and
                 environment)
- requestlog.py: the JSON-lines request log, buffered and flushed every 50 ms
- server.py:     the two listeners, the request checks in APNs' order, the
                 answers
- h2tuning.py:   speed-ups of hyper-h2 and hpack

Shared with tools/fake-fcm (which imports them from here), besides certs.py,
requestlog.py and h2tuning.py:
- h2connection.py: a server-side HTTP/2 connection (hyper-h2 on asyncio): a
                 request's streams in; answers, flow control and the actions
                 reset, goaway and stall out; GOAWAY on a protocol error and
                 on shutdown
- tlslistener.py: the TLS listener on 127.0.0.1: the TLS context, connections
                 numbered, every open one shut down when the fake stops
- scriptfile.py: the --script file, re-read when its mtime, size or inode
                 changes (the previous script kept when a re-read fails)

Needs Debian's python3-h2 and python3-cryptography (tools/install-deps --tools).
"""
