#!/usr/bin/env python3
"""An independent Postern runner (Level 3), written from SPEC.md alone, to
point the checker at something the fixture did not shape."""
import json, os, re, sys, threading, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ORIGINS = [o for o in os.environ.get("ALLOWED_ORIGINS", "").split(",") if o]
AGENT = {"id": "py/echo-agent", "name": "Echo", "version": "0.3.1", "summary": "Echoes a topic."}
INPUTS = [
    {"key": "topic", "label": "Topic", "type": "text", "required": True, "default": None, "validation": {"max_length": 50}},
    {"key": "tone", "label": "Tone", "type": "select", "required": False, "default": "plain",
     "validation": {"options": ["plain", "bold"]}},
]
DESCRIBE = {"postern": "0.1", "agent": AGENT, "inputs": INPUTS, "output": {"type": "text", "example": "Echo: x"},
            "capabilities": {"tools": [], "write_tools": []},
            "credentials": [{"env": "PY_ECHO_KEY", "purpose": "Pretends to call a model."}]}
ENV = {"PY_ECHO_KEY": os.environ.get("PY_ECHO_KEY", "set")}
START_LOG = os.environ.get("POSTERN_START_LOG")  # a file given one line per agent start

def note_start(run_id):
    if START_LOG:
        with open(START_LOG, "a") as f:
            f.write(run_id + "\n")

def status_doc():
    missing = [k for k, v in ENV.items() if not v]
    return {"postern": "0.1", "level": 3, "state": "degraded" if missing else "ready",
            "agent": {"id": AGENT["id"], "version": AGENT["version"]},
            "entitlement": {"state": "not_required"},
            "credentials": {"satisfied": not missing, "missing": missing},
            "limits": {"max_concurrent_runs": 4}}

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass

    def cors(self):
        o = self.headers.get("Origin")
        self.send_header("Vary", "Origin")
        if o and o != "null" and o in ORIGINS:
            self.send_header("Access-Control-Allow-Origin", o)

    def send_json(self, code, obj, close=False):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(b)))
        self.cors()
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(b)

    def refuse(self, code, err, msg, detail=None, close=False):
        self.send_json(code, {"error": {"code": err, "message": msg, "detail": detail}}, close)

    def verb(self):
        p = self.path.split("?")[0]
        return p[len("/postern/v0/"):] if p.startswith("/postern/v0/") else None

    def do_OPTIONS(self):
        v = self.verb()
        if v not in ("describe", "status", "run", "stream"):
            return self.refuse(404, "not_found", "No such path.")
        self.send_response(204)
        o = self.headers.get("Origin")
        self.send_header("Vary", "Origin")
        if o and o != "null" and o in ORIGINS:
            self.send_header("Access-Control-Allow-Origin", o)
            self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS" if v in ("run", "stream") else "GET, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "Content-Type")
            self.send_header("Access-Control-Max-Age", "300")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        v = self.verb()
        if v is None:
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
        if v == "describe": return self.send_json(200, DESCRIBE)
        if v == "status": return self.send_json(200, status_doc())
        if v in ("run", "stream"): return self.refuse(400, "bad_request", "Use POST.")
        return self.refuse(404, "not_found", "No such path.")

    def other(self):
        v = self.verb()
        if v in ("describe", "status", "run", "stream"):
            return self.refuse(400, "bad_request", "Wrong method.", close=True)
        return self.refuse(404, "not_found", "No such path.", close=True)
    do_PUT = do_DELETE = do_PATCH = other

    def do_POST(self):
        v = self.verb()
        if v not in ("run", "stream"):
            return self.refuse(404 if v not in ("describe", "status") else 400,
                               "not_found" if v not in ("describe", "status") else "bad_request", "No.", close=True)
        ct = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ct != "application/json":
            return self.refuse(400, "bad_request", "The body must be application/json.", close=True)
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw)
            assert isinstance(body, dict) and isinstance(body.get("inputs"), dict)
        except Exception:
            return self.refuse(400, "bad_request", "The body is not a JSON object with inputs.")
        inputs = body["inputs"]
        for d in INPUTS:
            val = inputs.get(d["key"])
            if val is None:
                if d["required"]:
                    return self.refuse(400, "bad_request", "Input %s is required." % d["key"])
                continue
            if isinstance(val, bool) or not isinstance(val, str):
                return self.refuse(400, "bad_request", "Input %s takes a string." % d["key"])
            vd = d.get("validation", {})
            if "max_length" in vd and len(val) > vd["max_length"]:
                return self.refuse(400, "bad_request", "Input %s is too long." % d["key"])
            if "options" in vd and val not in vd["options"]:
                return self.refuse(400, "bad_request", "Input %s is not an option." % d["key"])
        missing = [k for k, v in ENV.items() if not v]
        if missing:
            return self.refuse(424, "missing_credential", "Missing " + ", ".join(missing), {"missing": missing})
        run_id = uuid.uuid4().hex[:12]
        note_start(run_id)
        out = {"type": "text", "value": "Echo: " + inputs["topic"]}
        if v == "run":
            return self.send_json(200, {"postern": "0.1", "run_id": run_id, "output": out,
                                        "usage": {"input_tokens": 1, "output_tokens": 2}})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.cors()
        self.end_headers()
        self.close_connection = True
        def ev(name, data):
            self.wfile.write(("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode()); self.wfile.flush()
        ev("start", {"run_id": run_id})
        self.wfile.write(b": thinking\n\n")
        ev("step", {"name": "echo", "status": "started"})
        ev("step", {"name": "echo", "status": "finished", "latency_ms": 1})
        ev("delta", {"text": out["value"][:3]})
        ev("delta", {"text": out["value"][3:]})
        ev("done", {"postern": "0.1", "run_id": run_id, "output": out})

class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that hung up mid-answer (the checker's withheld-body probe) is not news


if __name__ == "__main__":
    srv = Server(("127.0.0.1", 0), H)
    print("POSTERN_PORT=%d" % srv.server_address[1], flush=True)
    srv.serve_forever()
