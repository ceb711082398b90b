#!/usr/bin/env python3
"""slowrunner: a deliberately slow Level 3 Postern runner, for testing a checker.

Written independently from the Postern 0.1 draft (sections 2-4). It serves one
agent taking one required text input, `prompt` (at most 200 characters), and
returning text. The agent takes a while and reports progress as it goes, which
is what makes the timing rules (time limit, concurrency, disconnect, held
idempotent repeats) observable from outside.

Launch: binds 127.0.0.1 on a free port and prints `POSTERN_PORT=<port>` as its
first stdout line. Request logs go to stderr.

Environment:
  POSTERN_AGENT_SECONDS        how long one execution of the agent takes (1.5)
  POSTERN_MAX_RUN_SECONDS      declared and enforced run time limit, int (5)
  POSTERN_MAX_CONCURRENT       runs allowed in flight at once (1)
  POSTERN_RETENTION_SECONDS    how long an Idempotency-Key is remembered (600)
  POSTERN_BREACH               comma-separated list of deliberate bugs, below
  POSTERN_START_LOG            a file to append one line to per agent start

Breaches (each a plausible implementation mistake; none looks at request text):
  buffer               the whole stream, status line included, is written
                       only once the run has ended
  no-timeout           max_run_seconds is declared but never enforced
  timeout-500          a run stopped at the limit is reported 500 agent_error
  no-limit             max_concurrent_runs is declared but not enforced
  ready-while-running  status.state is always "ready"
  no-abort             a run whose client went away is carried on to the end
  hold-forever         a repeat held behind an in-flight key is released only
                       by a successful first run, and waits without bound

Standard library only (Python 3.11).
"""

import json
import os
import select
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/postern/v0/"
VERBS = {"describe": "GET", "status": "GET", "run": "POST", "stream": "POST"}
MAX_BODY = 1 << 20
TICK = 0.05

AGENT_SECONDS = float(os.environ.get("POSTERN_AGENT_SECONDS", "1.5"))
MAX_RUN_SECONDS = int(os.environ.get("POSTERN_MAX_RUN_SECONDS", "5"))
MAX_CONCURRENT = max(1, int(os.environ.get("POSTERN_MAX_CONCURRENT", "1")))
RETENTION_SECONDS = int(os.environ.get("POSTERN_RETENTION_SECONDS", "600"))
START_LOG = os.environ.get("POSTERN_START_LOG")
BREACHES = {b.strip() for b in os.environ.get("POSTERN_BREACH", "").split(",") if b.strip()}
KNOWN_BREACHES = {"buffer", "no-timeout", "timeout-500", "no-limit",
                  "ready-while-running", "no-abort", "hold-forever"}

AGENT_ID = "testdata/slow-writer"
AGENT_VERSION = "0.2.0"

DESCRIBE = {
    "postern": "0.1",
    "agent": {
        "id": AGENT_ID,
        "name": "Slow Writer",
        "version": AGENT_VERSION,
        "summary": "Takes its time over a short note about the prompt it is given.",
    },
    "inputs": [{
        "key": "prompt",
        "label": "Prompt",
        "type": "text",
        "required": True,
        "default": None,
        "validation": {"max_length": 200},
    }],
    "output": {"type": "text", "example": "A considered note on: tea"},
    "capabilities": {"tools": [], "write_tools": []},
    "credentials": [],
}


class Aborted(Exception):
    """The client went away; the run is cancelled and its output dropped."""


class TimedOut(Exception):
    """The run reached max_run_seconds."""


class Refusal(Exception):
    def __init__(self, status, code, message, detail=None):
        super().__init__(message)
        self.status, self.code, self.message, self.detail = status, code, message, detail


def envelope(code, message, detail=None):
    return {"error": {"code": code, "message": message, "detail": detail}}


def timeout_outcome():
    if "timeout-500" in BREACHES:
        return 500, envelope("agent_error", "The agent failed.")
    return 504, envelope("run_timeout",
                         f"The run reached the {MAX_RUN_SECONDS}s limit and was stopped.",
                         {"max_run_seconds": MAX_RUN_SECONDS})


# --------------------------------------------------------------------------
# Shared runner state: runs in flight and the idempotency keyspace.

class Execution:
    """One execution of the agent, possibly bound to an Idempotency-Key."""

    def __init__(self, inputs):
        self.run_id = "run-" + uuid.uuid4().hex[:16]
        self.inputs = inputs
        self.started = time.monotonic()
        self.finished = None
        self.result = None        # (http_status, body) once answered
        self.abandoned = False    # aborted: nothing to replay


