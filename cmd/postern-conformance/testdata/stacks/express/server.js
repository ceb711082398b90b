#!/usr/bin/env node
// A Postern runner on Express 5 with the `cors` middleware and
// express.json(), written from SPEC alone as an outside runner author would.
// Conformant by default; each --mistake plants one error typical of this
// stack. The agent echoes its `text` input.
//
//   node server.js [--level 1|2|3] [--allow-origin URL]... [--idempotent]
//                  [--max-run-seconds N] [--max-concurrent N]
//                  [--credential ENV] [--auth-token TOKEN] [--agent-ms N]
//                  [--mistake NAME]...
//
// POSTERN_START_LOG names a file it appends one line to per agent start.
// It prints POSTERN_PORT=<port> first on stdout (§2) and logs to stderr.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const express = require('express');
const cors = require('cors');

// The mistakes this stack's runners ship, one switch each.
const MISTAKES = {
  'json-error-page': "no error middleware: express.json()'s errors reach Express's HTML error page",
  'html-404': "no catch-all under the prefix: Express's own HTML 'Cannot GET' 404",
  'cors-default': 'cors() with no options: Access-Control-Allow-Origin: * for everyone',
  'cors-reflect': 'cors({origin: true}): any Origin is echoed back as allowed',
  'cors-error': "the origin callback errors for a refused origin (cors's README example): Express's 500 page",
  'cors-route-only': 'cors() on each route, none for OPTIONS: a preflight falls to the catch-all 404',
  'json-any-type': "express.json({type: '*/*'}) and no media-type check: a text/plain body runs",
  'lenient-types': 'inputs coerced with Number()/String() rather than type-checked',
  'compression': 'app.use(compression()) and no res.flush(): a gzip client gets the stream in one piece at the end',
};

