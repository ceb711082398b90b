#!/usr/bin/python3
"""A Postern runner on FastAPI with Starlette's CORSMiddleware, served by
uvicorn, written from SPEC alone as an outside runner author would.

Conformant by default; each --mistake plants one error typical of this stack.
The agent echoes its `text` input. Needs Debian's python3-fastapi and
python3-uvicorn, which belong to /usr/bin/python3.

    /usr/bin/python3 runner.py [--level 1|2|3] [--allow-origin URL]...
        [--idempotent] [--max-run-seconds N] [--max-concurrent N]
        [--credential ENV] [--auth-token TOKEN] [--agent-ms N]
        [--mistake NAME]...

POSTERN_START_LOG names a file it appends one line to per agent start. It prints POSTERN_PORT=<port> first on stdout (section 2) and logs to stderr.
"""

import argparse
import asyncio
import itertools
import json
import os
import secrets
import socket
import sys
import time
from typing import Optional, Union

import uvicorn
from fastapi import Body, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, StrictFloat, StrictInt, StrictStr, ValidationError, validator
from pydantic.error_wrappers import ErrorWrapper
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect

MISTAKES = {
    "validation-422": "FastAPI's own RequestValidationError handler: 422 with a detail list",
    "detail-errors": "Starlette's own HTTPException handler: {\"detail\": ...} for every refusal, 404 and 405",
    "cors-wildcard": "CORSMiddleware(allow_origins=[\"*\"])",
    "cors-credentials": "allow_origins=[\"*\"] with allow_credentials=True: Starlette echoes any origin",
    "preflight-400": "the stock CORSMiddleware: 400 'Disallowed CORS origin' to a refused preflight",
    "lax-types": "pydantic's lax str and float: 5 is accepted as text, \"2\" as a number",
    "body-param": "the body as a FastAPI parameter: parsed before the level and media-type checks",
    "capacity-race": "capacity checked on admission, the slot counted once the agent has loaded (0.5 s later)",
}

PREFIX = "/postern/v0"
AGENT = {"id": "stacks/fastapi-echo", "name": "Echo on FastAPI", "version": "1.0.0",
         "summary": "Repeats its text."}
INPUTS = [
    {"key": "text", "label": "Text", "type": "text", "required": True, "default": None,
     "validation": {"max_length": 200}},
    {"key": "times", "label": "Times", "type": "number", "required": False, "default": 1,
     "validation": {"min": 1, "max": 3}},
    {"key": "tone", "label": "Tone", "type": "select", "required": False, "default": "plain",
     "validation": {"options": ["plain", "loud"]}},
]
RETENTION_SECONDS = 600


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--level", type=int, default=3, choices=[1, 2, 3])
    p.add_argument("--allow-origin", action="append", default=[], dest="origins")
    p.add_argument("--idempotent", action="store_true")
    p.add_argument("--max-run-seconds", type=int, default=0)
    p.add_argument("--max-concurrent", type=int, default=4)
    p.add_argument("--credential", default="")
    p.add_argument("--auth-token", default="")
    p.add_argument("--agent-ms", type=int, default=30)
    p.add_argument("--mistake", action="append", default=[], choices=sorted(MISTAKES))
    cfg = p.parse_args()
    if cfg.max_concurrent < 1:
        p.error("--max-concurrent must be at least 1")
    return cfg


cfg = parse_args()
mistakes = set(cfg.mistake)

# ---- validation: pydantic, strict unless lax-types ----

if "lax-types" in mistakes:
    TextT, NumberT = str, float
else:
    TextT, NumberT = StrictStr, Union[StrictInt, StrictFloat]


class Inputs(BaseModel):
    text: TextT
    times: Optional[NumberT] = None
    tone: Optional[TextT] = None

    class Config:
        extra = "ignore"

    @validator("text")
    def text_length(cls, v):
        if len(v) > 200:
            raise ValueError("longer than 200 characters")
        return v

    @validator("times")
    def times_range(cls, v):
        if v is not None and not 1 <= v <= 3:
            raise ValueError("must be between 1 and 3")
        return v

    @validator("tone")
    def tone_option(cls, v):
        if v is not None and v not in ("plain", "loud"):
            raise ValueError("must be one of plain, loud")
        return v


