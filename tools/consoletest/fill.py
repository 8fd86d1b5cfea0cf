"""What tools/console-test writes into a registryd before it looks at the console, through the API only.

- Client: one keep-alive HTTP/1.1 connection to 127.0.0.1 with a bearer credential; JSON in and out
- fill(): users, devices (two apps, both environments, two Android phones), push-to-start and
  activity tokens, removals (APNs and FCM feedback, sign-out, permission withdrawn), and
  notifications the fake APNs answers (an Android phone's delivery fails at accept: this registryd
  has no FCM service account); returns Fill,
  which keeps every token written, so the test can look for each in the browser
"""

import http.client
import json
import secrets
import time

ACTIVITY = "match-42"
SCORES = "com.example.scores"  # a declared app besides `default`
USERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]


class Client:
    """One keep-alive connection; request() returns (status, parsed JSON or None)."""

    def __init__(self, port, credential):
        self.port = port
        self.credential = credential
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(self, method, path, body=None, credential=None):
        headers = {"Authorization": f"Bearer {credential or self.credential}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        payload = response.read()
        return response.status, (json.loads(payload) if payload else None)

    def get(self, path):
        status, body = self.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path} answered {status}: {body}")
        return body

    def close(self):
        self.conn.close()


class Fill:
    """The tokens written (every one, so none may show up in the page), the fake's script, and the
    Android phones (user, deviceId, FCM token)."""

    def __init__(self):
        self.tokens = []
        self.script = {"tokens": {}}
        self.android = []

    def token(self):
        token = secrets.token_hex(32)
        self.tokens.append(token)
        return token

    def fcm_token(self):
        """An FCM registration token's shape: mixed case, with `:`, `-` and `_` among its characters."""
        token = f"{secrets.token_urlsafe(16)}:APA91b{secrets.token_urlsafe(100)}"
        self.tokens.append(token)
        return token


def plan():
    """Decides every token first, so the fake's script can name some of them before registryd sends."""
    fill = Fill()
    devices = []  # (user, appId, deviceId, pushToken, environment)
    for i, user in enumerate(USERS):
        for d in range(1 + i % 3):
            environment = "sandbox" if (i + d) % 4 == 0 else "production"
            devices.append((user, "default", f"{user}-phone-{d}", fill.token(), environment))
    devices.append(("alice", SCORES, "alice-phone-0", fill.token(), "production"))
    # What the fake answers: a dead token (410), a token APNs refuses on both hosts, and one
    # registered as production that only the sandbox takes (its environment gets corrected).
    fill.script["tokens"][devices[1][3]] = [{"status": 410, "reason": "Unregistered", "timestamp": "now"}]
    fill.script["tokens"][devices[4][3]] = [{"status": 400, "reason": "BadDeviceToken"}]
    fill.script["tokens"][devices[8][3]] = {"production": [{"status": 400, "reason": "BadDeviceToken"}]}
    # Android phones: bob's gets a delivery that fails at accept (no FCM service account here),
    # carol's token is removed by FCM's feedback (InvalidToken).
    fill.android = [("bob", "bob-pixel", fill.fcm_token()), ("carol", "carol-pixel", fill.fcm_token())]
    return fill, devices


def fill(client, jwts, fill, devices):
    """Writes `devices` and the rest through the device and internal APIs; raises on any refusal."""
    def expect(ok, method, path, body=None, credential=None):
        status, answer = client.request(method, path, body, credential)
        if status not in ok:
            raise RuntimeError(f"{method} {path} answered {status}: {answer}")
        return answer

    for user, app, device, token, environment in devices:
        expect((200, 201), "POST", "/v1/devices", {"deviceId": device, "appId": app, "pushToken": token,
                                                     "environment": environment, "osVersion": "18.2",
                                                     "appVersion": "3.4.0"}, jwts[user])
    for user, device, token in fill.android:
        expect((201,), "POST", "/v1/devices", {"deviceId": device, "platform": "fcm", "pushToken": token,
                                                "osVersion": "15.0", "appVersion": "3.4.0"}, jwts[user])
    for i, (user, app, device, _, environment) in enumerate(devices):
        if i % 2 == 0 and app == "default":
            expect((200,), "POST", f"/v1/activities/{ACTIVITY}/activity-token",
                   {"deviceId": device, "token": fill.token(), "environment": environment}, jwts[user])
        if i % 3 == 0:
            expect((200,), "POST", "/v1/devices/push-to-start-token",
                   {"deviceId": device, "appId": app, "token": fill.token()}, jwts[user])
    # Removals of every kind an operator meets: APNs and FCM feedback, a sign-out, permission withdrawn, a rotation.
    expect((200,), "POST", "/internal/v1/feedback", {"token": devices[10][3], "reason": "Unregistered"})
    expect((200,), "POST", "/internal/v1/feedback", {"token": devices[12][3], "reason": "DeviceTokenNotForTopic"})
    expect((200,), "POST", "/internal/v1/feedback", {"token": fill.android[1][2], "reason": "InvalidToken"})
    expect((204,), "DELETE", f"/v1/devices/{devices[13][2]}?sequence=7", None, jwts[devices[13][0]])
    expect((200,), "POST", "/v1/devices", {"deviceId": devices[14][2], "pushToken": None}, jwts[devices[14][0]])
    expect((200,), "POST", "/v1/devices", {"deviceId": devices[0][2], "pushToken": fill.token()}, jwts[devices[0][0]])


def notify(client, deadline_seconds=30):
    """Three notifications (users, an activity, one user), then waits until the fake answered every
    delivery. Returns the notifications' ids; raises when the queue does not drain in time."""
    ids = []
    for body in ({"target": {"userIds": USERS}, "payload": {"aps": {"alert": {"title": "Kick-off", "body": "0-0"}}}},
                 {"target": {"activityId": ACTIVITY}, "payload": {"aps": {"event": "update", "content-state": {"score": "1-0"}}}},
                 {"target": {"userId": "alice"}, "payload": {"aps": {"alert": "Goal!"}}, "collapseId": ACTIVITY}):
        status, answer = client.request("POST", "/internal/v1/notifications", body)
        if status != 202:
            raise RuntimeError(f"POST /internal/v1/notifications answered {status}: {answer}")
        ids.append(answer["notification"]["id"])
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        queue = client.get("/internal/v1/deliveries/queue")
        if queue["queued"] == 0 and queue["sending"] == 0:
            return ids
        time.sleep(0.2)
    raise RuntimeError(f"the delivery queue did not drain in {deadline_seconds} s: {queue}")