function parseArgs(argv) {
  const cfg = {
    level: 3, origins: [], idempotent: false, maxRunSeconds: 0, maxConcurrent: 4,
    credential: '', authToken: '', agentMs: 30, mistakes: new Set(),
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) die(`${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case '--level': cfg.level = Number(value()); break;
      case '--allow-origin': cfg.origins.push(value()); break;
      case '--idempotent': cfg.idempotent = true; break;
      case '--max-run-seconds': cfg.maxRunSeconds = Number(value()); break;
      case '--max-concurrent': cfg.maxConcurrent = Number(value()); break;
      case '--credential': cfg.credential = value(); break;
      case '--auth-token': cfg.authToken = value(); break;
      case '--agent-ms': cfg.agentMs = Number(value()); break;
      case '--mistake': {
        const m = value();
        if (!(m in MISTAKES)) die(`unknown mistake ${m}; known: ${Object.keys(MISTAKES).join(', ')}`);
        cfg.mistakes.add(m);
        break;
      }
      default: die(`unknown flag ${flag}`);
    }
  }
  if (![1, 2, 3].includes(cfg.level)) die('--level must be 1, 2 or 3');
  if (!(cfg.maxConcurrent >= 1)) die('--max-concurrent must be at least 1');
  return cfg;
}

function die(msg) {
  process.stderr.write(`server.js: ${msg}\n`);
  process.exit(2);
}

const cfg = parseArgs(process.argv.slice(2));
const has = (m) => cfg.mistakes.has(m);
const PREFIX = '/postern/v0';

const INPUTS = [
  { key: 'text', label: 'Text', type: 'text', required: true, default: null, validation: { max_length: 200 } },
  { key: 'times', label: 'Times', type: 'number', required: false, default: 1, validation: { min: 1, max: 3 } },
  { key: 'tone', label: 'Tone', type: 'select', required: false, default: 'plain', validation: { options: ['plain', 'loud'] } },
];
const AGENT = { id: 'stacks/express-echo', name: 'Echo on Express', version: '1.0.0', summary: 'Repeats its text.' };
const RETENTION_SECONDS = 600;

function describeBody() {
  return {
    postern: '0.1',
    agent: AGENT,
    inputs: INPUTS,
    output: { type: 'text', example: 'hello hello' },
    capabilities: { tools: [], write_tools: [] },
    credentials: cfg.credential ? [{ env: cfg.credential, purpose: 'Stands in for a model provider key.' }] : [],
    examples: [{ inputs: { text: 'hello', times: 2 }, output: 'hello hello' }],
  };
}

function missingCredentials() {
  return cfg.credential && !process.env[cfg.credential] ? [cfg.credential] : [];
}

let inFlight = 0;

function statusBody() {
  const missing = missingCredentials();
  let state = 'ready';
  if (inFlight > 0) state = 'running';
  else if (cfg.level >= 2 && missing.length > 0) state = 'degraded';
  const body = {
    postern: '0.1',
    level: cfg.level,
    state,
    agent: { id: AGENT.id, version: AGENT.version },
    entitlement: { state: 'not_required' },
  };
  if (cfg.credential) body.credentials = { satisfied: missing.length === 0, missing };
  if (cfg.level >= 2) {
    if (cfg.idempotent) body.idempotent_retry = true;
    const limits = { max_concurrent_runs: cfg.maxConcurrent };
    if (cfg.maxRunSeconds > 0) limits.max_run_seconds = cfg.maxRunSeconds;
    if (cfg.idempotent) limits.idempotency_retention_seconds = RETENTION_SECONDS;
    body.limits = limits;
  }
  return body;
}

function envelope(code, message, detail = null) {
  return { error: { code, message, detail } };
}

function refuse(res, status, code, message, detail = null) {
  res.status(status).json(envelope(code, message, detail));
}

// ---- CORS (§2.3) ----

function allowedHeaders() {
  const h = ['Content-Type'];
  if (cfg.idempotent) h.push('Idempotency-Key');
  if (cfg.authToken) h.push('Authorization');
  return h;
}

function corsOptionsFor(req) {
  const isPost = req.path === `${PREFIX}/run` || req.path === `${PREFIX}/stream`;
  const opts = {
    methods: isPost ? ['POST', 'OPTIONS'] : ['GET', 'OPTIONS'],
    allowedHeaders: allowedHeaders(),
    maxAge: 600,
    // An array: cors echoes a listed origin and leaves the header off for
    // any other, answering a refused preflight 204 all the same.
    origin: cfg.origins,
  };
  if (has('cors-reflect')) opts.origin = true;
  if (has('cors-error')) {
    opts.origin = (origin, callback) => {
      if (!origin || cfg.origins.includes(origin)) callback(null, true);
      else callback(new Error('Not allowed by CORS'));
    };
  }
  return opts;
}

const corsMiddleware = has('cors-default')
  ? cors()
  : cors((req, callback) => callback(null, corsOptionsFor(req)));

// ---- the agent ----

const START_LOG = process.env.POSTERN_START_LOG;

function noteStart(runId) {
  if (START_LOG) fs.appendFileSync(START_LOG, `${runId}\n`);
}

let runSeq = 0;
function newRunId() {
  runSeq++;
  return `run-${Date.now().toString(36)}-${runSeq}-${crypto.randomBytes(3).toString('hex')}`;
}

class Stopped extends Error {
  constructor(why) { super(why); this.why = why; }
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Stopped(signal.reason));
    const t = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(new Stopped(signal.reason)); };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

// Runs the echo agent, reporting events through emit, under the runner's
// time limit and the caller's abort. Resolves to the output text; rejects
// with Stopped('timeout') or Stopped('aborted').
async function runAgent(runId, values, signal, emit) {
  noteStart(runId);
  let word = values.text;
  if (values.tone === 'loud') word = word.toUpperCase();
  const parts = Array.from({ length: Math.floor(values.times) }, (_, i) => (i === 0 ? word : ` ${word}`));
  const t0 = Date.now();
  emit('step', { name: 'echo', status: 'started' });
  const pause = Math.max(0, cfg.agentMs) / (parts.length + 1);
  for (const part of parts) {
    await sleep(pause, signal);
    emit('delta', { text: part });
  }
  await sleep(pause, signal);
  emit('step', { name: 'echo', status: 'finished', latency_ms: Date.now() - t0 });
  return parts.join('');
}

// ---- validation (§4.2) ----

function validateInputs(body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { error: 'the body must be a JSON object' };
  }
  const inputs = body.inputs;
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) {
    return { error: "'inputs' must be an object" };
  }
  const values = {};
  for (const decl of INPUTS) {
    let v = inputs[decl.key];
    if (v === undefined || v === null) {
      if (decl.required) return { error: `required input '${decl.key}' is missing` };
      values[decl.key] = decl.default;
      continue;
    }
    if (has('lenient-types')) {
      if (decl.type === 'number') v = Number(v);
      else v = String(v);
    }
    switch (decl.type) {
      case 'text':
        if (typeof v !== 'string') return { error: `input '${decl.key}' must be a string` };
        if ([...v].length > decl.validation.max_length) {
          return { error: `input '${decl.key}' is longer than ${decl.validation.max_length} characters` };
        }
        break;
      case 'number':
        if (typeof v !== 'number' || !Number.isFinite(v)) return { error: `input '${decl.key}' must be a number` };
        if (v < decl.validation.min || v > decl.validation.max) {
          return { error: `input '${decl.key}' must be between ${decl.validation.min} and ${decl.validation.max}` };
        }
        break;
      case 'select':
        if (typeof v !== 'string' || !decl.validation.options.includes(v)) {
          return { error: `input '${decl.key}' must be one of ${decl.validation.options.join(', ')}` };
        }
        break;
    }
    values[decl.key] = v;
  }
  return { values, raw: inputs };
}

// Inputs compared by value on the decoded map (§4.2): a canonical form.
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

// Idempotency-Key → { inputs, status, body, expires }: answered keys only.
const answered = new Map();

function lookupKey(key) {
  const e = answered.get(key);
  if (e && e.expires < Date.now()) {
    answered.delete(key);
    return undefined;
  }
  return e;
}

// ---- the app ----

const app = express();
app.disable('x-powered-by');
if (has('compression')) app.use(require('compression')());

// cors-route-only: the middleware rides each route instead (below), and
// nothing registers OPTIONS.
if (!has('cors-route-only')) app.use(corsMiddleware);
const routeCors = has('cors-route-only') ? [corsMiddleware] : [];

function requireAuth(req, res, next) {
  if (!cfg.authToken) return next();
  if (req.get('authorization') === `Bearer ${cfg.authToken}`) return next();
  res.set('WWW-Authenticate', 'Bearer');
  refuse(res, 401, 'unauthorized', 'This runner requires its own bearer token.');
}

app.use(PREFIX, requireAuth);

app.get(`${PREFIX}/describe`, ...routeCors, (req, res) => res.json(describeBody()));
app.get(`${PREFIX}/status`, ...routeCors, (req, res) => res.json(statusBody()));

function requireLevel(level) {
  return (req, res, next) => {
    if (cfg.level >= level) return next();
    refuse(res, 501, 'not_implemented', `This runner serves Level ${cfg.level}; this verb needs Level ${level}.`);
  };
}

// §2.3: the media type, before the body is read at all.
function requireJSON(req, res, next) {
  if (has('json-any-type')) return next();
  const type = (req.get('content-type') || '').split(';')[0].trim().toLowerCase();
  if (type === 'application/json') return next();
  refuse(res, 400, 'bad_request', 'The body must be application/json.');
}

const jsonParser = has('json-any-type') ? express.json({ type: () => true }) : express.json();

// The checks every run and stream share, in §4.6's order after the level and
// the media type: the inputs, the credential, a key already answered, capacity.
// Answers the refusal itself and returns null, or returns what to run.
function admit(req, res, replay) {
  if (req.body === undefined) {
    refuse(res, 400, 'bad_request', 'The body must be a JSON object with inputs.');
    return null;
  }
  const v = validateInputs(req.body);
  if (v.error) {
    refuse(res, 400, 'bad_request', v.error);
    return null;
  }
  const missing = missingCredentials();
  if (missing.length > 0) {
    refuse(res, 424, 'missing_credential', `Set ${missing.join(', ')} in the runner's environment.`, { missing });
    return null;
  }
  const key = cfg.idempotent ? req.get('idempotency-key') : undefined;
  if (key !== undefined) {
    const e = lookupKey(key);
    if (e) {
      if (e.inputs !== canonical(v.raw)) {
        refuse(res, 409, 'idempotency_conflict', 'This Idempotency-Key was answered for other inputs.');
      } else {
        replay(e);
      }
      return null;
    }
  }
  if (inFlight >= cfg.maxConcurrent) {
    refuse(res, 503, 'unavailable', 'The runner is at its limit of concurrent runs.');
    return null;
  }
  return { values: v.values, canon: canonical(v.raw), key };
}

