"""The --script FILE of tools/fake-apns and tools/fake-fcm: a JSON file of answers, re-read when it changes.

Both fakes treat their script file the same way, whatever its answers say,
so that part lives here once; each fake's script.py has the format (its
parse function and its answer checks) and asks ScriptFile.next for answers.

The file is read at start (an invalid one raises ScriptError or OSError,
which stops the fake with exit 2) and again whenever its mtime, size or
inode changes (checked on every request); a re-read starts every list from
its first answer again. A re-read that fails (a half-written file) or a
file that is gone keeps the previous script and says so on stderr. Each
list is consumed one answer per request, in order; the last one repeats.
"""
import json
import os
import sys


class ScriptError(ValueError):
    """A script file that is not JSON or not in the fake's format (the message says where)."""


def load_json(text, name):
    """The JSON document of a script's text; ScriptError when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise ScriptError("%s: not JSON: %s" % (name, e))


def check_list(answers, where, check):
    """answers when it is a non-empty list whose every answer passes check(answer, "where[i]")."""
    if not isinstance(answers, list) or not answers:
        raise ScriptError("%s: a non-empty list of answers" % where)
    for i, answer in enumerate(answers):
        check(answer, "%s[%d]" % (where, i))
    return answers


class ScriptFile:
    """The answers of one script file: parse(bytes, path) -> {key: [answer, ...]}.

    path None: no script, next() is always None. program ("fake-apns",
    "fake-fcm") starts the lines written to stderr.
    """

    def __init__(self, path, parse, program):
        self.path = path
        self.parse = parse
        self.program = program
        self.table = {}
        self.cursor = {}
        self.signature = None
        if path is not None:
            self.signature = self._stat()
            with open(path, "rb") as f:
                self.table = parse(f.read(), path)

    def _stat(self):
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _refresh(self):
        signature = self._stat()
        if signature == self.signature:
            return
        self.signature = signature
        if signature is None:
            print("%s: script %s is gone; keeping the last one" % (self.program, self.path),
                  file=sys.stderr, flush=True)
            return
        try:
            with open(self.path, "rb") as f:
                table = self.parse(f.read(), self.path)
        except (OSError, ScriptError) as e:
            print("%s: %s; keeping the last script" % (self.program, e), file=sys.stderr, flush=True)
            return
        self.table = table
        self.cursor = {}

    def next(self, key):
        """The next answer of key's list (the file re-read first if it changed), or None when it has none."""
        if self.path is None:
            return None
        self._refresh()
        answers = self.table.get(key)
        if answers is None:
            return None
        i = self.cursor.get(key, 0)
        self.cursor[key] = i + 1
        return answers[i] if i < len(answers) else answers[-1]
