#!/usr/bin/env python3
"""pyclient: run a Postern agent once from the command line (Python 3,
standard library only). Written from SPEC.md alone.

    python3 pyclient.py [--url URL] [--verb run|stream] [-i KEY=VALUE]... [-o FILE] [TEXT...]

URL and verb default to $POSTERN_URL and $POSTERN_VERB. Required inputs the
user left out are filled with placeholders; TEXT goes to `prompt` (or the
first required text input). The output goes to stdout, everything else to
stderr. Exit 0 when the run succeeded, 1 when it failed or was refused, 2 on
a usage error. $CLIENT_FAULT (or --fault) plants a mistake: see README.md.
"""
import argparse, base64, binascii, codecs, http.client, json, os, re, sys, urllib.error, urllib.request

ap = argparse.ArgumentParser(description="Run a Postern agent once.")
ap.add_argument("--url", default=os.environ.get("POSTERN_URL", ""))
ap.add_argument("--verb", default=os.environ.get("POSTERN_VERB") or "run", choices=["run", "stream"])
ap.add_argument("-i", "--input", action="append", default=[], metavar="KEY=VALUE")
ap.add_argument("-o", "--output", help="where to save a bytes output")
ap.add_argument("--fault", default=os.environ.get("CLIENT_FAULT", ""))
ap.add_argument("text", nargs="*")
OPT = ap.parse_args()
FAULTS = set(filter(None, OPT.fault.split(",")))
BASE = OPT.url.rstrip("/")


def say(msg):
    print("postern:", msg, file=sys.stderr, flush=True)


class Failure(Exception):
    """The run failed or was refused: exit 1."""


# ---- HTTP ---------------------------------------------------------------

class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a):
        return None  # a 3xx is an answer to read, not a place to go


HTTP = urllib.request.build_opener(NoRedirect)


