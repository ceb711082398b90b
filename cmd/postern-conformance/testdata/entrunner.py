#!/usr/bin/env python3
"""entrunner: an independent Postern runner with a real entitlement client.

Written from SPEC.md (§2, §2.1, §2.3, §3, §4.1, §4.2, §4.4, §4.6, §5, §7),
in Python's standard library only (python3 >= 3.11). It is launched by the
tests through `postern-conformance entitlement --launch`. Its agent is
trivial (it echoes the `prompt` input); the point is the entitlement client:

  * the check is GET {distributor}/postern/v0/entitlements/{owner}/{name}
    with `Authorization: Bearer <token>` (§5.3, §5.3.1), sent in plaintext
    only where the connected peer address is loopback (§7), never
    following a redirect, reading at most 64 KiB of the answer;
  * an answer is cached until checked_at + stale_after_seconds, counted from
    the distributor's `checked_at` (§5.3, §5.4); the first request after
    that re-checks, and a background thread re-checks at the deadline and
    keeps trying through the grace period (§5.7.1 SHOULD);
  * unreachable is a transport failure, a 5xx, any other status but 200 and
    404, or a 200 that is no valid check answer (§5.7), an agent_id that is
    not ours included (§5.3 SHOULD); past the window it reports `unknown`
    with the distributor's checked_at and runs until the grace ends (§5.7.1
    MAY), then answers 503 `unavailable`;
  * a 404 is an answer: `revoked`, checked_at the runner's own receipt time,
    stale_after_seconds the last one the distributor gave, else the
    runner's own cadence (§5.7.4);
  * never checked: `unknown` without checked_at, 503 (§5.7.3);
  * the answer is persisted with its checked_at in the state directory and
    judged against that value on load (§5.4, §5.7.2);
  * no distributor configured (empty setting): `not_required`, never a
    refusal on entitlement grounds (§5.1);
  * refusals in §4.6's order: level (501), entitlement (403/503), media type
    (400, before the body is read), inputs (400); describe, status and every
    preflight answer whatever the entitlement (§2.3, §4.1, §4.4).

Command line: entrunner.py [--port N] [--host 127.0.0.1]

Settings (environment):
  ENTRUNNER_DISTRIBUTOR   distributor base URL; empty or unset = none (§5.1)
  ENTRUNNER_TOKEN         the entitlement token
  ENTRUNNER_STATE         directory to persist the answer in (optional)
  ENTRUNNER_AGENT         agent identifier (default acme/indie-echo)
  ENTRUNNER_LEVEL         2 (default) or 3 (serves stream)
  ENTRUNNER_CADENCE       own re-check cadence after a first-ever 404 (s, default 60)
  ENTRUNNER_ORIGINS       comma-separated allowed browser origins (default none)
  ENTRUNNER_INBOUND_TOKEN a bearer credential every request must present (§7)
  ENTRUNNER_CAUTIOUS=1    refuse 503 within grace (allowed: running there is a
                          MAY, §5.7.1), still reporting the distributor's checked_at

Planted mistakes, ENTRUNNER_FAULT=name[,name...], each a thing a real client
gets wrong:
  unconfigured-refuses   with no distributor, reports `unknown` and refuses 503
                         (§5.1)
  stream-ungated         stream skips the entitlement gate that run applies
                         (§4.6 step 2, §5.7.4); needs ENTRUNNER_LEVEL=3
  preflight-gated        answers the run/stream preflight 403 `not_entitled`
                         while the entitlement is not in force (§2.3)
  nonjson-revoked        reads a 200 whose body is not JSON as a refusal, like
                         a 404 (§5.7: it is unreachable)
  grace-default          a 200 missing grace_seconds is taken as an answer with
                         a default grace of a day, and the runner runs on
                         (§5.3, §5.7: it is no valid answer)
  404-old-checked-at     after a 404, times its re-check from the 404 but keeps
                         reporting the previous answer's checked_at, not its
                         own receipt time (§4.4's "unchanged" over-applied, §5.7.4)
  restart-restamp        on restart, stamps the persisted answer with the load
                         time as checked_at: a fresh window (§4.4, §5.7.2)
  grace-drops-checked-at refuses within grace (as the cautious posture does)
                         and, not running there, reports `unknown` without the
                         checked_at it holds, as if never checked (§4.4, §5.7.3)
  cache-past-window      caches an answer until checked_at + stale + grace,
                         reading the grace as part of the cache lifetime (§5.4)
  workers-forget         holds an answer no longer than one request, as workers
                         that share nothing and cannot write their cache do:
                         each request starts holding nothing and asks, and where
                         that check fails reports `unknown` without checked_at,
                         within the window of an active answer too (§5.7.4's
                         table, §4.4)
  404-own-cadence        after a 404, reports its own cadence as
                         stale_after_seconds though the distributor had given
                         one (§5.7.4 SHOULD)
"""