function remember(job, runId, status, body) {
  if (job.key === undefined || lookupKey(job.key)) return;
  answered.set(job.key, { inputs: job.canon, runId, status, body, expires: Date.now() + RETENTION_SECONDS * 1000 });
}

// Starts the agent for an admitted job; returns a promise of { status, body }
// (the run answer) or null when the client went away.
function start(job, res, emit) {
  const ctl = new AbortController();
  res.on('close', () => { if (!res.writableFinished) ctl.abort('aborted'); });
  let timer;
  if (cfg.maxRunSeconds > 0) timer = setTimeout(() => ctl.abort('timeout'), cfg.maxRunSeconds * 1000);
  const runId = newRunId();
  inFlight++;
  emit('start', { run_id: runId });
  return runAgent(runId, job.values, ctl.signal, emit)
    .then((text) => ({ status: 200, body: { postern: '0.1', run_id: runId, output: { type: 'text', value: text }, usage: { input_tokens: 0, output_tokens: 0, cost_usd: 0 } } }))
    .catch((err) => {
      if (err instanceof Stopped && err.why === 'timeout') {
        return { status: 504, body: envelope('run_timeout', `The run reached ${cfg.maxRunSeconds} s and was stopped.`, { max_run_seconds: cfg.maxRunSeconds }) };
      }
      if (err instanceof Stopped) return null;
      return { status: 500, body: envelope('agent_error', String(err && err.message)) };
    })
    .then((answer) => {
      inFlight--;
      clearTimeout(timer);
      if (answer) remember(job, runId, answer.status, answer.body);
      return answer;
    });
}

