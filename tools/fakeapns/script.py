"""The script file of tools/fake-apns: what to answer a given token.

    {"tokens": {"<hex token, lowercase>": ANSWERS, ...}}

ANSWERS is a list (the same for both environments) or
{"production": [...], "sandbox": [...]} (an environment left out answers
200). Each list is consumed one answer per request, in order; the last one
repeats. An answer is an object:

    {"status": 200}
    {"status": 410, "reason": "Unregistered", "timestamp": MS}   MS, or "now"
    {"status": 400, "reason": "BadDeviceToken"}                 any status/reason
    {"status": 429, "reason": "TooManyRequests", "retryAfter": S}  + retry-after: S
    {"action": "reset"}   read the request, then RST_STREAM INTERNAL_ERROR
    {"action": "refuse"}  read the request, then RST_STREAM REFUSED_STREAM (not
                          processed: a client may send it again)
    {"action": "goaway"}  read the request, then GOAWAY (last stream below
                          this one) and close the connection
    {"action": "stall"}   read the request and never answer (for --stall-seconds)
    "delayMs": N          with a status: answer after N ms

The file is read at start (an invalid one stops the fake) and again whenever
its mtime, size or inode changes (checked on every request); a re-read
starts every list from its first answer again. A re-read that fails (a
half-written file) keeps the previous script and says so on stderr. That
reading and re-reading is scriptfile.py's, shared with tools/fake-fcm.
"""
from .scriptfile import ScriptError, ScriptFile, check_list, load_json

ACTIONS = ("reset", "refuse", "goaway", "stall")
ENVIRONMENTS = ("production", "sandbox")


def _check_answer(answer, where):
    if not isinstance(answer, dict):
        raise ScriptError("%s: an answer must be an object" % where)
    action = answer.get("action")
    if action is not None:
        if action not in ACTIONS:
            raise ScriptError("%s: action must be one of %s" % (where, ", ".join(ACTIONS)))
        return
    status = answer.get("status")
    if status.__class__ is not int or not 200 <= status <= 599:
        raise ScriptError("%s: status must be an integer 200-599 (or give an action)" % where)
    reason = answer.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ScriptError("%s: reason must be a string" % where)
    timestamp = answer.get("timestamp")
    if timestamp is not None and timestamp != "now" and timestamp.__class__ is not int:
        raise ScriptError('%s: timestamp must be epoch milliseconds or "now"' % where)
    retry = answer.get("retryAfter")
    if retry is not None and retry.__class__ is not int:
        raise ScriptError("%s: retryAfter must be an integer (seconds)" % where)
    delay = answer.get("delayMs")
    if delay is not None and (not isinstance(delay, (int, float)) or delay < 0):
        raise ScriptError("%s: delayMs must be a number >= 0" % where)


def parse(text, name="script"):
    """{(environment, token): [answers]} from the script's JSON text."""
    doc = load_json(text, name)
    if not isinstance(doc, dict) or not isinstance(doc.get("tokens", {}), dict):
        raise ScriptError('%s: must be {"tokens": {TOKEN: ANSWERS}}' % name)
    table = {}
    for token, answers in doc.get("tokens", {}).items():
        token = token.lower()
        where = "%s: tokens.%s" % (name, token)
        if isinstance(answers, list):
            check_list(answers, where, _check_answer)
            for env in ENVIRONMENTS:
                table[(env, token)] = answers
        elif isinstance(answers, dict):
            unknown = set(answers) - set(ENVIRONMENTS)
            if unknown:
                raise ScriptError("%s: unknown environment %s" % (where, ", ".join(sorted(unknown))))
            for env, lst in answers.items():
                table[(env, token)] = check_list(lst, "%s.%s" % (where, env), _check_answer)
        else:
            raise ScriptError("%s: a list of answers or {production: [...], sandbox: [...]}" % where)
    return table


class Script(ScriptFile):
    """The script file (--script), or none (path None: every request answers 200)."""

    def __init__(self, path):
        super().__init__(path, parse, "fake-apns")

    def next_answer(self, environment, token):
        """The next scripted answer for (environment, lowercase token), or None (answer 200)."""
        return self.next((environment, token))
