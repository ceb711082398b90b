#!/usr/bin/env python3
"""A stand-in Postern runner for testing the clients beside it: conformant,
with one latitude SPEC allows per posture (or a stated refusal).

    python3 standin.py POSTURE [--log FILE]

Prints POSTERN_PORT=<port> (§2) once it listens on loopback, and appends one
JSON line per request it receives to FILE. POSTURES below lists them.
"""
import argparse, base64, json, re, socket, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")
TEXT = {"key": "topic", "label": "Topic", "type": "text", "required": True, "default": None, "validation": {"max_length": 40}}
TONE = {"key": "tone", "label": "Tone", "type": "select", "required": False, "default": "plain",
        "validation": {"options": ["plain", "bold"]}}
POSTURES = {
    # name: what it changes from the plain Level 3 runner
    "plain": {},
    "comments": {"sse": {"comments": True}},
    "multiline": {"sse": {"multiline": True}},
    "crlf": {"sse": {"eol": "\r\n"}},
    "cr": {"sse": {"eol": "\r"}},
    "nospace": {"sse": {"space": False}},
    "fields": {"sse": {"ids": True}},  # id:, retry: and a field nobody defined
    "split": {"sse": {"split": 3}},    # the stream written three bytes at a time
    "grammar": {"sse": {"comments": True, "multiline": True, "eol": "mixed", "space": False, "ids": True,
                        "split": 5, "bom": True, "ctype": "Text/Event-Stream; Charset=UTF-8"}},
    "unknown-event": {"extra_events": True},
    "delta-mismatch": {"deltas": ["Echo", " — draft"]},
    "no-deltas": {"deltas": []},
    "started-latency": {"started_latency": True},
    "unknown-output": {"output": {"type": "hologram", "value": "AAEC"}},
    "bytes-upper": {"output": {"type": "bytes", "media_type": "IMAGE/PNG", "value": base64.b64encode(PNG).decode()}},
    "unknown-input": {"inputs": [
        {"key": "Topic", "label": "Topic", "type": "text", "required": True, "default": None,
         "validation": {"max_length": 3, "pattern": "^[a-z]+$"}},
        {"key": "when", "label": "When", "type": "date", "required": True, "default": None,
         "validation": {"format_hint": "iso-8601"}},
        {"key": "count", "label": "Count", "type": "number", "required": True, "default": None,
         "validation": {"min": 2, "max": 5, "step_hint": 1}},
        {"key": "tone", "label": "Tone", "type": "select", "required": True, "default": None,
         "validation": {"options": ["dry", "warm"]}}]},
    "extra-members": {"extra_members": True},
    "error-4xx": {"refuse": (429, {"error": {"code": "slow_down", "message": "Too many runs today.", "detail": None}})},
    "error-5xx": {"refuse": (502, {"error": {"code": "upstream_gone", "message": "The model host went away.", "detail": None}})},
    "error-event": {"error_event": {"error": {"code": "quota_spent", "message": "The agent ran out of quota.", "detail": None}}},
    "error-sibling": {"refuse": (500, {"error": {"code": "agent_error", "message": "The crew crashed.", "detail": None},
                                       "trace": "ab12"})},
    "status-busy": {"status_refuse": (503, {"error": {"code": "unavailable", "message": "Warming up.", "detail": None}})},
    "busy": {"refuse": (503, {"error": {"code": "unavailable", "message": "Another run is in flight.", "detail": None}})},
    "level2": {"level": 2},
    "level1": {"level": 1},
    "leak": {"credentials": [{"env": "ECHO_KEY", "value": "sk-live-4f9a8b7c6d5e"}]},
    "leak-purpose": {"credentials": [{"env": "ECHO_KEY", "purpose": "Use sk-live-4f9a8b7c6d5e3f2a, the team key."}]},
    "drop": {"drop": True},
}


def describe(p):
    doc = {"postern": "0.1", "agent": {"id": "standin/echo", "name": "Echo", "version": "1.0.0"},
           "inputs": p.get("inputs", [TEXT, TONE]),
           "output": {k: v for k, v in p.get("output", {"type": "text"}).items() if k in ("type", "media_type")},
           "capabilities": {"tools": ["search", "file_write"], "write_tools": ["file_write"]},
           "credentials": p.get("credentials", [{"env": "ECHO_KEY", "purpose": "Calls the model."}])}
    if p.get("level") == 2 or p.get("extra_members"):
        doc["capabilities"]["streaming"] = True  # withdrawn (§4.1): means nothing now
    if p.get("extra_members"):
        doc["catalogue_rank"] = 3
        for d in doc["inputs"]:
            d["placeholder"], d["validation"]["hint"] = "say something", "free text"
    return doc


def status(p):
    doc = {"postern": "0.1", "level": p.get("level", 3), "state": "ready",
           "agent": {"id": "standin/echo", "version": "1.0.0"}, "entitlement": {"state": "not_required"}}
    if p.get("extra_members"):
        doc["uptime_seconds"], doc["entitlement"]["note"] = 12, "free"
    return doc