def call(verb, body=None, timeout=10):
    """Returns the open response of a 2xx; raises Failure for anything else."""
    headers = {}
    if body is not None:
        body = json.dumps(body).encode("utf-8")
        if "form-encoded" not in FAULTS:  # FAULT: urllib then labels the body a form
            headers["Content-Type"] = "application/json; charset=utf-8"
    if verb == "stream":
        headers["Accept"] = "text/event-stream"
    req = urllib.request.Request(f"{BASE}/postern/v0/{verb}", data=body, headers=headers)
    try:
        return HTTP.open(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        refusal(e.code, e.read(), verb)
    except (urllib.error.URLError, OSError) as e:
        raise Failure(f"{verb}: cannot reach {BASE} ({getattr(e, 'reason', e)})")


def read_json(resp, what):
    try:
        return json.loads(resp.read().decode("utf-8"))
    except ValueError:
        raise Failure(f"{what}: the runner sent something that is not JSON")


HINTS = {
    "bad_request": "the runner refused the request as malformed",
    "unauthorized": "the runner wants authentication of its own",
    "not_found": "the runner does not serve that path",
    "not_entitled": "you are not entitled to run this agent",
    "idempotency_conflict": "that idempotency key was used with other inputs",
    "missing_credential": "the runner lacks a credential the agent needs",
    "agent_error": "the agent ran and failed",
    "not_implemented": "the runner does not serve this verb at its level",
    "unavailable": "the runner is not ready; trying again later may help",
    "run_timeout": "the run reached the runner's time limit",
}


def refusal(status, raw, verb):
    """A non-2xx answer: read the envelope, show its message, fail by status class."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError:
        doc = {}
    if "error-sibling-strict" in FAULTS and (not isinstance(doc, dict) or list(doc) != ["error"]):
        raise Failure(f"{verb}: malformed error body (HTTP {status})")  # FAULT: the closed root, enforced on read
    err = doc.get("error") if isinstance(doc, dict) else None
    explain(err if isinstance(err, dict) else {}, status, verb)


def explain(err, status, verb):
    code = err.get("code") if isinstance(err.get("code"), str) else ""
    message = err.get("message") if isinstance(err.get("message"), str) else ""
    if "unknown-code-crash" in FAULTS:
        hint = HINTS[code]  # FAULT: a table lookup that assumes every code is known
    else:
        hint = HINTS.get(code) or ("the run failed" if not status else "the runner failed" if status >= 500
                                   else "the runner refused the request" if status >= 400 else "unexpected answer")
    detail = err.get("detail") if isinstance(err.get("detail"), dict) else {}
    if code == "missing_credential" and isinstance(detail.get("missing"), list):
        hint += ": set " + ", ".join(map(str, detail["missing"]))
    where = f"HTTP {status}" if status else "stream error"
    raise Failure(f"{verb}: {hint} ({where}{', ' + code if code else ''})" + (f": {message}" if message else ""))


# ---- describe: credentials and inputs -------------------------------------

SECRET = re.compile(r"\b(sk-|sk_live_|ghp_|xox[abprs]-|AKIA)[A-Za-z0-9_-]{8,}")


def credential_leak(describe):
    """A describe may name credentials, never carry one (§4.1.3, §7)."""
    raw = json.dumps(describe)
    creds = describe.get("credentials")
    for i, c in enumerate(creds if isinstance(creds, list) else []):
        if not isinstance(c, dict):
            continue
        for k in c:
            if k not in ("env", "purpose", "signup_url") and re.search("value|secret|token|key|password", k, re.I):
                return f'credentials[{i}] carries "{k}"'
        env = c.get("env")
        if isinstance(env, str) and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", env):
            return f"credentials[{i}].env is not a variable name"
        mine = os.environ.get(env) if isinstance(env, str) else None
        if mine and len(mine) >= 8 and mine in raw:
            return f"it contains the value of {env}"
        if any(isinstance(v, str) and SECRET.search(v) for v in c.values()):
            return f"credentials[{i}] holds what looks like a key"
    return None


def placeholder(inp, text):
    v = inp.get("validation") if isinstance(inp.get("validation"), dict) else {}
    opts = v.get("options")
    if inp.get("type") == "select" and isinstance(opts, list) and opts:
        return opts[0]
    num = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)
    if inp.get("type") == "number":
        lo, hi = v.get("min"), v.get("max")
        # one step inside the bounds where they leave room: SPEC does not say whether they are inclusive
        if num(lo):
            return lo + 1 if not num(hi) or lo + 1 <= hi else lo
        return min(1, hi - 1) if num(hi) else 1
    # text, and a type this client does not know, is text (§4.1.1)
    if inp.get("type") not in ("text", "select") and "unknown-input-fail" in FAULTS:
        raise Failure(f'input "{inp.get("key")}" has unsupported type "{inp.get("type")}"')
    most = v.get("max_length") if isinstance(v.get("max_length"), int) and v.get("max_length") > 0 else None
    for s in (text, "hello", "example", "x", "A", "1"):
        if not s:
            continue
        s = s[:most]
        try:
            if not isinstance(v.get("pattern"), str) or re.search(v["pattern"], s):
                return s
        except re.error:
            return s
    return "hello"


def number(s):
    try:
        f = float(s)
    except ValueError:
        say(f"usage: {s!r} is not a number")
        sys.exit(2)
    return int(f) if f.is_integer() else f


def build_inputs(describe):
    decl = [d for d in describe.get("inputs") or [] if isinstance(d, dict)]
    by_key = {d.get("key"): d for d in decl}
    inputs = {}
    for pair in OPT.input:
        key, eq, value = pair.partition("=")
        if not eq or key not in by_key:
            say(f'usage: no input "{key}" (inputs: {", ".join(map(str, by_key))})')
            sys.exit(2)
        inputs[key] = number(value) if by_key[key].get("type") == "number" else value
    text = " ".join(OPT.text)
    target = by_key.get("prompt") or next((d for d in decl if d.get("required") and d.get("type") not in ("number", "select")), None)
    for d in decl:
        key = d.get("key")
        if d.get("type") not in ("text", "number", "select"):
            say(f'input "{key}" has type "{d.get("type")}", which this client takes as text')
        if key in inputs or not (d.get("required") or (d is target and text)):
            continue
        inputs[key] = placeholder(d, text if d is target else "")
        if d is not target or not text:
            say(f"filled required input {key!r} with {inputs[key]!r}")
    if "fold-keys" in FAULTS:
        inputs = {k.lower(): v for k, v in inputs.items()}  # FAULT: keys treated as case-insensitive
    return inputs


# ---- the event stream (HTML Living Standard grammar, §4.3) ------------------

class EventReader:
    """Feed it decoded text; it returns the events completed so far as (name, data)."""

    def __init__(self):
        self.rest, self.saw_cr, self.name, self.data = "", False, "", []

    def feed(self, text):
        if self.saw_cr and text.startswith("\n"):
            text = text[1:]  # the \n of a CRLF split across two reads
        if text:
            self.saw_cr = text.endswith("\r")
        if "lf-only" in FAULTS:
            *lines, self.rest = (self.rest + text).split("\n")  # FAULT: one line end of three
        else:
            *lines, self.rest = re.split(r"\r\n|\r|\n", self.rest + text)
        events = []
        for line in lines:
            if line == "":
                if self.data:
                    events.append((self.name or "message", "\n".join(self.data)))
                self.name, self.data = "", []
            elif not line.startswith(":"):  # a comment is skipped
                key, colon, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if key == "event":
                    self.name = value
                elif key == "data":
                    if "last-data-line" in FAULTS:
                        self.data = [value]  # FAULT: assignment where the grammar appends
                    else:
                        self.data.append(value)
                # id, retry and any other field mean nothing here
        return events


def stream_once(inputs):
    resp = call("stream", {"inputs": inputs}, timeout=None)
    media = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if media != "text/event-stream":
        raise Failure(f"stream: the runner answered {media or 'without a media type'}, not an event stream")
    reader, utf8, deltas = EventReader(), codecs.getincrementaldecoder("utf-8-sig")("replace"), ""
    with resp:
        while True:
            try:
                chunk = resp.read1(65536)
            except (OSError, http.client.HTTPException) as e:
                say(f"stream: the connection broke ({e})")
                chunk = b""
            if not chunk:
                # A reopened stream is a new run, paid for again (§4.5): no reconnect.
                raise Failure("stream: ended before the run finished; not reconnecting, since that would start the run again")
            for name, data in reader.feed(utf8.decode(chunk)):
                if name not in ("start", "step", "delta", "done", "error"):
                    continue  # unknown events are skipped (§4.3)
                try:
                    payload = json.loads(data)
                except ValueError:
                    raise Failure(f"stream: the {name} event carries something that is not JSON")
                if name == "start":
                    say(f"run {payload.get('run_id')} started")
                elif name == "step":
                    if "reject-started-latency" in FAULTS and payload.get("status") == "started" and "latency_ms" in payload:
                        raise Failure("stream: a started step cannot have a latency")  # FAULT
                    say(f"step {payload.get('name')} {payload.get('status', '')}".rstrip())
                elif name == "delta" and isinstance(payload.get("text"), str):
                    deltas += payload["text"]
                elif name == "error":
                    err = payload.get("error") if isinstance(payload, dict) else None
                    explain(err if isinstance(err, dict) else {}, 0, "stream")
                elif name == "done":
                    return render(payload, deltas)


# ---- rendering the outcome -------------------------------------------------

EXT = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/svg+xml": "svg",
       "application/pdf": "pdf", "text/csv": "csv", "application/json": "json"}


def render(body, deltas=None):
    out = body.get("output") if isinstance(body, dict) else None
    if not isinstance(out, dict) or not isinstance(out.get("value"), str):
        raise Failure("the runner answered without an output value")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    if isinstance(usage.get("cost_usd"), (int, float)):
        say(f"estimated cost ${usage['cost_usd']} (advisory, not a bill)")
    kind, value = out.get("type"), out["value"]
    if kind == "text":
        if deltas and deltas != value:
            say("note: the streamed text differed from the final result; showing the final result")
        end = "\n" if sys.stdout.isatty() and not value.endswith("\n") else ""
        sys.stdout.buffer.write((value + end).encode("utf-8"))
    elif kind == "bytes":
        media = str(out.get("media_type") or "application/octet-stream")
        if "bytes-case" in FAULTS:
            if media not in EXT:  # FAULT: the media type compared octet for octet against a list
                raise Failure(f"unsupported media type {media}")
        else:
            media = media.lower()  # RFC 6838 names ignore case
        try:
            data = base64.b64decode(value, validate=True)
        except binascii.Error:
            say(f"the {media} output is not valid base64; nothing to save")
            return
        if OPT.output or sys.stdout.isatty():
            run_id = re.sub(r"[^\w.-]", "_", str(body.get("run_id", "output")))
            path = OPT.output or f"postern-{run_id}.{EXT.get(media, 'bin')}"
            with open(path, "wb") as f:
                f.write(data)
            say(f"saved {media} ({len(data)} bytes) to {path}")
        else:
            sys.stdout.buffer.write(data)  # piped: pass the artifact through, like curl
    elif "unknown-output-fails" in FAULTS:
        raise Failure(f"unsupported output type {kind!r}")  # FAULT: a render failure called a run failure
    else:
        # The run succeeded; this client just cannot show it (§4.1.4).
        say(f'the agent returned output of type "{kind}", which this client cannot display; the run itself succeeded')


# ---- main -----------------------------------------------------------------

def main():
    if not re.match(r"https?://[^/]", BASE):
        say("usage: set POSTERN_URL or --url to the runner origin, e.g. http://127.0.0.1:8765")
        return 2
    if OPT.verb not in ("run", "stream"):
        say(f"usage: the verb is run or stream, not {OPT.verb!r}")
        return 2
    describe = read_json(call("describe"), "describe")
    if not isinstance(describe, dict):
        raise Failure("describe: not a JSON object")
    leak = None if "trust-credentials" in FAULTS else credential_leak(describe)
    if leak:
        raise Failure(f"refusing to use this runner: its describe exposes a credential ({leak})")
    agent = describe.get("agent") if isinstance(describe.get("agent"), dict) else {}
    say(f"{agent.get('name') or agent.get('id') or 'agent'} {agent.get('version') or ''}".rstrip())
    caps = describe.get("capabilities") if isinstance(describe.get("capabilities"), dict) else {}
    if isinstance(caps.get("write_tools"), list) and caps["write_tools"]:
        say("this agent may use tools with side effects: " + ", ".join(map(str, caps["write_tools"])))
    declared = (describe.get("output") or {}).get("type") if isinstance(describe.get("output"), dict) else None
    if declared and declared not in ("text", "bytes"):
        say(f'the agent declares output of type "{declared}", which this client cannot display')

    if "assume-level" not in FAULTS:  # FAULT: every runner taken to serve every verb
        status = read_json(call("status"), "status")
        status = status if isinstance(status, dict) else {}
        sid = (status.get("agent") or {}).get("id") if isinstance(status.get("agent"), dict) else None
        if sid and agent.get("id") and sid != agent.get("id"):
            say(f"warning: status names {sid}, describe {agent.get('id')}")
        if status.get("state") == "degraded":
            say("warning: the runner reports a missing credential; the run will likely be refused")
        level = status.get("level")
        if not isinstance(level, int) or isinstance(level, bool):
            raise Failure("status: the runner did not report its level; not guessing one")
        need = 3 if OPT.verb == "stream" else 2
        if level < need:
            raise Failure(f"this runner is Level {level}; {OPT.verb} needs Level {need}"
                          + (" (use --verb run)" if level == 2 else ""))
    inputs = build_inputs(describe)
    if OPT.verb == "stream":
        stream_once(inputs)
    else:
        render(read_json(call("run", {"inputs": inputs}, timeout=None), "run"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        say(str(e))
        sys.exit(1)