const postMiddlewares = (level) => [...routeCors, requireLevel(level), requireJSON, jsonParser];

app.post(`${PREFIX}/run`, ...postMiddlewares(2), (req, res) => {
  const job = admit(req, res, (e) => res.status(e.status).json(e.body));
  if (!job) return;
  start(job, res, () => {}).then((answer) => {
    if (answer) res.status(answer.status).json(answer.body);
  });
});

function sse(res, event, data) {
  if (res.destroyed || res.writableEnded) return;
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function openStream(res) {
  res.status(200);
  res.set('Content-Type', 'text/event-stream');
  res.set('Cache-Control', 'no-cache');
  res.flushHeaders();
}

app.post(`${PREFIX}/stream`, ...postMiddlewares(3), (req, res) => {
  const job = admit(req, res, (e) => {
    openStream(res);
    sse(res, 'start', { run_id: e.runId });
    sse(res, e.status === 200 ? 'done' : 'error', e.body);
    res.end();
  });
  if (!job) return;
  openStream(res);
  let last = Date.now();
  const beat = setInterval(() => {
    if (Date.now() - last >= 500 && !res.destroyed) { res.write(': still working\n\n'); last = Date.now(); }
  }, 100);
  start(job, res, (event, data) => { sse(res, event, data); last = Date.now(); }).then((answer) => {
    clearInterval(beat);
    if (!answer) return;
    sse(res, answer.status === 200 ? 'done' : 'error', answer.body);
    res.end();
  });
});

if (!has('html-404')) {
  // §2.1: every path under the prefix answers in the envelope, a wrong
  // method on a defined path included.
  app.use(PREFIX, (req, res) => refuse(res, 404, 'not_found', `No ${req.method} ${req.originalUrl} here.`));
}

if (!has('json-error-page')) {
  // express.json()'s errors (malformed JSON, a body too large, an
  // unsupported charset) and anything else thrown become the envelope.
  app.use((err, req, res, next) => {
    if (res.headersSent) return next(err);
    if (err && err.status >= 400 && err.status < 500) {
      refuse(res, 400, 'bad_request', `The body could not be read: ${err.message}`);
      return;
    }
    refuse(res, 500, 'agent_error', 'The runner failed.');
  });
}

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`POSTERN_PORT=${server.address().port}\n`);
  process.stderr.write(`express runner: level ${cfg.level}, mistakes [${[...cfg.mistakes].join(', ')}]\n`);
});