class RunRequest(BaseModel):
    inputs: dict


class Refusal(StarletteHTTPException):
    """A Postern refusal: its detail is the whole §2.1 envelope."""

    def __init__(self, status, code, message, detail=None, headers=None):
        super().__init__(status, detail={"error": {"code": code, "message": message, "detail": detail}},
                         headers=headers)


def invalid(msg, *loc):
    return RequestValidationError([ErrorWrapper(ValueError(msg), loc=("body",) + loc)])


def missing_credentials():
    return [cfg.credential] if cfg.credential and not os.environ.get(cfg.credential) else []


def validate(raw_inputs):
    """Returns the values to run with, or raises RequestValidationError."""
    if not isinstance(raw_inputs, dict):
        raise invalid("must be an object", "inputs")
    # null means no value was supplied (§4.1.1).
    given = {k: v for k, v in raw_inputs.items() if v is not None}
    try:
        m = Inputs.parse_obj(given)
    except ValidationError as e:
        raise RequestValidationError(e.raw_errors) from None
    return {"text": m.text, "times": m.times if m.times is not None else 1,
            "tone": m.tone if m.tone is not None else "plain"}


# ---- the agent ----

state = {"in_flight": 0}
START_LOG = os.environ.get("POSTERN_START_LOG")
run_seq = itertools.count(1)
answered = {}  # Idempotency-Key -> dict(inputs, run_id, status, body, expires)


def note_start(run_id):
    if START_LOG:
        with open(START_LOG, "a") as f:
            f.write(run_id + "\n")


def new_run_id():
    return f"run-{int(time.time() * 1000):x}-{next(run_seq)}-{secrets.token_hex(3)}"


async def agent(run_id, values, emit):
    note_start(run_id)
    word = values["text"].upper() if values["tone"] == "loud" else values["text"]
    parts = [word if i == 0 else " " + word for i in range(int(values["times"]))]
    t0 = time.monotonic()
    emit("step", {"name": "echo", "status": "started"})
    pause = max(0, cfg.agent_ms) / 1000 / (len(parts) + 1)
    for part in parts:
        await asyncio.sleep(pause)
        emit("delta", {"text": part})
    await asyncio.sleep(pause)
    emit("step", {"name": "echo", "status": "finished", "latency_ms": int((time.monotonic() - t0) * 1000)})
    return "".join(parts)


def envelope(code, message, detail=None):
    return {"error": {"code": code, "message": message, "detail": detail}}


def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def lookup(key):
    e = answered.get(key)
    if e and e["expires"] < time.monotonic():
        del answered[key]
        return None
    return e