class State:
    def __init__(self):
        self.cond = threading.Condition()
        self.active = 0
        self.keys = {}            # Idempotency-Key -> Execution

    def purge(self):
        now = time.monotonic()
        for k, ex in list(self.keys.items()):
            if ex.finished is not None and now - ex.finished > RETENTION_SECONDS:
                del self.keys[k]

    def admit(self, key, inputs, gone):
        """Decide what a valid request gets. Returns ("run", ex) for a fresh
        execution that now holds a slot, or ("replay", ex) for an answered
        one. Raises Refusal, or Aborted if a held client goes away."""
        with self.cond:
            while True:
                self.purge()
                ex = self.keys.get(key) if key else None
                if ex is not None:
                    if ex.inputs != inputs:
                        raise Refusal(409, "idempotency_conflict",
                                      "This Idempotency-Key was already used with different inputs.")
                    if ex.result is not None and (
                            "hold-forever" not in BREACHES or ex.result[0] == 200):
                        return "replay", ex
                    if ex.result is None or "hold-forever" in BREACHES:
                        self._hold(ex, gone)
                        continue
                if "no-limit" not in BREACHES and self.active >= MAX_CONCURRENT:
                    raise Refusal(503, "unavailable",
                                  "Another run is in flight; try again shortly.")
                ex = Execution(inputs)
                self.active += 1
                if key:
                    self.keys[key] = ex
                return "run", ex

    def _hold(self, ex, gone):
        """Wait (lock held) for an in-flight execution under the same key."""
        bounded = "hold-forever" not in BREACHES
        limit = ex.started + MAX_RUN_SECONDS + 1.0
        while True:
            if ex.abandoned:
                return            # key released: caller re-evaluates
            if ex.result is not None and (bounded or ex.result[0] == 200):
                return
            if bounded and time.monotonic() >= limit:
                raise Refusal(503, "unavailable",
                              "An earlier request with this Idempotency-Key is still running.")
            if gone():
                raise Aborted()
            self.cond.wait(TICK)

    def finish(self, ex, key, result):
        with self.cond:
            self.active -= 1
            ex.finished = time.monotonic()
            if result is None:
                ex.abandoned = True
                if key and self.keys.get(key) is ex:
                    del self.keys[key]
            else:
                ex.result = result
            self.cond.notify_all()

    def busy(self):
        with self.cond:
            return self.active > 0


STATE = State()


# --------------------------------------------------------------------------
# The agent. A generator yielding ("sleep", seconds) or ("event", name, data);
# its return value is the output/usage part of the run response.

