"""tools/fake-apns's request log: JSON lines, appended, buffered.

One line per request (see server.py for the fields). Lines are kept in
memory and written and flushed every 50 ms (FLUSH_SECONDS) and on exit, so a
reader sees a request's line at most ~50 ms after its answer was decided;
nothing is written per request, which keeps the log off the hot path.
"""
import json

FLUSH_SECONDS = 0.05


class RequestLog:
    def __init__(self, path, loop):
        self.file = open(path, "a", encoding="utf-8")
        self.lines = []
        self.loop = loop
        self.encode = json.JSONEncoder(separators=(", ", ": ")).encode
        self.timer = loop.call_later(FLUSH_SECONDS, self._tick)

    def write(self, record):
        self.lines.append(self.encode(record))

    def flush(self):
        if self.lines:
            self.lines.append("")
            self.file.write("\n".join(self.lines))
            self.lines = []
        self.file.flush()

    def _tick(self):
        self.flush()
        self.timer = self.loop.call_later(FLUSH_SECONDS, self._tick)

    def close(self):
        self.timer.cancel()
        self.flush()
        self.file.close()