import datetime
import hashlib
import http.client
import ipaddress
import json
import os
import re
import secrets
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/postern/v0"
VERSION = "0.1"
MAX_BODY = 1 << 20
MAX_ANSWER = 64 << 10
CHECK_TIMEOUT = 3.0  # one check's connect + read deadline
REQUEST_WAIT = 1.0  # how long a request waits for a check it triggered
RETRY_MIN = 0.25  # least time between two attempts while unreachable

AGENT_ID_RE = re.compile(r"^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?/[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$")
RFC3339_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$"
)


def env(name, default=""):
    return os.environ.get(name, default)


AGENT = env("ENTRUNNER_AGENT", "acme/indie-echo")
LEVEL = 3 if env("ENTRUNNER_LEVEL", "2") == "3" else 2
CAUTIOUS = env("ENTRUNNER_CAUTIOUS") == "1"
FAULTS = {f.strip() for f in env("ENTRUNNER_FAULT").split(",") if f.strip()}
ORIGINS = {o.strip() for o in env("ENTRUNNER_ORIGINS").split(",") if o.strip() and o.strip() != "null"}
INBOUND = env("ENTRUNNER_INBOUND_TOKEN")
try:
    CADENCE = max(1, int(env("ENTRUNNER_CADENCE", "60")))
except ValueError:
    CADENCE = 60

KNOWN_FAULTS = {
    "unconfigured-refuses", "stream-ungated", "preflight-gated", "nonjson-revoked",
    "grace-default", "404-old-checked-at", "restart-restamp", "grace-drops-checked-at",
    "cache-past-window", "workers-forget", "404-own-cadence",
}


def log(msg):
    print("entrunner: " + msg, file=sys.stderr, flush=True)


def parse_time(s):
    """An RFC 3339 timestamp as epoch seconds, or None."""
    if not isinstance(s, str) or not RFC3339_RE.match(s):
        return None
    t = s.upper().replace("Z", "+00:00")
    try:
        return datetime.datetime.fromisoformat(t).timestamp()
    except ValueError:
        return None


def format_time(epoch):
    d = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


class Answer:
    """An answer the runner holds: the distributor's, or a 404's."""

    def __init__(self, state, checked_at, stale, grace, access_ends_at=None, source="answer"):
        self.state = state  # "active" | "revoked"
        self.checked_at = checked_at  # the string, as received (or our own for a 404)
        self.at = parse_time(checked_at)
        self.stale = stale
        self.grace = grace  # None where never told one
        self.access_ends_at = access_ends_at
        self.source = source  # "answer" | "404"

    def window_end(self):
        end = self.at + self.stale
        if "cache-past-window" in FAULTS and self.grace is not None:
            end += self.grace
        return end

    def grace_end(self):
        return self.at + self.stale + (self.grace or 0)

    def to_json(self):
        d = {"state": self.state, "checked_at": self.checked_at,
             "stale_after_seconds": self.stale, "source": self.source}
        if self.grace is not None:
            d["grace_seconds"] = self.grace
        if self.access_ends_at is not None:
            d["access_ends_at"] = self.access_ends_at
        return d

    @staticmethod
    def from_json(d):
        if not isinstance(d, dict) or d.get("state") not in ("active", "revoked"):
            return None
        if parse_time(d.get("checked_at")) is None or not is_count(d.get("stale_after_seconds")):
            return None
        grace = d.get("grace_seconds")
        if grace is not None and not is_count(grace):
            return None
        ends = d.get("access_ends_at")
        if ends is not None and parse_time(ends) is None:
            return None
        return Answer(d["state"], d["checked_at"], d["stale_after_seconds"], grace, ends,
                      "404" if d.get("source") == "404" else "answer")


class Unreachable(Exception):
    pass