async def execute(job, emit):
    """Runs the agent under the time limit; returns (status, body), or
    raises CancelledError when the caller went away."""
    run_id = new_run_id()
    if "capacity-race" in mistakes:
        await asyncio.sleep(0.5)  # loading the agent
        state["in_flight"] += 1
    try:
        emit("start", {"run_id": run_id})
        try:
            coro = agent(run_id, job["values"], emit)
            if cfg.max_run_seconds > 0:
                text = await asyncio.wait_for(coro, cfg.max_run_seconds)
            else:
                text = await coro
            answer = (200, {"postern": "0.1", "run_id": run_id, "output": {"type": "text", "value": text},
                            "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0}})
        except asyncio.TimeoutError:
            answer = (504, envelope("run_timeout", f"The run reached {cfg.max_run_seconds} s and was stopped.",
                                    {"max_run_seconds": cfg.max_run_seconds}))
        key = job["key"]
        if key is not None and lookup(key) is None:
            answered[key] = {"inputs": job["canon"], "run_id": run_id, "status": answer[0], "body": answer[1],
                             "expires": time.monotonic() + RETENTION_SECONDS}
        return answer
    finally:
        state["in_flight"] -= 1


# ---- the app ----

app = FastAPI(title="Echo on FastAPI")

allow_headers = ["Content-Type"]
if cfg.idempotent:
    allow_headers.append("Idempotency-Key")
if cfg.auth_token:
    allow_headers.append("Authorization")


class QuietRefusalCORS(CORSMiddleware):
    """Starlette answers a refused preflight 400 'Disallowed CORS origin';
    §2.3 asks for 204 without Access-Control-Allow-Origin."""

    def preflight_response(self, request_headers):
        response = super().preflight_response(request_headers)
        if response.status_code >= 400:
            return Response(status_code=204, headers={"Vary": "Origin"})
        return response


cors_class = CORSMiddleware if "preflight-400" in mistakes else QuietRefusalCORS
cors_kwargs = dict(allow_origins=cfg.origins, allow_methods=["GET", "POST", "OPTIONS"],
                   allow_headers=allow_headers, max_age=600)
if "cors-wildcard" in mistakes:
    cors_kwargs["allow_origins"] = ["*"]
if "cors-credentials" in mistakes:
    cors_kwargs.update(allow_origins=["*"], allow_credentials=True)
app.add_middleware(cors_class, **cors_kwargs)


if "validation-422" not in mistakes:
    @app.exception_handler(RequestValidationError)
    async def validation_refusal(request, exc):
        errs = exc.errors()
        where = ".".join(str(p) for p in errs[0]["loc"] if p not in ("body", "__root__")) if errs else ""
        what = errs[0]["msg"] if errs else "invalid"
        message = f"input '{where}': {what}" if where else f"The body could not be read: {what}"
        return JSONResponse(envelope("bad_request", message), status_code=400)


if "detail-errors" not in mistakes:
    @app.exception_handler(StarletteHTTPException)
    async def http_refusal(request, exc):
        if isinstance(exc, Refusal):
            body = exc.detail
        elif exc.status_code == 404:
            body = envelope("not_found", f"No {request.method} {request.url.path} here.")
        elif exc.status_code == 405:
            body = envelope("bad_request", f"{request.method} is not served on {request.url.path}.")
        else:
            body = envelope("bad_request", str(exc.detail))
        return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None))


def describe_body():
    creds = [{"env": cfg.credential, "purpose": "Stands in for a model provider key."}] if cfg.credential else []
    return {
        "postern": "0.1", "agent": AGENT, "inputs": INPUTS,
        "output": {"type": "text", "example": "hello hello"},
        "capabilities": {"tools": [], "write_tools": []},
        "credentials": creds,
        "examples": [{"inputs": {"text": "hello", "times": 2}, "output": "hello hello"}],
    }


@app.get(PREFIX + "/describe")
async def describe():
    return describe_body()


@app.get(PREFIX + "/status")
async def status():
    missing = missing_credentials()
    st = "ready"
    if state["in_flight"] > 0:
        st = "running"
    elif cfg.level >= 2 and missing:
        st = "degraded"
    body = {"postern": "0.1", "level": cfg.level, "state": st,
            "agent": {"id": AGENT["id"], "version": AGENT["version"]},
            "entitlement": {"state": "not_required"}}
    if cfg.credential:
        body["credentials"] = {"satisfied": not missing, "missing": missing}
    if cfg.level >= 2:
        if cfg.idempotent:
            body["idempotent_retry"] = True
        limits = {"max_concurrent_runs": cfg.max_concurrent}
        if cfg.max_run_seconds > 0:
            limits["max_run_seconds"] = cfg.max_run_seconds
        if cfg.idempotent:
            limits["idempotency_retention_seconds"] = RETENTION_SECONDS
        body["limits"] = limits
    return body


def check_level(level):
    if cfg.level < level:
        raise Refusal(501, "not_implemented", f"This runner serves Level {cfg.level}; this verb needs Level {level}.")


def check_auth(request):
    if cfg.auth_token and request.headers.get("authorization") != "Bearer " + cfg.auth_token:
        raise Refusal(401, "unauthorized", "This runner requires its own bearer token.",
                      headers={"WWW-Authenticate": "Bearer"})


def check_media(request):
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise Refusal(400, "bad_request", "The body must be application/json.")


async def read_body(request):
    try:
        raw = await request.body()
    except ClientDisconnect:
        raise Refusal(400, "bad_request", "The body ended before its announced length.") from None
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (UnicodeDecodeError, ValueError) as e:
        raise invalid(f"not JSON: {e}") from None