def check(p, body):
    """The runner's own validation of a request body (§4.2): an error body or None."""
    inputs = body.get("inputs") if isinstance(body, dict) else None
    if not isinstance(inputs, dict):
        return "inputs must be an object"
    for d in describe(p)["inputs"]:
        v, val = inputs.get(d["key"]), d.get("validation", {})
        if v is None:
            if d["required"]:
                return f"{d['key']} is required"
            continue
        if d["type"] == "number":
            if not isinstance(v, (int, float)) or not val.get("min", v) <= v <= val.get("max", v):
                return f"{d['key']} is out of range"
        elif not isinstance(v, str) or (d["type"] == "select" and v not in val["options"]) \
                or len(v) > val.get("max_length", len(v)) or not re.search(val.get("pattern", ""), v):
            return f"{d['key']} is not valid"
    return None


def events(p, value, out):
    ev = [("start", {"run_id": "r-1"})]
    ev.append(("step", {"name": "draft", "status": "started", **({"latency_ms": 5} if p.get("started_latency") else {})}))
    ev.append(("step", {"name": "draft", "status": "finished", "latency_ms": 12}))
    if out["type"] == "text":
        parts = p.get("deltas", [value[:3], value[3:]])
        for i, t in enumerate(parts):
            ev.append(("delta", {"text": t}))
            if p.get("extra_events") and i == 0:
                ev += [("progress", {"percent": 50}), ("message", {"text": "not a delta"})]
    if p.get("error_event"):
        return ev + [("error", p["error_event"])]
    return ev + [("done", {"postern": "0.1", "run_id": "r-1", "output": out})]


def frame(name, payload, s, n):
    """One event, serialised with the latitudes style s asks for."""
    eol = s.get("eol", "\n")
    if eol == "mixed":
        eol = ["\n", "\r\n", "\r"][n % 3]
    sep = ":" if s.get("space") is False else ": "
    data = json.dumps(payload, indent=1 if s.get("multiline") else None, ensure_ascii=False).split("\n")
    lines = [f": keep-alive {n}"] if s.get("comments") else []
    if s.get("ids"):
        lines += [f"id{sep}{n}", f"retry{sep}5", f"colour{sep}blue"]
    lines += [f"event{sep}{name}"] + [f"data{sep}{d}" for d in data]
    if name == "message":
        lines = [f"data{sep}{d}" for d in data]  # no event: field at all
    return eol.join(lines) + eol + eol


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def record(self, body):
        if LOG:
            with open(LOG, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path,
                                    "content_type": self.headers.get("Content-Type"), "body": body}) + "\n")

    def send(self, code, doc, ctype="application/json; charset=utf-8"):
        raw = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def refuse(self, code, name, message):
        self.send(code, {"error": {"code": name, "message": message, "detail": None}})

    def do_GET(self):
        self.record(None)
        if self.path == "/postern/v0/describe":
            return self.send(200, describe(P))
        if self.path == "/postern/v0/status":
            if "status_refuse" in P:
                return self.send(*P["status_refuse"])
            return self.send(200, status(P))
        self.refuse(404, "not_found", "No such path.")

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.record(body)
        verb = self.path.rsplit("/", 1)[-1]
        if self.path not in ("/postern/v0/run", "/postern/v0/stream"):
            return self.refuse(404, "not_found", "No such path.")
        if {"run": 2, "stream": 3}[verb] > P.get("level", 3):
            return self.refuse(501, "not_implemented", f"This runner does not serve {verb}.")
        media = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if media != "application/json":
            return self.refuse(400, "bad_request", "The body must be application/json.")
        problem = check(P, body)
        if problem:
            return self.refuse(400, "bad_request", problem)
        if "refuse" in P:
            return self.send(*P["refuse"])
        value = "Echo — " + str(next(iter(body["inputs"].values())))
        out = P.get("output", {"type": "text", "value": value})
        if P.get("extra_members"):
            out = {**out, "language": "en"}
        if verb == "run":
            return self.send(200, {"postern": "0.1", "run_id": "r-1", "output": out, "usage": {"cost_usd": 0.0001},
                                   **({"trace": "ab12"} if P.get("extra_members") else {})})
        self.stream(events(P, value, out))

    def stream(self, evs):
        s = P.get("sse", {})
        self.send_response(200)
        self.send_header("Content-Type", s.get("ctype", "text/event-stream"))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        raw = ("\ufeff" if s.get("bom") else "").encode() + b"".join(
            frame(n, d, s, i).encode() for i, (n, d) in enumerate(evs))
        if P.get("drop"):
            raw = raw[: raw.index(b"event: done")]
        step = s.get("split") or len(raw)
        for i in range(0, len(raw), step):
            piece = raw[i:i + step]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            if s.get("split"):
                time.sleep(0.001)
        if P.get("drop"):
            self.connection.shutdown(socket.SHUT_RDWR)  # gone mid-run: no done, no last chunk
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("posture", choices=sorted(POSTURES))
    ap.add_argument("--log")
    a = ap.parse_args()
    P, LOG = POSTURES[a.posture], a.log
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"POSTERN_PORT={srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
