"""tools/fake-fcm's code: a fake of Firebase Cloud Messaging's HTTP v1 API and of
Google's OAuth 2.0 token endpoint, for tests.

- accounts.py: Google service-account files (--make-service-account writes one,
               --service-account loads them)
- oauth.py:    POST /token: the JWT-bearer grant (RFC 7523) checked as Google
               checks it, and the access tokens issued, expired and revoked
- errors.py:   Google's error bodies, FCM's (with FcmError details) and OAuth's
- script.py:   the script file (answers per registration token and for the
               token endpoint), re-read when it changes
- service.py:  the routes, the checks of messages:send in order, the log
               records; one Request in, one Answer out, whatever the protocol
- http2.py:    a connection that negotiated h2 (hyper-h2)
- http1.py:    a connection that negotiated http/1.1 (or no ALPN)
- listener.py: the TLS listener on 127.0.0.1, ALPN h2 and http/1.1

It reuses tools/fakeapns/certs.py (the private CA and server certificate, so
one ca.pem can serve both fakes), requestlog.py (the JSON-lines log),
h2tuning.py (hyper-h2 speed-ups), h2connection.py (the HTTP/2 connection
http2.py builds on), tlslistener.py (the TLS listener listener.py builds on)
and scriptfile.py (the script file's reading and re-reading). Needs Debian's
python3-h2 and python3-cryptography (tools/install-deps --tools).
"""