def admit(body, request):
    """§4.6 after the level, the auth and the media type: the inputs, the
    credential, a key already answered, capacity. Returns the job, or an
    entry to replay as ("replay", entry)."""
    if not isinstance(body, dict):
        raise invalid("the body must be a JSON object")
    if "inputs" not in body:
        raise invalid("field required", "inputs")
    values = validate(body["inputs"])
    missing = missing_credentials()
    if missing:
        raise Refusal(424, "missing_credential", f"Set {', '.join(missing)} in the runner's environment.",
                      {"missing": missing})
    key = request.headers.get("idempotency-key") if cfg.idempotent else None
    canon = canonical(body["inputs"])
    if key is not None:
        e = lookup(key)
        if e is not None:
            if e["inputs"] != canon:
                raise Refusal(409, "idempotency_conflict", "This Idempotency-Key was answered for other inputs.")
            return "replay", e
    if state["in_flight"] >= cfg.max_concurrent:
        raise Refusal(503, "unavailable", "The runner is at its limit of concurrent runs.")
    if "capacity-race" not in mistakes:
        # The slot is taken here, where it was checked: the run's task only
        # starts once the handler has returned.
        state["in_flight"] += 1
    return "run", {"values": values, "key": key, "canon": canon}


async def run_answer(request, kind, job):
    if kind == "replay":
        return JSONResponse(job["body"], status_code=job["status"])
    task = asyncio.ensure_future(execute(job, lambda *_: None))
    # §4.5: a caller that hangs up cancels its run.
    while not task.done():
        done, _ = await asyncio.wait({task}, timeout=0.1)
        if not done and await request.is_disconnected():
            task.cancel()
            return Response(status_code=499)
    status_code, body = task.result()
    return JSONResponse(body, status_code=status_code)


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def stream_answer(kind, job):
    async def replay():
        yield sse("start", {"run_id": job["run_id"]})
        yield sse("done" if job["status"] == 200 else "error", job["body"])

    if kind == "replay":
        return StreamingResponse(replay(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    queue = asyncio.Queue()

    def begin():
        task = asyncio.ensure_future(execute(job, lambda ev, data: queue.put_nowait(sse(ev, data))))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        return task

    # Started here rather than in the generator, which Starlette may never
    # iterate if the caller has gone already: the slot is released either
    # way. (capacity-race starts it in the generator, and takes the slot
    # there, once the response has begun.)
    started = None if "capacity-race" in mistakes else begin()

    async def live():
        task = started or begin()
        try:
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), 0.5)
                except asyncio.TimeoutError:
                    yield ": still working\n\n"
                    continue
                if item is None:
                    break
                yield item
            status_code, body = task.result()
            yield sse("done" if status_code == 200 else "error", body)
        finally:
            if not task.done():
                task.cancel()

    return StreamingResponse(live(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


if "body-param" in mistakes:
    # The idiomatic FastAPI shape: the body is a parameter, the level and the
    # media type are dependencies. FastAPI reads and parses the body first.
    def gate(level):
        def dep(request: Request):
            check_level(level)
            check_auth(request)
            check_media(request)
        return dep

    @app.post(PREFIX + "/run")
    async def run(request: Request, body: RunRequest = Body(...), _=Depends(gate(2))):
        return await run_answer(request, *admit(body.dict(), request))

    @app.post(PREFIX + "/stream")
    async def stream(request: Request, body: RunRequest = Body(...), _=Depends(gate(3))):
        return stream_answer(*admit(body.dict(), request))
else:
    @app.post(PREFIX + "/run")
    async def run(request: Request):
        check_level(2)
        check_auth(request)
        check_media(request)
        return await run_answer(request, *admit(await read_body(request), request))

    @app.post(PREFIX + "/stream")
    async def stream(request: Request):
        check_level(3)
        check_auth(request)
        check_media(request)
        return stream_answer(*admit(await read_body(request), request))


def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the port is announced: uvicorn starts serving a
    # moment later, and a client connecting in between waits in the backlog
    # rather than being refused.
    sock.listen(128)
    print(f"POSTERN_PORT={sock.getsockname()[1]}", flush=True)
    print(f"fastapi runner: level {cfg.level}, mistakes {sorted(mistakes)}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