class Client:
    """The entitlement client: checks, caches, persists, and judges."""

    def __init__(self, base, token, state_dir):
        self.base = base.rstrip("/")
        self.token = token
        self.state_dir = state_dir
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.held = None
        self.in_flight = False
        self.attempts = 0  # completed attempts, for waiters
        self.last_failed = None  # when the last attempt failed, or None
        self.wake = threading.Event()
        u = urllib.parse.urlsplit(self.base)
        self.scheme, self.host, self.port = u.scheme, u.hostname, u.port
        self.path = (u.path or "") + "%s/entitlements/%s" % (PREFIX, AGENT)
        if self.scheme == "http":
            log("distributor %s is plain HTTP: the token is sent only if the connected "
                "peer is a loopback address (§7)" % self.base)
        self.load()

    # persistence (§5.4, §5.7.2)

    def key(self):
        return hashlib.sha256(("%s\n%s\n%s" % (self.base, AGENT, self.token)).encode()).hexdigest()

    def state_file(self):
        return os.path.join(self.state_dir, "entrunner-entitlement.json") if self.state_dir else None

    def load(self):
        path = self.state_file()
        if not path:
            return
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return
        if not isinstance(doc, dict) or doc.get("key") != self.key():
            return
        a = Answer.from_json(doc.get("answer"))
        if a is None:
            return
        if "restart-restamp" in FAULTS:
            a.checked_at = format_time(time.time())
            a.at = parse_time(a.checked_at)
        self.held = a
        log("loaded a persisted %s answer checked at %s" % (a.state, a.checked_at))

    def save(self, a):
        path = self.state_file()
        if not path or "workers-forget" in FAULTS:
            return
        tmp = path + ".tmp"
        try:
            os.makedirs(self.state_dir, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"key": self.key(), "answer": a.to_json()}, f)
            os.replace(tmp, path)
        except OSError as e:
            log("could not persist the answer: %s" % e)

    # the check itself (§5.3)

    def fetch(self):
        """One check: an Answer, "404", or raises Unreachable."""
        try:
            if self.scheme == "https":
                conn = http.client.HTTPSConnection(self.host, self.port, timeout=CHECK_TIMEOUT,
                                                   context=ssl.create_default_context())
            elif self.scheme == "http":
                conn = http.client.HTTPConnection(self.host, self.port, timeout=CHECK_TIMEOUT)
            else:
                raise Unreachable("unsupported scheme %r" % self.scheme)
            try:
                conn.connect()
                if self.scheme == "http":
                    peer = conn.sock.getpeername()[0]
                    if not ipaddress.ip_address(peer.split("%")[0]).is_loopback:
                        raise Unreachable("refusing to send the token in plaintext to %s (§7)" % peer)
                conn.request("GET", self.path, headers={
                    "Authorization": "Bearer " + self.token,
                    "Accept": "application/json",
                })
                resp = conn.getresponse()
                body = resp.read(MAX_ANSWER + 1)
                status = resp.status
            finally:
                conn.close()
        except Unreachable:
            raise
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise Unreachable("transport: %s" % e)
        if status == 404:
            return "404"
        if status != 200:
            raise Unreachable("status %d" % status)
        if len(body) > MAX_ANSWER:
            raise Unreachable("answer larger than %d bytes" % MAX_ANSWER)
        try:
            doc = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            if "nonjson-revoked" in FAULTS:
                return "404"
            raise Unreachable("a 200 whose body is not JSON")
        return self.validate(doc)

    def validate(self, doc):
        if not isinstance(doc, dict):
            raise Unreachable("a 200 whose body is not an object")
        if not isinstance(doc.get("postern"), str):
            raise Unreachable("no postern version")
        if doc.get("state") not in ("active", "revoked"):
            raise Unreachable("state %r" % doc.get("state"))
        if doc.get("agent_id") != AGENT:
            raise Unreachable("an answer for %r, not %r (§5.3)" % (doc.get("agent_id"), AGENT))
        if parse_time(doc.get("checked_at")) is None:
            raise Unreachable("checked_at is no RFC 3339 timestamp")
        if not is_count(doc.get("stale_after_seconds")):
            raise Unreachable("stale_after_seconds missing or no count")
        grace = doc.get("grace_seconds")
        if grace is None and "grace-default" in FAULTS:
            grace = 86400
        if not is_count(grace):
            raise Unreachable("grace_seconds missing or no count")
        ends = doc.get("access_ends_at")
        if ends is not None and parse_time(ends) is None:
            raise Unreachable("access_ends_at is no RFC 3339 timestamp")
        return Answer(doc["state"], doc["checked_at"], doc["stale_after_seconds"], grace, ends)

    def attempt(self):
        """Run one check (the caller has set in_flight) and record its outcome."""
        try:
            got = self.fetch()
            err = None
        except Unreachable as e:
            got, err = None, str(e)
        now = time.time()
        with self.lock:
            prev = self.held
            if got == "404":
                stale = prev.stale if prev is not None and "404-own-cadence" not in FAULTS else CADENCE
                grace = prev.grace if prev is not None else None
                got = Answer("revoked", format_time(now), stale, grace, None, "404")
                if "404-old-checked-at" in FAULTS and prev is not None:
                    # Times its cadence from the 404, but reports the last
                    # timestamp a distributor gave, §4.4 over-applied.
                    got.checked_at = prev.checked_at
            if got is not None:
                self.held = got
                self.last_failed = None
            else:
                self.last_failed = now
                log("distributor unreachable: %s" % err)
            self.in_flight = False
            self.attempts += 1
            self.cond.notify_all()
        if got is not None:
            self.save(got)
        self.wake.set()

    def start_attempt_locked(self):
        """Start a check unless one is in flight or one just failed."""
        if self.in_flight:
            return True
        if self.last_failed is not None and time.time() - self.last_failed < RETRY_MIN:
            return False
        self.in_flight = True
        threading.Thread(target=self.attempt, daemon=True).start()
        return True

    def due_locked(self, now):
        return self.held is None or now >= self.held.window_end()

    def refresh(self):
        """On a request: re-check if the answer has expired (§5.4), waiting a little."""
        with self.lock:
            if "workers-forget" in FAULTS and not self.in_flight:
                # A fresh worker: nothing held, nothing failed yet.
                self.held, self.last_failed = None, None
            if not self.due_locked(time.time()):
                return
            seen = self.attempts
            if not self.start_attempt_locked():
                return
            deadline = time.time() + REQUEST_WAIT
            while self.attempts == seen:
                left = deadline - time.time()
                if left <= 0:
                    break
                self.cond.wait(left)

    def background(self):
        """Check at start, at each deadline, and keep trying while unreachable."""
        backoff = RETRY_MIN
        while True:
            with self.lock:
                now = time.time()
                if self.due_locked(now):
                    if self.last_failed is None or now - self.last_failed >= backoff:
                        started = self.start_attempt_locked()
                        if started and self.last_failed is not None:
                            backoff = min(backoff * 2, 5.0)
                    if self.last_failed is None:
                        backoff = RETRY_MIN
                    wait = backoff
                else:
                    backoff = RETRY_MIN
                    wait = self.held.window_end() - now
            self.wake.wait(max(0.05, min(wait, 30.0)))
            self.wake.clear()

    # judging (§4.4, §5.7.4)

    def view(self):
        """(status entitlement block, refusal or None) at this moment."""
        now = time.time()
        with self.lock:
            a = self.held
            if a is None:
                return {"state": "unknown"}, (503, "unavailable",
                                              "The distributor has not been reached yet; retry later.", None)
            block = {"state": a.state, "checked_at": a.checked_at, "stale_after_seconds": a.stale}
            if a.grace is not None:
                block["grace_seconds"] = a.grace
            if a.access_ends_at is not None:
                block["access_ends_at"] = a.access_ends_at
            if now < a.window_end():
                if a.state == "active":
                    return block, None
                detail = {"access_ends_at": a.access_ends_at} if a.access_ends_at else None
                return block, (403, "not_entitled", "This agent's entitlement is not in force.", detail)
            # Expired and not replaced: unknown, the anchor kept (§5.7.1).
            block["state"] = "unknown"
            within = now < a.grace_end()
            if a.state == "active" and within:
                if "grace-drops-checked-at" in FAULTS:
                    block.pop("checked_at", None)
                    return block, (503, "unavailable", "The distributor cannot be reached.", None)
                if CAUTIOUS:
                    return block, (503, "unavailable",
                                   "The distributor cannot be reached; this runner does not run in grace.", None)
                return block, None
            return block, (503, "unavailable",
                           "The distributor cannot be reached and the entitlement has lapsed.", None)


