#!/usr/bin/env python3
"""Tests the clients beside it against standin.py: every default client
handles each latitude, and each CLIENT_FAULT misbehaves where it should.

    python3 test_clients.py        (or: python3 -m unittest test_clients)
"""
import json, os, shutil, signal, subprocess, sys, tempfile, unittest
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = ["node", os.path.join(HERE, "nodeclient.mjs")]
PY = [sys.executable, os.path.join(HERE, "pyclient.py")]  # the pyenv shim costs a second a start
CLIENTS = {"node": NODE, "python3": PY}
if os.path.exists("/usr/bin/python3"):
    CLIENTS["debian-python3"] = ["/usr/bin/python3", PY[1]]
VALUE = "Echo — hello".encode()
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")
WORKERS = max(2, os.cpu_count() or 2)  # each worker mostly waits on its processes


class Result:
    def __init__(self, rc, out, err, reqs):
        self.rc, self.out, self.err, self.reqs = rc, out, err, reqs
        self.posts = [r for r in reqs if r["method"] == "POST"]
        self.paths = [r["path"].rsplit("/", 1)[-1] for r in reqs]

    def __repr__(self):
        return f"rc={self.rc} out={self.out[:80]!r} requests={self.paths} stderr:\n{self.err[-600:]}"


class Standin:
    """One stand-in runner in a posture, its request log emptied before each client run."""

    def __init__(self, posture):
        self.tmp = tempfile.mkdtemp(prefix="pclient-")
        self.log = os.path.join(self.tmp, "requests.jsonl")
        self.srv = subprocess.Popen([sys.executable, os.path.join(HERE, "standin.py"), posture, "--log", self.log],
                                    stdout=subprocess.PIPE, text=True)
        self.port = self.srv.stdout.readline().strip().split("=")[1]
        self.posture = posture

    def run(self, cmd, verb, fault="", timeout=20):
        open(self.log, "w").close()
        env = {**os.environ, "POSTERN_URL": f"http://127.0.0.1:{self.port}", "POSTERN_VERB": verb,
               "POSTERN_CONFORMANCE_SCENARIO": self.posture, "CLIENT_FAULT": fault}
        cli = subprocess.Popen(cmd, env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
        try:
            out, err = cli.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(cli.pid, signal.SIGKILL)  # the client's own group, started above
            out, err = cli.communicate()
        with open(self.log) as f:
            reqs = [json.loads(line) for line in f]
        return Result(cli.returncode, out, err.decode("utf-8", "replace"), reqs)

    def close(self):
        self.srv.terminate()
        self.srv.wait()
        self.srv.stdout.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def in_posture(posture, cases):
    """Runs cases [(label, (cmd, verb, ...), check)] one after another against one stand-in."""
    srv = Standin(posture)
    try:
        return [(label, r, bool(check(r))) for label, args, check in cases for r in [srv.run(*args)]]
    finally:
        srv.close()


def succeeded(out=VALUE):
    def check(r):
        return r.rc == 0 and r.out == out and len(r.posts) == 1
    return check


def failed(message=None, posts=1):
    def check(r):
        return r.rc not in (0, None) and len(r.posts) == posts and (message is None or message in r.err)
    return check


def request_ok(r):
    """What every default client sends: describe, status, then one JSON POST."""
    return r.paths[:2] == ["describe", "status"] and all(
        p["content_type"] == "application/json; charset=utf-8" and isinstance(p["body"], dict) for p in r.posts)


UNKNOWN_INPUTS = lambda r: r.rc == 0 and r.posts[0]["body"]["inputs"] == {
    "Topic": "hel", "when": "hello", "count": 3, "tone": "dry"}
DEFAULTS = [  # (posture, verbs, check) that every default client must satisfy
    ("plain", "run stream", succeeded()),
    *[(p, "stream", succeeded()) for p in "comments multiline crlf cr nospace fields split unknown-event".split()],
    ("grammar", "run stream", succeeded()),
    ("delta-mismatch", "stream", lambda r: succeeded()(r) and "differed" in r.err),
    ("started-latency", "stream", succeeded()),
    ("no-deltas", "stream", succeeded()),
    ("unknown-output", "run stream", lambda r: succeeded(b"")(r) and "hologram" in r.err),
    ("bytes-upper", "run stream", succeeded(PNG)),
    ("unknown-input", "run", UNKNOWN_INPUTS),
    ("extra-members", "run stream", succeeded()),
    ("error-4xx", "run stream", failed("Too many runs today.")),
    ("error-5xx", "run stream", failed("The model host went away.")),
    ("error-event", "stream", failed("The agent ran out of quota.")),
    ("error-sibling", "run stream", failed("The crew crashed.")),
    ("busy", "run stream", failed("Another run is in flight.")),
    ("status-busy", "run stream", failed("Warming up.", posts=0)),
    ("level2", "run", succeeded()),
    ("level1", "run stream", failed(posts=0)),
    ("leak", "run stream", failed("credential", posts=0)),
    ("leak-purpose", "run", failed("credential", posts=0)),
    ("drop", "stream", failed("not reconnecting")),
]
# A Level 2 runner asked for stream: Node falls back to run, Python declines.
LEVEL2_STREAM = {
    "node": lambda r: succeeded()(r) and r.paths == ["describe", "status", "run"],
    "python3": lambda r: failed("needs Level 3", posts=0)(r),
}
LEVEL2_STREAM["debian-python3"] = LEVEL2_STREAM["python3"]

FAULTS = [  # (client, fault, posture, verb, what shows the mistake)
    ("node", "line-events", "multiline", "stream", lambda r: r.rc != 0),
    ("node", "need-space", "nospace", "stream", lambda r: r.rc != 0),
    ("node", "abort-unknown-event", "unknown-event", "stream", lambda r: r.rc != 0),
    ("node", "print-deltas", "delta-mismatch", "stream", lambda r: r.out == "Echo — draft".encode()),
    ("node", "any-as-text", "unknown-output", "run", lambda r: r.out == b"AAEC"),
    ("node", "any-as-text", "bytes-upper", "run", lambda r: r.out != PNG),
    ("node", "strict-decode", "extra-members", "run", lambda r: r.rc != 0 and not r.posts),
    ("node", "strict-decode", "error-sibling", "run", lambda r: "The crew crashed." not in r.err),
    ("node", "code-switch", "error-4xx", "run", lambda r: r.rc == 0),
    ("node", "code-switch", "error-event", "stream", lambda r: r.rc == 0),
    ("node", "level-from-describe", "level2", "stream", lambda r: "status" not in r.paths and "stream" in r.paths),
    ("node", "retry-503", "busy", "run", lambda r: len(r.posts) > 1),
    ("node", "text-plain", "plain", "run", lambda r: r.posts[0]["content_type"].startswith("text/plain")),
    ("node", "reconnect", "drop", "stream", lambda r: len(r.posts) > 1),
    ("python3", "lf-only", "cr", "stream", lambda r: r.rc != 0),
    ("python3", "lf-only", "crlf", "stream", lambda r: r.rc != 0),
    ("python3", "last-data-line", "multiline", "stream", lambda r: r.rc != 0),
    ("python3", "reject-started-latency", "started-latency", "stream", lambda r: r.rc != 0),
    ("python3", "unknown-output-fails", "unknown-output", "run", lambda r: r.rc != 0),
    ("python3", "bytes-case", "bytes-upper", "run", lambda r: r.rc != 0),
    ("python3", "unknown-input-fail", "unknown-input", "run", lambda r: r.rc != 0 and not r.posts),
    ("python3", "error-sibling-strict", "error-sibling", "run", lambda r: "The crew crashed." not in r.err),
    ("python3", "unknown-code-crash", "error-5xx", "run", lambda r: "Traceback" in r.err),
    ("python3", "assume-level", "level2", "stream", lambda r: "status" not in r.paths and "stream" in r.paths),
    ("python3", "fold-keys", "unknown-input", "run", lambda r: "topic" in r.posts[0]["body"]["inputs"]),
    ("python3", "form-encoded", "plain", "run",
     lambda r: r.posts[0]["content_type"] == "application/x-www-form-urlencoded"),
    ("python3", "trust-credentials", "leak", "run", lambda r: len(r.posts) == 1),
]
# A switch that breaks the request itself cannot pass against any conforming runner.
BREAKS_PLAIN = {"text-plain", "form-encoded"}


def each(cases):
    """Runs cases [(label, (cmd, posture, verb, ...), check)], one stand-in per posture, a few postures at a time."""
    groups = {}
    for label, (cmd, posture, *rest), check in cases:
        groups.setdefault(posture, []).append((label, (cmd, *rest), check))
    with ThreadPoolExecutor(WORKERS) as pool:
        for results in pool.map(lambda g: in_posture(*g), groups.items()):
            yield from results


def default_check(client, posture, verb):
    """What a default client must show in this posture, request included."""
    if (posture, verb) == ("level2", "stream"):
        return LEVEL2_STREAM[client]
    check = next(c for p, verbs, c in DEFAULTS if p == posture and verb in verbs.split())
    return lambda r: check(r) and (r.rc != 0 or request_ok(r))


class Clients(unittest.TestCase):
    def check_all(self, cases):
        for label, r, ok in each(cases):
            with self.subTest(label):
                self.assertTrue(ok, r)

    def test_defaults_handle_every_latitude(self):
        self.check_all([(f"{name} {posture} {verb}", (cmd, posture, verb), default_check(name, posture, verb))
                        for name, cmd in CLIENTS.items()
                        for posture, verbs, _ in DEFAULTS + [("level2", "stream", None)]
                        for verb in verbs.split()])

    def test_each_fault_misbehaves(self):
        """Each switch shows its own mistake, and so fails what a default client passes there."""
        timeout = lambda fault: 10 if fault == "retry-503" else 20  # retry-503 never ends: 10 s sees several POSTs
        self.check_all([(f"{c} {f} on {p} {v}", (CLIENTS[c], p, v, f, timeout(f)),
                         lambda r, shows=shows, passes=default_check(c, p, v): shows(r) and not passes(r))
                        for c, f, p, v, shows in FAULTS])

    def test_each_fault_keeps_the_plain_run(self):
        faults = sorted({(c, f) for c, f, *_ in FAULTS if f not in BREAKS_PLAIN})
        """Each switch is a targeted mistake: the plain run still works (whether status was read aside)."""
        self.check_all([(f"{c} {f} plain {v}", (CLIENTS[c], "plain", v, f), succeeded())
                        for c, f in faults for v in ("run", "stream")])


if __name__ == "__main__":
    unittest.main(verbosity=2)