def agent(prompt):
    text = f"A considered note on: {prompt}\n\nIt took {AGENT_SECONDS:g}s to write."
    q = max(1, len(text) // 4)
    parts = [text[:q], text[q:2 * q], text[2 * q:3 * q], text[3 * q:]]
    t = AGENT_SECONDS
    steps = []

    t0 = time.monotonic()
    yield "event", "step", {"name": "draft", "model_id": "slow-model-1", "status": "started"}
    yield "sleep", t * 0.2
    yield "event", "delta", {"text": parts[0]}
    yield "sleep", t * 0.2
    yield "event", "delta", {"text": parts[1]}
    yield "sleep", t * 0.1
    ms = int((time.monotonic() - t0) * 1000)
    tokens = 20 + len(prompt) // 4
    steps.append({"name": "draft", "model_id": "slow-model-1", "input_tokens": tokens,
                  "output_tokens": len(text) // 4, "latency_ms": ms})
    yield "event", "step", {"name": "draft", "model_id": "slow-model-1",
                            "status": "finished", "latency_ms": ms}

    t1 = time.monotonic()
    yield "event", "step", {"name": "polish", "status": "started"}   # no model call
    yield "sleep", t * 0.2
    yield "event", "delta", {"text": parts[2]}
    yield "sleep", t * 0.2
    yield "event", "delta", {"text": parts[3]}
    yield "sleep", t * 0.1
    ms = int((time.monotonic() - t1) * 1000)
    steps.append({"name": "polish", "latency_ms": ms})
    yield "event", "step", {"name": "polish", "status": "finished", "latency_ms": ms}

    return {
        "output": {"type": "text", "value": text},
        "usage": {"input_tokens": tokens, "output_tokens": len(text) // 4,
                  "cost_usd": round(tokens * 2e-7, 8), "steps": steps},
    }


def drive(ex, prompt, emit, gone):
    """Run the agent under ex's deadline, polling for a vanished client.
    Returns the full run response body, or raises Aborted / TimedOut."""
    deadline = ex.started + MAX_RUN_SECONDS
    enforce = "no-timeout" not in BREACHES
    abort = "no-abort" not in BREACHES

    def checkpoint():
        if enforce and time.monotonic() >= deadline:
            raise TimedOut()
        if abort and gone():
            raise Aborted()

    if START_LOG:
        with open(START_LOG, "a") as f:
            f.write(ex.run_id + "\n")
    gen = agent(prompt)
    try:
        while True:
            item = next(gen)
            if item[0] == "sleep":
                end = time.monotonic() + item[1]
                while True:
                    checkpoint()
                    now = time.monotonic()
                    if now >= end:
                        break
                    left = end - now
                    if enforce:
                        left = min(left, max(0.0, deadline - now) + 0.001)
                    time.sleep(min(TICK, left))
            else:
                checkpoint()
                emit(item[1], item[2])
    except StopIteration as stop:
        body = {"postern": "0.1", "run_id": ex.run_id}
        body.update(stop.value)
        return body


# --------------------------------------------------------------------------
# HTTP

def sse(name, data):
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode("utf-8")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "slowrunner/0.2"

    # ---- plumbing

    def client_gone(self):
        """True once the peer has closed: readable socket, zero-byte peek."""
        try:
            ready, _, _ = select.select([self.connection], [], [], 0)
            if not ready:
                return False
            return self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def send_json(self, status, body, extra=()):
        raw = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Vary", "Origin")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)

    def refuse(self, r, extra=()):
        self.send_json(r.status, envelope(r.code, r.message, r.detail), extra)

    def discard_body(self):
        """Drop an unread request body so the connection can be reused."""
        n = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or (n and not n.strip().isdigit()):
            self.close_connection = True
        elif n and int(n) > 0:
            if int(n) > MAX_BODY:
                self.close_connection = True
            else:
                self.rfile.read(int(n))

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
                if len(out) > MAX_BODY:
                    self.close_connection = True
                    raise Refusal(400, "bad_request", "The request body is too large.")
        n = self.headers.get("Content-Length", "0").strip() or "0"
        if not n.isdigit():
            self.close_connection = True
            raise Refusal(400, "bad_request", "Invalid Content-Length.")
        if int(n) > MAX_BODY:
            self.close_connection = True
            raise Refusal(400, "bad_request", "The request body is too large.")
        return self.rfile.read(int(n))

    # ---- dispatch

    def route(self):
        path = self.path.split("?", 1)[0]
        if not path.startswith(PREFIX):
            raw = b"not found\n"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(raw)
            return
        verb = path[len(PREFIX):]
        if verb not in VERBS:
            self.discard_body()
            self.refuse(Refusal(404, "not_found", f"No such path: {path}"))
            return
        if self.command == "OPTIONS":
            # No origins are configured, so every preflight is answered
            # without admitting anything: 204, no Access-Control-* headers.
            self.discard_body()
            self.send_response(204)
            self.send_header("Vary", "Origin")
            self.end_headers()
            return
        allowed = VERBS[verb]
        if self.command != allowed and not (self.command == "HEAD" and allowed == "GET"):
            self.discard_body()
            self.refuse(Refusal(405, "bad_request",
                                f"{path} takes {allowed}, not {self.command}."),
                        [("Allow", f"{allowed}, OPTIONS")])
            return
        if verb == "describe":
            self.send_json(200, DESCRIBE)
        elif verb == "status":
            self.send_json(200, self.status_body())
        else:
            self.execute(stream=(verb == "stream"))

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = route

    def status_body(self):
        running = STATE.busy() and "ready-while-running" not in BREACHES
        return {
            "postern": "0.1",
            "level": 3,
            "state": "running" if running else "ready",
            "agent": {"id": AGENT_ID, "version": AGENT_VERSION},
            "entitlement": {"state": "not_required"},
            "credentials": {"satisfied": True, "missing": []},
            "idempotent_retry": True,
            "limits": {
                "max_run_seconds": MAX_RUN_SECONDS,
                "max_concurrent_runs": MAX_CONCURRENT,
                "idempotency_retention_seconds": RETENTION_SECONDS,
            },
        }

    # ---- run and stream

    def parse_inputs(self):
        """§4.6 steps 3-5 (1 and 2 never refuse here: Level 3, no distributor).
        Returns the decoded inputs map or raises Refusal."""
        media = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            self.discard_body()
            raise Refusal(400, "bad_request", "The request body must be application/json.")
        raw = self.read_body()
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise Refusal(400, "bad_request", "The request body is not valid JSON.")
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), dict):
            raise Refusal(400, "bad_request", "The request body must be an object with an object `inputs`.")
        inputs = body["inputs"]
        for k, v in inputs.items():
            if isinstance(v, bool) or not isinstance(v, (str, int, float, type(None))):
                raise Refusal(400, "bad_request", f"Input '{k}' must be a string, number or null.")
        prompt = inputs.get("prompt")
        if prompt is None:
            raise Refusal(400, "bad_request", "Input 'prompt' is required.")
        if not isinstance(prompt, str):
            raise Refusal(400, "bad_request", "Input 'prompt' must be text.")
        if len(prompt) > 200:
            raise Refusal(400, "bad_request", "Input 'prompt' is longer than 200 characters.")
        # step 5: describe declares no credentials, so nothing can be missing.
        return inputs

    def execute(self, stream):
        key = self.headers.get("Idempotency-Key", "").strip() or None
        try:
            inputs = self.parse_inputs()
            kind, ex = STATE.admit(key, inputs, self.client_gone)
        except Refusal as r:
            self.refuse(r)
            return
        except Aborted:
            self.close_connection = True
            return
        if kind == "replay":
            self.replay(ex, stream)
        elif stream:
            self.run_stream(ex, key, inputs["prompt"])
        else:
            self.run_single(ex, key, inputs["prompt"])

    def replay(self, ex, stream):
        status, body = ex.result
        if not stream:
            self.send_json(status, body)
            return
        out = self.open_stream()
        out(sse("start", {"run_id": ex.run_id}))
        out(sse("done" if status == 200 else "error", body))
        out(end=True)

    def run_single(self, ex, key, prompt):
        result = None
        try:
            body = drive(ex, prompt, lambda name, data: None, self.client_gone)
            result = (200, body)
        except TimedOut:
            result = timeout_outcome()
        except Aborted:
            self.close_connection = True
            return
        finally:
            STATE.finish(ex, key, result)
        try:
            self.send_json(*result)
        except OSError:
            self.close_connection = True   # finished; the answer was lost

    def open_stream(self):
        """Write the stream head; return a writer taking bytes (end=True to finish).
        Under `buffer`, everything is held back until the end instead."""
        self.close_connection = True
        head = ("HTTP/1.1 200 OK\r\n"
                "Content-Type: text/event-stream\r\n"
                "Cache-Control: no-cache\r\n"
                "Vary: Origin\r\n"
                "Connection: close\r\n"
                f"Date: {self.date_time_string()}\r\n"
                f"Server: {self.version_string()}\r\n\r\n").encode("ascii")
        self.log_request(200)
        pending = bytearray(head)
        buffered = "buffer" in BREACHES
        failed = []

        def write(chunk=b"", end=False):
            pending.extend(chunk)
            if buffered and not end:
                return
            if failed or not pending:
                return
            try:
                self.wfile.write(bytes(pending))
                self.wfile.flush()
            except OSError:
                failed.append(True)
                if "no-abort" not in BREACHES:
                    raise Aborted()
            finally:
                pending.clear()

        write()
        return write

    def run_stream(self, ex, key, prompt):
        result = None
        out = None
        try:
            out = self.open_stream()
            out(sse("start", {"run_id": ex.run_id}))
            body = drive(ex, prompt, lambda name, data: out(sse(name, data)), self.client_gone)
            result = (200, body)
            out(sse("done", body))
        except TimedOut:
            result = timeout_outcome()
            try:
                out(sse("error", result[1]))
            except Aborted:
                pass
        except Aborted:
            result = None
        finally:
            STATE.finish(ex, key, result)
        if out is not None:
            try:
                out(end=True)
            except Aborted:
                pass

    def log_message(self, fmt, *args):
        sys.stderr.write("slowrunner: %s %s\n" % (self.address_string(), fmt % args))


def main():
    unknown = BREACHES - KNOWN_BREACHES
    if unknown:
        sys.stderr.write(f"slowrunner: unknown breach(es): {', '.join(sorted(unknown))}\n")
        sys.exit(2)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"POSTERN_PORT={server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