class Unconfigured:
    def refresh(self):
        pass

    def view(self):
        if "unconfigured-refuses" in FAULTS:
            return {"state": "unknown"}, (503, "unavailable", "No entitlement answer.", None)
        return {"state": "not_required"}, None


def describe_doc():
    return {
        "postern": VERSION,
        "agent": {"id": AGENT, "name": "Indie Echo", "version": "0.3.1",
                  "summary": "Repeats its brief back, from an independent runner."},
        "inputs": [{"key": "prompt", "label": "Brief", "type": "text", "required": True,
                    "default": None, "validation": {"max_length": 2000}}],
        "output": {"type": "text", "example": "You said: hello"},
        "capabilities": {"tools": [], "write_tools": []},
        "credentials": [],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "entrunner/0.3"
    timeout = 15

    def log_message(self, fmt, *args):
        pass

    def __getattr__(self, name):
        if name.startswith("do_"):
            return self.other_method
        raise AttributeError(name)

    # plumbing

    def cors(self):
        origin = self.headers.get("Origin")
        h = [("Vary", "Origin")]
        if origin is not None and origin in ORIGINS:
            h.append(("Access-Control-Allow-Origin", origin))
        return h

    def send(self, status, doc, extra=(), close=False):
        body = json.dumps(doc).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in list(self.cors()) + list(extra):
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def refuse(self, status, code, message, detail=None, extra=(), close=True):
        self.send(status, {"error": {"code": code, "message": message, "detail": detail}},
                  extra, close)

    def route(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == PREFIX or path.startswith(PREFIX + "/"):
            return path[len(PREFIX):]
        return None

    def authorized(self):
        if not INBOUND:
            return True
        got = self.headers.get("Authorization", "")
        return secrets.compare_digest(got.encode(), ("Bearer " + INBOUND).encode())

    def has_body(self):
        return ("Content-Length" in self.headers and self.headers["Content-Length"] != "0") or \
            "Transfer-Encoding" in self.headers

    # verbs

    def do_OPTIONS(self):
        verb = self.route()
        if verb is None:
            return self.plain_404()
        allow = {"/run": "POST, OPTIONS", "/stream": "POST, OPTIONS",
                 "/describe": "GET, OPTIONS", "/status": "GET, OPTIONS"}.get(verb)
        if allow is None:
            return self.refuse(404, "not_found", "No such Postern path.")
        if "preflight-gated" in FAULTS and verb in ("/run", "/stream"):
            ENT.refresh()  # the entitlement middleware, applied to every method
            if ENT.view()[1] is not None:
                return self.refuse(403, "not_entitled", "This agent's entitlement is not in force.")
        origin = self.headers.get("Origin")
        self.send_response(204)
        self.send_header("Vary", "Origin")
        if origin is not None and origin in ORIGINS:
            headers = "Content-Type, Authorization" if INBOUND else "Content-Type"
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Access-Control-Allow-Methods", allow)
            self.send_header("Access-Control-Allow-Headers", headers)
            self.send_header("Access-Control-Max-Age", "600")
        self.send_header("Content-Length", "0")
        if self.has_body():
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()

    def admit(self, mine, others, other_method):
        """The verb of a request this method serves, or None once refused."""
        verb = self.route()
        if verb is None:
            self.plain_404()
        elif verb in others:
            self.wrong_method(other_method)
        elif verb not in mine:
            self.refuse(404, "not_found", "No such Postern path.")
        elif not self.authorized():
            self.refuse(401, "unauthorized", "This runner requires its own credential.",
                        extra=[("WWW-Authenticate", "Bearer")])
        else:
            return verb
        return None

    def do_GET(self):
        verb = self.admit(("/describe", "/status"), ("/run", "/stream"), "POST")
        if verb is None:
            return
        close = self.has_body()
        if verb == "/describe":
            return self.send(200, describe_doc(), close=close)
        ENT.refresh()
        block, _ = ENT.view()
        return self.send(200, {
            "postern": VERSION,
            "level": LEVEL,
            "state": "ready",
            "agent": {"id": AGENT, "version": "0.3.1"},
            "entitlement": block,
            "credentials": {"satisfied": True, "missing": []},
        }, close=close)

    def do_POST(self):
        verb = self.admit(("/run", "/stream"), ("/describe", "/status"), "GET")
        if verb is None:
            return
        # 1: the level (§3)
        if verb == "/stream" and LEVEL < 3:
            return self.refuse(501, "not_implemented", "This runner is Level 2: it does not stream.")
        # 2: the entitlement (§5.7.4)
        if not (verb == "/stream" and "stream-ungated" in FAULTS):
            ENT.refresh()
            _, refusal = ENT.view()
            if refusal is not None:
                return self.refuse(*refusal)
        # 3: the media type, before the body is read (§2.3)
        ctype = self.headers.get("Content-Type", "")
        if ctype.split(";", 1)[0].strip().lower() != "application/json":
            return self.refuse(400, "bad_request", "The body must be application/json.")
        body = self.read_body()
        if body is None:
            return self.refuse(400, "bad_request", "The body could not be read.")
        # 4: the inputs (§4.2)
        try:
            doc = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return self.refuse(400, "bad_request", "The body is not JSON.")
        inputs = doc.get("inputs") if isinstance(doc, dict) else None
        if not isinstance(inputs, dict):
            return self.refuse(400, "bad_request", "The body must carry an `inputs` object.")
        for k, v in inputs.items():
            if isinstance(v, bool) or not (v is None or isinstance(v, (str, int, float))):
                return self.refuse(400, "bad_request", "Input `%s` is no string, number or null." % k)
        prompt = inputs.get("prompt")
        if not isinstance(prompt, str):
            return self.refuse(400, "bad_request", "Input `prompt` is required and must be text.")
        if len(prompt) > 2000:
            return self.refuse(400, "bad_request", "Input `prompt` is longer than 2000 characters.")
        # 5: credentials: none declared. Run the agent.
        log("agent executed")
        run_id = "run-" + secrets.token_hex(8)
        result = {"postern": VERSION, "run_id": run_id,
                  "output": {"type": "text", "value": "You said: " + prompt}}
        if verb == "/run":
            return self.send(200, result)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        for k, v in self.cors():
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        for name, payload in (("start", {"run_id": run_id}),
                              ("delta", {"text": result["output"]["value"]}),
                              ("done", result)):
            self.wfile.write(("event: %s\ndata: %s\n\n" % (name, json.dumps(payload))).encode())
            self.wfile.flush()

    def other_method(self):
        verb = self.route()
        if verb is None:
            return self.plain_404()
        allow = {"/run": "POST", "/stream": "POST", "/describe": "GET", "/status": "GET"}.get(verb)
        if allow is None:
            return self.refuse(404, "not_found", "No such Postern path.")
        return self.wrong_method(allow)

    def wrong_method(self, allow):
        self.refuse(405, "bad_request", "This path answers %s." % allow,
                    extra=[("Allow", allow + ", OPTIONS")])

    def plain_404(self):
        body = b"not found\n"
        self.send_response(404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        """The request body, bounded, or None where it is broken or withheld."""
        self.close_connection = True  # whatever happens, this connection ends here
        try:
            self.connection.settimeout(5)
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                out = bytearray()
                while True:
                    line = self.rfile.readline(1024)
                    size = int(line.split(b";", 1)[0].strip() or b"x", 16)
                    if size == 0:
                        self.rfile.readline(1024)
                        return bytes(out)
                    if len(out) + size > MAX_BODY:
                        return None
                    chunk = self.rfile.read(size)
                    if len(chunk) != size:
                        return None
                    out += chunk
                    self.rfile.readline(1024)
            n = int(self.headers.get("Content-Length", "0"))
            if n < 0 or n > MAX_BODY:
                return None
            body = self.rfile.read(n)
            return body if len(body) == n else None
        except (OSError, ValueError, socket.timeout):
            return None


def main():
    args = sys.argv[1:]
    port, host = 0, "127.0.0.1"
    i = 0
    while i < len(args):
        if args[i] == "--port" and i + 1 < len(args):
            port = int(args[i + 1])
            i += 2
        elif args[i] == "--host" and i + 1 < len(args):
            host = args[i + 1]
            i += 2
        else:
            print("usage: entrunner.py [--port N] [--host ADDR]", file=sys.stderr)
            sys.exit(2)
    unknown = FAULTS - KNOWN_FAULTS
    if unknown:
        print("entrunner: unknown fault(s): %s" % ", ".join(sorted(unknown)), file=sys.stderr)
        sys.exit(2)
    if not AGENT_ID_RE.match(AGENT) or len(AGENT) > 128:
        print("entrunner: %r is no agent identifier (§1.5)" % AGENT, file=sys.stderr)
        sys.exit(2)
    global ENT
    base = env("ENTRUNNER_DISTRIBUTOR").strip()
    if base:
        ENT = Client(base, env("ENTRUNNER_TOKEN"), env("ENTRUNNER_STATE"))
        if "workers-forget" not in FAULTS:  # a worker has no background
            threading.Thread(target=ENT.background, daemon=True).start()
    else:
        ENT = Unconfigured()
    srv = ThreadingHTTPServer((host, port), Handler)
    srv.daemon_threads = True
    print("POSTERN_PORT=%d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


ENT = None

if __name__ == "__main__":
    main()
