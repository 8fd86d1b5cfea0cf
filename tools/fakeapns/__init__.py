"""tools/fake-apns's code: a fake of APNs' HTTP/2 provider API for tests and the benchmark.

- certs.py:      the private CA and the server certificate (--cert-dir), the
                 provider key pair (--make-key)
- auth.py:       provider-token (JWT ES256) checks, each token string verified once
- script.py:     the script file (scripted answers per token and environment),
                 re-read when it changes
- requestlog.py: the JSON-lines request log, buffered and flushed every 50 ms
- server.py:     the two TLS + HTTP/2 listeners (hyper-h2 on asyncio), the
                 request checks in APNs' order, the answers and actions

Needs Debian's python3-h2 and python3-cryptography (tools/install-deps --tools).
"""
